//! Text files as the editing tools see them: a body between an optional
//! byte-order mark and the bytes on disk, its dominant line ending, and
//! help for the model when what it quoted is not there.

const BOM: &str = "\u{feff}";

/// A decoded text file.
pub(crate) struct Text {
    /// The file started with a UTF-8 byte-order mark (kept on write).
    pub bom: bool,
    /// Most lines end with CRLF (new lines get CRLF too).
    pub crlf: bool,
    /// The content without the byte-order mark, line endings as on disk.
    pub body: String,
}

impl Text {
    /// Decodes a file's bytes; `None` for binary or non-UTF-8 content,
    /// which the text tools leave alone.
    pub fn decode(bytes: &[u8]) -> Option<Text> {
        if bytes[..bytes.len().min(8192)].contains(&0) {
            return None;
        }
        let text = std::str::from_utf8(bytes).ok()?;
        let (bom, body) = match text.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let crlf_count = memchr::memmem::find_iter(body.as_bytes(), b"\r\n").count();
        let lf_only = memchr::memchr_iter(b'\n', body.as_bytes()).count() - crlf_count;
        Some(Text {
            bom,
            crlf: crlf_count > lf_only,
            body: body.to_string(),
        })
    }

    /// The line ending new lines get.
    pub fn eol(&self) -> &'static str {
        if self.crlf { "\r\n" } else { "\n" }
    }

    /// The bytes to write for `body`, with the byte-order mark if the file
    /// had one.
    pub fn encode(&self, body: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(body.len() + 3);
        if self.bom {
            out.extend_from_slice(BOM.as_bytes());
        }
        out.extend_from_slice(body.as_bytes());
        out
    }

    /// `s` with its line endings made the file's.
    pub fn with_eol(&self, s: &str) -> String {
        let lf = s.replace("\r\n", "\n");
        if self.crlf {
            lf.replace('\n', "\r\n")
        } else {
            lf
        }
    }
}

/// Why a file cannot be edited as text, for the model.
pub(crate) fn not_text(display: &str) -> String {
    format!(
        "{display} is a binary or non-UTF-8 file; the text editing tools do not change it (use write_file to replace it entirely)"
    )
}

/// Lines as people count them: a final line without a newline counts.
pub(crate) fn line_count(text: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    if text.is_empty() || text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

/// Lines numbered as `read_file` numbers them, so the model can cite them.
pub(crate) fn numbered<'a>(first: usize, lines: impl IntoIterator<Item = &'a str>) -> String {
    lines
        .into_iter()
        .enumerate()
        .map(|(i, line)| format!("{:>6}\t{line}", first + i))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The 1-based line each byte offset of `offsets` (ascending) falls on.
pub(crate) fn line_numbers(body: &str, offsets: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let mut line = 1;
    let mut scanned = 0;
    offsets
        .into_iter()
        .map(|offset| {
            line += body[scanned..offset].matches('\n').count();
            scanned = offset;
            line
        })
        .collect()
}

/// Where the file comes closest to `wanted` (text the model expected to
/// find and did not): lines that match but for whitespace, else the
/// region around the line most like `wanted`'s first line. `None` when
/// nothing resembles it.
pub(crate) fn closest_lines(body: &str, wanted: &[&str]) -> Option<String> {
    let lines: Vec<&str> = body.lines().collect();
    let (skip, first) = wanted
        .iter()
        .enumerate()
        .map(|(i, line)| (i, line.trim()))
        .find(|(_, line)| !line.is_empty())?;
    let shown = wanted.len().clamp(1, 12);

    // The same lines but for indentation or trailing spaces: the most
    // common miss, and the model needs to hear that it is only whitespace.
    if wanted.len() <= lines.len() {
        for start in 0..=lines.len() - wanted.len() {
            if lines[start..start + wanted.len()]
                .iter()
                .zip(wanted)
                .all(|(have, want)| have.trim() == want.trim())
            {
                let end = (start + shown).min(lines.len());
                return Some(format!(
                    "lines {}-{} match except for whitespace (indentation or trailing spaces); copy them exactly:\n{}",
                    start + 1,
                    start + wanted.len(),
                    numbered(start + 1, lines[start..end].iter().copied())
                ));
            }
        }
    }

    let best = lines
        .iter()
        .enumerate()
        .filter_map(|(i, line)| {
            let line = line.trim();
            let (short, long) = if line.len() < first.len() {
                (line.len(), first.len())
            } else {
                (first.len(), line.len())
            };
            // Lines of very different length cannot be close; skip the cost.
            (short * 3 >= long).then(|| (i, strsim::normalized_levenshtein(line, first)))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        .filter(|(_, score)| *score >= 0.5)?;
    let start = best.0.saturating_sub(skip);
    let end = (start + shown).min(lines.len());
    Some(format!(
        "the closest lines are {}-{}:\n{}",
        start + 1,
        end,
        numbered(start + 1, lines[start..end].iter().copied())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_finds_bom_and_dominant_line_ending() {
        let text = Text::decode("\u{feff}a\r\nb\r\nc\n".as_bytes()).unwrap();
        assert!(text.bom && text.crlf);
        assert_eq!(text.body, "a\r\nb\r\nc\n");
        assert_eq!(text.with_eol("x\ny\r\n"), "x\r\ny\r\n");
        assert_eq!(text.encode("z"), "\u{feff}z".as_bytes());
        assert!(Text::decode(b"\x00\x01").is_none());
        assert!(Text::decode(&[0xff, 0xfe, b'a']).is_none());
        assert!(!Text::decode(b"a\nb").unwrap().crlf);
    }

    #[test]
    fn counting_lines_and_offsets() {
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\nb\n"), 2);
        assert_eq!(line_numbers("a\nb\nc\nb", [2, 6]), [2, 4]);
    }

    #[test]
    fn closest_lines_prefer_whitespace_only_misses() {
        let body = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
        let hint = closest_lines(body, &["let x = 1;", "println!(\"{x}\");"]).unwrap();
        assert!(
            hint.starts_with("lines 2-3 match except for whitespace"),
            "{hint}"
        );
        let hint = closest_lines(body, &["    let x = 2;"]).unwrap();
        assert!(
            hint.starts_with("the closest lines are 2-2:\n     2\t    let x = 1;"),
            "{hint}"
        );
        assert!(closest_lines(body, &["zzzzzzzzzzzzzzzzzzzzzzzzzzz"]).is_none());
    }
}
