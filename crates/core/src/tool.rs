//! The tool contract (SPEC §3).
//!
//! A tool is written against [`Tool`], with a typed parameter struct whose
//! doc comments become the schema the model reads. The registry stores tools
//! as [`DynTool`], the object-safe form that works on JSON; tools whose
//! schema is only known at run time (discovered or bridged tools) implement
//! [`DynTool`] directly.

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::caller::Caller;
use crate::human::{Confirmation, Human, HumanError};
use crate::result::ToolResult;
use crate::run::Run;
use crate::schema::schema_for;
use crate::tier::Tier;
use crate::workspace::PathError;

/// What the registry and the surfaces know of a tool besides its schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Unique name used in calls.
    pub name: String,
    /// Name for people.
    pub display_name: String,
    /// Sent to the model: what the tool does and when to use it.
    pub description: String,
    /// What the tool can do; decides visibility and confirmation.
    pub tier: Tier,
    /// Calls of this tool within one run never overlap.
    pub exclusive: bool,
    /// The tool asks a person something, so a surface lists it only to a
    /// caller that can reach one (over MCP: a client that declared
    /// elicitation, request by request on protocols without sessions).
    pub needs_person: bool,
    /// The user's settings trust the tool (a bridged server with `trust:
    /// true`), so Gantry's own confirmation is skipped; the tier still
    /// decides which surfaces see it.
    pub trusted: bool,
    /// The tier of what a call can lead to, when wider than the tool's
    /// own: a read tool that hands work to someone whose own tools may
    /// write. Front ends annotate the tool with it, so a client that asks
    /// before non-read-only tools asks before such a call too.
    pub leads_to: Option<Tier>,
}

impl ToolSpec {
    /// A non-exclusive tool.
    pub fn new(
        name: impl Into<String>,
        display_name: impl Into<String>,
        tier: Tier,
        description: impl Into<String>,
    ) -> Self {
        ToolSpec {
            name: name.into(),
            display_name: display_name.into(),
            description: description.into(),
            tier,
            exclusive: false,
            needs_person: false,
            trusted: false,
            leads_to: None,
        }
    }

    /// Says what a call can lead to (see [`ToolSpec::leads_to`]); kept
    /// only when wider than the tool's own tier.
    pub fn leads_to(mut self, tier: Tier) -> Self {
        self.leads_to = (tier > self.tier).then_some(tier);
        self
    }

    /// Marks the tool as trusted by the user's settings (see
    /// [`ToolSpec::trusted`]).
    pub fn trusted(mut self) -> Self {
        self.trusted = true;
        self
    }

    /// Marks the tool as asking a person (see [`ToolSpec::needs_person`]).
    pub fn asks_person(mut self) -> Self {
        self.needs_person = true;
        self
    }

    /// Marks calls of this tool as serialised within a run.
    pub fn exclusive(mut self) -> Self {
        self.exclusive = true;
        self
    }
}

/// Why a tool's execution did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The tool ran and failed; the message is for the model.
    #[error("{0}")]
    Failed(String),
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The tool needs an answer from the client before it can go on.
    #[error("input required from the client")]
    InputRequired,
}

impl ToolError {
    /// A failure with a message for the model.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }
}

impl From<std::io::Error> for ToolError {
    fn from(error: std::io::Error) -> Self {
        ToolError::Failed(error.to_string())
    }
}

impl From<PathError> for ToolError {
    fn from(error: PathError) -> Self {
        ToolError::Failed(error.to_string())
    }
}

impl From<HumanError> for ToolError {
    fn from(error: HumanError) -> Self {
        match error {
            HumanError::InputRequired => ToolError::InputRequired,
            other => ToolError::Failed(other.to_string()),
        }
    }
}

/// One progress report of a long call.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// What is happening.
    pub message: String,
    /// Work done so far, when known.
    pub done: Option<f64>,
    /// Total work, when known.
    pub total: Option<f64>,
}

/// Receives progress of a call; front ends forward it (MCP progress
/// notifications, a terminal line).
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// Everything a call's execution may use besides its parameters.
pub struct ToolContext {
    /// The run the call belongs to.
    pub run: Run,
    /// Cancelled when the caller gives up; long work checks it.
    pub cancel: CancellationToken,
    progress: Option<ProgressSink>,
    caller: Caller,
    plan: Option<Box<dyn Any + Send + Sync>>,
}

impl ToolContext {
    pub(crate) fn new(
        caller: Caller,
        progress: Option<ProgressSink>,
        plan: Option<Box<dyn Any + Send + Sync>>,
    ) -> Self {
        ToolContext {
            run: caller.run.clone(),
            cancel: caller.cancel.clone(),
            progress,
            caller,
            plan,
        }
    }

    /// A handle for calls made on this call's behalf (a kernel cell's
    /// bridge, a worker): the same pipeline, this call's surface and
    /// person, cancelled with this call.
    pub fn caller(&self) -> Caller {
        self.caller.clone()
    }

    /// The surface this call runs under.
    pub fn surface(&self) -> crate::run::Surface {
        self.caller.surface
    }

    /// Reports progress, if anyone listens.
    pub fn progress(&self, message: impl Into<String>, done: Option<f64>, total: Option<f64>) {
        if let Some(sink) = &self.progress {
            sink(Progress {
                message: message.into(),
                done,
                total,
            });
        }
    }

    /// The person behind this call's surface, if one is wired.
    pub fn human(&self) -> Option<&Arc<dyn Human>> {
        self.caller.human.as_ref()
    }

    /// The plan this call was confirmed with (see
    /// [`Tool::confirmation`]): execute must carry out exactly that.
    pub fn take_plan<P: Any + Send + Sync>(&mut self) -> Option<P> {
        self.plan
            .take()
            .and_then(|plan| plan.downcast::<P>().ok())
            .map(|plan| *plan)
    }
}

/// What a tool shows before it runs, and optionally the plan it showed, so
/// that execute carries out exactly what was confirmed (an edit planned
/// against a file's hash).
pub struct Prepared {
    /// What the person sees.
    pub confirmation: Confirmation,
    /// Handed to execute through [`ToolContext::take_plan`].
    pub plan: Option<Box<dyn Any + Send + Sync>>,
}

impl Prepared {
    /// A confirmation without a plan.
    pub fn show(confirmation: Confirmation) -> Self {
        Prepared {
            confirmation,
            plan: None,
        }
    }
}

/// A tool written with typed parameters. Implement this; the registry
/// adapts it to [`DynTool`].
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The parameters; their doc comments are the schema descriptions.
    type Params: DeserializeOwned + JsonSchema + Send + Sync;

    /// Name, description, tier.
    fn spec(&self) -> ToolSpec;

    /// Checks the schema cannot express (a path inside the workspace, two
    /// parameters that exclude each other). The message names the
    /// parameter.
    fn validate(&self, _params: &Self::Params, _run: &Run) -> Result<(), String> {
        Ok(())
    }

    /// One human line: what this call will do.
    fn describe(&self, params: &Self::Params) -> String;

    /// What to show the person when the approval mode asks for it, with
    /// the plan execute will carry out. `None` lets the pipeline show
    /// [`Tool::describe`].
    async fn confirmation(
        &self,
        _params: &Self::Params,
        _run: &Run,
    ) -> Result<Option<Prepared>, ToolError> {
        Ok(None)
    }

    /// Does the work.
    async fn execute(
        &self,
        params: Self::Params,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError>;
}

/// The object-safe form the registry stores: parameters as JSON.
#[async_trait]
pub trait DynTool: Send + Sync + 'static {
    /// Name, description, tier.
    fn spec(&self) -> ToolSpec;
    /// The JSON Schema of the parameters.
    fn schema(&self) -> Value;
    /// The tool's own checks after the schema passed.
    fn validate(&self, args: &Value, run: &Run) -> Result<(), String>;
    /// One human line: what this call will do.
    fn describe(&self, args: &Value) -> String;
    /// See [`Tool::confirmation`].
    async fn confirmation(&self, args: &Value, run: &Run) -> Result<Option<Prepared>, ToolError>;
    /// Does the work.
    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult, ToolError>;
}

fn parse<P: DeserializeOwned>(args: &Value) -> Result<P, String> {
    P::deserialize(args).map_err(|e| e.to_string())
}

#[async_trait]
impl<T: Tool> DynTool for T {
    fn spec(&self) -> ToolSpec {
        Tool::spec(self)
    }

    fn schema(&self) -> Value {
        schema_for::<T::Params>()
    }

    fn validate(&self, args: &Value, run: &Run) -> Result<(), String> {
        Tool::validate(self, &parse::<T::Params>(args)?, run)
    }

    fn describe(&self, args: &Value) -> String {
        match parse::<T::Params>(args) {
            Ok(params) => Tool::describe(self, &params),
            Err(_) => Tool::spec(self).display_name,
        }
    }

    async fn confirmation(&self, args: &Value, run: &Run) -> Result<Option<Prepared>, ToolError> {
        let params = parse::<T::Params>(args).map_err(ToolError::Failed)?;
        Tool::confirmation(self, &params, run).await
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let params = parse::<T::Params>(&args).map_err(ToolError::Failed)?;
        Tool::execute(self, params, ctx).await
    }
}
