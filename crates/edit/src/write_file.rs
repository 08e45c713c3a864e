//! `write_file`: a whole file's content, created or replaced.

use gantry_core::write::{ChangeKind, ChangeSet, read_current};
use gantry_core::{
    Prepared, Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec, Workspace, async_trait,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::flow::{self, Outcome};
use crate::report::FileReport;
use gantry_core::text::counted;

/// Writes a whole file.
pub struct WriteFile;

/// Parameters of `write_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileParams {
    /// The file to write: workspace-relative (`src/main.rs`) or absolute
    /// inside the workspace. Missing parent directories are created.
    pub path: String,
    /// The complete new content of the file, exactly as it should be on
    /// disk.
    pub content: String,
}

const DESCRIPTION: &str = "\
Writes a file in the workspace: creates it (with any missing parent directories) or replaces \
its entire content with `content`, written exactly as given. To change part of an existing \
file, prefer `edit` (or `apply_patch` for several places or files): it cannot drop content you \
did not mean to touch. The result says whether the file was created or overwritten, with line \
counts and the diff of an overwrite.";

/// A write of `content`, or nothing when the file already has it.
fn plan(workspace: &Workspace, params: &WriteFileParams) -> Result<ChangeSet, ToolError> {
    let path = workspace.resolve_file(&params.path)?;
    let mut changes = ChangeSet::new();
    if read_current(workspace, &path)?.is_some_and(|now| now == params.content.as_bytes()) {
        return Ok(changes);
    }
    changes.plan_write(workspace, &path, params.content.clone())?;
    Ok(changes)
}

/// `Created x (12 lines)` / `Overwrote x (10 -> 12 lines, +4 -2)`.
fn summary(display: &str, changes: &ChangeSet, files: &[FileReport]) -> String {
    match (changes.changes().first().map(|c| c.kind()), files.first()) {
        (Some(ChangeKind::Created), Some(file)) => {
            format!(
                "Created {display} ({}).",
                counted(file.lines_after as u64, "line", "lines")
            )
        }
        (Some(_), Some(file)) => format!(
            "Overwrote {display} ({} -> {}, +{} -{}).",
            counted(file.lines_before as u64, "line", "lines"),
            counted(file.lines_after as u64, "line", "lines"),
            file.added,
            file.removed
        ),
        _ => format!("{display} already has exactly this content; nothing was written."),
    }
}

#[async_trait]
impl Tool for WriteFile {
    type Params = WriteFileParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("write_file", "Write file", Tier::Write, DESCRIPTION)
    }

    fn validate(&self, params: &WriteFileParams, run: &Run) -> Result<(), String> {
        let path = run
            .workspace()
            .resolve(&params.path)
            .map_err(|e| format!("path: {e}"))?;
        if path.is_dir() {
            return Err(format!(
                "path: `{}` is a directory, not a file",
                params.path
            ));
        }
        Ok(())
    }

    fn describe(&self, params: &WriteFileParams) -> String {
        format!(
            "write {} ({})",
            params.path,
            counted(
                crate::text::line_count(&params.content) as u64,
                "line",
                "lines"
            )
        )
    }

    async fn confirmation(
        &self,
        params: &WriteFileParams,
        run: &Run,
    ) -> Result<Option<Prepared>, ToolError> {
        flow::confirmation(run, params, plan, |changes, _| {
            let display = &params.path;
            match changes.changes().first().map(|c| c.kind()) {
                Some(ChangeKind::Created) => format!("Create {display}"),
                Some(_) => format!("Overwrite {display}"),
                None => format!("Write {display} (unchanged)"),
            }
        })
        .await
    }

    async fn execute(
        &self,
        params: WriteFileParams,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        flow::execute(ctx, &params, plan, |workspace, changes, files| {
            let display = match changes.changes().first() {
                Some(change) => workspace.display(change.path()),
                None => params.path.clone(),
            };
            Outcome {
                summary: summary(&display, changes, files),
                diff_for_model: changes
                    .changes()
                    .first()
                    .is_some_and(|c| *c.kind() != ChangeKind::Created),
            }
        })
        .await
    }
}
