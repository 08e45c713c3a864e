//! The MCP handler: one instance per MCP session, one run per instance.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gantry_core::lock;
use gantry_core::runlog::Origin;
use gantry_core::{
    CallErrorKind, CallOptions, Human, Listing, Part, Progress, ProgressSink, Run, Tier, ToolResult,
};
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content,
    CustomRequest, CustomResult, Implementation, InitializeRequestParams, InitializeResult,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, SubscriptionFilter, Tool, ToolAnnotations,
};
use rmcp::model::{RequestStateCodec, SealOptions};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::human::{PeerHuman, RetryHuman};

/// Builds the run for a new MCP session (asynchronously: a family may start
/// a process while it is wired). The arguments are the person behind the
/// client when one can be asked (tools that ask a person are wired only
/// then), and where the run comes from, for its log.
pub type RunFactory =
    Arc<dyn Fn(Option<Arc<dyn Human>>, Origin) -> RunFuture + Send + Sync + 'static>;

/// Cancelled when the client of one HTTP exchange goes away before it has
/// read the answer: the call it made is cancelled with it (the HTTP front
/// end puts it in the request's extensions).
#[derive(Clone)]
pub(crate) struct CallerGone(pub(crate) CancellationToken);

/// The run a [`RunFactory`] is building.
pub type RunFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<Run>> + Send>>;

/// What every session of one server shares.
pub(crate) struct Shared {
    pub(crate) factory: RunFactory,
    /// The front end's name in the run log (`mcp stdio`, `mcp http`).
    pub(crate) front: &'static str,
    /// The instructions of the first run built, for the server info
    /// (every run of a server reads the same memory files).
    pub(crate) instructions: std::sync::OnceLock<String>,
    /// Seals the echoed state of input-required round trips so a retry can
    /// only answer the call that asked.
    pub(crate) codec: RequestStateCodec,
    /// Over HTTP, the runs of stateless (2026-07-28) requests, one per
    /// credential. That revision has no sessions to tell clients apart: a
    /// fresh run per request would start a language server for every call
    /// and forget background jobs and staged edits between calls, and one
    /// run for everybody would let one agent of a fleet see and touch
    /// another's jobs.
    pub(crate) stateless: Option<Arc<StatelessRuns>>,
}

/// Which credential a request came with: the index of its bearer token
/// among the server's tokens (0 when the server takes none). Put on the
/// request by the HTTP front end's token check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Credential(pub usize);

/// The stateless runs of an HTTP server, one per credential, each ended
/// after `idle` without a request, as a session is.
pub(crate) struct StatelessRuns {
    runs: std::sync::Mutex<HashMap<Credential, Arc<StatelessRun>>>,
    idle: Duration,
}

/// One credential's run and when it was last used.
struct StatelessRun {
    cell: OnceCell<Run>,
    last_used: std::sync::Mutex<Instant>,
}

impl StatelessRun {
    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }
}

impl StatelessRuns {
    pub(crate) fn new(idle: Duration) -> Arc<Self> {
        Arc::new(StatelessRuns {
            runs: std::sync::Mutex::new(HashMap::new()),
            idle,
        })
    }

    /// The run entry of `credential`, made (with its idle watch) on first
    /// use, and marked used now.
    fn entry(self: &Arc<Self>, credential: Credential) -> Arc<StatelessRun> {
        let mut runs = lock(&self.runs);
        if let Some(entry) = runs.get(&credential) {
            entry.touch();
            return entry.clone();
        }
        let entry = Arc::new(StatelessRun {
            cell: OnceCell::new(),
            last_used: std::sync::Mutex::new(Instant::now()),
        });
        runs.insert(credential, entry.clone());
        tokio::spawn(self.clone().watch(credential, entry.clone()));
        entry
    }

    /// Ends the run of `credential` once it has gone `idle` without a
    /// request: sleeps until the deadline the last use sets, again while
    /// requests keep coming.
    async fn watch(self: Arc<Self>, credential: Credential, entry: Arc<StatelessRun>) {
        loop {
            let deadline = *lock(&entry.last_used) + self.idle;
            tokio::time::sleep_until(deadline.into()).await;
            if lock(&entry.last_used).elapsed() >= self.idle {
                break;
            }
        }
        lock(&self.runs).remove(&credential);
        if let Some(run) = entry.cell.get() {
            tracing::info!(?credential, "stateless run idle; ending it");
            run.shutdown().await;
        }
    }

    /// Ends every run (the server is stopping).
    pub(crate) async fn shutdown(&self) {
        let entries: Vec<Arc<StatelessRun>> = lock(&self.runs).drain().map(|(_, e)| e).collect();
        for entry in entries {
            if let Some(run) = entry.cell.get() {
                run.shutdown().await;
            }
        }
    }
}

/// Stands in for the person on a run shared by stateless requests: the
/// person is reached per request, through the input-required round trip
/// of a client that declared elicitation, never through the run.
struct PerRequestOnly;

#[gantry_core::async_trait]
impl Human for PerRequestOnly {
    async fn confirm(
        &self,
        _tool: &str,
        _confirmation: &gantry_core::Confirmation,
    ) -> Result<bool, gantry_core::HumanError> {
        Err(per_request_only())
    }

    async fn ask(
        &self,
        _question: &gantry_core::Question,
    ) -> Result<gantry_core::Answer, gantry_core::HumanError> {
        Err(per_request_only())
    }
}

fn per_request_only() -> gantry_core::HumanError {
    gantry_core::HumanError::Unavailable(
        "this client did not declare elicitation, so no person can be asked".into(),
    )
}

impl Shared {
    pub(crate) fn new(factory: RunFactory, front: &'static str) -> Self {
        Shared {
            factory,
            front,
            instructions: std::sync::OnceLock::new(),
            codec: RequestStateCodec::try_new(random_key())
                .expect("a 32-byte key meets the minimum length"),
            stateless: None,
        }
    }

    /// For HTTP: stateless requests share one run per credential.
    pub(crate) fn with_stateless_runs(mut self, runs: Arc<StatelessRuns>) -> Self {
        self.stateless = Some(runs);
        self
    }
}

/// 32 random bytes from the OS; the key only lives as long as the process.
fn random_key() -> Vec<u8> {
    use std::io::Read;
    let mut key = vec![0u8; 32];
    if let Ok(mut urandom) = std::fs::File::open("/dev/urandom") {
        let _ = urandom.read_exact(&mut key);
    }
    if key.iter().all(|b| *b == 0) {
        // No /dev/urandom: fall back to the clock and pid, still unguessable
        // enough for a loopback round trip within one process.
        let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
        key = seed.into_bytes();
        key.resize(32, 7);
    }
    key
}

/// What an input-required round trip must come back with.
#[derive(Serialize, Deserialize, PartialEq)]
struct PendingCall {
    tool: String,
    arguments: serde_json::Value,
}

/// One MCP session.
pub struct GantryServer {
    shared: Arc<Shared>,
    run: Arc<OnceCell<Run>>,
}

impl GantryServer {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        GantryServer {
            shared,
            run: Arc::new(OnceCell::new()),
        }
    }

    /// The cell the session's run is built in, so the front end can end the
    /// run after the service is gone.
    pub(crate) fn run_cell(&self) -> Arc<OnceCell<Run>> {
        self.run.clone()
    }

    /// The session's run, built at the first request that tells what the
    /// client can do; for a stateless request, its credential's run.
    async fn run(&self, context: &RequestContext<RoleServer>) -> Result<Run, McpError> {
        self.run_of(context, is_modern(context)).await
    }

    /// [`Self::run`] for a request known to be of the 2026-07-28 lifecycle
    /// (`modern`) or of the handshake's: an `initialize` is always the
    /// latter, whatever version it asks for.
    async fn run_of(
        &self,
        context: &RequestContext<RoleServer>,
        modern: bool,
    ) -> Result<Run, McpError> {
        let start = |human: Option<Arc<dyn Human>>| async move {
            let origin = Origin {
                front: self.shared.front.to_string(),
                client: context.peer.peer_info().map(|info| {
                    (
                        info.client_info.name.clone(),
                        info.client_info.version.clone(),
                    )
                }),
            };
            let run = (self.shared.factory)(human, origin).await.map_err(|e| {
                McpError::internal_error(format!("cannot start the run: {e:#}"), None)
            })?;
            let _ = self.shared.instructions.set(run.instructions());
            Ok::<Run, McpError>(run)
        };
        if let Some(runs) = &self.shared.stateless
            && modern
        {
            let credential = context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Credential>().copied())
                .unwrap_or(Credential(0));
            let entry = runs.entry(credential);
            // Whether a person can be asked is per request on this
            // protocol: the run registers what needs one, and each request
            // sees it or not by its own capabilities.
            let run = entry
                .cell
                .get_or_try_init(|| start(Some(Arc::new(PerRequestOnly) as Arc<dyn Human>)))
                .await?;
            return Ok(run.clone());
        }
        let can_elicit = can_elicit(context);
        let run = self
            .run
            .get_or_try_init(|| async {
                let run = start(
                    can_elicit
                        .then(|| Arc::new(PeerHuman::new(context.peer.clone())) as Arc<dyn Human>),
                )
                .await?;
                // From 2026-07-28 on, changes reach a client only on the
                // `subscriptions/listen` streams it opens (`listen`).
                if !modern {
                    tokio::spawn(announce_tool_changes(
                        run.tools_changed(),
                        run.arrived(),
                        context.peer.clone(),
                    ));
                }
                Ok::<Run, McpError>(run)
            })
            .await?;
        Ok(run.clone())
    }
}

/// Tells the session's client (of a revision before 2026-07-28) each time
/// the run's tools change (a family added or removed some at run time),
/// until the run or the connection ends. Changes before the tools on their
/// way have arrived are not news: the first listing waits for them.
async fn announce_tool_changes(
    mut changed: tokio::sync::watch::Receiver<u64>,
    arrived: impl std::future::Future<Output = ()>,
    peer: rmcp::Peer<RoleServer>,
) {
    arrived.await;
    changed.borrow_and_update();
    while changed.changed().await.is_ok() {
        if peer.notify_tool_list_changed().await.is_err() {
            break;
        }
    }
}

/// Whether the client behind this request declared elicitation.
fn can_elicit(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|caps| caps.elicitation.is_some())
}

/// A tool failure as the model sees it: an `isError` result, never a
/// protocol error.
fn failure(message: impl Into<String>) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::error(vec![Content::text(message)]))
}

/// Whether the request speaks a revision without the initialize handshake
/// (2026-07-28 on): no sessions, no server-to-client requests.
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

fn to_mcp_tool(listing: Listing) -> Tool {
    let schema = match listing.input_schema {
        serde_json::Value::Object(object) => object,
        _ => serde_json::Map::new(),
    };
    // A tool that hands out work is annotated by what that work may do.
    let annotations = match listing.leads_to.unwrap_or(listing.tier) {
        Tier::Read => ToolAnnotations::with_title(listing.display_name.clone())
            .read_only(true)
            .destructive(false),
        Tier::Write => ToolAnnotations::with_title(listing.display_name.clone())
            .read_only(false)
            .destructive(true)
            .open_world(false),
        Tier::Exec => ToolAnnotations::with_title(listing.display_name.clone())
            .read_only(false)
            .destructive(true)
            .open_world(true),
    };
    Tool::new(listing.name, listing.description, Arc::new(schema))
        .with_title(listing.display_name)
        .annotate(annotations)
}

fn to_content(result: ToolResult) -> Vec<Content> {
    use base64::Engine;
    result
        .llm_content
        .into_iter()
        .map(|part| match part {
            Part::Text { text } => Content::text(text),
            Part::Image { mime_type, data } => Content::image(
                base64::engine::general_purpose::STANDARD.encode(data),
                mime_type,
            ),
            Part::Json { value } => Content::text(
                serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string()),
            ),
        })
        .collect()
}

fn progress_sink(context: &RequestContext<RoleServer>) -> Option<ProgressSink> {
    let token = context.meta.get_progress_token()?;
    let peer = context.peer.clone();
    let counter = Arc::new(std::sync::atomic::AtomicU64::new(0));
    Some(Arc::new(move |progress: Progress| {
        let step = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) as f64 + 1.0;
        let mut param =
            ProgressNotificationParam::new(token.clone(), progress.done.unwrap_or(step));
        param.total = progress.total;
        param.message = Some(progress.message);
        let peer = peer.clone();
        tokio::spawn(async move {
            let _ = peer.notify_progress(param).await;
        });
    }))
}

impl ServerHandler for GantryServer {
    fn get_info(&self) -> ServerConfig {
        // Prompts and resources are declared, and served as empty lists,
        // because clients probe them at every start: an error for each
        // probe would be noise in both logs.
        let mut info = InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_resources()
                .build(),
        );
        info.server_info = Implementation::new("gantry", env!("CARGO_PKG_VERSION"));
        if let Some(text) = self.shared.instructions.get().filter(|t| !t.is_empty()) {
            info.instructions = Some(text.clone());
        }
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        self.run_of(&context, false).await?;
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let run = self.run(&context).await?;
        // Bridged servers start while `initialize` is answered; the list
        // has their tools (a client may list only once).
        run.arrived().await;
        let person = can_elicit(&context);
        let tools = run
            .tools()
            .into_iter()
            .filter(|tool| person || !tool.needs_person)
            .map(to_mcp_tool)
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let run = self.run(&context).await?;
        let modern = is_modern(&context);
        let can_elicit = can_elicit(&context);
        if !can_elicit && run.tool_needs_person(&request.name) {
            return Ok(failure(format!(
                "`{}` asks a person, and this client did not declare elicitation, so nobody \
                 can answer; decide under a stated assumption instead",
                request.name
            )));
        }
        let arguments = request
            .arguments
            .map(serde_json::Value::Object)
            .unwrap_or(serde_json::Value::Null);

        // An input-required round trip is bound to this very call: its
        // sealed state names the tool and the arguments. Only built when a
        // round trip is possible or under way.
        let retry = (modern && can_elicit)
            .then(|| Arc::new(RetryHuman::new(request.input_responses.unwrap_or_default())));
        let pending_call =
            (retry.is_some() || request.request_state.is_some()).then(|| PendingCall {
                tool: request.name.to_string(),
                arguments: arguments.clone(),
            });
        if let Some(state) = &request.request_state {
            let opened: Result<PendingCall, _> = self.shared.codec.open_json(state);
            if opened.ok() != pending_call {
                return Ok(failure(
                    "the answers sent with this call belong to a different call (tool or arguments changed, or the state expired); call the tool again without them",
                ));
            }
        }
        let human: Option<Arc<dyn Human>> = match &retry {
            Some(retry) => Some(retry.clone() as Arc<dyn Human>),
            None if modern => None,
            None => {
                can_elicit.then(|| Arc::new(PeerHuman::new(context.peer.clone())) as Arc<dyn Human>)
            }
        };
        // Over HTTP, a client that goes away before reading the answer
        // cancels the call as a `notifications/cancelled` would.
        let caller_gone = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<CallerGone>())
            .map(|gone| gone.0.clone());
        let cancel = context.ct.clone();
        let _watch = caller_gone.map(|gone| {
            let cancel = cancel.clone();
            let done = CancellationToken::new();
            let finished = done.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = gone.cancelled() => cancel.cancel(),
                    () = finished.cancelled() => {}
                }
            });
            done.drop_guard()
        });
        let options = CallOptions {
            cancel,
            progress: progress_sink(&context),
            human,
            ..CallOptions::default()
        };
        match run.call_with(&request.name, arguments, options).await {
            Ok(result) => Ok(CallToolResponse::Complete(CallToolResult::success(
                to_content(result),
            ))),
            Err(error) if error.kind == CallErrorKind::InputRequired => {
                let pending = retry.map(|r| r.take_pending()).unwrap_or_default();
                let Some(pending_call) = pending_call.filter(|_| !pending.is_empty()) else {
                    return Ok(failure(error.message));
                };
                let state = self
                    .shared
                    .codec
                    .seal_json_with(
                        &pending_call,
                        &SealOptions::new().ttl(std::time::Duration::from_secs(3600)),
                    )
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                    Some(pending),
                    Some(state),
                )))
            }
            // A tool that does not exist is the client's error, not the
            // tool's: a protocol error, with the "did you mean".
            Err(error) if error.kind == CallErrorKind::UnknownTool => {
                Err(McpError::invalid_params(error.message, None))
            }
            Err(error) => Ok(failure(error.message)),
        }
    }

    /// `subscriptions/listen` (2026-07-28) carries tool-list changes, the
    /// only change Gantry has to tell.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    /// Sends `notifications/tools/list_changed` on the stream each time
    /// the run's tools change, until the client cancels the request (or
    /// goes away) or the run ends; an ended run closes the stream with the
    /// final result, so the client knows to listen again.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), McpError> {
        let run = self.run(subscription.request_context()).await?;
        let mut changed = run.tools_changed();
        drop(run);
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                change = changed.changed() => {
                    if change.is_err() || subscription.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// rmcp hands over as "custom" a request of a standard method whose
    /// params did not fit its type (`tools/call` with no params, `params:
    /// null`, `"arguments": "x"`): that is bad params (-32602), said with
    /// what was expected, not an unknown method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let method = request.method.as_str();
        Err(match crate::jsonrpc::invalid_params(method) {
            Some(message) => McpError::invalid_params(message, None),
            None => McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method `{method}` is not served here"),
                None,
            ),
        })
    }
}
