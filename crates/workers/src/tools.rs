//! The five `vibe_*` tools (SPEC §11): hand a brief to a background
//! worker, steer it, wait for it, stop it, list them.

use std::sync::Arc;
use std::time::Duration;

use gantry_core::{
    CancellationToken, Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec, async_trait,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::agent::{self, Agent};
use crate::client::ChatClient;
use crate::pool::{Pool, Record, Spawn, Status, Worker};
use crate::settings::{TierName, WorkersConfig};

/// The names of this family's tools, never offered to a worker's model
/// (workers do not spawn workers).
pub const TOOL_NAMES: [&str; 5] = [
    "vibe_spawn",
    "vibe_send",
    "vibe_wait",
    "vibe_kill",
    "vibe_list",
];

/// `vibe_wait`'s wait unless the call says otherwise.
const DEFAULT_WAIT_SECONDS: u64 = 300;
/// The longest wait a call may ask for.
const MAX_WAIT_SECONDS: u64 = 3600;
/// How much of a last result `vibe_list` shows.
const LIST_RESULT_CHARS: usize = 160;

/// What every tool of the family shares: the honoured settings and the
/// run's pool.
#[derive(Clone)]
pub struct Shared {
    /// The workers' settings.
    pub config: Arc<WorkersConfig>,
    /// The run's workers.
    pub pool: Arc<Pool>,
}

/// `vibe_spawn`.
pub struct Spawner(pub Shared);
/// `vibe_send`.
pub struct Sender(pub Shared);
/// `vibe_wait`.
pub struct Waiter(pub Shared);
/// `vibe_kill`.
pub struct Killer(pub Shared);
/// `vibe_list`.
pub struct Lister(pub Shared);

/// Parameters of `vibe_spawn`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnParams {
    /// The whole task for the worker, self-contained: it sees the
    /// workspace and its tools, not this conversation. Say which files,
    /// what to change, and how to check it.
    pub brief: String,
    /// A short name for the worker in lists and notices, e.g. `rename-api`.
    pub label: String,
    /// `fast` for mechanical work with a clear spec, `good` for design,
    /// judgement, or reviewing a fast worker's output (default: `fast`
    /// when configured).
    pub tier: Option<TierName>,
}

/// Parameters of `vibe_send`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendParams {
    /// The worker, as `vibe_spawn` named it (`w1`).
    pub worker_id: String,
    /// What to tell it: a new user turn after its conversation so far.
    pub message: String,
}

/// Parameters of `vibe_wait`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitParams {
    /// The worker, as `vibe_spawn` named it (`w1`).
    pub worker_id: String,
    /// Seconds to wait at most (default 300, at most 3600); on timeout
    /// its status comes back, not an error.
    #[schemars(range(min = 1, max = 3600))]
    pub timeout_seconds: Option<u64>,
}

/// Parameters of `vibe_kill`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KillParams {
    /// The worker, as `vibe_spawn` named it (`w1`).
    pub worker_id: String,
}

/// `vibe_list` takes no parameters.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListParams {}

fn non_empty(name: &str, value: &str, what: &str) -> Result<(), String> {
    if value.trim().is_empty() {
        Err(format!("{name}: expected {what}, got an empty string"))
    } else {
        Ok(())
    }
}

#[async_trait]
impl Tool for Spawner {
    type Params = SpawnParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "vibe_spawn",
            "Spawn worker",
            Tier::Read,
            "Hand a brief to a background worker (an agent with its own model and the workspace \
             tools) and return at once with its id (w1, w2, ...). It keeps working while you do \
             other things; check with vibe_wait or vibe_list, steer with vibe_send, stop with \
             vibe_kill. Write the brief so it stands alone.",
        )
        .leads_to(self.0.config.surface.cap)
    }

    fn validate(&self, params: &SpawnParams, _: &Run) -> Result<(), String> {
        non_empty("brief", &params.brief, "the task for the worker")?;
        non_empty("label", &params.label, "a short name for the worker")?;
        let tier = params.tier.unwrap_or_else(|| self.0.config.default_tier());
        self.0.config.endpoint(tier).map(|_| ())
    }

    fn describe(&self, params: &SpawnParams) -> String {
        format!(
            "start worker `{}`: {}",
            params.label,
            agent::first_line(&params.brief)
        )
    }

    async fn execute(
        &self,
        params: SpawnParams,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let config = &self.0.config;
        let tier = params.tier.unwrap_or_else(|| config.default_tier());
        let client = ChatClient::new(config.endpoint(tier).map_err(ToolError::Failed)?)
            .map_err(ToolError::Failed)?;
        let cancel = CancellationToken::new();
        let caller = ctx
            .caller()
            .with_surface(config.surface)
            .with_cancel(cancel.clone());
        let surface = caller.surface();
        // A worker's model is shown the tools once: those still arriving
        // (a bridged server starting) are waited for.
        ctx.run.arrived().await;
        let offered: Vec<_> = ctx
            .run
            .registry()
            .list(surface.cap)
            .into_iter()
            .filter(|tool| !tool.needs_person && !TOOL_NAMES.contains(&tool.name.as_str()))
            .collect();
        let worker = self
            .0
            .pool
            .spawn(Spawn {
                label: params.label,
                tier,
                brief: params.brief,
                cancel,
                agent: Agent {
                    client,
                    caller,
                    tools: agent::declarations(&offered),
                    max_turns: config.max_turns,
                    run: ctx.run.clone(),
                    background: Default::default(),
                    worker: String::new(),
                },
            })
            .map_err(ToolError::Failed)?;
        Ok(ToolResult::text(format!(
            "Started worker {} ({}) on tier {tier} (model {}), tools up to {} with approval {}. \
             It runs in the background: vibe_wait {{\"worker_id\": \"{}\"}} for its result.",
            worker.id, worker.label, worker.model, surface.cap, surface.approval, worker.id
        )))
    }
}

#[async_trait]
impl Tool for Sender {
    type Params = SendParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "vibe_send",
            "Message worker",
            Tier::Read,
            "Send a finished worker a follow-up (a correction, the next step): it is added to the \
             worker's conversation as a new user turn and the worker runs again. Refused while \
             the worker is still running; vibe_wait for it first.",
        )
        .leads_to(self.0.config.surface.cap)
    }

    fn validate(&self, params: &SendParams, _: &Run) -> Result<(), String> {
        non_empty("message", &params.message, "what to tell the worker")
    }

    fn describe(&self, params: &SendParams) -> String {
        format!(
            "tell worker {}: {}",
            params.worker_id,
            agent::first_line(&params.message)
        )
    }

    async fn execute(&self, params: SendParams, _: ToolContext) -> Result<ToolResult, ToolError> {
        let worker = self
            .0
            .pool
            .send(&params.worker_id, params.message)
            .map_err(ToolError::Failed)?;
        Ok(ToolResult::text(format!(
            "Worker {} ({}) is running again with your message.",
            worker.id, worker.label
        )))
    }
}

#[async_trait]
impl Tool for Waiter {
    type Params = WaitParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "vibe_wait",
            "Wait for worker",
            Tier::Read,
            "Wait until a worker finishes (or the timeout passes) and get its status, its final \
             report, what it did and the tokens it used. A timeout is not an error: the worker \
             keeps running and you can wait again.",
        )
    }

    fn validate(&self, params: &WaitParams, _: &Run) -> Result<(), String> {
        self.0.pool.get(&params.worker_id).map(|_| ())
    }

    fn describe(&self, params: &WaitParams) -> String {
        format!("wait for worker {}", params.worker_id)
    }

    async fn execute(&self, params: WaitParams, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let worker = self
            .0
            .pool
            .get(&params.worker_id)
            .map_err(ToolError::Failed)?;
        let seconds = params
            .timeout_seconds
            .unwrap_or(DEFAULT_WAIT_SECONDS)
            .clamp(1, MAX_WAIT_SECONDS);
        let record = worker.wait(Duration::from_secs(seconds), &ctx.cancel).await;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let mut text = report(&worker, &record);
        if record.status == Status::Running {
            text.push_str(&format!(
                "\n(still running after waiting {seconds} s; wait again or vibe_kill it)"
            ));
        }
        let mut display = text.clone();
        if !record.actions.is_empty() {
            display.push_str("\n\nWhat it did:\n");
            for action in &record.actions {
                display.push_str(&format!("- {action}\n"));
            }
        }
        Ok(ToolResult::new(
            vec![gantry_core::Part::text(text)],
            gantry_core::Display::Markdown { markdown: display },
        ))
    }
}

/// A worker's status and last result, for the director's model.
/// One line on a worker's end: who, on which model, how it ended, what
/// it cost.
pub(crate) fn summary(worker: &Worker, record: &Record) -> String {
    format!(
        "Worker {} ({}, tier {}, model {}): {} after {:.1} s, {} model requests, {} tool calls, \
         tokens {} in / {} out.",
        worker.id,
        worker.label,
        worker.tier,
        worker.model,
        record.status.word(),
        worker.elapsed().as_secs_f64(),
        record.requests,
        record.tool_calls,
        record.usage.prompt_tokens,
        record.usage.completion_tokens,
    )
}

fn report(worker: &Worker, record: &Record) -> String {
    let mut text = summary(worker, record);
    if let Status::Failed(reason) = &record.status {
        text.push_str(&format!("\nIt failed: {reason}"));
    } else if let Some(result) = &record.last_result {
        text.push_str(&format!("\nIts report:\n{result}"));
    }
    text
}

#[async_trait]
impl Tool for Killer {
    type Params = KillParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "vibe_kill",
            "Kill worker",
            Tier::Read,
            "Stop a worker for good: its loop, the tool call it is in and every process that \
             call started end now; nothing it was doing goes on writing. A killed worker cannot \
             be resumed; spawn a new one.",
        )
    }

    fn validate(&self, params: &KillParams, _: &Run) -> Result<(), String> {
        self.0.pool.get(&params.worker_id).map(|_| ())
    }

    fn describe(&self, params: &KillParams) -> String {
        format!("stop worker {}", params.worker_id)
    }

    async fn execute(&self, params: KillParams, _: ToolContext) -> Result<ToolResult, ToolError> {
        let worker = self
            .0
            .pool
            .get(&params.worker_id)
            .map_err(ToolError::Failed)?;
        let was = worker.record().status;
        let background = worker.kill().await;
        let said = match was {
            Status::Running => "its loop and every process its tool calls started are stopped",
            Status::Killed => "it was already killed",
            _ => "it was not running; it now takes no more messages",
        };
        let mut text = format!("Killed worker {} ({}): {said}.", worker.id, worker.label);
        for line in background {
            text.push_str(&format!("\n- {line}"));
        }
        Ok(ToolResult::text(text))
    }
}

#[async_trait]
impl Tool for Lister {
    type Params = ListParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "vibe_list",
            "List workers",
            Tier::Read,
            "List this run's workers: id, label, tier, status, elapsed time and the start of \
             each one's last result.",
        )
    }

    fn describe(&self, _: &ListParams) -> String {
        "list workers".into()
    }

    async fn execute(&self, _: ListParams, _: ToolContext) -> Result<ToolResult, ToolError> {
        let workers = self.0.pool.all();
        if workers.is_empty() {
            return Ok(ToolResult::text(
                "No workers in this run yet; vibe_spawn starts one.",
            ));
        }
        let lines: Vec<String> = workers
            .iter()
            .map(|worker| {
                let record = worker.record();
                let result = match &record.status {
                    Status::Failed(reason) => gantry_core::text::shorten(reason, LIST_RESULT_CHARS),
                    _ => record
                        .last_result
                        .as_deref()
                        .map(|text| {
                            gantry_core::text::shorten(&text.replace('\n', " "), LIST_RESULT_CHARS)
                        })
                        .unwrap_or_else(|| "-".into()),
                };
                format!(
                    "{}\t{}\t{}\t{}\t{:.1} s\t{result}",
                    worker.id,
                    worker.label,
                    worker.tier,
                    record.status.word(),
                    worker.elapsed().as_secs_f64()
                )
            })
            .collect();
        Ok(ToolResult::text(format!(
            "id\tlabel\ttier\tstatus\telapsed\tlast result\n{}",
            lines.join("\n")
        )))
    }
}
