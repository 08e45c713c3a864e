//! The files a write can break: before a change set is applied, the
//! declarations whose lines it touches (the file's document symbols, kept
//! per content so that an edit inside a function body asks the server
//! nothing), then the files that use them: the server's references, or
//! for C and C++, where a change reaches other files only through
//! `#include`, the files that include the changed one, found by a bounded
//! scan of the workspace (clangd's references cover only the open files
//! unless its background index has a compilation database; and a file
//! that only calls a function whose definition changed is not affected). The write hook opens those files before the write,
//! so what they had before is the baseline and only what the write broke
//! there is reported.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use gantry_core::lock;
use gantry_core::write::{ChangeKind, ChangeSet};
use lsp_types::request::{DocumentSymbolRequest, References};
use lsp_types::{
    DocumentSymbol, DocumentSymbolParams, PartialResultParams, Position, ReferenceContext,
    ReferenceParams, TextDocumentIdentifier, TextDocumentPositionParams, WorkDoneProgressParams,
};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::convert::{LineIndex, path_to_uri, uri_to_path};
use crate::server::{Server, ignored};
use crate::servers::language_of;
use crate::supervisor::Supervisor;

/// Declarations one write asks references for at most: a rewrite of a
/// whole file touches all of them, and each is a request.
const MAX_DECLARATIONS: usize = 20;
/// Bytes of one C/C++ file the include scan reads at most.
const MAX_SCAN_BYTES: usize = 256 * 1024;
/// Edit distance past which two versions of a file count as one change
/// from the first differing line to the last (the diff stays cheap).
const MAX_EDIT_DISTANCE: usize = 2_000;

/// A run of changed lines: `old` in the content before, `new` after (both
/// 0-based, end exclusive; an empty range is an insertion or deletion
/// point).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    pub old: Range<usize>,
    pub new: Range<usize>,
}

/// The changed line ranges between two versions of a text (Myers' diff
/// over lines, bounded).
pub(crate) fn hunks(old: &str, new: &str) -> Vec<Hunk> {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let mut prefix = 0;
    while prefix < a.len() && prefix < b.len() && a[prefix] == b[prefix] {
        prefix += 1;
    }
    let mut suffix = 0;
    while suffix < a.len() - prefix
        && suffix < b.len() - prefix
        && a[a.len() - 1 - suffix] == b[b.len() - 1 - suffix]
    {
        suffix += 1;
    }
    let (a, b) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    if a.is_empty() && b.is_empty() {
        return Vec::new();
    }
    let shift = |h: Hunk| Hunk {
        old: h.old.start + prefix..h.old.end + prefix,
        new: h.new.start + prefix..h.new.end + prefix,
    };
    let Some(matched) = matching_lines(a, b) else {
        return vec![shift(Hunk {
            old: 0..a.len(),
            new: 0..b.len(),
        })];
    };
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    for (x, y) in matched.into_iter().chain([(a.len(), b.len())]) {
        if x > i || y > j {
            out.push(shift(Hunk {
                old: i..x,
                new: j..y,
            }));
        }
        (i, j) = (x + 1, y + 1);
    }
    out
}

/// The pairs of equal lines of a shortest edit script, in order; `None`
/// past [`MAX_EDIT_DISTANCE`].
fn matching_lines(a: &[&str], b: &[&str]) -> Option<Vec<(usize, usize)>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    let offset = max as isize + 1;
    let mut v = vec![0isize; 2 * max + 3];
    // trace[d] is v before step d, for k in -d..=d (index k + d).
    let mut trace: Vec<Vec<isize>> = Vec::new();
    for d in 0..=max.min(MAX_EDIT_DISTANCE) as isize {
        trace.push(v[(offset - d) as usize..=(offset + d) as usize].to_vec());
        let mut k = -d;
        while k <= d {
            let at = |k: isize| v[(offset + k) as usize];
            let mut x = if k == -d || (k != d && at(k - 1) < at(k + 1)) {
                at(k + 1)
            } else {
                at(k - 1) + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(offset + k) as usize] = x;
            if x >= n && y >= m {
                return Some(backtrack(&trace, n, m, d));
            }
            k += 2;
        }
    }
    None
}

fn backtrack(trace: &[Vec<isize>], n: isize, m: isize, d: isize) -> Vec<(usize, usize)> {
    let mut matched = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..=d).rev() {
        let v = &trace[d as usize];
        let at = |k: isize| v[(k + d) as usize];
        let k = x - y;
        let prev_k = if k == -d || (k != d && at(k - 1) < at(k + 1)) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            matched.push((x as usize, y as usize));
        }
        (x, y) = (prev_x, prev_y);
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        matched.push((x as usize, y as usize));
    }
    matched.reverse();
    matched
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
fn remap(decls: &[Decl], hunks: &[Hunk]) -> Vec<Decl> {
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
    fn set(&self, path: &Path, text: &str, decls: Vec<Decl>) {
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

/// What the lookup found for one change set.
#[derive(Default)]
pub(crate) struct Found {
    /// The files to open and check, each with the server that serves it.
    pub files: Vec<(Arc<Server>, PathBuf)>,
    /// How many more there were past the cap.
    pub beyond_cap: usize,
}

/// Finds the files `changes` can break, within `deadline` and at most
/// `cap` of them. A modified file whose change touches no declaration
/// costs no request once its symbols are known.
pub(crate) async fn find(
    sup: &Supervisor,
    changes: &ChangeSet,
    cap: usize,
    deadline: Instant,
) -> Found {
    let changed: HashSet<&Path> = changes
        .changes()
        .iter()
        .flat_map(|c| [c.path(), c.source()])
        .collect();
    let mut found = Found::default();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut candidates: Vec<(Arc<Server>, PathBuf)> = Vec::new();
    for change in changes.changes() {
        let (source, Some(before)) = (change.source(), change.before()) else {
            continue; // Created: nothing can use it yet.
        };
        if language_of(source).is_none() {
            continue;
        }
        let old = String::from_utf8_lossy(before);
        let whole = match change.kind() {
            ChangeKind::Modified => false,
            ChangeKind::Deleted | ChangeKind::Renamed { .. } => true,
            ChangeKind::Created => continue,
        };
        let new = change.after().map(String::from_utf8_lossy);
        let hunks = match (&new, whole) {
            (Some(new), false) => hunks(&old, new),
            _ => Vec::new(),
        };
        if !whole && hunks.is_empty() {
            continue;
        }
        let server = match tokio::time::timeout_at(deadline, sup.server_for(source)).await {
            Ok(Ok(server)) => server,
            _ => continue,
        };
        // A server still loading the workspace (pyright) answers nothing
        // yet: waited for within the write's deadline only.
        let mut events = server.observed().events();
        while server.observed().warming() {
            if tokio::time::timeout_at(deadline, events.changed())
                .await
                .map_or(true, |r| r.is_err())
            {
                break;
            }
        }
        if server.observed().warming() {
            continue;
        }
        server.refresh().await;
        let Ok(text) = server.open(source).await else {
            continue;
        };
        if *text != *old {
            continue; // The server's view is not what the change replaces.
        }
        let Some(decls) = sup
            .inner
            .symbols
            .get(&server, source, &text, deadline)
            .await
        else {
            continue;
        };
        let touched: Vec<&Decl> = if whole {
            decls.iter().filter(|d| d.top).collect()
        } else {
            touched(&decls, &hunks)
        };
        if touched.is_empty() {
            if let Some(new) = &new {
                sup.inner
                    .symbols
                    .set(change.path(), new, remap(&decls, &hunks));
            }
            continue;
        }
        // In C and C++ a change reaches another file only through
        // `#include`: the files that include this one, however they got
        // there, are the ones to check (a caller of a function defined
        // here sees only its declaration in a header). Elsewhere, the
        // server's references.
        let users = if crate::compile_db::is_c_family(source) {
            let root = sup.inner.workspace.clone();
            let header = source.to_path_buf();
            let includes = sup.inner.includes.clone();
            let scan = tokio::task::spawn_blocking(move || includers(&root, &header, &includes));
            match tokio::time::timeout_at(deadline, scan).await {
                Ok(Ok(found)) => found,
                _ => Vec::new(),
            }
        } else {
            references(&server, source, &touched, deadline).await
        };
        for path in users {
            // Dependencies and build output (node_modules, target) are not
            // the run's to check.
            let Ok(inside) = path.strip_prefix(&sup.inner.workspace) else {
                continue;
            };
            if changed.contains(path.as_path())
                || ignored(inside)
                || !path.starts_with(&server.root)
                || !language_of(&path).is_some_and(|l| server.spec.languages.iter().any(|s| s == l))
                || !seen.insert(path.clone())
            {
                continue;
            }
            candidates.push((server.clone(), path));
        }
    }
    found.beyond_cap = candidates.len().saturating_sub(cap);
    candidates.truncate(cap);
    found.files = candidates;
    found
}

/// The files holding references to `decls` of `path`, asked all at once.
async fn references(
    server: &Arc<Server>,
    path: &Path,
    decls: &[&Decl],
    deadline: Instant,
) -> Vec<PathBuf> {
    let mut asks = tokio::task::JoinSet::new();
    for decl in decls.iter().take(MAX_DECLARATIONS) {
        let server = server.clone();
        let params = ReferenceParams {
            text_document_position: TextDocumentPositionParams {
                text_document: TextDocumentIdentifier::new(path_to_uri(path)),
                position: decl.at,
            },
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
            context: ReferenceContext {
                include_declaration: false,
            },
        };
        asks.spawn(async move {
            let left = deadline.saturating_duration_since(Instant::now());
            server
                .client()
                .request::<References>(&params, left)
                .await
                .ok()
                .flatten()
                .unwrap_or_default()
        });
    }
    let mut files = Vec::new();
    while let Some(answer) = asks.join_next().await {
        for location in answer.unwrap_or_default() {
            if let Some(file) = uri_to_path(&location.uri)
                && !files.contains(&file)
            {
                files.push(file);
            }
        }
    }
    files.sort();
    files
}

/// Whether `path` is a C/C++ header.
pub(crate) fn is_header(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    matches!(
        ext.as_deref(),
        Some("h" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "inl" | "inc")
    )
}

/// What one file includes, as written, with the file's size and time when
/// read: a scan reads again only the files that changed.
#[derive(Default)]
pub(crate) struct IncludeCache {
    files: Mutex<HashMap<PathBuf, Scanned>>,
}

/// One file as the include scan last read it.
struct Scanned {
    len: u64,
    modified: SystemTime,
    targets: Arc<Vec<String>>,
}

/// The `#include "…"` and `#include <…>` targets of a C/C++ text.
fn include_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("include") else {
            continue;
        };
        let rest = rest.trim_start();
        let close = match rest.chars().next() {
            Some('"') => '"',
            Some('<') => '>',
            _ => continue,
        };
        if let Some(end) = rest[1..].find(close) {
            out.push(rest[1..1 + end].to_string());
        }
    }
    out
}

/// Whether `target`, included from `file`, names `header`: beside the
/// including file, or as the tail of the header's path (an include
/// directory given with `-I`).
fn names(file: &Path, target: &str, header: &Path) -> bool {
    let beside = file
        .parent()
        .map(|dir| gantry_core::workspace::normalize(&dir.join(target)))
        .is_some_and(|p| p == header);
    beside || (!target.contains("..") && header.ends_with(target))
}

/// The workspace's C/C++ files that include `header` (a header, or a
/// source file included as one), directly or through other headers: a
/// bounded scan of the files (build output and
/// dependencies skipped), each read again only when it changed.
pub(crate) fn includers(root: &Path, header: &Path, cache: &IncludeCache) -> Vec<PathBuf> {
    let sources = crate::compile_db::c_family_files(root);
    let mut graph: Vec<(PathBuf, Arc<Vec<String>>)> = Vec::with_capacity(sources.len());
    {
        for path in sources {
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            let stamp = (
                meta.len(),
                meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            );
            let known = lock(&cache.files)
                .get(&path)
                .filter(|known| (known.len, known.modified) == stamp)
                .map(|known| known.targets.clone());
            let targets = match known {
                Some(targets) => targets,
                None => {
                    let Ok(bytes) = gantry_core::read_regular(&path) else {
                        continue;
                    };
                    let head = &bytes[..bytes.len().min(MAX_SCAN_BYTES)];
                    let targets = Arc::new(include_targets(&String::from_utf8_lossy(head)));
                    let scanned = Scanned {
                        len: stamp.0,
                        modified: stamp.1,
                        targets: targets.clone(),
                    };
                    lock(&cache.files).insert(path.clone(), scanned);
                    targets
                }
            };
            graph.push((path, targets));
        }
    }
    let mut found: Vec<PathBuf> = Vec::new();
    let mut pending = vec![header.to_path_buf()];
    let mut done: HashSet<PathBuf> = HashSet::new();
    while let Some(target) = pending.pop() {
        if !done.insert(target.clone()) {
            continue;
        }
        for (file, includes) in &graph {
            if *file == header || found.contains(file) {
                continue;
            }
            if includes.iter().any(|inc| names(file, inc, &target)) {
                found.push(file.clone());
                if is_header(file) {
                    pending.push(file.clone());
                }
            }
        }
    }
    found.sort();
    found
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

    #[test]
    fn includers_are_found_through_other_headers_and_include_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let files = [
            ("include/ops.h", "int mul(int a, int b);\n"),
            ("include/all.h", "#include \"ops.h\"\n"),
            ("src/app.c", "#include <ops.h>\nint app(void);\n"),
            ("src/more.c", "  #  include \"../include/all.h\"\n"),
            ("src/other.c", "#include \"other.h\"\n"),
            ("node_modules/x/y.c", "#include \"ops.h\"\n"),
        ];
        for (path, text) in files {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        let cache = IncludeCache::default();
        let found = includers(root, &root.join("include/ops.h"), &cache);
        let names: Vec<_> = found
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["include/all.h", "src/app.c", "src/more.c"]);
        // The second scan reads nothing again and finds the same.
        assert_eq!(includers(root, &root.join("include/ops.h"), &cache), found);
    }
}
