//! `edit`: exact-match replacement inside one file.

use gantry_core::write::{Change, ChangeSet, read_current};
use gantry_core::{
    Prepared, Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec, Workspace, async_trait,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::flow::{self, Outcome};
use crate::text::{Text, closest_lines, line_numbers, not_text};
use gantry_core::text::counted;

/// Replaces exact text in a file.
pub struct Edit;

/// Parameters of `edit`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditParams {
    /// The file to change: workspace-relative or absolute inside the
    /// workspace.
    pub path: String,
    /// The exact text to replace, as it is in the file: same indentation,
    /// same spaces. Include enough surrounding lines that it occurs
    /// exactly `expected_replacements` times. Empty only to create a file
    /// that does not exist yet.
    pub old_string: String,
    /// The text to put in its place. Must differ from `old_string`.
    pub new_string: String,
    /// How many occurrences of `old_string` there are and should all be
    /// replaced. Any other count is an error that changes nothing.
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    pub expected_replacements: u32,
}

fn one() -> u32 {
    1
}

const DESCRIPTION: &str = "\
Replaces exact text in a file. `old_string` must match the file exactly, indentation and \
spaces included (LF or CRLF line endings are matched either way), and must occur exactly \
`expected_replacements` times (default 1): include enough surrounding lines to make it unique, \
or set `expected_replacements` to replace every occurrence. Read the file first. The file's \
line endings, byte-order mark and final newline are kept. With an empty `old_string` and a \
path that does not exist, creates the file with `new_string`. When nothing matches, the error \
shows the closest lines; when too many match, it says where. The result shows the diff.";

fn plan(workspace: &Workspace, params: &EditParams) -> Result<ChangeSet, ToolError> {
    let path = workspace.resolve_file(&params.path)?;
    let display = workspace.display(&path);
    let mut changes = ChangeSet::new();
    let Some(bytes) = read_current(workspace, &path)? else {
        if params.old_string.is_empty() {
            changes.push(workspace, Change::created(&path, params.new_string.clone()))?;
            return Ok(changes);
        }
        return Err(ToolError::failed(format!(
            "{display} does not exist. To create it, call edit with an empty old_string, or use write_file"
        )));
    };
    if params.old_string.is_empty() {
        return Err(ToolError::failed(format!(
            "old_string is empty but {display} already exists. Give the exact text to replace, or use write_file to replace the whole file"
        )));
    }
    let text = Text::decode(&bytes).ok_or_else(|| ToolError::failed(not_text(&display)))?;
    let body = &text.body;

    // The model's strings with the file's line endings, then as given.
    // The model's strings with the file's line endings, then as given.
    let mut old = text.with_eol(&params.old_string);
    let mut new = text.with_eol(&params.new_string);
    let mut offsets = find_all(body, &old);
    if offsets.is_empty() && old != params.old_string {
        old.clone_from(&params.old_string);
        new.clone_from(&params.new_string);
        offsets = find_all(body, &old);
    }
    let expected = params.expected_replacements as usize;
    if offsets.is_empty() {
        let wanted: Vec<&str> = params.old_string.lines().collect();
        let hint = closest_lines(body, &wanted)
            .map(|hint| format!("; {hint}"))
            .unwrap_or_else(|| "; no line resembles its first line".into());
        return Err(ToolError::failed(format!(
            "old_string was not found in {display} (0 matches, nothing changed){hint}\nRead the file again and copy the text exactly."
        )));
    }
    if offsets.len() != expected {
        let lines = line_numbers(body, offsets.iter().copied());
        let at = lines
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let advice = if offsets.len() > expected {
            format!(
                "Add surrounding lines to old_string so it matches only the one you mean, or set expected_replacements to {} to replace them all",
                offsets.len()
            )
        } else {
            format!("Set expected_replacements to {}", offsets.len())
        };
        return Err(ToolError::failed(format!(
            "found {} of old_string in {display} (at lines {at}) but expected_replacements is {expected}; nothing changed. {advice}.",
            if offsets.len() == 1 {
                "1 match".to_string()
            } else {
                format!("{} matches", offsets.len())
            }
        )));
    }
    let mut edited = splice(body, &offsets, old.len(), &new);
    keep_final_newline(body, &mut edited, text.eol());
    if edited == *body {
        return Err(ToolError::failed(format!(
            "old_string and new_string only differ in line endings, which edit keeps as {display} has them; nothing to change"
        )));
    }
    changes.push(
        workspace,
        Change::modified(&path, bytes, text.encode(&edited)),
    )?;
    Ok(changes)
}

/// Byte offsets of the non-overlapping occurrences of `needle`.
fn find_all(body: &str, needle: &str) -> Vec<usize> {
    memchr::memmem::find_iter(body.as_bytes(), needle.as_bytes()).collect()
}

/// `body` with `new` in place of the `old_len` bytes at each offset.
fn splice(body: &str, offsets: &[usize], old_len: usize, new: &str) -> String {
    let mut out = String::with_capacity(body.len() + offsets.len() * new.len());
    let mut done = 0;
    for &at in offsets {
        out.push_str(&body[done..at]);
        out.push_str(new);
        done = at + old_len;
    }
    out.push_str(&body[done..]);
    out
}

/// A file that ended with a newline still does, and one that did not
/// still does not: models often add or drop the last newline by accident.
fn keep_final_newline(before: &str, after: &mut String, eol: &str) {
    if before.is_empty() || after.is_empty() {
        return;
    }
    match (before.ends_with('\n'), after.ends_with('\n')) {
        (true, false) => after.push_str(eol),
        (false, true) => {
            let cut = if after.ends_with("\r\n") { 2 } else { 1 };
            after.truncate(after.len() - cut);
        }
        _ => {}
    }
}

#[async_trait]
impl Tool for Edit {
    type Params = EditParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("edit", "Edit", Tier::Write, DESCRIPTION)
    }

    fn validate(&self, params: &EditParams, run: &Run) -> Result<(), String> {
        run.workspace()
            .resolve(&params.path)
            .map_err(|e| format!("path: {e}"))?;
        if params.old_string == params.new_string {
            return Err(
                "new_string: is identical to old_string, so the edit would change nothing".into(),
            );
        }
        Ok(())
    }

    fn describe(&self, params: &EditParams) -> String {
        if params.old_string.is_empty() {
            format!("create {}", params.path)
        } else {
            format!("edit {}", params.path)
        }
    }

    async fn confirmation(
        &self,
        params: &EditParams,
        run: &Run,
    ) -> Result<Option<Prepared>, ToolError> {
        flow::confirmation(run, params, plan, |_, files| {
            files
                .first()
                .map(|file| format!("Edit {}", file.stat()))
                .unwrap_or_else(|| self.describe(params))
        })
        .await
    }

    async fn execute(&self, params: EditParams, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        flow::execute(ctx, &params, plan, |_, _, files| {
            let summary = match files.first() {
                Some(file) if file.letter == 'A' => {
                    format!(
                        "Created {} ({}).",
                        file.name,
                        counted(file.lines_after as u64, "line", "lines")
                    )
                }
                Some(file) => format!(
                    "Edited {}: replaced {} (+{} -{} lines).",
                    file.name,
                    counted(
                        u64::from(params.expected_replacements),
                        "occurrence",
                        "occurrences"
                    ),
                    file.added,
                    file.removed
                ),
                None => "Nothing to change.".into(),
            };
            let created = files.first().is_some_and(|file| file.letter == 'A');
            Outcome {
                summary,
                diff_for_model: !created,
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::keep_final_newline;

    #[test]
    fn final_newline_is_kept_as_it_was() {
        let mut s = "a\r\nb".to_string();
        keep_final_newline("a\r\n", &mut s, "\r\n");
        assert_eq!(s, "a\r\nb\r\n");
        let mut s = "a\nb\n".to_string();
        keep_final_newline("a", &mut s, "\n");
        assert_eq!(s, "a\nb");
        let mut s = String::new();
        keep_final_newline("a\n", &mut s, "\n");
        assert_eq!(s, "");
    }
}
