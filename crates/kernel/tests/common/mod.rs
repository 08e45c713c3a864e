//! Shared by the kernel tests: a run with `eval` and the tools a cell
//! bridges to (read_file, write_file, shell), real interpreters, and
//! snapshots that show a workspace unchanged.

#![allow(dead_code)] // each test file uses its own part

use std::path::Path;
use std::sync::{Arc, Mutex};

use gantry_core::settings::Settings;
use gantry_core::{
    Answer, ApprovalMode, Confirmation, Human, HumanError, Part, Question, Run, Surface, Tier,
    ToolResult, Workspace, async_trait,
};
use serde_json::{Value, json};

/// A temp workspace holding `files`, with the test state directory in
/// force (kernel environments go there, never into the workspace).
pub fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    gantry_core::testing::workspace_with(files)
}

/// A run on `dir` with `eval`, read_file, write_file and shell, under
/// `surface`, with `settings` (the `eval` section, say) and `human`.
pub fn run_with(
    dir: &Path,
    settings: Value,
    surface: Surface,
    human: Option<Arc<dyn Human>>,
) -> Run {
    let mut builder = Run::builder(Workspace::new(dir).unwrap())
        .settings(Settings::from_value(settings).unwrap())
        .surface(surface);
    if let Some(human) = human {
        builder = builder.human(human);
    }
    let builder = gantry_fs::register(builder);
    let builder = gantry_edit::register(builder);
    let builder = gantry_shell::register(builder);
    gantry_kernel::register(builder).build()
}

/// A run that asks no one (approval mode yolo).
pub fn run(dir: &Path) -> Run {
    run_with_settings(dir, json!({}))
}

/// A run that asks no one, with `settings`.
pub fn run_with_settings(dir: &Path, settings: Value) -> Run {
    run_with(
        dir,
        settings,
        Surface::new(Tier::Exec, ApprovalMode::Yolo),
        None,
    )
}

/// The arguments of a Python cell.
pub fn py(code: &str) -> Value {
    json!({"code": code, "description": "run a small test cell here"})
}

/// The arguments of a JavaScript cell.
pub fn js(code: &str) -> Value {
    json!({"code": code, "description": "run a small test cell here", "language": "javascript"})
}

/// The text of a cell that must succeed.
pub async fn cell(run: &Run, args: Value) -> String {
    gantry_core::testing::ok(run, "eval", args).await
}

/// The result of a cell that must succeed.
pub async fn cell_result(run: &Run, args: Value) -> ToolResult {
    gantry_core::testing::ok_result(run, "eval", args).await
}

/// The message of a cell that must fail.
pub async fn failing(run: &Run, args: Value) -> String {
    gantry_core::testing::err(run, "eval", args).await
}

/// The images of a result.
pub fn images(result: &ToolResult) -> Vec<Vec<u8>> {
    result
        .llm_content
        .iter()
        .filter_map(|part| match part {
            Part::Image { data, .. } => Some(data.clone()),
            _ => None,
        })
        .collect()
}

/// Whether `data` is a whole PNG: the signature, an IHDR with a size,
/// chunks that add up, and IEND last.
pub fn png_dimensions(data: &[u8]) -> Option<(u32, u32)> {
    if !data.starts_with(b"\x89PNG\r\n\x1a\n") {
        return None;
    }
    let mut at = 8;
    let mut size = None;
    while at + 12 <= data.len() {
        let length = u32::from_be_bytes(data[at..at + 4].try_into().ok()?) as usize;
        let kind = &data[at + 4..at + 8];
        if kind == b"IHDR" {
            let width = u32::from_be_bytes(data[at + 8..at + 12].try_into().ok()?);
            let height = u32::from_be_bytes(data[at + 12..at + 16].try_into().ok()?);
            size = Some((width, height));
        }
        at += 12 + length;
        if kind == b"IEND" {
            return if at == data.len() { size } else { None };
        }
    }
    None
}

/// A person who says yes to the tools in `approves` only and remembers
/// what they were asked.
pub struct Person {
    pub approves: Vec<&'static str>,
    pub asked: Mutex<Vec<String>>,
}

impl Person {
    pub fn new(approves: &[&'static str]) -> Arc<Person> {
        Arc::new(Person {
            approves: approves.to_vec(),
            asked: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl Human for Person {
    async fn confirm(&self, tool: &str, confirmation: &Confirmation) -> Result<bool, HumanError> {
        self.asked
            .lock()
            .unwrap()
            .push(format!("{tool}: {}", confirmation.summary));
        Ok(self.approves.contains(&tool))
    }

    async fn ask(&self, _: &Question) -> Result<Answer, HumanError> {
        Ok(Answer::Skipped)
    }
}

/// Every entry under `dir` with its size and modification time: equal
/// before and after means nothing was written there.
pub fn snapshot(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, u64, std::time::SystemTime)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            out.push((name, meta.len(), meta.modified().unwrap()));
            if meta.is_dir() {
                walk(root, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Runs a cell that writes a byte to `started` in `dir` once it is under
/// way, and cancels its call when that byte arrives: cancelled while it
/// runs, not before it reached the kernel. The call must end with an error.
pub async fn cancel_once_started(run: &Run, dir: &Path, code: &str) {
    let started = dir.join("started");
    let fifo = std::ffi::CString::new(started.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo(3) with a NUL-terminated path that lives to the call's end.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let mut said = tokio::net::unix::pipe::OpenOptions::new()
        // Open read-write, so the read end waits for a writer instead of
        // seeing the end of a pipe no one has opened yet.
        .read_write(true)
        .open_receiver(&started)
        .unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = gantry_core::CallOptions {
        cancel: cancel.clone(),
        ..Default::default()
    };
    let call = run.call_with("eval", py(code), options);
    let cancelled = tokio::spawn(async move {
        let mut word = [0u8; 1];
        let read = tokio::io::AsyncReadExt::read_exact(&mut said, &mut word);
        let heard = tokio::time::timeout(std::time::Duration::from_secs(30), read).await;
        cancel.cancel();
        heard.is_ok_and(|read| read.is_ok())
    });
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(40), call).await;
    assert!(cancelled.await.unwrap(), "the cell never started");
    assert!(outcome.expect("the cancel ends the call").is_err());
}
