//! Children under the reaper, with real processes: every descendant dies,
//! those that left the process group too, when the command exits, when it
//! is killed or dropped, and when the process that started it is
//! SIGKILLed; the command's own status comes back whole. Every wait is on
//! an event (a line on a pipe, a pidfd), bounded, never a fixed sleep.

mod common;

use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use gantry_process::{Child, Command, Reach, Stdout};
use rustix::process::{Pid, PidfdFlags, pidfd_open};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const BOUND: Duration = Duration::from_secs(10);

/// Runs this binary's children under the crate's own `gantry-reap`.
fn reaped() {
    gantry_process::reaper::use_program(env!("CARGO_BIN_EXE_gantry-reap"));
    assert_eq!(gantry_process::reaper::reach(), Reach::Descendants);
}

fn sh(script: &str) -> Command {
    reaped();
    let mut command = Command::new("sh", &common::unconfined());
    command.arg("-c").arg(script);
    command
}

/// A pidfd of `pid` (or, with `flags`, of a thread), ours or not; `None`
/// when it is gone already.
fn pidfd(pid: i32, flags: PidfdFlags) -> Option<AsyncFd<OwnedFd>> {
    let fd = pidfd_open(Pid::from_raw(pid).unwrap(), flags).ok()?;
    // SAFETY: the AsyncFd owns the fd, and an OwnedFd's raw fd never changes.
    Some(unsafe { AsyncFd::register(fd) }.unwrap())
}

/// Whether `pid` exits within `bound`, awaited on its pidfd.
async fn exits(pid: i32, bound: Duration) -> bool {
    match pidfd(pid, PidfdFlags::empty()) {
        None => true,
        Some(fd) => tokio::time::timeout(bound, fd.readable()).await.is_ok(),
    }
}

/// The parent of `pid`, from `/proc/PID/stat`.
fn parent_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Starts `script` and reads `lines` lines of its stdout: pids it printed,
/// each after a word that names it (lines from its processes may come in
/// any order), returned in the order of `names`.
async fn started(script: &str, names: &[&str]) -> (Child, Vec<i32>) {
    let mut child = sh(script).stdout(Stdout::Piped).spawn().unwrap();
    assert_eq!(child.reach(), Reach::Descendants);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut named = std::collections::HashMap::new();
    while named.len() < names.len() {
        let mut line = String::new();
        tokio::time::timeout(BOUND, stdout.read_line(&mut line))
            .await
            .expect("the child printed too little")
            .unwrap();
        let (name, pid) = line.trim().split_once(' ').expect("a name and a pid");
        named.insert(name.to_string(), pid.parse::<i32>().unwrap());
    }
    let pids = names.iter().map(|name| named[*name]).collect();
    (child, pids)
}

#[tokio::test]
async fn the_exit_code_is_kept_and_a_process_that_left_the_group_dies() {
    let (child, pids) = started("setsid sleep 100 & echo setsid $!; exit 3", &["setsid"]).await;
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(3));
    assert!(exits(pids[0], BOUND).await, "the setsid sleep outlived it");
}

#[tokio::test]
async fn an_exit_of_143_is_told_from_a_death_by_sigterm() {
    let exited = sh("exit 143").spawn().unwrap().wait().await.unwrap();
    assert_eq!((exited.code(), exited.signal()), (Some(143), None));
    let killed = sh("kill -TERM $$").spawn().unwrap().wait().await.unwrap();
    assert_eq!((killed.code(), killed.signal()), (None, Some(15)));
    let dumped = sh("ulimit -c 0; kill -SEGV $$").spawn().unwrap();
    assert_eq!(dumped.wait().await.unwrap().signal(), Some(11));
}

#[tokio::test]
async fn a_kill_reaches_every_descendant() {
    let script = "setsid sh -c 'sleep 100 & echo inner $!; sleep 100' & \
                  sleep 100 & echo sleep $!; echo sh $$; wait";
    let (child, pids) = started(script, &["inner", "sleep", "sh"]).await;
    assert_eq!(pids[2] as u32, child.pid(), "the pid is the command's");
    child.kill_group();
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.signal(), Some(9));
    for pid in pids {
        assert!(exits(pid, BOUND).await, "{pid} outlived the kill");
    }
}

#[tokio::test]
async fn dropping_a_child_ends_every_descendant() {
    let (child, pids) = started(
        "setsid sleep 100 & echo setsid $!; echo sh $$; exec sleep 100",
        &["setsid", "sh"],
    )
    .await;
    let reaper = parent_of(pids[1]);
    drop(child);
    for pid in [pids[0], pids[1], reaper] {
        assert!(exits(pid, BOUND).await, "{pid} outlived the drop");
    }
}

#[tokio::test]
async fn stop_asks_the_command_with_sigterm_first() {
    let (child, _) = started(
        "trap 'exit 7' TERM; echo sh $$; while :; do sleep 0.1; done",
        &["sh"],
    )
    .await;
    let status = child.stop(BOUND).await.unwrap();
    assert_eq!(status.code(), Some(7), "{status:?}");
}

#[tokio::test]
async fn a_missing_program_is_an_error_not_a_child() {
    reaped();
    let error = Command::new("/nonexistent/gantry-test", &common::unconfined())
        .spawn()
        .unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
}

/// `PR_SET_PDEATHSIG` fires when the *thread* that spawned the reaper
/// exits, which tokio's blocking threads do all the time: the reaper must
/// see that its parent process lives on, and carry on.
#[tokio::test]
async fn the_spawning_thread_may_exit() {
    reaped();
    let runtime = tokio::runtime::Handle::current();
    let (tid, mut child) = std::thread::spawn(move || {
        let _entered = runtime.enter();
        let child = sh("read line; echo \"got $line\"")
            .stdin_piped()
            .stdout(Stdout::Capture { head: 64, tail: 0 })
            .spawn()
            .unwrap();
        // SAFETY: gettid has no preconditions.
        (unsafe { libc::gettid() }, child)
    })
    .join()
    .unwrap();
    // Until the thread is fully gone, its death was not signalled yet.
    let thread = libc::O_EXCL as u32; // PIDFD_THREAD (Linux 6.9)
    if let Some(fd) = pidfd(tid, PidfdFlags::from_bits_retain(thread)) {
        let _gone = tokio::time::timeout(BOUND, fd.readable()).await.unwrap();
    }
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hi\n").await.unwrap();
    drop(stdin);
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    let output = child.output().unwrap();
    tokio::time::timeout(BOUND, output.finished())
        .await
        .unwrap();
    assert_eq!(output.lock().text(), "got hi\n");
}

/// The helper of [`every_descendant_dies_with_a_sigkilled_parent`], run in
/// a process of its own: starts a reaped tree, prints its pids (reaper,
/// command, a setsid sleep, a background sleep), then waits to be killed.
#[test]
#[ignore = "a helper: every_descendant_dies_with_a_sigkilled_parent runs it in its own process"]
fn helper_holding_a_reaped_tree() {
    if std::env::var_os("GANTRY_TEST_HELPER").is_none() {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _child = runtime.block_on(async {
        let script =
            "setsid sleep 100 & echo setsid $!; sleep 100 & echo sleep $!; echo sh $$; wait";
        let (child, pids) = started(script, &["setsid", "sleep", "sh"]).await;
        let reaper = parent_of(pids[2]);
        println!("tree {reaper} {} {} {}", pids[2], pids[0], pids[1]);
        child
    });
    // Our stdin ends only when the test is done with us; it kills us first.
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
}

#[tokio::test]
async fn every_descendant_dies_with_a_sigkilled_parent() {
    let mut helper = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "helper_holding_a_reaped_tree", "--ignored"])
        .args(["--nocapture", "--test-threads=1"])
        .env("GANTRY_TEST_HELPER", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(helper.stdout.take().unwrap()).lines();
    let tree: Vec<i32> = loop {
        let line = tokio::time::timeout(BOUND, lines.next_line())
            .await
            .expect("the helper printed no tree")
            .unwrap()
            .expect("the helper ended without printing its tree");
        // libtest may have begun the line with the test's name.
        if let Some((_, pids)) = line.rsplit_once("tree ") {
            break pids.split(' ').map(|p| p.parse().unwrap()).collect();
        }
    };
    assert_eq!(tree.len(), 4);
    // Watched before the kill, so no pid can be reused unseen.
    let watched: Vec<_> = tree
        .iter()
        .map(|&pid| (pid, pidfd(pid, PidfdFlags::empty()).expect("running")))
        .collect();
    helper.start_kill().unwrap();
    helper.wait().await.unwrap();
    for (pid, fd) in watched {
        assert!(
            tokio::time::timeout(BOUND, fd.readable()).await.is_ok(),
            "{pid} outlived the SIGKILLed process that started it (tree {tree:?})"
        );
    }
}
