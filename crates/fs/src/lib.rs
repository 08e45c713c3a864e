//! Gantry's read-only workspace file tools: `ls`, `read_file`,
//! `read_many_files`, `glob` and `grep` (SPEC §5).
//!
//! These are the tools an agent uses to find its way around a checkout
//! before it changes anything, so they are built for a language model
//! reading the output: numbered lines it can cite, truncation that says
//! how to continue, errors that name what does exist, and images returned
//! as images. Every path goes through the run's [`Workspace`], so nothing
//! outside the workspace is listed or read, whether asked for with `..`,
//! an absolute path or a symlink.
//!
//! A front end adds the whole family with one line, [`register`]:
//!
//! ```
//! use gantry_core::{Run, Workspace};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("notes.txt"), "first\nsecond\n").unwrap();
//!
//! let run = gantry_fs::register(Run::builder(Workspace::new(dir.path()).unwrap())).build();
//! let result = run
//!     .call("read_file", json!({"path": "notes.txt", "offset": 2}))
//!     .await
//!     .unwrap();
//! assert!(result.text_content().starts_with("     2\tsecond"));
//! # });
//! ```
//!
//! [`Workspace`]: gantry_core::Workspace
#![deny(missing_docs)]

mod common;
pub mod glob;
pub mod grep;
pub mod ls;
pub mod read_file;
pub mod read_many_files;
mod sniff;

use std::sync::Arc;

use gantry_core::{DynTool, RunBuilder};

pub use glob::{Glob, GlobParams};
pub use grep::{Grep, GrepParams};
pub use ls::{Ls, LsParams};
pub use read_file::{ReadFile, ReadFileParams};
pub use read_many_files::{ReadManyFiles, ReadManyFilesParams};

/// The family's tools with their default limits, for a front end that
/// wires tools itself (filters them, wraps them) rather than through
/// [`register`].
pub fn tools() -> Vec<Arc<dyn DynTool>> {
    vec![
        Arc::new(Ls),
        Arc::new(ReadFile),
        Arc::new(ReadManyFiles::default()),
        Arc::new(Glob::default()),
        Arc::new(Grep),
    ]
}

/// The family as the run assembly wires it.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("fs", register);

/// Adds `ls`, `read_file`, `read_many_files`, `glob` and `grep` to a run
/// being wired. They need no resource beyond the workspace, so every run
/// can have them.
pub fn register(mut builder: RunBuilder) -> RunBuilder {
    for tool in tools() {
        builder.add_tool(tool);
    }
    builder
}
