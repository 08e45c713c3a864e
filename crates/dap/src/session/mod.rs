//! One debug session: the adapter process (or a socket to a debug server
//! already listening), its transport, and the state its events drive
//! (running, stopped with a reason, thread and location, exited,
//! terminated), the debuggee's output in a bounded buffer, the last stop,
//! and a hard time limit after which everything is torn down.
//!
//! Starting follows the order every adapter accepts: `initialize`, then
//! `launch` or `attach` sent without awaiting its answer, then the
//! `initialized` event, the breakpoints and exception filters,
//! `configurationDone`, and only then the answer to the launch (debugpy
//! gives it only after `configurationDone`; other adapters give it
//! earlier; both orders are accepted).

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use gantry_core::{Notices, lock};
use gantry_process::pending::Reply;
use gantry_process::sandbox::Sandbox;
use gantry_process::{Capped, Child};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::adapters::{Adapter, Target, request_arguments};
use crate::transport::{DapError, Event, Response, Transport};
use crate::types::Stopped;

mod connect;

use connect::{connect, with_stderr};

/// How long one ordinary request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a start may take, to the answer of the launch: delve builds
/// the program inside it.
pub const START_TIMEOUT: Duration = Duration::from_secs(90);
/// How long `disconnect` and then the adapter's own exit may each take
/// before its process group is killed.
pub const END_GRACE: Duration = Duration::from_secs(2);
/// Bytes of the debuggee's output kept from the start and the end.
const OUTPUT_HEAD: usize = 4 << 10;
const OUTPUT_TAIL: usize = 28 << 10;

/// Why and where the program stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    /// The adapter's reason: `breakpoint`, `step`, `exception`, `pause`...
    pub reason: String,
    /// The thread that stopped, when the adapter said.
    pub thread_id: Option<i64>,
    /// The adapter's words for the stop (an exception's type, a signal).
    pub description: Option<String>,
    /// More words (an exception's message).
    pub text: Option<String>,
}

/// Where the debuggee stands.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Between the adapter's start and the end of the configuration.
    Starting,
    /// Running: nothing to inspect until it stops.
    Running,
    /// Stopped, and inspectable.
    Stopped(Stop),
    /// The debuggee exited (the session may still be ending).
    Exited,
    /// The session is over.
    Terminated,
}

impl State {
    /// Whether nothing will happen any more.
    pub fn is_over(&self) -> bool {
        matches!(self, State::Exited | State::Terminated)
    }
}

/// What the events told so far.
#[derive(Debug, Clone)]
struct Status {
    state: State,
    /// Stops seen so far, so a wait knows a new stop from the last one.
    stops: u64,
    /// The adapter sent `initialized`: configuration may begin.
    initialized: bool,
    exit_code: Option<i64>,
}

/// How a wait for the next stop ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The program stopped.
    Stopped(Stop),
    /// Still running when the wait ran out.
    StillRunning,
    /// The program or the session ended: why, in words.
    Over(String),
}

/// One breakpoint as the adapter took it.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    /// The line asked for.
    pub line: u32,
    /// Whether the adapter could place it.
    pub verified: bool,
    /// Where it went, when another line than asked.
    pub actual_line: Option<u32>,
    /// The adapter's reason when not verified.
    pub message: Option<String>,
}

/// What to start.
pub struct Start {
    /// Which adapter.
    pub adapter: Adapter,
    /// Its binary; `None` when attaching to a debug server's port
    /// directly.
    pub binary: Option<PathBuf>,
    /// The project root: the adapter's and the debuggee's directory.
    pub root: PathBuf,
    /// The program or the debuggee.
    pub target: Target,
    /// The project's interpreter, for debugpy's debuggee.
    pub python: Option<PathBuf>,
    /// The run's sandbox, and its environment policy: the adapter and the
    /// program it starts run the user's code.
    pub sandbox: Sandbox,
    /// Breakpoints to place before the program runs, by file.
    pub breakpoints: Vec<(PathBuf, Vec<u32>)>,
    /// The hard limit on the session's life.
    pub ttl: Duration,
    /// Where the end of the session at its limit is reported.
    pub notices: Notices,
}

/// A live (or ended) debug session. Dropping it kills the adapter's
/// process group.
pub struct Session {
    /// The adapter it talks to.
    pub adapter: Adapter,
    /// Whether it attached to a debuggee it did not start.
    pub attached: bool,
    child: Option<Child>,
    transport: Arc<Transport>,
    status: Arc<watch::Sender<Status>>,
    output: Arc<Mutex<Capped>>,
    capabilities: Value,
    started: Instant,
    ttl: Duration,
    ended: Mutex<Option<String>>,
    limit: Mutex<Option<JoinHandle<()>>>,
    /// What a launch builds (delve's binary), outside the workspace.
    _scratch: tempfile::TempDir,
}

impl Session {
    /// Starts the adapter, configures it and launches or attaches; returns
    /// the session and where each breakpoint went. Fails with the reason,
    /// the adapter's own error output included, and leaves nothing running.
    pub async fn start(
        start: Start,
    ) -> Result<(Arc<Session>, Vec<(PathBuf, Vec<Placed>)>), String> {
        let scratch = tempfile::Builder::new()
            .prefix("gantry-dap-")
            .tempdir()
            .map_err(|e| format!("creating a scratch directory: {e}"))?;
        let (kind, arguments) = request_arguments(
            start.adapter,
            &start.target,
            &start.root,
            start.python.as_deref(),
            scratch.path(),
        )?;
        let status = Arc::new(watch::Sender::new(Status {
            state: State::Starting,
            stops: 0,
            initialized: false,
            exit_code: None,
        }));
        let output = Arc::new(Mutex::new(Capped::new(OUTPUT_HEAD, OUTPUT_TAIL)));
        let observer = observe(status.clone(), output.clone());
        let deadline = Instant::now() + START_TIMEOUT;
        let (child, transport) = connect(&start, observer, output.clone(), deadline).await?;
        let explain = |error: String| match &child {
            Some(child) => with_stderr(error, child),
            None => error,
        };
        let capabilities = transport
            .request(
                "initialize",
                initialize_arguments(start.adapter),
                REQUEST_TIMEOUT,
            )
            .await
            .map_err(|e| explain(e.to_string()))?;
        let session = Arc::new(Session {
            adapter: start.adapter,
            attached: !matches!(start.target, Target::Launch { .. }),
            child,
            transport,
            status,
            output,
            capabilities,
            started: Instant::now(),
            ttl: start.ttl,
            ended: Mutex::new(None),
            limit: Mutex::new(None),
            _scratch: scratch,
        });
        match session
            .configure(kind, arguments, &start.breakpoints, deadline)
            .await
        {
            Ok(placed) => {
                session.set_limit(start.notices);
                Ok((session, placed))
            }
            Err(error) => {
                let error = session.explain(error);
                session.end("its start failed".into()).await;
                Err(error)
            }
        }
    }

    /// `launch`/`attach` through `configurationDone` and the launch's
    /// answer, in either order of that answer and `initialized`.
    async fn configure(
        &self,
        kind: &str,
        arguments: Value,
        breakpoints: &[(PathBuf, Vec<u32>)],
        deadline: Instant,
    ) -> Result<Vec<(PathBuf, Vec<Placed>)>, String> {
        let mut launch: Option<Pin<Box<Reply<Response>>>> = Some(Box::pin(
            self.transport
                .send(kind, arguments)
                .map_err(|e| e.to_string())?,
        ));
        let mut answered = false;
        let mut status = self.status.subscribe();
        loop {
            if status.borrow_and_update().initialized {
                break;
            }
            tokio::select! {
                changed = status.changed() => {
                    if changed.is_err() {
                        return Err("the session's state was dropped".into());
                    }
                }
                answer = async { launch.as_mut().expect("polled only while unanswered").await }, if launch.is_some() => {
                    launch = None;
                    answered = true;
                    check_launch(kind, answer)?;
                }
                reason = self.transport.wait_closed() => return Err(reason),
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(format!(
                        "the debug adapter did not send `initialized` within {} s",
                        START_TIMEOUT.as_secs()
                    ));
                }
            }
        }
        let mut placed = Vec::new();
        for (file, lines) in breakpoints {
            placed.push((
                file.clone(),
                self.set_breakpoints(file, lines)
                    .await
                    .map_err(|e| e.to_string())?,
            ));
        }
        self.set_exception_filters().await;
        if self.capability("supportsConfigurationDoneRequest") {
            self.request("configurationDone", json!({}))
                .await
                .map_err(|e| e.to_string())?;
        }
        self.status.send_modify(|s| {
            if s.state == State::Starting {
                s.state = State::Running;
            }
        });
        if let Some(reply) = launch.take().filter(|_| !answered) {
            let answer = tokio::time::timeout_at(deadline, reply)
                .await
                .map_err(|_| format!("the debug adapter did not answer `{kind}` in time"))?;
            check_launch(kind, answer)?;
        }
        Ok(placed)
    }

    /// Sends a request and waits for its answer (bounded).
    pub async fn request(&self, command: &str, arguments: Value) -> Result<Value, DapError> {
        self.transport
            .request(command, arguments, REQUEST_TIMEOUT)
            .await
    }

    /// Sends a request and reads its answer's body as `T`.
    pub async fn ask<T: serde::de::DeserializeOwned>(
        &self,
        command: &str,
        arguments: Value,
    ) -> Result<T, String> {
        let body = self
            .request(command, arguments)
            .await
            .map_err(|e| e.to_string())?;
        serde_json::from_value(body)
            .map_err(|e| format!("the debug adapter's answer to `{command}` is malformed: {e}"))
    }

    /// Whether the adapter declared capability `name`.
    pub fn capability(&self, name: &str) -> bool {
        self.capabilities
            .get(name)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// Places `lines` in `file` (none clears the file), replacing what the
    /// file had.
    pub async fn set_breakpoints(
        &self,
        file: &Path,
        lines: &[u32],
    ) -> Result<Vec<Placed>, DapError> {
        let asked: Vec<Value> = lines.iter().map(|line| json!({"line": line})).collect();
        let body = self
            .request(
                "setBreakpoints",
                json!({
                    "source": {"path": file, "name": file.file_name().map(|n| n.to_string_lossy())},
                    "breakpoints": asked,
                    "lines": lines,
                }),
            )
            .await?;
        let answers = body
            .get("breakpoints")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(lines
            .iter()
            .enumerate()
            .map(|(i, &line)| {
                let answer = answers.get(i).cloned().unwrap_or(Value::Null);
                let actual = answer.get("line").and_then(Value::as_u64).map(|l| l as u32);
                Placed {
                    line,
                    verified: answer
                        .get("verified")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    actual_line: actual.filter(|&actual| actual != line),
                    message: answer
                        .get("message")
                        .and_then(Value::as_str)
                        .map(String::from),
                }
            })
            .collect())
    }

    /// Exception filters and function breakpoints that make an uncaught
    /// exception or a panic stop the program, among those the adapter
    /// offers. Best effort: a refusal leaves the adapter's defaults.
    async fn set_exception_filters(&self) {
        let offered: Vec<&str> = self
            .capabilities
            .get("exceptionBreakpointFilters")
            .and_then(Value::as_array)
            .map(|filters| {
                filters
                    .iter()
                    .filter_map(|f| f.get("filter").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        let filters: Vec<&str> = self
            .adapter
            .exception_filters()
            .iter()
            .copied()
            .filter(|f| offered.contains(f))
            .collect();
        if !offered.is_empty()
            && let Err(e) = self
                .request("setExceptionBreakpoints", json!({"filters": filters}))
                .await
        {
            tracing::warn!("setExceptionBreakpoints: {e}");
        }
        let functions = self.adapter.function_breakpoints();
        if !functions.is_empty() && self.capability("supportsFunctionBreakpoints") {
            let breakpoints: Vec<Value> =
                functions.iter().map(|name| json!({"name": name})).collect();
            if let Err(e) = self
                .request(
                    "setFunctionBreakpoints",
                    json!({"breakpoints": breakpoints}),
                )
                .await
            {
                tracing::warn!("setFunctionBreakpoints: {e}");
            }
        }
    }

    /// Where the debuggee stands now.
    pub fn state(&self) -> State {
        if self.is_over() {
            return State::Terminated;
        }
        self.status.borrow().state.clone()
    }

    /// The number of stops so far: pass it to [`Session::wait_for_stop`]
    /// taken before the request that resumes the program.
    pub fn stops(&self) -> u64 {
        self.status.borrow().stops
    }

    /// Marks the program running before a request resumes it, so a stop
    /// that answers the request is never overwritten.
    pub fn resuming(&self) {
        self.status.send_modify(|s| {
            if !s.state.is_over() {
                s.state = State::Running;
            }
        });
    }

    /// Waits at most `wait` for a stop after the first `after`, or for the
    /// end of the program or the session.
    pub async fn wait_for_stop(&self, after: u64, wait: Duration) -> Outcome {
        let mut status = self.status.subscribe();
        let waited = tokio::select! {
            found = tokio::time::timeout(wait, status.wait_for(|s| s.stops > after || s.state.is_over())) => found,
            _ = self.transport.wait_closed() => return Outcome::Over(self.why_over()),
        };
        match waited {
            Err(_) => Outcome::StillRunning,
            Ok(Err(_)) => Outcome::Over(self.why_over()),
            Ok(Ok(status)) => match &status.state {
                State::Stopped(stop) if status.stops > after => Outcome::Stopped(stop.clone()),
                _ => {
                    drop(status);
                    Outcome::Over(self.why_over())
                }
            },
        }
    }

    /// Why the session or its program is over, in words.
    pub fn why_over(&self) -> String {
        if let Some(why) = lock(&self.ended).clone() {
            return format!("the debug session ended: {why}");
        }
        let status = self.status.borrow().clone();
        if let Some(code) = status.exit_code {
            return format!("the program exited with code {code}");
        }
        if status.state.is_over() {
            // delve 1.20 ends with `terminated` and no exit code.
            return "the program ended (the adapter did not say its exit code)".into();
        }
        if let Some(reason) = self.transport.closed() {
            return self.explain(format!("the debug adapter stopped ({reason})"));
        }
        "the debug session ended".into()
    }

    /// `error` with the lines of the adapter's stderr that say why.
    fn explain(&self, error: String) -> String {
        match &self.child {
            Some(child) => with_stderr(error, child),
            None => error,
        }
    }

    /// Whether the session is over (ended, or its adapter gone).
    pub fn is_over(&self) -> bool {
        lock(&self.ended).is_some() || self.transport.closed().is_some()
    }

    /// The debuggee's output so far, bounded: the start and the end, with
    /// how much was cut between them.
    pub fn output(&self) -> (String, u64) {
        let output = lock(&self.output);
        (output.text(), output.cut())
    }

    /// The pid of the adapter, whose process group holds the debuggee.
    pub fn adapter_pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::pid)
    }

    /// How long the session has left before its hard limit.
    pub fn time_left(&self) -> Duration {
        self.ttl.saturating_sub(self.started.elapsed())
    }

    /// Ends the session at its time limit, or as soon as its adapter is
    /// gone: the adapter's process is reaped then, not when the model
    /// next says `terminate` (a killed adapter left a zombie until then).
    fn set_limit(self: &Arc<Self>, notices: Notices) {
        let session: Weak<Session> = Arc::downgrade(self);
        let ttl = self.ttl;
        let transport = self.transport.clone();
        let task = tokio::spawn(async move {
            let why = tokio::select! {
                _ = tokio::time::sleep(ttl) => {
                    let why = format!(
                        "its time limit of {} was reached; the program and the adapter were stopped",
                        minutes(ttl)
                    );
                    notices.push(format!("debug: the session ended: {why}"));
                    why
                }
                gone = transport.wait_closed() => format!("the debug adapter stopped ({gone})"),
            };
            if let Some(session) = session.upgrade() {
                session.end_inner(why).await;
            }
        });
        *lock(&self.limit) = Some(task);
    }

    /// Ends the session: `disconnect` (ending a launched debuggee), a
    /// grace period, then the adapter's process group killed. Bounded;
    /// a second call does nothing.
    pub async fn end(&self, why: String) {
        if let Some(limit) = lock(&self.limit).take() {
            limit.abort();
        }
        self.end_inner(why).await;
    }

    async fn end_inner(&self, why: String) {
        {
            let mut ended = lock(&self.ended);
            if ended.is_some() {
                return;
            }
            gantry_core::runlog::record_in_call(
                "resource.end",
                json!({ "resource": "debug session", "detail": why }),
            );
            *ended = Some(why);
        }
        if self.transport.closed().is_none() {
            let _ = self
                .transport
                .request(
                    "disconnect",
                    json!({"terminateDebuggee": !self.attached, "restart": false}),
                    END_GRACE,
                )
                .await;
        }
        if let Some(child) = &self.child {
            let _ = child.stop(END_GRACE).await;
        }
        self.status.send_modify(|s| s.state = State::Terminated);
    }

    /// Kills the adapter's group at once (a run dropped without shutdown).
    pub fn kill_now(&self) {
        if let Some(child) = &self.child {
            child.kill_group();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(limit) = lock(&self.limit).take() {
            limit.abort();
        }
    }
}

fn minutes(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds.is_multiple_of(60) {
        format!("{} min", seconds / 60)
    } else {
        format!("{seconds} s")
    }
}

fn check_launch(
    kind: &str,
    answer: Result<Response, gantry_process::Closed>,
) -> Result<(), String> {
    match answer {
        Ok(response) if response.success => Ok(()),
        Ok(response) => Err(format!("`{kind}` failed: {}", response.failure())),
        Err(closed) => Err(format!("the debug adapter is gone: {closed}")),
    }
}

fn initialize_arguments(adapter: Adapter) -> Value {
    json!({
        "clientID": "gantry",
        "clientName": "Gantry",
        "adapterID": adapter.name(),
        "pathFormat": "path",
        "linesStartAt1": true,
        "columnsStartAt1": true,
        "supportsVariableType": true,
        "supportsVariablePaging": true,
        "supportsRunInTerminalRequest": false,
        "supportsStartDebuggingRequest": false,
        "supportsProgressReporting": false,
        "locale": "en",
    })
}

/// The reader task's view of events: the state machine and the output.
fn observe(
    status: Arc<watch::Sender<Status>>,
    output: Arc<Mutex<Capped>>,
) -> crate::transport::Observer {
    Box::new(move |event: Event| {
        let body = &event.body;
        let text = |key: &str| body.get(key).and_then(Value::as_str).map(String::from);
        match event.event.as_str() {
            "initialized" => status.send_modify(|s| s.initialized = true),
            "stopped" => {
                let stopped: Stopped = serde_json::from_value(body.clone()).unwrap_or_default();
                let stop = Stop {
                    reason: Some(stopped.reason)
                        .filter(|r| !r.is_empty())
                        .unwrap_or_else(|| "unknown".into()),
                    thread_id: stopped.thread_id,
                    description: stopped.description,
                    text: stopped.text,
                };
                status.send_modify(|s| {
                    s.state = State::Stopped(stop);
                    s.stops += 1;
                });
            }
            "continued" => status.send_modify(|s| {
                if !s.state.is_over() && s.state != State::Starting {
                    s.state = State::Running;
                }
            }),
            "exited" => status.send_modify(|s| {
                s.exit_code = body.get("exitCode").and_then(Value::as_i64);
                s.state = State::Exited;
            }),
            "terminated" => status.send_modify(|s| s.state = State::Terminated),
            "output" => {
                let category = text("category").unwrap_or_else(|| "console".into());
                let Some(out) = body.get("output").and_then(Value::as_str) else {
                    return;
                };
                if matches!(category.as_str(), "stdout" | "stderr" | "important") {
                    lock(&output).push(out.as_bytes());
                } else if let Some(code) = exit_status(out) {
                    status.send_modify(|s| s.exit_code = Some(code));
                }
            }
            _ => {}
        }
    })
}

/// The exit status later delves report only in words, on their console:
/// `Process 4242 has exited with status 0`.
fn exit_status(console: &str) -> Option<i64> {
    let (_, rest) = console.split_once(" has exited with status ")?;
    rest.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_exit_status_delve_says_in_words() {
        assert_eq!(
            exit_status("Process 4242 has exited with status 3\n"),
            Some(3)
        );
        assert_eq!(exit_status("Type 'dlv help' for list of commands.\n"), None);
    }
}
