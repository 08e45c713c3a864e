//! The vibe_* tools against a real OpenAI-compatible peer on loopback (a
//! scripted Python server speaking the chat-completions wire format,
//! streamed and not), with the real fs, edit and shell families as the
//! workers' tools.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod peer;

use std::path::Path;
use std::time::Duration;

use gantry_core::testing::{
    err, exited, fails, ok, parent_of, process_running, read, unique_sleep, workspace_with,
};
use gantry_core::{ApprovalMode, CallErrorKind, Family, Run, Settings, Surface, Tier, Workspace};
use serde_json::{Value, json};

use peer::Peer;

/// A run over `dir` with the fs, edit, shell and workers families, the
/// given user-level settings, on `surface`.
fn run_with(dir: &Path, settings: Value, surface: Surface) -> Run {
    let settings = Settings::from_value(settings).unwrap();
    let builder = Run::builder(Workspace::new(dir).unwrap())
        .settings(settings)
        .surface(surface);
    let builder = gantry_fs::register(builder);
    let builder = gantry_edit::register(builder);
    let builder = gantry_shell::register(builder);
    gantry_workers::register(builder).build()
}

/// Settings with both tiers on `peer`: `fast` streamed, `good` not.
fn tiers(peer: &Peer, extra: Value) -> Value {
    let mut workers = json!({
        "fast": {"baseUrl": peer.url(), "model": "fast-model"},
        "good": {"baseUrl": peer.url(), "model": "good-model", "stream": false},
    });
    workers
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({ "workers": workers })
}

fn names_offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The function responses (role `tool`) of the last request of a
/// conversation.
fn function_responses(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

async fn wait(run: &Run, id: &str) -> String {
    ok(
        run,
        "vibe_wait",
        json!({"worker_id": id, "timeout_seconds": 30}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn two_workers_edit_files_on_their_tiers_and_take_a_follow_up() {
    let peer = Peer::start(json!({"conversations": {
        "BRIEF-A": [
            {"content": "Writing it.", "tool_calls": [
                {"name": "write_file", "arguments": {"path": "a.txt", "content": "alpha\n"}}]},
            {"content": "Wrote a.txt."},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "c.txt", "content": "gamma\n"}}]},
            {"content": "Wrote c.txt too."}
        ],
        "BRIEF-B": [
            {"tool_calls": [
                {"name": "read_file", "arguments": {"path": "b.txt"}},
                {"name": "edit", "arguments": {"path": "b.txt", "old_string": "old", "new_string": "new"}}]},
            {"content": "Edited b.txt."}
        ]
    }}));
    let dir = workspace_with(&[("b.txt", "the old line\n")]);
    let run = run_with(dir.path(), tiers(&peer, json!({})), Surface::default());

    let a = ok(
        &run,
        "vibe_spawn",
        json!({"brief": "BRIEF-A: write a.txt", "label": "writer"}),
    )
    .await;
    assert!(
        a.contains("Started worker w1 (writer) on tier fast (model fast-model)"),
        "{a}"
    );
    let b = ok(
        &run,
        "vibe_spawn",
        json!({"brief": "BRIEF-B: fix b.txt", "label": "editor", "tier": "good"}),
    )
    .await;
    assert!(
        b.contains("w2 (editor) on tier good (model good-model)"),
        "{b}"
    );

    let report_a = wait(&run, "w1").await;
    assert!(
        report_a.contains("done") && report_a.contains("Wrote a.txt."),
        "{report_a}"
    );
    assert!(
        report_a.contains("tokens 30 in / 10 out"),
        "usage summed: {report_a}"
    );
    let report_b = wait(&run, "w2").await;
    assert!(report_b.contains("Edited b.txt."), "{report_b}");
    assert_eq!(read(&run, "a.txt"), "alpha\n");
    assert_eq!(read(&run, "b.txt"), "the new line\n");

    // The tier chose the model id, and the stream flag, sent to the server.
    let conversation_a = peer.conversation("BRIEF-A");
    let conversation_b = peer.conversation("BRIEF-B");
    assert!(
        conversation_a
            .iter()
            .all(|r| r["model"] == "fast-model" && r["stream"] == true)
    );
    assert!(conversation_a[0]["stream_options"]["include_usage"] == true);
    assert!(
        conversation_b
            .iter()
            .all(|r| r["model"] == "good-model" && r["stream"] == false)
    );
    // Offered: what the worker surface (write, auto-edit) shows, never
    // vibe_* itself, never exec tools.
    let offered = names_offered(&conversation_a[0]);
    for name in ["read_file", "write_file", "edit", "ls"] {
        assert!(offered.contains(&name.to_string()), "{offered:?}");
    }
    assert!(
        !offered
            .iter()
            .any(|n| n.starts_with("vibe_") || n == "shell"),
        "{offered:?}"
    );
    // The function responses carry the tools' results, in call order.
    let responses = function_responses(&conversation_b[1]);
    assert_eq!(responses.len(), 2, "{responses:?}");
    assert!(responses[0].contains("the old line"), "{responses:?}");
    assert!(!responses[1].starts_with("error"), "{responses:?}");

    let list = ok(&run, "vibe_list", json!({})).await;
    assert!(list.contains("w1\twriter\tfast\tdone\t"), "{list}");
    assert!(list.contains("w2\teditor\tgood\tdone\t"), "{list}");
    assert!(list.contains("Edited b.txt."), "{list}");

    // A follow-up is a new user turn after the conversation so far.
    let sent = ok(
        &run,
        "vibe_send",
        json!({"worker_id": "w1", "message": "now c.txt"}),
    )
    .await;
    assert!(sent.contains("running again"), "{sent}");
    let report_c = wait(&run, "w1").await;
    assert!(report_c.contains("Wrote c.txt too."), "{report_c}");
    assert_eq!(read(&run, "c.txt"), "gamma\n");
    let last = peer.conversation("BRIEF-A").pop().unwrap();
    let roles: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
            "tool"
        ]
    );
    assert_eq!(last["messages"][5]["content"], "now c.txt");

    // Each finish reached the directing model once, as a run notice,
    // never the other worker's model.
    let seen = [
        a,
        b,
        report_a,
        report_b,
        list,
        sent,
        report_c,
        ok(&run, "vibe_list", json!({})).await,
    ]
    .join("\n");
    for notice in [
        "worker w1 (writer) is done: Wrote a.txt.",
        "worker w2 (editor) is done",
        "worker w1 (writer) is done: Wrote c.txt too.",
    ] {
        assert_eq!(
            seen.matches(&format!("[run notice] {notice}")).count(),
            1,
            "{notice}: {seen}"
        );
    }
    for request in peer.requests() {
        assert!(!request.to_string().contains("[run notice]"), "{request}");
    }
    run.shutdown().await;
}

/// Whether a process with `pid` is still there (and not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kill_mid_run_stops_the_command_and_every_process_it_started() {
    // Named by their sleeps: a command's `$$` and `$!` are pids of its own
    // PID namespace, meaningless to the test.
    let sleep = unique_sleep(30);
    let command = format!("{sleep} & wait; echo changed > victim.txt");
    let server_sleep = unique_sleep(40);
    let server = format!("exec {server_sleep}");
    let peer = Peer::start(json!({"conversations": {
        "BRIEF-KILL": [
            {"tool_calls": [{"name": "shell", "arguments": {"command": server, "is_background": true}}]},
            {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "victim.txt", "content": "changed\n"}}]},
            {"content": "done"}
        ]
    }}));
    let dir = workspace_with(&[("victim.txt", "original\n")]);
    let settings = tiers(&peer, json!({"maxTier": "exec", "approval": "yolo"}));
    let run = run_with(dir.path(), settings, Surface::default());
    ok(
        &run,
        "vibe_spawn",
        json!({"brief": "BRIEF-KILL", "label": "doomed"}),
    )
    .await;

    // The shell, its background sleep and the background server are up.
    let bound = Duration::from_secs(20);
    let child = process_running(&sleep, bound)
        .await
        .expect("the worker's command did not start");
    let shell = parent_of(child).expect("the sleep runs");
    let server = process_running(&server_sleep, bound)
        .await
        .expect("the worker's background server did not start");
    let started = [shell, child, server];
    assert!(started.iter().all(|pid| alive(*pid)));

    let busy = err(
        &run,
        "vibe_send",
        json!({"worker_id": "w1", "message": "faster"}),
    )
    .await;
    assert!(busy.contains("worker w1 is running"), "{busy}");

    let killed = ok(&run, "vibe_kill", json!({"worker_id": "w1"})).await;
    assert!(
        killed.contains("every process its tool calls started are stopped"),
        "{killed}"
    );
    for pid in &started {
        assert!(
            exited(*pid, Duration::from_secs(10)).await,
            "process {pid} outlived the kill"
        );
    }
    // Nothing it was about to do happens, now or later.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(read(&run, "victim.txt"), "original\n");
    assert_eq!(
        peer.conversation("BRIEF-KILL").len(),
        2,
        "no function response went back"
    );

    let list = ok(&run, "vibe_list", json!({})).await;
    assert!(list.contains("w1\tdoomed\tfast\tkilled\t"), "{list}");
    let again = err(
        &run,
        "vibe_send",
        json!({"worker_id": "w1", "message": "resume"}),
    )
    .await;
    assert!(again.contains("killed"), "{again}");
    assert!(wait(&run, "w1").await.contains("killed"));
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kill_during_a_model_request_returns_at_once_and_the_cap_refuses_with_the_list() {
    let peer = Peer::start(json!({"conversations": {"BRIEF-HANG": [{"hang": true}]}}));
    let dir = workspace_with::<&str>(&[]);
    let run = run_with(
        dir.path(),
        tiers(&peer, json!({"maxRunning": 1})),
        Surface::default(),
    );
    ok(
        &run,
        "vibe_spawn",
        json!({"brief": "BRIEF-HANG", "label": "slow"}),
    )
    .await;
    let refused = err(
        &run,
        "vibe_spawn",
        json!({"brief": "BRIEF-HANG 2", "label": "second"}),
    )
    .await;
    assert!(
        refused.contains("1 workers are already running"),
        "{refused}"
    );
    assert!(refused.contains("w1 (slow)"), "{refused}");
    let waited = wait_briefly(&run).await;
    assert!(
        waited.contains("running") && waited.contains("still running"),
        "{waited}"
    );
    let started = std::time::Instant::now();
    ok(&run, "vibe_kill", json!({"worker_id": "w1"})).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the kill waited out its grace"
    );
    // A killed worker frees its place.
    ok(
        &run,
        "vibe_spawn",
        json!({"brief": "BRIEF-HANG 3", "label": "third"}),
    )
    .await;
    run.shutdown().await;
}

async fn wait_briefly(run: &Run) -> String {
    ok(
        run,
        "vibe_wait",
        json!({"worker_id": "w1", "timeout_seconds": 1}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_capped_at_read_cannot_write_and_leaves_the_workspace_as_it_was() {
    let peer = Peer::start(json!({"conversations": {"BRIEF-READ": [
        {"tool_calls": [
            {"name": "write_file", "arguments": {"path": "new.txt", "content": "x"}},
            {"name": "ls", "arguments": {"path": "."}}]},
        {"content": "could not write"}
    ]}}));
    let dir = workspace_with(&[("keep.txt", "kept\n")]);
    let before = listing(dir.path());
    let run = run_with(
        dir.path(),
        tiers(&peer, json!({"maxTier": "read"})),
        Surface::default(),
    );
    // Handing out read-only work is itself annotated read-only.
    let spawn = run
        .tools()
        .into_iter()
        .find(|t| t.name == "vibe_spawn")
        .unwrap();
    assert_eq!(spawn.leads_to, None);
    ok(
        &run,
        "vibe_spawn",
        json!({"brief": "BRIEF-READ", "label": "reader"}),
    )
    .await;
    assert!(wait(&run, "w1").await.contains("could not write"));
    let conversation = peer.conversation("BRIEF-READ");
    let offered = names_offered(&conversation[0]);
    assert!(offered.contains(&"ls".to_string()), "{offered:?}");
    assert!(
        !offered
            .iter()
            .any(|n| n == "write_file" || n == "edit" || n == "shell")
    );
    let responses = function_responses(&conversation[1]);
    assert!(
        responses[0].starts_with("error: `write_file` is not a tool offered to you"),
        "{responses:?}"
    );
    assert!(responses[1].contains("keep.txt"), "{responses:?}");
    run.shutdown().await;
    assert_eq!(listing(dir.path()), before, "the workspace changed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_confirmation_no_one_can_give_is_refused_and_the_model_hears_why() {
    let peer = Peer::start(json!({"conversations": {"BRIEF-ASK": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "x"}}]},
        {"content": "refused"}
    ]}}));
    let dir = workspace_with::<&str>(&[]);
    let run = run_with(
        dir.path(),
        tiers(&peer, json!({"approval": "default"})),
        Surface::default(),
    );
    let spawn = run
        .tools()
        .into_iter()
        .find(|t| t.name == "vibe_spawn")
        .unwrap();
    assert_eq!(
        spawn.leads_to,
        Some(Tier::Write),
        "work that may write is annotated so"
    );
    ok(
        &run,
        "vibe_spawn",
        json!({"brief": "BRIEF-ASK", "label": "asker"}),
    )
    .await;
    wait(&run, "w1").await;
    let responses = function_responses(&peer.conversation("BRIEF-ASK")[1]);
    assert!(
        responses[0].contains("`write_file` was not run"),
        "{responses:?}"
    );
    assert!(responses[0].contains("no person is wired"), "{responses:?}");
    assert!(!dir.path().join("new.txt").exists());
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_is_never_wider_than_its_director() {
    let peer = Peer::start(json!({"conversations": {"BRIEF-PLAN": [{"content": "ok"}]}}));
    let dir = workspace_with::<&str>(&[]);
    let settings = tiers(&peer, json!({"maxTier": "exec", "approval": "yolo"}));
    let run = run_with(
        dir.path(),
        settings,
        Surface::new(Tier::Exec, ApprovalMode::Plan),
    );
    let started = ok(
        &run,
        "vibe_spawn",
        json!({"brief": "BRIEF-PLAN", "label": "p"}),
    )
    .await;
    assert!(
        started.contains("tools up to read with approval plan"),
        "{started}"
    );
    wait(&run, "w1").await;
    let offered = names_offered(&peer.conversation("BRIEF-PLAN")[0]);
    assert!(
        !offered.iter().any(|n| n == "write_file" || n == "shell"),
        "{offered:?}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn parameters_are_checked_and_errors_name_them() {
    let peer = Peer::start(json!({"conversations": {}}));
    let dir = workspace_with::<&str>(&[]);
    let settings = json!({"workers": {"good": {"baseUrl": peer.url(), "model": "m"}}});
    let run = run_with(dir.path(), settings, Surface::default());
    let cases = [
        (
            "vibe_spawn",
            json!({"brief": " ", "label": "x"}),
            "brief: expected",
        ),
        ("vibe_spawn", json!({"brief": "b"}), "label"),
        (
            "vibe_spawn",
            json!({"brief": "b", "label": "x", "tier": "fast"}),
            "`fast` is not configured",
        ),
        (
            "vibe_spawn",
            json!({"brief": "b", "label": "x", "tier": "best"}),
            "tier",
        ),
        (
            "vibe_wait",
            json!({"worker_id": "w9"}),
            "worker_id: no worker `w9`",
        ),
        (
            "vibe_wait",
            json!({"worker_id": "w1", "timeout_seconds": 0}),
            "timeout_seconds",
        ),
        ("vibe_kill", json!({"worker_id": "w1"}), "none was spawned"),
        (
            "vibe_send",
            json!({"worker_id": "w1", "message": ""}),
            "message",
        ),
    ];
    for (tool, args, expected) in cases {
        let error = fails(&run, tool, args.clone(), CallErrorKind::InvalidParams).await;
        assert!(
            error.message.contains(expected),
            "{tool} {args}: {}",
            error.message
        );
    }
    let list = ok(&run, "vibe_list", json!({})).await;
    assert!(list.contains("No workers"), "{list}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workers_section_in_an_untrusted_workspace_registers_nothing() {
    let peer = Peer::start(json!({"conversations": {}}));
    let workers = json!({"workers": {"fast": {"baseUrl": peer.url(), "model": "m"}}});
    let dir = workspace_with(&[(".gantry/settings.json", workers.to_string())]);
    let home = tempfile::tempdir().unwrap();
    let user_file = home.path().join("settings.json");

    let settings = Settings::load_from(&user_file, dir.path()).unwrap();
    let builder = Run::builder(Workspace::new(dir.path()).unwrap()).settings(settings.clone());
    assert_eq!(
        Family::instructions(&gantry_workers::FAMILY, &builder),
        None
    );
    let run = gantry_workers::register(builder).build();
    assert!(run.tools().is_empty(), "{:?}", run.tools());
    let refused = fails(
        &run,
        "vibe_spawn",
        json!({"brief": "b", "label": "l"}),
        CallErrorKind::Unavailable,
    )
    .await;
    assert!(
        refused.message.contains("worker mode is off"),
        "{}",
        refused.message
    );
    let warnings = gantry_workers::FAMILY.check_settings(&settings);
    assert!(
        warnings[0].contains("honoured only from ~/.gantry/settings.json"),
        "{warnings:?}"
    );
    let status = Family::status(&gantry_workers::FAMILY, &run).await;
    assert!(status[0].contains("add a `workers` section"), "{status:?}");
    assert!(
        status.iter().any(|l| l.contains("ignored from")),
        "{status:?}"
    );

    // The same section in a folder the user trusts turns worker mode on.
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(&user_file, json!({"trustedFolders": [root]}).to_string()).unwrap();
    gantry_core::trust::Approvals::beside(&user_file)
        .approve(dir.path())
        .unwrap();
    let settings = Settings::load_from(&user_file, dir.path()).unwrap();
    let builder = Run::builder(Workspace::new(dir.path()).unwrap()).settings(settings);
    let instructions = Family::instructions(&gantry_workers::FAMILY, &builder).unwrap();
    assert!(instructions.contains("tier `fast` (m)"), "{instructions}");
    assert!(instructions.contains("tools up to write"), "{instructions}");
    let run = gantry_workers::register(builder).build();
    assert_eq!(run.tools().len(), 5);
    let status = Family::status(&gantry_workers::FAMILY, &run).await;
    assert!(
        status[0].starts_with("tier fast: model m at http://127.0.0.1:"),
        "{status:?}"
    );
}

/// Every path under `dir` with its content, to compare before and after.
fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                stack.push(path);
                out.push((name, Vec::new()));
            } else {
                out.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn turns_are_bounded_and_a_failed_endpoint_is_reported_then_retried_on_send() {
    let step = json!({"tool_calls": [{"name": "ls", "arguments": {"path": "."}}]});
    let peer = Peer::start(json!({"conversations": {
        "BRIEF-LOOP": [step, step, step, {"content": "never reached"}]
    }}));
    let dir = workspace_with::<&str>(&[]);
    let settings = json!({"workers": {
        "fast": {"baseUrl": peer.url(), "model": "m", "stream": false},
        "good": {"baseUrl": "http://127.0.0.1:9/v1", "model": "gone"},
        "maxTurns": 2
    }});
    let run = run_with(dir.path(), settings, Surface::default());
    ok(
        &run,
        "vibe_spawn",
        json!({"brief": "BRIEF-LOOP", "label": "loop"}),
    )
    .await;
    let report = wait(&run, "w1").await;
    assert!(report.contains("out of turns"), "{report}");
    assert!(report.contains("stopped after 2 model turns"), "{report}");
    assert_eq!(peer.conversation("BRIEF-LOOP").len(), 2);

    ok(
        &run,
        "vibe_spawn",
        json!({"brief": "BRIEF-GONE", "label": "gone", "tier": "good"}),
    )
    .await;
    let report = wait(&run, "w2").await;
    assert!(
        report.contains("failed")
            && report.contains("cannot reach the model at http://127.0.0.1:9/v1"),
        "{report}"
    );
    let list = ok(&run, "vibe_list", json!({})).await;
    assert!(list.contains("w2\tgone\tgood\tfailed\t"), "{list}");
    // A failed worker is tried again on the next message, not left hung.
    ok(
        &run,
        "vibe_send",
        json!({"worker_id": "w2", "message": "try again"}),
    )
    .await;
    assert!(wait(&run, "w2").await.contains("cannot reach the model"));
    run.shutdown().await;
}
