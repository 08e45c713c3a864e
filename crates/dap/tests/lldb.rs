//! `debug` against the real lldb-dap, on a small C program
//! (tests/fixtures/c, copied to a temp workspace and built there with
//! `cc -g` before the test's calls).

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::Path;

use common::{build, debug, fixture, lldb, number_after, project};
use serde_json::json;

const WAIT: u64 = 30_000;

/// The fixture built and started with `--forever`, for a test to attach
/// to; it dies with the returned child.
fn running_forever(root: &Path) -> gantry_process::Child {
    build(root);
    gantry_process::Command::new(root.join("build/app"), &gantry_process::Sandbox::default())
        .arg("--forever")
        .current_dir(root)
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn lldb_stops_inspects_steps_and_runs_to_the_end() {
    if !lldb() {
        return;
    }
    let (dir, run) = project(&fixture("c"), json!({}));
    build(dir.path());
    let before = common::snapshot(dir.path());
    debug(
        &run,
        json!({"op": "breakpoints", "file": "main.c", "lines": [13]}),
    )
    .await;
    let stop = debug(
        &run,
        json!({"op": "launch", "program": "build/app", "wait_ms": WAIT}),
    )
    .await;
    assert!(stop.contains("launched build/app under lldb"), "{stop}");
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    assert!(stop.contains("at main.c:13 in main"), "{stop}");
    assert!(
        stop.contains("13 |     int result = compute(6, 7);"),
        "{stop}"
    );
    let items = number_after(
        &stop[stop.find("items =").expect("items in the locals")..],
        "[reference ",
    );
    let children = debug(&run, json!({"op": "variables", "reference": items})).await;
    assert!(children.contains("1–50 of 70"), "{children}");
    assert!(
        children.contains(&format!("`variables` with reference {items} and offset 50")),
        "{children}"
    );

    let into = debug(&run, json!({"op": "step_in", "wait_ms": WAIT})).await;
    assert!(into.contains("at main.c:6 in compute"), "{into}");
    assert!(into.contains("a = 6") && into.contains("b = 7"), "{into}");
    let over = debug(&run, json!({"op": "step_over", "wait_ms": WAIT})).await;
    assert!(
        over.contains("at main.c:7 in compute") && over.contains("total = 42"),
        "{over}"
    );
    let stack = debug(&run, json!({"op": "stack"})).await;
    let main_line = stack
        .lines()
        .find(|l| l.contains("main at main.c"))
        .unwrap_or_else(|| panic!("{stack}"));
    let main_frame = number_after(main_line, "frame ");
    let value = debug(
        &run,
        json!({"op": "evaluate", "expression": "items[69] + 1", "frame_id": main_frame}),
    )
    .await;
    assert!(value.contains("items[69] + 1 = 70"), "{value}");
    let out = debug(&run, json!({"op": "step_out", "wait_ms": WAIT})).await;
    assert!(out.contains("in main"), "{out}");
    let end = debug(&run, json!({"op": "continue", "wait_ms": WAIT})).await;
    assert!(end.contains("exited with code 0"), "{end}");
    assert!(end.contains("result=43"), "the output is captured: {end}");
    run.shutdown().await;
    assert_eq!(
        before,
        common::snapshot(dir.path()),
        "the workspace is as it was"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn lldb_stops_on_a_crash_with_its_signal() {
    if !lldb() {
        return;
    }
    let (dir, run) = project(&fixture("c"), json!({}));
    build(dir.path());
    let stop = debug(
        &run,
        json!({"op": "launch", "program": "build/app", "args": ["--crash"], "wait_ms": WAIT}),
    )
    .await;
    assert!(stop.contains("stopped: exception"), "{stop}");
    assert!(
        stop.contains("signal SIGSEGV: address not mapped"),
        "{stop}"
    );
    assert!(stop.contains("result=43"), "what it printed before: {stop}");
    assert!(stop.contains("at main.c:18 in main"), "{stop}");
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn lldb_still_running_pause_and_blank_line_breakpoint() {
    if !lldb() {
        return;
    }
    let (dir, run) = project(&fixture("c"), json!({}));
    build(dir.path());
    let running = debug(
        &run,
        json!({"op": "launch", "program": "build/app", "args": ["--forever"], "wait_ms": 1000}),
    )
    .await;
    assert!(running.contains("still running after 1.0 s"), "{running}");
    let paused = debug(&run, json!({"op": "pause", "wait_ms": WAIT})).await;
    assert!(paused.contains("stopped: pause"), "{paused}");
    let blank = debug(
        &run,
        json!({"op": "breakpoints", "file": "main.c", "lines": [1, 23]}),
    )
    .await;
    // A line without code (an #include) has nowhere to go.
    assert!(blank.contains("line 1: verified: false"), "{blank}");
    assert!(blank.contains("line 23: verified"), "{blank}");
    let processes = common::session_processes(&run);
    debug(&run, json!({"op": "terminate"})).await;
    let left: Vec<i32> = processes
        .into_iter()
        .filter(|&pid| common::alive(pid))
        .collect();
    assert!(left.is_empty(), "processes left after terminate: {left:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn lldb_stops_a_rust_panic_with_its_message() {
    if !lldb() || !common::need("rustc", common::on_path("rustc").is_some()) {
        return;
    }
    let (dir, run) = project(&fixture("rust"), json!({}));
    std::fs::create_dir_all(dir.path().join("build")).unwrap();
    let built = std::process::Command::new("rustc")
        .args(["-g", "--edition", "2021", "-o", "build/app", "src/main.rs"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(built.success(), "rustc failed");
    let stop = debug(
        &run,
        json!({"op": "launch", "program": "build/app", "args": ["forty-two"], "wait_ms": WAIT}),
    )
    .await;
    assert!(stop.contains("stopped: panic (Rust)"), "{stop}");
    assert!(stop.contains("panicked at src/main.rs:4"), "{stop}");
    assert!(stop.contains("bad input: forty-two"), "{stop}");
    let stack = debug(&run, json!({"op": "stack"})).await;
    assert!(
        stack.contains("main.rs:4"),
        "the panicking line is on the stack: {stack}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn lldb_attaches_to_a_process_by_pid_and_detaches() {
    if !lldb() {
        return;
    }
    let (dir, run) = common::project_with(
        &fixture("c"),
        json!({}),
        json!({"sandbox": {"mode": "off"}}),
    );
    let program = running_forever(dir.path());
    let attached = debug(&run, json!({"op": "attach", "pid": program.pid()})).await;
    assert!(
        attached.starts_with(&format!("attached to process {} under lldb", program.pid())),
        "{attached}"
    );
    let paused = if attached.contains("stopped") {
        debug(&run, json!({"op": "continue", "wait_ms": 300})).await;
        debug(&run, json!({"op": "pause", "wait_ms": WAIT})).await
    } else {
        debug(&run, json!({"op": "pause", "wait_ms": WAIT})).await
    };
    assert!(paused.contains("stopped: pause"), "{paused}");
    let beats = debug(&run, json!({"op": "stack"})).await;
    assert!(beats.contains("main at main.c:"), "{beats}");
    debug(&run, json!({"op": "terminate"})).await;
    assert!(
        common::alive(program.pid() as i32),
        "a process attached to, not started, keeps running"
    );
    drop(program);
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn lldb_attach_by_pid_under_the_sandbox_says_why_it_cannot() {
    if !lldb() {
        return;
    }
    let (dir, run) = common::project_with(
        &fixture("c"),
        json!({}),
        json!({"sandbox": {"mode": "workspace-write"}}),
    );
    if !gantry_process::sandbox::Sandbox::of(&run).await.confines() {
        // Only where Landlock confines (GANTRY_SKIP_SANDBOX covers kernels without it).
        assert!(
            gantry_core::testing::skip_requested(
                "GANTRY_SKIP_SANDBOX",
                "the attach-under-sandbox test, which needs Landlock"
            ),
            "Landlock does not confine here; set GANTRY_SKIP_SANDBOX=1 to skip"
        );
        return;
    }
    let program = running_forever(dir.path());
    let refused = debug(&run, json!({"op": "attach", "pid": program.pid()})).await;
    assert!(
        refused.contains("ERROR") && refused.contains("forbids tracing process"),
        "{refused}"
    );
    assert!(refused.contains("sandbox.mode: off"), "{refused}");
    drop(program);
}
