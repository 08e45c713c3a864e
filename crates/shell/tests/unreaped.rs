//! `shell` without a reaper (none found, or `GANTRY_REAPER=off`): only
//! the command's process group is reached, and the tool says no more than
//! that. A setsid child survives and holds the output pipe; the call still
//! returns in time, with the command's own exit code, saying the rest of
//! the output was not read. The sandbox confines the command all the same.

mod harness;

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use gantry_core::{CallErrorKind, Run, Workspace};
use serde_json::json;

fn main() -> ExitCode {
    gantry_process::reaper::disable();
    assert_eq!(
        gantry_process::reaper::reach(),
        gantry_process::Reach::Group
    );
    harness::run(&[
        (
            "a_timeout_returns_in_time_and_claims_only_the_group",
            || Box::pin(a_timeout_returns_in_time_and_claims_only_the_group()),
        ),
        ("the_exit_code_is_kept_and_unread_output_is_said", || {
            Box::pin(the_exit_code_is_kept_and_unread_output_is_said())
        }),
        ("the_sandbox_confines_without_a_reaper", || {
            Box::pin(the_sandbox_confines_without_a_reaper())
        }),
    ])
}

fn run_in(dir: &Path) -> Run {
    gantry_shell::register(Run::builder(Workspace::new(dir).unwrap())).build()
}

/// Kills the setsid child the test left running (it was never ours to
/// reach through the tool), after checking that it still runs.
fn escapee_survived(dir: &Path) {
    let pid: i32 = std::fs::read_to_string(dir.join("escapee.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill takes a pid and a signal; the pid is our grandchild's,
    // alive (it sleeps for seconds more) since nothing reaped it.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0, "{pid} died");
}

async fn a_timeout_returns_in_time_and_claims_only_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let started = Instant::now();
    let err = run
        .call(
            "shell",
            json!({"command": "setsid sleep 15 & echo $! > escapee.pid; sleep 100", "timeout": 2}),
        )
        .await
        .unwrap_err();
    let took = started.elapsed();
    // At the timeout, not when the setsid sleep ends (15 s).
    assert!(took < Duration::from_secs(10), "returned after {took:?}");
    assert_eq!(err.kind, CallErrorKind::Failed);
    assert!(
        err.message
            .contains("it and every process in its process group were killed (no reaper"),
        "{}",
        err.message
    );
    assert!(
        !err.message.contains("every process it started"),
        "{}",
        err.message
    );
    escapee_survived(dir.path());
}

async fn the_exit_code_is_kept_and_unread_output_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let started = Instant::now();
    let result = run
        .call(
            "shell",
            json!({"command": "setsid sleep 6 & echo $! > escapee.pid; sleep 0.5; echo hi; exit 3", "timeout": 2}),
        )
        .await
        .unwrap();
    let took = started.elapsed();
    let text = result.text_content();
    assert!(text.contains("hi\n"), "{text}");
    assert!(text.contains("[exit code 3"), "{text}");
    assert!(
        text.contains("[output after exit not read: a background process still held it]"),
        "{text}"
    );
    // At the command's exit, not when the setsid sleep ends (6 s).
    assert!(took < Duration::from_secs(5), "returned after {took:?}");
    escapee_survived(dir.path());
}

/// Spawned directly, the command itself gets the rules between fork and
/// exec: a write outside fails and is explained.
async fn the_sandbox_confines_without_a_reaper() {
    if gantry_core::testing::skip_requested(
        "GANTRY_SKIP_SANDBOX",
        "the test, which needs Landlock ABI 4",
    ) {
        return;
    }
    let workspace = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let outside = gantry_core::testing::outside_the_writable_defaults();
    let target = outside.path().join("escaped");
    let run = run_in(workspace.path());
    let result = run
        .call(
            "shell",
            json!({"command": format!("touch {} && echo inside > inside.txt", target.display())}),
        )
        .await
        .unwrap();
    let text = result.text_content();
    assert!(
        text.contains("The sandbox probably refused writing"),
        "{text}"
    );
    assert!(!target.exists(), "{text}");
    let result = run
        .call("shell", json!({"command": "echo inside > inside.txt"}))
        .await
        .unwrap();
    assert!(result.text_content().contains("[exit code 0"));
    assert!(workspace.path().join("inside.txt").exists());
}
