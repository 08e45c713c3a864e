//! Descriptors a child keeps across its `exec`, beyond stdin, stdout and
//! stderr: a kernel's protocol pipes, which user code printing to stdout
//! can never corrupt ([`Command::pass_fd`](crate::Command::pass_fd)).
//!
//! Gantry's copies stay close-on-exec the whole time, so no other child
//! spawned meanwhile on another thread inherits them; only the forked
//! child clears the flag, between fork and exec, at the same number. A
//! reaper in between hands them on to the command as it does its stdio
//! (`posix_spawn` keeps what is not close-on-exec).

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::sync::Arc;

/// Makes `passed` survive `command`'s exec, at the numbers they have here.
pub(crate) fn keep_open(command: &mut std::process::Command, passed: &[Arc<OwnedFd>]) {
    if passed.is_empty() {
        return;
    }
    let numbers: Vec<RawFd> = passed.iter().map(|fd| fd.as_raw_fd()).collect();
    // SAFETY: the closure only calls fcntl, which is async-signal-safe,
    // on descriptors this process holds open until the spawn returns
    // (the command's `Arc`s); it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            for &fd in &numbers {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}
