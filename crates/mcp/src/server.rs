//! The MCP handler: one instance per MCP session, one run per instance.

use std::sync::Arc;

use gantry_core::{
    CallErrorKind, CallOptions, Human, Listing, Part, Progress, ProgressSink, Run, Tier, ToolResult,
};
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content,
    CustomRequest, CustomResult, Implementation, InitializeRequestParams, InitializeResult,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::model::{RequestStateCodec, SealOptions};
use rmcp::service::{RequestContext, RoleServer};
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use crate::human::{PeerHuman, RetryHuman};

/// Builds the run for a new MCP session. The argument is the person behind
/// the client when it declared elicitation; the factory registers
/// `ask_user` only then.
pub type RunFactory =
    Arc<dyn Fn(Option<Arc<dyn Human>>) -> anyhow::Result<Run> + Send + Sync + 'static>;

/// What every session of one server shares.
pub(crate) struct Shared {
    pub(crate) factory: RunFactory,
    pub(crate) instructions: String,
    /// Seals the echoed state of input-required round trips so a retry can
    /// only answer the call that asked.
    pub(crate) codec: RequestStateCodec,
    /// Over HTTP, the run that stateless (2026-07-28) requests share. That
    /// revision has no sessions to tell clients apart, and a fresh run per
    /// request would start a language server for every call and forget
    /// background jobs and staged edits between calls.
    pub(crate) stateless: Option<OnceCell<Run>>,
}

impl Shared {
    pub(crate) fn new(factory: RunFactory, instructions: String) -> Self {
        Shared {
            factory,
            instructions,
            codec: RequestStateCodec::try_new(random_key())
                .expect("a 32-byte key meets the minimum length"),
            stateless: None,
        }
    }

    /// For HTTP: stateless requests share one run.
    pub(crate) fn with_stateless_run(mut self) -> Self {
        self.stateless = Some(OnceCell::new());
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
    /// client can do.
    async fn run(&self, context: &RequestContext<RoleServer>) -> Result<&Run, McpError> {
        let cell = match &self.shared.stateless {
            Some(shared) if is_modern(context) => shared,
            _ => self.run.as_ref(),
        };
        cell.get_or_try_init(|| async {
            let can_elicit = context
                .client_capabilities()
                .is_some_and(|caps| caps.elicitation.is_some());
            let human: Option<Arc<dyn Human>> = can_elicit
                .then(|| Arc::new(PeerHuman::new(context.peer.clone())) as Arc<dyn Human>);
            (self.shared.factory)(human)
                .map_err(|e| McpError::internal_error(format!("cannot start the run: {e:#}"), None))
        })
        .await
    }
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
    let annotations = match listing.tier {
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
        let mut info = InitializeResult::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("gantry", env!("CARGO_PKG_VERSION"));
        if !self.shared.instructions.is_empty() {
            info.instructions = Some(self.shared.instructions.clone());
        }
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        self.run(&context).await?;
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let run = self.run(&context).await?;
        let tools = run.tools().into_iter().map(to_mcp_tool).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let run = self.run(&context).await?.clone();
        let modern = is_modern(&context);
        let can_elicit = context
            .client_capabilities()
            .is_some_and(|caps| caps.elicitation.is_some());
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
        let options = CallOptions {
            cancel: context.ct.clone(),
            progress: progress_sink(&context),
            human,
            cap: None,
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
        let expected = match method {
            "tools/call" => Some(
                "an object with `name` (the tool, a string) and `arguments` (an object of its parameters)",
            ),
            "initialize" => {
                Some("an object with `protocolVersion`, `capabilities` and `clientInfo`")
            }
            "tools/list" | "ping" => Some("an object, or no params"),
            _ => None,
        };
        Err(match expected {
            Some(expected) => McpError::invalid_params(
                format!("invalid params for `{method}`: expected {expected}"),
                None,
            ),
            None => McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method `{method}` is not served here"),
                None,
            ),
        })
    }
}
