//! The `debug` tool (exec): every op of SPEC §8 on the run's one session.
//! Calls that wait (launch, continue, the steps, pause) wait for the next
//! stop at most `wait_ms` and then say "still running"; every stop comes
//! with its reason, thread, `file:line`, the source line and the top
//! frame's locals; every list is capped and says how to see the rest.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use gantry_core::workspace::read_regular;
use gantry_core::{Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec, async_trait};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::adapters::{Adapter, Entry, Target};
use crate::debugger::{Debugger, describe_state, locate, project_python};
use crate::session::{Outcome, Placed, Session, State, Stop};
use crate::types::{
    Evaluated, ExceptionInfo, Scopes, StackFrame, StackTrace, Threads, Variable, Variables,
};
use gantry_process::sandbox::Sandbox;

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

    async fn threads(&self) -> Result<String, String> {
        let session = self.debugger.live().await?;
        let Threads { threads } = session.ask("threads", json!({})).await?;
        if threads.is_empty() {
            return Ok("no threads".into());
        }
        Ok(threads
            .iter()
            .map(|t| format!("thread {}: {}", t.id, t.name))
            .collect::<Vec<_>>()
            .join("\n"))
    }

    async fn stack(&self, p: &DebugParams, run: &Run) -> Result<String, String> {
        let session = self.debugger.live().await?;
        let stop = stopped(&session, "stack")?;
        let thread = match p.thread_id.or(stop.thread_id) {
            Some(thread) => thread,
            None => first_thread(&session).await?,
        };
        let offset = p.offset.unwrap_or(0) as usize;
        let trace: StackTrace = session
            .ask(
                "stackTrace",
                json!({"threadId": thread, "startFrame": offset, "levels": STACK_CAP}),
            )
            .await?;
        let frames = &trace.stack_frames;
        let mut lines = vec![format!(
            "thread {thread}, frame ids for `scopes` and `evaluate`:"
        )];
        for frame in frames.iter().take(STACK_CAP) {
            lines.push(format!(
                "  frame {}: {} at {}",
                frame.id,
                frame.name,
                place_of(frame, run)
            ));
        }
        let shown = offset + frames.len().min(STACK_CAP);
        match trace.total_frames.map(|t| t as usize) {
            Some(total) if total > shown => lines.push(format!(
                "{} more frame(s) not shown: `stack` with offset {shown} for the next {STACK_CAP}",
                total - shown
            )),
            None if frames.len() >= STACK_CAP => lines.push(format!(
                "more frames may follow: `stack` with offset {shown} for the next {STACK_CAP}"
            )),
            _ => {}
        }
        Ok(lines.join("\n"))
    }

    async fn scopes(&self, p: &DebugParams) -> Result<String, String> {
        let session = self.debugger.live().await?;
        let stop = stopped(&session, "scopes")?;
        let frame = match p.frame_id {
            Some(frame) => frame,
            None => top_frame(&session, &stop).await?.id,
        };
        let Scopes { scopes } = session.ask("scopes", json!({"frameId": frame})).await?;
        if scopes.is_empty() {
            return Ok(format!("frame {frame} has no scopes"));
        }
        let mut lines = vec![format!(
            "scopes of frame {frame} (`variables` with the reference):"
        )];
        for scope in scopes {
            let mut line = format!("  {}: reference {}", scope.name, scope.variables_reference);
            if let Some(count) = scope.named_variables {
                line.push_str(&format!(", {count} variables"));
            }
            if scope.expensive {
                line.push_str(" (expensive)");
            }
            lines.push(line);
        }
        Ok(lines.join("\n"))
    }

    async fn variables(&self, p: &DebugParams) -> Result<String, String> {
        let session = self.debugger.live().await?;
        stopped(&session, "variables")?;
        let reference = p.reference.unwrap_or_default();
        let offset = p.offset.unwrap_or(0) as usize;
        let Variables { variables } = session
            .ask("variables", json!({"variablesReference": reference}))
            .await?;
        Ok(render_variables(
            &variables,
            reference,
            offset,
            VARIABLES_CAP,
            &format!("variables of reference {reference}"),
        ))
    }

    async fn evaluate(&self, p: &DebugParams) -> Result<String, String> {
        let session = self.debugger.live().await?;
        let stop = stopped(&session, "evaluate")?;
        let frame = match p.frame_id {
            Some(frame) => frame,
            None => top_frame(&session, &stop).await?.id,
        };
        let expression = p.expression.as_deref().unwrap_or_default();
        let context = session.adapter.evaluate_context();
        let value: Evaluated = session
            .ask(
                "evaluate",
                json!({"expression": expression, "frameId": frame, "context": context}),
            )
            .await?;
        let mut text = format!("{expression} = {}", cut(&value.result, EVALUATE_CAP));
        if let Some(kind) = value.kind.filter(|k| !k.is_empty()) {
            text.push_str(&format!(" ({kind})"));
        }
        if value.variables_reference > 0 {
            text.push_str(&format!(
                " [reference {}: `variables` lists its children]",
                value.variables_reference
            ));
        }
        Ok(text)
    }

    fn output(&self) -> String {
        let Some(session) = self.debugger.current() else {
            return "no debug session".into();
        };
        let (text, cut) = session.output();
        if text.is_empty() {
            return "the program printed nothing so far".into();
        }
        if cut > 0 {
            format!("{text}\n({cut} bytes in the middle were cut; the start and the end are kept)")
        } else {
            text
        }
    }

    async fn render_outcome(
        &self,
        session: &Session,
        outcome: Outcome,
        wait: Duration,
        run: &Run,
    ) -> String {
        match outcome {
            Outcome::Stopped(stop) => self.report_stop(session, &stop, run).await,
            Outcome::StillRunning => format!(
                "still running after {:.1} s (no stop yet): `continue` to wait again, `pause` to \
                 stop it where it is, `output` to see what it printed",
                wait.as_secs_f64()
            ),
            Outcome::Over(why) => {
                let tail = last_lines(&session.output().0, OUTPUT_LINES);
                if tail.is_empty() {
                    format!("{why}; it printed nothing")
                } else {
                    format!("{why}; the end of its output:\n{tail}")
                }
            }
        }
    }

    /// Reason, thread, `file:line`, the source line and the top frame's
    /// locals: what an agent needs at every stop.
    async fn report_stop(&self, session: &Session, stop: &Stop, run: &Run) -> String {
        let mut lines = vec![match stop.thread_id {
            Some(thread) => format!("stopped: {} in thread {thread}", stop.reason),
            None => format!("stopped: {}", stop.reason),
        }];
        let said: Vec<&str> = [stop.description.as_deref(), stop.text.as_deref()]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect();
        // A breakpoint's or a step's own words ("breakpoint 1.1") say
        // nothing more than the reason.
        if !said.is_empty() && !routine(&stop.reason) {
            lines.push(format!("  {}", said.join(": ")));
        }
        if stop.reason == "exception"
            && session.capability("supportsExceptionInfoRequest")
            && let Some(thread) = stop.thread_id
            && let Ok(info) = session
                .ask::<ExceptionInfo>("exceptionInfo", json!({"threadId": thread}))
                .await
        {
            let description = info.description.unwrap_or_default();
            if !said.iter().any(|s| s.contains(description.as_str())) {
                lines.push(format!(
                    "  exception {}: {}",
                    info.exception_id,
                    cut(&description, VALUE_CAP)
                ));
            }
        }
        if !routine(&stop.reason) {
            let tail = last_lines(&session.output().0, 5);
            if !tail.is_empty() {
                lines.push(format!("the end of its output:\n{tail}"));
            }
        }
        let frame = match top_frame(session, stop).await {
            Ok(frame) => frame,
            Err(e) => {
                lines.push(format!("(no frame: {e})"));
                return lines.join("\n");
            }
        };
        // Under lldb a Rust panic stops at the `rust_panic` breakpoint
        // set at launch, after the panic printed its message.
        if frame.name.ends_with("rust_panic") {
            lines[0] = lines[0].replacen(&stop.reason, "panic (Rust)", 1);
            let output = &session.output().0;
            lines.push(match panic_message(output) {
                Some(message) => format!("{message}\n`stack` shows where it panicked"),
                None => format!(
                    "the end of its output:\n{}\n`stack` shows where it panicked",
                    last_lines(output, 5)
                ),
            });
        }
        lines.push(format!(
            "at {} in {} (frame {})",
            place_of(&frame, run),
            frame.name,
            frame.id
        ));
        if let Some(source) = source_line(&frame) {
            lines.push(format!("  {} | {source}", frame.line));
        }
        if let Some(locals) = self.locals(session, &frame).await {
            lines.push(locals);
        }
        lines.join("\n")
    }

    async fn locals(&self, session: &Session, frame: &StackFrame) -> Option<String> {
        let Scopes { scopes } = session
            .ask("scopes", json!({"frameId": frame.id}))
            .await
            .ok()?;
        let scope = scopes.into_iter().find(|s| !s.expensive)?;
        let reference = scope.variables_reference;
        let Variables { variables } = session
            .ask("variables", json!({"variablesReference": reference}))
            .await
            .ok()?;
        Some(render_variables(
            &variables,
            reference,
            0,
            STOP_LOCALS_CAP,
            &format!("{} (reference {reference})", scope.name),
        ))
    }
}

/// A stop that is the program's normal course under the debugger, not
/// an error it ran into.
fn routine(reason: &str) -> bool {
    matches!(reason, "breakpoint" | "step" | "pause" | "entry" | "goto")
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

/// The stop, or an error that says what to do while the program runs.
fn stopped(session: &Session, op: &str) -> Result<Stop, String> {
    match session.state() {
        State::Stopped(stop) => Ok(stop),
        state => Err(not_stopped(&state, op)),
    }
}

fn not_stopped(state: &State, op: &str) -> String {
    match state {
        State::Running | State::Starting => format!(
            "{op} needs a stopped program, and it is running: `pause` it, or `continue` (with \
             wait_ms) to wait for a breakpoint"
        ),
        _ => format!("{op} needs a stopped program, and it is over: `launch` it again"),
    }
}

async fn first_thread(session: &Session) -> Result<i64, String> {
    let Threads { threads } = session.ask("threads", json!({})).await?;
    threads
        .first()
        .map(|t| t.id)
        .ok_or_else(|| "the program has no threads".into())
}

async fn top_frame(session: &Session, stop: &Stop) -> Result<StackFrame, String> {
    let thread = match stop.thread_id {
        Some(thread) => thread,
        None => first_thread(session).await?,
    };
    let trace: StackTrace = session
        .ask(
            "stackTrace",
            json!({"threadId": thread, "startFrame": 0, "levels": 1}),
        )
        .await?;
    trace
        .stack_frames
        .into_iter()
        .next()
        .ok_or_else(|| format!("thread {thread} has no frames"))
}

/// `file:line` of a frame, workspace-relative when inside it.
fn place_of(frame: &StackFrame, run: &Run) -> String {
    let line = frame.line;
    match frame.path() {
        Some(path) => format!("{}:{line}", run.workspace().display(Path::new(path))),
        None => match frame.source.as_ref().and_then(|s| s.name.as_deref()) {
            Some(name) => format!("{name}:{line} (no source file)"),
            None => "an unknown place (no source)".into(),
        },
    }
}

/// The text of the frame's line, read without blocking (the file may be a
/// library's, outside the workspace).
fn source_line(frame: &StackFrame) -> Option<String> {
    let bytes = read_regular(Path::new(frame.path()?)).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let source = text.lines().nth((frame.line as usize).checked_sub(1)?)?;
    Some(cut(source.trim_end(), VALUE_CAP))
}

fn render_placed(file: &str, placed: &[Placed]) -> String {
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

fn render_variables(
    variables: &[Variable],
    reference: i64,
    offset: usize,
    cap: usize,
    title: &str,
) -> String {
    if variables.is_empty() {
        return format!("{title}: none");
    }
    let shown: Vec<&Variable> = variables.iter().skip(offset).take(cap).collect();
    let mut lines = vec![format!(
        "{title}, {}–{} of {}:",
        (offset + 1).min(variables.len()),
        offset + shown.len(),
        variables.len()
    )];
    for variable in &shown {
        let mut line = format!("  {} = {}", variable.name, cut(&variable.value, VALUE_CAP));
        if let Some(kind) = variable.kind.as_deref().filter(|k| !k.is_empty()) {
            line.push_str(&format!(" ({kind})"));
        }
        if variable.variables_reference > 0 {
            line.push_str(&format!(" [reference {}]", variable.variables_reference));
        }
        lines.push(line);
    }
    let rest = variables.len().saturating_sub(offset + shown.len());
    if rest > 0 {
        lines.push(format!(
            "{rest} more not shown: `variables` with reference {reference} and offset {}",
            offset + shown.len()
        ));
    }
    lines.join("\n")
}

/// `text` cut at `max` characters, saying how long it was and how to read
/// the rest.
fn cut(text: &str, max: usize) -> String {
    match gantry_core::text::char_prefix(text, max) {
        None => text.to_string(),
        Some(kept) => format!(
            "{kept}… (cut at {max} of {} characters; `evaluate` a slice of it for the rest)",
            text.chars().count()
        ),
    }
}

/// A Rust panic's own words in a program's output: the last `panicked at`
/// line and its message, without the backtrace that `RUST_BACKTRACE`
/// prints after it (and that would push the message out of a tail).
fn panic_message(output: &str) -> Option<String> {
    let lines: Vec<&str> = output.lines().collect();
    let start = lines
        .iter()
        .rposition(|line| line.contains("panicked at"))?;
    let message: Vec<&str> = lines[start..]
        .iter()
        .take(6)
        .take_while(|line| !line.starts_with("stack backtrace:") && !line.starts_with("note: "))
        .copied()
        .collect();
    Some(message.join("\n"))
}

fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

fn minutes(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds >= 60 {
        format!("{} min", seconds.div_ceil(60))
    } else {
        format!("{seconds} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_message_is_found_before_its_backtrace() {
        let output = "starting\nthread 'main' panicked at src/main.rs:4:9:\nbad input: 42\nstack \
                      backtrace:\n   0: std::panicking::begin_panic\n   1: main::main\nnote: Some \
                      details are omitted";
        assert_eq!(
            panic_message(output).unwrap(),
            "thread 'main' panicked at src/main.rs:4:9:\nbad input: 42"
        );
        assert_eq!(panic_message("no panic here"), None);
    }

    #[test]
    fn values_are_cut_on_characters_and_say_so() {
        let long = "é".repeat(500);
        let shown = cut(&long, VALUE_CAP);
        assert!(shown.starts_with(&"é".repeat(400)));
        assert!(shown.contains("cut at 400 of 500 characters"), "{shown}");
        assert_eq!(cut("short", VALUE_CAP), "short");
    }

    #[test]
    fn variables_past_the_cap_say_how_to_get_them() {
        let variables: Vec<Variable> = (0..60)
            .map(|i| Variable {
                name: format!("v{i}"),
                value: i.to_string(),
                ..Variable::default()
            })
            .collect();
        let first = render_variables(&variables, 7, 0, VARIABLES_CAP, "Locals");
        assert!(first.contains("1–50 of 60"), "{first}");
        assert!(first.contains("v49 = 49") && !first.contains("v50 ="));
        assert!(first.contains("10 more not shown: `variables` with reference 7 and offset 50"));
        let rest = render_variables(&variables, 7, 50, VARIABLES_CAP, "Locals");
        assert!(
            rest.contains("51–60 of 60") && rest.contains("v59 = 59"),
            "{rest}"
        );
        assert!(!rest.contains("more not shown"));
    }
}
