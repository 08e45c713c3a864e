//! The result the model reads: files in path order, their lines with
//! numbers and context, long lines cut around the match, and what the
//! search skipped.

use std::path::Path;

use gantry_core::{Display, Part, ToolResult, Workspace};

use super::sink::{Kind, Line};
use super::walk::Outcome;
use super::{GrepParams, MAX_LINE_CHARS, Query};
use crate::common::{counted, fenced, quote, tail, thousands};

/// Characters kept before the match when a long line is shortened.
const LEAD_CHARS: usize = 60;

/// A stored line as text: lossy UTF-8, and a long line cut to
/// [`MAX_LINE_CHARS`] characters around its match.
pub(super) fn line_text(line: &Line, text: &[u8], shortened: &mut bool) -> String {
    let decoded = String::from_utf8_lossy(&text[line.start..line.end]);
    let chars = decoded.chars().count();
    if chars <= MAX_LINE_CHARS && !line.cut_front && !line.cut_back {
        return decoded.into_owned();
    }
    *shortened = true;
    let match_char = line
        .match_at
        .and_then(|at| text.get(line.start..line.start + at))
        .map_or(0, |before| String::from_utf8_lossy(before).chars().count());
    let skip = match_char
        .saturating_sub(LEAD_CHARS)
        .min(chars.saturating_sub(MAX_LINE_CHARS));
    let mut out = String::new();
    if line.cut_front || skip > 0 {
        out.push('…');
    }
    out.extend(decoded.chars().skip(skip).take(MAX_LINE_CHARS));
    if line.cut_back || skip + MAX_LINE_CHARS < chars {
        out.push('…');
    }
    out
}

pub(super) fn render(
    workspace: &Workspace,
    params: &GrepParams,
    base: &Path,
    query: &Query,
    outcome: Outcome,
) -> ToolResult {
    let folder = workspace.display(base);
    let mut filters = vec![
        if query.insensitive {
            "case-insensitive"
        } else {
            "case-sensitive"
        }
        .to_string(),
    ];
    if params.literal {
        filters.push("as plain text".to_string());
    }
    if let Some(include) = &params.include {
        filters.push(format!("files matching {}", quote(include)));
    }
    let what = format!(
        "{} in {} ({})",
        quote(&params.pattern),
        quote(&folder),
        filters.join(", ")
    );
    let mut skipped = Vec::new();
    if outcome.binary > 0 {
        skipped.push(format!(
            "{} skipped",
            counted(outcome.binary, "binary file", "binary files")
        ));
    }
    if outcome.unreadable > 0 {
        skipped.push(format!(
            "{} could not be read",
            counted(outcome.unreadable, "entry", "entries")
        ));
    }
    let skipped = tail(&skipped, "; ", ", ", "");
    let searched = counted(outcome.files_searched, "file", "files");

    if outcome.matches == 0 {
        let mut text = format!("No matches for {what}; searched {searched}{skipped}.");
        if outcome.files_searched == 0 {
            text.push_str(" No file was searched:");
            if params.include.is_some() {
                text.push_str(" no file under the path matches `include`, or");
            }
            text.push_str(" every file there is ignored or hidden.");
        } else {
            text.push_str(
                " Files excluded by .gitignore/.ignore and hidden files are not searched.",
            );
        }
        if params.case_insensitive.is_none() && !query.insensitive {
            text.push_str(
                " Case was matched exactly because the pattern has capitals (smart case); set \
                 `case_insensitive: true` to ignore it.",
            );
        }
        return ToolResult::text(text);
    }

    let mut body = String::new();
    let mut shown = 0u64;
    let mut shown_files = 0u64;
    let mut shortened = false;
    for (path, hits) in &outcome.files {
        if shown >= query.cap {
            break;
        }
        let display = workspace.display(Path::new(path));
        if shown_files > 0 {
            body.push('\n');
        }
        shown_files += 1;
        let mut after = 0;
        for line in hits.lines.iter() {
            match line.kind {
                Kind::Match if shown >= query.cap => break,
                Kind::Match => {
                    shown += 1;
                    after = 0;
                    let text = line_text(line, &hits.text, &mut shortened);
                    body.push_str(&format!("{display}:{}: {text}\n", line.number));
                }
                // Past the cap, only the last match's own trailing context.
                Kind::Context | Kind::Break if shown >= query.cap && after >= query.context => {
                    break;
                }
                Kind::Break if shown >= query.cap => break,
                Kind::Context => {
                    after += 1;
                    let text = line_text(line, &hits.text, &mut shortened);
                    body.push_str(&format!("{display}-{}- {text}\n", line.number));
                }
                Kind::Break => body.push_str("--\n"),
            }
        }
    }

    let at_least = if outcome.pruned { "at least " } else { "" };
    let lines_word = if outcome.matches == 1 {
        "matching line"
    } else {
        "matching lines"
    };
    let files_word = if outcome.files_matched == 1 {
        "file"
    } else {
        "files"
    };
    let mut header = if shown < outcome.matches {
        format!(
            "{} of {at_least}{} {lines_word} shown (the first in path order, from {} of \
             {at_least}{} {files_word}) for {what}; searched {searched}{skipped}.\nNarrow with \
             `path` or `include`, or make the pattern more specific.",
            thousands(shown),
            thousands(outcome.matches),
            thousands(shown_files),
            thousands(outcome.files_matched),
        )
    } else {
        format!(
            "{} {lines_word} in {} {files_word} for {what}; searched {searched}{skipped}.",
            thousands(outcome.matches),
            thousands(outcome.files_matched),
        )
    };
    if shortened {
        header.push_str(&format!(
            "\nLines over {MAX_LINE_CHARS} characters are shortened around the match (cuts \
             marked …)."
        ));
    }
    ToolResult::new(
        vec![Part::text(format!("{header}\n\n{body}"))],
        Display::Markdown {
            markdown: format!("{header}\n\n{}", fenced("", &body)),
        },
    )
}
