//! One configured MCP server: its connection (rmcp as the client, over the
//! pipes of a child spawned by `gantry-process`, or streamable HTTP), its
//! state, and its restarts.
//!
//! A server that fails to start or dies is `Down` with the reason; its
//! tools leave the run's list (see [`crate::bridge`]) and it is restarted
//! in the background, with a growing pause between attempts, until it
//! stays up or has failed [`MAX_FAILURES`] times in a row.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gantry_core::{Human, lock};
use gantry_process::{Child, Command, EnvPolicy, Sandbox, Stdout, describe_exit, expand_env};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ServiceError, ServiceExt};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::client::{Handler, OpenCalls, http_transport, list_tools};
use crate::config::{ServerSettings, Transport};

/// How long a server may take to start before the run is served without
/// it (its tools arrive later, with `tools/list_changed`).
pub const STARTUP_BOUND: Duration = Duration::from_secs(10);
/// How long a connection attempt may take at all before it counts as a
/// failure.
const CONNECT_BOUND: Duration = Duration::from_secs(60);
/// Consecutive failures after which a server is left down.
pub const MAX_FAILURES: u32 = 5;
/// A server up this long before it died starts its count of failures
/// afresh.
const STABLE: Duration = Duration::from_secs(30);
/// The first pause before a restart after a failure; doubled after each
/// further one. A server that was working restarts at once.
const FIRST_PAUSE: Duration = Duration::from_millis(500);
/// How long a stopping server gets before it is killed.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// Where a server is in its life.
#[derive(Clone)]
pub enum State {
    /// Being started; `failures` before this attempt.
    Starting {
        /// Failed attempts in a row so far.
        failures: u32,
    },
    /// Connected, with its tools.
    Ready(Arc<Connection>),
    /// Not running, and why; restarted unless it failed too often.
    Down {
        /// What happened, for `gantry status` and the failing call.
        reason: String,
        /// Failed attempts in a row.
        failures: u32,
    },
    /// The run ended.
    Stopped,
}

/// A live connection to a server.
pub struct Connection {
    service: RunningService<RoleClient, Handler>,
    child: Option<Child>,
    /// The server's tools as it last listed them, those the settings admit.
    tools: Mutex<Vec<rmcp::model::Tool>>,
    started: Instant,
    generation: u64,
    /// Failed attempts in a row before this connection.
    failures_before: u32,
    /// Cancelled when a stdio server's output ends.
    output_closed: CancellationToken,
    /// Whether it answered a call: a server that did was working, and its
    /// loss counts as no failure of its start.
    answered: AtomicBool,
}

impl Connection {
    /// The admitted tools.
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        lock(&self.tools).clone()
    }
}

/// Why a call failed: its connection was lost (the server died), or
/// anything else; each says so in words.
enum Failure {
    Lost(String),
    Other(String),
}

impl Failure {
    fn into_message(self) -> String {
        match self {
            Failure::Lost(message) | Failure::Other(message) => message,
        }
    }
}

/// Told when a server's tools or state change, so the run's list follows.
pub type OnChange = Arc<dyn Fn() + Send + Sync>;

/// One configured server.
pub struct Server {
    /// Its alias in `mcpServers`.
    pub alias: String,
    /// Its settings.
    pub settings: ServerSettings,
    root: PathBuf,
    /// Confines a stdio server like every program run for the model; or
    /// why none can start (sandbox settings that cannot be read).
    sandbox: Result<Sandbox, String>,
    state: watch::Sender<State>,
    /// The tools of its last connection: offered still while it is being
    /// restarted, so a crash does not churn the client's tool list and a
    /// call waits for the server to be back.
    last_tools: Mutex<Vec<rmcp::model::Tool>>,
    generation: AtomicU64,
    open_calls: Arc<OpenCalls>,
    on_change: OnChange,
    /// Cancelled when the run ends: no restart after that.
    ended: CancellationToken,
}

impl Server {
    /// A server not started yet; `on_change` is called whenever its tools
    /// or its state change.
    pub fn new(
        alias: String,
        settings: ServerSettings,
        root: &Path,
        sandbox: Result<Sandbox, String>,
        on_change: OnChange,
    ) -> Arc<Self> {
        Arc::new(Server {
            alias,
            settings,
            root: root.to_path_buf(),
            sandbox,
            state: watch::channel(State::Starting { failures: 0 }).0,
            last_tools: Mutex::default(),
            generation: AtomicU64::new(0),
            open_calls: Arc::default(),
            on_change,
            ended: CancellationToken::new(),
        })
    }

    /// The state now.
    pub fn state(&self) -> State {
        self.state.borrow().clone()
    }

    /// Starts the first connection in the background.
    pub fn start(self: &Arc<Self>) {
        let server = self.clone();
        tokio::spawn(async move { server.connect(0).await });
    }

    /// Resolves once the server is no longer starting (up or down).
    pub async fn settled(&self) {
        let mut state = self.state.subscribe();
        let _ = state
            .wait_for(|state| !matches!(state, State::Starting { .. }))
            .await;
    }

    fn set(&self, state: State) {
        let changed = self.state.send_if_modified(|current| {
            if matches!(current, State::Stopped) {
                return false;
            }
            *current = state;
            true
        });
        if changed {
            (self.on_change)();
        }
    }

    /// One attempt to connect, after `failures` failed ones; schedules
    /// the next on failure.
    async fn connect(self: Arc<Self>, failures: u32) {
        if self.ended.is_cancelled() {
            return;
        }
        self.set(State::Starting { failures });
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let attempt = tokio::select! {
            attempt = tokio::time::timeout(CONNECT_BOUND, self.open(generation, failures)) => attempt
                .unwrap_or_else(|_| Err(format!("did not finish starting within {} s", CONNECT_BOUND.as_secs()))),
            _ = self.ended.cancelled() => return,
        };
        match attempt {
            Ok(connection) => {
                let connection = Arc::new(connection);
                if connection.child.is_some() {
                    let server = self.clone();
                    let watched = connection.clone();
                    tokio::spawn(async move { server.watch(watched).await });
                }
                *lock(&self.last_tools) = connection.tools();
                self.set(State::Ready(connection));
            }
            Err(reason) => self.failed(reason, failures + 1),
        }
    }

    /// Records a failed start and schedules a restart unless there were
    /// too many.
    fn failed(self: &Arc<Self>, reason: String, failures: u32) {
        tracing::warn!(server = %self.alias, "MCP server down: {reason}");
        self.set(State::Down { reason, failures });
        self.restart_later(failures);
    }

    /// Schedules the next attempt after `failures` failures in a row,
    /// unless there were too many or the run ended.
    fn restart_later(self: &Arc<Self>, failures: u32) {
        if failures >= MAX_FAILURES || self.ended.is_cancelled() {
            return;
        }
        let pause = match failures {
            0 => Duration::ZERO,
            n => FIRST_PAUSE * 2u32.pow((n - 1).min(6)),
        };
        let server = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(pause) => server.connect(failures).await,
                _ = server.ended.cancelled() => {}
            }
        });
    }

    /// Waits for a stdio server's process to exit or to close its output
    /// (then it can serve nothing more, and is ended), and reports it down.
    async fn watch(self: Arc<Self>, connection: Arc<Connection>) {
        let Some(child) = &connection.child else {
            return;
        };
        tokio::select! {
            _ = child.exited() => {}
            _ = connection.output_closed.cancelled() => {}
        }
        self.lost(&connection).await;
    }

    /// `connection` broke: unless a newer one replaced it or the run
    /// ended, the server is down, said with how its process ended and what
    /// it wrote to stderr, and restarted. Whoever sees the break first
    /// (the watcher, a failing call) reports it; the others find it done.
    async fn lost(self: &Arc<Self>, connection: &Connection) {
        let how = match &connection.child {
            Some(child) => how_it_ended(child).await,
            None => "its connection closed".into(),
        };
        let worked =
            connection.started.elapsed() > STABLE || connection.answered.load(Ordering::Relaxed);
        let failures = if worked {
            0
        } else {
            connection.failures_before + 1
        };
        let reported = self.state.send_if_modified(|current| {
            let this_one =
                matches!(current, State::Ready(c) if c.generation == connection.generation);
            if this_one {
                *current = State::Down {
                    reason: how.clone(),
                    failures,
                };
            }
            this_one
        });
        if reported && !self.ended.is_cancelled() {
            tracing::warn!(server = %self.alias, "MCP server down: {how}");
            (self.on_change)();
            self.restart_later(failures);
        }
    }

    /// Starts the process (or opens the HTTP session), initialises, lists
    /// the tools.
    async fn open(self: &Arc<Self>, generation: u64, failures: u32) -> Result<Connection, String> {
        let transport = self.settings.transport()?;
        let output_closed = CancellationToken::new();
        let handler = Handler {
            server: Arc::downgrade(self),
            root: self.root.clone(),
            open_calls: self.open_calls.clone(),
        };
        let (service, child) = match transport {
            Transport::Stdio { command, args } => {
                let mut spawned = self.spawn(&command, &args)?;
                let (Some(stdout), Some(stdin)) = (spawned.stdout.take(), spawned.stdin.take())
                else {
                    return Err("the server's pipes were not opened".into());
                };
                let stdout = UntilEnd {
                    inner: stdout,
                    ended: output_closed.clone(),
                };
                match handler.serve((stdout, stdin)).await {
                    Ok(service) => (service, Some(spawned)),
                    Err(error) => {
                        let shown = std::iter::once(&command)
                            .chain(&args)
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(" ");
                        let ended = how_it_ended(&spawned).await;
                        return Err(format!("`{shown}` did not initialise ({ended}): {error}"));
                    }
                }
            }
            Transport::Http(url) => {
                let transport = http_transport(&url, &self.settings)?;
                let service = handler
                    .serve(transport)
                    .await
                    .map_err(|e| format!("cannot connect to {url}: {e}"))?;
                (service, None)
            }
        };
        let tools = list_tools(&service, &self.settings).await?;
        Ok(Connection {
            service,
            child,
            tools: Mutex::new(tools),
            started: Instant::now(),
            generation,
            failures_before: failures,
            output_closed,
            answered: AtomicBool::new(false),
        })
    }

    /// Spawns a stdio server through `gantry-process`, its environment
    /// values expanded, in its `cwd` (relative to the workspace root).
    fn spawn(&self, command: &str, args: &[String]) -> Result<Child, String> {
        let mut spawn = Command::new(command, self.sandbox.as_ref().map_err(Clone::clone)?);
        spawn
            .args(args)
            .current_dir(match &self.settings.cwd {
                Some(cwd) => self.root.join(cwd),
                None => self.root.clone(),
            })
            .stdin_piped()
            .stdout(Stdout::Piped)
            .inherit(EnvPolicy::all_but_gantrys_secrets());
        for (key, value) in &self.settings.env {
            let value = expand_env(value).map_err(|e| format!("`env.{key}`: {e}"))?;
            spawn.env(key, value);
        }
        spawn
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", spawn.shown()))
    }

    /// The tools to offer while the server is being restarted (those of
    /// its last connection); `None` when it is up, stopped or left down.
    pub fn tools_while_restarting(&self) -> Option<Vec<rmcp::model::Tool>> {
        match self.state() {
            State::Starting { .. } => Some(lock(&self.last_tools).clone()),
            State::Down { failures, .. } if failures < MAX_FAILURES => {
                Some(lock(&self.last_tools).clone())
            }
            _ => None,
        }
    }

    /// The live connection, waiting (at most [`STARTUP_BOUND`]) for one
    /// that is starting or being restarted; or why there is none.
    async fn connection_soon(&self) -> Result<Arc<Connection>, String> {
        let mut state = self.state.subscribe();
        let settled = state.wait_for(|state| match state {
            State::Starting { .. } => false,
            State::Down { failures, .. } => *failures >= MAX_FAILURES || self.ended.is_cancelled(),
            State::Ready(_) | State::Stopped => true,
        });
        let _ = tokio::time::timeout(STARTUP_BOUND, settled).await;
        self.connection()
    }

    /// The live connection, or why there is none.
    pub fn connection(&self) -> Result<Arc<Connection>, String> {
        match self.state() {
            State::Ready(connection) => Ok(connection),
            State::Starting { .. } => Err(format!("MCP server `{}` is still starting", self.alias)),
            State::Down { reason, failures } => Err(self.down_line(&reason, failures)),
            State::Stopped => Err(format!(
                "MCP server `{}` was stopped with the run",
                self.alias
            )),
        }
    }

    /// A down server in one line, saying whether it is being restarted.
    pub fn down_line(&self, reason: &str, failures: u32) -> String {
        let next = if failures >= MAX_FAILURES {
            format!("left down after {failures} failures in a row")
        } else {
            "restarting".into()
        };
        format!("MCP server `{}` is down: {reason} ({next})", self.alias)
    }

    /// Calls the server's tool `tool`, bounded by the server's `timeout`;
    /// an elicitation the server sends meanwhile goes to `human`. A call
    /// whose connection is lost is made once more on the restarted server
    /// when it is `repeatable` (a tool the server marks read-only): any
    /// other may have acted before the server died, and is never repeated.
    pub async fn call(
        self: &Arc<Self>,
        tool: &str,
        arguments: Value,
        human: Option<Arc<dyn Human>>,
        repeatable: bool,
    ) -> Result<CallToolResult, String> {
        let _open = self.open_calls.enter(human);
        match self.call_once(tool, arguments.clone()).await {
            Err(Failure::Lost(_)) if repeatable => self
                .call_once(tool, arguments)
                .await
                .map_err(Failure::into_message),
            outcome => outcome.map_err(Failure::into_message),
        }
    }

    async fn call_once(
        self: &Arc<Self>,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, Failure> {
        let connection = self.connection_soon().await.map_err(Failure::Other)?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let timeout = self.settings.request_timeout();
        match tokio::time::timeout(timeout, connection.service.call_tool(params)).await {
            Ok(Ok(result)) => {
                connection.answered.store(true, Ordering::Relaxed);
                Ok(result)
            }
            Ok(Err(ServiceError::McpError(error))) => Err(Failure::Other(format!(
                "MCP server `{}` refused the call: {} (code {})",
                self.alias, error.message, error.code.0
            ))),
            Ok(Err(error)) => {
                // A closed transport is the server gone: say how.
                let lost = connection.service.peer().is_transport_closed()
                    || connection.output_closed.is_cancelled()
                    || matches!(
                        error,
                        ServiceError::TransportClosed | ServiceError::TransportSend(_)
                    );
                if lost {
                    self.lost(&connection).await;
                }
                let line = match self.state() {
                    State::Down { reason, failures } => self.down_line(&reason, failures),
                    _ => format!("MCP server `{}` failed the call: {error}", self.alias),
                };
                Err(if lost {
                    Failure::Lost(line)
                } else {
                    Failure::Other(line)
                })
            }
            Err(_) => Err(Failure::Other(format!(
                "MCP server `{}` gave no answer within {} ms (its `timeout`); the call was abandoned",
                self.alias,
                timeout.as_millis()
            ))),
        }
    }

    /// Lists the tools again (the server said its list changed).
    pub(crate) async fn refresh(self: Arc<Self>) {
        let State::Ready(connection) = self.state() else {
            return;
        };
        match list_tools(&connection.service, &self.settings).await {
            Ok(tools) => {
                *lock(&self.last_tools) = tools.clone();
                *lock(&connection.tools) = tools;
                (self.on_change)();
            }
            Err(error) => tracing::warn!(server = %self.alias, "cannot list tools again: {error}"),
        }
    }

    /// Ends the server for good: no restart, the process stopped.
    pub async fn stop(&self) {
        self.ended.cancel();
        let previous = self.state.send_replace(State::Stopped);
        if let State::Ready(connection) = previous {
            connection.service.cancellation_token().cancel();
            if let Some(child) = &connection.child {
                let _ = child.stop(STOP_GRACE).await;
            }
        }
    }

    /// Ends the server at once, without awaiting.
    pub fn kill_now(&self) {
        self.ended.cancel();
        if let State::Ready(connection) = self.state.send_replace(State::Stopped) {
            connection.service.cancellation_token().cancel();
            if let Some(child) = &connection.child {
                child.kill_group();
            }
        }
    }
}

/// How a server's process ended, with the lines of its stderr that say
/// why: given a moment to exit, killed if it lingers (a server that closed
/// its output or failed to initialise serves nothing more).
async fn how_it_ended(child: &Child) -> String {
    if tokio::time::timeout(STOP_GRACE, child.exited())
        .await
        .is_err()
    {
        child.kill_group();
    }
    let status = match tokio::time::timeout(STOP_GRACE, child.exited()).await {
        Ok(Ok(status)) => describe_exit(status),
        _ => "closed its output".into(),
    };
    let stderr = match child.stderr() {
        Some(capture) => {
            let _ = tokio::time::timeout(STOP_GRACE, capture.finished()).await;
            capture.explain()
        }
        None => String::new(),
    };
    if stderr.is_empty() {
        status
    } else {
        format!("{status}: {stderr}")
    }
}

/// A server's output, which says when it ends (end of file or a read
/// error): a stdio server that closed its output is gone, even if its
/// process lingers.
struct UntilEnd<R> {
    inner: R,
    ended: CancellationToken,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for UntilEnd<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        match &polled {
            std::task::Poll::Ready(Ok(())) if buf.filled().len() == before => self.ended.cancel(),
            std::task::Poll::Ready(Err(_)) => self.ended.cancel(),
            _ => {}
        }
        polled
    }
}
