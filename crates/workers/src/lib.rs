//! Background workers (SPEC §11): a directing agent hands briefs to
//! workers with `vibe_spawn`, steers them with `vibe_send`, waits for them
//! with `vibe_wait`, stops them with `vibe_kill` and lists them with
//! `vibe_list`.
//!
//! A worker is Gantry's own agent loop, a background task of the run,
//! talking to an OpenAI-compatible chat-completions endpoint (streamed or
//! not) chosen by its tier (`workers.fast`, `workers.good`). The model's
//! function calls are nested calls through the run's pipeline under the
//! worker's own surface (`workers.maxTier`, `workers.approval`, never wider
//! than the director's), so the gate sits on the tools that do the editing.
//! Killing a worker cancels its loop and the call in flight, whose process
//! group dies with it. Without a `workers` section (honoured only from the
//! user's settings or a trusted folder) none of the tools is registered.
//!
//! ```no_run
//! # async fn demo(run: gantry_core::Run) {
//! use serde_json::json;
//! let started = run
//!     .call("vibe_spawn", json!({"brief": "Add a --verbose flag to src/main.rs", "label": "verbose"}))
//!     .await;
//! let report = run.call("vibe_wait", json!({"worker_id": "w1"})).await;
//! # }
//! ```
#![deny(missing_docs)]

pub mod agent;
pub mod client;
pub mod pool;
pub mod settings;
pub mod tools;

use std::sync::Arc;

use gantry_core::{Run, RunBuilder, Settings};

use crate::pool::Pool;
use crate::settings::{HOW_TO_CONFIGURE, SETTINGS_KEY};
use crate::tools::{Killer, Lister, Sender, Shared, Spawner, TOOL_NAMES, Waiter};

/// Why the tools are absent without worker mode (the family's lines of
/// `gantry status` say how to configure a tier).
const WITHHELD: &str =
    "worker mode is off: no `workers` tier in the user's (or a trusted folder's) settings";

/// The family as the assembly wires it.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("workers", register)
    .settings(&[SETTINGS_KEY], check)
    .instructions(instructions)
    .status(status);

/// Registers the five tools and the run's pool when the honoured settings
/// configure a tier; otherwise withholds them, saying how to configure one.
pub fn register(builder: RunBuilder) -> RunBuilder {
    let Some(config) = settings::resolve(builder.current_settings()).config else {
        return TOOL_NAMES
            .iter()
            .fold(builder, |builder, name| builder.withhold(name, WITHHELD));
    };
    let pool = Arc::new(Pool::new(config.max_running, builder.notices()));
    let shared = Shared {
        config: Arc::new(config),
        pool: pool.clone(),
    };
    builder
        .resource(pool)
        .tool(Spawner(shared.clone()))
        .tool(Sender(shared.clone()))
        .tool(Waiter(shared.clone()))
        .tool(Killer(shared.clone()))
        .tool(Lister(shared))
}

/// What the directing model learns of worker mode: which tiers there are
/// and what their workers may do, so it picks a tier knowingly.
fn instructions(builder: &RunBuilder) -> Option<String> {
    let config = settings::resolve(builder.current_settings()).config?;
    let tiers: Vec<String> = config
        .tiers
        .iter()
        .filter_map(|(tier, endpoint)| {
            let endpoint = endpoint.as_ref().ok()?;
            Some(format!("`{tier}` ({})", endpoint.model))
        })
        .collect();
    if tiers.is_empty() {
        return None;
    }
    Some(format!(
        "Background workers: vibe_spawn hands a self-contained brief to a worker on tier {} \
         (`fast` for mechanical work with a clear spec, `good` for design, judgement or review); \
         it works with the workspace tools up to {} while you go on, and vibe_wait returns its \
         report. Review what a worker changed before relying on it.",
        tiers.join(" or "),
        config.surface.cap
    ))
}

/// The settings check: a malformed section, a tier that cannot serve, a
/// workspace section ignored in an untrusted folder.
fn check(settings: &Settings) -> Vec<String> {
    settings::resolve(settings).warnings
}

/// `gantry status`: each tier's model and endpoint, the workers' surface,
/// or how to turn worker mode on.
fn status(run: &Run) -> Vec<String> {
    let resolved = settings::resolve(run.settings());
    let mut lines = Vec::new();
    match &resolved.config {
        None => lines.push(HOW_TO_CONFIGURE.to_string()),
        Some(config) => {
            for (tier, endpoint) in &config.tiers {
                lines.push(match endpoint {
                    Ok(endpoint) => {
                        let key = match &endpoint.api_key_env {
                            None => String::new(),
                            Some(variable) if std::env::var_os(variable).is_some() => {
                                format!(", key from ${variable}")
                            }
                            Some(variable) => format!(", key from ${variable} (NOT SET)"),
                        };
                        format!(
                            "tier {tier}: model {} at {}{key}",
                            endpoint.model, endpoint.base_url
                        )
                    }
                    Err(problem) => format!("tier {tier} cannot serve: {problem}"),
                });
            }
            let surface = run.surface().within(config.surface);
            lines.push(format!(
                "workers see tools up to {} with approval {}; at most {} running, {} model turns \
                 per brief or message",
                surface.cap, surface.approval, config.max_running, config.max_turns
            ));
        }
    }
    for warning in resolved.warnings {
        if !lines.iter().any(|line| line.contains(&warning)) {
            lines.push(warning);
        }
    }
    lines
}

/// How one headless worker (`gantry agent -p BRIEF`) ended.
#[derive(Debug, Clone)]
pub struct Headless {
    /// Whether it answered (rather than failing, running out of turns or
    /// being killed).
    pub answered: bool,
    /// Its final report, or why there is none.
    pub report: String,
    /// One line of status: time, requests, tool calls, tokens.
    pub summary: String,
    /// What it did, one line per tool call.
    pub actions: Vec<String>,
}

/// The longest single wait of [`headless`]; it waits again while the
/// worker runs (its turns, and each turn's time, are bounded).
const HEADLESS_WAIT: std::time::Duration = std::time::Duration::from_secs(3600);

/// Runs `brief` as one worker of `run` (on `tier`, or the default one) to
/// its end, through the same `vibe_spawn` every client uses: the headless
/// agent (`gantry agent -p`). An error says why it could not start (worker
/// mode off, a tier that cannot serve).
pub async fn headless(run: &Run, brief: &str, tier: Option<&str>) -> Result<Headless, String> {
    let mut args = serde_json::json!({"brief": brief, "label": "agent"});
    if let Some(tier) = tier {
        args["tier"] = tier.into();
    }
    run.call("vibe_spawn", args)
        .await
        .map_err(|error| error.message)?;
    let pool = run
        .resource::<Pool>()
        .ok_or_else(|| HOW_TO_CONFIGURE.to_string())?;
    let worker = pool
        .all()
        .pop()
        .ok_or_else(|| "the worker did not start".to_string())?;
    let never = gantry_core::CancellationToken::new();
    let record = loop {
        let record = worker.wait(HEADLESS_WAIT, &never).await;
        if record.status != pool::Status::Running {
            break record;
        }
    };
    let summary = tools::summary(&worker, &record);
    Ok(Headless {
        answered: record.status == pool::Status::Done,
        report: match &record.status {
            pool::Status::Failed(reason) => reason.clone(),
            _ => record.last_result.clone().unwrap_or_default(),
        },
        summary,
        actions: record.actions,
    })
}

/// Settings with a placeholder tier, for the tool reference: worker mode's
/// tools are registered only when a tier is configured, and the reference
/// lists every tool. Never used to reach a model.
pub fn reference_settings() -> serde_json::Value {
    serde_json::json!({"workers": {"fast": {"baseUrl": "http://127.0.0.1:9/v1", "model": "reference"}}})
}
