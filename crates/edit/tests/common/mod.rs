//! Shared by the tests: a workspace with files, a run with the edit tools,
//! and Gantry's state directory kept out of the user's home.

#![allow(dead_code)] // Each test file uses its own part of this.

use std::path::Path;

use gantry_core::{Run, RunBuilder, Workspace};

/// A temp workspace holding `files` (bytes, so tests can write CRLF, BOMs
/// and binaries).
pub fn workspace(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    gantry_core::testing::workspace_with(files)
}

/// A builder for a run on `dir` with the edit tools registered.
pub fn builder(dir: &tempfile::TempDir) -> RunBuilder {
    gantry_edit::register(Run::builder(Workspace::new(dir.path()).unwrap()))
}

/// A run on `dir` with the edit tools, never asking anyone.
pub fn run(dir: &tempfile::TempDir) -> Run {
    builder(dir).build()
}

/// The bytes of file `name` in the workspace `dir`, before any run is
/// made (line endings, BOMs and binaries are the edit tools' concern).
pub fn read(dir: &tempfile::TempDir, name: &str) -> Vec<u8> {
    std::fs::read(dir.path().join(name)).unwrap()
}

/// [`read`] as UTF-8 text.
pub fn read_text(dir: &tempfile::TempDir, name: &str) -> String {
    String::from_utf8(read(dir, name)).unwrap()
}

/// Every file under the workspace with its content, to show nothing
/// changed (no temp file left, no file touched).
pub fn snapshot(dir: &tempfile::TempDir) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let name = path.strip_prefix(root).unwrap().display().to_string();
                out.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir.path(), dir.path(), &mut out);
    out.sort();
    out
}
