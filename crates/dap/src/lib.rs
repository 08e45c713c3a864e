//! Gantry's debugger (SPEC §8): the `debug` tool (exec), driving one
//! Debug Adapter Protocol session per run, so an agent can find a bug by
//! stopping at it: launch to a breakpoint, read the stack and the
//! variables, evaluate, step, and never hang.
//!
//! The crate follows helix-dap's split, as `gantry-lsp` does for language
//! servers: [`transport`] speaks the base protocol (gantry-process's
//! framing and pending map, answers routed by `request_seq`, events to the
//! session, reverse requests refused); [`session`] is one adapter and the
//! state its events drive (running, stopped, exited, terminated), the
//! debuggee's output and the hard time limit; [`debugger`] is the run's
//! supervisor (the one session, the breakpoints, which adapters can start
//! here); [`adapters`] is the table of adapters (dart, debugpy, lldb,
//! delve). The tool sits on top.
//!
//! ```no_run
//! use gantry_core::{Run, Workspace};
//! use serde_json::json;
//!
//! # async fn demo() {
//! let run = gantry_dap::register(Run::builder(Workspace::new(".").unwrap())).build();
//! run.call("debug", json!({"op": "breakpoints", "file": "app.py", "lines": [12]})).await;
//! // Runs to line 12 and answers with the stop, the source line and the locals.
//! run.call("debug", json!({"op": "launch", "program": "app.py"})).await;
//! run.call("debug", json!({"op": "evaluate", "expression": "len(items)"})).await;
//! // The program and the adapter end with the run.
//! run.shutdown().await;
//! # }
//! ```
#![deny(missing_docs)]

pub mod adapters;
pub mod debugger;
pub mod session;
mod tool;
pub mod transport;
pub mod types;

use std::sync::Arc;
use std::time::Duration;

use gantry_core::{Run, RunBuilder};

pub use adapters::Adapter;
pub use debugger::{DebugSettings, Debugger};
pub use tool::{Debug, DebugParams, Op};

/// The settings section of the family.
const SETTINGS_SECTION: &str = "debug";

/// The family as the assembly wires it; its status is the session's.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("dap", register)
    .settings(&[SETTINGS_SECTION], check_settings)
    .status(status);

fn check_settings(settings: &gantry_core::Settings) -> Vec<String> {
    gantry_core::check_section::<DebugSettings>(settings, SETTINGS_SECTION)
}

fn status(run: &Run) -> Vec<String> {
    run.resource::<Debugger>()
        .map(|debugger| vec![gantry_core::Resource::status(debugger.as_ref())])
        .unwrap_or_default()
}

/// Wires the family into a run: the debugger (owned by the run, so the
/// session ends with it) and `debug`. A malformed `debug` section is
/// logged and the defaults are used.
pub fn register(builder: RunBuilder) -> RunBuilder {
    let settings = builder
        .current_settings()
        .section::<DebugSettings>(SETTINGS_SECTION)
        .unwrap_or_else(|e| {
            tracing::warn!("{e}; using the default debug settings");
            DebugSettings::default()
        });
    let ttl = settings
        .ttl_seconds
        .map(Duration::from_secs)
        .unwrap_or(debugger::DEFAULT_TTL);
    let debugger = Arc::new(Debugger::new(ttl, builder.notices()));
    builder.resource(debugger.clone()).tool(Debug { debugger })
}
