//! Round trips with an oracle: a unified diff of any change to any text
//! file, parsed and applied, gives the changed file byte for byte, with
//! its byte-order mark and line endings kept; the reverse diff applied to
//! that gives the original back (with the line ending of what it was
//! applied to, where that file had one).

use proptest::prelude::*;

use super::apply::apply_hunks;
use super::parse::parse;
use crate::text::Text;

/// A text file: its lines (a small alphabet, so that lines repeat and a
/// hunk's place is ambiguous), whether it ends with a newline, its line
/// ending and byte-order mark.
#[derive(Debug, Clone)]
struct File {
    lines: Vec<String>,
    final_newline: bool,
    crlf: bool,
    bom: bool,
}

impl File {
    /// The file as its lines with `\n`, as a model writes a diff of it.
    fn lf_body(&self) -> String {
        let mut body = self.lines.join("\n");
        if self.final_newline && !self.lines.is_empty() {
            body.push('\n');
        }
        body
    }

    /// The bytes on disk.
    fn bytes(&self) -> Vec<u8> {
        self.bytes_as(self.crlf, self.bom)
    }

    /// The bytes with the line ending and byte-order mark of another file.
    fn bytes_as(&self, crlf: bool, bom: bool) -> Vec<u8> {
        let mut out = Vec::new();
        if bom {
            out.extend_from_slice("\u{feff}".as_bytes());
        }
        let eol = if crlf { "\r\n" } else { "\n" };
        out.extend_from_slice(self.lf_body().replace('\n', eol).as_bytes());
        out
    }

    /// Whether the lines a patch adds get CRLF: a file with no line ending
    /// at all has none to follow, and gets `\n`.
    fn adds_crlf(&self) -> bool {
        self.crlf && self.lf_body().contains('\n')
    }

    /// `self` as a patch makes it out of `from`: its lines, with `from`'s
    /// line ending and byte-order mark.
    fn as_patched_from(&self, from: &File) -> File {
        File {
            crlf: from.adds_crlf(),
            bom: from.bom,
            ..self.clone()
        }
    }

    /// The file with `count` lines from `at` replaced by `with`.
    fn changed(&self, at: usize, count: usize, with: &[String], final_newline: bool) -> File {
        let mut lines = self.lines.clone();
        let at = at.min(lines.len());
        let end = (at + count).min(lines.len());
        lines.splice(at..end, with.iter().cloned());
        File {
            lines,
            final_newline,
            ..self.clone()
        }
    }
}

fn line() -> impl Strategy<Value = String> {
    "[ab ]{0,3}"
}

fn file() -> impl Strategy<Value = File> {
    (
        prop::collection::vec(line(), 0..12),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, final_newline, crlf, bom)| File {
            lines,
            final_newline,
            crlf,
            bom,
        })
}

/// `from` made `to` by applying the unified diff between them.
fn patched(from: &File, to: &File) -> Result<Vec<u8>, String> {
    let diff = similar::TextDiff::from_lines(from.lf_body(), to.lf_body())
        .unified_diff()
        .context_radius(3)
        .header("a/f", "b/f")
        .to_string();
    if diff.is_empty() {
        return Ok(from.bytes());
    }
    let patch = parse(&diff).map_err(|e| format!("{e}\n{diff}"))?;
    let [file] = &patch.files[..] else {
        return Err(format!("not one file:\n{diff}"));
    };
    let text = Text::decode(&from.bytes()).expect("text");
    let body = apply_hunks(&text, &file.hunks, "f").map_err(|e| format!("{e:?}\n{diff}"))?;
    Ok(text.encode(&body))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn a_diff_applied_gives_the_changed_file_and_its_reverse_the_original(
        original in file(),
        at in 0usize..12,
        count in 0usize..4,
        with in prop::collection::vec(line(), 0..4),
        final_newline in any::<bool>(),
    ) {
        // A file without lines has no last line to end.
        let original = File { final_newline: original.final_newline && !original.lines.is_empty(), ..original };
        let changed = original.changed(at, count, &with, final_newline);
        let changed = File { final_newline: changed.final_newline && !changed.lines.is_empty(), ..changed };
        let changed = changed.as_patched_from(&original);
        prop_assert_eq!(patched(&original, &changed).map_err(TestCaseError::fail)?, changed.bytes());
        let back = original.as_patched_from(&changed);
        prop_assert_eq!(patched(&changed, &original).map_err(TestCaseError::fail)?, back.bytes());
    }
}
