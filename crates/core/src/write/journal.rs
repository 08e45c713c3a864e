//! The per-root state of the write path, kept in Gantry's state directory
//! (never the workspace): the lock two processes take before touching the
//! root, and the journals of applies that have not finished.
//!
//! A journal lists every temp file, rename and delete of one apply. It is
//! first written as `<id>.pending` (before any temp file exists) and then
//! atomically renamed to `<id>.committed` once every temp file is durable.
//! Whoever holds the root's lock and finds a journal knows its writer died:
//! a committed one is finished (its renames and deletes, each skipped when
//! already done), a pending one is rolled back (its temp files and the
//! directories made for them removed).

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::settings::state_dir;
use crate::state::root_key;
use crate::workspace::Workspace;

const PENDING: &str = "pending";
const COMMITTED: &str = "committed";

/// Numbers journals and temp files of this process apart.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// A name no other apply (in this or another process) uses.
pub(crate) fn unique_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    )
}

/// The state directory every Gantry process of this user shares, whatever
/// `GANTRY_STATE_DIR` says: where a process with a state directory of its
/// own leaves word of its journals, so that any process on the root finds
/// and recovers them.
fn shared_state_dir() -> PathBuf {
    dirs::state_dir()
        .or_else(dirs::cache_dir)
        .map(|dir| dir.join("gantry"))
        .unwrap_or_else(|| std::env::temp_dir().join("gantry-state"))
}

/// The root's state directory: its journals, and the word it leaves in the
/// shared state directory while it may hold any.
pub(crate) struct RootState {
    dir: PathBuf,
    /// The root's directory in the shared state directory, where the
    /// beacons of every other state directory are found.
    shared: PathBuf,
    /// This state directory's beacon in `shared/elsewhere` (a file naming
    /// `dir`), lit before our first journal and left while `dir` exists;
    /// `None` when ours is the shared state directory.
    beacon: Option<PathBuf>,
}

impl RootState {
    fn of(root: &Path) -> Self {
        let key = root_key(root);
        let dir = state_dir().join("roots").join(&key);
        let shared = shared_state_dir().join("roots").join(&key);
        let beacon = (shared != dir).then(|| {
            shared
                .join("elsewhere")
                .join(root_key(dir.as_os_str().as_ref()))
        });
        RootState {
            dir,
            shared,
            beacon,
        }
    }

    /// Opens (creating) the state directory of `root`.
    // The write path's journals, in the state directory (never the workspace).
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn create(root: &Path) -> io::Result<Self> {
        let state = RootState::of(root);
        fs::create_dir_all(&state.dir)?;
        let note = state.dir.join("root");
        if !note.exists() {
            // For people looking at the state directory: which root is this.
            fs::write(&note, root.as_os_str().as_encoded_bytes())?;
        }
        Ok(state)
    }

    /// The state of `root` only if some process (with this or another
    /// state directory) may have left a journal for it.
    pub(crate) fn existing(root: &Path) -> Option<Self> {
        let state = RootState::of(root);
        (state.dir.is_dir() || state.shared.join("elsewhere").is_dir()).then_some(state)
    }

    /// Every directory that may hold journals of this root: ours, the
    /// shared one, and each one a beacon names.
    fn journal_dirs(&self) -> Vec<(PathBuf, Option<PathBuf>)> {
        let mut dirs = vec![(self.dir.clone(), self.beacon.clone())];
        if self.shared != self.dir {
            dirs.push((self.shared.clone(), None));
        }
        if let Ok(entries) = fs::read_dir(self.shared.join("elsewhere")) {
            for beacon in entries.filter_map(|e| e.ok().map(|e| e.path())) {
                if let Ok(named) = fs::read(&beacon) {
                    let dir = PathBuf::from(std::ffi::OsStr::from_bytes(&named));
                    if !dirs.iter().any(|(known, _)| *known == dir) {
                        dirs.push((dir, Some(beacon)));
                    }
                }
            }
        }
        dirs
    }

    /// Leaves word of our journals in the shared state directory before
    /// the first one is written, durably.
    // The write path's journals, in the state directory (never the workspace).
    #[allow(clippy::disallowed_methods)]
    fn light_beacon(&self) -> io::Result<()> {
        let Some(beacon) = &self.beacon else {
            return Ok(());
        };
        if beacon.exists() {
            return Ok(());
        }
        let parent = beacon.parent().expect("a beacon lives in a folder");
        fs::create_dir_all(parent)?;
        let mut file = File::create(beacon)?;
        file.write_all(self.dir.as_os_str().as_bytes())?;
        file.sync_all()?;
        sync_dir(parent)
    }

    /// Writes `journal` as pending, durably, before any temp file exists.
    // The write path's journals, in the state directory (never the workspace).
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn write_pending(&self, id: &str, journal: &Journal) -> io::Result<PendingJournal> {
        self.light_beacon()?;
        let path = self.dir.join(format!("{id}.{PENDING}"));
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        file.write_all(&serde_json::to_vec(journal)?)?;
        file.sync_all()?;
        sync_dir(&self.dir)?;
        Ok(PendingJournal {
            dir: self.dir.clone(),
            id: id.to_string(),
        })
    }

    /// Finishes committed journals and rolls back pending ones, each
    /// through handles on the roots it names. The caller holds the root's
    /// lock ([`Workspace::lock`]).
    pub(crate) fn recover_locked(&self, workspace: &Workspace) -> io::Result<RecoveryReport> {
        let mut report = RecoveryReport::default();
        for (dir, beacon) in self.journal_dirs() {
            recover_dir(&dir, workspace, &mut report)?;
            // A beacon stays while its state directory does (lighting it
            // costs two syncs, so it is lit once, not per write); one
            // whose directory is gone (a test's temp state) goes.
            if let Some(beacon) = beacon
                && !dir.exists()
            {
                put_out(&beacon);
            }
        }
        Ok(report)
    }
}

/// Removes `beacon`, and the shared folders it leaves empty.
// The write path's journals, in the state directory (never the workspace).
#[allow(clippy::disallowed_methods)]
fn put_out(beacon: &Path) {
    if fs::remove_file(beacon).is_ok() {
        let elsewhere = beacon.parent().expect("a beacon lives in a folder");
        if fs::remove_dir(elsewhere).is_ok() {
            let _ = elsewhere.parent().map(fs::remove_dir);
        }
    }
}

/// The journals in `dir`, pending or committed, in name order.
fn journals_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut journals: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            matches!(
                path.extension().and_then(|e| e.to_str()),
                Some(PENDING | COMMITTED)
            )
        })
        .collect();
    journals.sort();
    journals
}

/// Finishes the committed journals in `dir` and rolls back the pending
/// ones.
fn recover_dir(dir: &Path, workspace: &Workspace, report: &mut RecoveryReport) -> io::Result<()> {
    for path in journals_in(dir) {
        let committed = path.extension().is_some_and(|e| e == COMMITTED);
        let journal = fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Journal>(&bytes).ok());
        match (journal, committed) {
            (Some(journal), true) => {
                journal.finish(&journal.workspace(workspace))?;
                report.completed.extend(journal.paths());
            }
            (Some(journal), false) => {
                report
                    .rolled_back
                    .extend(journal.roll_back(&journal.workspace(workspace)));
            }
            // A pending journal cut short by the crash: no temp file was
            // made before it was durable, so there is nothing to undo.
            (None, false) => {}
            (None, true) => {
                let aside = path.with_extension("unreadable");
                // The write path's journals, in the state directory (never the workspace).
                #[allow(clippy::disallowed_methods)]
                fs::rename(&path, &aside)?;
                report.unreadable.push(aside);
                continue;
            }
        }
        // The write path's journals, in the state directory (never the workspace).
        #[allow(clippy::disallowed_methods)]
        fs::remove_file(&path)?;
    }
    Ok(())
}

/// A journal written as pending, to be committed or rolled back.
pub(crate) struct PendingJournal {
    dir: PathBuf,
    id: String,
}

impl PendingJournal {
    fn path(&self, state: &str) -> PathBuf {
        self.dir.join(format!("{}.{state}", self.id))
    }

    /// Marks the journal committed: from here on the apply is finished by
    /// whoever finds it.
    // The write path's journals, in the state directory (never the workspace).
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn commit(self) -> io::Result<CommittedJournal> {
        fs::rename(self.path(PENDING), self.path(COMMITTED))?;
        sync_dir(&self.dir)?;
        Ok(CommittedJournal { inner: self })
    }

    /// Drops a journal whose apply was undone.
    // The write path's journals, in the state directory (never the workspace).
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn discard(self) -> io::Result<()> {
        fs::remove_file(self.path(PENDING))
    }
}

/// A committed journal, removed once every rename and delete is done.
pub(crate) struct CommittedJournal {
    inner: PendingJournal,
}

impl CommittedJournal {
    /// Removes the journal. Not synced: the next apply's own journal syncs
    /// the directory before it touches a file, and replaying a finished
    /// journal changes nothing.
    // The write path's journals, in the state directory (never the workspace).
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn remove(self) -> io::Result<()> {
        fs::remove_file(self.inner.path(COMMITTED))
    }
}

/// One rename of an apply: a temp file onto its target.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Rename {
    pub(crate) temp: PathBuf,
    pub(crate) target: PathBuf,
}

/// What one apply does, in the order it does it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Journal {
    /// Directories made for new files, outermost first.
    pub(crate) dirs: Vec<PathBuf>,
    pub(crate) renames: Vec<Rename>,
    pub(crate) deletes: Vec<PathBuf>,
    /// The extra roots the apply's workspace had, so recovery reaches
    /// files under them through handles of their own.
    #[serde(default)]
    pub(crate) extra_roots: Vec<PathBuf>,
}

impl Journal {
    /// The workspace to recover through: `workspace` with the extra roots
    /// the apply had.
    fn workspace(&self, workspace: &Workspace) -> Workspace {
        workspace.clone().with_extra_roots(self.extra_roots.clone())
    }

    /// Does what is left of a committed apply. Every step is skipped when
    /// already done, so finishing twice is harmless.
    pub(crate) fn finish(&self, workspace: &Workspace) -> io::Result<()> {
        for rename in &self.renames {
            if workspace.symlink_metadata(&rename.temp).is_ok() {
                workspace.rename(&rename.temp, &rename.target)?;
            }
        }
        for path in &self.deletes {
            remove_if_present(workspace, path)?;
        }
        self.sync_parents(workspace)
    }

    /// Undoes an uncommitted apply: its temp files and new directories go.
    /// Returns the temp files that were there.
    pub(crate) fn roll_back(&self, workspace: &Workspace) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        for rename in &self.renames {
            if workspace.remove_file(&rename.temp).is_ok() {
                removed.push(rename.temp.clone());
            }
        }
        // Only empty ones: anything put there since is not ours to remove.
        for dir in self.dirs.iter().rev() {
            let _ = workspace.remove_dir(dir);
        }
        removed
    }

    /// Makes the renames and deletes durable.
    pub(crate) fn sync_parents(&self, workspace: &Workspace) -> io::Result<()> {
        let mut parents: Vec<&Path> = self
            .renames
            .iter()
            .map(|r| r.target.as_path())
            .chain(self.deletes.iter().map(PathBuf::as_path))
            .filter_map(Path::parent)
            .collect();
        parents.sort();
        parents.dedup();
        parents
            .into_iter()
            .try_for_each(|dir| workspace.sync_dir(dir))
    }

    fn paths(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.renames
            .iter()
            .map(|r| r.target.clone())
            .chain(self.deletes.iter().cloned())
    }
}

/// Removes a file or link; absent is fine.
pub(crate) fn remove_if_present(workspace: &Workspace, path: &Path) -> io::Result<()> {
    match workspace.remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Makes a directory of the state directory durable (a journal written,
/// committed or removed in it).
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// What [`recover`](super::recover) found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Files of interrupted writes that were committed and are now
    /// finished (their new content is in place, or they are deleted).
    pub completed: Vec<PathBuf>,
    /// Temp files of interrupted writes that were not committed and are
    /// now removed; their targets kept the old content.
    pub rolled_back: Vec<PathBuf>,
    /// Journals that could not be read, set aside beside where they were
    /// for a person to look at.
    pub unreadable: Vec<PathBuf>,
}

impl RecoveryReport {
    /// Whether there was nothing to recover.
    pub fn is_empty(&self) -> bool {
        self.completed.is_empty() && self.rolled_back.is_empty() && self.unreadable.is_empty()
    }
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("no interrupted write");
        }
        let list = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.completed.is_empty() {
            parts.push(format!(
                "finished an interrupted write of {}",
                list(&self.completed)
            ));
        }
        if !self.rolled_back.is_empty() {
            parts.push(format!(
                "rolled back an uncommitted write (removed {})",
                list(&self.rolled_back)
            ));
        }
        if !self.unreadable.is_empty() {
            parts.push(format!(
                "set aside unreadable journals: {}",
                list(&self.unreadable)
            ));
        }
        f.write_str(&parts.join("; "))
    }
}
