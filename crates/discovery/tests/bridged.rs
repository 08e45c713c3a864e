//! Bridged MCP servers against real peers:
//! `@modelcontextprotocol/server-everything` and
//! `@modelcontextprotocol/server-filesystem` over stdio, and servers written
//! with the official Python `mcp` SDK over stdio and streamable HTTP.
//! scripts/install-discovery.sh installs them all.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_core::testing::{err, fails, ok, workspace_with};
use gantry_core::{Answer, ApprovalMode, CallErrorKind, Surface, Tier};
use serde_json::json;

mod common;

use common::{Person, names, peer, run_of, run_with, snapshot, status, tools_until, wired};

#[tokio::test]
async fn stdio_servers_are_bridged_with_names_tiers_and_filters() {
    let dir = workspace_with(&[("notes.txt", "hello from the workspace\n")]);
    let root = dir.path().canonicalize().unwrap();
    let before = snapshot(&root);
    let settings = json!({"mcpServers": {
        "everything": {"command": "mcp-server-everything", "excludeTools": ["get-env", "echo"],
                       "includeTools": ["echo", "get-sum", "get-env", "toggle-simulated-logging", "get-tiny-image"]},
        "fs": {"command": "mcp-server-filesystem", "args": [root],
               "includeTools": ["read_text_file", "write_file", "list_allowed_directories"]}
    }});
    let run = run_of(&root, settings.clone()).await;
    let listed = names(&run);
    for expected in [
        "everything__get-sum",
        "everything__toggle-simulated-logging",
        "everything__get-tiny-image",
        "fs__read_text_file",
        "fs__write_file",
        "fs__list_allowed_directories",
    ] {
        assert!(
            listed.contains(&expected.to_string()),
            "{expected} in {listed:?}"
        );
    }
    // Exclude wins over include; what include does not list is not bridged.
    for absent in [
        "everything__echo",
        "everything__get-env",
        "fs__read_file",
        "fs__move_file",
    ] {
        assert!(
            !listed.contains(&absent.to_string()),
            "{absent} in {listed:?}"
        );
    }
    let tiers: BTreeMap<String, Tier> = run.tools().into_iter().map(|t| (t.name, t.tier)).collect();
    assert_eq!(tiers["fs__read_text_file"], Tier::Read, "readOnlyHint");
    assert_eq!(tiers["fs__write_file"], Tier::Exec, "no readOnlyHint");
    let schema = &run
        .tools()
        .into_iter()
        .find(|t| t.name == "fs__read_text_file")
        .unwrap()
        .input_schema;
    assert!(schema.get("$schema").is_none(), "{schema}");
    assert_eq!(schema["properties"]["path"]["type"], "string");

    let file = root.join("notes.txt").display().to_string();
    let text = ok(&run, "fs__read_text_file", json!({"path": file})).await;
    assert!(text.contains("hello from the workspace"), "{text}");
    let sum = ok(&run, "everything__get-sum", json!({"a": 2, "b": 40})).await;
    assert!(sum.contains("42"), "{sum}");
    let image =
        gantry_core::testing::ok_result(&run, "everything__get-tiny-image", json!({})).await;
    assert!(
        image.llm_content.iter().any(|part| matches!(part, gantry_core::Part::Image { mime_type, data } if mime_type == "image/png" && !data.is_empty())),
        "{:?}",
        image.llm_content
    );
    // The pipeline validates against the bridged schema, naming the parameter.
    let invalid = fails(
        &run,
        "everything__get-sum",
        json!({"a": "two", "b": 1}),
        CallErrorKind::InvalidParams,
    )
    .await;
    assert!(invalid.message.contains("a"), "{}", invalid.message);
    // A server's own failure comes back as a failed call.
    let outside = err(&run, "fs__read_text_file", json!({"path": "/etc/hostname"})).await;
    assert!(
        outside.contains("fs") && outside.to_lowercase().contains("denied"),
        "{outside}"
    );
    run.shutdown().await;

    // A surface capped at read sees no exec tool, and cannot call one.
    let read_only = run_with(
        &root,
        settings,
        Surface::new(Tier::Read, ApprovalMode::Client),
        None,
    )
    .await;
    let listed = read_only
        .tools()
        .into_iter()
        .map(|t| t.name)
        .collect::<Vec<_>>();
    assert!(
        listed.contains(&"fs__read_text_file".to_string()),
        "{listed:?}"
    );
    assert!(
        !listed.contains(&"fs__write_file".to_string()),
        "{listed:?}"
    );
    fails(
        &read_only,
        "fs__write_file",
        json!({"path": file, "content": "x"}),
        CallErrorKind::AboveCap,
    )
    .await;
    read_only.shutdown().await;
    assert_eq!(snapshot(&root), before, "the workspace was changed");
}

#[tokio::test]
async fn the_workspace_is_offered_as_the_root() {
    let dir = workspace_with(&[("a.txt", "a")]);
    let root = dir.path().canonicalize().unwrap();
    // No directory on the command line: the server asks for roots.
    let run = run_of(
        &root,
        json!({"mcpServers": {"fs": {"command": "mcp-server-filesystem"}}}),
    )
    .await;
    // The server asks for roots once initialised, on its own time, and
    // gives no sign when it has them: ask it a few times (bounded).
    let mut allowed = String::new();
    for _ in 0..50 {
        allowed = ok(&run, "fs__list_allowed_directories", json!({})).await;
        if allowed.contains(&root.display().to_string()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(allowed.contains(&root.display().to_string()), "{allowed}");
    run.shutdown().await;
}

#[tokio::test]
async fn trust_skips_gantrys_confirmation_for_that_server_only() {
    let dir = workspace_with(&[("a.txt", "a")]);
    let person = Arc::new(Person {
        reply: Answer::Skipped,
        asked: Mutex::default(),
    });
    let settings = json!({"mcpServers": {
        "trusted": {"command": "mcp-server-everything", "trust": true, "includeTools": ["toggle-simulated-logging"]},
        "plain": {"command": "mcp-server-everything", "includeTools": ["toggle-simulated-logging"]}
    }});
    let run = run_with(
        dir.path(),
        settings,
        Surface::new(Tier::Exec, ApprovalMode::Default),
        Some(person.clone()),
    )
    .await;
    let text = ok(&run, "trusted__toggle-simulated-logging", json!({})).await;
    assert!(text.to_lowercase().contains("logging"), "{text}");
    let refused = fails(
        &run,
        "plain__toggle-simulated-logging",
        json!({}),
        CallErrorKind::Refused,
    )
    .await;
    assert!(refused.message.contains("declined"), "{}", refused.message);
    assert_eq!(
        *person.asked.lock().unwrap(),
        ["confirm plain__toggle-simulated-logging"]
    );
    run.shutdown().await;
}

#[tokio::test]
async fn a_slow_call_hits_the_servers_timeout_and_the_server_stays_usable() {
    let dir = workspace_with(&[("a.txt", "a")]);
    let run = run_of(
        dir.path(),
        json!({"mcpServers": {"slow": {"command": "mcp-server-everything", "timeout": 400,
            "includeTools": ["trigger-long-running-operation", "get-sum"]}}}),
    )
    .await;
    let started = std::time::Instant::now();
    let error = err(
        &run,
        "slow__trigger-long-running-operation",
        json!({"duration": 20, "steps": 2}),
    )
    .await;
    assert!(error.contains("no answer within 400 ms"), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        ok(&run, "slow__get-sum", json!({"a": 1, "b": 2}))
            .await
            .contains('3')
    );
    run.shutdown().await;
}

/// A bridged stdio server has the commands' network: the hosts the user
/// allowed, through the sandbox's proxy, and no other. A loopback server
/// stands in for its service, its name mapped to loopback for the proxy.
#[tokio::test]
async fn a_bridged_server_reaches_only_the_allowed_hosts() {
    let (_served, stand_in) =
        gantry_core::testing::StandIn::with_files(&[("x.txt", "reached the stand-in\n")]);
    let port = stand_in.port;
    // SAFETY: read when the run's proxy is made, below; the same value in
    // every test of this binary that sets it.
    unsafe {
        std::env::set_var(
            gantry_process::network::proxy::MAP_ENV,
            "pkg.example.org=127.0.0.1,other.example.org=127.0.0.1",
        )
    };
    let dir = workspace_with(&[("a.txt", "a")]);
    let run = run_of(
        dir.path(),
        json!({
            "mcpServers": {"py": {"command": "python3", "args": [peer("stdio_server.py")]}},
            "sandbox": {"network": {"allow": [format!("pkg.example.org:{port}")], "ask": false}}
        }),
    )
    .await;
    if gantry_process::Sandbox::of(&run).await.own_network() {
        let url = |host: &str| json!({"url": format!("http://{host}:{port}/x.txt")});
        let reached = ok(&run, "py__fetch", url("pkg.example.org")).await;
        assert!(reached.contains("reached the stand-in"), "{reached}");
        let refused = ok(&run, "py__fetch", url("other.example.org")).await;
        assert!(
            refused.contains("refused 403")
                && refused.contains(&format!(
                    "refused the connection to other.example.org:{port}"
                )),
            "{refused}"
        );
    } else {
        assert!(
            gantry_core::testing::skip_requested(
                "GANTRY_SKIP_SANDBOX",
                "the bridged server's network test, which needs user namespaces"
            ),
            "commands get no network of their own here; set GANTRY_SKIP_SANDBOX=1 to skip"
        );
    }
    run.shutdown().await;
}

/// A server that worked and then died is restarted at once, and its tools
/// stay listed meanwhile (no churn of the client's list): a call made
/// while it restarts waits for it and is answered by the new process.
#[tokio::test]
async fn a_crashing_server_is_reported_and_a_call_waits_for_its_restart() {
    let dir = workspace_with(&[("a.txt", "a")]);
    let run = run_of(
        dir.path(),
        json!({"mcpServers": {"py": {"command": "python3", "args": [peer("stdio_server.py")]}}}),
    )
    .await;
    // When the process started, its third line (run notices come after).
    let pid = |text: String| -> String { text.lines().nth(2).unwrap().to_string() };
    let first = pid(ok(&run, "py__pid", json!({})).await);
    let error = err(&run, "py__crash", json!({})).await;
    assert!(
        error.contains("MCP server `py` is down: exited with code 3"),
        "{error}"
    );
    assert!(error.contains("exiting on purpose"), "the stderr: {error}");
    assert!(
        names(&run).iter().any(|n| n == "py__pid"),
        "its tools stay listed while it restarts: {:?}",
        names(&run)
    );
    let mut notices = error;
    let again = ok(&run, "py__pid", json!({})).await;
    notices.push_str(&again);
    assert!(
        notices.contains("a call to its tools waits for it to be back"),
        "{notices}"
    );
    assert!(
        notices.contains("[run notice] MCP server `py` is up; its tools are back"),
        "{notices}"
    );
    let second = pid(again);
    assert_ne!(first, second);
    assert!(status(&run).await.contains("MCP server `py`: up, 5 tools"));
    let second = gantry_core::testing::process_started_at(second.parse().unwrap(), "python")
        .expect("the restarted server runs");
    run.shutdown().await;
    assert!(
        gantry_core::testing::exited(second, Duration::from_secs(5)).await,
        "stopped with the run"
    );
}

#[tokio::test]
async fn a_server_that_cannot_start_is_said_in_status_and_in_the_call() {
    let dir = workspace_with(&[("a.txt", "a")]);
    let run = run_of(
        dir.path(),
        json!({"mcpServers": {
            "missing": {"command": "no-such-mcp-server-anywhere"},
            "dies": {"command": "python3", "args": ["-c", "import sys; print('bad config', file=sys.stderr); sys.exit(7)"]},
            "old": {"url": "http://127.0.0.1:9/sse"}
        }}),
    )
    .await;
    let said = status(&run).await;
    assert!(
        said.contains("MCP server `missing` is down: cannot start `no-such-mcp-server-anywhere`"),
        "{said}"
    );
    assert!(
        said.contains("MCP server `dies` is down") && said.contains("bad config"),
        "{said}"
    );
    assert!(
        said.contains("`mcpServers.old` is not started: `url` means the old SSE transport"),
        "{said}"
    );
    run.shutdown().await;
}

/// Starts the Python SDK's streamable HTTP server on a free port; returns
/// it (killed on drop) and its URL once it listens.
fn http_peer(delay: Option<&str>) -> (KillOnDrop, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut command = std::process::Command::new("python3");
    command.arg(peer("http_server.py")).arg(port.to_string());
    command.args(delay);
    let mut child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("Uvicorn running") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the HTTP server listens");
    (KillOnDrop(child), format!("http://127.0.0.1:{port}/mcp"))
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn streamable_http_servers_are_bridged() {
    let (_server, url) = http_peer(None);
    let dir = workspace_with(&[("a.txt", "a")]);
    let run = run_of(
        dir.path(),
        json!({"mcpServers": {"web": {"httpUrl": url, "headers": {"X-Test": "${HOME}"}, "excludeTools": ["crash"]}}}),
    )
    .await;
    let listed = names(&run);
    assert!(listed.contains(&"web__shout".to_string()), "{listed:?}");
    assert!(!listed.contains(&"web__crash".to_string()), "{listed:?}");
    assert_eq!(
        ok(&run, "web__shout", json!({"text": "quiet"}))
            .await
            .trim(),
        "QUIET"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn a_slow_server_does_not_hold_up_the_run_and_its_tools_arrive_later() {
    let dir = workspace_with(&[("a.txt", "a")]);
    let started = std::time::Instant::now();
    let run = run_of(
        dir.path(),
        json!({"mcpServers": {
            "quick": {"command": "python3", "args": [peer("stdio_server.py")]},
            "late": {"command": "python3", "args": [peer("stdio_server.py"), "12"]}
        }}),
    )
    .await;
    let waited = started.elapsed();
    // Wiring waited for the quick server (however long a loaded machine
    // takes it) and for the late one no longer than the bound.
    assert!(waited < Duration::from_secs(12), "wiring waited {waited:?}");
    assert!(status(&run).await.contains("MCP server `late`: starting"));
    assert!(!names(&run).contains(&"late__pid".to_string()));
    let error = fails(&run, "late__pid", json!({}), CallErrorKind::UnknownTool).await;
    assert!(
        error.message.contains("Available tools"),
        "{}",
        error.message
    );
    let arrived = tools_until(&run, Duration::from_secs(60), |names| {
        names.iter().any(|n| n == "late__pid") && names.iter().any(|n| n == "quick__pid")
    })
    .await;
    assert!(arrived, "{:?}", names(&run));
    let late = ok(&run, "late__pid", json!({})).await;
    assert!(
        late.lines().next().unwrap().parse::<i32>().is_ok(),
        "{late}"
    );
    assert!(
        late.contains("[run notice] MCP server `late` is up: its tools are now available"),
        "{late}"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn the_wiring_does_not_wait_for_a_server_and_the_first_listing_does() {
    let dir = workspace_with(&[("a.txt", "a")]);
    let run = wired(
        dir.path(),
        json!({"mcpServers": {"slow": {"command": "python3", "args": [peer("stdio_server.py"), "3"]}}}),
        Surface::default(),
        None,
    )
    .await;
    // The server sleeps 3 s before it serves: the wiring (and so the
    // client's `initialize`) did not wait for it.
    assert!(!run.has_arrived());
    assert!(status(&run).await.contains("MCP server `slow`: starting"));
    assert!(!names(&run).contains(&"slow__pid".to_string()));
    // A call of its tool before it is listed waits for it.
    let pid = ok(&run, "slow__pid", json!({})).await;
    assert!(pid.lines().next().unwrap().parse::<i32>().is_ok(), "{pid}");
    assert!(run.has_arrived());
    assert!(names(&run).contains(&"slow__pid".to_string()));
    // It came within the bound the first listing waits: no news of it.
    assert!(!pid.contains("[run notice]"), "{pid}");
    run.shutdown().await;
}

#[tokio::test]
async fn elicitation_reaches_the_person_of_the_open_call_or_is_declined() {
    let dir = workspace_with(&[("a.txt", "a")]);
    let settings = json!({"mcpServers": {"e": {"command": "mcp-server-everything"}}});
    let tool = "e__trigger-elicitation-request";
    let person = Arc::new(Person {
        reply: Answer::Given {
            chosen: Vec::new(),
            text: Some(r#"{"name": "Ada", "check": true, "firstLine": "x", "email": "ada@example.com", "homepage": "https://example.com", "birthdate": "1815-12-10", "integer": 7, "number": 3.5, "untitledSingleSelectEnum": "option1", "titledSingleSelectEnum": "option1", "legacyTitledEnum": "option1"}"#.into()),
        },
        asked: Mutex::default(),
    });
    let run = run_with(
        dir.path(),
        settings.clone(),
        Surface::default(),
        Some(person.clone()),
    )
    .await;
    assert!(names(&run).contains(&tool.to_string()), "{:?}", names(&run));
    let answered = ok(&run, tool, json!({})).await;
    assert_eq!(
        person.asked.lock().unwrap().len(),
        1,
        "the person was asked"
    );
    assert!(answered.to_lowercase().contains("accept"), "{answered}");
    run.shutdown().await;

    // No person: the server sees a decline.
    let run = run_of(dir.path(), settings).await;
    let declined = ok(&run, tool, json!({})).await;
    assert!(declined.to_lowercase().contains("decline"), "{declined}");
    run.shutdown().await;
}

#[tokio::test]
async fn a_streamable_http_server_that_dies_is_said() {
    let (server, url) = http_peer(None);
    let dir = workspace_with(&[("a.txt", "a")]);
    let run = run_of(dir.path(), json!({"mcpServers": {"web": {"httpUrl": url}}})).await;
    assert!(names(&run).contains(&"web__crash".to_string()));
    let error = err(&run, "web__crash", json!({})).await;
    drop(server);
    assert!(error.contains("MCP server `web`"), "{error}");
    let gone = tools_until(&run, Duration::from_secs(60), |names| {
        !names.iter().any(|n| n == "web__shout")
    })
    .await;
    assert!(gone, "{:?}", names(&run));
    let said = status(&run).await;
    assert!(said.contains("MCP server `web` is down"), "{said}");
    run.shutdown().await;
}

#[tokio::test]
async fn a_servers_env_is_expanded_and_cwd_is_beneath_the_root() {
    let dir = workspace_with(&[("sub/a.txt", "a")]);
    let root = dir.path().canonicalize().unwrap();
    let run = run_of(
        &root,
        json!({"mcpServers": {"e": {
            "command": "mcp-server-everything",
            "includeTools": ["get-env"],
            "cwd": "sub",
            "env": {"GANTRY_DISCOVERY_PROBE": "${HOME}/probe", "GANTRY_DISCOVERY_DEFAULT": "${GANTRY_UNSET_X:-fallback}"}
        }}}),
    )
    .await;
    let env = ok(&run, "e__get-env", json!({})).await;
    let home = std::env::var("HOME").unwrap();
    assert!(env.contains(&format!("{home}/probe")), "{env}");
    assert!(env.contains("fallback"), "{env}");
    run.shutdown().await;

    let run = run_of(
        &root,
        json!({"mcpServers": {"py": {"command": "python3", "args": [peer("stdio_server.py")], "cwd": "sub"}}}),
    )
    .await;
    let said = ok(&run, "py__pid", json!({})).await;
    let cwd = said.lines().nth(1).unwrap();
    assert_eq!(Path::new(cwd), root.join("sub"));
    run.shutdown().await;

    // A variable that is not set stops the server, saying which.
    let run = run_of(
        &root,
        json!({"mcpServers": {"e": {"command": "mcp-server-everything", "env": {"X": "$GANTRY_SURELY_UNSET_VAR"}}}}),
    )
    .await;
    let said = status(&run).await;
    assert!(
        said.contains("`env.X`: $GANTRY_SURELY_UNSET_VAR is not set"),
        "{said}"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn a_servers_own_list_change_reaches_the_run() {
    let dir = workspace_with(&[("a.txt", "a")]);
    let run = run_of(
        dir.path(),
        json!({"mcpServers": {"py": {"command": "python3", "args": [peer("stdio_server.py")]}}}),
    )
    .await;
    assert!(!names(&run).contains(&"py__grown".to_string()));
    let changes = run.tools_changed();
    ok(&run, "py__grow", json!({})).await;
    let grown = tools_until(&run, Duration::from_secs(30), |names| {
        names.iter().any(|n| n == "py__grown")
    })
    .await;
    assert!(grown, "{:?}", names(&run));
    assert!(changes.has_changed().unwrap());
    assert_eq!(ok(&run, "py__grown", json!({})).await, "grown");
    run.shutdown().await;
}
