//! The declarations of a file, and which of them a change touches: the
//! changed lines of the two versions (similar's line diff), each
//! declaration reduced to its head (what users of it depend on), and a
//! cache of them per file content, so that an edit inside a function body
//! asks the server nothing.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_core::lock;
use lsp_types::request::DocumentSymbolRequest;
use lsp_types::{
    DocumentSymbol, DocumentSymbolParams, PartialResultParams, Position, TextDocumentIdentifier,
    WorkDoneProgressParams,
};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::convert::{LineIndex, path_to_uri};
use crate::paths::language_of;
use crate::server::Server;

/// How long the line diff of a file's two versions may take.
const DIFF_DEADLINE: Duration = Duration::from_millis(50);

/// A run of changed lines: `old` in the content before, `new` after (both
/// 0-based, end exclusive; an empty range is an insertion or deletion
/// point).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    pub old: Range<usize>,
    pub new: Range<usize>,
}

/// The changed line ranges between two versions of a text, a deletion
/// beside an insertion being one change. Within [`DIFF_DEADLINE`] the
/// diff is a shortest one; past it, similar settles for fewer, larger
/// hunks, never a wrong one.
pub(crate) fn hunks(old: &str, new: &str) -> Vec<Hunk> {
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, new);
    let mut out: Vec<Hunk> = Vec::new();
    for op in diff.ops() {
        let (tag, old, new) = op.as_tag_tuple();
        if tag == similar::DiffTag::Equal {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.old.end == old.start && last.new.end == new.start => {
                last.old.end = old.end;
                last.new.end = new.end;
            }
            _ => out.push(Hunk { old, new }),
        }
    }
    out
}

/// Where 0-based line `line` of the old content is in the new one: moved
/// by the hunks before it, or into the hunk that replaced it.
fn map_line(hunks: &[Hunk], line: usize) -> usize {
    let mut delta: isize = 0;
    for hunk in hunks {
        if line < hunk.old.start {
            break;
        }
        if line < hunk.old.end {
            let inside = (line - hunk.old.start).min(hunk.new.len().saturating_sub(1));
            return hunk.new.start + inside;
        }
        delta += hunk.new.len() as isize - hunk.old.len() as isize;
    }
    (line as isize + delta).max(0) as usize
}

/// A declaration of a file, reduced to what deciding whether a change
/// touches it needs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decl {
    /// Its name, for messages.
    pub name: String,
    /// First and last line (0-based, inclusive) of what users of it
    /// depend on: the signature, not the body.
    pub head: (usize, usize),
    /// Where its name is, in the server's coordinates: asked for
    /// references.
    pub at: Position,
    /// Whether it is at the top of the file (not a member).
    pub top: bool,
}

impl Decl {
    /// Whether `hunk` (old coordinates) changes its head: a changed line
    /// in it, or lines inserted between its lines.
    fn touched_by(&self, hunk: &Hunk) -> bool {
        let (start, end) = self.head;
        if hunk.old.is_empty() {
            start < hunk.old.start && hunk.old.start <= end
        } else {
            hunk.old.start <= end && hunk.old.end > start
        }
    }
}

/// The declarations of a document symbol tree, with their heads read from
/// `text`.
pub(crate) fn declarations(text: &str, symbols: &[DocumentSymbol], python: bool) -> Vec<Decl> {
    fn walk(
        index: &LineIndex,
        symbols: &[DocumentSymbol],
        python: bool,
        top: bool,
        out: &mut Vec<Decl>,
    ) {
        for symbol in symbols {
            let start = symbol.range.start.line as usize;
            let end = (symbol.range.end.line as usize).max(start);
            let head_end = head_end(index, start, end, python);
            out.push(Decl {
                name: symbol.name.clone(),
                head: (
                    start,
                    head_end.max(symbol.selection_range.end.line as usize),
                ),
                at: symbol.selection_range.start,
                top,
            });
            walk(
                index,
                symbol.children.as_deref().unwrap_or(&[]),
                python,
                false,
                out,
            );
        }
    }
    let index = LineIndex::new(text);
    let mut out = Vec::new();
    walk(&index, symbols, python, true, &mut out);
    out
}

/// The last line of a declaration's head: the line where its body opens
/// (a `{` that does not follow `=`, `:` and the like, which open a value or
/// type literal; in Python a `:` outside brackets) or where it ends (`;`);
/// the whole declaration when neither comes (a variable, a type alias of
/// an object type, a one-line interface member).
fn head_end(index: &LineIndex, start: usize, end: usize, python: bool) -> usize {
    let mut depth = 0usize;
    let mut previous = ' ';
    for line in start..=end {
        let text = index.line(line).unwrap_or("");
        let mut quote: Option<char> = None;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if let Some(q) = quote {
                if c == '\\' {
                    chars.next();
                } else if c == q {
                    quote = None;
                }
                continue;
            }
            match c {
                '"' | '\'' | '`' => quote = Some(c),
                '#' if python => break,
                '/' if chars.peek() == Some(&'/') => break,
                '(' | '[' => depth += 1,
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                '{' if python => depth += 1,
                '{' if depth == 0
                    && !matches!(previous, '=' | ':' | ',' | '(' | '|' | '&' | '<') =>
                {
                    return line;
                }
                '{' => depth += 1,
                ';' if depth == 0 && !python => return line,
                ':' if depth == 0 && python => return line,
                _ => {}
            }
            if !c.is_whitespace() {
                previous = c;
            }
        }
    }
    end
}

/// The declarations a change touches, given the hunks in old coordinates.
pub(crate) fn touched<'a>(decls: &'a [Decl], hunks: &[Hunk]) -> Vec<&'a Decl> {
    decls
        .iter()
        .filter(|d| hunks.iter().any(|h| d.touched_by(h)))
        .collect()
}

/// The declarations moved to where a change that touches none of their
/// heads put them.
pub(super) fn remap(decls: &[Decl], hunks: &[Hunk]) -> Vec<Decl> {
    decls
        .iter()
        .map(|d| {
            let mut moved = d.clone();
            moved.head = (map_line(hunks, d.head.0), map_line(hunks, d.head.1));
            moved.at.line = map_line(hunks, d.at.line as usize) as u32;
            moved
        })
        .collect()
}

fn content_hash(text: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// The declarations of each file, for the content they were read from, so
/// that a write whose change touches none asks the server nothing: filled
/// when a file is read, carried over an edit inside a body, fetched again
/// after a write that changed declarations.
#[derive(Default)]
pub(crate) struct SymbolCache {
    entries: Mutex<HashMap<PathBuf, Entry>>,
}

struct Entry {
    hash: u64,
    state: State,
}

enum State {
    Ready(Arc<Vec<Decl>>),
    Fetching(watch::Receiver<bool>),
}

/// Removes a fetch's placeholder when the fetch is dropped half-way, so
/// that those waiting for it fetch themselves.
struct FetchGuard<'a> {
    cache: &'a SymbolCache,
    path: &'a Path,
    hash: u64,
    done: bool,
}

impl Drop for FetchGuard<'_> {
    fn drop(&mut self) {
        if !self.done {
            let mut entries = lock(&self.cache.entries);
            if entries
                .get(self.path)
                .is_some_and(|e| e.hash == self.hash && matches!(e.state, State::Fetching(_)))
            {
                entries.remove(self.path);
            }
        }
    }
}

impl SymbolCache {
    /// The declarations of `path` as the server has it (`text`): from the
    /// cache, from a fetch under way, or asked for now, within `deadline`.
    pub(crate) async fn get(
        &self,
        server: &Server,
        path: &Path,
        text: &str,
        deadline: Instant,
    ) -> Option<Arc<Vec<Decl>>> {
        let hash = content_hash(text);
        loop {
            let waiting = {
                let mut entries = lock(&self.entries);
                match entries.get(path) {
                    Some(entry) if entry.hash == hash => match &entry.state {
                        State::Ready(decls) => return Some(decls.clone()),
                        State::Fetching(done) => Ok(done.clone()),
                    },
                    _ => {
                        let (tx, rx) = watch::channel(false);
                        entries.insert(
                            path.to_path_buf(),
                            Entry {
                                hash,
                                state: State::Fetching(rx),
                            },
                        );
                        Err(tx)
                    }
                }
            };
            let mut done = match waiting {
                Ok(done) => done,
                Err(tx) => {
                    return self
                        .fetch_as_owner(server, path, text, hash, tx, deadline)
                        .await;
                }
            };
            match tokio::time::timeout_at(deadline, done.wait_for(|d| *d)).await {
                Err(_) => return None,
                // Finished (the entry says how) or dropped (its guard
                // removed it): look again.
                Ok(_) => continue,
            }
        }
    }

    /// Fetches the declarations for the placeholder this task put in.
    async fn fetch_as_owner(
        &self,
        server: &Server,
        path: &Path,
        text: &str,
        hash: u64,
        tx: watch::Sender<bool>,
        deadline: Instant,
    ) -> Option<Arc<Vec<Decl>>> {
        let mut guard = FetchGuard {
            cache: self,
            path,
            hash,
            done: false,
        };
        let fetched = fetch(server, path, text, deadline).await.map(Arc::new);
        {
            let mut entries = lock(&self.entries);
            let ours = entries
                .get(path)
                .is_some_and(|e| e.hash == hash && matches!(e.state, State::Fetching(_)));
            if ours {
                match &fetched {
                    Some(decls) => {
                        entries.insert(
                            path.to_path_buf(),
                            Entry {
                                hash,
                                state: State::Ready(decls.clone()),
                            },
                        );
                    }
                    None => {
                        entries.remove(path);
                    }
                }
            }
        }
        guard.done = true;
        let _ = tx.send(true);
        fetched
    }

    /// Records `decls` as those of `text`.
    pub(super) fn set(&self, path: &Path, text: &str, decls: Vec<Decl>) {
        lock(&self.entries).insert(
            path.to_path_buf(),
            Entry {
                hash: content_hash(text),
                state: State::Ready(Arc::new(decls)),
            },
        );
    }

    /// Whether the declarations of `text` are known or being fetched.
    pub(crate) fn has(&self, path: &Path, text: &str) -> bool {
        lock(&self.entries)
            .get(path)
            .is_some_and(|e| e.hash == content_hash(text))
    }

    /// Forgets a file (closed, deleted).
    pub(crate) fn forget(&self, path: &Path) {
        lock(&self.entries).remove(path);
    }
}

/// Asks the server for the document symbols of `path` (as `text`).
async fn fetch(server: &Server, path: &Path, text: &str, deadline: Instant) -> Option<Vec<Decl>> {
    let params = DocumentSymbolParams {
        text_document: TextDocumentIdentifier::new(path_to_uri(path)),
        work_done_progress_params: WorkDoneProgressParams::default(),
        partial_result_params: PartialResultParams::default(),
    };
    let left = deadline.saturating_duration_since(Instant::now());
    let answer = server
        .client()
        .request::<DocumentSymbolRequest>(&params, left)
        .await
        .ok()?;
    let symbols = crate::convert::symbol_tree(answer);
    let python = language_of(path) == Some("python");
    Some(declarations(text, &symbols, python))
}
#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use lsp_types::{Range as LspRange, SymbolKind};

    #[test]
    fn hunks_name_the_changed_lines_on_both_sides() {
        assert_eq!(hunks("a\nb\nc\n", "a\nb\nc\n"), vec![]);
        assert_eq!(
            hunks("a\nb\nc\n", "a\nB\nc\n"),
            vec![Hunk {
                old: 1..2,
                new: 1..2
            }]
        );
        // Two separate edits are two hunks; an insertion is an empty old range.
        assert_eq!(
            hunks("a\nb\nc\nd\ne\n", "a\nx\nb\nc\nd\nE\n"),
            vec![
                Hunk {
                    old: 1..1,
                    new: 1..2
                },
                Hunk {
                    old: 4..5,
                    new: 5..6
                },
            ]
        );
        assert_eq!(
            hunks("a\nb\n", "b\n"),
            vec![Hunk {
                old: 0..1,
                new: 0..0
            }]
        );
        // Lines after the hunks move by what the hunks added.
        let moved = hunks("a\nb\nc\nd\n", "a\nx\ny\nb\nc\nd\n");
        assert_eq!(map_line(&moved, 0), 0);
        assert_eq!(map_line(&moved, 3), 5);
    }

    fn symbol(name: &str, lines: (u32, u32), children: Vec<DocumentSymbol>) -> DocumentSymbol {
        #[allow(deprecated)]
        DocumentSymbol {
            name: name.into(),
            detail: None,
            kind: SymbolKind::FUNCTION,
            tags: None,
            deprecated: None,
            range: LspRange::new(Position::new(lines.0, 0), Position::new(lines.1, 1)),
            selection_range: LspRange::new(Position::new(lines.0, 0), Position::new(lines.0, 1)),
            children: Some(children),
        }
    }

    #[test]
    fn a_head_ends_where_the_body_opens_and_literals_stay_in_it() {
        let ts = "export function scale(\n  x: number,\n): number {\n  return x * 2;\n}\n\
                  export type Opts = {\n  a: number;\n};\n\
                  export const f = (x: number) => {\n  return x;\n};\n\
                  int mul(int a, int b);\n";
        let decls = declarations(
            ts,
            &[
                symbol("scale", (0, 4), vec![]),
                symbol("Opts", (5, 7), vec![]),
                symbol("f", (8, 10), vec![]),
                symbol("mul", (11, 11), vec![]),
            ],
            false,
        );
        let heads: Vec<_> = decls.iter().map(|d| (d.name.as_str(), d.head)).collect();
        assert_eq!(
            heads,
            [
                ("scale", (0, 2)),
                ("Opts", (5, 7)),
                ("f", (8, 8)),
                ("mul", (11, 11))
            ]
        );
        let py = "@cache\ndef greet(\n    name: str,\n) -> dict[str, int]:\n    return {'a': 1}\n";
        let decls = declarations(py, &[symbol("greet", (0, 4), vec![])], true);
        assert_eq!(decls[0].head, (0, 3));
    }

    #[test]
    fn only_changes_to_heads_touch_a_declaration() {
        let old = "export function scale(x: number): number {\n  return x * 2;\n}\n";
        let decls = declarations(old, &[symbol("scale", (0, 2), vec![])], false);
        let body = old.replace("x * 2", "x * 3");
        assert!(touched(&decls, &hunks(old, &body)).is_empty());
        let signature = old.replace("x: number)", "x: number, k: number)");
        assert_eq!(touched(&decls, &hunks(old, &signature)).len(), 1);
        // A line added before the function moves it and touches nothing.
        let above = format!("// scales\n{old}");
        let h = hunks(old, &above);
        assert!(touched(&decls, &h).is_empty());
        assert_eq!(remap(&decls, &h)[0].head, (1, 1));
        assert_eq!(remap(&decls, &h)[0].at.line, 1);
    }
}
