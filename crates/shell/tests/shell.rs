//! `shell` through the real pipeline, with real bash processes.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::time::Duration;

use gantry_core::testing::{Gate, process_running, refuses, unique_sleep};
use gantry_core::{CallErrorKind, CallOptions, CancellationToken, Run, Workspace};
use serde_json::json;

fn run_in(dir: &Path) -> Run {
    gantry_shell::register(Run::builder(Workspace::new(dir).unwrap())).build()
}

/// Waits, with a bound, for a process that is not ours to reap to exit.
async fn gone(pid: i32) -> bool {
    gantry_core::testing::exited(pid, Duration::from_secs(5)).await
}

/// The pid, as the test sees it, of the process run as `command` (a
/// [`unique_sleep`]), once it runs: a command's `$$` and `$!` are pids of
/// its own PID namespace, meaningless here.
async fn running(command: &str) -> i32 {
    process_running(command, Duration::from_secs(10))
        .await
        .unwrap_or_else(|| panic!("`{command}` never ran"))
}

#[tokio::test]
async fn runs_in_workspace_and_reports_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let run = run_in(dir.path());
    let ok = run
        .call(
            "shell",
            json!({"command": "pwd; echo err >&2", "directory": "sub"}),
        )
        .await
        .unwrap();
    let text = ok.text_content();
    assert!(
        text.contains(&format!(
            "{}/sub",
            dir.path().canonicalize().unwrap().display()
        )),
        "{text}"
    );
    assert!(text.contains("err"), "stderr is captured: {text}");
    assert!(text.contains("[exit code 0"), "{text}");
    let failed = run
        .call("shell", json!({"command": "exit 3"}))
        .await
        .unwrap();
    assert!(failed.text_content().contains("[exit code 3"));
    let killed = run
        .call("shell", json!({"command": "kill -SEGV $$"}))
        .await
        .unwrap();
    assert!(
        killed
            .text_content()
            .contains("killed by signal 11 (SIGSEGV)"),
        "{}",
        killed.text_content()
    );
    // stdin is closed: cat must not wait for input.
    let cat = tokio::time::timeout(
        Duration::from_secs(10),
        run.call("shell", json!({"command": "cat"})),
    )
    .await;
    assert!(
        cat.expect("cat waited on stdin")
            .unwrap()
            .text_content()
            .contains("(no output)")
    );
}

#[tokio::test]
async fn long_output_is_capped_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let result = run
        .call("shell", json!({"command": "seq 1 200000"}))
        .await
        .unwrap();
    let text = result.text_content();
    assert!(
        text.starts_with("$ seq 1 200000\n1\n2\n"),
        "{}",
        &text[..40]
    );
    assert!(text.contains("bytes of output cut"));
    assert!(text.contains("\n200000\n"), "the tail is kept");
    assert!(text.len() < 40_000);
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let sleep = unique_sleep(300);
    let (outcome, pid) = tokio::join!(
        run.call(
            "shell",
            json!({"command": format!("{sleep} & echo started; wait"), "timeout": 2}),
        ),
        running(&sleep)
    );
    let err = outcome.unwrap_err();
    assert_eq!(err.kind, CallErrorKind::Failed);
    assert!(
        err.message.contains("timed out after 2 s"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("started"),
        "partial output kept: {}",
        err.message
    );
    assert!(gone(pid).await, "grandchild {pid} outlived the timeout");
}

#[tokio::test]
async fn finished_command_leaves_no_grandchild() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let sleep = unique_sleep(300);
    // The command ends once the test has seen its grandchild.
    let mut seen = Gate::at(&dir.path().join("seen.fifo"));
    let call = run.call(
        "shell",
        json!({"command": format!("{sleep} & read -r _ < seen.fifo; echo done")}),
    );
    let watcher = async {
        let pid = running(&sleep).await;
        seen.open();
        pid
    };
    let (result, pid) = tokio::join!(call, watcher);
    let text = result.unwrap().text_content();
    assert!(
        text.contains("done\n") && text.contains("[exit code 0"),
        "{text}"
    );
    assert!(
        gone(pid).await,
        "a background grandchild outlived its command"
    );
}

#[tokio::test]
async fn cancellation_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let cancel = CancellationToken::new();
    let sleep = unique_sleep(300);
    let call = run.call_with(
        "shell",
        json!({"command": format!("{sleep} & wait")}),
        CallOptions {
            cancel: cancel.clone(),
            ..Default::default()
        },
    );
    let canceller = async {
        let pid = running(&sleep).await;
        cancel.cancel();
        pid
    };
    let (outcome, pid) = tokio::join!(call, canceller);
    assert_eq!(outcome.unwrap_err().kind, CallErrorKind::Cancelled);
    assert!(
        gone(pid).await,
        "grandchild {pid} outlived the cancellation"
    );
}

#[tokio::test]
async fn background_jobs_report_new_output_stop_and_end_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let started = run
        .call("shell", json!({"command": "echo one; while [ ! -e go ]; do sleep 0.05; done; echo two", "is_background": true}))
        .await
        .unwrap();
    assert!(
        started
            .text_content()
            .starts_with("Started in the background as bg_1")
    );
    std::fs::write(dir.path().join("go"), "").unwrap();
    let mut seen = String::new();
    for _ in 0..500 {
        let poll = run
            .call("shell", json!({"handle": "bg_1"}))
            .await
            .unwrap()
            .text_content();
        seen.push_str(&poll);
        if poll.contains("exit code 0") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        seen.contains("one") && seen.contains("two") && seen.contains("exit code 0"),
        "{seen}"
    );
    let again = run
        .call("shell", json!({"handle": "bg_1"}))
        .await
        .unwrap()
        .text_content();
    assert!(
        again.contains("(no new output)"),
        "output is reported once: {again}"
    );

    let sleep = unique_sleep(300);
    let long = run
        .call(
            "shell",
            json!({"command": format!("echo started; {sleep}; echo never"), "is_background": true}),
        )
        .await
        .unwrap();
    assert!(long.text_content().contains("bg_2"));
    let leader = running(&sleep).await;
    let stopped = run
        .call("shell", json!({"handle": "bg_2", "kill": true}))
        .await
        .unwrap()
        .text_content();
    assert!(stopped.contains("killed by signal 9"), "{stopped}");
    assert!(gone(leader).await, "the job's {leader} outlived its kill");

    let sleep = unique_sleep(300);
    run.call(
        "shell",
        json!({"command": format!("{sleep}; echo never"), "is_background": true}),
    )
    .await
    .unwrap();
    let last = running(&sleep).await;
    run.shutdown().await;
    assert!(gone(last).await, "a background job outlived the run");
}

#[tokio::test]
async fn bad_input_is_refused_with_the_parameter_named() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let cases = [
        (json!({}), "command: missing"),
        (json!({"command": "ls", "handle": "bg_1"}), "not both"),
        (json!({"command": "  "}), "command: expected a non-empty"),
        (
            json!({"command": "ls", "kill": true}),
            "kill: only applies together with `handle`",
        ),
        (
            json!({"handle": "bg_1", "timeout": 5}),
            "timeout: does not apply",
        ),
        (
            json!({"command": "ls", "timeout": 0}),
            "timeout: expected integer between 1 and 600, got 0",
        ),
        (
            json!({"command": "ls", "timeout": 601}),
            "timeout: expected integer between 1 and 600, got 601",
        ),
    ];
    refuses(&run, "shell", cases).await;
    let err = run
        .call("shell", json!({"command": "ls", "directory": "../"}))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("outside the workspace"),
        "{}",
        err.message
    );
    let err = run
        .call("shell", json!({"handle": "bg_9"}))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("no background job `bg_9`"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn a_hundred_megabytes_of_output_is_capped_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let result = run
        .call(
            "shell",
            json!({"command": "head -c 100000000 /dev/zero | tr '\\0' a; echo; echo END"}),
        )
        .await
        .unwrap();
    let text = result.text_content();
    assert!(text.len() < 40_000, "{} bytes came back", text.len());
    assert!(text.contains("bytes of output cut"));
    assert!(text.contains("END"), "the tail is kept");
    // What was kept is the head and the tail, not the whole stream.
    let cut: u64 = text
        .split("[... ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(cut > 99_000_000, "cut {cut}");
}

#[tokio::test]
async fn a_description_labels_the_call_for_the_person() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let result = run
        .call(
            "shell",
            json!({"command": "echo labelled", "description": "Say that it is labelled"}),
        )
        .await
        .unwrap();
    let text = result.text_content();
    assert!(text.contains("labelled"), "{text}");
    assert!(!text.contains("ignored"), "a known parameter: {text}");
    let shown = result.return_display.to_text();
    assert!(
        shown.starts_with("**Say that it is labelled**\n$ echo labelled"),
        "{shown}"
    );
}
