//! Finding the files to search and searching them in parallel: an
//! ignore-aware walk, a literal prefilter before any parse, the run's
//! parse cache, and an early stop once enough matches are found.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ast_grep_core::replacer::TemplateFix;
use ast_grep_language::SupportLang;
use gantry_core::lock;
use gantry_core::{CancellationToken, Workspace};

use crate::cache::{Held, ParseCache, Piece, Stamp};
use crate::pattern::{AstRoot, Found, Query};
use crate::{lang, pieces};

/// A file of a supported language found by the walk.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Absolute path.
    pub path: PathBuf,
    /// The grammar its extension names.
    pub lang: SupportLang,
    /// Size and mtime, for the cache.
    pub stamp: Stamp,
}

/// Every file under `root` (or `root` itself) whose extension names an
/// enabled language, sorted by path. `.gitignore` and friends are
/// respected, in or out of a git repository; hidden files are skipped.
pub fn walk(workspace: &Workspace, root: &Path) -> io::Result<Vec<Candidate>> {
    let metadata = workspace.metadata(root)?;
    if metadata.is_file() {
        return Ok(lang::of_path(root)
            .map(|lang| Candidate {
                path: root.to_path_buf(),
                lang,
                stamp: stamp(&metadata, lang),
            })
            .into_iter()
            .collect());
    }
    let found = Mutex::new(Vec::new());
    ignore::WalkBuilder::new(root)
        .require_git(false)
        .threads(threads())
        .build_parallel()
        .run(|| {
            let mut batch = Batch {
                local: Vec::new(),
                sink: &found,
            };
            Box::new(move |entry| {
                if let Ok(entry) = entry
                    && entry.file_type().is_some_and(|t| t.is_file())
                    && let Some(lang) = lang::of_path(entry.path())
                    && let Ok(metadata) = entry.metadata()
                {
                    batch.local.push(Candidate {
                        path: entry.into_path(),
                        lang,
                        stamp: stamp(&metadata, lang),
                    });
                }
                ignore::WalkState::Continue
            })
        });
    let mut found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// One walker thread's finds, handed over when the thread's visitor is
/// dropped, so the shared list is locked once per thread.
struct Batch<'a> {
    local: Vec<Candidate>,
    sink: &'a Mutex<Vec<Candidate>>,
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        lock(self.sink).append(&mut self.local);
    }
}

fn stamp(metadata: &std::fs::Metadata, lang: SupportLang) -> Stamp {
    Stamp {
        modified: metadata.modified().ok(),
        len: metadata.len(),
        lang,
    }
}

/// Languages found among candidates, with file counts.
pub fn languages(candidates: &[Candidate]) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::new();
    for candidate in candidates {
        *counts.entry(lang::id(candidate.lang)).or_default() += 1;
    }
    counts
}

/// Matches in one file.
pub struct FileMatches {
    /// Absolute path.
    pub path: PathBuf,
    /// The text the matches were found in; kept only for edits (a search
    /// keeps what it shows, not the file).
    pub source: Option<String>,
    /// In document order.
    pub matches: Vec<Located>,
}

/// A match with what is shown of it, computed while the file is at hand.
pub struct Located {
    /// The match.
    pub found: Found,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// The matched text, shortened for a result line.
    pub snippet: String,
}

/// What a search did, beyond its matches, so an empty result can be told
/// apart from a wrong pattern.
#[derive(Default)]
pub struct Outcome {
    /// Files with matches, in path order.
    pub files: Vec<FileMatches>,
    /// Matches found (all of them, or all found before the early stop).
    pub total: usize,
    /// Whether the search stopped early at the limit.
    pub stopped: bool,
    /// Files of the pattern's language considered.
    pub searched: usize,
    /// Of those, files that contained the pattern's literal text and were
    /// parsed (or came from the cache).
    pub parsed: usize,
    /// Of those, files parsed only in the pieces holding that text.
    pub in_pieces: usize,
    /// Parsed files with syntax errors (searched anyway).
    pub with_errors: Vec<PathBuf>,
    /// Files that could not be read or are not UTF-8, with why.
    pub unreadable: Vec<(PathBuf, String)>,
}

/// Searches `candidates` (already filtered to the query's language) with
/// up to `limit` matches (it stops taking new files once more than
/// `limit` are found, so "at least N" can be said).
pub fn run(
    workspace: &Workspace,
    candidates: &[Candidate],
    query: &Query,
    cache: &ParseCache,
    fix: Option<&TemplateFix>,
    limit: Option<usize>,
    cancel: &CancellationToken,
) -> Outcome {
    let next = AtomicUsize::new(0);
    let total = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let results: Mutex<Vec<(usize, FileOutcome)>> = Mutex::new(Vec::new());
    let workers = threads().min(candidates.len()).max(1);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let mut local = Vec::new();
                loop {
                    if stop.load(Ordering::Relaxed) || cancel.is_cancelled() {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(candidate) = candidates.get(index) else {
                        break;
                    };
                    let outcome = search_file(workspace, candidate, query, cache, fix);
                    if let FileOutcome::Searched { matches, .. } = &outcome {
                        let now = total.fetch_add(matches.len(), Ordering::Relaxed) + matches.len();
                        if limit.is_some_and(|limit| now > limit) {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    local.push((index, outcome));
                }
                lock(&results).append(&mut local);
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|(index, _)| *index);
    let mut outcome = Outcome {
        stopped: stop.load(Ordering::Relaxed),
        searched: results.len(),
        ..Outcome::default()
    };
    for (index, result) in results {
        let path = candidates[index].path.clone();
        match result {
            FileOutcome::Skipped => {}
            FileOutcome::Unreadable(why) => outcome.unreadable.push((path, why)),
            FileOutcome::Searched {
                source,
                matches,
                has_error,
                in_pieces,
            } => {
                outcome.parsed += 1;
                outcome.in_pieces += usize::from(in_pieces);
                if has_error {
                    outcome.with_errors.push(path.clone());
                }
                outcome.total += matches.len();
                if !matches.is_empty() {
                    outcome.files.push(FileMatches {
                        path,
                        source,
                        matches,
                    });
                }
            }
        }
    }
    tracing::debug!(
        pattern = query.source,
        searched = outcome.searched,
        parsed = outcome.parsed,
        in_pieces = outcome.in_pieces,
        matches = outcome.total,
        "structural search"
    );
    outcome
}

enum FileOutcome {
    /// The prefilter ruled it out.
    Skipped,
    Unreadable(String),
    Searched {
        source: Option<String>,
        matches: Vec<Located>,
        has_error: bool,
        /// Parsed only in the pieces holding the literal text.
        in_pieces: bool,
    },
}

fn search_file(
    workspace: &Workspace,
    candidate: &Candidate,
    query: &Query,
    cache: &ParseCache,
    fix: Option<&TemplateFix>,
) -> FileOutcome {
    let (doc, in_pieces) = match cache.get(&candidate.path, &candidate.stamp) {
        Held::Tree(doc) => {
            if !query.may_match(doc.source().as_bytes()) {
                return FileOutcome::Skipped;
            }
            (doc, false)
        }
        held => {
            let text = match read_text(workspace, candidate, query) {
                Ok(text) => text,
                Err(outcome) => return outcome,
            };
            let parsed = match held {
                Held::Outline(outline) if query.pieces_suffice() => {
                    parse_pieces(text, &outline, query, candidate.lang)
                }
                _ => Err(text),
            };
            match parsed {
                Ok(Some(doc)) => (Arc::new(doc), true),
                // The literals are there, but no piece holds them all.
                Ok(None) => return FileOutcome::Skipped,
                Err(text) => {
                    let doc = Arc::new(AstRoot::str(&text, candidate.lang));
                    cache.insert(&candidate.path, candidate.stamp, doc.clone());
                    (doc, false)
                }
            }
        }
    };
    let found = query.find(&doc, fix);
    let has_error = doc.root().get_inner_node().has_error();
    let text = doc.source();
    let lines = LineIndex::new(text, !found.is_empty());
    let matches = found
        .into_iter()
        .map(|found| {
            let (line, column) = lines.locate(text, found.range.start);
            let snippet = shorten(&text[found.range.clone()], SNIPPET_CHARS);
            Located {
                found,
                line,
                column,
                snippet,
            }
        })
        .collect::<Vec<_>>();
    FileOutcome::Searched {
        source: (fix.is_some() && !matches.is_empty()).then(|| text.to_string()),
        matches,
        has_error,
        in_pieces,
    }
}

/// The text of a file the cache does not hold, if it can hold a match:
/// otherwise what the search makes of it.
fn read_text(
    workspace: &Workspace,
    candidate: &Candidate,
    query: &Query,
) -> Result<String, FileOutcome> {
    // Opened through the workspace, whatever the walk listed.
    let bytes = workspace
        .read(&candidate.path)
        .map_err(|e| FileOutcome::Unreadable(e.to_string()))?;
    if !query.may_match(&bytes) {
        return Err(FileOutcome::Skipped);
    }
    String::from_utf8(bytes).map_err(|_| FileOutcome::Unreadable("not UTF-8 text".into()))
}

/// `text` parsed only in the pieces of its `outline` that can hold a
/// match; `None` when none can; the text back when it must be parsed
/// whole (see [`pieces::parse`]).
fn parse_pieces(
    text: String,
    outline: &[Piece],
    query: &Query,
    lang: SupportLang,
) -> Result<Option<AstRoot>, String> {
    let pieces: Vec<Piece> = outline
        .iter()
        .filter(|piece| {
            // An outline of another text (changed since the walk) ends
            // past this one: `pieces::parse` refuses what is kept of it.
            text.as_bytes()
                .get(piece.start as usize..piece.end as usize)
                .is_none_or(|piece| query.may_match(piece))
        })
        .copied()
        .collect();
    if pieces.is_empty() {
        return Ok(None);
    }
    let doc = pieces::parse(text, lang, &pieces)?;
    if query.may_root_at(doc.root().kind_id()) {
        return Err(doc.get_text().to_string());
    }
    Ok(Some(doc))
}

/// Longest match text kept for a result line.
const SNIPPET_CHARS: usize = 100;

/// Where each line of a file starts, built only for files with matches.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str, needed: bool) -> Self {
        let mut starts = vec![0];
        if needed {
            starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        }
        LineIndex { starts }
    }

    /// 1-based line and character column of a byte offset.
    fn locate(&self, text: &str, offset: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|&start| start <= offset);
        let start = self.starts[line - 1];
        (line, text[start..offset].chars().count() + 1)
    }
}

/// The first line of `text`, cut at `max` characters, saying what was
/// left out.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let mut lines = text.lines();
    let mut out = gantry_core::text::shorten(lines.next().unwrap_or(""), max);
    let rest = lines.count() as u64;
    if rest > 0 {
        let rest = gantry_core::text::counted(rest, "line", "lines");
        out.push_str(&format!(" … (+{rest})"));
    }
    out
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}
