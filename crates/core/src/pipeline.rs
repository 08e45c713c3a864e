//! The one execution pipeline every front end uses (SPEC §3):
//! lookup → validate → confirm → execute with cancellation → result plus
//! pending run notices.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::caller::{Caller, Chain};
use crate::human::{Confirmation, Human, HumanError};
use crate::result::ToolResult;
use crate::run::{Run, Surface};
use crate::tool::{ProgressSink, ToolContext, ToolError};

/// How long a confirmation may wait for the person before the call is
/// refused.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(600);

/// Per-call options; the default is the run's own surface, no progress,
/// never cancelled.
#[derive(Default)]
pub struct CallOptions {
    /// Cancels the call.
    pub cancel: CancellationToken,
    /// Receives progress.
    pub progress: Option<ProgressSink>,
    /// Overrides the run's person for this call (an MCP request that
    /// carries its own answers).
    pub human: Option<Arc<dyn Human>>,
    /// The surface for a call made on someone's behalf; narrowed so it is
    /// never wider than the run's own.
    pub surface: Option<Surface>,
    /// Set when the call is made from inside another, by [`Caller`];
    /// front ends leave it `None`.
    pub chain: Option<Chain>,
}

/// What kind of failure a call met; front ends map these to their protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallErrorKind {
    /// No tool of that name.
    UnknownTool,
    /// The tool exists in Gantry but is not wired for this run.
    Unavailable,
    /// The tool is above the surface's tier cap.
    AboveCap,
    /// Parameters failed validation.
    InvalidParams,
    /// Confirmation was refused or could not be obtained.
    Refused,
    /// The call was cancelled.
    Cancelled,
    /// The front end must obtain input from its client and call again.
    InputRequired,
    /// The tool ran and failed.
    Failed,
}

impl CallErrorKind {
    /// The outcome's word in the run log.
    pub fn word(self) -> &'static str {
        match self {
            CallErrorKind::UnknownTool => "unknown",
            CallErrorKind::Unavailable => "unavailable",
            CallErrorKind::AboveCap => "above_cap",
            CallErrorKind::InvalidParams => "invalid",
            CallErrorKind::Refused => "refused",
            CallErrorKind::Cancelled => "cancelled",
            CallErrorKind::InputRequired => "input_required",
            CallErrorKind::Failed => "failed",
        }
    }
}

/// A call that produced no result; `message` is written for the model and
/// already carries any pending run notices.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct CallError {
    /// What kind of failure.
    pub kind: CallErrorKind,
    /// What to tell the model.
    pub message: String,
}

impl Run {
    /// Calls a tool on the run's own surface.
    pub async fn call(&self, name: &str, args: Value) -> Result<ToolResult, CallError> {
        self.call_with(name, args, CallOptions::default()).await
    }

    /// Calls a tool with per-call options.
    pub async fn call_with(
        &self,
        name: &str,
        args: Value,
        options: CallOptions,
    ) -> Result<ToolResult, CallError> {
        let surface = match options.surface {
            Some(asked) => self.surface().within(asked),
            None => self.surface(),
        };
        // Run notices are for the model the run serves: a call made on
        // someone's behalf (a worker's, a cell's) leaves them for the next
        // result that reaches it.
        let nested = options.chain.is_some();
        let log = self.log().clone();
        let call = log.next_call();
        let started = std::time::Instant::now();
        if log.is_on() {
            let mut fields = serde_json::json!({
                "call": call,
                "tool": name,
                "args": crate::runlog::redact::loggable(&args),
                "by": options.chain.as_ref().and_then(|chain| chain.by.as_deref()).unwrap_or("client"),
            });
            if let Some(entry) = self.registry().get(name) {
                fields["tier"] = entry.spec.tier.to_string().into();
            }
            if let Some(parent) = options.chain.as_ref().and_then(|chain| chain.parent) {
                fields["parent"] = parent.into();
            }
            log.record("call.start", fields);
        }
        let mut unfinished = Unfinished {
            log: &log,
            call,
            tool: name,
            started,
            armed: log.is_on(),
        };
        let outcome = crate::runlog::within_call(
            call,
            log.clone(),
            self.run_pipeline(name, args, surface, options),
        )
        .await;
        unfinished.armed = false;
        if log.is_on() {
            let ended = match &outcome {
                Ok(result) => Ok(result),
                Err(error) => Err((error.kind.word(), error.message.as_str())),
            };
            let mut fields = crate::runlog::call_end_fields(name, started, ended);
            fields["call"] = call.into();
            log.record("call.end", fields);
            if let Ok(ToolResult {
                background: Some(job),
                ..
            }) = &outcome
            {
                log.record(
                    "resource.start",
                    serde_json::json!({ "resource": format!("job {}", job.handle), "tool": name }),
                );
            }
        }
        match outcome {
            Ok(result) if nested => Ok(result.within_budget()),
            Ok(mut result) => {
                for notice in self.drain_notices() {
                    result.append_text(&format!("[run notice] {notice}"));
                }
                if let Some(gone) = self.workspace().gone() {
                    result.append_text(&format!("[run notice] {gone}"));
                }
                Ok(result.within_budget())
            }
            Err(mut error) => {
                if let Some(gone) = self.workspace().gone() {
                    error.message = format!("{gone} ({})", error.message);
                }
                if !nested
                    && !matches!(
                        error.kind,
                        CallErrorKind::InputRequired | CallErrorKind::Cancelled
                    )
                {
                    for notice in self.drain_notices() {
                        error
                            .message
                            .push_str(&format!("\n\n[run notice] {notice}"));
                    }
                }
                crate::result::cut_to(&mut error.message, crate::result::MODEL_BUDGET, "the error");
                Err(error)
            }
        }
    }

    async fn run_pipeline(
        &self,
        name: &str,
        args: Value,
        surface: Surface,
        options: CallOptions,
    ) -> Result<ToolResult, CallError> {
        let mut registry = self.registry();
        let fail = |kind, message: String| CallError { kind, message };

        // Lookup; a name not known yet may be a tool on its way.
        if registry.get(name).is_none() && !self.has_arrived() {
            self.arrived().await;
            registry = self.registry();
        }
        let Some(entry) = registry.get(name).cloned() else {
            if let Some(reason) = registry.withheld_reason(name) {
                return Err(fail(
                    CallErrorKind::Unavailable,
                    format!("tool `{name}` is not available in this run: {reason}"),
                ));
            }
            let visible: Vec<String> = registry
                .list(surface.cap)
                .into_iter()
                .map(|l| l.name)
                .collect();
            let hint = crate::suggest::closest(name, visible.iter().map(String::as_str))
                .map(|s| format!(" Did you mean `{s}`?"))
                .unwrap_or_default();
            return Err(fail(
                CallErrorKind::UnknownTool,
                format!(
                    "unknown tool `{name}`.{hint} Available tools: {}",
                    visible.join(", ")
                ),
            ));
        };
        let spec = &entry.spec;
        if spec.tier > surface.cap {
            return Err(fail(
                CallErrorKind::AboveCap,
                format!(
                    "tool `{name}` is {} tool and this surface is limited to {} tools{}; it cannot be called here",
                    spec.tier.with_article(),
                    surface.cap,
                    if surface.approval == crate::tier::ApprovalMode::Plan {
                        " (plan mode)"
                    } else {
                        ""
                    }
                ),
            ));
        }

        // Validate: schema, then the tool's own checks.
        let invalid = |message: String| {
            fail(
                CallErrorKind::InvalidParams,
                format!("invalid parameters for `{name}`: {message}"),
            )
        };
        let crate::schema::Checked { args, ignored } = entry.schema.check(args).map_err(invalid)?;
        entry.tool.validate(&args, self).map_err(invalid)?;

        let human = options.human.clone().or_else(|| self.inner.human.clone());

        // Confirm, when the approval mode asks for it.
        let mut plan = None;
        if !spec.trusted && surface.approval.needs_confirmation(spec.tier) {
            let prepared = tokio::select! {
                prepared = entry.tool.confirmation(&args, self) => prepared,
                _ = options.cancel.cancelled() => Err(ToolError::Cancelled),
            }
            .map_err(|e| tool_error(name, e))?;
            let confirmation = match prepared {
                Some(prepared) => {
                    plan = prepared.plan;
                    prepared.confirmation
                }
                None => Confirmation {
                    summary: entry.tool.describe(&args),
                    details: None,
                },
            };
            let refused = |why: String| {
                fail(
                    CallErrorKind::Refused,
                    format!("`{name}` was not run: {why}"),
                )
            };
            let Some(human) = &human else {
                return Err(refused(format!(
                    "approval mode `{}` requires confirming {} tools and no person is wired to confirm it",
                    surface.approval, spec.tier
                )));
            };
            self.log().record(
                "confirm.ask",
                serde_json::json!({ "tool": name, "summary": confirmation.summary }),
            );
            let answer = tokio::select! {
                answer = tokio::time::timeout(CONFIRM_TIMEOUT, human.confirm(name, &confirmation)) => answer,
                _ = options.cancel.cancelled() => return Err(fail(CallErrorKind::Cancelled, format!("`{name}` was cancelled"))),
            };
            let word = match &answer {
                Ok(Ok(true)) => "yes",
                Ok(Ok(false)) => "no",
                Ok(Err(HumanError::InputRequired)) => "pending",
                Ok(Err(_)) => "unavailable",
                Err(_) => "timeout",
            };
            self.log().record(
                "confirm.answer",
                serde_json::json!({ "tool": name, "answer": word }),
            );
            match answer {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => {
                    return Err(refused(
                        "the user declined. Do not retry the same call; ask what to do instead or take another approach".into(),
                    ));
                }
                // A nested call cannot suspend the call around it: the
                // person can only be asked through that outer call's result.
                Ok(Err(HumanError::InputRequired)) if options.chain.is_some() => {
                    return Err(refused(format!(
                        "it needs the user's confirmation, which cannot be asked from inside \
                         another call; call `{name}` directly"
                    )));
                }
                Ok(Err(HumanError::InputRequired)) => {
                    return Err(fail(
                        CallErrorKind::InputRequired,
                        "confirmation pending".into(),
                    ));
                }
                Ok(Err(error)) => {
                    return Err(refused(format!(
                        "confirmation could not be obtained ({error})"
                    )));
                }
                Err(_) => {
                    return Err(refused(format!(
                        "no answer to the confirmation within {} s",
                        CONFIRM_TIMEOUT.as_secs()
                    )));
                }
            }
        }

        // Execute, serialised for exclusive tools, raced with cancellation.
        let mut chain = options.chain.unwrap_or_default();
        chain.parent = crate::runlog::current_call();
        chain.by = Some(name.into());
        if entry.exclusive.is_some() {
            if chain.held.iter().any(|held| held == name) {
                return Err(fail(
                    CallErrorKind::Refused,
                    format!(
                        "`{name}` was not run: this call was made from inside `{name}` itself, \
                         which runs one call at a time, so it would wait for itself forever"
                    ),
                ));
            }
            let mut held = chain.held.as_ref().clone();
            held.push(name.to_string());
            chain.held = Arc::new(held);
        }
        let cancel = options.cancel.clone();
        let caller = Caller {
            run: self.clone(),
            surface,
            human: human.clone(),
            chain,
            cancel: cancel.clone(),
            observer: None,
        };
        let ctx = ToolContext::new(caller, options.progress, plan);
        let work = async {
            let _guard = match &entry.exclusive {
                Some(lock) => Some(lock.lock().await),
                None => None,
            };
            entry.tool.execute(args, ctx).await
        };
        // A bug in one tool fails its call, not the run or the server; the
        // unwind drops the exclusive lock with everything else the call held.
        let work = std::panic::AssertUnwindSafe(work)
            .catch_unwind()
            .map(|caught| caught.unwrap_or_else(|panic| Err(panicked(name, panic.as_ref()))));
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(ToolError::Cancelled),
            outcome = work => outcome,
        };
        let mut result = outcome.map_err(|e| tool_error(name, e))?;
        if !ignored.is_empty() {
            let names: Vec<String> = ignored.iter().map(|n| format!("`{n}`")).collect();
            result.append_text(&format!(
                "[ignored: {} {} not a parameter of `{name}`]",
                names.join(", "),
                if names.len() == 1 { "is" } else { "are" }
            ));
        }
        Ok(result)
    }
}

/// A call's end, recorded when its future is dropped before the call
/// ended (its client went away mid-call), so the log never shows as
/// running a call that no longer is.
struct Unfinished<'a> {
    log: &'a crate::runlog::RunLog,
    call: u64,
    tool: &'a str,
    started: std::time::Instant,
    armed: bool,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let dropped = Err(("abandoned", "the caller stopped waiting for the call"));
        let mut fields = crate::runlog::call_end_fields(self.tool, self.started, dropped);
        fields["call"] = self.call.into();
        self.log.record("call.end", fields);
    }
}

/// What a call whose tool panicked tells the model.
fn panicked(name: &str, panic: &(dyn std::any::Any + Send)) -> ToolError {
    let what = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message");
    tracing::error!(tool = name, "a tool panicked: {what}");
    ToolError::Failed(format!(
        "`{name}` failed on an internal error in Gantry (a bug; please report it): {what}. \
         The run goes on: the next call, to this tool or another, is served."
    ))
}

fn tool_error(name: &str, error: ToolError) -> CallError {
    match error {
        ToolError::Failed(message) => CallError {
            kind: CallErrorKind::Failed,
            message,
        },
        ToolError::Cancelled => CallError {
            kind: CallErrorKind::Cancelled,
            message: format!("`{name}` was cancelled"),
        },
        ToolError::InputRequired => CallError {
            kind: CallErrorKind::InputRequired,
            message: "input required".into(),
        },
    }
}
