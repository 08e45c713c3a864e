//! Gantry's writing workspace tools: `write_file`, `edit` and `apply_patch`
//! (SPEC §5).
//!
//! None of them writes a file itself. Each plans a
//! [`ChangeSet`](gantry_core::write::ChangeSet) against the content it
//! read, shows that plan as a unified diff when the person is asked to
//! confirm, and hands exactly that plan to the run's write path
//! ([`Run::apply`](gantry_core::Run::apply)): all-or-nothing, crash-safe,
//! refused when a file changed since it was planned (during a long
//! confirmation, say), with the run's write hooks around it. Errors are
//! written for the model: how many matches were found and where, the
//! closest lines when nothing matched, the patch line that does not parse,
//! the context a hunk could not find.
//!
//! ```
//! use gantry_core::{Run, Workspace};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! # gantry_core::testing::state_dir(); // Journals away from the user's.
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("greet.py"), "print('hello')\r\n").unwrap();
//! let run = gantry_edit::register(Run::builder(Workspace::new(dir.path()).unwrap())).build();
//!
//! let result = run
//!     .call("edit", json!({
//!         "path": "greet.py",
//!         "old_string": "print('hello')\n",
//!         "new_string": "print('hello, world')\n",
//!     }))
//!     .await
//!     .unwrap();
//! assert!(result.text_content().starts_with("Edited greet.py"));
//! // The file was CRLF and stays CRLF.
//! let after = std::fs::read_to_string(dir.path().join("greet.py")).unwrap();
//! assert_eq!(after, "print('hello, world')\r\n");
//! # });
//! ```
#![deny(missing_docs)]

pub mod edit;
mod flow;
#[doc(hidden)]
pub mod fuzz;
pub mod patch;
mod report;
mod text;
pub mod write_file;

use std::sync::Arc;

use gantry_core::{DynTool, RunBuilder};

pub use edit::{Edit, EditParams};
pub use patch::{ApplyPatch, ApplyPatchParams};
pub use write_file::{WriteFile, WriteFileParams};

/// The family's tools, for a front end that wires tools itself rather
/// than through [`register`].
pub fn tools() -> Vec<Arc<dyn DynTool>> {
    vec![Arc::new(WriteFile), Arc::new(Edit), Arc::new(ApplyPatch)]
}

/// The family as the run assembly wires it.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("edit", register);

/// Adds `write_file`, `edit` and `apply_patch` to a run being wired. They
/// need nothing beyond the workspace and the run's write path.
pub fn register(mut builder: RunBuilder) -> RunBuilder {
    for tool in tools() {
        builder.add_tool(tool);
    }
    builder
}
