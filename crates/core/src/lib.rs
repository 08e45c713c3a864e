//! The core of Gantry: the tool contract, the registry, approval tiers, runs
//! and the one execution pipeline every front end shares.
//!
//! This crate knows no concrete tool. Tool families (files, language
//! servers, structural search, kernels, ...) implement [`Tool`] in their own
//! crates; front ends (the MCP server, the CLI, a library harness) build a
//! [`Run`] and call tools through [`Run::call`].
//!
//! ```
//! use gantry_core::{Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec, Workspace};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! /// Says hello.
//! struct Hello;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct HelloParams {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! #[async_trait::async_trait]
//! impl Tool for Hello {
//!     type Params = HelloParams;
//!     fn spec(&self) -> ToolSpec {
//!         ToolSpec::new("hello", "Hello", Tier::Read, "Greets someone.")
//!     }
//!     fn describe(&self, p: &HelloParams) -> String {
//!         format!("greet {}", p.name)
//!     }
//!     async fn execute(&self, p: HelloParams, _: ToolContext) -> Result<ToolResult, ToolError> {
//!         Ok(ToolResult::text(format!("hello, {}", p.name)))
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let run = Run::builder(Workspace::new(".").unwrap()).tool(Hello).build();
//! let result = run.call("hello", serde_json::json!({"name": "world"})).await.unwrap();
//! assert_eq!(result.text_content(), "hello, world");
//! let error = run.call("hello", serde_json::json!({})).await.unwrap_err();
//! assert!(error.message.contains("name: missing required parameter"));
//! # });
//! ```
#![deny(missing_docs)]

pub mod caller;
pub mod family;
#[doc(hidden)]
pub mod fuzz;
pub mod human;
mod pipeline;
pub mod registry;
pub mod result;
pub mod run;
pub mod runlog;
pub mod schema;
pub mod settings;
pub mod state;
pub mod suggest;
mod sync;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;
pub mod tier;
pub mod tool;
pub mod trust;
pub mod workspace;
pub mod write;

pub use async_trait::async_trait;
pub use caller::{Caller, Chain, Nested, NestedObserver};
pub use family::{Family, PlainFamily, WireError, check_section};
pub use human::{Answer, Choice, Confirmation, Human, HumanError, Question};
pub use pipeline::{CallError, CallErrorKind, CallOptions};
pub use registry::Listing;
pub use result::{Background, Display, Part, ToolResult};
pub use run::{BuildHook, Notices, Resource, Run, RunBuilder, Surface, TouchObserver, WeakRun};
pub use settings::{Settings, SettingsError};
pub use sync::lock;
pub use tier::{ApprovalMode, Tier};
pub use tokio_util::sync::CancellationToken;
pub use tool::{DynTool, Prepared, Progress, ProgressSink, Tool, ToolContext, ToolError, ToolSpec};
pub use workspace::{DirEntry, NotRegular, OpenDir, PathError, Workspace, read_regular};
pub use write::{Applied, ChangeSet, WriteError, WriteHook};

#[cfg(test)]
mod nested_tests;
#[cfg(test)]
mod tests;
