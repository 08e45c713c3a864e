//! Results worded for a model: workspace-relative paths, `path:line` with
//! the source line, grouped by file, caps stated when hit.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use lsp_types::{
    DocumentSymbol, GotoDefinitionResponse, HoverContents, Location, MarkedString, SymbolKind, Url,
};

use gantry_core::text::counted;

use crate::convert::{LineIndex, uri_to_path};

/// Caps of SPEC §6.
pub const REFERENCES_CAP: usize = 50;
/// Workspace symbols shown at most.
pub const WORKSPACE_SYMBOLS_CAP: usize = 100;
/// Document symbols shown at most.
pub const DOCUMENT_SYMBOLS_CAP: usize = 200;
/// Longest source line shown.
const LINE_CHARS: usize = 160;

/// Reads source lines of the files a result names, each file once.
pub struct Sources<'a> {
    cache: HashMap<PathBuf, String>,
    display: &'a (dyn Fn(&Path) -> String + Sync),
}

impl<'a> Sources<'a> {
    /// A reader that shows paths with `display`.
    pub fn new(display: &'a (dyn Fn(&Path) -> String + Sync)) -> Self {
        Sources {
            cache: HashMap::new(),
            display,
        }
    }

    /// The trimmed text of 0-based `line` of `path`, cut to a readable
    /// length.
    pub fn line(&mut self, path: &Path, line: u32) -> String {
        let text = self.cache.entry(path.to_path_buf()).or_insert_with(|| {
            gantry_core::read_regular(path)
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_default()
        });
        let source = LineIndex::new(text)
            .line(line as usize)
            .unwrap_or("")
            .trim()
            .to_string();
        if source.chars().count() > LINE_CHARS {
            let cut: String = source.chars().take(LINE_CHARS).collect();
            format!("{cut}…")
        } else {
            source
        }
    }

    /// A path as the model sees it.
    pub fn show(&self, path: &Path) -> String {
        (self.display)(path)
    }
}

/// A location reduced to what is shown and counted: a file, a 0-based line
/// and the 0-based character it starts at (two uses on one line are two).
pub type Spot = (PathBuf, u32, u32);

/// The spots of a definition-like answer.
pub fn definition_spots(response: Option<GotoDefinitionResponse>) -> Vec<Spot> {
    let mut spots = Vec::new();
    let mut push = |uri: &Url, at: lsp_types::Position| {
        if let Some(path) = uri_to_path(uri) {
            spots.push((path, at.line, at.character));
        }
    };
    match response {
        None => {}
        Some(GotoDefinitionResponse::Scalar(location)) => push(&location.uri, location.range.start),
        Some(GotoDefinitionResponse::Array(locations)) => {
            for location in locations {
                push(&location.uri, location.range.start);
            }
        }
        Some(GotoDefinitionResponse::Link(links)) => {
            for link in links {
                push(&link.target_uri, link.target_selection_range.start);
            }
        }
    }
    spots
}

/// The spots of a references answer.
pub fn location_spots(locations: Vec<Location>) -> Vec<Spot> {
    locations
        .into_iter()
        .filter_map(|l| {
            Some((
                uri_to_path(&l.uri)?,
                l.range.start.line,
                l.range.start.character,
            ))
        })
        .collect()
}

/// Spots grouped by file, each line with its source and, when it holds
/// several, how many; the count says what it counts ("5 references on 4
/// lines in 2 files") and `cap` is stated when hit. A single spot is one
/// `path:line: source` line. `noun` names one spot ("reference").
pub fn spots(
    sources: &mut Sources,
    title: &str,
    noun: &str,
    mut spots: Vec<Spot>,
    cap: usize,
) -> String {
    spots.sort();
    spots.dedup();
    let total = spots.len();
    if total == 1 {
        let (path, line, _) = &spots[0];
        let source = sources.line(path, *line);
        return format!("{title}:\n{}:{}: {source}", sources.show(path), line + 1);
    }
    let shown: Vec<Spot> = spots.into_iter().take(cap).collect();
    // File → line → how many spots on it.
    let mut by_file: BTreeMap<String, (PathBuf, BTreeMap<u32, usize>)> = BTreeMap::new();
    for (path, line, _) in &shown {
        *by_file
            .entry(sources.show(path))
            .or_insert_with(|| (path.clone(), BTreeMap::new()))
            .1
            .entry(*line)
            .or_default() += 1;
    }
    let files = counted(by_file.len() as u64, "file", "files");
    let lines = counted(
        by_file.values().map(|(_, l)| l.len() as u64).sum(),
        "line",
        "lines",
    );
    let count = if total > cap {
        format!("{cap} of {total} {noun}s shown, on {lines} in {files}; the cap is {cap}")
    } else {
        format!(
            "{} on {lines} in {files}",
            counted(total as u64, noun, &format!("{noun}s"))
        )
    };
    let mut out = format!("{title} ({count}):\n");
    for (shown_path, (path, lines)) in by_file {
        out.push_str(&format!("{shown_path}\n"));
        for (line, many) in lines {
            let source = sources.line(&path, line);
            let several = if many > 1 {
                format!("  ({many} on this line)")
            } else {
                String::new()
            };
            out.push_str(&format!("  {}: {source}{several}\n", line + 1));
        }
    }
    out.trim_end().to_string()
}

/// Hover contents as plain Markdown text.
pub fn hover(contents: HoverContents) -> String {
    let marked = |m: MarkedString| match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(ls) => format!("```{}\n{}\n```", ls.language, ls.value),
    };
    match contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(items) => items
            .into_iter()
            .map(marked)
            .collect::<Vec<_>>()
            .join("\n\n"),
        HoverContents::Markup(markup) => markup.value,
    }
    .trim()
    .to_string()
}

/// A symbol kind as a lowercase word (`function`, `class`).
pub fn kind(kind: SymbolKind) -> String {
    let name = format!("{kind:?}");
    let mut words = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            words.push(' ');
        }
        words.extend(c.to_lowercase());
    }
    words
}

/// A document's symbol tree, indented, in source order at every level
/// (tsserver lists them by name), capped at [`DOCUMENT_SYMBOLS_CAP`].
pub fn document_symbols(file: &str, symbols: &[DocumentSymbol]) -> String {
    fn count(symbols: &[DocumentSymbol]) -> usize {
        symbols
            .iter()
            .map(|s| 1 + count(s.children.as_deref().unwrap_or(&[])))
            .sum()
    }
    fn walk(symbols: &[DocumentSymbol], depth: usize, out: &mut Vec<String>) {
        let mut ordered: Vec<&DocumentSymbol> = symbols.iter().collect();
        ordered.sort_by_key(|s| {
            (
                s.selection_range.start.line,
                s.selection_range.start.character,
            )
        });
        for symbol in ordered {
            if out.len() >= DOCUMENT_SYMBOLS_CAP {
                return;
            }
            let detail = symbol
                .detail
                .as_deref()
                .filter(|d| !d.is_empty())
                .map(|d| format!(" {}", d.replace('\n', " ")))
                .unwrap_or_default();
            out.push(format!(
                "{}{}: {} {}{detail}",
                "  ".repeat(depth),
                symbol.selection_range.start.line + 1,
                kind(symbol.kind),
                symbol.name
            ));
            walk(symbol.children.as_deref().unwrap_or(&[]), depth + 1, out);
        }
    }
    let total = count(symbols);
    let mut lines = Vec::new();
    walk(symbols, 0, &mut lines);
    let header = if total > DOCUMENT_SYMBOLS_CAP {
        format!(
            "symbols of {file} ({DOCUMENT_SYMBOLS_CAP} of {total} shown; the cap is {DOCUMENT_SYMBOLS_CAP}), as line: kind name"
        )
    } else {
        format!("symbols of {file} ({total}), as line: kind name")
    };
    format!("{header}\n{}", lines.join("\n"))
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn spots_are_grouped_by_file_with_source_lines_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.py");
        let b = dir.path().join("b.py");
        std::fs::write(&a, "x = 1\nprint(x)\n").unwrap();
        std::fs::write(&b, "from a import x\n").unwrap();
        let root = dir.path().to_path_buf();
        let display = move |p: &Path| p.strip_prefix(&root).unwrap().display().to_string();
        let mut sources = Sources::new(&display);
        let text = spots(
            &mut sources,
            "references to `x`",
            "reference",
            vec![
                (b.clone(), 0, 14),
                (a.clone(), 1, 6),
                (a.clone(), 0, 0),
                (a.clone(), 0, 0),
                (a.clone(), 1, 0),
            ],
            50,
        );
        assert_eq!(
            text,
            "references to `x` (4 references on 3 lines in 2 files):\na.py\n  1: x = 1\n  2: print(x)  (2 on this line)\nb.py\n  1: from a import x"
        );
        let one = spots(
            &mut sources,
            "definition",
            "definition",
            vec![(a.clone(), 1, 6)],
            50,
        );
        assert_eq!(one, "definition:\na.py:2: print(x)");
        let capped = spots(
            &mut sources,
            "references",
            "reference",
            vec![(a.clone(), 0, 0), (a.clone(), 1, 0), (b.clone(), 0, 0)],
            2,
        );
        assert!(
            capped.contains("(2 of 3 references shown, on 2 lines in 1 file"),
            "{capped}"
        );
    }

    #[test]
    fn symbol_kinds_read_as_words() {
        assert_eq!(kind(SymbolKind::FUNCTION), "function");
        assert_eq!(kind(SymbolKind::TYPE_PARAMETER), "type parameter");
    }
}
