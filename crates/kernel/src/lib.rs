//! Gantry's `eval` (SPEC §9): a Python or JavaScript cell whose variables,
//! imports and loaded data survive between calls, in a kernel that is
//! cheaper and safer than Jupyter's (no ports, no connection file, no
//! HMAC key: Gantry talks to it over a pair of pipes of its own) and that
//! can call Gantry's own tools under the caller's surface.
//!
//! ```no_run
//! # async fn demo(run: gantry_core::Run) {
//! let result = run
//!     .call(
//!         "eval",
//!         serde_json::json!({
//!             "code": "import json\nlen(tool('read_file', {'path': 'package.json'}))",
//!             "description": "Measure the package manifest through the bridge",
//!         }),
//!     )
//!     .await;
//! # }
//! ```
//!
//! - [`interpreter`]: which Python (the project's `.venv`, else an
//!   environment Gantry keeps per workspace in its state directory) or
//!   Node runs a kernel.
//! - [`kernel`]: one kernel process and the running of one cell: frames,
//!   raw output, the tool bridge, the idle budget, the interrupt.
//! - [`output`]: the kernel's raw stdout and stderr, put in order with
//!   its frames.
//! - [`protocol`]: the length-prefixed JSON frames on the kernel's pipes.
//! - [`transcript`]: a cell's output for the model, capped, ANSI stripped.
//! - `drivers/`: the Python and JavaScript ends, embedded in the binary.

#![deny(missing_docs)]

pub mod interpreter;
pub mod kernel;
pub mod output;
pub mod protocol;
pub mod transcript;

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use gantry_core::{
    Display, Part, Run, RunBuilder, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec,
    async_trait,
};
use gantry_process::{Child, Sandbox};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::OwnedMutexGuard;

use crate::interpreter::Language;
use crate::kernel::{CellState, Ended, Kernel, settle};
use crate::transcript::Transcript;

/// The settings section of the family.
pub const SETTINGS_KEY: &str = "eval";

/// The family as the assembly wires it.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("kernel", register)
    .settings(&[SETTINGS_KEY], |settings| {
        gantry_core::check_section::<EvalSettings>(settings, SETTINGS_KEY)
    })
    .status(|run| interpreter::describe(run.workspace().root()));

/// Registers `eval` with the run's kernels, none started until a cell
/// needs one.
pub fn register(builder: RunBuilder) -> RunBuilder {
    let kernels = Arc::new(Kernels::default());
    builder.resource(kernels.clone()).tool(Eval { kernels })
}

/// The `eval` settings section.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvalSettings {
    /// Seconds a cell may run, not counting bridged tool calls (default 300).
    pub idle_timeout: Option<u64>,
    /// Seconds an interrupted cell has to stop before its kernel is killed
    /// (default 3).
    pub interrupt_grace: Option<f64>,
}

/// Default idle budget of a cell.
const DEFAULT_IDLE: Duration = Duration::from_secs(300);
/// Default time an interrupted cell has to stop.
const DEFAULT_GRACE: Duration = Duration::from_secs(3);

/// The run's kernels, one per language, each started by the first cell
/// that needs it and ended with the run.
#[derive(Default)]
pub struct Kernels {
    python: Arc<tokio::sync::Mutex<Slot>>,
    javascript: Arc<tokio::sync::Mutex<Slot>>,
    /// Every kernel process started, to end from outside a cell (the
    /// run's end never waits for a cell to finish). Weak: a kernel dropped
    /// from its slot (reset, crashed, killed) is ended by that drop.
    children: Mutex<Vec<Weak<Child>>>,
}

/// One language's kernel, and what its running cell is doing. Locked for
/// the whole of a cell (the tool is exclusive anyway), and by the settling
/// of a cancelled cell, so the next cell waits for that (bounded).
#[derive(Default)]
struct Slot {
    kernel: Option<Kernel>,
    state: CellState,
    /// What became of a cancelled cell whose kernel had to be killed,
    /// told by the next call (the cancelled call could not say it).
    killed_after_cancel: Option<String>,
}

impl Kernels {
    fn slot(&self, language: Language) -> Arc<tokio::sync::Mutex<Slot>> {
        match language {
            Language::Python => self.python.clone(),
            Language::JavaScript => self.javascript.clone(),
        }
    }

    fn track(&self, child: &Arc<Child>) {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        children.retain(|child| child.strong_count() > 0);
        children.push(Arc::downgrade(child));
    }

    fn live(&self) -> Vec<Arc<Child>> {
        let children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        children
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|child| matches!(child.try_exited(), Ok(None)))
            .collect()
    }
}

#[async_trait]
impl gantry_core::Resource for Kernels {
    fn name(&self) -> String {
        "kernels".into()
    }

    async fn shutdown(&self) {
        for child in self.live() {
            kernel::stop(&child).await;
        }
    }

    fn kill_now(&self) {
        for child in self.live() {
            child.kill_group();
        }
    }

    fn status(&self) -> String {
        format!("kernels: {} running", self.live().len())
    }
}

/// The `eval` tool.
pub struct Eval {
    kernels: Arc<Kernels>,
}

/// A kernel's language.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LanguageParam {
    /// CPython (the project's .venv when it has one).
    #[default]
    Python,
    /// Node.js.
    Javascript,
}

/// Parameters of `eval`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalParams {
    /// The cell. The last expression is echoed; top-level `await` works;
    /// `display(x)` shows values (DataFrames as tables, figures as
    /// images); `tool(name, args)` (Python) or `await tool(name, args)`
    /// (JavaScript) calls Gantry's tools. Python also takes `%pip`, `%cd`,
    /// `!cmd`, `x = !cmd`, `%%bash`, `%time`, `%%timeit`.
    pub code: String,
    /// 5 to 10 words saying what the cell does, the label for the
    /// transcript, e.g. "Load the sales data and plot revenue".
    pub description: String,
    /// `python` (default) or `javascript`; each has its own kernel.
    pub language: Option<LanguageParam>,
    /// Throw this language's kernel away and start clean before the cell.
    pub reset: Option<bool>,
}

impl EvalParams {
    fn language(&self) -> Language {
        match self.language.unwrap_or_default() {
            LanguageParam::Python => Language::Python,
            LanguageParam::Javascript => Language::JavaScript,
        }
    }
}

#[async_trait]
impl Tool for Eval {
    type Params = EvalParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "eval",
            "Eval",
            Tier::Exec,
            "Run a Python or JavaScript cell in a persistent kernel: variables, imports and \
             loaded data survive between calls, as in a notebook. The last expression is \
             echoed; display() shows values (pandas DataFrames as tables, matplotlib figures \
             as images); tool(name, args) calls this runtime's tools (await it in \
             JavaScript) under the same approvals. A cell that runs out of its idle budget \
             (5 min by default, paused during tool calls) is interrupted, keeping its state \
             when it stops. Use reset to start clean.",
        )
        .exclusive()
    }

    fn validate(&self, params: &EvalParams, _: &Run) -> Result<(), String> {
        if params.code.trim().is_empty() {
            return Err("code: expected the cell's code, got an empty string".into());
        }
        let words = params.description.split_whitespace().count();
        if !(5..=10).contains(&words) {
            return Err(format!(
                "description: expected 5 to 10 words saying what the cell does (e.g. \"Load \
                 the sales data and plot revenue\"), got {words}"
            ));
        }
        Ok(())
    }

    fn describe(&self, params: &EvalParams) -> String {
        format!("{} ({})", params.description, params.language().name())
    }

    async fn execute(&self, params: EvalParams, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let language = params.language();
        let settings: EvalSettings = ctx
            .run
            .settings()
            .section(SETTINGS_KEY)
            .map_err(|e| ToolError::failed(e.to_string()))?;
        let budget = settings
            .idle_timeout
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_IDLE);
        let grace = match settings.interrupt_grace {
            None => DEFAULT_GRACE,
            Some(seconds) => Duration::try_from_secs_f64(seconds).map_err(|_| {
                ToolError::failed(format!(
                    "settings `{SETTINGS_KEY}.interruptGrace`: expected seconds, 0 or more, got {seconds}"
                ))
            })?,
        };
        let mut session = Session {
            slot: Some(self.kernels.slot(language).lock_owned().await),
            grace,
        };
        let slot = session.slot.as_mut().expect("held until dropped");
        let mut notes: Vec<String> = slot.killed_after_cancel.take().into_iter().collect();
        if params.reset == Some(true)
            && let Some(kernel) = slot.kernel.take()
        {
            kernel.stop().await;
            notes.push(format!(
                "reset: the previous {} kernel was discarded",
                language.name()
            ));
        }
        if let Some(kernel) = slot.kernel.take() {
            match kernel.died().await {
                Some(how) => notes.push(format!(
                    "the previous {} kernel {how} after the last cell; {}; a fresh one was started",
                    language.name(),
                    kernel.lost()
                )),
                None => slot.kernel = Some(kernel),
            }
        }
        if slot.kernel.is_none() {
            let kernel = start(language, &ctx.run).await.map_err(ToolError::Failed)?;
            self.kernels.track(kernel.child());
            notes.push(format!("started {}", kernel.shown));
            slot.kernel = Some(kernel);
        }
        let Slot { kernel, state, .. } = &mut **slot;
        let kernel = kernel.as_mut().expect("started above");
        let mut transcript = Transcript::default();
        let ended = kernel
            .run_cell(&params.code, &ctx, budget, grace, &mut transcript, state)
            .await;
        let failed = match &ended {
            Ended::Finished { raised } => *raised,
            Ended::Interrupted { .. } | Ended::Died(_) => true,
        };
        match ended {
            Ended::Died(how) => {
                slot.kernel = None;
                transcript.ensure_line_start();
                transcript.text(&format!("[{how}]\n"));
            }
            Ended::Interrupted { survived: false } => slot.kernel = None,
            _ => {}
        }
        let mut parts = transcript.into_parts("(no output)");
        if !notes.is_empty() {
            parts.push(Part::text(format!("[{}]", notes.join("; "))));
        }
        finish(&params, parts, failed)
    }
}

/// The result of a cell: its parts for the model, the code and its text
/// for the person; a cell that raised, was interrupted or lost its kernel
/// is a failed call, carrying the same text.
fn finish(params: &EvalParams, parts: Vec<Part>, failed: bool) -> Result<ToolResult, ToolError> {
    let text: String = parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if failed {
        let images = parts
            .iter()
            .filter(|part| matches!(part, Part::Image { .. }))
            .count();
        let dropped = match images {
            0 => String::new(),
            n => format!("\n[{n} image(s) the cell showed before it failed are not included]"),
        };
        return Err(ToolError::failed(format!("{text}{dropped}")));
    }
    let fence = match params.language() {
        Language::Python => "python",
        Language::JavaScript => "javascript",
    };
    let markdown = format!(
        "**{}**\n```{fence}\n{}\n```\n{text}",
        params.description, params.code
    );
    Ok(ToolResult::new(parts, Display::Markdown { markdown }))
}

/// Starts a kernel of `language` for `run`: its interpreter, the
/// environment the shell's policy allows, the run's sandbox (which may
/// also write the kernel's own environment).
async fn start(language: Language, run: &Run) -> Result<Kernel, String> {
    let root = run.workspace().root().to_path_buf();
    let sandbox = Sandbox::of(run).await;
    if let Some(why) = sandbox.refusal() {
        return Err(format!("kernels cannot start: {why}"));
    }
    let interpreter = interpreter::locate(language, &root, &sandbox).await?;
    let sandbox = match &interpreter.environment {
        // `%pip` installs there, in any confining mode.
        Some(environment) => sandbox.also_writable(environment),
        None => sandbox,
    };
    let kernel = Kernel::start(language, &interpreter, &root, &sandbox).await?;
    gantry_core::runlog::record_in_call(
        "resource.start",
        serde_json::json!({ "resource": kernel.resource_name(), "detail": kernel.shown }),
    );
    Ok(kernel)
}

/// A cell's hold on its kernel. Dropped before the cell ended (the call
/// was cancelled), it settles the cell in the background: the bridged
/// call in flight answered as cancelled, SIGINT, and a kill if the cell
/// does not stop within the grace; the next cell waits for that.
struct Session {
    slot: Option<OwnedMutexGuard<Slot>>,
    grace: Duration,
}

impl Drop for Session {
    fn drop(&mut self) {
        let Some(mut slot) = self.slot.take() else {
            return;
        };
        if !slot.state.running {
            return;
        }
        let grace = self.grace;
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let Slot {
                        kernel,
                        state,
                        killed_after_cancel,
                    } = &mut *slot;
                    if let Some(live) = kernel.as_mut() {
                        let lost = live.lost();
                        let mut unseen = Transcript::default();
                        if !settle(live, state, grace, &mut unseen).await {
                            *killed_after_cancel = Some(format!(
                                "the cancelled cell before this call did not stop within {:.1} s of SIGINT, so its {} kernel was killed; {lost}",
                                grace.as_secs_f64(),
                                live.language.name(),
                            ));
                            *kernel = None;
                        }
                    }
                });
            }
            // No runtime to settle on: the kernel goes (dropping kills it).
            Err(_) => slot.kernel = None,
        }
    }
}
