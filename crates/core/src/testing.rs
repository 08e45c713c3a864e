//! Helpers for the tests of tool families (feature `testing`): every write
//! of a test binary journals into one temp state directory, never the
//! user's, and workspaces are temp folders with the files a test names.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

/// Points `GANTRY_STATE_DIR` at one temp dir for the whole test binary
/// (and the child processes it starts), and returns it.
pub fn state_dir() -> &'static Path {
    static STATE: OnceLock<tempfile::TempDir> = OnceLock::new();
    STATE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("creating a temp state directory");
            // SAFETY: set once, before any write of the binary reads it; std
            // serialises environment access.
            unsafe { std::env::set_var("GANTRY_STATE_DIR", dir.path()) };
            dir
        })
        .path()
}

/// A temp workspace holding `files` (paths relative to it; bytes, so tests
/// can write CRLF, BOMs and binaries), with [`state_dir`] in force.
pub fn workspace_with<C: AsRef<[u8]>>(files: &[(&str, C)]) -> tempfile::TempDir {
    state_dir();
    let dir = tempfile::tempdir().expect("creating a temp workspace");
    for (name, content) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("creating a folder of the workspace");
        }
        std::fs::write(path, content).expect("writing a file of the workspace");
    }
    dir
}

/// Waits up to `bound` for process `pid` to exit, whether or not it is a
/// child of the caller (a grandchild, a language server), by awaiting its
/// pidfd: no polling. True when it exited (or was already gone).
pub async fn exited(pid: i32, bound: Duration) -> bool {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        // ESRCH: no such process, it is gone already.
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    // SAFETY: the fd was just returned to us and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: the AsyncFd owns the fd and deregisters it before closing it.
    let registered = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
    };
    let Ok(fd) = registered else {
        return false;
    };
    tokio::time::timeout(bound, fd.readable()).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn exited_waits_for_the_exit_and_no_longer() {
        let mut child = tokio::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id().unwrap() as i32;
        assert!(
            !exited(pid, Duration::from_millis(50)).await,
            "alive, yet reported exited"
        );
        child.start_kill().unwrap();
        assert!(exited(pid, Duration::from_secs(5)).await);
        child.wait().await.unwrap();
        assert!(
            exited(pid, Duration::from_millis(50)).await,
            "reaped counts as exited"
        );
    }
}
