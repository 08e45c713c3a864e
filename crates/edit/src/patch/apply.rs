//! Applying parsed hunks to file contents: finding where each hunk goes,
//! leniently, and refusing the whole patch when any hunk has no place.

use super::parse::Hunk;
use crate::text::{Text, closest_lines};

/// One line of a file with the line ending it had, so untouched lines keep
/// theirs even in a file of mixed endings.
struct Line {
    text: String,
    eol: &'static str,
}

/// How strictly a hunk's lines must equal the file's, tried in order (as
/// codex's `seek_sequence`): exactly, then ignoring trailing whitespace,
/// then surrounding whitespace, then also typographic punctuation that
/// models like to "fix".
const PASSES: [fn(&str, &str) -> bool; 4] = [
    |a, b| a == b,
    |a, b| a.trim_end() == b.trim_end(),
    |a, b| a.trim() == b.trim(),
    |a, b| normalized(a) == normalized(b),
];

fn normalized(s: &str) -> String {
    s.trim()
        .chars()
        .map(|c| match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

/// Where `pattern` occurs in `lines` at or after `from`: with `eof`, at the
/// very end if it is there; with a `hint`, the occurrence nearest it; else
/// the first. Each strictness pass is tried in turn.
fn seek(
    lines: &[Line],
    pattern: &[String],
    from: usize,
    eof: bool,
    hint: Option<usize>,
) -> Option<usize> {
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    if from > last {
        return None;
    }
    for pass in PASSES {
        let at = |i: usize| {
            lines[i..i + pattern.len()]
                .iter()
                .zip(pattern)
                .all(|(line, want)| pass(&line.text, want))
        };
        if eof && at(last) {
            return Some(last);
        }
        let found = match hint {
            Some(hint) => (from..=last)
                .filter(|&i| at(i))
                .min_by_key(|&i| i.abs_diff(hint)),
            None => (from..=last).find(|&i| at(i)),
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Applies `hunks` to `text`; the new body, or one message per hunk that
/// found no place.
pub(crate) fn apply_hunks(
    text: &Text,
    hunks: &[Hunk],
    display: &str,
) -> Result<String, Vec<String>> {
    let eol = text.eol();
    let body = &text.body;
    let mut lines: Vec<Line> = Vec::new();
    let mut rest = body.as_str();
    while !rest.is_empty() {
        let (line, next, ending) = match rest.find('\n') {
            Some(at) if rest[..at].ends_with('\r') => (&rest[..at - 1], &rest[at + 1..], "\r\n"),
            Some(at) => (&rest[..at], &rest[at + 1..], "\n"),
            None => (rest, "", eol),
        };
        lines.push(Line {
            text: line.to_string(),
            eol: ending,
        });
        rest = next;
    }
    // Lines added to an empty file end with a newline, as a diff adding
    // them says (unless it says `\ No newline at end of file`).
    let mut final_newline = body.is_empty() || body.ends_with('\n');

    let mut replacements: Vec<(usize, usize, &[String])> = Vec::new();
    let mut failures = Vec::new();
    let mut from = 0;
    for (number, hunk) in hunks.iter().enumerate() {
        match place(&lines, hunk, from) {
            Ok((at, old_len, new)) => {
                replacements.push((at, old_len, new));
                from = at + old_len;
            }
            Err(why) => failures.push(failure(
                display,
                number + 1,
                hunks.len(),
                hunk,
                why,
                body,
                from,
            )),
        }
    }
    if !failures.is_empty() {
        return Err(failures);
    }
    for hunk in hunks {
        if hunk.new_no_newline {
            final_newline = false;
        } else if hunk.old_no_newline {
            final_newline = true;
        }
    }
    for (at, old_len, new) in replacements.into_iter().rev() {
        let new_lines = new.iter().map(|text| Line {
            text: text.clone(),
            eol,
        });
        lines.splice(at..at + old_len, new_lines);
    }
    let mut out = String::with_capacity(body.len() + 64);
    let count = lines.len();
    for (i, line) in lines.iter().enumerate() {
        out.push_str(&line.text);
        if i + 1 < count || final_newline {
            out.push_str(line.eol);
        }
    }
    Ok(out)
}

/// Why a hunk found no place.
enum Miss {
    Anchor(String),
    Lines,
}

/// Finds where `hunk` goes at or after `from`: the index, how many lines
/// it replaces, and the lines it puts there.
fn place<'h>(
    lines: &[Line],
    hunk: &'h Hunk,
    from: usize,
) -> Result<(usize, usize, &'h [String]), Miss> {
    let mut from = from;
    let mut anchored = None;
    for anchor in &hunk.anchors {
        let at = seek(lines, std::slice::from_ref(anchor), from, false, None)
            .ok_or_else(|| Miss::Anchor(anchor.clone()))?;
        // The hunk may repeat its anchor line as context: look from it.
        from = at;
        anchored = Some(at);
    }
    if hunk.old.is_empty() {
        // Pure insertion: after the anchor, at the unified diff's line, or
        // at the end of the file.
        let at = match (anchored, hunk.hint) {
            (Some(at), _) => at + 1,
            (None, Some(hint)) => hint.clamp(from, lines.len()),
            (None, None) => lines.len(),
        };
        return Ok((at, 0, &hunk.new));
    }
    let (mut old, mut new) = (&hunk.old[..], &hunk.new[..]);
    loop {
        if let Some(at) = seek(lines, old, from, hunk.eof, hunk.hint) {
            return Ok((at, old.len(), new));
        }
        // A blank line the model left after the hunk is not real context.
        match (old.split_last(), new.split_last()) {
            (Some((o, old_rest)), Some((n, new_rest)))
                if o.is_empty() && n.is_empty() && !old_rest.is_empty() =>
            {
                old = old_rest;
                new = new_rest;
            }
            _ => return Err(Miss::Lines),
        }
    }
}

/// The message for a hunk that found no place: which file and hunk, the
/// lines it looked for, and where the file comes closest.
fn failure(
    display: &str,
    number: usize,
    of: usize,
    hunk: &Hunk,
    why: Miss,
    body: &str,
    from: usize,
) -> String {
    let which = format!(
        "{display}: hunk {number} of {of} (patch line {})",
        hunk.line
    );
    let after = if from > 0 {
        format!(" after line {from}")
    } else {
        String::new()
    };
    match why {
        Miss::Anchor(anchor) => format!("{which}: the `@@ {anchor}` line was not found{after}"),
        Miss::Lines => {
            let quoted: Vec<String> = hunk.old.iter().map(|l| format!("  |{l}")).collect();
            let wanted: Vec<&str> = hunk.old.iter().map(String::as_str).collect();
            let hint = closest_lines(body, &wanted)
                .map(|hint| format!("\n{hint}"))
                .unwrap_or_default();
            format!(
                "{which}: these lines were not found{after}:\n{}{hint}",
                quoted.join("\n")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunk(old: &[&str], new: &[&str]) -> Hunk {
        Hunk {
            line: 1,
            old: old.iter().map(|s| s.to_string()).collect(),
            new: new.iter().map(|s| s.to_string()).collect(),
            ..Hunk::default()
        }
    }

    fn apply(body: &str, hunks: &[Hunk]) -> Result<String, Vec<String>> {
        apply_hunks(&Text::decode(body.as_bytes()).unwrap(), hunks, "f")
    }

    #[test]
    fn hunks_apply_in_order_with_whitespace_tolerance() {
        // An exact match anywhere wins over a loose one nearer.
        let out = apply("a\n  b  \nc\nb\n", &[hunk(&["b"], &["B"])]).unwrap();
        assert_eq!(out, "a\n  b  \nc\nB\n");
        let out = apply(
            "a\n  b  \nc\nd\n",
            &[hunk(&["b"], &["B"]), hunk(&["d"], &["D"])],
        )
        .unwrap();
        assert_eq!(out, "a\nB\nc\nD\n");
        let typographic = apply(
            "say \"hi\" - ok\n",
            &[hunk(&["say \u{201C}hi\u{201D} \u{2013} ok"], &["x"])],
        )
        .unwrap();
        assert_eq!(typographic, "x\n");
    }

    #[test]
    fn line_endings_final_newline_and_eof() {
        let out = apply("a\r\nb\r\nc", &[hunk(&["b"], &["B", "B2"])]).unwrap();
        assert_eq!(out, "a\r\nB\r\nB2\r\nc");
        let mut at_end = hunk(&["x"], &["y"]);
        at_end.eof = true;
        assert_eq!(apply("x\nx\n", &[at_end]).unwrap(), "x\ny\n");
        let mut drop_newline = hunk(&["x"], &["x"]);
        drop_newline.new_no_newline = true;
        assert_eq!(apply("x\n", &[drop_newline]).unwrap(), "x");
    }

    #[test]
    fn anchors_and_insertions() {
        let mut h = hunk(&[], &["  inserted"]);
        h.anchors = vec!["fn b() {".into()];
        let out = apply("fn a() {\n}\nfn b() {\n}\n", &[h]).unwrap();
        assert_eq!(out, "fn a() {\n}\nfn b() {\n  inserted\n}\n");
        let mut missing = hunk(&["x"], &["y"]);
        missing.anchors = vec!["fn zzz()".into()];
        let err = apply("x\n", &[missing]).unwrap_err();
        assert_eq!(
            err,
            ["f: hunk 1 of 1 (patch line 1): the `@@ fn zzz()` line was not found"]
        );
    }

    #[test]
    fn trailing_blank_context_is_forgiven_and_misses_quote_the_lines() {
        assert_eq!(
            apply("a\nb\n", &[hunk(&["a", ""], &["A", ""])]).unwrap(),
            "A\nb\n"
        );
        let err = apply(
            "alpha\nbeta\n",
            &[hunk(&["alpha"], &["A"]), hunk(&["gamma"], &["G"])],
        )
        .unwrap_err();
        assert_eq!(err.len(), 1);
        assert!(
            err[0].starts_with(
                "f: hunk 2 of 2 (patch line 1): these lines were not found after line 1:\n  |gamma"
            ),
            "{}",
            err[0]
        );
    }
}
