//! Gantry's tools discovered from a command and bridged from other MCP
//! servers (SPEC §4): a user's existing Qwen Code / Gemini CLI
//! configuration brings their other tools in through Gantry, under the
//! same tiers, approvals and pipeline as Gantry's own.
//!
//! - `toolDiscoveryCommand` prints function declarations; each becomes an
//!   `exec` tool run by `toolCallCommand <name>` with the arguments as JSON
//!   on stdin ([`command`]).
//! - `mcpServers.<alias>` are started (stdio through `gantry-process`, or
//!   streamable HTTP) with rmcp as the client ([`client`]); their tools are
//!   bridged as `<alias>__<tool>` ([`server`], [`bridge`]).
//!
//! Both start processes, so both are honoured only from the user's own
//! settings or a folder the user trusts ([`config`]).
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "fs": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//!             "includeTools": ["read_file", "list_directory"], "trust": true },
//!     "docs": { "httpUrl": "http://127.0.0.1:8000/mcp", "headers": { "Authorization": "Bearer $DOCS_TOKEN" } }
//!   }
//! }
//! ```
//!
//! A call to `fs__read_file` then goes through the run like any other:
//!
//! ```no_run
//! # async fn demo(run: gantry_core::Run) {
//! let text = run.call("fs__read_file", serde_json::json!({"path": "README.md"})).await;
//! # }
//! ```
#![deny(missing_docs)]

pub mod bridge;
pub mod client;
pub mod command;
pub mod config;
pub mod names;
pub mod server;

use std::sync::Arc;

use gantry_process::Sandbox;

use gantry_core::{Family, Run, RunBuilder, Settings, WireError};

use crate::bridge::{Bridge, Discovery};
use crate::command::{Declaration, DiscoveredTool};
use crate::config::DiscoverySettings;
use crate::server::{STARTUP_BOUND, Server, State};

/// The tools of the discovery command's `declarations`, each run by
/// `toolCallCommand` (or failing with why it cannot be).
fn discovered_tools(
    declarations: Vec<Declaration>,
    call_command: Option<String>,
) -> Vec<Arc<DiscoveredTool>> {
    let call = call_command
        .as_deref()
        .ok_or_else(|| format!("`{}` is not set", config::CALL_COMMAND))
        .and_then(|call| command::words(config::CALL_COMMAND, call));
    declarations
        .into_iter()
        .map(|declaration| Arc::new(DiscoveredTool::new(declaration, call.clone())))
        .collect()
}

/// The sandbox of the run being wired, for what the family starts before
/// the run exists (`Sandbox::of` needs the run): the same policy from the
/// same settings and roots. Sandbox settings that cannot be read start
/// nothing, as they run nothing anywhere else.
fn wiring_sandbox(builder: &RunBuilder) -> Result<Sandbox, String> {
    let sandbox = Sandbox::of_settings(builder.current_settings(), builder.workspace());
    match sandbox.refusal() {
        Some(why) => Err(format!("nothing is started: {why}")),
        None => Ok(sandbox),
    }
}

/// The family as the assembly wires it.
pub const FAMILY: DiscoveryFamily = DiscoveryFamily;

/// Discovered and bridged tools: started while the run is wired, and
/// waited for by the first listing (not by the wiring), so the first
/// `tools/list` has them, except servers slower than [`STARTUP_BOUND`],
/// whose tools arrive later.
pub struct DiscoveryFamily;

#[gantry_core::async_trait]
impl Family for DiscoveryFamily {
    fn name(&self) -> &'static str {
        "discovery"
    }

    fn settings_keys(&self) -> &'static [&'static str] {
        config::KEYS
    }

    fn check_settings(&self, settings: &Settings) -> Vec<String> {
        match DiscoverySettings::read(settings) {
            Ok(read) => read.warnings(settings),
            Err(error) => vec![error],
        }
    }

    async fn wire(&self, builder: RunBuilder) -> Result<RunBuilder, WireError> {
        // A section of the wrong shape was warned about when the settings
        // were opened; nothing is started from it.
        let Ok(settings) = DiscoverySettings::read(builder.current_settings()) else {
            return Ok(builder);
        };
        if settings.discovery_command.is_none() && settings.servers.is_empty() {
            return Ok(builder);
        }
        let root = builder.workspace().root().to_path_buf();
        let sandbox = wiring_sandbox(&builder);
        let servers = settings
            .servers
            .into_iter()
            .filter(|(_, server)| server.transport().is_ok());
        let bridge = Bridge::new(
            |weak| {
                servers
                    .map(|(alias, server)| {
                        let weak = weak.clone();
                        let on_change: server::OnChange = Arc::new(move || {
                            if let Some(bridge) = weak.upgrade() {
                                bridge.sync();
                            }
                        });
                        Server::new(alias, server, &root, sandbox.clone(), on_change)
                    })
                    .collect()
            },
            builder.notices(),
        );
        for server in bridge.servers() {
            server.start();
        }
        // The discovery command runs beside the servers, under the same
        // bound: the first listing waits for it, and a slow command's
        // tools arrive later, like a slow server's.
        let mut discovery = settings.discovery_command.map(|command| {
            let call = settings.call_command.clone();
            let (told, root, sandbox) = (bridge.clone(), root.clone(), sandbox.clone());
            let task = tokio::spawn(async move {
                let outcome = match sandbox {
                    Ok(sandbox) => command::discover(&command, &root, &sandbox).await,
                    Err(error) => Err(error),
                };
                told.discovered(outcome.map(|declarations| discovered_tools(declarations, call)));
            });
            bridge.discovering(task.abort_handle());
            task
        });
        // The other families wire and the client's `initialize` is
        // answered meanwhile; the first listing waits for these starts.
        let deadline = tokio::time::Instant::now() + STARTUP_BOUND;
        let waited = bridge.clone();
        let arriving = async move {
            if let Some(task) = &mut discovery {
                let _ = tokio::time::timeout_at(deadline, task).await;
            }
            for server in waited.servers() {
                let _ = tokio::time::timeout_at(deadline, server.settled()).await;
            }
            waited.arrived();
        };
        let attach = bridge.clone();
        Ok(builder
            .resource(bridge)
            .on_build(move |run| attach.attach(run))
            .arriving(arriving))
    }

    async fn status(&self, run: &Run) -> Vec<String> {
        let mut lines = match DiscoverySettings::read(run.settings()) {
            Ok(read) => read.warnings(run.settings()),
            Err(error) => vec![error],
        };
        let Some(bridge) = run.resource::<Bridge>() else {
            return lines;
        };
        match bridge.discovery() {
            Discovery::NotConfigured => {}
            Discovery::Running => lines.push(
                "toolDiscoveryCommand is still running: its tools arrive when it finishes".into(),
            ),
            Discovery::Declared(count) => {
                lines.push(format!("toolDiscoveryCommand declared {count} tools"))
            }
            Discovery::Failed(error) => lines.push(format!("toolDiscoveryCommand failed: {error}")),
        }
        for server in bridge.servers() {
            lines.push(match server.state() {
                State::Ready(connection) => format!(
                    "MCP server `{}`: up, {} tools",
                    server.alias,
                    connection.tools().len()
                ),
                State::Starting { failures: 0 } => {
                    format!("MCP server `{}`: starting", server.alias)
                }
                State::Starting { failures } => format!(
                    "MCP server `{}`: restarting after {failures} failures",
                    server.alias
                ),
                State::Down { reason, failures } => server.down_line(&reason, failures),
                State::Stopped => format!("MCP server `{}`: stopped", server.alias),
            });
        }
        lines.extend(bridge.losers());
        lines
    }
}
