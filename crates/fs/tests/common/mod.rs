//! Shared set-up for the gantry-fs integration tests: a real temporary
//! workspace and a run with the fs tools, called through the pipeline.
#![allow(dead_code)]
// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use gantry_core::{CallError, Run, ToolResult, Workspace};
use serde_json::Value;

/// A temporary workspace directory with a run over it.
pub struct Fixture {
    /// The workspace folder, removed on drop.
    pub dir: tempfile::TempDir,
    /// A run over it with the fs tools.
    pub run: Run,
}

impl Fixture {
    /// An empty workspace; tests add files with [`Fixture::write`].
    pub fn new() -> Self {
        Self::with(&[])
    }

    /// A workspace holding `files` (paths relative to it), as most tests
    /// start, with the test binary's state directory in a temp dir (see
    /// `gantry_core::testing::state_dir`).
    pub fn with(files: &[(&str, &str)]) -> Self {
        let dir = gantry_core::testing::workspace_with(files);
        let run = gantry_fs::register(Run::builder(Workspace::new(dir.path()).unwrap())).build();
        Fixture { dir, run }
    }

    /// The canonical root, as the workspace sees it.
    pub fn root(&self) -> PathBuf {
        self.run.workspace().root().to_path_buf()
    }

    /// `relative` under the canonical root.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root().join(relative)
    }

    /// Writes a file, creating parents.
    pub fn write(&self, relative: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, content).unwrap();
        path
    }

    /// Creates a folder, with its parents.
    pub fn mkdir(&self, relative: &str) -> PathBuf {
        let path = self.path(relative);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// Calls `tool` through the pipeline, whatever the outcome.
    pub async fn call(&self, tool: &str, args: Value) -> Result<ToolResult, CallError> {
        self.run.call(tool, args).await
    }

    /// Calls and expects success; returns the text for the model.
    pub async fn ok(&self, tool: &str, args: Value) -> String {
        gantry_core::testing::ok(&self.run, tool, args).await
    }

    /// Calls and expects failure; returns the message.
    pub async fn err(&self, tool: &str, args: Value) -> String {
        gantry_core::testing::err(&self.run, tool, args).await
    }
}

/// Sets a file's modification time to `secs` after the epoch.
pub fn set_mtime(path: &Path, secs: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
        .unwrap();
}
