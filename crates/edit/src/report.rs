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

/// Lines of context around each change in a diff.
const CONTEXT: usize = 3;

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
                    let (skipped, old_window, new_window) = window(old, new);
                    let diff = TextDiff::configure()
                        .timeout(Duration::from_secs(2))
                        .diff_lines(old_window, new_window);
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
                        let text = diff
                            .unified_diff()
                            .context_radius(CONTEXT)
                            .header(&old_name, &new_name)
                            .to_string();
                        cut_long_lines(shift_hunks(&text, skipped))
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

/// The part of `old` and `new` that differs, widened to whole lines and
/// [`CONTEXT`] lines either side, with the number of lines before it.
/// Diffing that window rather than both whole texts keeps a one-line edit
/// of a large file cheap; the hunk headers are shifted back afterwards.
fn window<'a>(old: &'a str, new: &'a str) -> (usize, &'a str, &'a str) {
    let (o, n) = (old.as_bytes(), new.as_bytes());
    let line_start_before = |end: usize| memchr::memrchr(b'\n', &o[..end]).map_or(0, |i| i + 1);
    let prefix = common_len(o.chunks(64), n.chunks(64), |a, b| {
        a.iter().zip(b).take_while(|(x, y)| x == y).count()
    });
    let mut start = line_start_before(prefix);
    for _ in 0..CONTEXT {
        if start == 0 {
            break;
        }
        start = line_start_before(start - 1);
    }
    let room = o.len().min(n.len()) - start;
    let suffix = common_len(
        o[o.len() - room..].rchunks(64),
        n[n.len() - room..].rchunks(64),
        |a, b| {
            a.iter()
                .rev()
                .zip(b.iter().rev())
                .take_while(|(x, y)| x == y)
                .count()
        },
    );
    // From where the common tail starts, on to the next line start, then
    // CONTEXT lines further: the same bytes in both texts.
    let mut tail = 0;
    for _ in 0..=CONTEXT {
        match memchr::memchr(b'\n', &o[o.len() - suffix + tail..]) {
            Some(at) => tail += at + 1,
            _ => {
                tail = suffix;
                break;
            }
        }
    }
    let skipped = memchr::memchr_iter(b'\n', &o[..start]).count();
    (
        skipped,
        &old[start..o.len() - suffix + tail],
        &new[start..n.len() - suffix + tail],
    )
}

/// How many bytes two chunked texts share from the side the chunks are
/// taken from: whole equal chunks are compared at memcmp speed, the first
/// unequal pair by `within`.
fn common_len<'a>(
    a: impl Iterator<Item = &'a [u8]>,
    b: impl Iterator<Item = &'a [u8]>,
    within: impl Fn(&[u8], &[u8]) -> usize,
) -> usize {
    let mut total = 0;
    for (x, y) in a.zip(b) {
        if x == y {
            total += x.len();
        } else {
            return total + within(x, y);
        }
    }
    total
}

/// Bytes of one diff line kept, model and person alike: a minified file's
/// or a data dump's single line says nothing more at 50 MB than at 2 KB.
const DIFF_LINE_BYTES: usize = 2000;

/// `diff` with every line longer than [`DIFF_LINE_BYTES`] cut, saying how
/// long it was. A diff of short lines comes back as it is.
fn cut_long_lines(diff: String) -> String {
    if diff.split('\n').all(|line| line.len() <= DIFF_LINE_BYTES) {
        return diff;
    }
    let mut out = String::with_capacity(diff.len().min(1 << 20));
    for line in diff.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        if body.len() <= DIFF_LINE_BYTES {
            out.push_str(line);
            continue;
        }
        let mut end = DIFF_LINE_BYTES;
        while !body.is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(&body[..end]);
        out.push_str(&format!(
            "… [diff line cut at {DIFF_LINE_BYTES} bytes; it is {} bytes long]\n",
            body.len()
        ));
    }
    out
}

/// `diff` with every `@@ -a,b +c,d @@` moved down by `by` lines.
fn shift_hunks(diff: &str, by: usize) -> String {
    if by == 0 {
        return diff.to_string();
    }
    let bump = |range: &str| -> Option<String> {
        let (start, count) = match range.split_once(',') {
            Some((start, count)) => (start, Some(count)),
            None => (range, None),
        };
        let start = start.parse::<usize>().ok()? + by;
        Some(match count {
            Some(count) => format!("{start},{count}"),
            None => start.to_string(),
        })
    };
    let shift = |line: &str| -> Option<String> {
        let (ranges, tail) = line.strip_prefix("@@ -")?.split_once(" @@")?;
        let (old, new) = ranges.split_once(" +")?;
        Some(format!("@@ -{} +{} @@{tail}", bump(old)?, bump(new)?))
    };
    diff.split_inclusive('\n')
        .map(|line| shift(line).unwrap_or_else(|| line.to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The windowed diff is the diff of the whole texts.
    #[test]
    fn windowed_diffs_equal_whole_diffs() {
        let lines: Vec<String> = (1..=40).map(|i| format!("line {i}\n")).collect();
        let old: String = lines.concat();
        let cases = [
            old.replace("line 20\n", "line twenty\n"),
            old.replace("line 1\n", ""),
            old.replace("line 40\n", "line 40"),
            old.replace("line 3\n", "line 3\nnew\n")
                .replace("line 38\n", ""),
            format!("{old}more\n"),
            String::new(),
            old.replace("line 2", "line 2 \u{e9}"),
        ];
        for new in cases {
            let whole = TextDiff::from_lines(&old, &new)
                .unified_diff()
                .context_radius(CONTEXT)
                .header("a", "b")
                .to_string();
            let (skipped, o, n) = window(&old, &new);
            let windowed = TextDiff::from_lines(o, n)
                .unified_diff()
                .context_radius(CONTEXT)
                .header("a", "b")
                .to_string();
            assert_eq!(shift_hunks(&windowed, skipped), whole, "{new:?}");
        }
    }
}
