//! Change sets: what a writing tool means to do, planned against the
//! content it saw.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::WriteError;
use crate::workspace::Workspace;

/// The SHA-256 of a file's content. A change is planned against a content
/// (whose hash this is), so a file that changed in between (by the user's
/// editor, another run, a confirmation that took a while) is noticed
/// instead of overwritten. Also names a workspace root in the state
/// directory.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentHash([u8; 32]);

impl ContentHash {
    /// Hashes `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        ContentHash(Sha256::digest(bytes).into())
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

impl fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentHash({self})")
    }
}

/// What a change does to its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeKind {
    /// The path was absent and gets content.
    Created,
    /// The path had content and gets new content.
    Modified,
    /// The path had content and goes away.
    Deleted,
    /// The content moves from `from` (which goes away) to the path, possibly
    /// changed on the way.
    Renamed {
        /// Where the content was.
        from: PathBuf,
    },
}

impl ChangeKind {
    /// The one-letter code of `git status` (A, M, D, R), for summaries.
    pub fn letter(&self) -> char {
        match self {
            ChangeKind::Created => 'A',
            ChangeKind::Modified => 'M',
            ChangeKind::Deleted => 'D',
            ChangeKind::Renamed { .. } => 'R',
        }
    }
}

/// One path's part of a [`ChangeSet`].
///
/// Built with [`Change::created`], [`Change::modified`], [`Change::deleted`]
/// or [`Change::renamed`] from content the caller already read (so the
/// check is against exactly what it planned with), or by the `plan_*` helpers of
/// [`ChangeSet`], which read the file themselves.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    path: PathBuf,
    kind: ChangeKind,
    before: Option<Vec<u8>>,
    after: Option<Vec<u8>>,
}

impl Change {
    /// A new file at `path`, planned against its absence.
    pub fn created(path: impl Into<PathBuf>, content: impl Into<Vec<u8>>) -> Self {
        Change {
            path: path.into(),
            kind: ChangeKind::Created,
            before: None,
            after: Some(content.into()),
        }
    }

    /// New content for `path`, planned against `before`.
    pub fn modified(
        path: impl Into<PathBuf>,
        before: impl Into<Vec<u8>>,
        after: impl Into<Vec<u8>>,
    ) -> Self {
        Change {
            path: path.into(),
            kind: ChangeKind::Modified,
            before: Some(before.into()),
            after: Some(after.into()),
        }
    }

    /// Removes `path`, planned against `before`.
    pub fn deleted(path: impl Into<PathBuf>, before: impl Into<Vec<u8>>) -> Self {
        Change {
            path: path.into(),
            kind: ChangeKind::Deleted,
            before: Some(before.into()),
            after: None,
        }
    }

    /// Moves `from` (planned against `before`) to `to` (planned absent)
    /// with content `after`, which may equal `before`.
    pub fn renamed(
        from: impl Into<PathBuf>,
        to: impl Into<PathBuf>,
        before: impl Into<Vec<u8>>,
        after: impl Into<Vec<u8>>,
    ) -> Self {
        Change {
            path: to.into(),
            kind: ChangeKind::Renamed { from: from.into() },
            before: Some(before.into()),
            after: Some(after.into()),
        }
    }

    /// The path that ends up with the new content (for a rename: the
    /// destination; for a delete: the path removed).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the change does.
    pub fn kind(&self) -> &ChangeKind {
        &self.kind
    }

    /// The content the change was planned against (of the source, for a
    /// rename); `None` when it was planned against an absent file.
    pub fn before(&self) -> Option<&[u8]> {
        self.before.as_deref()
    }

    /// The hash of [`Change::before`]: what the change was planned
    /// against, as an identity to log or compare (`None`: planned absent).
    /// The apply itself compares the file with [`Change::before`], which is
    /// as strict and cheaper than hashing both.
    pub fn planned_against(&self) -> Option<ContentHash> {
        self.before.as_deref().map(ContentHash::of)
    }

    /// The new content; `None` for a delete.
    pub fn after(&self) -> Option<&[u8]> {
        self.after.as_deref()
    }

    /// The path whose content was planned against: the source of a
    /// rename, else the path itself.
    pub fn source(&self) -> &Path {
        match &self.kind {
            ChangeKind::Renamed { from } => from,
            _ => &self.path,
        }
    }

    pub(crate) fn into_after(self) -> Option<Vec<u8>> {
        self.after
    }
}

/// Every file one tool call changes, applied together or not at all
/// (SPEC §3). Paths are absolute and inside the workspace (as returned by
/// [`Workspace::resolve`]); each path is touched by at most one change,
/// counting the sources of renames, so the order of the changes never
/// matters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChangeSet {
    changes: Vec<Change>,
}

impl ChangeSet {
    /// An empty change set.
    pub fn new() -> Self {
        ChangeSet::default()
    }

    /// Adds a change built from content the caller read itself.
    ///
    /// Refused when the change touches a path another change of the set
    /// already touches, or a path outside `workspace`.
    pub fn push(&mut self, workspace: &Workspace, change: Change) -> Result<(), WriteError> {
        for path in touched(&change) {
            confine(workspace, path)?;
            if self
                .changes
                .iter()
                .any(|other| touched(other).any(|p| p == path))
            {
                return Err(WriteError::Plan(format!(
                    "{} is changed twice in one change set; combine the changes to it",
                    workspace.display(path)
                )));
            }
        }
        self.changes.push(change);
        Ok(())
    }

    /// Plans `content` for `path`: a creation when the path is absent,
    /// else a modification planned against what is there now.
    pub fn plan_write(
        &mut self,
        workspace: &Workspace,
        path: &Path,
        content: impl Into<Vec<u8>>,
    ) -> Result<(), WriteError> {
        let change = match read_current(workspace, path)? {
            None => Change::created(path, content),
            Some(before) => Change::modified(path, before, content),
        };
        self.push(workspace, change)
    }

    /// Plans a new file; refused when `path` already exists.
    pub fn plan_create(
        &mut self,
        workspace: &Workspace,
        path: &Path,
        content: impl Into<Vec<u8>>,
    ) -> Result<(), WriteError> {
        if read_current(workspace, path)?.is_some() {
            return Err(WriteError::Plan(format!(
                "{} already exists",
                workspace.display(path)
            )));
        }
        self.push(workspace, Change::created(path, content))
    }

    /// Plans removing `path`, planned against what is there now; refused
    /// when it does not exist.
    pub fn plan_delete(&mut self, workspace: &Workspace, path: &Path) -> Result<(), WriteError> {
        let before = read_existing(workspace, path)?;
        self.push(workspace, Change::deleted(path, before))
    }

    /// Plans moving `from` to `to` (which must be absent), with `content`
    /// or, when `None`, the content `from` has now.
    pub fn plan_rename(
        &mut self,
        workspace: &Workspace,
        from: &Path,
        to: &Path,
        content: Option<Vec<u8>>,
    ) -> Result<(), WriteError> {
        let before = read_existing(workspace, from)?;
        if read_current(workspace, to)?.is_some() {
            return Err(WriteError::Plan(format!(
                "cannot move {} to {}: the destination already exists",
                workspace.display(from),
                workspace.display(to)
            )));
        }
        let after = content.unwrap_or_else(|| before.clone());
        self.push(workspace, Change::renamed(from, to, before, after))
    }

    /// The planned changes, in the order they were added.
    pub fn changes(&self) -> &[Change] {
        &self.changes
    }

    /// Whether nothing is planned.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// How many paths end up with new content or go away.
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    pub(crate) fn into_changes(self) -> Vec<Change> {
        self.changes
    }
}

impl IntoIterator for ChangeSet {
    type Item = Change;
    type IntoIter = std::vec::IntoIter<Change>;

    fn into_iter(self) -> Self::IntoIter {
        self.changes.into_iter()
    }
}

/// Every path a change touches: its own, and the source of a rename.
fn touched(change: &Change) -> impl Iterator<Item = &Path> {
    let from = match &change.kind {
        ChangeKind::Renamed { from } => Some(from.as_path()),
        _ => None,
    };
    std::iter::once(change.path.as_path()).chain(from)
}

/// Refuses a path outside the workspace, whoever built the change.
pub(crate) fn confine(workspace: &Workspace, path: &Path) -> Result<(), WriteError> {
    let text = path
        .to_str()
        .ok_or_else(|| WriteError::Plan(format!("{} is not a UTF-8 path", path.display())))?;
    if !path.is_absolute() {
        return Err(WriteError::Plan(format!(
            "{text} is not an absolute path; resolve it with the workspace first"
        )));
    }
    workspace
        .resolve(text)
        .map(drop)
        .map_err(|e| WriteError::Outside(e.to_string()))
}

/// A file as it is now: its content and how many hard links it has.
pub(crate) struct Current {
    pub(crate) bytes: Vec<u8>,
    pub(crate) links: u64,
}

/// The current content of `path` (through a symlink that stays inside),
/// `None` when absent. Opened through the workspace's handle and never
/// blocking: a FIFO, socket or device is refused, not waited on.
pub(crate) fn current(workspace: &Workspace, path: &Path) -> Result<Option<Current>, WriteError> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let read = workspace.open_file(path).and_then(|mut file| {
        let links = file.metadata()?.nlink();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(Current { bytes, links })
    });
    match read {
        Ok(current) => Ok(Some(current)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::IsADirectory => Err(WriteError::Plan(format!(
            "{} is a directory, not a file",
            workspace.display(path)
        ))),
        Err(e) => Err(WriteError::from_io(workspace, path, "read", e)),
    }
}

/// The current content of `path`, `None` when absent: opened through the
/// workspace's handle and never blocking (a FIFO, socket or device is
/// refused, not waited on), with the write path's own errors. What a
/// writing tool plans against.
pub fn read_current(workspace: &Workspace, path: &Path) -> Result<Option<Vec<u8>>, WriteError> {
    Ok(current(workspace, path)?.map(|c| c.bytes))
}

fn read_existing(workspace: &Workspace, path: &Path) -> Result<Vec<u8>, WriteError> {
    read_current(workspace, path)?
        .ok_or_else(|| WriteError::Plan(format!("{} does not exist", workspace.display(path))))
}
