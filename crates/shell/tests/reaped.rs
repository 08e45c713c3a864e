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

use gantry_core::testing::{Gate, parent_of, process_running, unique_sleep};
use gantry_core::{CallErrorKind, CallOptions, CancellationToken, Run, Workspace};
use harness::{ends, fifo, pidfd};
use serde_json::json;

const BOUND: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    gantry_process::reaper::run_if_invoked();
    gantry_process::reaper::use_current_exe();
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--helper") {
        sigkilled_gantry_helper(Path::new(&args[2]), &args[3], &args[4]);
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

/// The pid, as the test sees it, of the process run as `command` (a
/// [`unique_sleep`]), once it runs, and a pidfd of it, opened while it
/// runs so that no later process with its pid is mistaken for it: a
/// command's `$$` and `$!` are pids of its own PID namespace.
async fn watch(command: &str) -> (i32, tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>) {
    let pid = process_running(command, BOUND)
        .await
        .unwrap_or_else(|| panic!("`{command}` never ran"));
    (pid, pidfd(pid).expect("running"))
}

/// Gone and reaped: no `/proc` entry, not even a zombie.
fn gone(pid: i32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

async fn a_setsid_child_dies_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let sleep = unique_sleep(15);
    let started = Instant::now();
    let (outcome, (escapee, watched)) = tokio::join!(
        run.call(
            "shell",
            json!({"command": format!("setsid {sleep} & echo started; sleep 100"), "timeout": 2}),
        ),
        watch(&sleep)
    );
    let err = outcome.unwrap_err();
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
    assert!(
        ends(&watched, BOUND).await && gone(escapee),
        "the setsid child {escapee} outlived the timeout"
    );
}

async fn the_exit_code_is_kept_when_a_setsid_child_holds_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let sleep = unique_sleep(6);
    // The command goes on once the test watches its setsid child.
    let mut seen = Gate::at(&dir.path().join("seen.fifo"));
    let started = Instant::now();
    let call = run.call(
        "shell",
        json!({"command": format!("setsid {sleep} & read -r _ < seen.fifo; echo hi; exit 3"), "timeout": 2}),
    );
    let watcher = async {
        let watched = watch(&sleep).await;
        seen.open();
        watched
    };
    let (result, (escapee, watched)) = tokio::join!(call, watcher);
    let result = result.unwrap();
    let took = started.elapsed();
    let text = result.text_content();
    assert!(text.contains("hi\n"), "{text}");
    assert!(text.contains("[exit code 3"), "{text}");
    // At the command's exit, not when the setsid sleep ends (6 s).
    assert!(took < Duration::from_secs(5), "returned after {took:?}");
    assert!(
        ends(&watched, BOUND).await && gone(escapee),
        "the setsid child {escapee} outlived its command"
    );
}

/// The helper of [`a_sigkilled_gantry_takes_its_background_jobs_along`]:
/// a "Gantry" that starts a background job (a setsid child and a
/// background child, `sleep`s named by the two arguments after `dir`),
/// says so through the FIFO, and waits to be SIGKILLed.
fn sigkilled_gantry_helper(dir: &Path, setsid: &str, child: &str) -> ! {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let run = run_in(dir);
        run.call(
            "shell",
            json!({
                "command": format!("setsid {setsid} & {child} & echo started > tree.fifo; wait"),
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
    let (setsid, child) = (unique_sleep(100), unique_sleep(100));
    let mut gantry = tokio::process::Command::new(std::env::current_exe().unwrap())
        .arg("--helper")
        .arg(dir.path())
        .arg(&setsid)
        .arg(&child)
        .stdin(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let started = tokio::time::timeout(BOUND, tree.next_line()).await;
    assert!(
        matches!(started, Ok(Ok(Some(ref line))) if line == "started"),
        "the job did not start: {started:?}"
    );
    let (setsid, setsid_fd) = watch(&setsid).await;
    let (child, child_fd) = watch(&child).await;
    // The job, and between it and Gantry its namespace's init and its
    // reaper: every process up to Gantry.
    let gantry_pid = gantry.id().unwrap() as i32;
    let mut tree = vec![setsid, child];
    let mut watched = vec![setsid_fd, child_fd];
    let mut above = parent_of(child).expect("running");
    while above != gantry_pid {
        assert!(tree.len() < 8, "no Gantry above the job: {tree:?}");
        tree.push(above);
        watched.push(pidfd(above).expect("running"));
        above = parent_of(above).expect("running");
    }
    assert!(
        tree.len() >= 4,
        "the job runs under a reaper (setsid child, child, job, ...: {tree:?})"
    );
    gantry.start_kill().unwrap();
    gantry.wait().await.unwrap();
    for (pid, fd) in tree.iter().zip(&watched) {
        assert!(
            ends(fd, BOUND).await,
            "{pid} outlived the SIGKILLed Gantry (setsid child, child, job, init, reaper: {tree:?})"
        );
    }
}

async fn cancellation_and_the_end_of_the_run_reach_setsid_children() {
    let dir = tempfile::tempdir().unwrap();
    let started = |sleep: &str| format!("setsid {sleep} & wait");

    let run = run_in(dir.path());
    let cancel = CancellationToken::new();
    let sleep = unique_sleep(100);
    let call = run.call_with(
        "shell",
        json!({ "command": started(&sleep) }),
        CallOptions {
            cancel: cancel.clone(),
            ..Default::default()
        },
    );
    let canceller = async {
        let (_, watched) = watch(&sleep).await;
        cancel.cancel();
        watched
    };
    let (outcome, escapee) = tokio::join!(call, canceller);
    assert_eq!(outcome.unwrap_err().kind, CallErrorKind::Cancelled);
    assert!(ends(&escapee, BOUND).await, "outlived the cancellation");

    let background = |sleep: &str| json!({ "command": started(sleep), "is_background": true });
    let sleep = unique_sleep(100);
    run.call("shell", background(&sleep)).await.unwrap();
    let (_, escapee) = watch(&sleep).await;
    run.shutdown().await;
    assert!(ends(&escapee, BOUND).await, "outlived the run's shutdown");

    let run = run_in(dir.path());
    let sleep = unique_sleep(100);
    run.call("shell", background(&sleep)).await.unwrap();
    let (_, escapee) = watch(&sleep).await;
    drop(run);
    assert!(ends(&escapee, BOUND).await, "outlived the run, dropped");
}
