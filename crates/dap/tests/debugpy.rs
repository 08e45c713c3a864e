//! `debug` against the real debugpy adapter, on a small Python program
//! (tests/fixtures/python, copied to a temp workspace).

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::time::Duration;

use common::{debug, debugpy, fixture, number_after, project, session_processes, snapshot};
use serde_json::json;

const WAIT: u64 = 30_000;

#[tokio::test(flavor = "multi_thread")]
async fn launch_stops_at_a_breakpoint_then_inspects_steps_and_runs_to_the_end() {
    if !debugpy() {
        return;
    }
    let (dir, run) = project(&fixture("python"), json!({}));
    let before = snapshot(dir.path());

    let set = debug(
        &run,
        json!({"op": "breakpoints", "file": "app.py", "lines": [13]}),
    )
    .await;
    assert!(set.contains("placed when the program is launched"), "{set}");
    let stop = debug(
        &run,
        json!({"op": "launch", "program": "app.py", "wait_ms": WAIT}),
    )
    .await;
    assert!(stop.contains("line 13: verified"), "{stop}");
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    assert!(stop.contains("at app.py:13 in main"), "{stop}");
    assert!(stop.contains("13 |     result = compute(6, 7)"), "{stop}");
    assert!(
        stop.contains("items = [0, 1, 2"),
        "the locals come with the stop: {stop}"
    );
    let status = debug(&run, json!({"op": "status"})).await;
    assert!(
        status.contains("debugpy session (launched), stopped (breakpoint)"),
        "{status}"
    );

    // Values are cut at 400 characters, saying how long they were.
    assert!(stop.contains("cut at 400 of 1002 characters"), "{stop}");
    // A list of 70 is capped at 50 children, with the way to the rest.
    let items = number_after(&stop[stop.find("items =").unwrap()..], "[reference ");
    let children = debug(&run, json!({"op": "variables", "reference": items})).await;
    assert!(children.contains("of 7"), "{children}");
    assert!(
        children.contains(&format!("`variables` with reference {items} and offset 50")),
        "{children}"
    );
    let rest = debug(
        &run,
        json!({"op": "variables", "reference": items, "offset": 50}),
    )
    .await;
    assert!(rest.contains("69 = 69"), "{rest}");

    let into = debug(&run, json!({"op": "step_in", "wait_ms": WAIT})).await;
    assert!(
        into.contains("stopped: step") && into.contains("at app.py:6 in compute"),
        "{into}"
    );
    assert!(into.contains("a = 6") && into.contains("b = 7"), "{into}");
    let over = debug(&run, json!({"op": "step_over", "wait_ms": WAIT})).await;
    assert!(
        over.contains("at app.py:7 in compute") && over.contains("total = 42"),
        "{over}"
    );

    // The stack, and evaluation in the caller's frame by its id.
    let stack = debug(&run, json!({"op": "stack"})).await;
    assert!(stack.contains("compute at app.py:7"), "{stack}");
    let line_of = |name: &str| {
        stack
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name}: {stack}"))
    };
    let main_frame = number_after(line_of("main at app.py"), "frame ");
    let in_main = debug(
        &run,
        json!({"op": "evaluate", "expression": "len(items) + 1", "frame_id": main_frame}),
    )
    .await;
    assert!(in_main.contains("len(items) + 1 = 71"), "{in_main}");
    let in_top = debug(&run, json!({"op": "evaluate", "expression": "total * 2"})).await;
    assert!(in_top.contains("= 84"), "{in_top}");
    let wrong = debug(&run, json!({"op": "evaluate", "expression": "items", "frame_id": number_after(line_of("compute at"), "frame ")})).await;
    assert!(
        wrong.contains("ERROR") && wrong.contains("items"),
        "items is not in compute's frame: {wrong}"
    );
    let scopes = debug(&run, json!({"op": "scopes", "frame_id": main_frame})).await;
    assert!(scopes.contains("Locals: reference"), "{scopes}");

    let out = debug(&run, json!({"op": "step_out", "wait_ms": WAIT})).await;
    assert!(out.contains("in main") && out.contains("app.py:1"), "{out}");

    let end = debug(&run, json!({"op": "continue", "wait_ms": WAIT})).await;
    assert!(end.contains("exited with code 0"), "{end}");
    assert!(end.contains("result=43"), "the output is captured: {end}");
    let output = debug(&run, json!({"op": "output"})).await;
    assert!(output.contains("result=43"), "{output}");
    let after_end = debug(&run, json!({"op": "stack"})).await;
    assert!(
        after_end.contains("ERROR") && after_end.contains("`launch`"),
        "{after_end}"
    );

    run.shutdown().await;
    assert_eq!(before, snapshot(dir.path()), "the workspace is as it was");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_uncaught_exception_stops_with_its_message() {
    if !debugpy() {
        return;
    }
    let (_dir, run) = project(&fixture("python"), json!({}));
    let stop = debug(
        &run,
        json!({"op": "launch", "program": "app.py", "args": ["--crash"], "wait_ms": WAIT}),
    )
    .await;
    assert!(stop.contains("no breakpoints set"), "{stop}");
    assert!(stop.contains("stopped: exception"), "{stop}");
    assert!(stop.contains("bad input: 42"), "{stop}");
    assert!(stop.contains("app.py:16"), "{stop}");
    // The session is the run's: ending the run ends every process of it.
    let processes = session_processes(&run);
    run.shutdown().await;
    let left: Vec<i32> = processes
        .into_iter()
        .filter(|&pid| common::alive(pid))
        .collect();
    assert!(
        left.is_empty(),
        "processes left after the run ended: {left:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_that_never_stops_is_still_running_then_paused_and_terminated() {
    if !debugpy() {
        return;
    }
    let (_dir, run) = project(&fixture("python"), json!({}));
    let started = std::time::Instant::now();
    let running = debug(
        &run,
        json!({"op": "launch", "program": "app.py", "args": ["--forever"], "wait_ms": 1500}),
    )
    .await;
    assert!(running.contains("still running after 1.5 s"), "{running}");
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "bounded by wait_ms past the start"
    );
    let stack = debug(&run, json!({"op": "stack"})).await;
    assert!(
        stack.contains("ERROR") && stack.contains("`pause`"),
        "{stack}"
    );
    let again = debug(&run, json!({"op": "continue", "wait_ms": 300})).await;
    assert!(again.contains("still running after 0.3 s"), "{again}");

    let second = debug(&run, json!({"op": "launch", "program": "app.py"})).await;
    assert!(
        second.contains("ERROR") && second.contains("already live (debugpy, running)"),
        "{second}"
    );

    // Once it printed, it is in its endless loop (on a loaded machine it
    // may still be starting after the wait above).
    let mut printed = false;
    for _ in 0..300 {
        if debug(&run, json!({"op": "output"}))
            .await
            .contains("result=43")
        {
            printed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(printed, "the output of a running program is readable");
    let paused = debug(&run, json!({"op": "pause", "wait_ms": WAIT})).await;
    let threads = debug(&run, json!({"op": "threads"})).await;
    assert!(threads.contains("MainThread"), "{threads}");
    let stack = debug(&run, json!({"op": "stack"})).await;
    assert!(stack.contains("main at app.py:"), "{stack}");
    assert!(paused.contains("stopped: pause"), "{paused}");
    let again = debug(&run, json!({"op": "pause"})).await;
    assert!(again.starts_with("already stopped"), "{again}");
    let beats = debug(&run, json!({"op": "evaluate", "expression": "beats > 0"})).await;
    assert!(beats.ends_with("= True (bool)"), "{beats}");

    let processes = session_processes(&run);
    assert!(
        processes.len() >= 2,
        "the adapter and the program: {processes:?}"
    );
    let ended = debug(&run, json!({"op": "terminate"})).await;
    assert!(ended.contains("session ended"), "{ended}");
    let left: Vec<i32> = processes
        .into_iter()
        .filter(|&pid| common::alive(pid))
        .collect();
    assert!(left.is_empty(), "processes left after terminate: {left:?}");
    let status = debug(&run, json!({"op": "status"})).await;
    assert!(
        status.contains("no live session: the debug session ended: ended by `terminate`"),
        "{status}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_time_limit_tears_everything_down() {
    if !debugpy() {
        return;
    }
    let (_dir, run) = project(&fixture("python"), json!({"ttlSeconds": 4}));
    let running = debug(
        &run,
        json!({"op": "launch", "program": "app.py", "args": ["--forever"], "wait_ms": 500}),
    )
    .await;
    assert!(running.contains("still running"), "{running}");
    let processes = session_processes(&run);
    let gone = common::within(Duration::from_secs(30), || {
        processes.iter().all(|&p| !common::alive(p))
    })
    .await;
    assert!(gone, "processes left after the time limit: {processes:?}");
    let status = debug(&run, json!({"op": "status"})).await;
    assert!(status.contains("time limit of 4 s was reached"), "{status}");
    assert!(
        status.contains("[run notice] debug: the session ended"),
        "the model hears of it: {status}"
    );
    let stack = debug(&run, json!({"op": "stack"})).await;
    assert!(
        stack.contains("time limit") && stack.contains("`launch`"),
        "{stack}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn breakpoints_report_what_the_adapter_says() {
    if !debugpy() {
        return;
    }
    let (_dir, run) = project(&fixture("python"), json!({}));
    debug(
        &run,
        json!({"op": "breakpoints", "file": "app.py", "lines": [6]}),
    )
    .await;
    let stop = debug(
        &run,
        json!({"op": "launch", "program": "app.py", "wait_ms": WAIT}),
    )
    .await;
    assert!(stop.contains("at app.py:6 in compute"), "{stop}");
    // While a session lives, breakpoints are placed at once and verified.
    let set = debug(
        &run,
        json!({"op": "breakpoints", "file": "app.py", "lines": [14, 8]}),
    )
    .await;
    assert!(set.contains("line 14: verified"), "{set}");
    // debugpy moves a breakpoint on a blank line to the line before.
    assert!(set.contains("line 8: verified (moved to line 7)"), "{set}");
    let next = debug(&run, json!({"op": "continue", "wait_ms": WAIT})).await;
    assert!(next.contains("at app.py:7 in compute"), "{next}");
    let next = debug(&run, json!({"op": "continue", "wait_ms": WAIT})).await;
    assert!(next.contains("at app.py:14 in main"), "{next}");
    let cleared = debug(
        &run,
        json!({"op": "breakpoints", "file": "app.py", "lines": []}),
    )
    .await;
    assert!(cleared.contains("cleared"), "{cleared}");
    let status = debug(&run, json!({"op": "status"})).await;
    assert!(status.contains("no breakpoints"), "{status}");
    let end = debug(&run, json!({"op": "continue", "wait_ms": WAIT})).await;
    assert!(end.contains("exited with code 0"), "{end}");
    // A session whose program exited is over: the next launch starts afresh.
    let again = debug(
        &run,
        json!({"op": "launch", "program": "app.py", "wait_ms": WAIT}),
    )
    .await;
    assert!(again.contains("exited with code 0"), "{again}");
    let output = debug(&run, json!({"op": "output"})).await;
    assert!(output.contains("result=43"), "{output}");
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn attaches_to_a_running_debugpy_process_and_leaves_it_running() {
    if !debugpy() {
        return;
    }
    let (dir, run) = project(&fixture("python"), json!({}));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // A program the user started on the host's network: one started by a
    // `shell` command listens in that command's own network instead.
    let on_the_host = gantry_process::Sandbox::new(
        gantry_process::sandbox::Policy {
            network: gantry_process::network::Network::Allow,
            ..Default::default()
        },
        &[],
    );
    let debuggee = gantry_process::Command::new("python3", &on_the_host)
        .args([
            "-m",
            "debugpy",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--wait-for-client",
        ])
        .args(["app.py", "--forever"])
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    debug(
        &run,
        json!({"op": "breakpoints", "file": "app.py", "lines": [20]}),
    )
    .await;
    // The debuggee listens once debugpy has started in it.
    let mut attached = String::new();
    for _ in 0..100 {
        attached = debug(&run, json!({"op": "attach", "port": port})).await;
        if !attached.contains("ERROR") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        attached.starts_with(&format!("attached to 127.0.0.1:{port} under debugpy")),
        "{attached}"
    );
    assert!(attached.contains("line 20: verified"), "{attached}");
    let stop = if attached.contains("stopped: breakpoint") {
        attached
    } else {
        debug(&run, json!({"op": "continue", "wait_ms": WAIT})).await
    };
    assert!(stop.contains("at app.py:20 in main"), "{stop}");
    assert!(stop.contains("beats = "), "{stop}");
    let status = debug(&run, json!({"op": "status"})).await;
    assert!(status.contains("debugpy session (attached)"), "{status}");
    let ended = debug(&run, json!({"op": "terminate"})).await;
    assert!(ended.contains("session ended"), "{ended}");
    assert!(
        common::alive(debuggee.pid() as i32),
        "a process Gantry attached to, not started, keeps running"
    );
    drop(debuggee);
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_project_interpreter_runs_the_program() {
    if !debugpy() {
        return;
    }
    let (dir, run) = project(&fixture("python"), json!({}));
    let real = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let real = String::from_utf8(real.stdout).unwrap();
    std::fs::create_dir_all(dir.path().join(".venv/bin")).unwrap();
    std::os::unix::fs::symlink(real.trim(), dir.path().join(".venv/bin/python3")).unwrap();
    debug(
        &run,
        json!({"op": "breakpoints", "file": "app.py", "lines": [6]}),
    )
    .await;
    let stop = debug(
        &run,
        json!({"op": "launch", "program": "app.py", "wait_ms": WAIT}),
    )
    .await;
    assert!(stop.contains("stopped: breakpoint"), "{stop}");
    let interpreter = debug(
        &run,
        json!({"op": "evaluate", "expression": "__import__('sys').executable"}),
    )
    .await;
    assert!(interpreter.contains(".venv/bin/python3"), "{interpreter}");
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_marker_or_adapter_is_explained() {
    // No adapter starts here, so this runs whatever is installed.
    let files: Vec<(String, Vec<u8>)> = fixture("python")
        .into_iter()
        .filter(|(path, _)| path != "requirements.txt")
        .chain([("pubspec.yaml".to_string(), b"name: app\n".to_vec())])
        .collect();
    let (_dir, run) = project(&files, json!({}));
    let adapters = debug(&run, json!({"op": "adapters"})).await;
    let line = |name: &str| {
        adapters
            .lines()
            .find(|l| l.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("no {name} line: {adapters}"))
            .to_string()
    };
    assert!(
        line("debugpy").contains(
            "not usable here: no root marker (pyproject.toml, setup.py, requirements.txt) above the file inside the workspace"
        ),
        "{adapters}"
    );
    assert!(
        line("delve").contains("no root marker (go.mod)"),
        "{adapters}"
    );
    assert!(
        line("lldb").contains("no root marker (Cargo.toml, CMakeLists.txt)"),
        "{adapters}"
    );
    // dart: detection only (the Dart SDK is not installable here): the
    // marker is found, and the binary is said to be missing or usable as
    // PATH has it.
    let dart = line("dart");
    if common::on_path("dart").is_some() {
        assert!(dart.contains("usable (`dart debug_adapter`"), "{dart}");
    } else {
        assert!(
            dart.contains("not usable here: binary `dart` not found in"),
            "{dart}"
        );
        assert!(
            !dart.contains("root marker"),
            "pubspec.yaml is there: {dart}"
        );
        let refused = debug(
            &run,
            json!({"op": "launch", "program": "app.py", "adapter": "dart"}),
        )
        .await;
        assert!(
            refused.contains("ERROR: dart cannot start here: binary `dart` not found"),
            "{refused}"
        );
    }
    let refused = debug(&run, json!({"op": "launch", "program": "app.py"})).await;
    assert!(
        refused.contains("ERROR: debugpy cannot start here: no root marker"),
        "{refused}"
    );
    let status = debug(&run, json!({"op": "status"})).await;
    assert!(status.starts_with("no debug session"), "{status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn parameters_are_checked_with_their_names() {
    let (_dir, run) = project(&fixture("python"), json!({}));
    gantry_core::testing::refuses(
        &run,
        "debug",
        [
            (json!({"op": "launch"}), "program: required for launch"),
            (json!({"op": "breakpoints", "lines": [3]}), "file: required"),
            (
                json!({"op": "breakpoints", "file": "app.py"}),
                "lines: required",
            ),
            (
                json!({"op": "breakpoints", "file": "app.py", "lines": [0]}),
                "lines: line numbers are 1-based",
            ),
            (json!({"op": "attach"}), "port: required for attach"),
            (json!({"op": "attach", "port": 1, "pid": 2}), "port, pid"),
            (json!({"op": "variables"}), "reference: required"),
            (json!({"op": "evaluate"}), "expression: required"),
            (json!({"op": "continue", "wait_ms": 60001}), "wait_ms"),
            (json!({"op": "fly"}), "op"),
        ],
    )
    .await;
    let none = debug(&run, json!({"op": "stack"})).await;
    assert!(
        none.contains("no debug session: `launch` a program"),
        "{none}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crashed_adapter_is_reported_and_the_next_launch_starts_afresh() {
    if !debugpy() {
        return;
    }
    let (_dir, run) = project(&fixture("python"), json!({}));
    let running = debug(
        &run,
        json!({"op": "launch", "program": "app.py", "args": ["--forever"], "wait_ms": 500}),
    )
    .await;
    assert!(
        running.contains("still running") || running.contains("stopped"),
        "{running}"
    );
    let processes = session_processes(&run);
    let adapter = common::adapter_pid(&run);
    // SAFETY: kill(2) of the adapter this test's session started.
    unsafe { libc::kill(adapter, libc::SIGKILL) };
    let gone = common::within(Duration::from_secs(30), || {
        processes.iter().all(|&p| !common::alive(p))
    })
    .await;
    assert!(gone, "the adapter's processes die with it: {processes:?}");
    let said = debug(&run, json!({"op": "continue", "wait_ms": 1000})).await;
    assert!(
        said.contains("ERROR") && said.contains("the debug adapter stopped"),
        "{said}"
    );
    assert!(said.contains("`launch` to start a new session"), "{said}");
    debug(
        &run,
        json!({"op": "breakpoints", "file": "app.py", "lines": [6]}),
    )
    .await;
    let again = debug(
        &run,
        json!({"op": "launch", "program": "app.py", "wait_ms": WAIT}),
    )
    .await;
    assert!(again.contains("at app.py:6 in compute"), "{again}");
    run.shutdown().await;
}
