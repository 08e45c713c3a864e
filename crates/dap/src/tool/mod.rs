//! The `debug` tool (exec): every op of SPEC §8 on the run's one session.
//! Calls that wait (launch, continue, the steps, pause) wait for the next
//! stop at most `wait_ms` and then say "still running"; every stop comes
//! with its reason, thread, `file:line`, the source line and the top
//! frame's locals; every list is capped and says how to see the rest.
//! Here the parameters and the ops that drive the program; what a stop
//! says is in [`report`], the ops that look at a stopped program in
//! [`inspect`].

use std::sync::Arc;
use std::time::Duration;

use gantry_core::{Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec, async_trait};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::adapters::{Adapter, Entry, Target};
use crate::debugger::{Debugger, describe_state, locate, project_python};
use crate::session::{Outcome, Placed, State, Stop};
use gantry_process::sandbox::Sandbox;

mod inspect;
mod report;

use inspect::{first_thread, not_stopped};

/// The default wait for a stop.
const DEFAULT_WAIT_MS: u64 = 10_000;
/// The longest wait for a stop one call may ask.
const MAX_WAIT_MS: u64 = 60_000;
/// Frames per `stack`.
const STACK_CAP: usize = 30;
/// Variables per `variables`.
const VARIABLES_CAP: usize = 50;
/// Locals shown with a stop (the rest through `variables`).
const STOP_LOCALS_CAP: usize = 20;
/// Characters of one value.
const VALUE_CAP: usize = 400;
/// Characters of an `evaluate` result, which is how a cut value is read.
const EVALUATE_CAP: usize = 8_000;
/// How long a pause waits before it is asked again.
const PAUSE_AGAIN: Duration = Duration::from_secs(2);
/// Lines of output shown when the program ends or stops on an error.
const OUTPUT_LINES: usize = 20;

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Which debug adapters are usable here, and exactly why not.
    Adapters,
    /// Whether a session is live, where it stopped, the breakpoints.
    Status,
    /// Set the breakpoints of `file` to `lines` (empty clears); works before `launch`.
    Breakpoints,
    /// Start `program` under the debugger and run to the first breakpoint.
    Launch,
    /// Attach to a running debuggee by `port` (debugpy, delve) or `pid` (lldb).
    Attach,
    /// Run to the next stop, waiting at most `wait_ms`.
    Continue,
    /// Stop the program where it is.
    Pause,
    /// One step over the current line.
    StepOver,
    /// One step into the call on the current line.
    StepIn,
    /// Run until the current function returns.
    StepOut,
    /// The threads, with their ids.
    Threads,
    /// The frames of a thread (30 at a time), with their ids.
    Stack,
    /// The scopes of a frame, each with its variables reference.
    Scopes,
    /// The children of a variables `reference` (50 at a time).
    Variables,
    /// Evaluate `expression` in a frame.
    Evaluate,
    /// What the program printed (stdout and stderr), bounded.
    Output,
    /// End the session: the program and the adapter are stopped.
    Terminate,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Adapters => "adapters",
            Op::Status => "status",
            Op::Breakpoints => "breakpoints",
            Op::Launch => "launch",
            Op::Attach => "attach",
            Op::Continue => "continue",
            Op::Pause => "pause",
            Op::StepOver => "step_over",
            Op::StepIn => "step_in",
            Op::StepOut => "step_out",
            Op::Threads => "threads",
            Op::Stack => "stack",
            Op::Scopes => "scopes",
            Op::Variables => "variables",
            Op::Evaluate => "evaluate",
            Op::Output => "output",
            Op::Terminate => "terminate",
        }
    }
}

/// Parameters of `debug`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DebugParams {
    /// What to do: adapters, status, breakpoints, launch, attach, continue,
    /// pause, step_over, step_in, step_out, threads, stack, scopes,
    /// variables, evaluate, output or terminate.
    pub op: Op,
    /// launch: what to run: a `.py` file or `-m package.module` (debugpy),
    /// a Go package directory (delve builds it), a built binary (lldb), a
    /// `.dart` file. Workspace-relative or absolute.
    pub program: Option<String>,
    /// launch: the program's command-line arguments.
    pub args: Option<Vec<String>>,
    /// breakpoints: the source file, workspace-relative or absolute.
    pub file: Option<String>,
    /// breakpoints: 1-based line numbers; an empty list clears the file.
    pub lines: Option<Vec<u32>>,
    /// attach: the port of 127.0.0.1 where the debuggee's debug server
    /// listens (`python -m debugpy --listen 5678 ...`, `dlv --headless`).
    pub port: Option<u16>,
    /// attach: the id of the process to attach to (lldb).
    pub pid: Option<u32>,
    /// launch, attach: the adapter, when the program does not tell
    /// (by default: from the program; for attach, debugpy for a port and
    /// lldb for a pid).
    pub adapter: Option<Adapter>,
    /// continue, pause, steps, stack: the thread (default: the one that
    /// stopped last).
    pub thread_id: Option<i64>,
    /// scopes, evaluate: the frame, from `stack` (default: the top frame).
    pub frame_id: Option<i64>,
    /// variables: the reference of a scope or a structured value.
    pub reference: Option<i64>,
    /// evaluate: the expression, in the program's language.
    pub expression: Option<String>,
    /// launch, continue, steps, pause: how long to wait for the program to
    /// stop before answering "still running" (default 10000, at most 60000).
    #[schemars(range(max = 60000))]
    pub wait_ms: Option<u64>,
    /// stack, variables: how many to skip, to see past a cap.
    pub offset: Option<u32>,
}

/// The `debug` tool.
pub struct Debug {
    pub(crate) debugger: Arc<Debugger>,
}

#[async_trait]
impl Tool for Debug {
    type Params = DebugParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "debug",
            "Debugger",
            Tier::Exec,
            "Find a bug by stopping at it, through a debug adapter (debugpy for Python, lldb-dap \
             for C/C++/Rust binaries, delve for Go, dart). Set `breakpoints` (file, lines), then \
             `launch` a program: it runs to the first breakpoint and returns where it stopped, the \
             source line and the local variables. Then `stack`, `scopes`, `variables`, \
             `evaluate`, `step_over`/`step_in`/`step_out`, `continue`; `output` shows what it \
             printed; `terminate` ends it. Waits are bounded by `wait_ms`: a program that does \
             not stop in time is reported \"still running\" (then `pause` it or `continue` to \
             wait again). One session per run, ended after 30 minutes; `adapters` says which \
             adapters can start here and why not.",
        )
        .exclusive()
    }

    fn validate(&self, p: &DebugParams, _: &Run) -> Result<(), String> {
        let op = p.op.name();
        let need = |present: bool, name: &str, what: &str| {
            if present {
                Ok(())
            } else {
                Err(format!("{name}: required for {op}; {what}"))
            }
        };
        if p.wait_ms.is_some_and(|wait| wait > MAX_WAIT_MS) {
            return Err(format!("wait_ms: at most {MAX_WAIT_MS} (60 s)"));
        }
        match p.op {
            Op::Breakpoints => {
                need(p.file.is_some(), "file", "give the source file")?;
                need(
                    p.lines.is_some(),
                    "lines",
                    "give 1-based line numbers, or [] to clear the file",
                )?;
                if p.lines.iter().flatten().any(|&line| line == 0) {
                    return Err("lines: line numbers are 1-based".into());
                }
                Ok(())
            }
            Op::Launch => need(
                p.program.as_deref().is_some_and(|s| !s.trim().is_empty()),
                "program",
                "give a .py file or `-m module`, a Go package directory, a built binary or a .dart file",
            ),
            Op::Attach => match (p.port, p.pid) {
                (Some(_), Some(_)) => Err("port, pid: give one of them, not both".into()),
                (None, None) => Err(
                    "port: required for attach; give the `port` a debug server listens on, or the `pid` of a process (lldb)"
                        .into(),
                ),
                _ => Ok(()),
            },
            Op::Variables => need(
                p.reference.is_some(),
                "reference",
                "give a reference from `scopes` or a variable's [reference N]",
            ),
            Op::Evaluate => need(
                p.expression.as_deref().is_some_and(|s| !s.trim().is_empty()),
                "expression",
                "give the expression to evaluate",
            ),
            _ => Ok(()),
        }
    }

    fn describe(&self, p: &DebugParams) -> String {
        let mut line = format!("debug {}", p.op.name());
        for part in [
            p.program.as_deref(),
            p.file.as_deref(),
            p.expression.as_deref(),
        ]
        .into_iter()
        .flatten()
        {
            line.push_str(&format!(" {part}"));
        }
        if let Some(lines) = &p.lines {
            line.push_str(&format!(" {lines:?}"));
        }
        if let Some(port) = p.port {
            line.push_str(&format!(" port {port}"));
        }
        if let Some(pid) = p.pid {
            line.push_str(&format!(" pid {pid}"));
        }
        line
    }

    async fn execute(&self, p: DebugParams, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let work = self.run_op(p, &ctx.run);
        let text = tokio::select! {
            text = work => text.map_err(ToolError::Failed)?,
            _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        Ok(ToolResult::text(text))
    }
}

impl Debug {
    async fn run_op(&self, p: DebugParams, run: &Run) -> Result<String, String> {
        let wait = Duration::from_millis(p.wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS));
        match p.op {
            Op::Adapters => Ok(self.adapters(&p, run).await),
            Op::Status => Ok(self.status(run)),
            Op::Breakpoints => self.breakpoints(&p, run).await,
            Op::Launch => self.launch(&p, run, wait).await,
            Op::Attach => self.attach(&p, run).await,
            Op::Continue => self.resume(&p, run, "continue", wait).await,
            Op::StepOver => self.resume(&p, run, "next", wait).await,
            Op::StepIn => self.resume(&p, run, "stepIn", wait).await,
            Op::StepOut => self.resume(&p, run, "stepOut", wait).await,
            Op::Pause => self.pause(&p, run, wait).await,
            Op::Threads => self.threads().await,
            Op::Stack => self.stack(&p, run).await,
            Op::Scopes => self.scopes(&p).await,
            Op::Variables => self.variables(&p).await,
            Op::Evaluate => self.evaluate(&p).await,
            Op::Output => Ok(self.output()),
            Op::Terminate => Ok(match self.debugger.end("ended by `terminate`").await {
                Some(session) => format!(
                    "the debug session ended: the program and the {} adapter were stopped",
                    session.adapter.name()
                ),
                None => "no debug session was live".into(),
            }),
        }
    }

    async fn adapters(&self, p: &DebugParams, run: &Run) -> String {
        let workspace = run.workspace().root();
        let place = p
            .program
            .as_deref()
            .filter(|program| !program.starts_with("-m "))
            .and_then(|program| run.workspace().resolve(program).ok())
            .unwrap_or_else(|| workspace.to_path_buf());
        let mut lines = Vec::new();
        for adapter in Adapter::ALL {
            let command = format!(
                "{} {}",
                adapter.program().binaries[0],
                adapter.arguments().join(" ")
            );
            lines.push(match locate(adapter, workspace, &place).await {
                Ok(found) => format!(
                    "{}: usable (`{}`, root {}, binary {})",
                    adapter.name(),
                    command.trim(),
                    run.workspace().display(&found.root),
                    found.binary.display()
                ),
                Err(why) => format!("{}: not usable here: {why}", adapter.name()),
            });
        }
        lines.join("\n")
    }

    fn status(&self, run: &Run) -> String {
        let mut lines = vec![match self.debugger.current() {
            Some(session) if !session.is_over() => format!(
                "{} session ({}), {}; ends in {} unless terminated",
                session.adapter.name(),
                if session.attached {
                    "attached"
                } else {
                    "launched"
                },
                describe_state(&session.state()),
                minutes(session.time_left())
            ),
            Some(session) => format!("no live session: {}", session.why_over()),
            None => "no debug session".into(),
        }];
        let breakpoints = self.debugger.breakpoints();
        if breakpoints.is_empty() {
            lines.push("no breakpoints".into());
        }
        for (file, set) in breakpoints {
            lines.push(format!(
                "breakpoints in {}: {}",
                run.workspace().display(&file),
                set.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        lines.join("\n")
    }

    async fn breakpoints(&self, p: &DebugParams, run: &Run) -> Result<String, String> {
        let given = p.file.as_deref().unwrap_or_default();
        let file = run
            .workspace()
            .resolve_file(given)
            .map_err(|e| format!("file: {e}"))?;
        let lines = p.lines.clone().unwrap_or_default();
        self.debugger.remember(&file, &lines);
        let shown = run.workspace().display(&file);
        let Ok(session) = self.debugger.live().await else {
            return Ok(if lines.is_empty() {
                format!("cleared the breakpoints of {shown}")
            } else {
                format!(
                    "{} breakpoint(s) in {shown} recorded; they are placed when the program is launched",
                    lines.len()
                )
            });
        };
        let placed = session
            .set_breakpoints(&file, &lines)
            .await
            .map_err(|e| e.to_string())?;
        if lines.is_empty() {
            return Ok(format!("cleared the breakpoints of {shown}"));
        }
        Ok(render_placed(&shown, &placed))
    }

    async fn launch(&self, p: &DebugParams, run: &Run, wait: Duration) -> Result<String, String> {
        let given = p.program.as_deref().unwrap_or_default().trim();
        let workspace = run.workspace().root();
        let (entry, place) = match given.strip_prefix("-m ") {
            Some(module) => (
                Entry::Module(module.trim().to_string()),
                workspace.to_path_buf(),
            ),
            None => {
                let path = run
                    .workspace()
                    .resolve(given)
                    .map_err(|e| format!("program: {e}"))?;
                if !path.exists() {
                    return Err(format!("program: {given} does not exist"));
                }
                (Entry::Path(path.clone()), path)
            }
        };
        let adapter = p
            .adapter
            .unwrap_or_else(|| Adapter::for_program(given, Some(&place)));
        let found = locate(adapter, workspace, &place)
            .await
            .map_err(|why| format!("{} cannot start here: {why}", adapter.name()))?;
        let python = match adapter {
            Adapter::Debugpy => project_python(workspace, &found.root).await,
            _ => None,
        };
        let target = Target::Launch {
            program: entry,
            args: p.args.clone().unwrap_or_default(),
        };
        let (session, placed) = self
            .debugger
            .start(
                adapter,
                Some(found.binary),
                found.root,
                target,
                python,
                confinement(run, adapter).await?,
            )
            .await?;
        let mut text = format!("launched {given} under {}", adapter.name());
        for (file, placed) in &placed {
            text.push('\n');
            text.push_str(&render_placed(&run.workspace().display(file), placed));
        }
        if placed.is_empty() {
            text.push_str(" (no breakpoints set: it stops only on an error, or on `pause`)");
        }
        let outcome = session.wait_for_stop(0, wait).await;
        text.push('\n');
        text.push_str(&self.render_outcome(&session, outcome, wait, run).await);
        Ok(text)
    }

    async fn attach(&self, p: &DebugParams, run: &Run) -> Result<String, String> {
        let adapter = p.adapter.unwrap_or(if p.pid.is_some() {
            Adapter::Lldb
        } else {
            Adapter::Debugpy
        });
        let workspace = run.workspace().root().to_path_buf();
        let target = match (p.port, p.pid) {
            (Some(port), _) => Target::Port(port),
            (_, Some(pid)) => Target::Pid(pid),
            _ => return Err("port: required for attach".into()),
        };
        // A port is a debug server that is itself the adapter (debugpy's
        // --listen, dlv --headless): nothing to start.
        let (binary, root) = if p.port.is_some() {
            (None, workspace.clone())
        } else {
            let found = locate(adapter, &workspace, &workspace)
                .await
                .map_err(|why| format!("{} cannot start here: {why}", adapter.name()))?;
            (Some(found.binary), found.root)
        };
        let sandbox = confinement(run, adapter).await?;
        let confined = sandbox.confines();
        let (session, placed) = self
            .debugger
            .start(adapter, binary, root, target, None, sandbox)
            .await
            .map_err(|error| match p.pid {
                // Landlock lets a confined tracer trace only processes
                // confined beneath it.
                Some(pid) if confined => format!(
                    "{error}\nthe adapter runs in the sandbox, which forbids tracing process {pid} \
                     (started outside it); launch the program with `launch` instead, or set \
                     `sandbox.mode: off` in ~/.gantry/settings.json to attach to outside processes"
                ),
                _ => error,
            })?;
        let mut text = format!(
            "attached to {} under {}",
            match (p.port, p.pid) {
                (Some(port), _) => format!("127.0.0.1:{port}"),
                (_, pid) => format!("process {}", pid.unwrap_or_default()),
            },
            adapter.name()
        );
        for (file, placed) in &placed {
            text.push('\n');
            text.push_str(&render_placed(&run.workspace().display(file), placed));
        }
        text.push('\n');
        text.push_str(&match session.state() {
            State::Stopped(stop) => self.report_stop(&session, &stop, run).await,
            state => format!(
                "{}: `continue` waits for a breakpoint, `pause` stops it where it is",
                describe_state(&state)
            ),
        });
        Ok(text)
    }

    /// continue and the steps: resume, then wait for the next stop.
    async fn resume(
        &self,
        p: &DebugParams,
        run: &Run,
        command: &str,
        wait: Duration,
    ) -> Result<String, String> {
        let session = self.debugger.live().await?;
        let after = session.stops();
        match session.state() {
            State::Stopped(stop) => {
                let thread = match p.thread_id.or(stop.thread_id) {
                    Some(thread) => thread,
                    None => first_thread(&session).await?,
                };
                session.resuming();
                session
                    .request(command, json!({"threadId": thread}))
                    .await
                    .map_err(|e| e.to_string())?;
            }
            // Already running: continue only waits for the next stop.
            State::Running | State::Starting if command == "continue" => {}
            state => return Err(not_stopped(&state, command_op(command))),
        }
        let outcome = session.wait_for_stop(after, wait).await;
        Ok(self.render_outcome(&session, outcome, wait, run).await)
    }

    async fn pause(&self, p: &DebugParams, run: &Run, wait: Duration) -> Result<String, String> {
        let session = self.debugger.live().await?;
        if let State::Stopped(stop) = session.state() {
            return Ok(format!(
                "already stopped\n{}",
                self.report_stop(&session, &stop, run).await
            ));
        }
        let after = session.stops();
        let thread = match p.thread_id {
            Some(thread) => thread,
            None => first_thread(&session).await?,
        };
        // A pause that lands while the adapter is still resuming the
        // program (right after an attach) is lost: ask again every
        // PAUSE_AGAIN until it stops or the wait ends.
        let deadline = tokio::time::Instant::now() + wait;
        let outcome = loop {
            session
                .request("pause", json!({"threadId": thread}))
                .await
                .map_err(|e| e.to_string())?;
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match session.wait_for_stop(after, left.min(PAUSE_AGAIN)).await {
                Outcome::StillRunning if left > PAUSE_AGAIN => continue,
                outcome => break outcome,
            }
        };
        let outcome = match outcome {
            // lldb-dap reports the SIGSTOP it pauses with as an exception.
            Outcome::Stopped(stop) if is_pause_signal(&stop) => Outcome::Stopped(Stop {
                reason: "pause".into(),
                description: None,
                text: None,
                ..stop
            }),
            outcome => outcome,
        };
        Ok(self.render_outcome(&session, outcome, wait, run).await)
    }
}

fn is_pause_signal(stop: &Stop) -> bool {
    stop.reason == "exception"
        && stop
            .description
            .as_deref()
            .is_some_and(|d| d.contains("SIGSTOP"))
}

/// The sandbox (and with it the environment) an adapter starts under, or
/// why it cannot start: a sandbox that refuses (settings of the wrong
/// shape among them), or `network: false` for an adapter that talks to
/// its debuggee over loopback TCP.
async fn confinement(run: &Run, adapter: Adapter) -> Result<Sandbox, String> {
    let sandbox = Sandbox::of(run).await;
    if let Some(why) = sandbox.refusal() {
        return Err(format!("debug adapters cannot start: {why}"));
    }
    if matches!(adapter, Adapter::Debugpy | Adapter::Delve | Adapter::Dart) {
        sandbox.needs_loopback_tcp(adapter.name())?;
    }
    Ok(sandbox)
}

fn command_op(command: &str) -> &'static str {
    match command {
        "next" => "step_over",
        "stepIn" => "step_in",
        "stepOut" => "step_out",
        _ => "continue",
    }
}

pub(super) fn render_placed(file: &str, placed: &[Placed]) -> String {
    let mut lines = vec![format!("breakpoints in {file}:")];
    for one in placed {
        let mut line = format!("  line {}: ", one.line);
        if one.verified {
            line.push_str("verified");
            if let Some(actual) = one.actual_line {
                line.push_str(&format!(" (moved to line {actual})"));
            }
        } else {
            line.push_str("verified: false");
            if let Some(message) = &one.message {
                line.push_str(&format!(" ({message})"));
            }
        }
        lines.push(line);
    }
    lines.join("\n")
}

fn minutes(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds >= 60 {
        format!("{} min", seconds.div_ceil(60))
    } else {
        format!("{seconds} s")
    }
}
