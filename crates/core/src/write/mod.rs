//! The write path (SPEC §3): the one way any tool changes files.
//!
//! A writing tool builds a [`ChangeSet`] (for each path: created, modified,
//! deleted or renamed, with the new content and the content it was planned
//! against, whose [`ContentHash`] identifies it) and hands it to
//! [`Run::apply`], which
//!
//! 1. takes the run's write lock, so writes of one run never overlap and
//!    "what this write introduced" has a meaning;
//! 2. runs the before-write [`WriteHook`]s with the change set;
//! 3. applies it all-or-nothing and crash-safe: under a lock per workspace
//!    root shared by every Gantry process (`flock` on the root directory), every file is checked against
//!    the content it was planned against (one mismatch refuses the whole
//!    set, naming the files); the
//!    new contents go to temp files beside their targets, synced; a
//!    journal of every rename and delete, kept in
//!    [`state_dir`](crate::settings::state_dir) and never in the
//!    workspace, is marked committed; then the renames and deletes happen
//!    and the journal is removed. File modes are kept, and a symlink is
//!    written through: its target gets the content, the link stays a link
//!    (deleting a link removes the link, as `rm` does; moving one puts the
//!    content it points to at the destination and removes the link);
//! 4. runs the after-write hooks, whose texts ride along in [`Applied`] to
//!    be appended to the tool's result.
//!
//! A process that dies half-way leaves a journal behind. [`recover`]
//! (which [`open_workspace`] calls, and every apply runs first) finishes a
//! committed one and rolls back a pending one, so a root is always found
//! all-old or all-new.
//!
//! For tests only, the environment variable `GANTRY_FAILPOINT` makes an
//! apply abort the process at a chosen point: `before-commit` (temp files
//! written, journal not committed) or `after-first-rename` (between the
//! first rename and the others). Unset, it costs one environment lookup per
//! apply.
//!
//! ```
//! use gantry_core::write::ChangeSet;
//! use gantry_core::{Run, Workspace};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! # gantry_core::testing::state_dir(); // Journals away from the user's.
//! let dir = tempfile::tempdir().unwrap();
//! let run = Run::builder(Workspace::new(dir.path()).unwrap()).build();
//! let path = run.workspace().resolve("notes/todo.txt").unwrap();
//!
//! let mut changes = ChangeSet::new();
//! changes.plan_write(run.workspace(), &path, "ship it\n").unwrap();
//! let applied = run.apply(changes).await.unwrap();
//! assert_eq!(applied.changes[0].display, "notes/todo.txt");
//! assert_eq!(std::fs::read_to_string(&path).unwrap(), "ship it\n");
//! # });
//! ```

mod apply;
mod change;
mod journal;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

pub use change::{Change, ChangeKind, ChangeSet, ContentHash, read_current};
pub use journal::RecoveryReport;

use crate::run::Run;
use crate::tool::ToolError;
use crate::workspace::{NotRegular, PathError, Workspace};

/// Why a change set was not (entirely) applied. Every message is written
/// for the model and says whether anything was written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Files differ from what the change was planned against; nothing was
    /// written.
    #[error(
        "nothing was written: {} changed since the change was planned ({}); read {} again and redo the change",
        if files.len() == 1 { "a file" } else { "files" },
        files.join(", "),
        if files.len() == 1 { "it" } else { "them" }
    )]
    Stale {
        /// Workspace-relative paths of the files that changed.
        files: Vec<String>,
    },
    /// The change set itself cannot be applied (a path changed twice, a
    /// file to create that exists, a directory where a file was meant).
    #[error("{0}")]
    Plan(String),
    /// A path, or the target of a symlink, is outside the workspace;
    /// nothing was written.
    #[error("nothing was written: {0}")]
    Outside(String),
    /// The filesystem refused an operation.
    #[error(
        "{}cannot {action} {path}: {source}{}{}",
        if *committed { "" } else { "nothing was written: " },
        what_to_do(source),
        if *committed {
            "; the write was committed and is finished before the next write or when Gantry next opens this workspace"
        } else {
            ""
        }
    )]
    Io {
        /// The file (workspace-relative where possible).
        path: String,
        /// What was being done to it.
        action: &'static str,
        /// The OS error.
        source: io::Error,
        /// Whether the write was already committed (it will be finished).
        committed: bool,
    },
}

/// What the model can do about an OS error whose own words ("No space
/// left on device") leave it guessing.
fn what_to_do(error: &io::Error) -> &'static str {
    match error.kind() {
        io::ErrorKind::StorageFull => {
            " (the disk is full: nothing can be written until space is freed)"
        }
        io::ErrorKind::QuotaExceeded => " (the user's disk quota is used up)",
        io::ErrorKind::ReadOnlyFilesystem => {
            " (the file system is mounted read-only: no write can succeed here)"
        }
        _ if error.raw_os_error() == Some(rustix::io::Errno::MFILE.raw_os_error()) => {
            " (Gantry has as many files open as its limit allows, `ulimit -n`)"
        }
        _ => "",
    }
}

impl WriteError {
    pub(crate) fn io(
        workspace: &Workspace,
        path: &Path,
        action: &'static str,
        source: io::Error,
    ) -> Self {
        WriteError::Io {
            path: workspace.display(path),
            action,
            source,
            committed: false,
        }
    }

    /// An I/O failure of a workspace operation: a path the kernel refused
    /// as outside (a link leading out) is [`WriteError::Outside`], a FIFO
    /// or device is a [`WriteError::Plan`] refusal, anything else
    /// [`WriteError::Io`].
    pub(crate) fn from_io(
        workspace: &Workspace,
        path: &Path,
        action: &'static str,
        source: io::Error,
    ) -> Self {
        if let Some(refusal) = source.get_ref().and_then(|e| e.downcast_ref::<PathError>()) {
            return WriteError::Outside(refusal.to_string());
        }
        if let Some(special) = NotRegular::of(&source) {
            return WriteError::Plan(format!(
                "nothing was written: {} is {}; only regular files are written",
                workspace.display(path),
                special.kind
            ));
        }
        WriteError::io(workspace, path, action, source)
    }

    fn io_at(path: &Path, action: &'static str, source: io::Error) -> Self {
        WriteError::Io {
            path: path.display().to_string(),
            action,
            source,
            committed: false,
        }
    }
}

impl From<WriteError> for ToolError {
    fn from(error: WriteError) -> Self {
        ToolError::Failed(error.to_string())
    }
}

/// One file as it was changed.
#[derive(Debug, Clone, PartialEq)]
pub struct AppliedChange {
    /// The absolute path (for a rename, the destination).
    pub path: PathBuf,
    /// The path relative to the workspace, for output.
    pub display: String,
    /// What happened to it.
    pub kind: ChangeKind,
    /// The content it now has (`None` when deleted), so a hook can sync a
    /// language server without reading the file again.
    pub content: Option<Vec<u8>>,
}

/// What a [`Run::apply`] changed, and what the after-write hooks had to
/// say about it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// Every file changed, in the change set's order.
    pub changes: Vec<AppliedChange>,
    /// Texts of the after-write hooks (new diagnostics, say), to append to
    /// the tool's result.
    pub notes: Vec<String>,
}

/// Something that must know about writes: the language-server layer syncs
/// the files about to change and, after the write, reports the problems it
/// introduced. Registered with [`RunBuilder::write_hook`](crate::RunBuilder::write_hook);
/// hooks run in registration order, under the run's write lock, so a hook
/// must not call [`Run::apply`] itself.
#[async_trait]
pub trait WriteHook: Send + Sync + 'static {
    /// Called with the change set before it is applied (it may still be
    /// refused).
    async fn before_write(&self, _run: &Run, _changes: &ChangeSet) {}

    /// Called after the change set was applied; the text returned is
    /// appended to the tool's result. Must not fail the write: the files
    /// are already changed.
    async fn after_write(&self, _run: &Run, _applied: &Applied) -> Option<String> {
        None
    }
}

impl Run {
    /// Applies `changes` through the write path: write lock, before-write
    /// hooks, the all-or-nothing apply, after-write hooks.
    ///
    /// An empty change set writes nothing and runs no hook.
    pub async fn apply(&self, changes: ChangeSet) -> Result<Applied, WriteError> {
        if changes.is_empty() {
            return Ok(Applied::default());
        }
        let guard = self.inner.write_lock.clone().lock_owned().await;
        for hook in &self.inner.write_hooks {
            hook.before_write(self, &changes).await;
        }
        let workspace = self.workspace().clone();
        // What each file held, for the run log's diffs.
        let befores: Vec<Option<Vec<u8>>> = if self.log().is_on() {
            changes
                .changes()
                .iter()
                .map(|change| change.before().map(<[u8]>::to_vec))
                .collect()
        } else {
            Vec::new()
        };
        // The guard travels with the blocking work, so a caller that gives
        // up while the disk is busy does not let the next write start
        // before this one has finished.
        let (guard, outcome) = tokio::task::spawn_blocking(move || {
            let outcome = apply::apply(&workspace, changes.into_changes());
            (guard, outcome)
        })
        .await
        .map_err(|e| {
            WriteError::io_at(
                self.workspace().root(),
                "apply a change in",
                io::Error::other(e),
            )
        })?;
        let outcome = outcome?;
        let mut applied = Applied {
            changes: outcome.changes,
            notes: outcome.notes,
        };
        for (change, before) in applied.changes.iter().zip(befores) {
            let action = match change.kind {
                ChangeKind::Created => "create",
                ChangeKind::Modified => "modify",
                ChangeKind::Deleted => "delete",
                ChangeKind::Renamed { .. } => "rename",
            };
            self.log().file(crate::runlog::FileChange {
                path: change.display.clone(),
                action,
                before,
                after: change.content.clone(),
            });
        }
        for hook in &self.inner.write_hooks {
            if let Some(note) = hook.after_write(self, &applied).await {
                applied.notes.push(note);
            }
        }
        drop(guard);
        Ok(applied)
    }
}

impl Run {
    /// Waits until no write of the run is being applied. A write whose
    /// caller was cancelled after its apply began still finishes, all or
    /// nothing, on a blocking thread; a caller that stops someone's work
    /// (a worker's kill) waits for it here before saying nothing more is
    /// being written.
    pub async fn writes_settled(&self) {
        drop(self.inner.write_lock.lock().await);
    }
}

/// Finishes or rolls back whatever write a dead process left on `root`,
/// under the root's lock (`flock` on the root directory, which every
/// process on the root shares whatever its state directory). Cheap when there is nothing: a root no Gantry
/// process ever wrote to has no state at all.
pub fn recover(root: &Path) -> io::Result<RecoveryReport> {
    let workspace = Workspace::new(root)?;
    let Some(state) = journal::RootState::existing(workspace.root()) else {
        return Ok(RecoveryReport::default());
    };
    let _lock = workspace.lock()?;
    state.recover_locked(&workspace)
}

/// Opens a workspace the way every front end should (`mcp`, `session`,
/// `call`): the root is confined as by [`Workspace::new`], then any
/// interrupted write on it is recovered before a tool can read a file.
pub fn open_workspace(root: impl AsRef<Path>) -> io::Result<(Workspace, RecoveryReport)> {
    let workspace = Workspace::new(root)?;
    let report = recover(workspace.root())?;
    if !report.is_empty() {
        tracing::warn!(root = %workspace.root().display(), "{report}");
    }
    Ok((workspace, report))
}

/// Shared by the run: the lock its writes take and the hooks they run.
pub(crate) type WriteHooks = Vec<Arc<dyn WriteHook>>;

/// Applies `changes` in the user's own Gantry directory (`home`, opened
/// on [`crate::settings::gantry_home`]: the user's `~/.gantry/GANTRY.md`),
/// with the same all-or-nothing, journaled apply and per-root lock as a
/// run's, but no run lock and no hooks (no language server watches it).
/// Any other root is refused: workspace files go through [`Run::apply`],
/// whose lock and hooks (diagnostics on every write) this would skip.
pub async fn apply_in_gantry_home(
    home: &Workspace,
    changes: ChangeSet,
) -> Result<Applied, WriteError> {
    let gantry_home = crate::settings::gantry_home();
    if gantry_home.canonicalize().ok().as_deref() != Some(home.root()) {
        return Err(WriteError::io_at(
            home.root(),
            "apply a change outside a run in",
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "only Gantry's own directory ({}) is written outside a run",
                    gantry_home.display()
                ),
            ),
        ));
    }
    if changes.is_empty() {
        return Ok(Applied::default());
    }
    let workspace = home;
    let owned = workspace.clone();
    let outcome = tokio::task::spawn_blocking(move || apply::apply(&owned, changes.into_changes()))
        .await
        .map_err(|e| {
            WriteError::io_at(workspace.root(), "apply a change in", io::Error::other(e))
        })?;
    let outcome = outcome?;
    Ok(Applied {
        changes: outcome.changes,
        notes: outcome.notes,
    })
}
