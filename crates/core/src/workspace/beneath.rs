//! Opening paths under a root by the kernel, never by a check.
//!
//! A root is held as a directory handle; every path under it is opened with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` relative to that
//! handle, so no component, link or `..` can lead the kernel out of it,
//! however the tree is swapped about while we look. What `openat2` cannot
//! do by itself is follow an absolute symlink whose target is inside the
//! root (it refuses every absolute link with `EXDEV`); for that case the
//! path is expanded here, one component at a time through the same handle,
//! into a path free of links, and opened again beneath the root. The
//! expansion only decides *which* path to ask for; the kernel still does
//! the confining.
//!
//! Written on `rustix` rather than `cap-std`: cap-std refuses absolute
//! links outright and its errors cannot name the link that leads out, and
//! both are part of what a user is promised here.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::PathError;

/// How many times an open is retried when the kernel says the tree changed
/// under it (`EAGAIN`), or a link-free expansion went stale, before giving
/// up: enough for any real contention, bounded against a hostile loop.
const RETRIES: usize = 256;

/// At most this many links in one path, as the kernel's own `ELOOP` limit.
const MAX_LINKS: usize = 40;

/// A root the run may touch: its canonical path and a handle on it.
#[derive(Debug)]
pub(crate) struct RootDir {
    pub(crate) path: PathBuf,
    handle: OwnedFd,
}

impl RootDir {
    /// Whether the directory was deleted since it was opened (its handle
    /// still works, but nothing can be found or made in it).
    pub(crate) fn deleted(&self) -> bool {
        rustix::fs::fstat(&self.handle).is_ok_and(|stat| stat.st_nlink == 0)
    }

    /// Opens the directory at `path` (canonicalised) as a root.
    // A read-only open (O_PATH or O_RDONLY): it writes nothing.
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn open(path: &Path) -> io::Result<Self> {
        let path = path.canonicalize()?;
        let handle = rustix::fs::open(
            &path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOTDIR => io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("workspace root {} is not a directory", path.display()),
            ),
            other => other.into(),
        })?;
        Ok(RootDir { path, handle })
    }

    /// Opens `rel` (relative to the root, possibly empty for the root
    /// itself) with `flags`, confined to the root by the kernel. With
    /// `follow_last` false the last component is not followed when it is a
    /// link (pair with `O_NOFOLLOW` or `O_PATH`).
    // The confined open itself: beneath the root, by the kernel. It writes only for the callers that ask it to (the write path, crates/core/src/write).
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn open_at(
        &self,
        rel: &Path,
        flags: OFlags,
        mode: Mode,
        follow_last: bool,
    ) -> io::Result<OwnedFd> {
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let flags = flags
            | OFlags::CLOEXEC
            | if follow_last {
                OFlags::empty()
            } else {
                OFlags::NOFOLLOW
            };
        let mut path = dot_if_empty(rel).to_path_buf();
        for _ in 0..RETRIES {
            match rustix::fs::openat2(&self.handle, &path, flags, mode, resolve) {
                Ok(fd) => return Ok(fd),
                Err(Errno::AGAIN | Errno::INTR) => continue,
                // An absolute link (or a `..` out) on the way: expand the
                // links ourselves; an escape is refused there, by name.
                Err(Errno::XDEV) => {
                    path = dot_if_empty(&self.expand(rel, follow_last)?).to_path_buf();
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!(
                "{} kept changing while it was opened; try again",
                rel.display()
            ),
        ))
    }

    /// Opens `rel` with `flags` only when no component of it is a symlink
    /// (`ELOOP` otherwise, the last one included): for a file whose trust
    /// depends on its being the very file at that place.
    // The confined open itself: beneath the root, by the kernel. It writes only for the callers that ask it to (the write path, crates/core/src/write).
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn open_link_free(&self, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        for _ in 0..RETRIES {
            match rustix::fs::openat2(&self.handle, rel, flags, Mode::empty(), resolve) {
                Err(Errno::AGAIN | Errno::INTR) => continue,
                other => return Ok(other?),
            }
        }
        Err(Errno::AGAIN.into())
    }

    /// The path of `rel` with every symlink on it replaced by what it
    /// points to (the last component only when `follow_last`), read through
    /// the root's handle. A link that leads out of the root, absolute or by
    /// `..`, is an error naming it.
    pub(crate) fn expand(&self, rel: &Path, follow_last: bool) -> io::Result<PathBuf> {
        let mut done: Vec<OsString> = Vec::new();
        let mut todo: VecDeque<OsString> = components(rel)?;
        let mut last_link: Option<(PathBuf, PathBuf)> = None;
        let mut links = 0;
        while let Some(part) = todo.pop_front() {
            if part == ".." {
                if done.pop().is_none() {
                    return Err(self.escape(rel, last_link));
                }
                continue;
            }
            if todo.is_empty() && !follow_last {
                done.push(part);
                break;
            }
            let candidate: PathBuf = done.iter().chain([&part]).collect();
            let fd = match self.open_component(&candidate) {
                Ok(fd) => fd,
                // What does not exist cannot be a link: the rest is taken
                // as written, and the open that follows says it is missing.
                Err(Errno::NOENT | Errno::NOTDIR) => {
                    done.push(part);
                    done.extend(todo);
                    break;
                }
                Err(e) => return Err(e.into()),
            };
            if FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) != FileType::Symlink {
                done.push(part);
                continue;
            }
            links += 1;
            if links > MAX_LINKS {
                return Err(Errno::LOOP.into());
            }
            let target = PathBuf::from(OsStr::from_bytes(
                rustix::fs::readlinkat(&fd, "", Vec::new())?.as_bytes(),
            ));
            let mut next = if target.is_absolute() {
                let Ok(inside) = target.strip_prefix(&self.path) else {
                    return Err(self.escape(&candidate, Some((candidate.clone(), target))));
                };
                done.clear();
                components(inside)?
            } else {
                components(&target)?
            };
            last_link = Some((candidate, target));
            next.extend(todo);
            todo = next;
        }
        Ok(done.iter().collect())
    }

    /// One link-free path, opened without following its last component.
    // A read-only open beneath the root (O_PATH or O_RDONLY): it writes nothing.
    #[allow(clippy::disallowed_methods)]
    fn open_component(&self, rel: &Path) -> Result<OwnedFd, Errno> {
        let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        loop {
            match rustix::fs::openat2(&self.handle, rel, flags, Mode::empty(), resolve) {
                Err(Errno::AGAIN | Errno::INTR) => continue,
                other => return other,
            }
        }
    }

    /// The error for a path that leads out of the root: naming the link
    /// that does it when there is one.
    fn escape(&self, rel: &Path, link: Option<(PathBuf, PathBuf)>) -> io::Error {
        let error = match link {
            Some((link, target)) => PathError::SymlinkEscape {
                given: link.display().to_string(),
                target: target.display().to_string(),
            },
            None => PathError::Outside {
                given: rel.display().to_string(),
                root: self.path.display().to_string(),
            },
        };
        io::Error::new(io::ErrorKind::PermissionDenied, error)
    }

    /// A fresh handle on the root directory itself, readable, for locks.
    // A read-only open beneath the root (O_PATH or O_RDONLY): it writes nothing.
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn reopen(&self) -> io::Result<OwnedFd> {
        Ok(rustix::fs::openat(
            &self.handle,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?)
    }
}

impl AsFd for RootDir {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.handle.as_fd()
    }
}

/// `.` for the root itself, which `openat2` wants spelled out.
fn dot_if_empty(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

/// The names and `..`s of a relative path (`.` dropped).
fn components(rel: &Path) -> io::Result<VecDeque<OsString>> {
    rel.components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(Ok(name.to_owned())),
            Component::ParentDir => Some(Ok(OsString::from(".."))),
            Component::CurDir => None,
            Component::RootDir | Component::Prefix(_) => Some(Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not relative to the root", rel.display()),
            ))),
        })
        .collect()
}
