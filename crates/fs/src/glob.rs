//! `glob`: files by name pattern, newest first, the way ripgrep walks.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use gantry_core::{
    CancellationToken, Display, Part, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec,
    Workspace,
};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::common::{blocking, fenced, io_failure, quote, walker};

/// Results shown when nothing else is configured: enough to see the shape
/// of a match set, few enough to keep the model's context for the work.
pub const DEFAULT_MAX_RESULTS: usize = 500;

/// Parameters of [`Glob`].
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobParams {
    /// The glob pattern to match files against, e.g. `**/*.rs`,
    /// `src/**/*.test.ts` or `*.{yml,yaml}`. A pattern without `/` is
    /// matched against file names at any depth (`*.rs` finds every Rust
    /// file, as `**/*.rs` does). A pattern with `/` is matched against the
    /// path relative to `path`: `*` stays within one folder and `**`
    /// crosses folders. Matching is case-sensitive.
    #[schemars(length(min = 1))]
    pub pattern: String,
    /// The folder to search in: a path relative to the workspace root
    /// (e.g. `src`) or an absolute path inside the workspace. Defaults to
    /// the workspace root.
    #[serde(default = "dot")]
    pub path: String,
}

fn dot() -> String {
    ".".to_string()
}

/// Finds files by glob pattern. It walks the way ripgrep does (in
/// parallel; .gitignore, .ignore and git's exclude file respected even
/// outside a git repository; hidden files skipped) because those are the
/// files a person means by "the project", and lists the newest first
/// because recently touched files are usually the ones the task is about.
#[derive(Debug, Clone, Copy)]
pub struct Glob {
    max_results: usize,
}

impl Default for Glob {
    fn default() -> Self {
        Glob {
            max_results: DEFAULT_MAX_RESULTS,
        }
    }
}

impl Glob {
    /// A glob tool showing at most `max_results` files per call (a harness
    /// with a small context may want fewer than
    /// [`DEFAULT_MAX_RESULTS`]).
    pub fn with_max_results(max_results: usize) -> Self {
        Glob {
            max_results: max_results.max(1),
        }
    }
}

/// How a glob pattern is applied to each file; shared with grep's
/// `include` and read_many_files, so one pattern means the same thing in
/// every tool.
pub(crate) struct Matcher {
    /// A set of one: a set picks a literal, extension or suffix strategy
    /// where it can (`**/*.rs` is an extension check), a lone matcher
    /// always runs the regex.
    glob: GlobSet,
    /// Match the file name only (the pattern has no `/`).
    name_only: bool,
    /// The pattern names hidden files, so they must be walked.
    pub(crate) wants_hidden: bool,
}

impl Matcher {
    /// Whether the file at `path`, found under `base`, matches: by name
    /// for a pattern without `/`, by the path relative to `base` otherwise.
    pub(crate) fn is_match(&self, path: &Path, base: &Path) -> bool {
        if self.name_only {
            path.file_name()
                .is_some_and(|name| self.glob.is_match(name))
        } else {
            path.strip_prefix(base)
                .is_ok_and(|relative| self.glob.is_match(relative))
        }
    }
}

/// Compiles a glob with the glob tool's semantics; the error names the
/// `pattern` parameter, so callers with another parameter name rewrite it.
pub(crate) fn compile(pattern: &str) -> Result<Matcher, String> {
    let pattern = pattern.trim();
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    let glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("pattern: invalid glob {}: {}", quote(pattern), e.kind()))?;
    let wants_hidden = pattern
        .split('/')
        .any(|part| part.starts_with('.') && part != "." && part != "..");
    let set = GlobSetBuilder::new()
        .add(glob)
        .build()
        .map_err(|e| format!("pattern: {e}"))?;
    Ok(Matcher {
        glob: set,
        name_only: !pattern.contains('/'),
        wants_hidden,
    })
}

/// A matching file and when it was last changed.
pub(crate) struct Hit {
    pub(crate) modified: SystemTime,
    pub(crate) path: PathBuf,
}

/// Everything the walker threads share.
struct Shared<'a> {
    matcher: &'a Matcher,
    base: &'a Path,
    workspace: &'a Workspace,
    cancel: &'a CancellationToken,
    hits: Mutex<Vec<Hit>>,
    unreadable: AtomicUsize,
}

/// One walker thread: collects locally, hands its hits over when the
/// walk ends (on drop), so threads never contend per file.
struct Visitor<'a> {
    shared: &'a Shared<'a>,
    hits: Vec<Hit>,
}

impl<'s> ParallelVisitorBuilder<'s> for &'s Shared<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self,
            hits: Vec::new(),
        })
    }
}

impl Visitor<'_> {
    fn consider(&mut self, entry: DirEntry) {
        let shared = self.shared;
        let Some(file_type) = entry.file_type() else {
            return;
        };
        if file_type.is_dir() {
            return;
        }
        let path = entry.path();
        if !shared.matcher.is_match(path, shared.base) {
            return;
        }
        let meta = if file_type.is_symlink() {
            // Listed only when it leads to a file inside the workspace.
            match shared.workspace.metadata(path) {
                Ok(meta) if meta.is_file() => meta,
                _ => return,
            }
        } else if file_type.is_file() {
            match entry.metadata() {
                Ok(meta) => meta,
                Err(_) => {
                    shared.unreadable.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        } else {
            return;
        };
        self.hits.push(Hit {
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            path: entry.into_path(),
        });
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.shared.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        match entry {
            Ok(entry) => self.consider(entry),
            Err(_) => {
                self.shared.unreadable.fetch_add(1, Ordering::Relaxed);
            }
        }
        WalkState::Continue
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let mut hits = self
            .shared
            .hits
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        hits.append(&mut self.hits);
    }
}

/// What one walk found; [`search`] sorts it newest first.
pub(crate) struct Found {
    pub(crate) hits: Vec<Hit>,
    /// Entries the walk could not read (permissions, races).
    pub(crate) unreadable: usize,
}

/// Walks `from` the way the glob tool does and collects, unsorted, the
/// files `matcher` accepts relative to `base` (which is `from` or one of
/// its ancestors: read_many_files walks `src` for `src/**/*.rs` but matches
/// against the workspace-relative path).
pub(crate) fn collect(
    workspace: &Workspace,
    from: &Path,
    base: &Path,
    matcher: &Matcher,
    cancel: &CancellationToken,
) -> Result<Found, ToolError> {
    let shared = Shared {
        matcher,
        base,
        workspace,
        cancel,
        hits: Mutex::new(Vec::new()),
        unreadable: AtomicUsize::new(0),
    };
    walker(from, matcher.wants_hidden)
        .build_parallel()
        .visit(&mut &shared);
    if cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    Ok(Found {
        hits: shared
            .hits
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
        unreadable: shared.unreadable.into_inner(),
    })
}

fn search(
    workspace: &Workspace,
    given: &str,
    base: &Path,
    matcher: &Matcher,
    cancel: &CancellationToken,
) -> Result<Found, ToolError> {
    let meta = workspace
        .metadata(base)
        .map_err(|e| io_failure(workspace, given, base, e))?;
    if !meta.is_dir() {
        return Err(ToolError::failed(format!(
            "{} is a file, not a folder; give glob a folder in `path` (use read_file to read this file)",
            quote(&workspace.display(base))
        )));
    }
    let mut found = collect(workspace, base, base, matcher, cancel)?;
    // Ties by the path's bytes: `Path`'s own ordering walks components
    // and costs several times more on a tree of same-second checkouts.
    found.hits.sort_unstable_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| a.path.as_os_str().cmp(b.path.as_os_str()))
    });
    Ok(found)
}

#[gantry_core::async_trait]
impl Tool for Glob {
    type Params = GlobParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "glob",
            "Find files",
            Tier::Read,
            format!(
                "Finds files whose names or paths match a glob pattern (e.g. `**/*.rs`, \
                 `src/**/*.ts`, `Cargo.toml`), newest first by modification time, as \
                 workspace-relative paths, at most {} per call. Files excluded by .gitignore or \
                 .ignore, and hidden files (unless the pattern names them, e.g. `.github/**`), \
                 are skipped. Only files are listed, not folders. To search file contents use \
                 grep; to see one folder use ls.",
                self.max_results
            ),
        )
    }

    fn validate(&self, params: &GlobParams, _run: &gantry_core::Run) -> Result<(), String> {
        compile(&params.pattern).map(|_| ())
    }

    fn describe(&self, params: &GlobParams) -> String {
        format!(
            "find files matching {} in {}",
            quote(&params.pattern),
            quote(&params.path)
        )
    }

    async fn execute(&self, params: GlobParams, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let workspace = ctx.run.workspace().clone();
        let cancel = ctx.cancel.clone();
        let max_results = self.max_results;
        blocking(move || {
            let base = workspace.resolve(&params.path)?;
            let pattern = relative_pattern(&params.pattern, &base)?;
            let matcher = compile(&pattern).map_err(ToolError::Failed)?;
            let found = search(&workspace, &params.path, &base, &matcher, &cancel)?;
            Ok(render(
                &workspace,
                &params,
                &base,
                found,
                max_results,
                pattern.contains('/'),
            ))
        })
        .await
    }
}

/// Models sometimes put the folder into the pattern as an absolute path;
/// a pattern under the search folder is made relative to it, any other
/// absolute pattern is refused with what to do instead.
pub(crate) fn relative_pattern(pattern: &str, base: &Path) -> Result<String, ToolError> {
    let trimmed = pattern.trim();
    if !trimmed.starts_with('/') {
        return Ok(trimmed.to_string());
    }
    let base_text = base.to_string_lossy();
    match trimmed
        .strip_prefix(base_text.as_ref())
        .and_then(|rest| rest.strip_prefix('/'))
    {
        Some(rest) if !rest.is_empty() => Ok(rest.to_string()),
        _ => Err(ToolError::failed(format!(
            "pattern {} is absolute; put the folder in `path` and give a pattern relative to it, \
             e.g. {{\"path\": \"src\", \"pattern\": \"**/*.rs\"}}",
            quote(trimmed)
        ))),
    }
}

fn render(
    workspace: &Workspace,
    params: &GlobParams,
    base: &Path,
    found: Found,
    max_results: usize,
    pattern_has_slash: bool,
) -> ToolResult {
    let folder = workspace.display(base);
    let total = found.hits.len();
    let unreadable = if found.unreadable > 0 {
        format!(
            " ({} entr{} could not be read)",
            found.unreadable,
            if found.unreadable == 1 { "y" } else { "ies" }
        )
    } else {
        String::new()
    };
    if total == 0 {
        let mut text = format!(
            "No files match {} in {}{unreadable}. Files excluded by .gitignore/.ignore and \
             hidden files are skipped.",
            quote(&params.pattern),
            quote(&folder)
        );
        if pattern_has_slash && folder != "." {
            text.push_str(&format!(
                " The pattern is matched against paths relative to {}, not to the workspace root.",
                quote(&folder)
            ));
        }
        return ToolResult::text(text);
    }
    let shown = total.min(max_results);
    let mut list = String::new();
    for hit in &found.hits[..shown] {
        list.push_str(&workspace.display(&hit.path));
        list.push('\n');
    }
    let files = if total == 1 { "file" } else { "files" };
    let mut header = format!(
        "{total} {files} match {} in {}, newest first{unreadable}",
        quote(&params.pattern),
        quote(&folder)
    );
    if shown < total {
        header.push_str(&format!(
            "; {shown} of {total} files shown (narrow `pattern` or `path` to see the rest)"
        ));
    }
    ToolResult::new(
        vec![Part::text(format!("{header}:\n{list}"))],
        Display::Markdown {
            markdown: format!("{header}\n\n{}", fenced("", &list)),
        },
    )
}
