//! Language servers for Gantry (SPEC §6): the `lsp` tool (read), the
//! `lsp_rename` tool (write) and diagnostics on every write.
//!
//! The crate follows helix's split: [`transport`] speaks JSON-RPC to a
//! process (over gantry-process's framing and pending-request map),
//! [`client`] speaks typed LSP over it, [`convert`] is the one place
//! positions and URIs change form, [`servers`] is the table of servers and
//! how each is found, and [`supervisor`] runs one server per (server, root)
//! for the length of a run. The tools and the write hook sit on top.
//!
//! Positions are a 1-based line plus a symbol substring of that line, never
//! a column: see [`locate`].
//!
//! ```no_run
//! use gantry_core::{Run, Workspace};
//!
//! # async fn demo() {
//! let builder = Run::builder(Workspace::new(".").unwrap());
//! let run = gantry_lsp::register(builder).build();
//! let answer = run
//!     .call(
//!         "lsp",
//!         serde_json::json!({
//!             "action": "references", "file": "src/app.py", "line": 12, "symbol": "parse_config"
//!         }),
//!     )
//!     .await;
//! // Every write now reports the problems it introduced, and the servers
//! // end with the run.
//! run.shutdown().await;
//! # }
//! ```
#![deny(missing_docs)]

mod checker;
pub mod client;
mod compile_db;
pub mod convert;
mod dependents;
mod diagnostics;
pub mod locate;
mod paths;
mod rename;
mod render;
pub mod server;
pub mod servers;
mod spec;
pub mod supervisor;
mod tool;
pub mod toolchain;
pub mod transport;
mod watch;

use std::path::Path;
use std::sync::Arc;

use gantry_core::{Run, RunBuilder};
use gantry_process::Sandbox;
use toolchain::{Planted, Toolchain};

pub use diagnostics::{Delta, Diagnostics, DiagnosticsHook, Ledger};
pub use rename::{LspRename, LspRenameParams};
pub use servers::{Config, LspSettings};
pub use supervisor::Supervisor;
pub use tool::{Action, Lsp, LspParams};

/// The family as the run assembly wires it; its status is the language
/// server table (which servers can start here, and why the others not).
pub struct LspFamily;

#[gantry_core::async_trait]
impl gantry_core::Family for LspFamily {
    fn name(&self) -> &'static str {
        "lsp"
    }

    fn settings_keys(&self) -> &'static [&'static str] {
        &[SETTINGS_SECTION]
    }

    fn check_settings(&self, settings: &gantry_core::Settings) -> Vec<String> {
        let mut warnings = gantry_core::check_section::<LspSettings>(settings, SETTINGS_SECTION);
        if let Ok((_, ignored)) = honoured(settings) {
            warnings.extend(
                settings.ignored_untrusted(&ignored, "these choose what a language server runs"),
            );
        }
        warnings
    }

    async fn wire(&self, builder: RunBuilder) -> Result<RunBuilder, gantry_core::WireError> {
        Ok(register(builder))
    }

    async fn status(&self, run: &Run) -> Vec<String> {
        match Supervisor::of(run) {
            Some(supervisor) => supervisor
                .status()
                .await
                .lines()
                .map(String::from)
                .collect(),
            None => Vec::new(),
        }
    }
}

/// The settings section of the family.
const SETTINGS_SECTION: &str = "lsp";

/// The `lsp` section as honoured: in an untrusted workspace, its own file
/// may not choose what a server runs (a cloned repository could name any
/// program, a `tsserver` path or an interpreter to a server's settings, or
/// add a server whose id is a program on `PATH`), so those keys stand as
/// the user set them. Also returns what was ignored.
fn honoured(
    settings: &gantry_core::Settings,
) -> Result<(LspSettings, Vec<String>), gantry_core::SettingsError> {
    let built_in = Config::default().servers;
    settings.section_honoured(SETTINGS_SECTION, |path| match path {
        ["servers", id] => !built_in.iter().any(|server| server.id == *id),
        [
            "servers",
            _,
            "command" | "args" | "probe" | "initializationOptions" | "settings",
        ] => true,
        _ => false,
    })
}

/// Wires the family into a run: the supervisor (owned by the run, so every
/// server ends with it), `lsp`, `lsp_rename`, and the write hook that
/// reports, for every writer, the problems a write introduced in the files
/// it changed and in those using what it changed.
///
/// A malformed `lsp` settings section is logged and the defaults are used:
/// the tools stay on the surface, and `lsp status` shows the table in
/// force.
///
/// At read tier and in a folder not trusted, servers and checkers use only
/// toolchains from outside the checkout (see [`toolchain`]).
pub fn register(builder: RunBuilder) -> RunBuilder {
    let toolchain = Toolchain::of(
        builder.current_surface().cap,
        builder.current_settings().workspace_trusted(),
    );
    let settings = match honoured(builder.current_settings()) {
        Ok((settings, _ignored)) => settings,
        Err(e) => {
            tracing::warn!("{e}; using the default language-server settings");
            LspSettings::default()
        }
    };
    let sandbox = Sandbox::of_settings(builder.current_settings(), builder.workspace());
    let planted = Planted::new(
        sandbox.writable().iter().cloned().chain(
            std::iter::once(builder.workspace().root())
                .chain(builder.workspace().extra_roots())
                .map(Path::to_path_buf),
        ),
    );
    let config = Config::from_settings(settings).with_toolchain(toolchain, planted);
    let supervisor = Supervisor::new(
        builder.workspace().root(),
        config,
        builder.notices(),
        sandbox,
    );
    let diagnostics = Diagnostics::new(supervisor.clone());
    builder
        .resource(Arc::new(supervisor.clone()))
        .resource(diagnostics.clone())
        .write_hook(Arc::new(DiagnosticsHook::new(diagnostics.clone())))
        .on_touch(Arc::new(touch))
        .tool(Lsp {
            supervisor: supervisor.clone(),
            diagnostics,
        })
        .tool(LspRename { supervisor })
}

/// Tells the run's language servers that a file is being worked on (read,
/// searched, about to be edited): its server starts in the background and
/// opens the file, so the first real request or write rarely waits. Other
/// families call this; without the family wired it does nothing.
pub fn touch(run: &Run, path: &Path) {
    if let Some(supervisor) = Supervisor::of(run) {
        supervisor.touch(path);
    }
}
