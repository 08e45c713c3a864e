//! Worker mode through the binary: `gantry agent -p BRIEF` runs a brief to
//! its end against a scripted OpenAI-compatible peer on loopback, `gantry
//! status` says which model serves each tier or how to configure one, and
//! `gantry mcp` annotates the tools that hand out work by what that work
//! may do.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;
#[path = "../../workers/tests/peer/mod.rs"]
mod peer;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use peer::Peer;

/// Writes the user-level settings of a test's Gantry home.
fn user_settings(state: &Path, settings: Value) {
    let home = state.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("settings.json"), settings.to_string()).unwrap();
}

#[test]
fn agent_runs_a_brief_to_its_end_with_the_key_from_the_named_variable() {
    let peer = Peer::start(json!({"conversations": {"HELLO": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi\n"}}]},
        {"content": "Wrote hello.txt."}
    ]}}));
    let root = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    user_settings(
        state.path(),
        json!({"workers": {"fast": {"baseUrl": peer.url(), "model": "m1", "apiKeyEnv": "PEER_KEY"}}}),
    );
    let output = common::gantry(root.path(), state.path())
        .env("PEER_KEY", "secret-1")
        .args(["agent", "-p", "HELLO: write hello.txt"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "Wrote hello.txt.\n"
    );
    assert!(stderr.contains("- write_file: "), "{stderr}");
    assert!(
        stderr.contains("Worker w1 (agent, tier fast, model m1): done")
            && stderr.contains("2 model requests, 1 tool calls"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("hello.txt")).unwrap(),
        "hi\n"
    );
    let names: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["hello.txt"], "nothing but what the brief asked for");
    let records = peer.records();
    assert!(
        records
            .iter()
            .all(|r| r["authorization"] == "Bearer secret-1"),
        "{records:?}"
    );

    // The key's variable missing is said, naming it.
    let output = common::gantry(root.path(), state.path())
        .env_remove("PEER_KEY")
        .args(["agent", "-p", "HELLO again"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("`PEER_KEY`"), "{stderr}");
}

#[test]
fn without_a_tier_agent_refuses_and_status_says_how_to_configure_one() {
    let root = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let output = common::gantry(root.path(), state.path())
        .args(["agent", "-p", "anything"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("worker mode is off"), "{stderr}");

    let status = common::gantry(root.path(), state.path())
        .arg("status")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("add a `workers` section with a tier"),
        "{text}"
    );

    user_settings(
        state.path(),
        json!({"workers": {"good": {"baseUrl": "http://127.0.0.1:9/v1", "model": "big"}, "maxTier": "read"}}),
    );
    let status = common::gantry(root.path(), state.path())
        .arg("status")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("tier good: model big at http://127.0.0.1:9/v1"),
        "{text}"
    );
    assert!(text.contains("workers see tools up to read"), "{text}");
}

/// The `tools/list` answer of `gantry mcp` over stdio.
fn mcp_tools(root: &Path, state: &Path) -> Vec<Value> {
    let mut child = common::gantry(root, state)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    ];
    for message in messages {
        writeln!(stdin, "{message}").unwrap();
    }
    let mut line = String::new();
    let tools = loop {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "gantry mcp closed"
        );
        let reply: Value = serde_json::from_str(&line).unwrap();
        if reply["id"] == 2 {
            break reply["result"]["tools"].as_array().unwrap().clone();
        }
    };
    drop(stdin);
    child.wait().unwrap();
    tools
}

#[test]
fn mcp_annotates_handing_out_work_by_what_the_workers_may_do() {
    let root = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let read_only = |tools: &[Value], name: &str| {
        let tool = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        tool["annotations"]["readOnlyHint"].as_bool().unwrap()
    };
    let tier = json!({"baseUrl": "http://127.0.0.1:9/v1", "model": "m"});
    user_settings(state.path(), json!({"workers": {"fast": tier}}));
    let tools = mcp_tools(root.path(), state.path());
    assert!(!read_only(&tools, "vibe_spawn"), "workers write by default");
    assert!(!read_only(&tools, "vibe_send"));
    assert!(
        read_only(&tools, "vibe_wait")
            && read_only(&tools, "vibe_list")
            && read_only(&tools, "vibe_kill")
    );

    user_settings(
        state.path(),
        json!({"workers": {"fast": tier, "maxTier": "read"}}),
    );
    let tools = mcp_tools(root.path(), state.path());
    assert!(
        read_only(&tools, "vibe_spawn"),
        "read-only workers hand out read-only work"
    );
}
