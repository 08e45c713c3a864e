//! `debug` against the real delve (`dlv dap`), on a small Go program
//! that uses only the standard library (tests/fixtures/go, copied to a
//! temp workspace; delve builds it, with GOPROXY=off, into Gantry's
//! scratch directory).

mod common;

use common::{debug, fixture, number_after, project};
use serde_json::json;

const WAIT: u64 = 60_000;

fn delve() -> bool {
    // SAFETY: set before any adapter starts; the value is the same for
    // every test of this binary.
    unsafe { std::env::set_var("GOPROXY", "off") };
    common::need("delve (dlv)", common::on_path("dlv").is_some())
        && common::need("a Go toolchain (go)", common::on_path("go").is_some())
}

#[tokio::test(flavor = "multi_thread")]
async fn delve_builds_stops_inspects_steps_and_runs_to_the_end() {
    if !delve() {
        return;
    }
    let (dir, run) = project(&fixture("go"), json!({}));
    let before = common::snapshot(dir.path());
    debug(
        &run,
        json!({"op": "breakpoints", "file": "main.go", "lines": [19]}),
    )
    .await;
    let stop = debug(
        &run,
        json!({"op": "launch", "program": ".", "wait_ms": WAIT}),
    )
    .await;
    assert!(stop.contains("launched . under delve"), "{stop}");
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    assert!(stop.contains("at main.go:19 in main.main"), "{stop}");
    assert!(stop.contains("19 | \tresult := compute(6, 7)"), "{stop}");
    let items = number_after(
        &stop[stop.find("items =").expect("items in the locals")..],
        "[reference ",
    );
    let children = debug(&run, json!({"op": "variables", "reference": items})).await;
    // delve itself loads 64 elements of a slice (its DAP load limit).
    assert!(children.contains("1–50 of 64"), "{children}");
    assert!(
        children.contains(&format!("`variables` with reference {items} and offset 50")),
        "{children}"
    );

    let into = debug(&run, json!({"op": "step_in", "wait_ms": WAIT})).await;
    assert!(
        into.contains("at main.go:9 in main.compute")
            || into.contains("at main.go:10 in main.compute"),
        "{into}"
    );
    let over = debug(&run, json!({"op": "step_over", "wait_ms": WAIT})).await;
    assert!(
        over.contains("at main.go:10 in main.compute")
            || over.contains("at main.go:11 in main.compute"),
        "{over}"
    );
    let stack = debug(&run, json!({"op": "stack"})).await;
    let main_line = stack
        .lines()
        .find(|l| l.contains("main.main at main.go"))
        .unwrap_or_else(|| panic!("{stack}"));
    let main_frame = number_after(main_line, "frame ");
    let value = debug(
        &run,
        json!({"op": "evaluate", "expression": "items[69] + 1", "frame_id": main_frame}),
    )
    .await;
    assert!(value.contains("items[69] + 1 = 70"), "{value}");
    let out = debug(&run, json!({"op": "step_out", "wait_ms": WAIT})).await;
    assert!(out.contains("in main.main"), "{out}");
    let end = debug(&run, json!({"op": "continue", "wait_ms": WAIT})).await;
    assert!(
        end.contains("the program ended") || end.contains("exited with code 0"),
        "{end}"
    );
    assert!(end.contains("result=43"), "the output is captured: {end}");
    run.shutdown().await;
    assert_eq!(
        before,
        common::snapshot(dir.path()),
        "the workspace is as it was"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn delve_stops_on_a_panic_with_its_message() {
    if !delve() {
        return;
    }
    let (_dir, run) = project(&fixture("go"), json!({}));
    let stop = debug(
        &run,
        json!({"op": "launch", "program": ".", "args": ["--crash"], "wait_ms": WAIT}),
    )
    .await;
    assert!(
        stop.contains("stopped: exception") || stop.contains("stopped: panic"),
        "{stop}"
    );
    assert!(stop.contains("bad input: 42"), "{stop}");
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn delve_still_running_then_paused() {
    if !delve() {
        return;
    }
    let (_dir, run) = project(&fixture("go"), json!({}));
    let running = debug(
        &run,
        json!({"op": "launch", "program": ".", "args": ["--forever"], "wait_ms": 1000}),
    )
    .await;
    assert!(running.contains("still running after 1.0 s"), "{running}");
    let paused = debug(&run, json!({"op": "pause", "wait_ms": WAIT})).await;
    assert!(paused.contains("stopped: pause"), "{paused}");
    let processes = common::session_processes(&run);
    debug(&run, json!({"op": "terminate"})).await;
    let left: Vec<i32> = processes
        .into_iter()
        .filter(|&pid| common::alive(pid))
        .collect();
    assert!(left.is_empty(), "processes left after terminate: {left:?}");
}
