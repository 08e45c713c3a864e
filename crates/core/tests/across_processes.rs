//! The write path across real processes: one that crashes half-way at a
//! failpoint and the next that finishes or rolls back its write, two that
//! race to apply the same plan, two that append at once, with one state
//! directory or two.
//!
//! Its own `main` (`harness = false`): run with `GANTRY_TEST_CHILD` set,
//! this binary is the child process a test starts, playing the part asked
//! for (crash, race, append) and talking to the parent over stdin and
//! stdout; run without, it runs the tests.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitCode, Stdio};

use common::{OLD_FILES, files_under, four_changes, journals, set, workspace_with};
use gantry_core::testing::{self, harness, read, state_dir};
use gantry_core::write::{Change, ChangeSet, WriteError, open_workspace, recover};
use gantry_core::{Run, Workspace};

fn main() -> ExitCode {
    if let Ok(role) = std::env::var("GANTRY_TEST_CHILD") {
        child(&role);
        return ExitCode::SUCCESS;
    }
    harness::run(&[
        (
            "a_crash_between_two_renames_is_finished_by_the_next_process",
            || Box::pin(a_crash_between_two_renames_is_finished_by_the_next_process()),
        ),
        (
            "a_crash_is_finished_by_a_process_with_another_state_directory",
            || Box::pin(a_crash_is_finished_by_a_process_with_another_state_directory()),
        ),
        (
            "a_crash_before_the_commit_is_rolled_back_by_the_next_process",
            || Box::pin(a_crash_before_the_commit_is_rolled_back_by_the_next_process()),
        ),
        (
            "two_processes_applying_the_same_plan_at_once_one_wins_and_one_is_refused",
            || Box::pin(two_processes_applying_the_same_plan_at_once_one_wins_and_one_is_refused()),
        ),
        (
            "two_processes_appending_at_once_are_serialised_and_lose_nothing",
            || Box::pin(two_processes_appending_at_once_are_serialised_and_lose_nothing()),
        ),
        (
            "two_state_directories_share_one_lock_and_lose_nothing",
            || Box::pin(two_state_directories_share_one_lock_and_lose_nothing()),
        ),
    ])
}

/// Starts this test binary as a child playing `role` on `root`.
fn spawn_child(role: &str, root: &Path, extra: &[(&str, &str)]) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .env("GANTRY_TEST_CHILD", role)
        .env("GANTRY_TEST_ROOT", root)
        .env("GANTRY_STATE_DIR", state_dir())
        .env_remove("GANTRY_FAILPOINT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    for (key, value) in extra {
        command.env(key, value);
    }
    command.spawn().unwrap()
}

/// The next protocol line of a child.
fn next_message(stdout: &mut BufReader<ChildStdout>) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert_ne!(stdout.read_line(&mut line).unwrap(), 0, "child ended early");
        if let Some((_, message)) = line.trim_end().split_once("CHILD:") {
            return message.to_string();
        }
    }
}

fn say(message: &str) {
    println!("CHILD:{message}");
    std::io::stdout().flush().unwrap();
}

fn wait_for_go() {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
}

/// What a child process does: the part `role` names, on the workspace
/// `GANTRY_TEST_ROOT`.
fn child(role: &str) {
    let root = PathBuf::from(std::env::var("GANTRY_TEST_ROOT").unwrap());
    let label = std::env::var("GANTRY_TEST_LABEL").unwrap_or_default();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let run = Run::builder(Workspace::new(&root).unwrap()).build();
        let ws = run.workspace();
        let shared = ws.resolve("shared.txt").unwrap();
        match role {
            "crash" => {
                let outcome = run.apply(four_changes(&run)).await;
                panic!("the failpoint did not fire: {outcome:?}");
            }
            "race" => {
                let mut changes = ChangeSet::new();
                let content = format!("written by {label}\n").repeat(10_000);
                changes.plan_write(ws, &shared, content).unwrap();
                say("ready");
                wait_for_go();
                match run.apply(changes).await {
                    Ok(_) => say("won"),
                    Err(WriteError::Stale { .. }) => say("stale"),
                    Err(other) => panic!("{other}"),
                }
            }
            "append" => {
                say("ready");
                wait_for_go();
                for i in 0..25 {
                    loop {
                        let before = std::fs::read(&shared).unwrap();
                        let mut after = before.clone();
                        after.extend(format!("{label} {i}\n").bytes());
                        let mut changes = ChangeSet::new();
                        changes
                            .push(ws, Change::modified(&shared, before, after))
                            .unwrap();
                        match run.apply(changes).await {
                            Ok(_) => break,
                            Err(WriteError::Stale { .. }) => continue,
                            Err(other) => panic!("{other}"),
                        }
                    }
                }
                say("done");
            }
            "append-log" => append_log(&run).await,
            other => panic!("unknown child role {other}"),
        }
    });
}

/// Runs the crash child at `failpoint` and checks it died of it.
fn crash_at(failpoint: &str) -> (tempfile::TempDir, Run) {
    crash_at_with(failpoint, &[])
}

/// [`crash_at`] with more environment for the child.
fn crash_at_with(failpoint: &str, env: &[(&str, &str)]) -> (tempfile::TempDir, Run) {
    let (dir, run) = workspace_with(&OLD_FILES);
    let mut env = env.to_vec();
    env.push(("GANTRY_FAILPOINT", failpoint));
    let child = spawn_child("crash", run.workspace().root(), &env);
    let output = child.wait_with_output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        output.status.signal(),
        Some(6),
        "the child should have aborted at {failpoint}: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    (dir, run)
}

fn temp_files(root: &Path) -> Vec<String> {
    files_under(root)
        .into_iter()
        .filter(|name| name.ends_with(".tmp") && name.contains(".gantry-"))
        .collect()
}

async fn a_crash_between_two_renames_is_finished_by_the_next_process() {
    let (_dir, run) = crash_at("after-first-rename");
    let root = run.workspace().root();
    // Really half-way: the first file is new, the second still old.
    assert_eq!(read(&run, "a.txt"), "new a\n");
    assert_eq!(read(&run, "b.txt"), "old b\n");
    assert_eq!(temp_files(root).len(), 2, "{:?}", files_under(root));
    // The committed journal is in the state directory, never the workspace.
    let left = journals(root);
    assert_eq!(left.len(), 1);
    assert!(left[0].starts_with(state_dir()) && !left[0].starts_with(root));
    assert_eq!(left[0].extension().unwrap(), "committed");

    // This process opening the root finishes it: all new.
    let (_, report) = open_workspace(root).unwrap();
    assert_eq!(report.completed.len(), 4, "{report}");
    assert!(
        report
            .to_string()
            .starts_with("finished an interrupted write of")
    );
    assert_eq!(files_under(root), set(&["a.txt", "b.txt", "new/d.txt"]));
    assert_eq!(read(&run, "b.txt"), "new b\n");
    assert_eq!(read(&run, "new/d.txt"), "new d\n");
    assert!(journals(root).is_empty());
    // Recovering again finds nothing.
    assert!(recover(root).unwrap().is_empty());
}

async fn a_crash_is_finished_by_a_process_with_another_state_directory() {
    let elsewhere = tempfile::tempdir().unwrap();
    let (_dir, run) = crash_at_with(
        "after-first-rename",
        &[("GANTRY_STATE_DIR", elsewhere.path().to_str().unwrap())],
    );
    let root = run.workspace().root();
    assert_eq!(read(&run, "b.txt"), "old b\n");
    // Not in this process's state directory: found through the beacon the
    // crashed process left in the shared one.
    assert!(journals(root).is_empty());
    let report = recover(root).unwrap();
    assert_eq!(report.completed.len(), 4, "{report}");
    assert_eq!(files_under(root), set(&["a.txt", "b.txt", "new/d.txt"]));
    assert_eq!(read(&run, "b.txt"), "new b\n");
    assert!(recover(root).unwrap().is_empty());
}

async fn a_crash_before_the_commit_is_rolled_back_by_the_next_process() {
    let (_dir, run) = crash_at("before-commit");
    let root = run.workspace().root();
    assert_eq!(temp_files(root).len(), 3, "{:?}", files_under(root));
    assert_eq!(journals(root)[0].extension().unwrap(), "pending");

    let report = recover(root).unwrap();
    assert_eq!(report.rolled_back.len(), 3, "{report}");
    // All old, and the directory made for the new file is gone too.
    assert_eq!(files_under(root), set(&["a.txt", "b.txt", "c.txt"]));
    assert!(!root.join("new").exists());
    for (name, content) in OLD_FILES {
        assert_eq!(read(&run, name), content);
    }
    assert!(journals(root).is_empty());
}

/// Starts the children, waits until each is ready, then lets them go at
/// once; returns each one's stdout.
fn race(children: &mut [Child]) -> Vec<BufReader<ChildStdout>> {
    let mut outputs: Vec<_> = children
        .iter_mut()
        .map(|child| BufReader::new(child.stdout.take().unwrap()))
        .collect();
    for output in &mut outputs {
        assert_eq!(next_message(output), "ready");
    }
    for child in children.iter_mut() {
        child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    }
    outputs
}

async fn two_processes_applying_the_same_plan_at_once_one_wins_and_one_is_refused() {
    let (_dir, run) = workspace_with(&[("shared.txt", "original\n")]);
    let root = run.workspace().root();
    let mut children: Vec<Child> = ["left", "right"]
        .iter()
        .map(|label| spawn_child("race", root, &[("GANTRY_TEST_LABEL", label)]))
        .collect();
    let mut outputs = race(&mut children);
    let outcomes: Vec<String> = outputs.iter_mut().map(next_message).collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let winner = match outcomes.as_slice() {
        [won, stale] if won == "won" && stale == "stale" => "left",
        [stale, won] if won == "won" && stale == "stale" => "right",
        other => panic!("expected one winner and one refusal, got {other:?}"),
    };
    // The file is entirely the winner's: no mix, no tear.
    assert_eq!(
        read(&run, "shared.txt"),
        format!("written by {winner}\n").repeat(10_000)
    );
    assert_eq!(files_under(root), set(&["shared.txt"]));
}

async fn two_processes_appending_at_once_are_serialised_and_lose_nothing() {
    let (_dir, run) = workspace_with(&[("shared.txt", "")]);
    let root = run.workspace().root();
    let mut children: Vec<Child> = ["left", "right"]
        .iter()
        .map(|label| spawn_child("append", root, &[("GANTRY_TEST_LABEL", label)]))
        .collect();
    let mut outputs = race(&mut children);
    for output in &mut outputs {
        assert_eq!(next_message(output), "done");
    }
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let text = read(&run, "shared.txt");
    for label in ["left", "right"] {
        let mine: Vec<&str> = text.lines().filter(|l| l.starts_with(label)).collect();
        let expected: Vec<String> = (0..25).map(|i| format!("{label} {i}")).collect();
        assert_eq!(mine, expected, "{label}'s appends were lost or reordered");
    }
    assert_eq!(text.lines().count(), 50);
    assert_eq!(files_under(root), set(&["shared.txt"]));
}

/// The child's part in [`two_state_directories_share_one_lock_and_lose_nothing`]:
/// appends a line to `log.txt` `GANTRY_TEST_APPENDS` times, each a
/// read-modify-write planned against what it read.
async fn append_log(run: &Run) {
    let count = std::env::var("GANTRY_TEST_APPENDS").unwrap();
    let tag = std::env::var("GANTRY_TEST_TAG").unwrap();
    let path = run.workspace().root().join("log.txt");
    let mut acknowledged = 0;
    for i in 0..count.parse::<usize>().unwrap() {
        loop {
            let before = std::fs::read(&path).unwrap();
            let mut after = before.clone();
            after.extend_from_slice(format!("{tag}{i}\n").as_bytes());
            let mut changes = ChangeSet::new();
            changes
                .push(run.workspace(), Change::modified(&path, before, after))
                .unwrap();
            match run.apply(changes).await {
                Ok(_) => break,
                Err(WriteError::Stale { .. }) => continue,
                Err(other) => panic!("{other}"),
            }
        }
        acknowledged += 1;
    }
    let mut out = std::io::stdout();
    writeln!(out, "acknowledged {acknowledged}").unwrap();
}

async fn two_state_directories_share_one_lock_and_lose_nothing() {
    let ws = testing::workspace_with(&[("log.txt", "")]);
    let per_child = 150;
    let children: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|tag| {
            let state = tempfile::tempdir().unwrap();
            let child = Command::new(std::env::current_exe().unwrap())
                .env("GANTRY_TEST_CHILD", "append-log")
                .env("GANTRY_TEST_APPENDS", per_child.to_string())
                .env("GANTRY_TEST_ROOT", ws.path())
                .env("GANTRY_TEST_TAG", tag)
                .env("GANTRY_STATE_DIR", state.path())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            (state, child)
        })
        .collect();
    let mut acknowledged = 0;
    for (_state, mut child) in children {
        let stdout = BufReader::new(child.stdout.take().unwrap());
        for line in stdout.lines() {
            if let Some((_, n)) = line.unwrap().split_once("acknowledged ") {
                acknowledged += n.trim().parse::<usize>().unwrap();
            }
        }
        assert!(child.wait().unwrap().success());
    }
    let log = std::fs::read_to_string(ws.path().join("log.txt")).unwrap();
    assert_eq!(acknowledged, 2 * per_child);
    assert_eq!(
        log.lines().count(),
        acknowledged,
        "acknowledged appends were lost"
    );
}
