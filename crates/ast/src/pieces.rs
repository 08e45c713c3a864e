//! Parsing only some top-level pieces of a file, for a warm search: the
//! run's cache keeps every parsed file's outline (its top-level pieces)
//! long after the tree is evicted, and a match of most patterns lies
//! inside one piece holding the pattern's literal text. Parsing those
//! pieces alone, as tree-sitter's included ranges, costs a fraction of the
//! whole file (a third of the bytes for `$X.expect($Y)` over a
//! dependency tree's Rust sources).
//!
//! A piece parsed alone is kept only if it comes out as the very piece
//! the whole parse had (same bounds, kind and node count) and without
//! errors; anything else (a PHP function without its `<?php`, an
//! expression a neighbour continued) is parsed whole instead.

use std::cell::RefCell;

use ast_grep_core::AstGrep;
use ast_grep_core::tree_sitter::{LanguageExt, StrDoc};
use ast_grep_language::SupportLang;
use tree_sitter::{Parser, Point, Range};

use crate::cache::Piece;
use crate::pattern::AstRoot;

thread_local! {
    /// One parser per search thread, for the last language it parsed
    /// (ast-grep keeps its own for whole parses, without included ranges).
    static PARSER: RefCell<Option<(SupportLang, Parser)>> = const { RefCell::new(None) };
}

/// The tree of `text` holding only `pieces` (in file order, from the
/// file's outline), or `text` back when the pieces do not parse alone to
/// the same pieces.
pub fn parse(text: String, lang: SupportLang, pieces: &[Piece]) -> Result<AstRoot, String> {
    // No included ranges means the whole file to tree-sitter; bounds off
    // the text's characters mean the file changed since its outline was
    // taken (the same size and time, written again within the mtime's
    // granularity).
    let fits = |at: u32| text.is_char_boundary(at as usize);
    if pieces.is_empty()
        || !pieces
            .iter()
            .all(|piece| fits(piece.start) && fits(piece.end))
    {
        return Err(text);
    }
    let ranges = ranges(&text, pieces);
    let tree = PARSER.with_borrow_mut(|slot| {
        if slot.as_ref().is_none_or(|(held, _)| *held != lang) {
            let mut parser = Parser::new();
            parser.set_language(&lang.get_ts_language()).ok()?;
            *slot = Some((lang, parser));
        }
        let (_, parser) = slot.as_mut()?;
        parser.reset();
        parser.set_included_ranges(&ranges).ok()?;
        let tree = parser.parse(&text, None);
        // Back to whole files, whatever happened.
        let _ = parser.set_included_ranges(&[]);
        tree
    });
    let Some(tree) = tree else {
        return Err(text);
    };
    let root = tree.root_node();
    let mut cursor = root.walk();
    let same = !root.has_error()
        && root.child_count() as usize == pieces.len()
        && root.children(&mut cursor).zip(pieces).all(|(node, piece)| {
            node.start_byte() == piece.start as usize
                && node.end_byte() == piece.end as usize
                && node.kind_id() == piece.kind
                && node.descendant_count() == piece.nodes as usize
        });
    drop(cursor);
    if !same {
        return Err(text);
    }
    Ok(AstGrep::doc(StrDoc {
        src: text,
        lang,
        tree,
    }))
}

/// Tree-sitter's ranges for `pieces`, with the rows and byte columns it
/// also wants, counted in one pass over the text.
fn ranges(text: &str, pieces: &[Piece]) -> Vec<Range> {
    let bytes = text.as_bytes();
    // The position reached so far: byte offset, row, start of that row.
    let (mut offset, mut row, mut row_start) = (0, 0, 0);
    let mut point = |at: usize| {
        for newline in memchr::memchr_iter(b'\n', &bytes[offset..at]) {
            row += 1;
            row_start = offset + newline + 1;
        }
        offset = at;
        Point::new(row, at - row_start)
    };
    pieces
        .iter()
        .map(|piece| {
            let (start, end) = (piece.start as usize, piece.end as usize);
            Range {
                start_byte: start,
                start_point: point(start),
                end_byte: end,
                end_point: point(end),
            }
        })
        .collect()
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use std::sync::Arc;

    use ast_grep_core::replacer::TemplateFix;
    use ast_grep_language::SupportLang;
    use gantry_core::{CancellationToken, Workspace};

    use crate::cache::ParseCache;
    use crate::pattern::{AstRoot, Query};
    use crate::search::{self, Outcome};

    /// A cache that holds every file's outline and none of their trees:
    /// a tree costs at least 4 KiB here, more than a quarter of the cap.
    const OUTLINES_ONLY: usize = 16 << 10;

    /// What a search found, comparably: per match its file, bytes,
    /// position, captures and rewrite.
    fn found(outcome: &Outcome) -> Vec<String> {
        outcome
            .files
            .iter()
            .flat_map(|file| {
                file.matches.iter().map(|m| {
                    format!(
                        "{}@{:?} {}:{} {:?} {:?}",
                        file.path.display(),
                        m.found.range,
                        m.line,
                        m.column,
                        m.found.captures,
                        m.found.replacement
                    )
                })
            })
            .collect()
    }

    /// Searches `files` for each of `patterns` twice, each file parsed
    /// whole and each parsed from its outline alone, asserts both find
    /// the same, and returns how many files were parsed in pieces in all.
    fn same_either_way(
        files: &[(String, String)],
        lang: SupportLang,
        patterns: &[(&str, Option<&str>)],
    ) -> usize {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let workspace = Workspace::new(dir.path()).unwrap();
        let mut candidates = search::walk(&workspace, workspace.root()).unwrap();
        candidates.retain(|candidate| candidate.lang == lang);
        assert_eq!(candidates.len(), files.len());
        let outlined = ParseCache::new(OUTLINES_ONLY);
        for candidate in &candidates {
            let text = std::fs::read_to_string(&candidate.path).unwrap();
            let doc = AstRoot::str(&text, lang);
            assert!(
                !doc.root().get_inner_node().has_error(),
                "{} has a syntax error",
                candidate.path.display()
            );
            outlined.insert(&candidate.path, candidate.stamp, Arc::new(doc));
        }
        let stats = outlined.stats();
        assert_eq!((stats.files, stats.outlined), (0, files.len()), "{stats:?}");

        let mut in_pieces = 0;
        for (pattern, rewrite) in patterns {
            let query = Query::compile(pattern, lang).unwrap();
            let fix = rewrite.map(|rewrite| TemplateFix::try_new(rewrite, &lang).unwrap());
            let search = |cache: &ParseCache| {
                let cancel = CancellationToken::new();
                search::run(
                    &workspace,
                    &candidates,
                    &query,
                    cache,
                    fix.as_ref(),
                    None,
                    &cancel,
                )
            };
            let whole = search(&ParseCache::new(0));
            let pieces = search(&outlined);
            assert!(whole.total > 0, "{pattern} matches nothing: a useless case");
            assert_eq!(found(&pieces), found(&whole), "{pattern}");
            assert_eq!(whole.in_pieces, 0);
            in_pieces += pieces.in_pieces;
        }
        in_pieces
    }

    /// [`same_either_way`] for one file, whose pieces must be used.
    fn one_file(name: &str, text: &str, lang: SupportLang, patterns: &[(&str, Option<&str>)]) {
        let files = [(name.to_string(), text.to_string())];
        assert!(
            same_either_way(&files, lang, patterns) > 0,
            "no file was parsed in pieces"
        );
    }

    #[cfg(feature = "rust")]
    #[test]
    fn rust_pieces_find_what_whole_files_find() {
        // This crate's own sources: real code, with attributes, doc
        // comments, macros, impls and nested modules.
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let files: Vec<(String, String)> = std::fs::read_dir(src)
            .unwrap()
            .map(|entry| {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&path).unwrap())
            })
            .collect();
        let in_pieces = same_either_way(
            &files,
            SupportLang::Rust,
            &[
                ("$X.unwrap()", Some("$X.expect(\"checked\")")),
                ("Some($V)", None),
                ("fn $F($$$P) -> $R { $$$B }", None),
                ("impl $T { $$$ }", None),
                ("use $P;", None),
                ("let $A = $B;", Some("let $A = ($B);")),
                ("#[derive($$$D)]", None),
                ("$X.lock()", None),
                // A run of two top-level siblings: each piece holds only
                // some of its literal text, so the files are parsed whole.
                ("#[cfg(test)] mod tests { $$$ }", None),
            ],
        );
        assert!(in_pieces > files.len(), "parsed in pieces: {in_pieces}");
    }

    #[cfg(feature = "python")]
    #[test]
    fn python_pieces_find_what_whole_files_find() {
        let source = "import os\n\n\n@decorate(1)\ndef f(a, b=2):\n    print(a)\n    return g(a)\n\n\nclass K(Base):\n    x = g(3)\n\n    def m(self):\n        self.y = g(4)\n        print(self.y)\n\n\nif __name__ == \"__main__\":\n    print(f(1))\n\nvalue = [g(n) for n in range(3)]\n";
        one_file(
            "m.py",
            source,
            SupportLang::Python,
            &[
                ("g($A)", Some("h($A)")),
                ("print($$$A)", None),
                ("self.$A = $B", None),
            ],
        );
    }

    #[cfg(feature = "javascript")]
    #[test]
    fn javascript_pieces_find_what_whole_files_find() {
        // Statements without semicolons, where a neighbour's first token
        // could continue the last one's expression.
        let source = "const a = b\n(c)\nfunction f() { return g(1) }\nlet x = y\n[1, 2].forEach(h)\nclass K { m() { return g(2) } }\ng(3)\n`t${g(4)}`\n";
        one_file(
            "m.js",
            source,
            SupportLang::JavaScript,
            &[("g($A)", None), ("$X.forEach($F)", None), ("b($C)", None)],
        );
    }

    #[cfg(feature = "go")]
    #[test]
    fn go_pieces_find_what_whole_files_find() {
        let source = "package main\n\nimport \"fmt\"\n\n// T is a type.\ntype T struct{ n int }\n\nfunc (t *T) Get() int { return g(t.n) }\n\nfunc main() {\n\tfmt.Println(g(1))\n}\n\nvar v = g(2)\n";
        one_file(
            "main.go",
            source,
            SupportLang::Go,
            &[("g($A)", Some("h($A)")), ("fmt.Println($$$A)", None)],
        );
    }

    #[cfg(feature = "php")]
    #[test]
    fn php_pieces_find_what_whole_files_find() {
        let source = "<?php\nfunction f($x) {\n  g($x);\n}\n\nclass K {\n  function m() { return g(2); }\n}\n";
        one_file("m.php", source, SupportLang::Php, &[("g($A)", None)]);
    }

    #[cfg(feature = "rust")]
    #[test]
    fn a_piece_that_does_not_parse_back_to_itself_is_refused() {
        use super::{Piece, parse};
        let text = "fn a() { g(1); }\n\nfn b() { g(2); }\n";
        let whole = AstRoot::str(text, SupportLang::Rust);
        let outline = crate::cache::outline(&whole).unwrap();
        assert_eq!(outline.len(), 2);
        let parsed = parse(text.to_string(), SupportLang::Rust, &outline[1..]).unwrap();
        assert_eq!(parsed.root().children().count(), 1);

        let refused =
            |pieces: &[Piece]| parse(text.to_string(), SupportLang::Rust, pieces).is_err();
        // Cut in half: a syntax error.
        let half = Piece {
            end: outline[1].start + 8,
            ..outline[1]
        };
        assert!(refused(&[half]));
        // Another node count or kind than the whole parse had: not the
        // same piece.
        assert!(refused(&[Piece {
            nodes: outline[1].nodes + 1,
            ..outline[1]
        }]));
        assert!(refused(&[Piece {
            kind: outline[1].kind + 1,
            ..outline[1]
        }]));
        // Two pieces taken as one.
        let both = Piece {
            end: outline[1].end,
            ..outline[0]
        };
        assert!(refused(&[both]));
        // None: tree-sitter would parse the whole file.
        assert!(refused(&[]));
        // An outline of another text: past its end, or inside a character.
        assert!(refused(&[Piece {
            end: text.len() as u32 + 1,
            ..outline[1]
        }]));
        let accented = "fn é() {}\n";
        let inside = Piece {
            start: 0,
            end: 4,
            kind: outline[0].kind,
            nodes: 1,
        };
        assert!(parse(accented.to_string(), SupportLang::Rust, &[inside]).is_err());
    }
}
