//! What a planned change looks like to the person (a unified diff to
//! confirm) and to the model (a summary and the diff, capped), computed
//! from the change set alone, so a confirmed plan reports the same way as
//! one planned at execute time.

use std::time::Duration;

use gantry_core::write::{Applied, ChangeKind, ChangeSet};
use gantry_core::{Display, Part, ToolResult, Workspace};
use similar::{DiffOp, TextDiff};

/// Diff lines the model gets back at most; the person's display has all.
const MODEL_DIFF_LINES: usize = 400;

/// One file of a change, as shown.
pub(crate) struct FileReport {
    /// A, M, D or R.
    pub letter: char,
    /// The path (for a rename, `from -> to`).
    pub name: String,
    /// Lines added and removed.
    pub added: usize,
    pub removed: usize,
    /// Lines of the new content (for "created, 12 lines").
    pub lines_after: usize,
    pub lines_before: usize,
    /// The unified diff of this file.
    pub diff: String,
}

impl FileReport {
    /// `M src/lib.rs (+2 -1)`.
    pub fn stat(&self) -> String {
        let mut counts = Vec::new();
        if self.added > 0 {
            counts.push(format!("+{}", self.added));
        }
        if self.removed > 0 {
            counts.push(format!("-{}", self.removed));
        }
        if counts.is_empty() {
            format!("{} {}", self.letter, self.name)
        } else {
            format!("{} {} ({})", self.letter, self.name, counts.join(" "))
        }
    }
}

/// The files of a change set, in its order.
pub(crate) fn files(workspace: &Workspace, changes: &ChangeSet) -> Vec<FileReport> {
    changes
        .changes()
        .iter()
        .map(|change| {
            let to = workspace.display(change.path());
            let (name, old_name, new_name) = match change.kind() {
                ChangeKind::Created => (to.clone(), "/dev/null".to_string(), format!("b/{to}")),
                ChangeKind::Deleted => (to.clone(), format!("a/{to}"), "/dev/null".to_string()),
                ChangeKind::Modified => (to.clone(), format!("a/{to}"), format!("b/{to}")),
                ChangeKind::Renamed { from } => {
                    let from = workspace.display(from);
                    (
                        format!("{from} -> {to}"),
                        format!("a/{from}"),
                        format!("b/{to}"),
                    )
                }
            };
            let before = change.before().unwrap_or_default();
            let after = change.after().unwrap_or_default();
            match (std::str::from_utf8(before), std::str::from_utf8(after)) {
                (Ok(old), Ok(new)) => {
                    let diff = TextDiff::configure()
                        .timeout(Duration::from_secs(2))
                        .diff_lines(old, new);
                    let (mut added, mut removed) = (0, 0);
                    for op in diff.ops() {
                        match *op {
                            DiffOp::Insert { new_len, .. } => added += new_len,
                            DiffOp::Delete { old_len, .. } => removed += old_len,
                            DiffOp::Replace {
                                old_len, new_len, ..
                            } => {
                                added += new_len;
                                removed += old_len;
                            }
                            DiffOp::Equal { .. } => {}
                        }
                    }
                    let text = if added + removed == 0 {
                        format!("--- {old_name}\n+++ {new_name}\n")
                    } else {
                        diff.unified_diff()
                            .context_radius(3)
                            .header(&old_name, &new_name)
                            .to_string()
                    };
                    FileReport {
                        letter: change.kind().letter(),
                        name,
                        added,
                        removed,
                        lines_before: crate::text::line_count(old),
                        lines_after: crate::text::line_count(new),
                        diff: text,
                    }
                }
                _ => FileReport {
                    letter: change.kind().letter(),
                    name,
                    added: 0,
                    removed: 0,
                    lines_before: 0,
                    lines_after: 0,
                    diff: format!(
                        "Binary files {old_name} and {new_name} differ ({} bytes -> {} bytes)\n",
                        before.len(),
                        after.len()
                    ),
                },
            }
        })
        .collect()
}

/// The whole diff of several files.
pub(crate) fn full_diff(files: &[FileReport]) -> String {
    files.iter().map(|f| f.diff.as_str()).collect()
}

/// A diff cut to what the model should read, saying what was cut.
pub(crate) fn capped(diff: &str) -> String {
    let total = diff.lines().count();
    if total <= MODEL_DIFF_LINES {
        return diff.trim_end().to_string();
    }
    let kept: Vec<&str> = diff.lines().take(MODEL_DIFF_LINES).collect();
    format!(
        "{}\n[diff cut: {} more lines not shown; read the file to see them]",
        kept.join("\n"),
        total - MODEL_DIFF_LINES
    )
}

/// The result of a write: `summary`, then (if `diff_for_model`) the capped
/// diff for the model; the full diff for the person; then the after-write
/// hooks' notes for both.
pub(crate) fn result(
    summary: String,
    files: &[FileReport],
    diff_for_model: bool,
    applied: &Applied,
) -> ToolResult {
    let diff = full_diff(files);
    let mut text = summary.clone();
    if diff_for_model && !diff.is_empty() {
        text.push_str("\n\n");
        text.push_str(&capped(&diff));
    }
    let display = match files {
        [one] => Display::FileDiff {
            path: one.name.clone(),
            diff,
        },
        _ => Display::Markdown {
            markdown: format!("{summary}\n\n```diff\n{diff}```"),
        },
    };
    let mut result = ToolResult::new(vec![Part::text(text)], display);
    for note in &applied.notes {
        result.append_text(note);
    }
    result
}
