//! Tools from a discovery command (`toolDiscoveryCommand`): run through
//! their call command, refused when invalid, started only in a trusted
//! workspace, confined like every other process, never holding up the
//! start; and, beside them, bridged servers in the same sandbox.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use gantry_core::testing::{err, fails, ok, workspace_with};
use gantry_core::{CallErrorKind, Family, Run, Settings, Tier, Workspace};
use gantry_discovery::FAMILY;
use serde_json::json;

mod common;

use common::{names, peer, run_of, snapshot, status, tools_until};

#[tokio::test]
async fn discovered_tools_run_the_call_command_and_clashes_are_said() {
    let dir = workspace_with(&[("a.txt", "a")]);
    let root = dir.path();
    let before = snapshot(root);
    let tools = peer("tools.py");
    let settings = json!({
        "toolDiscoveryCommand": format!("python3 '{tools}' discover"),
        "toolCallCommand": format!("python3 '{tools}' call"),
    });
    let run = run_of(root, settings.clone()).await;
    let listed = names(&run);
    assert!(
        listed.contains(&"add".to_string()) && listed.contains(&"fail".to_string()),
        "{listed:?}"
    );
    assert_eq!(ok(&run, "add", json!({"a": 2, "b": 3})).await.trim(), "5");
    assert_eq!(ok(&run, "read_file", json!({})).await, "the built-in ran");
    let failed = err(&run, "fail", json!({})).await;
    for part in ["exit code: 4", "partial output", "something broke"] {
        assert!(failed.contains(part), "{part} in {failed}");
    }
    refused_as_invalid(&run).await;
    let said = status(&run).await;
    assert!(
        said.contains("toolDiscoveryCommand declared 5 tools"),
        "{said}"
    );
    assert!(
        said.contains("`read_file` from the discovery command is hidden by Gantry's own tool"),
        "{said}"
    );
    assert!(
        said.contains("`add` from the discovery command is hidden by an earlier tool"),
        "{said}"
    );
    let tiers: BTreeMap<String, Tier> = run.tools().into_iter().map(|t| (t.name, t.tier)).collect();
    assert_eq!(tiers["add"], Tier::Exec);
    run.shutdown().await;
    assert_eq!(snapshot(root), before, "the workspace was changed");
}

async fn refused_as_invalid(run: &Run) {
    let error = fails(run, "add", json!({"a": 1}), CallErrorKind::InvalidParams).await;
    assert!(error.message.contains("b"), "{}", error.message);
}

#[tokio::test]
async fn an_untrusted_workspace_starts_nothing() {
    let home = tempfile::tempdir().unwrap();
    let dir = workspace_with(&[(
        ".gantry/settings.json",
        json!({
            "mcpServers": {"fs": {"command": "mcp-server-filesystem", "args": ["."]}},
            "toolDiscoveryCommand": "python3 tools.py discover"
        })
        .to_string(),
    )]);
    let settings = Settings::load_from(&home.path().join("settings.json"), dir.path()).unwrap();
    let run = FAMILY
        .wire(Run::builder(Workspace::new(dir.path()).unwrap()).settings(settings))
        .await
        .unwrap()
        .build();
    assert!(names(&run).is_empty(), "{:?}", names(&run));
    let said = status(&run).await;
    assert!(
        said.contains("ignored from") && said.contains("`toolDiscoveryCommand`, `mcpServers`"),
        "{said}"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn discovered_commands_and_bridged_servers_run_in_the_sandbox() {
    let dir = workspace_with(&[("a.txt", "a")]);
    let root = dir.path().canonicalize().unwrap();
    let tools = peer("tools.py");
    let run = run_of(
        &root,
        json!({
            "toolDiscoveryCommand": format!("python3 '{tools}' discover"),
            "toolCallCommand": format!("python3 '{tools}' call"),
            "mcpServers": {"py": {"command": "python3", "args": [peer("stdio_server.py")]}}
        }),
    )
    .await;
    // Inside the workspace: allowed, for both.
    let inside = root.join("inside.txt");
    ok(&run, "write", json!({"path": inside})).await;
    ok(&run, "py__write", json!({"path": root.join("inside2.txt")})).await;
    assert!(inside.exists());
    // In the home directory (not a cache, not the workspace): refused.
    let home = PathBuf::from(std::env::var("HOME").unwrap());
    for (tool, name) in [("write", "command"), ("py__write", "server")] {
        let outside = home.join(format!(
            "gantry-discovery-sandbox-probe-{name}-{}",
            std::process::id()
        ));
        let refused = run.call(tool, json!({"path": outside})).await;
        let written = outside.exists();
        let _ = std::fs::remove_file(&outside);
        assert!(
            !written,
            "{tool} wrote {} outside the sandbox",
            outside.display()
        );
        let message = match refused {
            Ok(result) => result.text_content(),
            Err(error) => error.message,
        };
        // The command's own error says why; the Python SDK hides a
        // tool's exception behind "Error executing tool".
        let expected = if name == "command" {
            "Permission denied"
        } else {
            "Error executing tool write"
        };
        assert!(message.contains(expected), "{message}");
    }
    run.shutdown().await;
}

/// A discovery command slower than the start-up bound does not hold the
/// run back (a client waits for the server to start): its tools arrive
/// later, with a notice, as a slow server's do. A run that ends first
/// kills it.
#[tokio::test]
async fn a_slow_discovery_command_does_not_hold_up_the_start() {
    let dir = workspace_with(&[("a.txt", "a")]);
    let tools = peer("tools.py");
    let started = std::time::Instant::now();
    let run = run_of(
        dir.path(),
        json!({
            "toolDiscoveryCommand": format!("sh -c \"sleep 20; exec python3 '{tools}' discover\""),
            "toolCallCommand": format!("python3 '{tools}' call"),
        }),
    )
    .await;
    let waited = started.elapsed();
    // The bound is 10 s; the command takes 20.
    assert!(waited < Duration::from_secs(18), "wiring waited {waited:?}");
    assert!(
        status(&run)
            .await
            .contains("toolDiscoveryCommand is still running"),
        "{}",
        status(&run).await
    );
    assert!(!names(&run).contains(&"add".to_string()));
    let arrived = tools_until(&run, Duration::from_secs(60), |names| {
        names.iter().any(|n| n == "add")
    })
    .await;
    assert!(arrived, "{:?}", names(&run));
    let added = ok(&run, "add", json!({"a": 2, "b": 3})).await;
    assert!(added.starts_with('5'), "{added}");
    assert!(
        added.contains("toolDiscoveryCommand finished: its 5 tools are now available"),
        "{added}"
    );
    assert!(
        status(&run)
            .await
            .contains("toolDiscoveryCommand declared 5 tools")
    );
    run.shutdown().await;

    let run = run_of(
        dir.path(),
        json!({
            "toolDiscoveryCommand": "sh -c \"touch discovery.started; exec sleep 60.4711\"",
            "toolCallCommand": "true",
        }),
    )
    .await;
    assert!(dir.path().join("discovery.started").exists());
    let pid = gantry_core::testing::process_with("60.4711").expect("the discovery command runs");
    run.shutdown().await;
    assert!(
        gantry_core::testing::exited(pid, Duration::from_secs(10)).await,
        "the discovery command outlived its run"
    );
}
