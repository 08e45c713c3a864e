//! The write path against real files: all-or-nothing, symlinks, modes,
//! hooks, and real processes that crash half-way or race each other.
//!
//! Tests that need a second process re-run this test binary with
//! `GANTRY_TEST_CHILD` set, selecting [`child_entry`], which then plays the
//! part asked for (crash at a failpoint, race, append) and talks to the
//! parent over stdin and stdout.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gantry_core::testing::{self, read, state_dir};
use gantry_core::write::{
    Applied, Change, ChangeKind, ChangeSet, WriteError, WriteHook, apply_in_gantry_home,
    open_workspace, recover,
};
use gantry_core::{Run, Workspace, async_trait};

fn workspace_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Run) {
    let dir = testing::workspace_with(files);
    let run = Run::builder(Workspace::new(dir.path()).unwrap()).build();
    (dir, run)
}

/// Every file under `root`, relative.
fn files_under(root: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.is_symlink() {
                walk(root, &path, out);
            } else {
                out.insert(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, root, &mut out);
    out
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The journals left for `root` in the state directory.
fn journals(root: &Path) -> Vec<PathBuf> {
    let roots = state_dir().join("roots");
    let Ok(entries) = std::fs::read_dir(&roots) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| {
            std::fs::read(entry.path().join("root"))
                .is_ok_and(|r| r == root.as_os_str().as_encoded_bytes())
        })
        .flat_map(|entry| std::fs::read_dir(entry.path()).unwrap().flatten())
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|e| e == "pending" || e == "committed")
        })
        .collect()
}

/// The change set the crash tests apply: two modifies, a delete, a create
/// in a new directory.
fn four_changes(run: &Run) -> ChangeSet {
    let ws = run.workspace();
    let path = |name: &str| ws.resolve(name).unwrap();
    let mut changes = ChangeSet::new();
    changes.plan_write(ws, &path("a.txt"), "new a\n").unwrap();
    changes.plan_write(ws, &path("b.txt"), "new b\n").unwrap();
    changes.plan_delete(ws, &path("c.txt")).unwrap();
    changes
        .plan_create(ws, &path("new/d.txt"), "new d\n")
        .unwrap();
    changes
}

const OLD_FILES: [(&str, &str); 3] = [
    ("a.txt", "old a\n"),
    ("b.txt", "old b\n"),
    ("c.txt", "old c\n"),
];

#[tokio::test]
async fn applies_creates_modifies_deletes_and_renames() {
    let (_dir, run) = workspace_with(&[
        ("a.txt", "a\n"),
        ("gone.txt", "x\n"),
        ("old/name.txt", "n\n"),
    ]);
    let ws = run.workspace();
    let mut changes = ChangeSet::new();
    changes
        .plan_write(ws, &ws.resolve("a.txt").unwrap(), "A\n")
        .unwrap();
    changes
        .plan_write(ws, &ws.resolve("deep/er/b.txt").unwrap(), "b\n")
        .unwrap();
    changes
        .plan_delete(ws, &ws.resolve("gone.txt").unwrap())
        .unwrap();
    changes
        .plan_rename(
            ws,
            &ws.resolve("old/name.txt").unwrap(),
            &ws.resolve("moved/here.txt").unwrap(),
            None,
        )
        .unwrap();
    let applied = run.apply(changes).await.unwrap();
    let summary: Vec<(char, &str)> = applied
        .changes
        .iter()
        .map(|c| (c.kind.letter(), c.display.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ('M', "a.txt"),
            ('A', "deep/er/b.txt"),
            ('D', "gone.txt"),
            ('R', "moved/here.txt")
        ]
    );
    assert_eq!(
        files_under(ws.root()),
        set(&["a.txt", "deep/er/b.txt", "moved/here.txt"])
    );
    assert_eq!(read(&run, "moved/here.txt"), "n\n");
    assert_eq!(applied.changes[3].content.as_deref(), Some(&b"n\n"[..]));
    assert!(journals(ws.root()).is_empty());
}

#[tokio::test]
async fn a_file_changed_since_planning_refuses_the_whole_set() {
    let (_dir, run) = workspace_with(&OLD_FILES);
    let changes = four_changes(&run);
    std::fs::write(run.workspace().root().join("b.txt"), "edited by the user\n").unwrap();
    std::fs::write(run.workspace().root().join("new-file-elsewhere"), "").unwrap();
    let error = run.apply(changes).await.unwrap_err();
    assert!(
        matches!(&error, WriteError::Stale { files } if files == &["b.txt"]),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with(
            "nothing was written: a file changed since the change was planned (b.txt)"
        ),
        "{message}"
    );
    // Nothing written, nothing left behind.
    assert_eq!(read(&run, "a.txt"), "old a\n");
    assert_eq!(read(&run, "b.txt"), "edited by the user\n");
    assert_eq!(
        files_under(run.workspace().root()),
        set(&["a.txt", "b.txt", "c.txt", "new-file-elsewhere"])
    );
    assert!(journals(run.workspace().root()).is_empty());

    // A file planned absent that appeared since.
    let ws = run.workspace();
    let mut changes = ChangeSet::new();
    changes
        .plan_create(ws, &ws.resolve("late.txt").unwrap(), "mine")
        .unwrap();
    std::fs::write(ws.root().join("late.txt"), "theirs").unwrap();
    let error = run.apply(changes).await.unwrap_err();
    assert!(matches!(&error, WriteError::Stale { files } if files == &["late.txt"]));
    assert_eq!(read(&run, "late.txt"), "theirs");
}

#[tokio::test]
async fn a_name_at_the_length_limit_still_gets_its_temp_file() {
    let name = "n".repeat(250);
    let (_dir, run) = workspace_with(&[(name.as_str(), "old")]);
    let ws = run.workspace();
    let mut changes = ChangeSet::new();
    changes
        .plan_write(ws, &ws.resolve(&name).unwrap(), "new")
        .unwrap();
    run.apply(changes).await.unwrap();
    assert_eq!(read(&run, &name), "new");
}

/// The apply without a run's lock and hooks is for Gantry's own
/// directory only: a workspace's file given to it is refused, unchanged.
#[tokio::test]
async fn outside_a_run_only_gantrys_own_directory_is_written() {
    let (_dir, run) = workspace_with(&[("a.txt", "old")]);
    let ws = run.workspace();
    let mut changes = ChangeSet::new();
    changes
        .plan_write(ws, &ws.resolve("a.txt").unwrap(), "new")
        .unwrap();
    let refused = apply_in_gantry_home(ws, changes).await.unwrap_err();
    assert!(
        refused.to_string().contains("only Gantry's own directory"),
        "{refused}"
    );
    assert_eq!(read(&run, "a.txt"), "old");
}

#[tokio::test]
async fn a_path_is_changed_once_per_set() {
    let (_dir, run) = workspace_with(&[("a.txt", "a")]);
    let ws = run.workspace();
    let a = ws.resolve("a.txt").unwrap();
    let mut changes = ChangeSet::new();
    changes
        .plan_rename(ws, &a, &ws.resolve("b.txt").unwrap(), None)
        .unwrap();
    let error = changes.plan_write(ws, &a, "again").unwrap_err();
    assert_eq!(
        error.to_string(),
        "a.txt is changed twice in one change set; combine the changes to it"
    );
    let error = changes
        .push(ws, Change::created("/etc/gantry-test", "x"))
        .unwrap_err();
    assert!(matches!(error, WriteError::Outside(_)), "{error:?}");
}

#[tokio::test]
async fn symlinks_are_written_through_and_stay_links() {
    let (_dir, run) = workspace_with(&[("real.txt", "old\n")]);
    let ws = run.workspace();
    std::os::unix::fs::symlink("real.txt", ws.root().join("link.txt")).unwrap();
    std::os::unix::fs::symlink("missing.txt", ws.root().join("dangling.txt")).unwrap();
    let mut changes = ChangeSet::new();
    changes
        .plan_write(ws, &ws.resolve("link.txt").unwrap(), "new\n")
        .unwrap();
    changes
        .plan_write(ws, &ws.resolve("dangling.txt").unwrap(), "made\n")
        .unwrap();
    let applied = run.apply(changes).await.unwrap();
    assert_eq!(applied.changes[0].kind, ChangeKind::Modified);
    assert_eq!(applied.changes[1].kind, ChangeKind::Created);
    for link in ["link.txt", "dangling.txt"] {
        assert!(
            ws.root()
                .join(link)
                .symlink_metadata()
                .unwrap()
                .is_symlink(),
            "{link}"
        );
    }
    assert_eq!(read(&run, "real.txt"), "new\n");
    assert_eq!(read(&run, "missing.txt"), "made\n");

    // A dangling link that points out of the workspace is not followed.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    std::os::unix::fs::symlink(&target, ws.root().join("out.txt")).unwrap();
    let refused = ws.resolve("out.txt").unwrap_err();
    assert!(
        refused.to_string().contains("`out.txt` is a symlink"),
        "{refused}"
    );
    // Named without the workspace's check, the write path refuses it too.
    let mut changes = ChangeSet::new();
    let error = changes
        .push(ws, Change::created(ws.root().join("out.txt"), "x"))
        .unwrap_err();
    assert!(matches!(error, WriteError::Outside(_)), "{error:?}");
    assert!(!target.exists());
}

#[tokio::test]
async fn file_modes_are_kept() {
    let (_dir, run) = workspace_with(&[("run.sh", "#!/bin/sh\n"), ("secret", "s")]);
    let ws = run.workspace();
    let mode = |name: &str| {
        ws.root()
            .join(name)
            .metadata()
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    std::fs::set_permissions(
        ws.root().join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(
        ws.root().join("secret"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let mut changes = ChangeSet::new();
    changes
        .plan_write(ws, &ws.resolve("run.sh").unwrap(), "#!/bin/sh\necho hi\n")
        .unwrap();
    changes
        .plan_rename(
            ws,
            &ws.resolve("secret").unwrap(),
            &ws.resolve("moved-secret").unwrap(),
            Some(b"t".to_vec()),
        )
        .unwrap();
    run.apply(changes).await.unwrap();
    assert_eq!(mode("run.sh"), 0o755);
    assert_eq!(mode("moved-secret"), 0o600);
}

/// Counts writes in flight between its before and after calls.
#[derive(Default)]
struct Tracker {
    active: AtomicUsize,
    most: AtomicUsize,
    before: AtomicUsize,
}

#[async_trait]
impl WriteHook for Tracker {
    async fn before_write(&self, _: &Run, changes: &ChangeSet) {
        assert_eq!(changes.len(), 1);
        self.before.fetch_add(1, Ordering::SeqCst);
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::task::yield_now().await;
    }
    async fn after_write(&self, _: &Run, applied: &Applied) -> Option<String> {
        tokio::task::yield_now().await;
        self.active.fetch_sub(1, Ordering::SeqCst);
        Some(format!("synced {}", applied.changes[0].display))
    }
}

/// Adds nothing; shows hooks without text are fine.
struct Quiet;

#[async_trait]
impl WriteHook for Quiet {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_wrap_every_write_and_writes_of_a_run_never_overlap() {
    state_dir();
    let dir = tempfile::tempdir().unwrap();
    let tracker = Arc::new(Tracker::default());
    let run = Run::builder(Workspace::new(dir.path()).unwrap())
        .write_hook(tracker.clone())
        .write_hook(Arc::new(Quiet))
        .build();
    let writes = (0..8).map(|i| {
        let run = run.clone();
        tokio::spawn(async move {
            let ws = run.workspace();
            let mut changes = ChangeSet::new();
            changes
                .plan_write(ws, &ws.resolve(&format!("f{i}")).unwrap(), "x")
                .unwrap();
            run.apply(changes).await.unwrap()
        })
    });
    for (i, write) in writes.enumerate() {
        let applied = write.await.unwrap();
        assert_eq!(applied.notes, [format!("synced f{i}")]);
    }
    assert_eq!(tracker.before.load(Ordering::SeqCst), 8);
    assert_eq!(
        tracker.most.load(Ordering::SeqCst),
        1,
        "two writes of one run overlapped"
    );

    // An empty set runs no hook.
    let applied = run.apply(ChangeSet::new()).await.unwrap();
    assert_eq!(applied, Applied::default());
    assert_eq!(tracker.before.load(Ordering::SeqCst), 8);
}

#[test]
fn a_root_never_written_has_nothing_to_recover_and_gets_no_state() {
    state_dir();
    let dir = tempfile::tempdir().unwrap();
    let (ws, report) = open_workspace(dir.path()).unwrap();
    assert!(report.is_empty());
    assert_eq!(report.to_string(), "no interrupted write");
    assert!(journals(ws.root()).is_empty());
    assert!(files_under(ws.root()).is_empty());
}

// ---- Child processes -------------------------------------------------

/// Starts this test binary as a child playing `role` on `root`.
fn spawn_child(role: &str, root: &Path, extra: &[(&str, &str)]) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
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

/// The next protocol line of a child (libtest's own lines are skipped).
fn next_message(stdout: &mut BufReader<ChildStdout>) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert_ne!(stdout.read_line(&mut line).unwrap(), 0, "child ended early");
        // libtest may print `test child_entry ... ` on the same line.
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

/// Not a test of its own: the entry point of the child processes the
/// tests below start. Run without `GANTRY_TEST_CHILD` it does nothing.
#[test]
fn child_entry() {
    let Ok(role) = std::env::var("GANTRY_TEST_CHILD") else {
        return;
    };
    let root = PathBuf::from(std::env::var("GANTRY_TEST_ROOT").unwrap());
    let label = std::env::var("GANTRY_TEST_LABEL").unwrap_or_default();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let run = Run::builder(Workspace::new(&root).unwrap()).build();
        let ws = run.workspace();
        let shared = ws.resolve("shared.txt").unwrap();
        match role.as_str() {
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

#[tokio::test]
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

#[tokio::test]
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

#[tokio::test]
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

#[tokio::test]
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

#[tokio::test]
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
