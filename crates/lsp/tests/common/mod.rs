//! Shared helpers of the tests against real language servers.

#![allow(dead_code)]

use gantry_core::write::ChangeSet;
use gantry_core::{Run, RunBuilder, Settings, Workspace};
use serde_json::{Value, json};

/// The variable that asks to skip the tests that need a real language
/// server (`GANTRY_SKIP_LSP=1`); README's test section documents it.
pub const SKIP: &str = "GANTRY_SKIP_LSP";

/// Whether a test that drives the language servers `binaries` runs:
/// false only when [`SKIP`] asks to skip such tests, which the test says
/// on stderr (and scripts/test.sh in its summary). Otherwise a binary
/// missing from PATH fails the test, so a green run means these tests
/// ran. A name also counts as found in Debian's versioned form
/// (`clangd-19` for `clangd`).
pub fn need(binaries: &[&str]) -> bool {
    let skipped = format!("the test, which needs {}", binaries.join(", "));
    if gantry_core::testing::skip_requested(SKIP, &skipped) {
        return false;
    }
    let missing: Vec<&str> = binaries
        .iter()
        .copied()
        .filter(|bin| on_path(bin).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "missing {} on PATH: scripts/install-lsp.sh installs it; set {SKIP}=1 to skip the tests that need a language server",
        missing.join(", ")
    );
    true
}

/// Whether typescript-language-server can run here (see [`need`]): the
/// server and a TypeScript that still ships `tsserver` (TypeScript 7, the
/// native port, does not) next to the `tsc` on PATH.
pub fn typescript() -> bool {
    if !need(&["typescript-language-server", "tsc"]) {
        return false;
    }
    let tsserver = on_path("tsc")
        .and_then(|tsc| std::fs::canonicalize(tsc).ok())
        .and_then(|tsc| Some(tsc.parent()?.parent()?.join("lib/tsserver.js")))
        .is_some_and(|tsserver| tsserver.is_file());
    assert!(
        tsserver,
        "the TypeScript next to `tsc` has no lib/tsserver.js (TypeScript 7 dropped it): scripts/install-lsp.sh installs typescript@6; set {SKIP}=1 to skip the tests that need a language server"
    );
    true
}

use gantry_process::program::on_path;

/// A temp project with `files` and a run with the family wired, with the
/// test binary's state directory in a temp dir before anything writes
/// (see `gantry_core::testing::state_dir`). The deadlines are generous because the test machine is shared with
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
    let dir = gantry_core::testing::workspace_with(files);
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
