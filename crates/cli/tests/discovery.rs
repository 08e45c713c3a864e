//! Discovery through the real binary: `gantry --settings FILE` reading a
//! Gemini CLI settings file as it is, a malformed file named with its line
//! and column, and Gantry serving another Gantry (`gantry mcp` bridged as
//! an MCP server over stdio).

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::Path;

use serde_json::{Value, json};

fn output(command: &mut std::process::Command) -> (bool, String, String) {
    let output = command.output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_gemini_settings_file_is_read_as_it_is() {
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let gemini = state.path().join("dot-gemini/settings.json");
    write(
        &gemini,
        &json!({
            "theme": "GitHub",
            "mcpServers": {"everything": {
                "command": "mcp-server-everything",
                "includeTools": ["echo", "get-sum"],
                "timeout": 30000
            }}
        })
        .to_string(),
    );
    let (success, stdout, stderr) = output(
        common::gantry(ws.path(), state.path())
            .arg("--settings")
            .arg(&gemini)
            .args([
                "call",
                "everything__echo",
                r#"{"message": "through gantry"}"#,
            ]),
    );
    assert!(success, "{stderr}");
    assert!(stdout.contains("through gantry"), "{stdout}");
    // Keys of Gemini's that Gantry does not read are warned about, not fatal.
    assert!(stderr.contains("unknown settings key `theme`"), "{stderr}");

    let (success, stdout, stderr) = output(
        common::gantry(ws.path(), state.path())
            .arg("--settings")
            .arg(&gemini)
            .arg("status"),
    );
    assert!(success, "{stderr}");
    assert!(
        stdout.contains("MCP server `everything`: up, 2 tools"),
        "{stdout}"
    );
}

/// A configured server gets the user's environment (its credentials may
/// live there, as Gemini CLI and Qwen Code pass them) but never Gantry's
/// own secrets, unless its `env` names one.
#[test]
fn a_server_gets_the_users_variables_but_not_gantrys_secrets() {
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let settings = state.path().join("settings.json");
    write(
        &settings,
        &json!({"mcpServers": {"everything": {
            "command": "mcp-server-everything",
            "includeTools": ["get-env"],
            "env": {"PASSED_ON_PURPOSE": "$TAVILY_API_KEY"}
        }}})
        .to_string(),
    );
    let (success, stdout, stderr) = output(
        common::gantry(ws.path(), state.path())
            .arg("--settings")
            .arg(&settings)
            .env("GANTRY_HTTP_TOKEN", "gantry-bearer-1")
            .env("BRAVE_API_KEY", "brave-key-1")
            .env("TAVILY_API_KEY", "tavily-key-1")
            .env("MY_SERVICE_TOKEN", "users-own-1")
            .args(["call", "everything__get-env", "{}"]),
    );
    assert!(success, "{stderr}");
    assert!(stdout.contains("users-own-1"), "{stdout}");
    assert!(!stdout.contains("gantry-bearer-1"), "{stdout}");
    assert!(!stdout.contains("brave-key-1"), "{stdout}");
    // Named in the server's `env`, it is passed: the user chose to.
    assert!(stdout.contains("PASSED_ON_PURPOSE"), "{stdout}");
    assert!(stdout.contains("tavily-key-1"), "{stdout}");
}

#[test]
fn a_malformed_settings_file_is_named_with_line_and_column() {
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let bad = state.path().join("bad.json");
    write(&bad, "{\n  \"mcpServers\": {,}\n}\n");
    let (success, _, stderr) = output(
        common::gantry(ws.path(), state.path())
            .arg("--settings")
            .arg(&bad)
            .arg("status"),
    );
    assert!(!success);
    assert!(
        stderr.contains(&format!("{}:2:18: invalid settings JSON", bad.display())),
        "{stderr}"
    );
}

#[test]
fn gantry_serves_another_gantry() {
    let outer = tempfile::tempdir().unwrap();
    let inner = tempfile::tempdir().unwrap();
    std::fs::write(inner.path().join("inner.txt"), "from the inner workspace\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    write(
        &state.path().join("home/settings.json"),
        &json!({"mcpServers": {"inner": {
            "command": env!("CARGO_BIN_EXE_gantry"),
            "args": ["mcp", "--root", inner.path()]
        }}})
        .to_string(),
    );
    let replies = common::session(
        outer.path(),
        state.path(),
        &[json!({"tool": "inner__read_file", "args": {"path": "inner.txt"}})],
    );
    let text = replies[0].to_string();
    assert!(text.contains("from the inner workspace"), "{text}");

    // The inner tools keep their tiers: a read-capped surface sees the
    // inner read_file and not the inner shell.
    let (success, stdout, stderr) = output(
        common::gantry(outer.path(), state.path()).args(["tools", "--json", "--tier", "read"]),
    );
    assert!(success, "{stderr}");
    let listed: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"inner__read_file"), "{names:?}");
    assert!(!names.contains(&"inner__shell"), "{names:?}");
    assert!(names.contains(&"read_file"), "{names:?}");
}

#[test]
fn a_bridged_gantrys_question_is_declined_when_no_person_can_be_asked() {
    let outer = tempfile::tempdir().unwrap();
    let inner = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    write(
        &state.path().join("home/settings.json"),
        &json!({"mcpServers": {"inner": {
            "command": env!("CARGO_BIN_EXE_gantry"),
            "args": ["mcp", "--root", inner.path(), "--approval", "default"]
        }}})
        .to_string(),
    );
    // The inner Gantry asks its client (the outer one) to confirm the
    // write; the outer session has no person, so the inner one hears a
    // decline and writes nothing.
    let replies = common::session(
        outer.path(),
        state.path(),
        &[json!({"tool": "inner__write_file", "args": {"path": "new.txt", "content": "x"}})],
    );
    let text = replies[0].to_string();
    assert!(!inner.path().join("new.txt").exists(), "{text}");
    assert!(
        text.contains("`write_file` was not run: the user declined"),
        "{text}"
    );
}
