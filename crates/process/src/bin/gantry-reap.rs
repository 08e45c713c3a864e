//! `gantry-reap [--parent PID] [--control FD] [--landlock FD [--seccomp
//! FD]] -- PROGRAM [ARGS...]`: runs a command so that every process it
//! starts dies with it, on request, or with the process that started it,
//! confined in the sandbox it is handed. See `gantry_process::reaper`.
//!
//! Without std's runtime set-up (`no_main`): it runs once per command,
//! and the reaper needs none of it (it ignores no SIGPIPE, writing with
//! MSG_NOSIGNAL, and spawns with the signal mask and SIGPIPE reset).
#![no_main]

use std::ffi::{CStr, OsString, c_char, c_int};
use std::os::unix::ffi::OsStringExt;

/// The C entry point, arguments as the kernel gave them.
#[unsafe(no_mangle)]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    let args = (1..usize::try_from(argc).unwrap_or(0)).map(|i| {
        // SAFETY: the C runtime passes argc valid, NUL-terminated strings.
        let arg = unsafe { CStr::from_ptr(*argv.add(i)) };
        OsString::from_vec(arg.to_bytes().to_vec())
    });
    gantry_process::reaper::main(args)
}
