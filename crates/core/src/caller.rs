//! Calls a tool makes on its caller's behalf: a kernel cell's `tool(...)`
//! bridge, a worker's agent loop. They go through the same pipeline as a
//! model's call (lookup, validation, confirmation, execution, diagnostics
//! on write, run notices), under the caller's surface or a narrower one,
//! never a wider one.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::human::Human;
use crate::pipeline::{CallError, CallOptions};
use crate::result::ToolResult;
use crate::run::{Run, Surface};

/// A nested call starting or ending, as told to the caller's observer (a
/// kernel pauses its idle budget while one is in flight).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nested<'a> {
    /// The call of this tool is about to go through the pipeline.
    Started(&'a str),
    /// It has come back, with a result or an error.
    Ended(&'a str),
}

/// Told of every nested call a [`Caller`] makes.
pub type NestedObserver = Arc<dyn Fn(Nested<'_>) + Send + Sync>;

/// What a nested call carries from the calls above it; opaque outside the
/// core.
#[derive(Clone, Default)]
pub struct Chain {
    /// Exclusive tools held by the calls above (a nested call to one of
    /// them would wait for itself).
    pub(crate) held: Arc<Vec<String>>,
    /// Whether the call was made from inside another (by a [`Caller`]).
    pub(crate) nested: bool,
    /// The call it was made from, for the run log.
    pub(crate) parent: Option<u64>,
    /// Who asked, for the run log: `cell`, `worker w1`, or the tool of
    /// the call it was made from.
    pub(crate) by: Option<Arc<str>>,
}

/// A handle a tool gets from [`ToolContext::caller`](crate::ToolContext::caller)
/// and may hand to a background task: it makes calls on the tool's
/// caller's behalf. Cheap to clone.
#[derive(Clone)]
pub struct Caller {
    pub(crate) run: Run,
    pub(crate) surface: Surface,
    pub(crate) human: Option<Arc<dyn Human>>,
    pub(crate) chain: Chain,
    pub(crate) cancel: CancellationToken,
    pub(crate) observer: Option<NestedObserver>,
}

impl Caller {
    /// Calls `name` with `args` through the run's pipeline, as the model
    /// would, under this caller's surface and person. Cancelled with the
    /// caller (see [`Caller::with_cancel`]).
    ///
    /// A confirmation that could only be asked through an input-required
    /// result (protocol 2026-07-28) fails closed, telling the model to
    /// call the tool directly; re-entering an exclusive tool the chain
    /// holds fails at once.
    pub async fn call(&self, name: &str, args: Value) -> Result<ToolResult, CallError> {
        if let Some(observe) = &self.observer {
            observe(Nested::Started(name));
        }
        let options = CallOptions {
            cancel: self.cancel.child_token(),
            human: self.human.clone(),
            surface: Some(self.surface),
            chain: Some(Chain {
                nested: true,
                ..self.chain.clone()
            }),
            ..CallOptions::default()
        };
        let outcome = self.run.call_with(name, args, options).await;
        if let Some(observe) = &self.observer {
            observe(Nested::Ended(name));
        }
        outcome
    }

    /// Whether the call this caller belongs to was itself made from
    /// inside another call (a kernel cell's bridge, a worker), not by the
    /// model or front end directly: what the client's own prompt approved
    /// was then the outer call, not this one.
    pub fn is_nested(&self) -> bool {
        self.chain.nested
    }

    /// The surface nested calls run under.
    pub fn surface(&self) -> Surface {
        self.surface
    }

    /// Calls under `surface` instead, narrowed so it is never wider than
    /// this caller's (a family's own surface for its workers).
    pub fn with_surface(mut self, surface: Surface) -> Self {
        self.surface = self.surface.within(surface);
        self
    }

    /// Calls cancelled by `cancel` instead of the call that made this
    /// caller: for a background task that outlives that call (a worker).
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Says who the nested calls are made for, in the run log (`cell`,
    /// `worker w1`); by default, the tool of the call this caller came
    /// from.
    pub fn on_behalf_of(mut self, who: &str) -> Self {
        self.chain.by = Some(who.into());
        self
    }

    /// Tells `observer` when each nested call starts and ends.
    pub fn observe(mut self, observer: NestedObserver) -> Self {
        self.observer = Some(observer);
        self
    }
}
