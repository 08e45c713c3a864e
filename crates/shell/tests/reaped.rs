//! `shell` with its commands under a reaper, as in the `gantry` binary:
//! this test binary is its own reaper (`use_current_exe`), and its own
//! helper process for the test that SIGKILLs "Gantry". A process that left
//! the command's group (`setsid`) dies at the timeout, with a cancellation,
//! with the end of the run and with Gantry itself; the command's exit code
//! is kept when such a process still holds its output.

mod harness;

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use gantry_core::{CallErrorKind, CallOptions, CancellationToken, Run, Workspace};
use harness::{ends, fifo, parent_of, pidfd, pids};
use serde_json::json;

const BOUND: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    gantry_process::reaper::run_if_invoked();
    gantry_process::reaper::use_current_exe();
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--helper") {
        sigkilled_gantry_helper(Path::new(&args[2]));
    }
    assert_eq!(
        gantry_process::reaper::reach(),
        gantry_process::Reach::Descendants
    );
    harness::run(&[
        ("a_setsid_child_dies_at_the_timeout", || {
            Box::pin(a_setsid_child_dies_at_the_timeout())
        }),
        (
            "the_exit_code_is_kept_when_a_setsid_child_holds_the_output",
            || Box::pin(the_exit_code_is_kept_when_a_setsid_child_holds_the_output()),
        ),
        ("a_sigkilled_gantry_takes_its_background_jobs_along", || {
            Box::pin(a_sigkilled_gantry_takes_its_background_jobs_along())
        }),
        (
            "cancellation_and_the_end_of_the_run_reach_setsid_children",
            || Box::pin(cancellation_and_the_end_of_the_run_reach_setsid_children()),
        ),
    ])
}

fn run_in(dir: &Path) -> Run {
    gantry_shell::register(Run::builder(Workspace::new(dir).unwrap())).build()
}

fn pid_in(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Gone and reaped: no `/proc` entry, not even a zombie.
fn gone(pid: i32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

async fn a_setsid_child_dies_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let started = Instant::now();
    let err = run
        .call(
            "shell",
            json!({"command": "setsid sleep 15 & echo $! > escapee.pid; echo started; sleep 100", "timeout": 2}),
        )
        .await
        .unwrap_err();
    let took = started.elapsed();
    // At the timeout, not when the setsid sleep ends (15 s), on however
    // loaded a machine.
    assert!(took < Duration::from_secs(10), "returned after {took:?}");
    assert_eq!(err.kind, CallErrorKind::Failed);
    assert!(
        err.message
            .contains("timed out after 2 s; it and every process it started were killed"),
        "{}",
        err.message
    );
    assert!(err.message.contains("started"), "{}", err.message);
    let escapee = pid_in(&dir.path().join("escapee.pid"));
    assert!(
        gone(escapee),
        "the setsid child {escapee} outlived the timeout"
    );
}

async fn the_exit_code_is_kept_when_a_setsid_child_holds_the_output() {
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
    // At the command's exit, not when the setsid sleep ends (6 s).
    assert!(took < Duration::from_secs(5), "returned after {took:?}");
    let escapee = pid_in(&dir.path().join("escapee.pid"));
    assert!(
        gone(escapee),
        "the setsid child {escapee} outlived its command"
    );
}

/// The helper of [`a_sigkilled_gantry_takes_its_background_jobs_along`]:
/// a "Gantry" that starts a background job (a setsid child, a background
/// child), tells its pids through the FIFO, and waits to be SIGKILLed.
fn sigkilled_gantry_helper(dir: &Path) -> ! {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let run = run_in(dir);
        run.call(
            "shell",
            json!({
                "command": "setsid sleep 100 & s=$!; sleep 100 & b=$!; echo \"$$ $s $b\" > tree.fifo; wait",
                "is_background": true
            }),
        )
        .await
        .unwrap();
        // Our stdin ends only when the test is done with us; it kills us first.
        let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut tokio::io::sink()).await;
        drop(run);
    });
    std::process::exit(0)
}

async fn a_sigkilled_gantry_takes_its_background_jobs_along() {
    let dir = tempfile::tempdir().unwrap();
    let mut tree = fifo(&dir.path().join("tree.fifo"));
    let mut gantry = tokio::process::Command::new(std::env::current_exe().unwrap())
        .arg("--helper")
        .arg(dir.path())
        .stdin(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut pids = pids(&mut tree, BOUND).await;
    let reaper = parent_of(pids[0]);
    assert_ne!(
        reaper as u32,
        gantry.id().unwrap(),
        "the job runs under a reaper"
    );
    pids.push(reaper);
    // Watched before the kill, so no pid can be reused unseen.
    let watched: Vec<_> = pids
        .iter()
        .map(|&pid| (pid, pidfd(pid).expect("running")))
        .collect();
    gantry.start_kill().unwrap();
    gantry.wait().await.unwrap();
    for (pid, fd) in &watched {
        assert!(
            ends(fd, BOUND).await,
            "{pid} outlived the SIGKILLed Gantry (job, setsid child, child, reaper: {pids:?})"
        );
    }
}

async fn cancellation_and_the_end_of_the_run_reach_setsid_children() {
    let dir = tempfile::tempdir().unwrap();
    let mut tree = fifo(&dir.path().join("tree.fifo"));
    let started = "setsid sleep 100 & echo $! > tree.fifo; wait";

    let run = run_in(dir.path());
    let cancel = CancellationToken::new();
    let call = run.call_with(
        "shell",
        json!({ "command": started }),
        CallOptions {
            cancel: cancel.clone(),
            ..Default::default()
        },
    );
    let canceller = async {
        let escapee = pids(&mut tree, BOUND).await[0];
        let watched = pidfd(escapee).expect("running");
        cancel.cancel();
        watched
    };
    let (outcome, escapee) = tokio::join!(call, canceller);
    assert_eq!(outcome.unwrap_err().kind, CallErrorKind::Cancelled);
    assert!(ends(&escapee, BOUND).await, "outlived the cancellation");

    let background = json!({ "command": started, "is_background": true });
    run.call("shell", background.clone()).await.unwrap();
    let escapee = pidfd(pids(&mut tree, BOUND).await[0]).expect("running");
    run.shutdown().await;
    assert!(ends(&escapee, BOUND).await, "outlived the run's shutdown");

    let run = run_in(dir.path());
    run.call("shell", background).await.unwrap();
    let escapee = pidfd(pids(&mut tree, BOUND).await[0]).expect("running");
    drop(run);
    assert!(ends(&escapee, BOUND).await, "outlived the run, dropped");
}
