//! Gantry's own files about a workspace (a language server's compilation
//! database, a kernel's environment): kept in the state directory, one
//! folder per purpose and root, so that nothing but what a tool call asked
//! for is ever written into the user's checkout.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::settings::state_dir;
use crate::write::ContentHash;

/// A stable, path-safe name for `root` (a hash of its path): its folder's
/// name under each purpose, and under the journals' `roots`.
pub(crate) fn root_key(root: &Path) -> String {
    let key = ContentHash::of(root.as_os_str().as_encoded_bytes()).to_string();
    key[..32].to_string()
}

/// The folder Gantry keeps for `purpose` (`clangd`, `kernel`) of the
/// workspace at `root`; not created.
pub fn root_dir(purpose: &str, root: &Path) -> PathBuf {
    state_dir().join(purpose).join(root_key(root))
}

/// Creates [`root_dir`] (and the folders above it) for a program Gantry
/// starts to write into, confined: a kernel's environment, a language
/// server's caches. A sandbox can grant only a folder that exists.
// Creates a folder under the state directory, never in a workspace.
#[allow(clippy::disallowed_methods)]
pub fn create_dir(purpose: &str, root: &Path) -> io::Result<PathBuf> {
    let dir = root_dir(purpose, root);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// A fresh, empty folder of this process's under [`root_dir`] for
/// `purpose`, for one child's use (an overlay's work folder); removed
/// with [`remove_scratch`] when the child is done. The first one of a
/// process also has what ended processes left there removed.
// Creates a folder under the state directory, never in a workspace.
#[allow(clippy::disallowed_methods)]
pub fn scratch_dir(purpose: &str, root: &Path) -> io::Result<PathBuf> {
    static UNIQUE: AtomicU64 = AtomicU64::new(0);
    static SWEPT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let parent = root_dir(purpose, root);
    let first = {
        let mut swept = SWEPT.lock().unwrap_or_else(|e| e.into_inner());
        let first = !swept.contains(&parent);
        if first {
            swept.push(parent.clone());
        }
        first
    };
    if first {
        sweep_scratch(&parent);
    }
    let dir = parent.join(format!(
        "{}-{}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Hands [`remove_scratch`] what processes that are gone left in
/// `parent` (named `PID-N`).
fn sweep_scratch(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.split_once('-'))
            .map(|(pid, _)| pid);
        let gone = pid.is_some_and(|pid| !Path::new("/proc").join(pid).exists());
        if gone {
            remove_scratch(&entry.path());
        }
    }
}

/// Removes a [`scratch_dir`] an overlay used, later, on a thread of its
/// own: its `work` and `index` folders (left without permissions, which
/// their owner gives back first; `work` keeps the `incompat/volatile`
/// mark of a volatile overlay), then itself. Off the caller's path
/// because freeing a folder's blocks can wait on the disk (a synchronous
/// discard on file systems mounted with `discard`), several times per
/// overlay. Best effort: what cannot go is swept by a later process.
pub fn remove_scratch(dir: &Path) {
    use std::sync::mpsc::{Sender, channel};
    static REMOVER: std::sync::Mutex<Option<Sender<PathBuf>>> = std::sync::Mutex::new(None);
    let mut remover = REMOVER.lock().unwrap_or_else(|e| e.into_inner());
    let sender = remover.get_or_insert_with(|| {
        let (sender, dirs) = channel::<PathBuf>();
        let spawned = std::thread::Builder::new()
            .name("gantry-scratch".into())
            .spawn(move || dirs.into_iter().for_each(|dir| remove_now(&dir)));
        if spawned.is_err() {
            tracing::debug!("no thread to remove scratch folders; they wait for a later sweep");
        }
        sender
    });
    let _ = sender.send(dir.to_path_buf());
}

// Removes a scratch folder of the state directory, never a workspace's.
#[allow(clippy::disallowed_methods)]
fn remove_now(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for inner in ["work", "index"] {
        let inner = dir.join(inner);
        let _ = std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o700));
        let _ = std::fs::remove_dir_all(inner);
    }
    let _ = std::fs::remove_dir(dir);
}

/// Moves `path`, which a confined command created at a protected path of
/// the workspace at `root` (`.vscode/tasks.json`, `.git/hooks/...`), out
/// into the state directory, whole: the sandbox's one removal, so that
/// no program outside it acts on what the command left there. Where it
/// cannot be moved (another file system), it is removed; `None` says so.
// The sandbox's one removal from a workspace (see above): what a confined
// command left at a protected path goes into the state directory.
#[allow(clippy::disallowed_methods)]
pub fn quarantine(root: &Path, path: &Path) -> io::Result<Option<PathBuf>> {
    static UNIQUE: AtomicU64 = AtomicU64::new(0);
    let dir = root_dir("quarantine", root).join(format!(
        "{}-{}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_secs())
            .unwrap_or_default(),
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)?;
    let to = dir.join(path.file_name().unwrap_or_default());
    match std::fs::rename(path, &to) {
        Ok(()) => Ok(Some(to)),
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
            match std::fs::symlink_metadata(path)?.is_dir() {
                true => std::fs::remove_dir_all(path)?,
                false => std::fs::remove_file(path)?,
            }
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Writes `contents` to the file `name` of [`root_dir`] for `purpose`
/// of the workspace at `root` (a compilation database Gantry made for a
/// language server), whole or not at all; returns its path. The path is
/// built here, under the state directory: no caller can aim it at a
/// workspace file, which only the write path writes.
pub fn write_file(purpose: &str, root: &Path, name: &str, contents: &[u8]) -> io::Result<PathBuf> {
    let path = root_dir(purpose, root).join(plain_name(name)?);
    write_whole(&path, contents)?;
    Ok(path)
}

/// `name` when it is one plain file name (no folder, no `..`).
pub(crate) fn plain_name(name: &str) -> io::Result<&str> {
    let mut parts = Path::new(name).components();
    match (parts.next(), parts.next()) {
        (Some(std::path::Component::Normal(_)), None) => Ok(name),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{name}` is not a plain file name"),
        )),
    }
}

/// Writes `contents` to `path` (one of Gantry's own files, outside every
/// workspace) whole or not at all: a reader, such as a server of another
/// run on the same root, sees the old file or the new one, never a part.
/// Creates the parents.
// The writer of Gantry's own files (state directory, ~/.gantry); callers
// build `path` there, never in a workspace.
#[allow(clippy::disallowed_methods)]
pub(crate) fn write_whole(path: &Path, contents: &[u8]) -> io::Result<()> {
    static UNIQUE: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a file path has a parent"))?;
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::File::create(&temp)
        .and_then(|mut file| file.write_all(contents).and_then(|()| file.sync_data()))
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// A folder of this process's own under [`root_dir`], for files that only
/// live while it does (a file watcher's markers); removed when dropped.
pub struct ProcessDir {
    path: PathBuf,
}

impl ProcessDir {
    /// Creates the folder for `purpose` of the workspace at `root`, empty:
    /// what a dead process of the same pid left there goes first.
    // A folder of this process's under the state directory.
    #[allow(clippy::disallowed_methods)]
    pub fn create(purpose: &str, root: &Path) -> io::Result<ProcessDir> {
        let path = root_dir(purpose, root).join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)?;
        Ok(ProcessDir { path })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the empty file `name` in it; an error where something is
    /// already there (a FIFO would block an open that follows it).
    // A marker in this process's folder under the state directory.
    #[allow(clippy::disallowed_methods)]
    pub fn touch(&self, name: &str) -> io::Result<()> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.path.join(name))
            .map(drop)
    }

    /// Removes the file `name` from it, if there.
    // A marker in this process's folder under the state directory.
    #[allow(clippy::disallowed_methods)]
    pub fn remove(&self, name: &str) {
        let _ = std::fs::remove_file(self.path.join(name));
    }
}

impl Drop for ProcessDir {
    // This process's folder under the state directory.
    #[allow(clippy::disallowed_methods)]
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn a_process_dir_starts_empty_and_never_opens_what_is_there() {
        crate::testing::state_dir();
        let root = Path::new("/a/workspace/of/process/dirs");
        let stale = ProcessDir::create("test-process-dir", root).unwrap();
        let path = stale.path().to_path_buf();
        std::mem::forget(stale);
        std::fs::write(path.join("left"), b"").unwrap();
        let dir = ProcessDir::create("test-process-dir", root).unwrap();
        assert!(!dir.path().join("left").exists());
        let fifo =
            std::ffi::CString::new(dir.path().join("1").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo(3) with a NUL-terminated path that lives to the call's end.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(dir.touch("1").is_err(), "a FIFO is not opened");
        dir.touch("2").unwrap();
        dir.remove("2");
        assert!(!dir.path().join("2").exists());
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn a_file_is_replaced_whole_and_no_temp_file_stays() {
        let dir = tempfile_dir();
        let path = dir.join("nested/db.json");
        write_whole(&path, b"one").unwrap();
        write_whole(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["db.json"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The state directory's writer takes a file name, never a path: a
    /// workspace file cannot be named through it.
    #[test]
    fn only_plain_names_are_written_in_the_state_directory() {
        for name in ["../x", "a/b", "/etc/passwd", "..", ""] {
            let refused = write_file("clangd", Path::new("/w/a"), name, b"x").unwrap_err();
            assert_eq!(refused.kind(), io::ErrorKind::InvalidInput, "{name}");
        }
    }

    #[test]
    fn roots_get_folders_of_their_own() {
        let a = root_dir("clangd", Path::new("/w/a"));
        let b = root_dir("clangd", Path::new("/w/b"));
        assert_ne!(a, b);
        assert_eq!(a, root_dir("clangd", Path::new("/w/a")));
        assert!(a.starts_with(state_dir().join("clangd")));
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("gantry-state-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
