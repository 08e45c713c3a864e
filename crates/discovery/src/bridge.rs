//! The run's side of discovery: the tools of every configured server and
//! of the discovery command, kept in the run's registry as the servers
//! come, change their lists, die and come back.
//!
//! Names are settled here, once every other family is wired: a built-in
//! tool always wins, then the first declaration (command-discovered tools
//! first, then servers in alias order, each in its own order); each loser
//! is said in `gantry status`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use base64::Engine;
use gantry_core::{
    Display, DynTool, Notices, Part, Prepared, Resource, Run, Tier, ToolContext, ToolError,
    ToolResult, ToolSpec, WeakRun, lock,
};
use serde_json::Value;

use crate::command::DiscoveredTool;
use crate::names::{bridged_name, clean_schema};
use crate::server::{Server, State};

/// Every tool from elsewhere in one run: the servers, the discovered
/// tools, and what of them the run's registry holds.
pub struct Bridge {
    servers: Vec<Arc<Server>>,
    discovered: Mutex<Vec<Arc<DiscoveredTool>>>,
    /// What the discovery command gave: see [`Discovery`].
    discovery: Mutex<Discovery>,
    /// The discovery command while it runs, aborted (its process killed)
    /// if the run ends first.
    discovering: Mutex<Option<tokio::task::AbortHandle>>,
    run: OnceLock<WeakRun>,
    published: Mutex<Published>,
    notices: Notices,
    /// Whether the run's first listing has stopped waiting for the
    /// starts: tools that arrive after that are news to the model (a
    /// notice); those that arrive before are simply listed.
    arrived: AtomicBool,
}

/// What this bridge put in the run's registry.
#[derive(Default)]
struct Published {
    /// Tool name → what it was built from, to tell a change.
    names: BTreeMap<String, Value>,
    /// Name clashes, for `gantry status`.
    losers: Vec<String>,
    /// Servers whose tools were listed at the last sync.
    up: BTreeMap<String, bool>,
    /// Servers that were ever up in this run.
    was_up: std::collections::BTreeSet<String>,
}

/// Where the discovery command is.
#[derive(Debug, Clone, PartialEq)]
pub enum Discovery {
    /// No `toolDiscoveryCommand`.
    NotConfigured,
    /// Still running: its tools arrive when it finishes.
    Running,
    /// It declared this many tools.
    Declared(usize),
    /// It failed, and why.
    Failed(String),
}

impl Bridge {
    /// A bridge over `servers` (built with [`Server::new`], told of
    /// changes through the weak handle this gives them); the discovered
    /// tools come with [`Bridge::discovered`].
    pub fn new(
        servers: impl FnOnce(std::sync::Weak<Bridge>) -> Vec<Arc<Server>>,
        notices: Notices,
    ) -> Arc<Bridge> {
        Arc::new_cyclic(|weak| Bridge {
            servers: servers(weak.clone()),
            discovered: Mutex::default(),
            discovery: Mutex::new(Discovery::NotConfigured),
            discovering: Mutex::default(),
            run: OnceLock::new(),
            published: Mutex::default(),
            notices,
            arrived: AtomicBool::new(false),
        })
    }

    /// The configured servers.
    pub fn servers(&self) -> &[Arc<Server>] {
        &self.servers
    }

    /// Where the discovery command is.
    pub fn discovery(&self) -> Discovery {
        lock(&self.discovery).clone()
    }

    /// Says the discovery command is running in `task`, which is aborted
    /// if the run ends before it finishes (unless it has finished already).
    pub fn discovering(&self, task: tokio::task::AbortHandle) {
        let mut discovery = lock(&self.discovery);
        if *discovery == Discovery::NotConfigured {
            *discovery = Discovery::Running;
            *lock(&self.discovering) = Some(task);
        }
    }

    /// Says the run's first listing no longer waits for the starts (they
    /// ended, or their bound passed).
    pub fn arrived(&self) {
        self.arrived.store(true, Ordering::Release);
    }

    /// What the discovery command gave: its tools join the run's (with
    /// `tools/list_changed`, and a notice when the first listing did not
    /// wait for them).
    pub fn discovered(&self, outcome: Result<Vec<Arc<DiscoveredTool>>, String>) {
        let late = self.arrived.load(Ordering::Acquire);
        let said = match outcome {
            Ok(tools) => {
                let count = tools.len();
                *lock(&self.discovered) = tools;
                *lock(&self.discovery) = Discovery::Declared(count);
                format!("toolDiscoveryCommand finished: its {count} tools are now available")
            }
            Err(error) => {
                tracing::warn!("tool discovery: {error}");
                *lock(&self.discovery) = Discovery::Failed(error.clone());
                format!("toolDiscoveryCommand failed: {error}")
            }
        };
        lock(&self.discovering).take();
        if late {
            self.notices.push(said);
        }
        self.sync();
    }

    /// Name clashes this run settled, one line each.
    pub fn losers(&self) -> Vec<String> {
        lock(&self.published).losers.clone()
    }

    /// Called once the run is built: from now on the run's registry
    /// follows the servers.
    pub fn attach(&self, run: &Run) {
        let _ = self.run.set(run.downgrade());
        self.sync();
    }

    /// Brings the run's registry in line with the servers' states and
    /// tools; a change is announced to the run's watchers (MCP sessions
    /// send `tools/list_changed`). Nothing here awaits.
    pub fn sync(&self) {
        let Some(run) = self.run.get().and_then(WeakRun::upgrade) else {
            return;
        };
        let mut published = lock(&self.published);
        let registry = run.registry();
        let mut wanted: BTreeMap<String, (Arc<dyn DynTool>, Value)> = BTreeMap::new();
        let mut losers = Vec::new();
        let mut offer = |tool: Arc<dyn DynTool>, from: String| {
            let spec = tool.spec();
            let ours = published.names.contains_key(&spec.name);
            if registry.get(&spec.name).is_some() && !ours {
                losers.push(format!(
                    "`{}` from {from} is hidden by Gantry's own tool of that name",
                    spec.name
                ));
            } else {
                match wanted.entry(spec.name.clone()) {
                    std::collections::btree_map::Entry::Occupied(_) => losers.push(format!(
                        "`{}` from {from} is hidden by an earlier tool of that name",
                        spec.name
                    )),
                    std::collections::btree_map::Entry::Vacant(slot) => {
                        let fingerprint = serde_json::json!([
                            spec.description,
                            spec.tier,
                            spec.trusted,
                            spec.display_name,
                            tool.schema()
                        ]);
                        slot.insert((tool, fingerprint));
                    }
                }
            }
        };
        for tool in lock(&self.discovered).iter() {
            offer(tool.clone(), "the discovery command".into());
        }
        let mut up = BTreeMap::new();
        let mut down_reasons: BTreeMap<String, String> = BTreeMap::new();
        let mut restarting = std::collections::BTreeSet::new();
        for server in &self.servers {
            match server.state() {
                State::Ready(connection) => {
                    up.insert(server.alias.clone(), true);
                    for tool in connection.tools() {
                        offer(
                            Arc::new(BridgedTool::new(server.clone(), tool)),
                            format!("MCP server `{}`", server.alias),
                        );
                    }
                }
                State::Down { reason, failures } => {
                    up.insert(server.alias.clone(), false);
                    down_reasons.insert(server.alias.clone(), server.down_line(&reason, failures));
                }
                State::Starting { .. } | State::Stopped => {
                    up.insert(server.alias.clone(), false);
                }
            }
            let kept = server.tools_while_restarting();
            if kept.is_some() {
                restarting.insert(server.alias.clone());
            }
            for tool in kept.unwrap_or_default() {
                offer(
                    Arc::new(BridgedTool::new(server.clone(), tool)),
                    format!("MCP server `{}`", server.alias),
                );
            }
        }
        for (alias, now_up) in &up {
            let was_up = published.up.get(alias).copied().unwrap_or(false);
            if was_up != *now_up {
                let (kind, detail) = match now_up {
                    true => ("resource.start", None),
                    false => ("resource.end", down_reasons.get(alias)),
                };
                run.log().record(
                    kind,
                    serde_json::json!({ "resource": format!("server {alias}"), "detail": detail }),
                );
            }
            match (was_up, now_up, down_reasons.get(alias)) {
                (true, false, Some(line)) if restarting.contains(alias) => self.notices.push(
                    format!("{line}; a call to its tools waits for it to be back"),
                ),
                (true, false, Some(line)) => self
                    .notices
                    .push(format!("{line}; its tools are gone until it is back")),
                (false, true, _) if published.was_up.contains(alias) => self
                    .notices
                    .push(format!("MCP server `{alias}` is up; its tools are back")),
                (false, true, _)
                    if published.up.contains_key(alias) && self.arrived.load(Ordering::Acquire) =>
                {
                    self.notices.push(format!(
                        "MCP server `{alias}` is up: its tools are now available"
                    ))
                }
                _ => {}
            }
        }
        published.was_up.extend(
            up.iter()
                .filter(|(_, up)| **up)
                .map(|(alias, _)| alias.clone()),
        );
        published.up = up;
        published.losers = losers;
        let removed: Vec<String> = published
            .names
            .keys()
            .filter(|name| !wanted.contains_key(*name))
            .cloned()
            .collect();
        let added: Vec<(String, Arc<dyn DynTool>, Value)> = wanted
            .into_iter()
            .filter(|(name, (_, fingerprint))| published.names.get(name) != Some(fingerprint))
            .map(|(name, (tool, fingerprint))| (name, tool, fingerprint))
            .collect();
        if removed.is_empty() && added.is_empty() {
            return;
        }
        let reason_of = |name: &str| {
            self.servers
                .iter()
                .find(|server| {
                    name.starts_with(&format!("{}__", crate::names::model_name(&server.alias)))
                })
                .map(|server| match server.state() {
                    State::Ready(_) => format!("MCP server `{}` no longer offers it", server.alias),
                    _ => server
                        .connection()
                        .err()
                        .unwrap_or_else(|| format!("MCP server `{}` is not running", server.alias)),
                })
                .unwrap_or_else(|| "it is no longer offered".into())
        };
        let failed = run.change_tools(|registry| {
            let mut failed = Vec::new();
            for name in &removed {
                registry.unregister(name, reason_of(name));
            }
            for (name, tool, _) in &added {
                registry.unregister(name, "being replaced");
                if let Err(error) = registry.register(tool.clone()) {
                    failed.push((name.clone(), error));
                }
            }
            failed
        });
        for name in removed {
            published.names.remove(&name);
        }
        for (name, _, fingerprint) in added {
            published.names.insert(name, fingerprint);
        }
        for (name, error) in failed {
            published.names.remove(&name);
            published
                .losers
                .push(format!("`{name}` is not offered: {error}"));
        }
    }
}

#[gantry_core::async_trait]
impl Resource for Bridge {
    fn name(&self) -> String {
        "discovery".into()
    }

    async fn shutdown(&self) {
        // Dropping the command's future kills its process group.
        if let Some(task) = lock(&self.discovering).take() {
            task.abort();
        }
        let mut stopping = tokio::task::JoinSet::new();
        for server in &self.servers {
            let server = server.clone();
            stopping.spawn(async move { server.stop().await });
        }
        while stopping.join_next().await.is_some() {}
    }

    fn kill_now(&self) {
        if let Some(task) = lock(&self.discovering).take() {
            task.abort();
        }
        for server in &self.servers {
            server.kill_now();
        }
    }
}

/// One tool of a bridged server, named `<alias>__<tool>`.
pub struct BridgedTool {
    server: Arc<Server>,
    tool: rmcp::model::Tool,
    name: String,
    schema: Value,
}

impl BridgedTool {
    fn new(server: Arc<Server>, tool: rmcp::model::Tool) -> Self {
        let schema = clean_schema(&Value::Object((*tool.input_schema).clone()));
        BridgedTool {
            name: bridged_name(&server.alias, &tool.name),
            server,
            tool,
            schema,
        }
    }

    /// From the server's settings (`tier`), else its annotations: a
    /// read-only hint makes a read tool, anything else may act.
    fn tier(&self) -> Tier {
        self.server.settings.tier.unwrap_or(if self.read_only() {
            Tier::Read
        } else {
            Tier::Exec
        })
    }

    /// Whether the server marks the tool read-only.
    fn read_only(&self) -> bool {
        self.tool
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.read_only_hint)
            .unwrap_or(false)
    }
}

#[gantry_core::async_trait]
impl DynTool for BridgedTool {
    fn spec(&self) -> ToolSpec {
        let description = self.tool.description.as_deref().unwrap_or("").trim();
        let spec = ToolSpec::new(
            &self.name,
            self.tool
                .title
                .clone()
                .unwrap_or_else(|| self.tool.name.to_string()),
            self.tier(),
            format!(
                "{description}\n\n(Tool `{}` of the MCP server `{}`.)",
                self.tool.name, self.server.alias
            ),
        );
        if self.server.settings.trust {
            spec.trusted()
        } else {
            spec
        }
    }

    fn schema(&self) -> Value {
        self.schema.clone()
    }

    fn validate(&self, _args: &Value, _run: &Run) -> Result<(), String> {
        Ok(())
    }

    fn describe(&self, args: &Value) -> String {
        format!(
            "call `{}` of MCP server `{}` with {args}",
            self.tool.name, self.server.alias
        )
    }

    async fn confirmation(&self, _: &Value, _: &Run) -> Result<Option<Prepared>, ToolError> {
        Ok(None)
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let result = self
            .server
            .call(
                &self.tool.name,
                args,
                ctx.human().cloned(),
                self.read_only(),
            )
            .await
            .map_err(ToolError::Failed)?;
        let failed = result.is_error == Some(true);
        let mut parts: Vec<Part> = result
            .content
            .iter()
            .filter_map(|block| serde_json::to_value(block).ok())
            .map(part_of)
            .collect();
        if parts.is_empty()
            && let Some(structured) = result.structured_content
        {
            parts.push(Part::Json { value: structured });
        }
        let text: Vec<String> = parts
            .iter()
            .map(|part| match part {
                Part::Text { text } => text.clone(),
                Part::Image { mime_type, data } => {
                    format!("[{mime_type} image, {} bytes]", data.len())
                }
                Part::Json { value } => value.to_string(),
            })
            .collect();
        let text = text.join("\n");
        if failed {
            return Err(ToolError::Failed(format!(
                "`{}` of MCP server `{}` failed: {text}",
                self.tool.name, self.server.alias
            )));
        }
        Ok(ToolResult::new(parts, Display::Markdown { markdown: text }))
    }
}

/// One MCP content block as a part for the model.
fn part_of(block: Value) -> Part {
    let field = |name: &str| block.get(name).and_then(Value::as_str).map(String::from);
    match block.get("type").and_then(Value::as_str) {
        Some("text") => Part::text(field("text").unwrap_or_default()),
        Some("image") => {
            let decoded = field("data")
                .and_then(|data| base64::engine::general_purpose::STANDARD.decode(data).ok());
            match (decoded, field("mimeType")) {
                (Some(data), Some(mime_type)) => Part::Image { mime_type, data },
                _ => Part::text("[an image that could not be decoded]"),
            }
        }
        Some("resource") => match block.pointer("/resource/text").and_then(Value::as_str) {
            Some(text) => Part::text(text),
            None => Part::Json { value: block },
        },
        _ => Part::Json { value: block },
    }
}
