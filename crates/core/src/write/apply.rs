//! The all-or-nothing, crash-safe apply of a change set (SPEC §3, step 4).

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use super::change::{Change, ChangeKind, Current, current};
use super::journal::{self, Journal, Rename, RootState, remove_if_present};
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

/// A directory of the apply, held open from the temp file's creation to
/// its rename (or removal): the rename happens in the directory the temp
/// file was made in, wherever a concurrent swap has put its name since.
struct HeldDir {
    path: PathBuf,
    handle: OwnedFd,
}

/// What an apply did: the changes, and what the person should know about
/// them beyond the diff (a hard link left behind).
pub(crate) struct Outcome {
    pub(crate) changes: Vec<AppliedChange>,
    pub(crate) notes: Vec<String>,
}

/// Applies `changes` to files under `workspace`, all or nothing, holding
/// the root's lock between processes.
// The write path itself: temporary files, directories and renames by handle beneath the workspace root.
#[allow(clippy::disallowed_methods)]
pub(crate) fn apply(workspace: &Workspace, changes: Vec<Change>) -> Result<Outcome, WriteError> {
    let failpoint = Failpoint::from_env();
    let root = workspace.root();
    let state_error = |action, e| WriteError::io_at(root, action, e);
    let state =
        RootState::create(root).map_err(|e| state_error("prepare the state directory for", e))?;
    let _lock = workspace.lock().map_err(|e| state_error("lock", e))?;
    let recovered = state
        .recover_locked(workspace)
        .map_err(|e| state_error("recover an interrupted write in", e))?;
    if !recovered.is_empty() {
        tracing::warn!(root = %root.display(), "{recovered}");
    }

    let notes = check(workspace, &changes)?;

    // Lay out every temp file, rename and delete before touching anything.
    let id = journal::unique_id();
    let mut plan = Journal::default();
    let mut writes = Vec::new();
    for (index, change) in changes.iter().enumerate() {
        if change.after().is_some() {
            let target = workspace.real_path(change.path()).map_err(|e| {
                WriteError::from_io(workspace, change.path(), "follow the links of", e)
            })?;
            let dir = target.parent().unwrap_or(root).to_path_buf();
            // Cut, so a long name plus the suffix stays within NAME_MAX.
            let name: String = target
                .file_name()
                .map(|n| n.to_string_lossy().chars().take(64).collect())
                .unwrap_or_default();
            let temp = dir.join(format!(".{name}.gantry-{id}-{index}.tmp"));
            for missing in missing_dirs(workspace, &dir) {
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
    plan.extra_roots = workspace.extra_roots().map(Path::to_path_buf).collect();

    let pending = state
        .write_pending(&id, &plan)
        .map_err(|e| state_error("write the journal for", e))?;
    let mut held = Vec::new();
    if let Err(error) = write_temps(workspace, &plan, &writes, &changes, &mut held) {
        roll_back_held(&plan, &held);
        plan.roll_back(workspace);
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
    for (index, (rename, write)) in plan.renames.iter().zip(&writes).enumerate() {
        let dir = held_dir(&held, &write.temp);
        rustix::fs::renameat(dir, file_name(&rename.temp), dir, file_name(&rename.target))
            .map_err(|e| after_commit(&rename.target, "replace", e.into()))?;
        if index == 0 {
            failpoint.hit(Failpoint::AfterFirstRename);
        }
    }
    for path in &plan.deletes {
        remove_if_present(workspace, path).map_err(|e| after_commit(path, "delete", e))?;
    }
    plan.sync_parents(workspace)
        .map_err(|e| after_commit(root, "sync", e))?;
    committed
        .remove()
        .map_err(|e| after_commit(root, "remove the journal of", e))?;

    Ok(Outcome {
        changes: changes
            .into_iter()
            .map(|change| AppliedChange {
                display: workspace.display(change.path()),
                path: change.path().to_path_buf(),
                kind: change.kind().clone(),
                content: change.into_after(),
            })
            .collect(),
        notes,
    })
}

/// Refuses the whole set when any file differs from what it was planned
/// against (compared byte for byte with the planned-against content),
/// naming every such file. Returns a note for each file with other hard
/// links, which a replace by rename leaves behind with the old content.
fn check(workspace: &Workspace, changes: &[Change]) -> Result<Vec<String>, WriteError> {
    let mut stale = Vec::new();
    let mut notes = Vec::new();
    for change in changes {
        // Every path was confined when the change was planned, and every
        // open below is confined by the kernel: no second resolve here.
        let source = change.source();
        let now = current(workspace, source)?;
        if now.as_ref().map(|c| c.bytes.as_slice()) != change.before() {
            stale.push(workspace.display(source));
        }
        if let Some(Current { links, .. }) = now
            && links > 1
            && matches!(change.kind(), ChangeKind::Modified)
        {
            notes.push(format!(
                "note: {} had {links} hard links; this write replaced the workspace's link, and \
                 the other {} the old content",
                workspace.display(source),
                if links == 2 {
                    "link keeps"
                } else {
                    "links keep"
                }
            ));
        }
        if matches!(change.kind(), ChangeKind::Renamed { .. })
            && current(workspace, change.path())?.is_some()
        {
            stale.push(workspace.display(change.path()));
        }
    }
    if stale.is_empty() {
        Ok(notes)
    } else {
        Err(WriteError::Stale { files: stale })
    }
}

/// The held directory a temp file was made in.
fn held_dir<'a>(held: &'a [HeldDir], temp: &Path) -> &'a OwnedFd {
    let parent = temp.parent().unwrap_or(Path::new("/"));
    &held
        .iter()
        .find(|dir| dir.path == parent)
        .expect("every temp file's directory is held")
        .handle
}

/// Removes the temp files already made, through the directories they were
/// made in (their names may have been swapped away since).
// The write path itself: temporary files, directories and renames by handle beneath the workspace root.
#[allow(clippy::disallowed_methods)]
fn roll_back_held(plan: &Journal, held: &[HeldDir]) {
    for rename in &plan.renames {
        let parent = rename.temp.parent().unwrap_or(Path::new("/"));
        if let Some(dir) = held.iter().find(|dir| dir.path == parent) {
            let _ = rustix::fs::unlinkat(
                &dir.handle,
                file_name(&rename.temp),
                rustix::fs::AtFlags::empty(),
            );
        }
    }
}

fn file_name(path: &Path) -> &std::ffi::OsStr {
    path.file_name().unwrap_or_default()
}

/// Writes and syncs every temp file, creating what directories are
/// missing; every directory used is opened beneath the root and held in
/// `held` until the renames are done.
// The write path itself: temporary files, directories and renames by handle beneath the workspace root.
#[allow(clippy::disallowed_methods)]
fn write_temps(
    workspace: &Workspace,
    plan: &Journal,
    writes: &[TempWrite],
    changes: &[Change],
    held: &mut Vec<HeldDir>,
) -> Result<(), WriteError> {
    for dir in &plan.dirs {
        let made = workspace.parent_of(dir).and_then(|(parent, name)| {
            match rustix::fs::mkdirat(&parent, &name, Mode::from_raw_mode(0o777)) {
                Err(rustix::io::Errno::EXIST) => Ok(()),
                other => other.map_err(io::Error::from),
            }
        });
        made.map_err(|e| WriteError::from_io(workspace, dir, "create the directory", e))?;
    }
    let contents = changes.iter().filter_map(Change::after);
    for (write, content) in writes.iter().zip(contents) {
        let fail = |e| WriteError::from_io(workspace, &write.target, "write", e);
        let parent = write.temp.parent().unwrap_or(Path::new("/"));
        if !held.iter().any(|dir| dir.path == parent) {
            let (handle, _) = workspace.parent_of(&write.temp).map_err(fail)?;
            held.push(HeldDir {
                path: parent.to_path_buf(),
                handle,
            });
        }
        let dir = held_dir(held, &write.temp);
        let mut file = File::from(
            rustix::fs::openat(
                dir,
                file_name(&write.temp),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                // A new file gets what the umask allows, as an editor's
                // does; a replacement starts private and takes the old
                // file's mode below.
                Mode::from_raw_mode(if write.permissions_of.is_some() {
                    0o600
                } else {
                    0o666
                }),
            )
            .map_err(|e| fail(e.into()))?,
        );
        if let Some(source) = &write.permissions_of {
            let metadata = workspace.metadata(source).map_err(fail)?;
            file.set_permissions(metadata.permissions()).map_err(fail)?;
            keep_owner(&file, &metadata);
        }
        file.write_all(content).map_err(fail)?;
        file.sync_all().map_err(fail)?;
    }
    for dir in held.iter() {
        rustix::fs::fsync(&dir.handle)
            .map_err(|e| WriteError::from_io(workspace, &dir.path, "sync", e.into()))?;
    }
    Ok(())
}

/// Gives the temp file the replaced file's owner where we may (running as
/// root on someone's checkout); elsewhere the file is ours anyway.
fn keep_owner(file: &File, metadata: &std::fs::Metadata) {
    if let Ok(own) = file.metadata()
        && (own.uid(), own.gid()) != (metadata.uid(), metadata.gid())
    {
        let _ = std::os::unix::fs::fchown(file, Some(metadata.uid()), Some(metadata.gid()));
    }
}

/// The directories above a new file that do not exist yet, innermost
/// first.
fn missing_dirs(workspace: &Workspace, dir: &Path) -> Vec<PathBuf> {
    dir.ancestors()
        .take_while(|d| workspace.symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect()
}
