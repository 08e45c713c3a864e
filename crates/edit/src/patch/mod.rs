//! `apply_patch`: a multi-file patch, applied all-or-nothing.
//!
//! Two formats are read: the `*** Begin Patch` format current models are
//! trained to emit, and plain unified diffs (`diff -u`, `git diff`). Every
//! hunk of every file is placed before anything is written; one hunk that
//! has no place refuses the whole patch, naming the file and quoting the
//! lines it looked for.

mod apply;
pub(crate) mod parse;
#[cfg(test)]
mod properties;

use std::path::PathBuf;

use gantry_core::write::{Change, ChangeSet, read_current};
use gantry_core::{
    Prepared, Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec, Workspace, async_trait,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::flow::{self, Outcome};
use crate::text::{Text, not_text};
use gantry_core::text::counted;
use parse::{FilePatch, Op};

/// Applies a multi-file patch.
pub struct ApplyPatch;

/// Parameters of `apply_patch`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchParams {
    /// The patch text: `*** Begin Patch` ... `*** End Patch`, or a
    /// unified diff.
    pub patch: String,
}

const DESCRIPTION: &str = "\
Applies a patch to one or more files, all or nothing: if any hunk does not apply, no file is \
changed and the error quotes the lines that were not found. Paths are relative to the \
workspace. Format:
*** Begin Patch
*** Add File: path/new.py
+every line of the new file, each prefixed with +
*** Update File: path/old.py
*** Move to: path/renamed.py   (optional)
@@ def enclosing_function():   (optional line to find first)
 context line (space prefix), about 3 before and after each change
-line to remove
+line to add
*** End of File   (optional: the hunk ends the file)
*** Delete File: path/gone.py
*** End Patch
A unified diff (`--- a/path`, `+++ b/path`, `@@ -l,n +l,n @@`, as `git diff` prints) is also \
accepted. Context is matched exactly first, then ignoring surrounding whitespace. The result \
lists each file (A added, M modified, D deleted, R renamed) with its line counts and the diff.";

/// Resolves a path named in the patch, with the patch line for errors.
fn resolve(workspace: &Workspace, path: &str, line: usize) -> Result<PathBuf, String> {
    workspace
        .resolve_file(path)
        .map_err(|e| format!("line {line}: {e}"))
}

/// The change one file of the patch makes, or why it cannot.
fn plan_file(workspace: &Workspace, file: &FilePatch) -> Result<Option<Change>, Vec<String>> {
    let one = |message: String| vec![message];
    let path = resolve(workspace, &file.path, file.line).map_err(one)?;
    let display = workspace.display(&path);
    let where_ = format!("{display} (patch line {})", file.line);
    let current = read_current(workspace, &path).map_err(|e| one(e.to_string()))?;
    match (file.op, current) {
        (Op::Add, Some(_)) => Err(one(format!(
            "{where_}: `Add File` but the file already exists; use `*** Update File` to change it"
        ))),
        (Op::Add, None) => {
            let hunk = &file.hunks[0];
            let mut content = hunk.new.join("\n");
            if !hunk.new.is_empty() && !hunk.new_no_newline {
                content.push('\n');
            }
            Ok(Some(Change::created(&path, content)))
        }
        (_, None) => Err(one(format!(
            "{where_}: the file does not exist{}",
            if file.op == Op::Update {
                "; use `*** Add File` to create it"
            } else {
                ""
            }
        ))),
        (Op::Delete, Some(bytes)) => {
            if !file.hunks.is_empty() {
                let text = Text::decode(&bytes).ok_or_else(|| one(not_text(&display)))?;
                let left = apply::apply_hunks(&text, &file.hunks, &display)?;
                if !left.trim().is_empty() {
                    return Err(one(format!(
                        "{where_}: the diff deletes the file but does not remove all of its lines; the file has changed since the diff was made"
                    )));
                }
            }
            Ok(Some(Change::deleted(&path, bytes)))
        }
        (Op::Update, Some(bytes)) => {
            let after = if file.hunks.is_empty() {
                bytes.clone()
            } else {
                let text = Text::decode(&bytes).ok_or_else(|| one(not_text(&display)))?;
                text.encode(&apply::apply_hunks(&text, &file.hunks, &display)?)
            };
            match &file.move_to {
                Some(to) => {
                    let dest = resolve(workspace, to, file.line).map_err(one)?;
                    let dest_display = workspace.display(&dest);
                    if read_current(workspace, &dest)
                        .map_err(|e| one(e.to_string()))?
                        .is_some()
                    {
                        return Err(one(format!(
                            "{where_}: cannot move it to {dest_display}, which already exists"
                        )));
                    }
                    Ok(Some(Change::renamed(&path, dest, bytes, after)))
                }
                None if after == bytes => Ok(None),
                None => Ok(Some(Change::modified(&path, bytes, after))),
            }
        }
    }
}

/// [`plan`] for the tool's parameters.
fn plan_params(workspace: &Workspace, params: &ApplyPatchParams) -> Result<ChangeSet, ToolError> {
    plan(workspace, &params.patch)
}

/// Plans the whole patch, or explains every file that cannot be changed.
fn plan(workspace: &Workspace, text: &str) -> Result<ChangeSet, ToolError> {
    let patch = parse::parse(text).map_err(|e| ToolError::failed(format!("invalid patch: {e}")))?;
    let mut changes = ChangeSet::new();
    let mut problems = Vec::new();
    for file in &patch.files {
        match plan_file(workspace, file) {
            Ok(Some(change)) => {
                if let Err(e) = changes.push(workspace, change) {
                    problems.push(e.to_string());
                }
            }
            Ok(None) => {}
            Err(mut why) => problems.append(&mut why),
        }
    }
    if problems.is_empty() {
        Ok(changes)
    } else {
        Err(ToolError::failed(format!(
            "the patch was not applied and no file was changed; {}:\n\n{}\n\nRead the files again and send a corrected patch.",
            counted(problems.len() as u64, "problem", "problems"),
            problems.join("\n\n")
        )))
    }
}

#[async_trait]
impl Tool for ApplyPatch {
    type Params = ApplyPatchParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("apply_patch", "Apply patch", Tier::Write, DESCRIPTION)
    }

    fn validate(&self, params: &ApplyPatchParams, run: &Run) -> Result<(), String> {
        let patch = parse::parse(&params.patch).map_err(|e| format!("patch: {e}"))?;
        for file in &patch.files {
            for path in std::iter::once(&file.path).chain(&file.move_to) {
                resolve(run.workspace(), path, file.line).map_err(|e| format!("patch: {e}"))?;
            }
        }
        Ok(())
    }

    fn describe(&self, params: &ApplyPatchParams) -> String {
        match parse::parse(&params.patch) {
            Ok(patch) => {
                let paths: Vec<&str> = patch.files.iter().map(|f| f.path.as_str()).collect();
                format!("apply a patch to {}", paths.join(", "))
            }
            Err(_) => "apply a patch".into(),
        }
    }

    async fn confirmation(
        &self,
        params: &ApplyPatchParams,
        run: &Run,
    ) -> Result<Option<Prepared>, ToolError> {
        flow::confirmation(run, params, plan_params, |_, files| {
            let stats: Vec<String> = files.iter().map(|f| f.stat()).collect();
            format!("Apply patch: {}", stats.join(", "))
        })
        .await
    }

    async fn execute(
        &self,
        params: ApplyPatchParams,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        flow::execute(ctx, &params, plan_params, |_, _, files| {
            let (added, removed) = files
                .iter()
                .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed));
            let mut summary = if files.is_empty() {
                "The patch changes nothing: every file already has its content.".to_string()
            } else {
                format!(
                    "Applied the patch: {} changed (+{added} -{removed}).",
                    counted(files.len() as u64, "file", "files")
                )
            };
            for file in files {
                summary.push('\n');
                summary.push_str(&file.stat());
            }
            Outcome {
                summary,
                diff_for_model: true,
            }
        })
        .await
    }
}
