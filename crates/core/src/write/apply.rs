//! The all-or-nothing, crash-safe apply of a change set (SPEC §3, step 4).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::change::{Change, ChangeKind, confine, read_current};
use super::journal::{self, Journal, Rename, RootState, remove_if_present, sync_dir};
use super::{AppliedChange, WriteError};
use crate::workspace::Workspace;

/// Test-only crash injection, read from `GANTRY_FAILPOINT` once per apply.
/// Unset (always, outside tests) it changes nothing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Failpoint {
    None,
    /// `before-commit`: abort once the temp files are durable and the
    /// journal is still pending (recovery must roll back: all old).
    BeforeCommit,
    /// `after-first-rename`: abort between the first rename and the rest
    /// (recovery must finish: all new).
    AfterFirstRename,
}

impl Failpoint {
    fn from_env() -> Self {
        match std::env::var_os("GANTRY_FAILPOINT") {
            Some(value) if value == "before-commit" => Failpoint::BeforeCommit,
            Some(value) if value == "after-first-rename" => Failpoint::AfterFirstRename,
            _ => Failpoint::None,
        }
    }

    fn hit(self, here: Failpoint) {
        if self == here {
            std::process::abort();
        }
    }
}

/// Where one change writes: the real file behind a symlink, the temp file
/// beside it, and whose permissions the temp file takes.
struct TempWrite {
    temp: PathBuf,
    target: PathBuf,
    permissions_of: Option<PathBuf>,
}

/// Applies `changes` to files under `workspace`, all or nothing, holding
/// the root's lock between processes.
pub(crate) fn apply(
    workspace: &Workspace,
    changes: Vec<Change>,
) -> Result<Vec<AppliedChange>, WriteError> {
    let failpoint = Failpoint::from_env();
    let root = workspace.root();
    let state_error = |action, e| WriteError::io_at(root, action, e);
    let state =
        RootState::create(root).map_err(|e| state_error("prepare the state directory for", e))?;
    let _lock = state.lock().map_err(|e| state_error("lock", e))?;
    let recovered = state
        .recover_locked()
        .map_err(|e| state_error("recover an interrupted write in", e))?;
    if !recovered.is_empty() {
        tracing::warn!(root = %root.display(), "{recovered}");
    }

    check(workspace, &changes)?;

    // Lay out every temp file, rename and delete before touching anything.
    let id = journal::unique_id();
    let mut plan = Journal::default();
    let mut writes = Vec::new();
    for (index, change) in changes.iter().enumerate() {
        if change.after().is_some() {
            let target = real_target(change.path())
                .map_err(|e| WriteError::io(workspace, change.path(), "resolve", e))?;
            confine(workspace, &target)?;
            let dir = target.parent().unwrap_or(root).to_path_buf();
            // Cut, so a long name plus the suffix stays within NAME_MAX.
            let name: String = target
                .file_name()
                .map(|n| n.to_string_lossy().chars().take(64).collect())
                .unwrap_or_default();
            let temp = dir.join(format!(".{name}.gantry-{id}-{index}.tmp"));
            for missing in missing_dirs(&dir) {
                if !plan.dirs.contains(&missing) {
                    plan.dirs.push(missing);
                }
            }
            let permissions_of = match change.kind() {
                ChangeKind::Created => None,
                ChangeKind::Renamed { from } => Some(from.clone()),
                ChangeKind::Modified | ChangeKind::Deleted => Some(target.clone()),
            };
            plan.renames.push(Rename {
                temp: temp.clone(),
                target: target.clone(),
            });
            writes.push(TempWrite {
                temp,
                target,
                permissions_of,
            });
        }
        match change.kind() {
            ChangeKind::Deleted => plan.deletes.push(change.path().to_path_buf()),
            ChangeKind::Renamed { from } => plan.deletes.push(from.clone()),
            ChangeKind::Created | ChangeKind::Modified => {}
        }
    }
    plan.dirs.sort_by_key(|d| d.components().count());

    let pending = state
        .write_pending(&id, &plan)
        .map_err(|e| state_error("write the journal for", e))?;
    if let Err(error) = write_temps(workspace, &plan, &writes, &changes) {
        plan.roll_back();
        let _ = pending.discard();
        return Err(error);
    }
    failpoint.hit(Failpoint::BeforeCommit);
    let committed = pending
        .commit()
        .map_err(|e| state_error("commit the journal for", e))?;

    // Committed: from here on, whoever finds the journal finishes it.
    let after_commit = |path: &Path, action, e| WriteError::Io {
        path: workspace.display(path),
        action,
        source: e,
        committed: true,
    };
    for (index, rename) in plan.renames.iter().enumerate() {
        fs::rename(&rename.temp, &rename.target)
            .map_err(|e| after_commit(&rename.target, "replace", e))?;
        if index == 0 {
            failpoint.hit(Failpoint::AfterFirstRename);
        }
    }
    for path in &plan.deletes {
        remove_if_present(path).map_err(|e| after_commit(path, "delete", e))?;
    }
    plan.sync_parents()
        .map_err(|e| after_commit(root, "sync", e))?;
    committed
        .remove()
        .map_err(|e| after_commit(root, "remove the journal of", e))?;

    Ok(changes
        .into_iter()
        .map(|change| AppliedChange {
            display: workspace.display(change.path()),
            path: change.path().to_path_buf(),
            kind: change.kind().clone(),
            content: change.into_after(),
        })
        .collect())
}

/// Refuses the whole set when any file differs from what it was planned
/// against (compared byte for byte with the planned-against content),
/// naming every such file.
fn check(workspace: &Workspace, changes: &[Change]) -> Result<(), WriteError> {
    let mut stale = Vec::new();
    for change in changes {
        confine(workspace, change.path())?;
        let source = change.source();
        if source != change.path() {
            confine(workspace, source)?;
        }
        let now = read_current(workspace, source)?;
        if now.as_deref() != change.before() {
            stale.push(workspace.display(source));
        }
        if matches!(change.kind(), ChangeKind::Renamed { .. })
            && read_current(workspace, change.path())?.is_some()
        {
            stale.push(workspace.display(change.path()));
        }
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(WriteError::Stale { files: stale })
    }
}

/// Writes and syncs every temp file and the directories holding them.
fn write_temps(
    workspace: &Workspace,
    plan: &Journal,
    writes: &[TempWrite],
    changes: &[Change],
) -> Result<(), WriteError> {
    for dir in &plan.dirs {
        match fs::create_dir(dir) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                return Err(WriteError::io(workspace, dir, "create the directory", e));
            }
            _ => {}
        }
    }
    let contents = changes.iter().filter_map(Change::after);
    for (write, content) in writes.iter().zip(contents) {
        let fail = |e| WriteError::io(workspace, &write.target, "write", e);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&write.temp)
            .map_err(fail)?;
        if let Some(source) = &write.permissions_of {
            let metadata = fs::metadata(source).map_err(fail)?;
            file.set_permissions(metadata.permissions()).map_err(fail)?;
            keep_owner(&file, &metadata);
        }
        file.write_all(content).map_err(fail)?;
        file.sync_all().map_err(fail)?;
    }
    let mut dirs: Vec<&Path> = writes.iter().filter_map(|w| w.temp.parent()).collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        sync_dir(dir).map_err(|e| WriteError::io(workspace, dir, "sync", e))?;
    }
    Ok(())
}

/// Gives the temp file the replaced file's owner where we may (running as
/// root on someone's checkout); elsewhere the file is ours anyway.
#[cfg(unix)]
fn keep_owner(file: &fs::File, metadata: &fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    if let Ok(own) = file.metadata()
        && (own.uid(), own.gid()) != (metadata.uid(), metadata.gid())
    {
        let _ = std::os::unix::fs::fchown(file, Some(metadata.uid()), Some(metadata.gid()));
    }
}

#[cfg(not(unix))]
fn keep_owner(_: &fs::File, _: &fs::Metadata) {}

/// The file a write to `path` lands in: `path` itself, or, when it is a
/// symlink (even a dangling one), the file it finally points to. The link
/// stays a link.
fn real_target(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                // `..` in the link is taken from where the link really is.
                let parent = current.parent().unwrap_or(Path::new("/"));
                let base = parent
                    .canonicalize()
                    .unwrap_or_else(|_| parent.to_path_buf());
                current = normalize(&base.join(link));
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        "too many levels of symbolic links",
    ))
}

/// Removes `.` and resolves `..` lexically, as a symlink's target is read.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The directories above a new file that do not exist yet, innermost
/// first.
fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    dir.ancestors()
        .take_while(|d| fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect()
}
