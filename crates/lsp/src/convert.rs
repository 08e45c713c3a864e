//! Every conversion between Gantry's view of a file (paths, 1-based lines,
//! byte offsets in UTF-8 text) and the server's (URIs, 0-based lines,
//! columns in the negotiated `positionEncoding`). One module, so that a
//! column is never computed in two ways.

use std::path::{Path, PathBuf};

use lsp_types::{Position, PositionEncodingKind, Range, Url};

/// How the server counts columns: UTF-8 bytes where it offered them, else
/// UTF-16 code units (the protocol's default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// Bytes of UTF-8.
    Utf8,
    /// UTF-16 code units.
    #[default]
    Utf16,
}

impl Encoding {
    /// The encoding the server chose in its `initialize` answer; absent
    /// means UTF-16.
    pub fn negotiated(kind: Option<&PositionEncodingKind>) -> Self {
        match kind {
            Some(kind) if *kind == PositionEncodingKind::UTF8 => Encoding::Utf8,
            _ => Encoding::Utf16,
        }
    }
}

/// The file URI of an absolute path.
pub fn path_to_uri(path: &Path) -> Url {
    Url::from_file_path(path).unwrap_or_else(|()| {
        Url::parse(&format!("file://{}", path.display()))
            .unwrap_or_else(|_| Url::parse("file:///").expect("a valid URL"))
    })
}

/// The path of a `file:` URI; `None` for other schemes (virtual documents).
pub fn uri_to_path(uri: &Url) -> Option<PathBuf> {
    if uri.scheme() != "file" {
        return None;
    }
    uri.to_file_path().ok()
}

/// Text with its line starts indexed, to turn positions both ways.
pub struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    /// Indexes `text`. Lines end at `\n`; a `\r` before it belongs to the
    /// line ending.
    pub fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { text, starts }
    }

    /// How many lines the text has (a trailing newline opens no new line).
    pub fn line_count(&self) -> usize {
        if self.text.ends_with('\n') {
            self.starts.len() - 1
        } else {
            self.starts.len()
        }
    }

    /// The text of 0-based `line` without its line ending.
    pub fn line(&self, line: usize) -> Option<&'a str> {
        let start = *self.starts.get(line)?;
        let end = self
            .starts
            .get(line + 1)
            .map(|next| next - 1)
            .unwrap_or(self.text.len());
        if start > self.text.len() {
            return None;
        }
        Some(self.text[start..end.max(start)].trim_end_matches('\r'))
    }

    /// The server position of a byte offset within 0-based `line`.
    pub fn position(&self, line: usize, byte: usize, encoding: Encoding) -> Position {
        let text = self.line(line).unwrap_or("");
        let byte = floor_char_boundary(text, byte.min(text.len()));
        let character = match encoding {
            Encoding::Utf8 => byte,
            Encoding::Utf16 => text[..byte].encode_utf16().count(),
        };
        Position::new(line as u32, character as u32)
    }

    /// The byte offset in the whole text of a server position, clamped to
    /// its line (servers send positions past the end of a line to mean its
    /// end).
    pub fn offset(&self, position: Position, encoding: Encoding) -> usize {
        let line = position.line as usize;
        let Some(&start) = self.starts.get(line) else {
            return self.text.len();
        };
        let text = self.line(line).unwrap_or("");
        start + byte_in_line(text, position.character as usize, encoding)
    }

    /// The byte offset within its line of a server position.
    pub fn byte_in_line(&self, position: Position, encoding: Encoding) -> usize {
        let text = self.line(position.line as usize).unwrap_or("");
        byte_in_line(text, position.character as usize, encoding)
    }

    /// The byte range of a server range.
    pub fn range(&self, range: Range, encoding: Encoding) -> std::ops::Range<usize> {
        let start = self.offset(range.start, encoding);
        let end = self.offset(range.end, encoding).max(start);
        start..end
    }
}

fn byte_in_line(text: &str, character: usize, encoding: Encoding) -> usize {
    match encoding {
        Encoding::Utf8 => floor_char_boundary(text, character.min(text.len())),
        Encoding::Utf16 => {
            let mut units = 0;
            for (byte, ch) in text.char_indices() {
                if units >= character {
                    return byte;
                }
                units += ch.len_utf16();
            }
            text.len()
        }
    }
}

fn floor_char_boundary(text: &str, mut byte: usize) -> usize {
    while !text.is_char_boundary(byte) {
        byte -= 1;
    }
    byte
}

/// A document-symbols answer as a tree: a flat answer becomes one level,
/// each symbol's container kept in its detail.
pub fn symbol_tree(
    answer: Option<lsp_types::DocumentSymbolResponse>,
) -> Vec<lsp_types::DocumentSymbol> {
    match answer {
        Some(lsp_types::DocumentSymbolResponse::Nested(symbols)) => symbols,
        Some(lsp_types::DocumentSymbolResponse::Flat(flat)) =>
        {
            #[allow(deprecated)]
            flat.into_iter()
                .map(|s| lsp_types::DocumentSymbol {
                    name: s.name,
                    detail: s.container_name.map(|c| format!("in {c}")),
                    kind: s.kind,
                    tags: None,
                    deprecated: None,
                    range: s.location.range,
                    selection_range: s.location.range,
                    children: None,
                })
                .collect()
        }
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "plain\r\nlet s = \"日本\"; let x = 1;\nemoji 🦀 crab(x)\n";

    #[test]
    fn lines_are_indexed_without_their_endings() {
        let index = LineIndex::new(TEXT);
        assert_eq!(index.line_count(), 3);
        assert_eq!(index.line(0), Some("plain"));
        assert_eq!(index.line(2), Some("emoji 🦀 crab(x)"));
        assert_eq!(index.line(3), Some(""));
        assert_eq!(index.line(4), None);
        assert_eq!(LineIndex::new("a").line_count(), 1);
        assert_eq!(LineIndex::new("").line_count(), 1);
    }

    #[test]
    fn non_ascii_columns_follow_the_encoding_both_ways() {
        let index = LineIndex::new(TEXT);
        let line = index.line(1).unwrap();
        let x = line.find("x =").unwrap();
        // "let s = \"日本\"; let " : 2 CJK chars are 3 bytes but 1 unit each.
        assert_eq!(index.position(1, x, Encoding::Utf8).character, x as u32);
        assert_eq!(
            index.position(1, x, Encoding::Utf16).character,
            (x - 4) as u32
        );
        let crab = index.line(2).unwrap().find("crab").unwrap();
        // 🦀 is 4 bytes, 2 UTF-16 units.
        let utf16 = index.position(2, crab, Encoding::Utf16);
        assert_eq!(utf16.character, (crab - 2) as u32);
        for encoding in [Encoding::Utf8, Encoding::Utf16] {
            let position = index.position(2, crab, encoding);
            assert_eq!(index.byte_in_line(position, encoding), crab);
            let whole = index.offset(position, encoding);
            assert_eq!(&TEXT[whole..whole + 4], "crab");
        }
    }

    #[test]
    fn positions_past_a_line_or_inside_a_character_are_clamped() {
        let index = LineIndex::new(TEXT);
        let end = index.offset(Position::new(0, 99), Encoding::Utf16);
        assert_eq!(&TEXT[..end], "plain");
        // Byte 1 of the crab is not a boundary: it snaps back to its start.
        let line = index.line(2).unwrap();
        let crab = line.find('🦀').unwrap();
        assert_eq!(
            index.byte_in_line(Position::new(2, (crab + 1) as u32), Encoding::Utf8),
            crab
        );
        assert_eq!(
            index.offset(Position::new(40, 0), Encoding::Utf8),
            TEXT.len()
        );
        let range = index.range(
            Range::new(Position::new(1, 9), Position::new(1, 11)),
            Encoding::Utf16,
        );
        assert_eq!(&TEXT[range], "日本");
    }

    #[test]
    fn utf16_columns_match_the_standard_library() {
        // Oracle: str::encode_utf16 on every prefix of a mixed line.
        let line = "aé日🦀b\u{301}z";
        let index = LineIndex::new(line);
        for (byte, _) in line.char_indices() {
            let units = line[..byte].encode_utf16().count() as u32;
            let position = index.position(0, byte, Encoding::Utf16);
            assert_eq!(position.character, units);
            assert_eq!(index.byte_in_line(position, Encoding::Utf16), byte);
        }
    }

    #[test]
    fn uris_round_trip_paths_with_spaces_and_unicode() {
        let path = Path::new("/tmp/a dir/ünï.py");
        let uri = path_to_uri(path);
        assert!(uri.as_str().starts_with("file:///tmp/a%20dir/"), "{uri}");
        assert_eq!(uri_to_path(&uri).unwrap(), path);
        assert_eq!(uri_to_path(&Url::parse("untitled:x").unwrap()), None);
    }
}
