//! Shared helpers of the tests against real language servers.

#![allow(dead_code)]

use std::path::Path;

use gantry_core::write::ChangeSet;
use gantry_core::{Run, RunBuilder, Settings, Workspace};
use serde_json::{Value, json};

/// Whether every binary is on PATH. Missing: the test is skipped with a
/// printed reason, except under `CI=true`, where it fails.
pub fn have(binaries: &[&str]) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let missing: Vec<&str> = binaries
        .iter()
        .copied()
        .filter(|bin| !std::env::split_paths(&path).any(|dir| dir.join(bin).is_file()))
        .collect();
    if missing.is_empty() {
        return true;
    }
    let reason = format!(
        "missing {} (scripts/install-lsp.sh installs it)",
        missing.join(", ")
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{reason}");
    }
    eprintln!("SKIPPED: {reason}");
    false
}

/// Whether typescript-language-server can run here: the server and a
/// TypeScript that still ships `tsserver` (TypeScript 7, the native port,
/// does not) next to the `tsc` on PATH.
pub fn typescript() -> bool {
    if !have(&["typescript-language-server", "tsc"]) {
        return false;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let tsserver = std::env::split_paths(&path)
        .map(|dir| dir.join("tsc"))
        .find(|tsc| tsc.is_file())
        .and_then(|tsc| std::fs::canonicalize(tsc).ok())
        .and_then(|tsc| Some(tsc.parent()?.parent()?.join("lib/tsserver.js")))
        .is_some_and(|tsserver| tsserver.is_file());
    if tsserver {
        return true;
    }
    let reason = "the TypeScript next to `tsc` has no lib/tsserver.js (TypeScript 7 dropped it; scripts/install-lsp.sh installs typescript@6)";
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{reason}");
    }
    eprintln!("SKIPPED: {reason}");
    false
}

/// The first `clangd` or `clangd-NN` on PATH.
pub fn clangd() -> Option<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let versioned = name
                .strip_prefix("clangd-")
                .is_some_and(|v| v.parse::<u32>().is_ok());
            if name == "clangd" || versioned {
                return Some(name);
            }
        }
    }
    None
}

/// A temp project with `files` and a run with the family wired. The
/// deadlines are generous because the test machine is shared with
/// builds; the bench measures the real timing.
pub fn project(files: &[(&str, &str)], lsp: Value) -> (tempfile::TempDir, Run) {
    project_with(files, lsp, |builder| builder)
}

/// [`project`] with more families wired by `wire` (the shell, say).
pub fn project_with(
    files: &[(&str, &str)],
    lsp: Value,
    wire: impl FnOnce(RunBuilder) -> RunBuilder,
) -> (tempfile::TempDir, Run) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let mut section = json!({
        "requestTimeoutSeconds": 60,
        "startTimeoutSeconds": 60,
        "diagnosticsDeadlineMs": 20000
    });
    if let (Some(base), Some(extra)) = (section.as_object_mut(), lsp.as_object()) {
        base.extend(extra.clone());
    }
    let settings = Settings::from_value(json!({ "lsp": section })).unwrap();
    let builder = Run::builder(Workspace::new(dir.path()).unwrap()).settings(settings);
    let run = wire(gantry_lsp::register(builder)).build();
    (dir, run)
}

/// Calls `lsp`; the text of the result, or of the error.
pub async fn lsp(run: &Run, args: Value) -> String {
    match run.call("lsp", args).await {
        Ok(result) => result.text_content(),
        Err(error) => format!("ERROR: {}", error.message),
    }
}

/// Writes `text` to `path` through the write path; the notes the hooks
/// appended.
pub async fn write(run: &Run, path: &str, text: &str) -> String {
    let target = run.workspace().resolve(path).unwrap();
    let mut changes = ChangeSet::new();
    changes.plan_write(run.workspace(), &target, text).unwrap();
    run.apply(changes).await.unwrap().notes.join("\n")
}

/// The pids `lsp status` shows.
pub async fn server_pids(run: &Run) -> Vec<i32> {
    let status = lsp(run, json!({"action": "status"})).await;
    status
        .split("pid ")
        .skip(1)
        .filter_map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// Processes of group `pgid` that are still running (zombies are dead).
pub fn group_alive(pgid: i32) -> Vec<i32> {
    let mut alive = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...; comm may hold spaces.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            alive.push(entry.file_name().to_string_lossy().parse().unwrap_or(0));
        }
    }
    alive
}

/// Kills one process with SIGKILL.
pub fn kill(pid: i32) {
    // SAFETY: plain kill(2) on a pid the test read from status.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// Checks `condition` until it holds, at most `bound`: for facts with no
/// event to await from a test (a process exit reaped by another task).
pub async fn within(bound: std::time::Duration, mut condition: impl AsyncFnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        if condition().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Path helper for assertions.
pub fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap()
}
