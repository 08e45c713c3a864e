//! The write path against real files: all-or-nothing, symlinks, modes
//! and hooks, in one process (`across_processes.rs` has the crashes and
//! races between processes).

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gantry_core::testing::{read, state_dir};
use gantry_core::write::{
    Applied, Change, ChangeKind, ChangeSet, WriteError, WriteHook, apply_in_gantry_home,
    open_workspace,
};
use gantry_core::{Run, Workspace, async_trait};

mod common;

use common::{OLD_FILES, files_under, four_changes, journals, set, workspace_with};

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
