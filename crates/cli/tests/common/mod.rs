//! Shared by the tests that drive the real binary: one `gantry session`
//! fed calls on stdin, with Gantry's home and state kept out of the user's.

#![allow(dead_code)] // Each test file uses its own part of this.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// Runs `requests` (`{"tool": ..., "args": ...}` each) in one
/// `gantry session --approval yolo` on `root`, with `GANTRY_HOME`,
/// `GANTRY_STATE_DIR` and the shared state directory the write path also
/// leaves word in (`XDG_STATE_HOME`) under `state`; the reply to each, in
/// order.
pub fn session(root: &Path, state: &Path, requests: &[Value]) -> Vec<Value> {
    session_with(gantry(root, state), root, requests)
}

/// The binary, run in `root` with Gantry's home (`GANTRY_HOME`: its
/// `settings.json` is the user level), state and the shared state directory
/// under `state`; tests add arguments and variables.
pub fn gantry(root: &Path, state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gantry"));
    command
        .current_dir(root)
        .env("GANTRY_STATE_DIR", state.join("state"))
        .env("GANTRY_HOME", state.join("home"))
        .env("XDG_STATE_HOME", state.join("shared-state"));
    command
}

/// Approves `root`'s `.gantry/settings.json` as it is now with `gantry
/// trust`, which must succeed.
pub fn trust(root: &Path, state: &Path) {
    let output = gantry(root, state).arg("trust").output().unwrap();
    assert!(output.status.success(), "{output:?}");
}

/// [`session`] through `command` (from [`gantry`], with what a test adds).
pub fn session_with(command: Command, root: &Path, requests: &[Value]) -> Vec<Value> {
    session_on(command, root, &[], |_| requests.to_vec())
}

/// [`session_with`], the requests made knowing the process id of Gantry
/// (for a command that tries to reach it).
pub fn session_knowing_pid(
    command: Command,
    root: &Path,
    requests: impl FnOnce(u32) -> Vec<Value>,
) -> Vec<Value> {
    session_on(command, root, &[], requests)
}

/// [`session_with`] on a surface given by `surface` (`["--tier", "read"]`),
/// the requests made knowing the process id of Gantry.
pub fn session_on(
    mut command: Command,
    root: &Path,
    surface: &[&str],
    requests: impl FnOnce(u32) -> Vec<Value>,
) -> Vec<Value> {
    let mut child = command
        .args(["session", "--approval", "yolo"])
        .args(surface)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let requests = requests(child.id());
    let sent = requests.len();
    {
        let mut stdin = child.stdin.take().unwrap();
        for request in requests {
            writeln!(stdin, "{request}").unwrap();
        }
    }
    let output = child.wait_with_output().unwrap();
    let replies: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        replies.len(),
        sent,
        "{}: a call got no reply",
        root.display()
    );
    replies
}
