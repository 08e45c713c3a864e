//! The `shell` tool (SPEC §5): `bash -c` in its own process group, inside the
//! workspace, with a timeout, bounded output, and background jobs that end
//! with the run. Every command runs in the run's sandbox
//! ([`gantry_process::sandbox`]); `sandbox: false` runs one outside it,
//! only with a person's yes.
//!
//! ```no_run
//! # async fn demo(run: gantry_core::Run) {
//! let result = run
//!     .call("shell", serde_json::json!({"command": "cargo --version"}))
//!     .await;
//! # }
//! ```

mod env;
mod jobs;
mod output;
mod process;

use std::sync::Arc;
use std::time::{Duration, Instant};

use gantry_core::{
    ApprovalMode, Run, RunBuilder, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec,
    async_trait,
};
use gantry_process::Sandbox;
use gantry_process::sandbox::Refusal;
use schemars::JsonSchema;
use serde::Deserialize;

pub use jobs::Jobs;

/// Default foreground timeout.
const DEFAULT_TIMEOUT: u64 = 120;
/// Longest foreground timeout a call may ask for.
const MAX_TIMEOUT: u64 = 600;

/// How often a running foreground command reports progress (MCP clients
/// show it; a silent minute-long build looks hung).
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Reports, until the command ends, how long it has run and how much it
/// printed.
async fn report_progress(
    ctx: &ToolContext,
    command: &str,
    output: &gantry_process::Capture,
    started: Instant,
) -> std::convert::Infallible {
    let mut ticks = tokio::time::interval_at((started + PROGRESS_EVERY).into(), PROGRESS_EVERY);
    loop {
        ticks.tick().await;
        let bytes = output.lock().total();
        let seconds = started.elapsed().as_secs();
        ctx.progress(
            format!("`{command}` running for {seconds} s, {bytes} bytes of output so far"),
            Some(seconds as f64),
            None,
        );
    }
}

/// The family as the run assembly wires it: `shellEnvironmentPolicy`
/// decides what its commands inherit and `sandbox` what they may do, and
/// `gantry status` says both.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("shell", register)
    .settings(
        &[
            gantry_process::env::SETTINGS_KEY,
            gantry_process::sandbox::SETTINGS_KEY,
        ],
        check,
    )
    .status(status);

/// The family's settings check: the environment policy and the sandbox.
fn check(settings: &gantry_core::Settings) -> Vec<String> {
    let mut warnings = env::check(settings);
    warnings.extend(gantry_process::sandbox::check(settings));
    warnings
}

/// `gantry status`: what commands inherit, and the sandbox they run in.
fn status(run: &Run) -> Vec<String> {
    let mut lines = env::status(run);
    lines.extend(Sandbox::for_run(run).status());
    lines
}

/// Adds `shell` with a fresh job table owned by the run. What commands
/// inherit is the run's sandbox's environment policy.
pub fn register(builder: RunBuilder) -> RunBuilder {
    let jobs = Arc::new(Jobs::default());
    builder.resource(jobs.clone()).tool(Shell { jobs })
}

/// The `shell` tool.
pub struct Shell {
    jobs: Arc<Jobs>,
}

/// Parameters of `shell`: either `command` (to start one) or `handle` (to
/// look at or stop a background one).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellParams {
    /// The bash command to run, e.g. `cargo test -p core 2>&1 | tail -50`.
    /// Runs with `bash -c`, stdin closed; do not start interactive programs.
    pub command: Option<String>,
    /// Working directory, relative to the workspace root (default: the root).
    pub directory: Option<String>,
    /// Seconds before the command and everything it started is killed
    /// (default 120, at most 600). Ignored for background commands.
    #[schemars(range(min = 1, max = 600))]
    pub timeout: Option<u64>,
    /// Start the command in the background and return a handle at once
    /// (servers, watchers, long builds). Poll it with `handle`.
    pub is_background: Option<bool>,
    /// Handle of a background command (`bg_1`): returns its new output
    /// and status.
    pub handle: Option<String>,
    /// With `handle`: stop the background command and everything it started.
    pub kill: Option<bool>,
    /// `false` runs this command outside the sandbox, free to write
    /// anywhere and to use the network. Only for something the sandbox
    /// refused that the task truly needs; the user must approve it.
    pub sandbox: Option<bool>,
    /// A short label for the user saying what the command is for (e.g.
    /// "Run the unit tests"), shown with it in confirmations and the
    /// transcript; bash never sees it.
    pub description: Option<String>,
}

impl ShellParams {
    /// Whether the call asks to run outside the sandbox.
    fn unconfined(&self) -> bool {
        self.sandbox == Some(false)
    }

    /// The label given for the user, if any.
    fn label(&self) -> Option<&str> {
        self.description
            .as_deref()
            .map(str::trim)
            .filter(|label| !label.is_empty())
    }
}

#[async_trait]
impl Tool for Shell {
    type Params = ShellParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "shell",
            "Shell",
            Tier::Exec,
            "Run a bash command in the workspace and get its combined stdout/stderr and exit \
             code. Long output keeps its head and tail. Use is_background for servers and \
             watchers, then poll with handle (kill: true stops it). Commands run in a sandbox \
             (by default they may write only in the workspace, the temp directory and build \
             caches); a result says what the sandbox refused and how to proceed. Prefer the \
             dedicated tools for reading, searching and editing files.",
        )
    }

    fn validate(&self, params: &ShellParams, _: &Run) -> Result<(), String> {
        match (&params.command, &params.handle) {
            (Some(_), Some(_)) => {
                Err("command, handle: give either a command to start or the handle of a background one, not both".into())
            }
            (None, None) => Err("command: missing; give the bash command to run (or `handle` to poll a background job)".into()),
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err("command: expected a non-empty bash command".into());
                }
                if params.kill.is_some() {
                    return Err("kill: only applies together with `handle`".into());
                }
                Ok(())
            }
            (None, Some(_)) => {
                let extra = [
                    ("directory", params.directory.is_some()),
                    ("timeout", params.timeout.is_some()),
                    ("is_background", params.is_background.is_some()),
                    ("sandbox", params.sandbox.is_some()),
                ];
                match extra.iter().find(|(_, given)| *given) {
                    Some((name, _)) => Err(format!("{name}: does not apply when polling a background job by `handle`")),
                    None => Ok(()),
                }
            }
        }
    }

    fn describe(&self, params: &ShellParams) -> String {
        let what = describe_call(params);
        match params.label() {
            Some(label) => format!("{label} ({what})"),
            None => what,
        }
    }

    async fn execute(
        &self,
        params: ShellParams,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let label = params.label().map(|label| format!("**{label}**\n"));
        let mut result = self.start_or_poll(params, ctx).await?;
        if let (Some(label), gantry_core::Display::Markdown { markdown }) =
            (label, &mut result.return_display)
        {
            markdown.insert_str(0, &label);
        }
        Ok(result)
    }
}

/// One line of what a call does, without its label.
fn describe_call(params: &ShellParams) -> String {
    let outside = if params.unconfined() {
        "OUTSIDE THE SANDBOX (may write anywhere and use the network), "
    } else {
        ""
    };
    match (&params.command, &params.handle) {
        (Some(command), _) if params.is_background == Some(true) => {
            format!("start {outside}in the background: {command}")
        }
        (Some(command), _) if params.unconfined() => format!("run {outside}{command}"),
        (Some(command), _) => format!("run: {command}"),
        (None, Some(handle)) if params.kill == Some(true) => {
            format!("stop background job {handle}")
        }
        (None, Some(handle)) => format!("check background job {handle}"),
        (None, None) => "shell".into(),
    }
}

impl Shell {
    /// Starts the command of `params` (in the foreground or background) or
    /// polls or stops the background job it names.
    async fn start_or_poll(
        &self,
        params: ShellParams,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        if let Some(handle) = &params.handle {
            let report = self
                .jobs
                .poll(handle, params.kill == Some(true))
                .await
                .map_err(ToolError::Failed)?;
            let output = if report.output.is_empty() {
                "(no new output)".to_string()
            } else {
                report.output
            };
            return Ok(ToolResult::text(format!(
                "Background job {handle}: {}\nCommand: {}\nNew output:\n{output}",
                report.status, report.command
            )));
        }
        let unconfined = params.unconfined();
        let command = params.command.unwrap_or_default();
        let dir = ctx
            .run
            .workspace()
            .resolve(params.directory.as_deref().unwrap_or("."))?;
        if !dir.is_dir() {
            return Err(ToolError::failed(format!(
                "directory: `{}` is not a directory in the workspace",
                params.directory.unwrap_or_default()
            )));
        }
        let shown_dir = ctx.run.workspace().display(&dir);
        let sandbox = Sandbox::of(&ctx.run).await;
        let sandbox = match unconfined {
            true => {
                approved_outside(&ctx)?;
                sandbox.lifted()
            }
            false => sandbox,
        };
        let running =
            process::spawn(&command, &dir, sandbox, ctx.human().cloned()).map_err(|e| {
                ToolError::failed(match Refusal::of(&e) {
                    Some(refusal) => format!("`{command}` was not run: {refusal}"),
                    None => format!("cannot start bash: {e}"),
                })
            })?;
        let outside = match unconfined {
            true => "\n[run outside the sandbox, as the user approved]",
            false => "",
        };

        if params.is_background == Some(true) {
            let pgid = running.pgid();
            let handle = self.jobs.add(&command, running);
            return Ok(ToolResult::text(format!(
                "Started in the background as {handle} (process group {pgid}) in {shown_dir}.\n\
                 Poll it with {{\"handle\": \"{handle}\"}}; stop it with {{\"handle\": \"{handle}\", \"kill\": true}}. \
                 It is stopped when the run ends.{outside}"
            ))
            .in_background(handle.to_string()));
        }

        let timeout =
            Duration::from_secs(params.timeout.unwrap_or(DEFAULT_TIMEOUT).min(MAX_TIMEOUT));
        // If the pipeline drops this future (cancellation), dropping
        // `running` kills the group (under a reaper, every process it
        // started).
        let started = Instant::now();
        let finished = tokio::select! {
            finished = tokio::time::timeout(timeout, running.wait()) => finished,
            never = report_progress(&ctx, &command, running.output(), started) => match never {},
        };
        let Ok(status) = finished else {
            let killed = running.kill().await;
            let unread = running.rest_of_output().await;
            let output = running.output_text();
            return Err(ToolError::failed(format!(
                "`{command}` timed out after {} s; {}. For long-running commands use \
                 is_background, or a larger timeout (max {MAX_TIMEOUT}).\n\
                 Output before the timeout:\n{output}{unread}{}",
                timeout.as_secs(),
                process::describe_kill(killed, running.reach()),
                running.sandbox_report(&output),
            )));
        };
        let status = status?;
        // A process that outlived the command may hold the pipe: the
        // command's own status is not held hostage to it.
        let unread = running.rest_of_output().await;
        let output = running.output_text();
        Ok(ToolResult::text(format!(
            "$ {command}\n{output}{unread}\n[{} after {:.1} s, in {shown_dir}]{}{outside}",
            process::describe_status(status),
            started.elapsed().as_secs_f64(),
            running.sandbox_report(&output),
        )))
    }
}

/// Whether a run outside the sandbox had a person's yes: Gantry's own
/// confirmation under `default` and `auto-edit` (the pipeline asked before
/// this call ran), the client's own prompt under `client` when the model
/// made this call itself (a call from inside another, a kernel cell's,
/// was never shown to the client). Under `yolo` no one is asked, and the
/// sandbox is the only guard left: refused.
fn approved_outside(ctx: &ToolContext) -> Result<(), ToolError> {
    match ctx.surface().approval {
        ApprovalMode::Client if ctx.caller().is_nested() => Err(ToolError::failed(
            "sandbox: false needs a person's yes, and under approval mode `client` the client \
             approved the call this one was made from, not this one; the command was not run. \
             Call `shell` with sandbox: false directly, so the client can ask",
        )),
        ApprovalMode::Default | ApprovalMode::AutoEdit | ApprovalMode::Client => Ok(()),
        mode @ (ApprovalMode::Yolo | ApprovalMode::Plan) => Err(ToolError::failed(format!(
            "sandbox: false needs a person's yes, and approval mode `{mode}` asks no one, so the \
             sandbox is the only guard left; the command was not run. Add what it needs to \
             `sandbox.writableRoots` in ~/.gantry/settings.json, or ask the user to run it"
        ))),
    }
}
