//! Real children: groups killed whole, exits observed before the reap,
//! captures bounded. Every wait is on an event (a line on a pipe, a
//! pidfd), bounded, never a fixed sleep.

mod common;

use std::os::fd::OwnedFd;
use std::time::Duration;

use gantry_process::{Child, Command, Stderr, Stdout};
use rustix::process::{Pid, PidfdFlags, pidfd_open};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncBufReadExt, BufReader};

const BOUND: Duration = Duration::from_secs(10);

fn sh(script: &str) -> Command {
    let mut command = Command::new("sh", &common::unconfined());
    command.arg("-c").arg(script);
    command
}

/// A pidfd of `pid`, ours or not; `None` when it is gone already.
fn pidfd(pid: i32) -> Option<AsyncFd<OwnedFd>> {
    let fd = pidfd_open(Pid::from_raw(pid).unwrap(), PidfdFlags::empty()).ok()?;
    // SAFETY: the AsyncFd owns the fd, and an OwnedFd's raw fd never changes.
    Some(unsafe { AsyncFd::register(fd) }.unwrap())
}

/// Whether `pid` exits within `bound`, awaited on its pidfd.
async fn exits(pid: i32, bound: Duration) -> bool {
    match pidfd(pid) {
        None => true,
        Some(fd) => tokio::time::timeout(bound, fd.readable()).await.is_ok(),
    }
}

/// A field of `/proc/PID/stat` after the command name: 0 is the state, 2
/// the process group.
fn stat(pid: i32, field: usize) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(field).map(String::from)
}

/// Processes of group `pgid` that still run (zombies are dead).
fn group_alive(pgid: u32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter(|&pid| {
            stat(pid, 2).as_deref() == Some(&pgid.to_string())
                && stat(pid, 0).as_deref() != Some("Z")
        })
        .collect()
}

/// Starts `script` and waits for its first line on stdout: the pid of a
/// process it left in its group, or a sign that it is ready.
async fn started(script: &str) -> (Child, String) {
    start(&mut sh(script)).await
}

/// [`started`] for a command built by the caller.
async fn start(command: &mut Command) -> (Child, String) {
    let mut child = command.stdout(Stdout::Piped).spawn().unwrap();
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.as_mut().unwrap());
    tokio::time::timeout(BOUND, stdout.read_line(&mut line))
        .await
        .expect("the child printed nothing")
        .unwrap();
    (child, line.trim().to_string())
}

#[tokio::test]
async fn a_killed_group_leaves_nothing_running() {
    let (child, grandchild) = started("sleep 100 & echo $!; sleep 100").await;
    let grandchild: i32 = grandchild.parse().unwrap();
    let pgid = child.pid();
    assert_eq!(stat(grandchild, 2), Some(pgid.to_string()), "in the group");
    assert!(child.try_exited().unwrap().is_none());

    child.kill_group();
    let status = child.wait().await.unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9));
    assert!(
        exits(grandchild, BOUND).await,
        "the grandchild outlived its group"
    );
    // Members signalled a moment ago may still be on their way out.
    for pid in group_alive(pgid) {
        assert!(exits(pid, BOUND).await, "{pid} outlived its group");
    }
    assert_eq!(group_alive(pgid), Vec::<i32>::new());
    assert!(
        !std::path::Path::new(&format!("/proc/{pgid}")).exists(),
        "the leader is reaped"
    );
}

#[tokio::test]
async fn an_exit_is_observed_without_the_reap_until_the_group_is_killed() {
    // The leader exits at once; its background sleep stays in the group.
    // (Under a reaper, the reaper ends the sleep before it reports.)
    let (child, grandchild) = start(sh("sleep 100 & echo $!; exit 3").direct()).await;
    let grandchild: i32 = grandchild.parse().unwrap();
    let leader = child.pid() as i32;
    // Two waiters at once see the same exit.
    let (a, b) = tokio::join!(child.exited(), child.exited());
    assert_eq!((a.unwrap().code(), b.unwrap().code()), (Some(3), Some(3)));
    assert_eq!(
        stat(leader, 0).as_deref(),
        Some("Z"),
        "observed, not reaped: the leader still holds its pid and group id"
    );
    assert!(
        !exits(grandchild, Duration::from_millis(50)).await,
        "the group is not killed by observing an exit"
    );

    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(3));
    assert!(exits(grandchild, BOUND).await, "the group is killed first");
    assert_eq!(stat(leader, 0), None, "then the leader is reaped");
    // A kill after the reap signals nobody.
    child.kill_group();
}

#[tokio::test]
async fn dropping_a_child_kills_its_group_and_reaps_it() {
    let (child, grandchild) = started("sleep 100 & echo $!; exec sleep 100").await;
    let grandchild: i32 = grandchild.parse().unwrap();
    let leader = pidfd(child.pid() as i32).unwrap();
    drop(child);
    assert!(tokio::time::timeout(BOUND, leader.readable()).await.is_ok());
    assert!(exits(grandchild, BOUND).await);
}

#[tokio::test]
async fn stop_asks_with_sigterm_then_kills_after_the_grace() {
    use std::os::unix::process::ExitStatusExt;
    let (polite, _) = started("echo ready; exec sleep 100").await;
    let status = polite.stop(BOUND).await.unwrap();
    assert_eq!(status.signal(), Some(15));

    let (stubborn, _) = started("trap '' TERM; echo ready; while :; do :; done").await;
    let started = std::time::Instant::now();
    let status = stubborn.stop(Duration::from_millis(200)).await.unwrap();
    assert_eq!(status.signal(), Some(9));
    assert!(started.elapsed() < BOUND);
}

#[tokio::test]
async fn stderr_is_captured_bounded_head_and_tail() {
    let child = sh("echo 'thread main panicked: out of cheese' >&2
         i=0; while [ $i -lt 3000 ]; do echo \"frame $i\" >&2; i=$((i+1)); done
         echo 'the end' >&2; exit 101")
    .spawn()
    .unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(
        gantry_process::describe_exit(status),
        "exited with code 101"
    );
    let stderr = child.stderr().expect("captured by default");
    tokio::time::timeout(BOUND, stderr.finished())
        .await
        .unwrap();
    let capped = stderr.lock();
    assert!(
        capped
            .head()
            .starts_with(b"thread main panicked: out of cheese\n")
    );
    assert!(capped.tail().ends_with(b"frame 2999\nthe end\n"));
    assert_eq!(
        (capped.head().len(), capped.tail().len()),
        (
            gantry_process::child::STDERR_HEAD,
            gantry_process::child::STDERR_TAIL
        )
    );
    assert!(capped.cut() > 20_000, "{}", capped.cut());
    drop(capped);
    assert_eq!(stderr.explain(), "frame 2998 | frame 2999 | the end");
}

#[tokio::test]
async fn stderr_can_join_stdout_in_the_order_written() {
    let child = sh("echo out; echo err >&2; echo out again")
        .stdout(Stdout::Capture {
            head: 1024,
            tail: 1024,
        })
        .stderr(Stderr::Stdout)
        .spawn()
        .unwrap();
    child.wait().await.unwrap();
    let output = child.output().unwrap();
    tokio::time::timeout(BOUND, output.finished())
        .await
        .unwrap();
    assert_eq!(output.lock().text(), "out\nerr\nout again\n");
    assert!(child.stderr().is_none());
}

#[tokio::test]
async fn stdin_is_closed_unless_piped() {
    use tokio::io::AsyncWriteExt;
    let child = Command::new("cat", &common::unconfined())
        .stdout(Stdout::Capture { head: 64, tail: 0 })
        .spawn()
        .unwrap();
    assert!(child.stdin.is_none());
    tokio::time::timeout(BOUND, child.wait())
        .await
        .expect("cat waited on stdin")
        .unwrap();

    let mut child = Command::new("cat", &common::unconfined())
        .stdin_piped()
        .stdout(Stdout::Capture { head: 64, tail: 0 })
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello").await.unwrap();
    drop(stdin);
    assert!(child.wait().await.unwrap().success());
    let output = child.output().unwrap();
    tokio::time::timeout(BOUND, output.finished())
        .await
        .unwrap();
    assert_eq!(output.lock().text(), "hello");
}

#[tokio::test]
async fn a_missing_program_is_an_error_not_a_child() {
    let error = Command::new("/nonexistent/gantry-test", &common::unconfined())
        .spawn()
        .unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
}
