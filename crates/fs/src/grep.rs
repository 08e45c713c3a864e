//! `grep`: lines matching a regex across the workspace, with ripgrep's own
//! crates and ripgrep's walk, grouped by file and capped deterministically.
//!
//! The walk is parallel and its order is not; the output must not depend
//! on it, or the same call would show a model different lines each time.
//! So the result is defined as "the first `max_results` matching lines in
//! path order", and the walk keeps a *cutoff*: the path at which the lines
//! collected so far reach the cap. A file past the cutoff can never be
//! shown; it is only searched to count, and once enough has been counted
//! the walk skips everything past the cutoff (whole folders included).
//! Every file before the final cutoff is always searched, so the lines
//! shown are the same whatever order the threads ran in; only the "at
//! least" count may vary.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use gantry_core::{
    CancellationToken, Display, Part, Run, Tier, Tool, ToolContext, ToolError, ToolResult,
    ToolSpec, Workspace,
};
use grep_matcher::Matcher as _;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkFinish, SinkMatch,
};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::common::{blocking, counted, fenced, io_failure, quote, tail, thousands, walker};
use crate::glob::{self, Matcher};

/// Matching lines shown when the call gives no `max_results`: enough to
/// see how a name is used across a project, few enough to leave the
/// model's context for the work.
pub const DEFAULT_MAX_RESULTS: u32 = 200;
/// The most `max_results` may ask for.
pub const MAX_RESULTS_LIMIT: u32 = 2000;
/// The most context lines before and after a match.
pub const MAX_CONTEXT: u32 = 10;
/// Characters of a line shown; longer lines (minified code, data) are
/// shortened around the match, since their full text says nothing more.
pub const MAX_LINE_CHARS: usize = 200;
/// Characters kept before the match when a long line is shortened.
const LEAD_CHARS: usize = 60;
/// Bytes of a long line stored: enough for [`MAX_LINE_CHARS`] characters
/// of up to four bytes on either side of the match.
const KEEP_BYTES: usize = MAX_LINE_CHARS * 4;
/// Matching lines counted past the cap, as a multiple of it, before the
/// walk stops looking past the cutoff: enough to say "at least 2,000" and
/// show the scale, without searching a whole monorepo for a common word.
const COUNT_FACTOR: u64 = 10;

/// Parameters of [`Grep`].
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepParams {
    /// The regular expression to search file contents for, in Rust regex
    /// syntax (as ripgrep), e.g. `fn \w+_test`, `TODO|FIXME`,
    /// `impl\s+Display for`. The characters `( ) [ ] { } . * + ? | ^ $ \`
    /// are special: put a backslash before one to match it as itself
    /// (`unwrap\(\)`), or set `literal` to search for plain text. A match
    /// lies within one line; `\n` cannot be matched.
    #[schemars(length(min = 1))]
    pub pattern: String,
    /// The file or folder to search: a path relative to the workspace
    /// root (e.g. `src`) or an absolute path inside the workspace. Defaults
    /// to the workspace root.
    #[serde(default = "dot")]
    pub path: String,
    /// Only search files matching this glob, e.g. `*.rs`, `*.{ts,tsx}` or
    /// `src/**/*.py`. Without `/` it matches file names at any depth; with
    /// `/` it matches the path relative to `path`, as the glob tool does.
    /// A file given as `path` is searched whatever this says.
    pub include: Option<String>,
    /// `true` ignores case, `false` matches case exactly. When omitted,
    /// smart case applies: case-insensitive if the pattern has no capital
    /// letters, case-sensitive if it has any (as `rg --smart-case`).
    pub case_insensitive: Option<bool>,
    /// Search for `pattern` as plain text rather than a regex, so every
    /// character matches itself (e.g. `map[key](x)`). Defaults to false.
    #[serde(default)]
    pub literal: bool,
    /// Lines to show before and after each matching line, 0 to 10, to see
    /// a match in its surroundings without reading the file. Defaults to 0.
    #[schemars(range(max = 10))]
    pub context: Option<u32>,
    /// The most matching lines to show, 1 to 2000; defaults to 200. When
    /// more lines match, the first ones in path order are shown and the
    /// result says how many matched at least.
    #[schemars(range(min = 1, max = 2000))]
    pub max_results: Option<u32>,
}

fn dot() -> String {
    ".".to_string()
}

/// Searches file contents by regex. Built on ripgrep's own crates
/// (`grep-searcher`, `grep-regex`, `ignore`) so that searching a large
/// checkout costs what `rg` costs, and walking the way ripgrep walks,
/// because the files ripgrep skips (ignored, hidden, binary) are the ones
/// a person does not mean by "search the project".
#[derive(Debug, Clone, Copy, Default)]
pub struct Grep;

/// Whether a pattern has a capital letter written as itself, which makes
/// smart case match case exactly. Escapes are not letters of the text
/// (`\W`, `\S`, `\p{Lu}`, `\x4F`), nor are group names (`(?P<Name>`).
fn has_capital(pattern: &str) -> bool {
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let digits = match chars.next() {
                    Some('p' | 'P') => 1,
                    Some('x') => 2,
                    Some('u') => 4,
                    Some('U') => 8,
                    _ => 0,
                };
                if digits > 0 && chars.peek() == Some(&'{') {
                    for c in chars.by_ref() {
                        if c == '}' {
                            break;
                        }
                    }
                } else {
                    for _ in 0..digits {
                        chars.next();
                    }
                }
            }
            '(' if chars.peek() == Some(&'?') => {
                chars.next();
                if chars.next_if_eq(&'P').is_some() || chars.peek() == Some(&'<') {
                    for c in chars.by_ref() {
                        if c == '>' {
                            break;
                        }
                    }
                }
            }
            c if c.is_uppercase() => return true,
            _ => {}
        }
    }
    false
}

/// Why a regex failed, with what to do about it in the model's terms.
fn regex_hint(error: &str) -> &'static str {
    if error.contains("unclosed group") || error.contains("unopened group") {
        "to match `(` or `)` itself, escape it: `\\(`, `\\)`"
    } else if error.contains("unclosed character class") {
        "to match `[` itself, escape it: `\\[`"
    } else if error.contains("repetition operator missing expression") {
        "to match `*`, `+` or `?` itself, escape it: `\\*`, `\\+`, `\\?`"
    } else if error.contains("repetition") || error.contains("decimal") {
        "to match `{` itself, escape it: `\\{`"
    } else if error.contains("look-around") {
        "look-ahead and look-behind are not supported; search for the main part and narrow \
         with a second, simpler pattern"
    } else if error.contains("backreferences") {
        "backreferences are not supported; search for the first occurrence and read around it"
    } else if error.contains("not allowed") {
        "grep matches within one line, so a pattern cannot match a line break"
    } else {
        "special characters `( ) [ ] { } . * + ? | ^ $ \\` need a backslash to match themselves"
    }
}

/// How one call searches: the compiled regex and the filters.
struct Query {
    matcher: RegexMatcher,
    include: Option<Matcher>,
    insensitive: bool,
    context: usize,
    cap: u64,
}

impl Query {
    fn new(params: &GrepParams) -> Result<Self, String> {
        let insensitive = params
            .case_insensitive
            .unwrap_or_else(|| !has_capital(&params.pattern));
        let matcher = RegexMatcherBuilder::new()
            // Line-oriented: lets the searcher run the fast path ripgrep
            // runs (literal prefilter, then only the candidate line).
            .line_terminator(Some(b'\n'))
            .case_insensitive(insensitive)
            .fixed_strings(params.literal)
            .build(&params.pattern)
            .map_err(|e| {
                let error = e.to_string();
                let hint = regex_hint(&error);
                let literal = if params.literal {
                    ""
                } else {
                    "; or set `literal: true` to search for the text as written"
                };
                format!(
                    "pattern: {} is not a valid regex (Rust regex syntax): {}\n{hint}{literal}",
                    quote(&params.pattern),
                    error.trim()
                )
            })?;
        let include = params
            .include
            .as_deref()
            .map(|include| {
                glob::compile(include).map_err(|e| e.replacen("pattern:", "include:", 1))
            })
            .transpose()?;
        Ok(Query {
            matcher,
            include,
            insensitive,
            context: params.context.unwrap_or(0).min(MAX_CONTEXT) as usize,
            cap: u64::from(params.max_results.unwrap_or(DEFAULT_MAX_RESULTS)),
        })
    }
}

/// What a stored line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Match,
    Context,
    /// A gap between two groups of context lines.
    Break,
}

/// One stored line; its text is `text[start..end]` of the file's buffer.
#[derive(Debug, Clone, Copy)]
struct Line {
    kind: Kind,
    number: u64,
    start: usize,
    end: usize,
    /// Where the match starts in the stored text, for a long line.
    match_at: Option<usize>,
    /// The stored text starts after the line's start / ends before its end.
    cut_front: bool,
    cut_back: bool,
}

/// What a file contributed, handed from a walker thread to the shared
/// collection in two allocations, however many lines matched.
struct FileHits {
    /// Matching lines stored (at most the cap).
    stored: u64,
    lines: Box<[Line]>,
    text: Box<[u8]>,
}

/// What the sink does with the file being searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Store lines: the file may be shown.
    Collect,
    /// Only count: the file sorts after the cutoff.
    Count,
}

/// Receives one file's matches; one per walker thread, reused from file
/// to file so a match costs no allocation.
struct FileSink<'a> {
    matcher: &'a RegexMatcher,
    cancel: &'a CancellationToken,
    mode: Mode,
    cap: u64,
    matches: u64,
    stored: u64,
    /// A match past the per-file cap was seen: nothing more is stored.
    full: bool,
    binary: bool,
    lines: Vec<Line>,
    text: Vec<u8>,
}

impl FileSink<'_> {
    fn reset(&mut self, mode: Mode) {
        self.mode = mode;
        self.matches = 0;
        self.stored = 0;
        self.full = false;
        self.binary = false;
        self.lines.clear();
        self.text.clear();
    }

    fn storing(&self) -> bool {
        self.mode == Mode::Collect && !self.full
    }

    fn push(&mut self, kind: Kind, number: u64, bytes: &[u8]) {
        let mut line = bytes;
        while let Some((last, rest)) = line.split_last()
            && (*last == b'\n' || *last == b'\r')
        {
            line = rest;
        }
        let (mut from, mut to) = (0, line.len());
        let mut match_at = None;
        if line.len() > MAX_LINE_CHARS {
            let found = if kind == Kind::Match {
                self.matcher.find(line).ok().flatten().map(|m| m.start())
            } else {
                None
            };
            if line.len() > KEEP_BYTES {
                from = found.map_or(0, |at| at.saturating_sub(KEEP_BYTES / 2));
                to = (from + KEEP_BYTES).min(line.len());
                // Whole characters only; a UTF-8 character has at most
                // three continuation bytes, and bytes that are not UTF-8
                // are shown as U+FFFD whatever the cut.
                let continues = |at: usize| line.get(at).is_some_and(|b| b & 0xc0 == 0x80);
                for _ in 0..3 {
                    if from > 0 && continues(from) {
                        from += 1;
                    }
                    if continues(to) {
                        to -= 1;
                    }
                }
            }
            match_at = found.map(|at| at.saturating_sub(from));
        }
        let start = self.text.len();
        self.text.extend_from_slice(&line[from..to]);
        self.lines.push(Line {
            kind,
            number,
            start,
            end: self.text.len(),
            match_at,
            cut_front: from > 0,
            cut_back: to < line.len(),
        });
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matches += 1;
        if self.storing() {
            if self.stored < self.cap {
                self.stored += 1;
                self.push(
                    Kind::Match,
                    found.line_number().unwrap_or_default(),
                    found.bytes(),
                );
            } else {
                self.full = true;
            }
        }
        Ok(!self.cancel.is_cancelled())
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.storing() {
            self.push(
                Kind::Context,
                context.line_number().unwrap_or_default(),
                context.bytes(),
            );
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.storing() && !self.lines.is_empty() {
            self.lines.push(Line {
                kind: Kind::Break,
                number: 0,
                start: 0,
                end: 0,
                match_at: None,
                cut_front: false,
                cut_back: false,
            });
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }

    fn finish(&mut self, _: &Searcher, finish: &SinkFinish) -> Result<(), io::Error> {
        // A NUL found while reading (not only in the first buffer) also
        // makes the file binary: its matches before that are dropped.
        if finish.binary_byte_offset().is_some() {
            self.binary = true;
        }
        Ok(())
    }
}

/// The files that may still be shown, in path order, and the cutoff.
#[derive(Default)]
struct Collected {
    files: BTreeMap<OsString, FileHits>,
    /// Matching lines stored across `files`.
    stored: u64,
    /// The path at which `stored` reaches the cap: nothing after it is
    /// shown.
    cutoff: Option<OsString>,
}

impl Collected {
    /// Adds a file and moves the cutoff down if it now comes earlier.
    /// Returns whether the cutoff changed.
    fn add(&mut self, path: OsString, hits: FileHits, cap: u64) -> bool {
        self.stored += hits.stored;
        self.files.insert(path, hits);
        if self.stored < cap {
            return false;
        }
        let mut sum = 0;
        let mut cutoff = None;
        for (path, hits) in &self.files {
            sum += hits.stored;
            if sum >= cap {
                cutoff = Some(path.clone());
                break;
            }
        }
        let Some(cutoff) = cutoff else {
            return false;
        };
        let dropped = self.files.split_off(cutoff.as_os_str());
        // `split_off` keeps the cutoff itself in the second half.
        let mut dropped = dropped.into_iter();
        if let Some((path, hits)) = dropped.next() {
            self.files.insert(path, hits);
        }
        self.stored = self.files.values().map(|hits| hits.stored).sum();
        let changed = self.cutoff.as_ref() != Some(&cutoff);
        self.cutoff = Some(cutoff);
        changed
    }
}

/// Everything the walker threads share.
struct Shared<'a> {
    query: &'a Query,
    base: &'a Path,
    workspace: &'a Workspace,
    cancel: &'a CancellationToken,
    collected: Mutex<Collected>,
    /// Bumped whenever the cutoff moves, so threads re-read it only then.
    generation: AtomicU64,
    /// Matching lines counted in all files searched.
    matches: AtomicU64,
    files_searched: AtomicU64,
    files_matched: AtomicU64,
    binary: AtomicU64,
    unreadable: AtomicU64,
    /// Enough has been counted: skip everything past the cutoff.
    counted_enough: AtomicBool,
    /// Something was skipped because of the cutoff: counts are a floor.
    pruned: AtomicBool,
}

impl Shared<'_> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Collected> {
        self.collected
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<'s> ParallelVisitorBuilder<'s> for &'s Shared<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        let context = self.query.context;
        let searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(b'\0'))
            .before_context(context)
            .after_context(context)
            .build();
        Box::new(Worker {
            shared: self,
            searcher,
            sink: FileSink {
                matcher: &self.query.matcher,
                cancel: self.cancel,
                mode: Mode::Collect,
                cap: self.query.cap,
                matches: 0,
                stored: 0,
                full: false,
                binary: false,
                lines: Vec::new(),
                text: Vec::new(),
            },
            generation: 0,
            cutoff: None,
        })
    }
}

/// One walker thread with its own searcher and sink.
struct Worker<'s> {
    shared: &'s Shared<'s>,
    searcher: Searcher,
    sink: FileSink<'s>,
    /// The cutoff as of `generation`.
    generation: u64,
    cutoff: Option<OsString>,
}

impl Worker<'_> {
    fn past_cutoff(&mut self, path: &Path) -> bool {
        let generation = self.shared.generation.load(Ordering::Acquire);
        if generation != self.generation {
            self.cutoff = self.shared.lock().cutoff.clone();
            self.generation = generation;
        }
        self.cutoff
            .as_deref()
            .is_some_and(|cutoff| path.as_os_str() > cutoff)
    }

    fn search(&mut self, entry: DirEntry) -> WalkState {
        let shared = self.shared;
        let Some(file_type) = entry.file_type() else {
            return WalkState::Continue;
        };
        let path = entry.path();
        let past = self.past_cutoff(path);
        if past && shared.counted_enough.load(Ordering::Relaxed) {
            shared.pruned.store(true, Ordering::Relaxed);
            return if file_type.is_dir() {
                WalkState::Skip
            } else {
                WalkState::Continue
            };
        }
        if file_type.is_dir() {
            return WalkState::Continue;
        }
        if entry.depth() > 0
            && let Some(include) = &shared.query.include
            && !include.is_match(path, shared.base)
        {
            return WalkState::Continue;
        }
        if !file_type.is_file() && !file_type.is_symlink() {
            return WalkState::Continue;
        }
        // Opened again through the workspace, whatever the walk listed: a
        // link is searched only when it leads to a file inside, and a
        // folder swapped for a link since the listing leads nowhere out.
        let Ok(file) = shared.workspace.open_file(path) else {
            if !file_type.is_symlink() {
                shared.unreadable.fetch_add(1, Ordering::Relaxed);
            }
            return WalkState::Continue;
        };

        let mode = if past { Mode::Count } else { Mode::Collect };
        self.sink.reset(mode);
        let result = self
            .searcher
            .search_file(&shared.query.matcher, &file, &mut self.sink);
        if shared.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        shared.files_searched.fetch_add(1, Ordering::Relaxed);
        if result.is_err() {
            shared.unreadable.fetch_add(1, Ordering::Relaxed);
            return WalkState::Continue;
        }
        if self.sink.binary {
            shared.binary.fetch_add(1, Ordering::Relaxed);
            return WalkState::Continue;
        }
        if self.sink.matches == 0 {
            return WalkState::Continue;
        }
        shared.files_matched.fetch_add(1, Ordering::Relaxed);
        let total = shared
            .matches
            .fetch_add(self.sink.matches, Ordering::Relaxed)
            + self.sink.matches;
        if total >= shared.query.cap.saturating_mul(COUNT_FACTOR) {
            shared.counted_enough.store(true, Ordering::Relaxed);
        }
        if mode == Mode::Collect {
            let hits = FileHits {
                stored: self.sink.stored,
                lines: self.sink.lines.as_slice().into(),
                text: self.sink.text.as_slice().into(),
            };
            let changed = shared
                .lock()
                .add(path.as_os_str().to_owned(), hits, shared.query.cap);
            if changed {
                shared.generation.fetch_add(1, Ordering::Release);
            }
        }
        WalkState::Continue
    }
}

impl ParallelVisitor for Worker<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.shared.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        match entry {
            Ok(entry) => self.search(entry),
            Err(_) => {
                self.shared.unreadable.fetch_add(1, Ordering::Relaxed);
                WalkState::Continue
            }
        }
    }
}

/// What one search found.
struct Outcome {
    files: BTreeMap<OsString, FileHits>,
    matches: u64,
    files_searched: u64,
    files_matched: u64,
    binary: u64,
    unreadable: u64,
    pruned: bool,
}

fn search(
    workspace: &Workspace,
    base: &Path,
    query: &Query,
    cancel: &CancellationToken,
) -> Result<Outcome, ToolError> {
    let hidden = query.include.as_ref().is_some_and(|m| m.wants_hidden);
    let shared = Shared {
        query,
        base,
        workspace,
        cancel,
        collected: Mutex::default(),
        generation: AtomicU64::new(0),
        matches: AtomicU64::new(0),
        files_searched: AtomicU64::new(0),
        files_matched: AtomicU64::new(0),
        binary: AtomicU64::new(0),
        unreadable: AtomicU64::new(0),
        counted_enough: AtomicBool::new(false),
        pruned: AtomicBool::new(false),
    };
    walker(base, hidden).build_parallel().visit(&mut &shared);
    if cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let collected = shared
        .collected
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    Ok(Outcome {
        files: collected.files,
        matches: shared.matches.into_inner(),
        files_searched: shared.files_searched.into_inner(),
        files_matched: shared.files_matched.into_inner(),
        binary: shared.binary.into_inner(),
        unreadable: shared.unreadable.into_inner(),
        pruned: shared.pruned.into_inner(),
    })
}

#[gantry_core::async_trait]
impl Tool for Grep {
    type Params = GrepParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "grep",
            "Search file contents",
            Tier::Read,
            format!(
                "Searches file contents for a regular expression (Rust regex syntax, as \
                 ripgrep) in the workspace or under `path`, optionally only in files matching \
                 the glob `include`. Returns matching lines grouped by file, files in path \
                 order, each as `path:line: text`; with `context`, the lines around a match are \
                 shown as `path-line- text` and separate groups are divided by `--`. Lines over \
                 {MAX_LINE_CHARS} characters are shortened around the match (cuts marked `…`). \
                 Case is smart by default: a pattern without capital letters ignores case, one \
                 with capitals matches it exactly; `case_insensitive` decides explicitly. \
                 Binary files, hidden files and files excluded by .gitignore or .ignore are not \
                 searched. At most {DEFAULT_MAX_RESULTS} matching lines are shown unless \
                 `max_results` says otherwise; when more match, the result says how many and \
                 how to narrow. To find files by name use glob; to read a file use read_file."
            ),
        )
    }

    fn validate(&self, params: &GrepParams, _run: &Run) -> Result<(), String> {
        Query::new(params).map(|_| ())
    }

    fn describe(&self, params: &GrepParams) -> String {
        let mut text = format!(
            "search for {} in {}",
            quote(&params.pattern),
            quote(&params.path)
        );
        if let Some(include) = &params.include {
            text.push_str(&format!(" (files matching {})", quote(include)));
        }
        text
    }

    async fn execute(&self, params: GrepParams, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let workspace = ctx.run.workspace().clone();
        let cancel = ctx.cancel.clone();
        blocking(move || {
            let base = workspace.resolve(&params.path)?;
            workspace
                .metadata(&base)
                .map_err(|e| io_failure(&workspace, &params.path, &base, e))?;
            let query = Query::new(&params).map_err(ToolError::Failed)?;
            let outcome = search(&workspace, &base, &query, &cancel)?;
            Ok(render(&workspace, &params, &base, &query, outcome))
        })
        .await
    }
}

/// A stored line as text: lossy UTF-8, and a long line cut to
/// [`MAX_LINE_CHARS`] characters around its match.
fn line_text(line: &Line, text: &[u8], shortened: &mut bool) -> String {
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

fn render(
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn capitals_in_escapes_and_names_do_not_count() {
        assert!(!has_capital("foo_bar"));
        assert!(has_capital("FooBar"));
        assert!(has_capital(r"fn \w+Test"));
        assert!(!has_capital(
            r"\W+\S\D\p{Lu}\pL\x4F\u00C9\u{00C9}\U0000004F"
        ));
        assert!(has_capital(r"\pLA"));
        assert!(has_capital(r"\x4FF"));
        assert!(!has_capital(r"(?P<Name>x)(?<Other>y)"));
        assert!(has_capital(r"(?i)X"));
    }

    #[test]
    fn hints_point_at_the_escape() {
        for (pattern, hint) in [
            ("foo(", "`\\(`"),
            ("a[b", "`\\[`"),
            ("*x", "`\\*`"),
            ("a{x", "`\\{`"),
        ] {
            let error = RegexMatcher::new(pattern).unwrap_err().to_string();
            assert!(regex_hint(&error).contains(hint), "{pattern}: {error}");
        }
    }

    #[test]
    fn cutoff_is_where_the_cap_is_reached_in_path_order() {
        let hits = |stored| FileHits {
            stored,
            lines: Box::new([]),
            text: Box::new([]),
        };
        let mut collected = Collected::default();
        assert!(!collected.add("/r/m".into(), hits(2), 3));
        assert!(collected.add("/r/z".into(), hits(2), 3));
        assert_eq!(collected.cutoff.as_deref(), Some(OsStr::new("/r/z")));
        // An earlier file moves the cutoff down and drops what is past it.
        assert!(collected.add("/r/a".into(), hits(1), 3));
        assert_eq!(collected.cutoff.as_deref(), Some(OsStr::new("/r/m")));
        let kept: Vec<_> = collected.files.keys().cloned().collect();
        assert_eq!(kept, [OsString::from("/r/a"), OsString::from("/r/m")]);
        assert_eq!(collected.stored, 3);
    }
}
