//! Shared helpers of the tests against real debug adapters.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gantry_core::{Run, Settings, Workspace};
use serde_json::{Value, json};

/// The variable that asks to skip the tests that need a real debug
/// adapter (`GANTRY_SKIP_DAP=1`); scripts/test.sh says so in its summary.
pub const SKIP: &str = "GANTRY_SKIP_DAP";

/// Whether a test that drives a real adapter runs: false only when
/// [`SKIP`] asks, which the test then says on stderr. Otherwise `check`
/// must find the adapter, or the test fails with what installs it.
pub fn need(what: &str, found: bool) -> bool {
    if gantry_core::testing::skip_requested(SKIP, &format!("the test, which needs {what}")) {
        return false;
    }
    assert!(
        found,
        "{what} is missing: scripts/install-dap.sh installs it; set {SKIP}=1 to skip the tests that need a debug adapter"
    );
    true
}

/// Whether python3 can import debugpy.
pub fn debugpy() -> bool {
    need(
        "debugpy (python3 -m debugpy.adapter)",
        std::process::Command::new("python3")
            .args(["-c", "import debugpy.adapter"])
            .status()
            .is_ok_and(|s| s.success()),
    )
}

pub use gantry_process::program::on_path;

/// Whether the lldb tests run: lldb-dap and a C compiler, or a skip asked.
pub fn lldb() -> bool {
    need("lldb-dap (Debian's lldb-19)", on_path("lldb-dap").is_some())
        && need("a C compiler (cc)", on_path("cc").is_some())
}

/// The C fixture built with debug information as `build/app`.
pub fn build(root: &Path) {
    std::fs::create_dir_all(root.join("build")).unwrap();
    let built = std::process::Command::new("cc")
        .args(["-g", "-O0", "-o", "build/app", "main.c"])
        .current_dir(root)
        .status()
        .unwrap();
    assert!(built.success(), "cc failed");
}

/// The committed fixture `name` (a directory under tests/fixtures), as
/// (path, content) pairs for a temp workspace: fixtures are copied, never
/// used in place.
pub fn fixture(name: &str) -> Vec<(String, Vec<u8>)> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let mut files = Vec::new();
    let mut dirs = vec![base.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let relative = path.strip_prefix(&base).unwrap().display().to_string();
                files.push((relative, std::fs::read(&path).unwrap()));
            }
        }
    }
    files
}

/// A temp project holding `files` and a run with the family wired, with
/// the `debug` settings section `debug`.
pub fn project(files: &[(String, Vec<u8>)], debug: Value) -> (tempfile::TempDir, Run) {
    project_with(files, debug, json!({}))
}

/// [`project`] with more user-level settings (`sandbox`, say).
pub fn project_with(
    files: &[(String, Vec<u8>)],
    debug: Value,
    more: Value,
) -> (tempfile::TempDir, Run) {
    let files: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_slice()))
        .collect();
    let dir = gantry_core::testing::workspace_with(&files);
    let mut settings = json!({ "debug": debug });
    if let (Some(all), Some(more)) = (settings.as_object_mut(), more.as_object()) {
        all.extend(more.clone());
    }
    let settings = Settings::from_value(settings).unwrap();
    let builder = Run::builder(Workspace::new(dir.path()).unwrap()).settings(settings);
    (dir, gantry_dap::register(builder).build())
}

/// Calls `debug`; the text of the result, or `ERROR: ` and the message.
pub async fn debug(run: &Run, args: Value) -> String {
    match run.call("debug", args).await {
        Ok(result) => result.text_content(),
        Err(error) => format!("ERROR: {}", error.message),
    }
}

/// The number after `marker` in `text` (`frame 3`, `reference 7`).
pub fn number_after(text: &str, marker: &str) -> i64 {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in:\n{text}"));
    text[at + marker.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number after {marker:?} in:\n{text}"))
}

/// The pid of the live session's adapter (not the smallest of its
/// processes: pids wrap, and a child may have a smaller one).
pub fn adapter_pid(run: &Run) -> i32 {
    run.resource::<gantry_dap::Debugger>()
        .expect("the debugger is wired")
        .current()
        .and_then(|s| s.adapter_pid())
        .expect("a session with an adapter process") as i32
}

/// The session's adapter pid and every process below it now.
pub fn session_processes(run: &Run) -> BTreeSet<i32> {
    let pid = adapter_pid(run);
    let mut all = BTreeSet::from([pid]);
    all.extend(descendants(pid));
    all
}

/// Every live process below `pid`.
pub fn descendants(pid: i32) -> Vec<i32> {
    let mut children: Vec<(i32, i32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 1 && fields[0] != "Z" {
            let me = entry.file_name().to_string_lossy().parse().unwrap_or(0);
            children.push((me, fields[1].parse().unwrap_or(0)));
        }
    }
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for &(child, ppid) in &children {
            if ppid == parent {
                found.push(child);
                frontier.push(child);
            }
        }
    }
    found
}

/// Whether `pid` runs (a zombie does not).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// Checks `condition` until it holds, at most `bound`: for facts with no
/// event a test can await (another process's exit).
pub async fn within(bound: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The workspace's files and their contents, to show a session left it
/// as it was.
pub fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path.clone());
                files.push((path, Vec::new()));
            } else {
                let content = std::fs::read(&path).unwrap_or_default();
                files.push((path, content));
            }
        }
    }
    files.sort();
    files
}
