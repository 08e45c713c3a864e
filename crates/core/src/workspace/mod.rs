//! The workspace root and path confinement (SPEC §5).
//!
//! Every path a tool touches is named through [`Workspace::resolve`], so
//! `..`, absolute paths elsewhere and symlinks that point out are refused
//! in one place with one message. And every file is then *opened* through
//! the workspace ([`Workspace::open_file`], [`Workspace::read`],
//! [`Workspace::metadata`], ...), which asks the kernel to resolve it
//! beneath a handle on the root: a check followed by a second walk of the
//! same path could be raced by a directory swapped for a link, an open
//! through the handle cannot (see `beneath`).
//!
//! Opens never block: a FIFO, socket or device is opened non-blocking and
//! refused by its type ([`NotRegular`]), so a pipe planted in the tree can
//! freeze neither a call nor anything waiting behind it.

mod beneath;

use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{FileType, Mode, OFlags};

use beneath::RootDir;

/// A path was refused or could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The path leaves every root the run may touch.
    #[error("`{given}` is outside the workspace ({root}); only paths inside it are allowed")]
    Outside {
        /// What the caller gave.
        given: String,
        /// The workspace root, for the message.
        root: String,
    },
    /// A symlink inside the workspace points outside it.
    #[error("`{given}` is a symlink that resolves outside the workspace (to {target})")]
    SymlinkEscape {
        /// What the caller gave.
        given: String,
        /// Where the link leads.
        target: String,
    },
    /// A file was asked for with a path that ends in `/`, which names a
    /// folder.
    #[error(
        "`{given}` ends in `/`, which names a folder; give the file's path without the trailing `/`"
    )]
    NamesFolder {
        /// What the caller gave.
        given: String,
    },
    /// The path is empty or not valid text.
    #[error(
        "path is empty: give a workspace-relative path such as `src/main.rs`, or `.` for the root"
    )]
    Empty,
}

/// A path names something other than a regular file or a directory (a
/// FIFO, a socket, a device): nothing Gantry reads or writes, because
/// opening one can block or have effects of its own.
#[derive(Debug, thiserror::Error)]
#[error("{kind}, not a regular file")]
pub struct NotRegular {
    /// What it is, in words: "a FIFO (named pipe)", "a socket", ...
    pub kind: &'static str,
}

impl NotRegular {
    /// The [`NotRegular`] inside an I/O error from a workspace open, if
    /// that is what it was.
    pub fn of(error: &io::Error) -> Option<&NotRegular> {
        error.get_ref()?.downcast_ref()
    }

    fn error(file_type: FileType) -> io::Error {
        let kind = match file_type {
            FileType::Fifo => "a FIFO (named pipe)",
            FileType::Socket => "a socket",
            FileType::CharacterDevice => "a character device",
            FileType::BlockDevice => "a block device",
            _ => "not a file or directory",
        };
        io::Error::new(io::ErrorKind::InvalidInput, NotRegular { kind })
    }
}

/// Reads the regular file at `path` without a workspace handle and
/// without ever blocking: for files a tool did not name itself (a library
/// file a language server's answer points into). A FIFO, socket or device
/// is [`NotRegular`], a directory `IsADirectory`.
// A read-only open (O_PATH or O_RDONLY): it writes nothing.
#[allow(clippy::disallowed_methods)]
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    regular(fd).and_then(|mut file| {
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    })
}

/// Opens the regular file at `rel` beneath the directory `root` for
/// reading, without blocking. With `link_free`, only when no component
/// below the root is a symlink (`ELOOP` otherwise); else through links
/// that stay beneath the root. For a file Gantry reads about a root before
/// any workspace is open (its settings file). A directory is
/// `IsADirectory`; a FIFO, socket or device is [`NotRegular`].
pub fn open_beneath(root: &Path, rel: &Path, link_free: bool) -> io::Result<File> {
    let root = RootDir::open(root)?;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
    regular(if link_free {
        root.open_link_free(rel, flags)?
    } else {
        root.open_at(rel, flags, Mode::empty(), true)?
    })
}

/// The opened `fd` as a blocking file when it is a regular file; refused
/// by its type otherwise.
fn regular(fd: OwnedFd) -> io::Result<File> {
    match FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) {
        // O_NONBLOCK stays set: Linux ignores it for regular files, and
        // clearing it would cost a syscall per file on a search's hot path.
        FileType::RegularFile => Ok(File::from(fd)),
        FileType::Directory => Err(rustix::io::Errno::ISDIR.into()),
        other => Err(NotRegular::error(other)),
    }
}

/// A workspace directory held by a handle opened beneath its root
/// ([`Workspace::open_dir`]).
#[derive(Debug)]
pub struct OpenDir {
    handle: OwnedFd,
    path: PathBuf,
}

impl OpenDir {
    /// The path the directory was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the regular file named `name` in this directory for reading,
    /// never following a link (`ELOOP`). A name that is not a single entry
    /// (`a/b`, `..`) is refused, so the open cannot leave the directory.
    // A read-only open (O_RDONLY) of one entry of a directory opened beneath the root.
    #[allow(clippy::disallowed_methods)]
    fn open_entry(&self, name: &std::ffi::OsStr) -> io::Result<File> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not one entry of a directory", name.display()),
            ));
        }
        regular(rustix::fs::openat(
            &self.handle,
            name,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?)
    }
}

/// One entry of a directory listed through the workspace.
#[derive(Debug, Clone)]
pub struct DirEntry {
    /// The entry's name in its directory.
    pub name: OsString,
    /// The entry's absolute path (the listed path joined with the name).
    pub path: PathBuf,
}

/// Held while a process applies or recovers a write on a root; released
/// when dropped, or when the process dies.
#[derive(Debug)]
pub(crate) struct RootLock {
    _handle: OwnedFd,
}

/// The roots a run may touch: the workspace plus any extra roots the
/// settings allow, each held open so that every file under them is
/// resolved by the kernel beneath it.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: Arc<RootDir>,
    extra_roots: Vec<Arc<RootDir>>,
}

impl Workspace {
    /// Why no file of the workspace can be reached any more, if so: its
    /// folder was deleted under the run (a failed call says so, rather
    /// than that one file is missing).
    pub fn gone(&self) -> Option<String> {
        self.root.deleted().then(|| {
            format!(
                "the workspace folder {} was deleted while Gantry served it: no file in it can \
                 be read or written; start Gantry again in a folder that exists",
                self.root.path.display()
            )
        })
    }

    /// Opens a workspace at `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Workspace {
            root: Arc::new(RootDir::open(root.as_ref())?),
            extra_roots: Vec::new(),
        })
    }

    /// Allows paths under further roots (settings `extraRoots`); each gets
    /// a handle of its own. Roots that cannot be opened are left out.
    pub fn with_extra_roots(mut self, roots: impl IntoIterator<Item = PathBuf>) -> Self {
        self.extra_roots.extend(
            roots
                .into_iter()
                .filter_map(|root| RootDir::open(&root).ok().map(Arc::new)),
        );
        self
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root.path
    }

    /// The canonical extra roots.
    pub fn extra_roots(&self) -> impl Iterator<Item = &Path> {
        self.extra_roots.iter().map(|root| root.path.as_path())
    }

    /// Resolves a workspace-relative or absolute path and refuses anything
    /// outside the roots, following the symlinks of the part that exists
    /// (through the root's handle) to name the link that leads out.
    ///
    /// The returned path is absolute and lexically normal; it is not
    /// canonicalised, so a symlink inside the root stays a symlink (writes
    /// go through it to its target, which is itself inside). It is a name,
    /// not a permission: open it with the workspace's own methods, which
    /// the kernel confines however the tree changes in between.
    pub fn resolve(&self, given: &str) -> Result<PathBuf, PathError> {
        let trimmed = given.trim();
        if trimmed.is_empty() {
            return Err(PathError::Empty);
        }
        let joined = if Path::new(trimmed).is_absolute() {
            PathBuf::from(trimmed)
        } else {
            self.root().join(trimmed)
        };
        let normal = normalize(&joined);
        let Some((root, rel)) = self.locate(&normal) else {
            return Err(PathError::Outside {
                given: given.to_string(),
                root: self.root().display().to_string(),
            });
        };
        if let Err(error) = root.expand(&rel, true)
            && let Some(refusal) = error.get_ref().and_then(|e| e.downcast_ref::<PathError>())
        {
            return Err(match refusal {
                PathError::SymlinkEscape {
                    given: link,
                    target,
                } => PathError::SymlinkEscape {
                    given: link.clone(),
                    target: target.clone(),
                },
                _ => PathError::Outside {
                    given: given.to_string(),
                    root: self.root().display().to_string(),
                },
            });
        }
        Ok(normal)
    }

    /// [`Workspace::resolve`] for a path that must name a file: one ending
    /// in `/` is refused instead of quietly naming the file without it.
    pub fn resolve_file(&self, given: &str) -> Result<PathBuf, PathError> {
        let trimmed = given.trim();
        if trimmed.ends_with('/') && !trimmed.trim_end_matches('/').is_empty() {
            return Err(PathError::NamesFolder {
                given: given.to_string(),
            });
        }
        self.resolve(given)
    }

    /// The path relative to the workspace root, for output; paths under an
    /// extra root stay absolute.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(self.root()) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    /// Opens the regular file at `path` for reading, through a symlink
    /// that stays inside. A directory is `IsADirectory`; a FIFO, socket or
    /// device is [`NotRegular`], found without blocking on it.
    pub fn open_file(&self, path: &Path) -> io::Result<File> {
        regular(self.open(
            path,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            true,
        )?)
    }

    /// The directory at `path` held open, so that the files a walk lists
    /// in it are opened by name relative to it: one resolution beneath the
    /// root per directory instead of one per file, on a search's hot path.
    pub fn open_dir(&self, path: &Path) -> io::Result<OpenDir> {
        Ok(OpenDir {
            handle: self.open(path, OFlags::PATH | OFlags::DIRECTORY, true)?,
            path: path.to_path_buf(),
        })
    }

    /// [`Workspace::open_file`] for the entry `name` of `dir`, opened by
    /// name in the directory's handle; a link is followed as
    /// [`Workspace::open_file`] follows it, only where it stays inside.
    pub fn open_entry(&self, dir: &OpenDir, name: &std::ffi::OsStr) -> io::Result<File> {
        match dir.open_entry(name) {
            Err(error) if error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
                self.open_file(&dir.path.join(name))
            }
            opened => opened,
        }
    }

    /// The whole content of the regular file at `path` (see
    /// [`Workspace::open_file`]).
    pub fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut file = self.open_file(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// The metadata of what `path` names, following links that stay
    /// inside.
    pub fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        File::from(self.open(path, OFlags::PATH, true)?).metadata()
    }

    /// The metadata of `path` itself, a link not followed.
    pub fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        File::from(self.open(path, OFlags::PATH, false)?).metadata()
    }

    /// What the symlink at `path` points to, as written in the link.
    pub fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let fd = self.open(path, OFlags::PATH, false)?;
        let target = rustix::fs::readlinkat(&fd, "", Vec::new())?;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(
            target.as_bytes(),
        )))
    }

    /// The entries of the directory at `path`, unsorted, without `.` and
    /// `..`.
    pub fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let fd = self.open(path, OFlags::RDONLY | OFlags::DIRECTORY, true)?;
        let mut entries = Vec::new();
        for entry in rustix::fs::Dir::read_from(&fd)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name = OsString::from(std::ffi::OsStr::from_bytes(name));
            entries.push(DirEntry {
                path: path.join(&name),
                name,
            });
        }
        Ok(entries)
    }

    /// Opens `path` beneath the root it lies under; anything outside every
    /// root is refused before the kernel is asked.
    pub(crate) fn open(&self, path: &Path, flags: OFlags, follow: bool) -> io::Result<OwnedFd> {
        let (root, rel) = self.locate_or_refuse(path)?;
        root.open_at(&rel, flags, Mode::empty(), follow)
    }

    /// The directory holding `path` (opened beneath its root, links on the
    /// way followed) and `path`'s own name in it: what every `*at()` call
    /// of the write path works on, so the last step never walks a path.
    pub(crate) fn parent_of(&self, path: &Path) -> io::Result<(OwnedFd, OsString)> {
        let (root, rel) = self.locate_or_refuse(path)?;
        let name = rel.file_name().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} names no file", self.display(path)),
            )
        })?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        let dir = root.open_at(
            parent,
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
            true,
        )?;
        Ok((dir, name.to_owned()))
    }

    /// Renames `from` to `to` (neither's last component followed), each
    /// name taken in its directory opened beneath the root.
    // The write path's own rename and removals, by handle beneath the root: crate-private, called from crates/core/src/write only.
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (from_dir, from_name) = self.parent_of(from)?;
        let (to_dir, to_name) = self.parent_of(to)?;
        Ok(rustix::fs::renameat(
            &from_dir, &from_name, &to_dir, &to_name,
        )?)
    }

    /// Removes the file or link at `path` (a link itself, never its
    /// target).
    // The write path's own rename and removals, by handle beneath the root: crate-private, called from crates/core/src/write only.
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn remove_file(&self, path: &Path) -> io::Result<()> {
        let (dir, name) = self.parent_of(path)?;
        Ok(rustix::fs::unlinkat(
            &dir,
            &name,
            rustix::fs::AtFlags::empty(),
        )?)
    }

    /// Removes the empty directory at `path`.
    // The write path's own rename and removals, by handle beneath the root: crate-private, called from crates/core/src/write only.
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let (dir, name) = self.parent_of(path)?;
        Ok(rustix::fs::unlinkat(
            &dir,
            &name,
            rustix::fs::AtFlags::REMOVEDIR,
        )?)
    }

    /// Makes the entries of the directory at `path` durable.
    pub(crate) fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let dir = self.open(path, OFlags::RDONLY | OFlags::DIRECTORY, true)?;
        Ok(rustix::fs::fsync(&dir)?)
    }

    /// `path` with every link on it (the last one too) replaced by where it
    /// leads, read through the root's handle: the file a write to `path`
    /// really lands in. A link that leads out is refused, by name.
    pub(crate) fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        let (root, rel) = self.locate_or_refuse(path)?;
        // Most paths end in a plain file (or nothing yet): one look at the
        // last component settles it. Links on the way to it need no
        // expanding: the write happens in the directory they lead to,
        // opened beneath the root like any other.
        match root.open_at(&rel, OFlags::PATH, Mode::empty(), false) {
            Ok(fd)
                if FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode)
                    != FileType::Symlink =>
            {
                return Ok(path.to_path_buf());
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(path.to_path_buf()),
            _ => {}
        }
        Ok(root.path.join(root.expand(&rel, true)?))
    }

    /// Takes the lock every Gantry process applying or recovering a write
    /// on this root takes: `flock` on the root directory itself, which
    /// every process on the root shares whatever its state directory, and
    /// which writes nothing into the workspace.
    pub(crate) fn lock(&self) -> io::Result<RootLock> {
        let handle = self.root.reopen()?;
        rustix::fs::flock(&handle, rustix::fs::FlockOperation::LockExclusive)?;
        Ok(RootLock { _handle: handle })
    }

    /// The root `path` lies under and the path relative to it (the
    /// innermost root, when roots nest).
    fn locate(&self, path: &Path) -> Option<(&RootDir, PathBuf)> {
        std::iter::once(&self.root)
            .chain(&self.extra_roots)
            .filter_map(|root| {
                let rel = path.strip_prefix(&root.path).ok()?;
                Some((root.as_ref(), rel.to_path_buf()))
            })
            .min_by_key(|(_, rel)| rel.components().count())
    }

    fn locate_or_refuse(&self, path: &Path) -> io::Result<(&RootDir, PathBuf)> {
        let normal = normalize(path);
        self.locate(&normal).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                PathError::Outside {
                    given: path.display().to_string(),
                    root: self.root().display().to_string(),
                },
            )
        })
    }
}

/// Removes `.` and resolves `..` lexically. `..` at the filesystem root
/// stays at the root, as the kernel does. Public for families that name
/// paths a server or a file gave them (an `#include "../x.h"`).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use std::fs;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("src")).unwrap();
        fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn relative_and_absolute_paths_inside_resolve() {
        let (_dir, ws) = workspace();
        let want = ws.root().join("src/lib.rs");
        assert_eq!(ws.resolve("src/lib.rs").unwrap(), want);
        assert_eq!(ws.resolve("./src/../src/lib.rs").unwrap(), want);
        assert_eq!(ws.resolve(want.to_str().unwrap()).unwrap(), want);
        assert_eq!(ws.resolve(".").unwrap(), ws.root());
        // Not existing yet is fine: a file about to be written.
        assert!(ws.resolve("new/dir/file.txt").is_ok());
    }

    #[test]
    fn dot_dot_and_foreign_absolute_paths_are_refused() {
        let (_dir, ws) = workspace();
        for bad in ["../x", "src/../../x", "/etc/passwd"] {
            let err = ws.resolve(bad).unwrap_err();
            assert!(matches!(err, PathError::Outside { .. }), "{bad}: {err}");
            assert!(err.to_string().contains("outside the workspace"));
        }
        assert!(matches!(ws.resolve("  "), Err(PathError::Empty)));
    }

    #[test]
    fn symlink_pointing_out_is_refused_and_inside_link_is_kept() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
        std::os::unix::fs::symlink("src/lib.rs", dir.path().join("inside")).unwrap();

        for bad in ["escape", "escape/secret", "escape/not-yet"] {
            let err = ws.resolve(bad).unwrap_err();
            assert!(
                matches!(err, PathError::SymlinkEscape { .. }),
                "{bad}: {err}"
            );
        }
        assert_eq!(ws.resolve("inside").unwrap(), ws.root().join("inside"));
    }

    #[test]
    fn extra_roots_widen_the_fence() {
        let (_dir, ws) = workspace();
        let other = tempfile::tempdir().unwrap();
        let ws = ws.with_extra_roots([other.path().to_path_buf()]);
        let inside_other = other.path().canonicalize().unwrap().join("a");
        assert!(ws.resolve(inside_other.to_str().unwrap()).is_ok());
        assert_eq!(ws.display(&ws.root().join("a/b")), "a/b");
    }
}
