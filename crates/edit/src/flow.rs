//! The plan → confirm → apply → result flow of the three write tools.
//!
//! `write_file`, `edit` and `apply_patch` differ only in how they plan a
//! [`ChangeSet`] and how they word the summaries; planning off the async
//! threads, showing the plan's diff for confirmation, taking that same plan
//! back in `execute` (or planning afresh when nothing was confirmed),
//! applying it and reporting the result live here once, so the three cannot
//! drift apart.

use gantry_core::write::ChangeSet;
use gantry_core::{Confirmation, Prepared, Run, ToolContext, ToolError, ToolResult, Workspace};

use crate::report::{self, FileReport};

/// How a tool plans its change: pure file work against the workspace.
pub(crate) type Planner<P> = fn(&Workspace, &P) -> Result<ChangeSet, ToolError>;

/// Plans off the async threads (reading and diffing files blocks).
async fn plan<P: Clone + Send + 'static>(
    run: &Run,
    params: &P,
    planner: Planner<P>,
) -> Result<ChangeSet, ToolError> {
    let workspace = run.workspace().clone();
    let params = params.clone();
    tokio::task::spawn_blocking(move || planner(&workspace, &params))
        .await
        .map_err(|e| ToolError::failed(format!("planning the change failed: {e}")))?
}

/// Plans the change and shows it to the person: `summary` over the full
/// diff. The plan is kept for [`execute`] to apply exactly as shown.
pub(crate) async fn confirmation<P: Clone + Send + 'static>(
    run: &Run,
    params: &P,
    planner: Planner<P>,
    summary: impl FnOnce(&ChangeSet, &[FileReport]) -> String,
) -> Result<Option<Prepared>, ToolError> {
    let changes = plan(run, params, planner).await?;
    let files = report::files(run.workspace(), &changes);
    let summary = summary(&changes, &files);
    Ok(Some(Prepared {
        confirmation: Confirmation {
            summary,
            details: Some(report::full_diff(&files)),
        },
        plan: Some(Box::new(changes)),
    }))
}

/// What a tool says about the change it is about to apply.
pub(crate) struct Outcome {
    /// The first line(s) of the result.
    pub summary: String,
    /// Whether the model also gets the (capped) diff.
    pub diff_for_model: bool,
}

/// Applies the confirmed plan (or plans now when there was none) through
/// the run's write path and reports it; `outcome` words the summary before
/// the change set is handed over.
pub(crate) async fn execute<P: Clone + Send + 'static>(
    mut ctx: ToolContext,
    params: &P,
    planner: Planner<P>,
    outcome: impl FnOnce(&Workspace, &ChangeSet, &[FileReport]) -> Outcome,
) -> Result<ToolResult, ToolError> {
    let changes = match ctx.take_plan::<ChangeSet>() {
        Some(changes) => changes,
        None => plan(&ctx.run, params, planner).await?,
    };
    let files = report::files(ctx.run.workspace(), &changes);
    let Outcome {
        summary,
        diff_for_model,
    } = outcome(ctx.run.workspace(), &changes, &files);
    let applied = ctx.run.apply(changes).await?;
    Ok(report::result(summary, &files, diff_for_model, &applied))
}
