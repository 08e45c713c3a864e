//! What the shell's own-`main` test files share: the runner (Gantry's
//! testing harness) and helpers to watch processes end.

#![allow(dead_code, unused_imports)] // each test binary (and the bench example) uses a part

pub use gantry_core::testing::harness::{Test, run};

/// A pidfd of `pid`, awaitable; `None` when it is gone already. Opened
/// while a process runs, it follows that process and no other that gets
/// its pid later.
pub fn pidfd(pid: i32) -> Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the fd was just returned to us and is owned by nobody else.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: the AsyncFd owns the fd, whose number never changes.
    Some(unsafe { tokio::io::unix::AsyncFd::register(fd) }.expect("registered"))
}

/// Whether the process behind `fd` exits within `bound`.
pub async fn ends(
    fd: &tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
    bound: std::time::Duration,
) -> bool {
    tokio::time::timeout(bound, fd.readable()).await.is_ok()
}

/// The parent of `pid`, from `/proc/PID/stat`.
pub fn parent_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("running");
    let (_, rest) = stat.rsplit_once(')').expect("a stat line");
    rest.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A FIFO at `path`, open for reading lines: a command tells the test its
/// pids through it (`echo "$$ $!" > tree.fifo`), awaited with no polling.
/// Opened read-write, so it stays open between two writers.
pub fn fifo(
    path: &std::path::Path,
) -> tokio::io::Lines<tokio::io::BufReader<tokio::net::unix::pipe::Receiver>> {
    use std::os::unix::ffi::OsStrExt;
    use tokio::io::AsyncBufReadExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string and a mode.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0, "mkfifo");
    let receiver = tokio::net::unix::pipe::OpenOptions::new()
        .read_write(true)
        .open_receiver(path)
        .expect("the FIFO opens");
    tokio::io::BufReader::new(receiver).lines()
}

/// The next line of pids from a [`fifo`], within `bound`.
pub async fn pids(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::net::unix::pipe::Receiver>>,
    bound: std::time::Duration,
) -> Vec<i32> {
    let line = tokio::time::timeout(bound, lines.next_line())
        .await
        .expect("no pids came within the bound")
        .unwrap()
        .unwrap();
    line.split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}
