//! `read_many_files`: several text files in one call, concatenated under
//! headers, with every file that was left out named and explained.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

use gantry_core::{
    CancellationToken, Display, NotRegular, Part, Run, Tier, Tool, ToolContext, ToolError,
    ToolResult, ToolSpec, Workspace,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::common::{blocking, counted, fenced, human_size, io_failure, quote, thousands};
use crate::glob::{self, Matcher};
use crate::sniff::{self, Kind, SNIFF_BYTES};

/// Text returned by one call at most, and so also the largest file read
/// (a bigger one is skipped with a pointer to read_file, which reads in
/// parts): what fits in the model's budget for one result (256 KiB) with
/// room for the headers and the list of what was left out.
pub const MAX_TOTAL_BYTES: u64 = 224 * 1024;
/// Largest file read; see [`MAX_TOTAL_BYTES`].
pub const MAX_FILE_BYTES: u64 = MAX_TOTAL_BYTES;
/// Skipped files listed one by one before "and N more".
const SKIPPED_LISTED: usize = 50;
/// Files not read because of the total limit, named before "and N more".
const UNREAD_LISTED: usize = 20;

/// Parameters of [`ReadManyFiles`].
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadManyFilesParams {
    /// What to read: files (`src/main.rs`), folders (`src/config`, read
    /// with everything under it) and glob patterns (`src/**/*.ts`,
    /// `*.md`), relative to the workspace root or absolute inside it. A
    /// glob without `/` matches file names at any depth; with `/` it
    /// matches the workspace-relative path, as the glob tool does.
    #[schemars(length(min = 1))]
    pub paths: Vec<String>,
    /// More glob patterns (or paths) to read, added to `paths`, e.g.
    /// `["**/*.md"]`.
    #[serde(default)]
    pub include: Vec<String>,
    /// Glob patterns of files to leave out, e.g. `["**/*.test.ts"]`. A
    /// pattern that matches a folder (`fixtures`, `vendor/**`) leaves out
    /// everything under it.
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// Reads several files in one call: a module with its tests, the configs
/// of a project. Text comes back without line numbers (read_file gives
/// those), so more of it fits; anything not returned is listed with the
/// reason, so the model never mistakes a skipped file for an empty one.
#[derive(Debug, Clone, Copy)]
pub struct ReadManyFiles {
    max_file_bytes: u64,
    max_total_bytes: u64,
}

impl Default for ReadManyFiles {
    fn default() -> Self {
        ReadManyFiles {
            max_file_bytes: MAX_FILE_BYTES,
            max_total_bytes: MAX_TOTAL_BYTES,
        }
    }
}

impl ReadManyFiles {
    /// A tool with other limits: the largest file read and the most text
    /// returned per call (a harness with a small context wants less than
    /// [`MAX_TOTAL_BYTES`]).
    pub fn with_limits(max_file_bytes: u64, max_total_bytes: u64) -> Self {
        ReadManyFiles {
            max_file_bytes: max_file_bytes.max(1),
            max_total_bytes: max_total_bytes.max(1),
        }
    }
}

/// Whether an entry of `paths` is a glob pattern rather than a path.
fn looks_like_glob(entry: &str) -> bool {
    entry.contains(['*', '?', '[', '{'])
}

/// The folder a glob can be walked from: its leading components without
/// wildcards (`src` for `src/**/*.rs`), so the walk skips the rest.
fn literal_prefix(pattern: &str) -> &str {
    let mut end = 0;
    for (at, _) in pattern.match_indices('/') {
        if looks_like_glob(&pattern[..at]) {
            break;
        }
        end = at;
    }
    &pattern[..end]
}

/// A path left out, with why.
struct Skipped {
    shown: String,
    reason: String,
}

/// Everything the entries expanded to.
struct Expanded {
    /// The files to read, each with whether the caller named it (rather
    /// than a glob or a folder finding it).
    candidates: BTreeMap<OsString, bool>,
    skipped: Vec<Skipped>,
    /// A glob or folder was expanded (so ignored and hidden files were
    /// left out silently, which the result says).
    walked: bool,
}

impl Expanded {
    /// Adds files a glob or a folder found, keeping a file named
    /// explicitly marked as named.
    fn found(&mut self, hits: Vec<glob::Hit>) {
        for hit in hits {
            self.candidates
                .entry(hit.path.into_os_string())
                .or_insert(false);
        }
    }
}

fn expand(
    workspace: &Workspace,
    entries: &[String],
    cancel: &CancellationToken,
) -> Result<Expanded, ToolError> {
    let root = workspace.root();
    let mut expanded = Expanded {
        candidates: BTreeMap::new(),
        skipped: Vec::new(),
        walked: false,
    };
    for entry in entries {
        let given = entry.trim();
        let literal_exists = workspace
            .resolve(given)
            .is_ok_and(|path| workspace.symlink_metadata(&path).is_ok());
        if looks_like_glob(given) && !literal_exists {
            expanded.walked = true;
            let skip = |reason: String| Skipped {
                shown: quote(given),
                reason,
            };
            let pattern = match glob::relative_pattern(given, root) {
                Ok(pattern) => pattern,
                Err(ToolError::Failed(_)) => {
                    expanded.skipped.push(skip(format!(
                        "the pattern is outside the workspace ({})",
                        root.display()
                    )));
                    continue;
                }
                Err(other) => return Err(other),
            };
            let pattern = pattern.strip_prefix("./").unwrap_or(&pattern);
            if pattern.split('/').any(|part| part == "..") {
                expanded.skipped.push(skip(
                    "`..` in a pattern would leave the workspace; only files inside it are read"
                        .to_string(),
                ));
                continue;
            }
            let matcher = glob::compile(pattern).map_err(ToolError::Failed)?;
            // The walk starts where the pattern's literal part leads, named
            // through the workspace: a folder there that is a link out is
            // refused, not walked.
            let prefix = literal_prefix(pattern);
            let from = match workspace.resolve(if prefix.is_empty() { "." } else { prefix }) {
                Ok(from) => from,
                Err(error) => {
                    expanded.skipped.push(skip(error.to_string()));
                    continue;
                }
            };
            let hits = if workspace.metadata(&from).is_ok_and(|meta| meta.is_dir()) {
                glob::collect(workspace, &from, root, &matcher, cancel)?.hits
            } else {
                Vec::new()
            };
            if hits.is_empty() {
                expanded.skipped.push(skip(
                    "no files match (globs leave out files excluded by .gitignore/.ignore and \
                     hidden files)"
                        .to_string(),
                ));
            }
            expanded.found(hits);
            continue;
        }
        let path = match workspace.resolve(given) {
            Ok(path) => path,
            Err(error) => {
                expanded.skipped.push(Skipped {
                    shown: quote(given),
                    reason: error.to_string(),
                });
                continue;
            }
        };
        let meta = match workspace.metadata(&path) {
            Ok(meta) => meta,
            Err(error) => {
                expanded.skipped.push(Skipped {
                    shown: quote(given),
                    reason: io_failure(workspace, given, &path, error).to_string(),
                });
                continue;
            }
        };
        if meta.is_dir() {
            expanded.walked = true;
            let everything = glob::compile("*").map_err(ToolError::Failed)?;
            let hits = glob::collect(workspace, &path, &path, &everything, cancel)?.hits;
            if hits.is_empty() {
                expanded.skipped.push(Skipped {
                    shown: quote(given),
                    reason: "the folder has no files to read (files excluded by \
                             .gitignore/.ignore and hidden files are left out)"
                        .to_string(),
                });
            }
            expanded.found(hits);
        } else {
            expanded.candidates.insert(path.into_os_string(), true);
        }
    }
    Ok(expanded)
}

/// The `exclude` patterns; a file is left out when a pattern matches it
/// or any folder above it.
struct Excludes(Vec<(String, Matcher)>);

impl Excludes {
    fn compile(patterns: &[String], root: &Path) -> Result<Self, String> {
        patterns
            .iter()
            .enumerate()
            .map(|(i, pattern)| {
                let relative = glob::relative_pattern(pattern, root).map_err(|_| {
                    format!(
                        "exclude[{i}]: {} is an absolute pattern outside the workspace; give \
                         one relative to the workspace root, e.g. `**/*.test.ts`",
                        quote(pattern.trim())
                    )
                })?;
                let matcher = glob::compile(&relative)
                    .map_err(|e| e.replacen("pattern:", &format!("exclude[{i}]:"), 1))?;
                Ok((pattern.trim().to_string(), matcher))
            })
            .collect::<Result<_, String>>()
            .map(Excludes)
    }

    /// The pattern that leaves `path` out, if any.
    fn matching(&self, path: &Path, root: &Path) -> Option<&str> {
        let inside = path.strip_prefix(root).ok()?;
        self.0.iter().find_map(|(pattern, matcher)| {
            path.ancestors()
                .take(inside.components().count())
                .any(|at| matcher.is_match(at, root))
                .then_some(pattern.as_str())
        })
    }
}

/// What [`examine`] decided: the file's text, or why it is not read.
enum Verdict {
    Read(String),
    Skip(String),
}

/// Opens `path` through the workspace (so a file reached by a walk is
/// confined however the tree changed since it was listed) and decides.
fn examine(workspace: &Workspace, path: &Path, max_file_bytes: u64) -> Verdict {
    let mut file = match workspace.open_file(path) {
        Ok(file) => file,
        Err(error) => {
            return Verdict::Skip(match NotRegular::of(&error) {
                Some(special) => format!("{special} (a device, socket or pipe is never read)"),
                None => format!("cannot be read: {error}"),
            });
        }
    };
    let size = match file.metadata() {
        Ok(meta) => meta.len(),
        Err(error) => return Verdict::Skip(format!("cannot be read: {error}")),
    };
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    if let Err(error) = (&mut file).take(SNIFF_BYTES as u64).read_to_end(&mut head) {
        return Verdict::Skip(format!("cannot be read: {error}"));
    }
    let whole = head.len() < SNIFF_BYTES;
    match sniff::classify(path, &head, whole) {
        Kind::Image(mime) => {
            let dimensions = sniff::image_dimensions(&head)
                .map(|(w, h)| format!(", {w}x{h}"))
                .unwrap_or_default();
            return Verdict::Skip(format!(
                "an image ({mime}{dimensions}, {}); read_file returns it as an image",
                human_size(size)
            ));
        }
        Kind::Pdf => {
            return Verdict::Skip(format!(
                "a PDF ({}); read_file describes it and says how to get its text",
                human_size(size)
            ));
        }
        Kind::Binary { what, nul_at } => {
            let what = what.map(|w| format!(", {w}")).unwrap_or_default();
            return Verdict::Skip(format!(
                "binary ({}{what}; a NUL byte at offset {nul_at})",
                human_size(size)
            ));
        }
        Kind::NotUtf8 { what, bad_at } => {
            let what = what.map(|w| format!(", {w}")).unwrap_or_default();
            return Verdict::Skip(format!(
                "not UTF-8 text ({}{what}; the byte at offset {bad_at} is not valid UTF-8)",
                human_size(size)
            ));
        }
        Kind::Text => {}
    }
    if size > max_file_bytes {
        return Verdict::Skip(format!(
            "too large ({}, over the {} limit per file); read it in parts with read_file \
             (`offset`, `limit`) or search it with grep",
            human_size(size),
            human_size(max_file_bytes)
        ));
    }
    // The file may have grown since it was measured: never take more than
    // the limit.
    let mut bytes = head;
    if !whole
        && let Err(error) = file
            .take(max_file_bytes + 1 - bytes.len() as u64)
            .read_to_end(&mut bytes)
    {
        return Verdict::Skip(format!("cannot be read: {error}"));
    }
    if bytes.len() as u64 > max_file_bytes {
        return Verdict::Skip(format!(
            "too large (over the {} limit per file; it grew while being read)",
            human_size(max_file_bytes)
        ));
    }
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
    match std::str::from_utf8(body) {
        Ok(text) => Verdict::Read(text.to_string()),
        Err(error) => Verdict::Skip(format!(
            "not UTF-8 text ({}; the byte at offset {} is not valid UTF-8)",
            human_size(size),
            error.valid_up_to()
        )),
    }
}

/// One file's section: its header and its text.
fn section(shown: &str, text: &str) -> String {
    let lines = text.lines().count() as u64;
    let count = if text.is_empty() {
        "empty".to_string()
    } else {
        counted(lines, "line", "lines")
    };
    let newline = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("--- {shown} ({count}) ---\n{text}{newline}\n")
}

fn read(
    workspace: &Workspace,
    params: &ReadManyFilesParams,
    limits: ReadManyFiles,
    cancel: &CancellationToken,
) -> Result<ToolResult, ToolError> {
    let root = workspace.root();
    let excludes = Excludes::compile(&params.exclude, root).map_err(ToolError::Failed)?;
    let entries: Vec<String> = params
        .paths
        .iter()
        .chain(&params.include)
        .cloned()
        .collect();
    let Expanded {
        candidates,
        mut skipped,
        walked,
    } = expand(workspace, &entries, cancel)?;

    let mut excluded = 0u64;
    let mut body = String::new();
    let mut read_files = 0u64;
    let mut read_bytes = 0u64;
    let mut unread: Vec<String> = Vec::new();
    let mut matched = 0u64;
    for (path, named) in candidates {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let path = PathBuf::from(path);
        let shown = workspace.display(&path);
        if let Some(pattern) = excludes.matching(&path, root) {
            if named {
                skipped.push(Skipped {
                    shown: quote(&shown),
                    reason: format!("left out by `exclude` pattern {}", quote(pattern)),
                });
            } else {
                excluded += 1;
            }
            continue;
        }
        matched += 1;
        if !unread.is_empty() {
            unread.push(shown);
            continue;
        }
        match examine(workspace, &path, limits.max_file_bytes) {
            Verdict::Skip(reason) => skipped.push(Skipped {
                shown: quote(&shown),
                reason,
            }),
            Verdict::Read(text) => {
                let section = section(&shown, &text);
                if body.len() + section.len() > limits.max_total_bytes as usize {
                    unread.push(shown);
                    continue;
                }
                body.push_str(&section);
                read_files += 1;
                read_bytes += text.len() as u64;
            }
        }
    }

    let mut summary = format!(
        "Read {} ({})",
        counted(read_files, "file", "files"),
        human_size(read_bytes)
    );
    if !unread.is_empty() {
        summary.push_str(&format!(
            "; stopped at the limit of {} of text per call, {} more {} not read (listed at the \
             end)",
            human_size(limits.max_total_bytes),
            thousands(unread.len() as u64),
            if unread.len() == 1 { "file" } else { "files" }
        ));
    }
    if !skipped.is_empty() {
        summary.push_str(&format!(
            "; {} skipped (listed at the end)",
            thousands(skipped.len() as u64)
        ));
    }
    summary.push('.');
    if matched == 0 && skipped.is_empty() {
        summary.push_str(&format!(
            " Every matching file was left out by `exclude` ({}).",
            counted(excluded, "file", "files")
        ));
    }

    let mut notes = String::new();
    if !skipped.is_empty() {
        notes.push_str("Skipped:\n");
        for skip in skipped.iter().take(SKIPPED_LISTED) {
            notes.push_str(&format!("- {}: {}\n", skip.shown, skip.reason));
        }
        if skipped.len() > SKIPPED_LISTED {
            notes.push_str(&format!(
                "- and {} more\n",
                thousands((skipped.len() - SKIPPED_LISTED) as u64)
            ));
        }
    }
    if !unread.is_empty() {
        let mut names: Vec<String> = unread
            .iter()
            .take(UNREAD_LISTED)
            .map(|s| quote(s))
            .collect();
        if unread.len() > UNREAD_LISTED {
            names.push(format!(
                "and {} more",
                thousands((unread.len() - UNREAD_LISTED) as u64)
            ));
        }
        notes.push_str(&format!(
            "Stopped after {} / {} (the limit per call); {} more matched and {} not read: {}. \
             Narrow `paths` (or add `exclude`), or read these in another call.\n",
            counted(read_files, "file", "files"),
            human_size(limits.max_total_bytes),
            thousands(unread.len() as u64),
            if unread.len() == 1 { "was" } else { "were" },
            names.join(", ")
        ));
    }
    if excluded > 0 && matched > 0 {
        notes.push_str(&format!(
            "{} left out by `exclude`.\n",
            counted(excluded, "file was", "files were")
        ));
    }
    if walked {
        notes.push_str(
            "Globs and folders leave out files excluded by .gitignore/.ignore and hidden files; \
             name such a file in `paths` to read it.\n",
        );
    }

    let mut text = format!("{summary}\n\n{body}");
    if read_files > 0 {
        text.push_str("--- end of files ---\n");
    }
    if !notes.is_empty() {
        text.push('\n');
        text.push_str(&notes);
    }
    let mut markdown = format!("{summary}\n\n");
    if read_files > 0 {
        markdown.push_str(&fenced("", &body));
        markdown.push('\n');
    }
    markdown.push_str(&notes);
    Ok(ToolResult::new(
        vec![Part::text(text)],
        Display::Markdown { markdown },
    ))
}

#[gantry_core::async_trait]
impl Tool for ReadManyFiles {
    type Params = ReadManyFilesParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "read_many_files",
            "Read many files",
            Tier::Read,
            format!(
                "Reads several text files in one call and returns them concatenated in path \
                 order, each after a header line `--- path (N lines) ---`. The text has no line \
                 numbers (read_file gives numbered lines to cite or edit). `paths` takes files, \
                 folders (everything under them) and glob patterns such as `src/**/*.ts` or \
                 `*.md`; each file is read once. Globs and folders leave out files excluded by \
                 .gitignore/.ignore and hidden files; a file named explicitly is read anyway. \
                 Binary files, images, PDFs and files over {} are not read, and the result \
                 lists every file it skipped with the reason. At most {} of text per call: when \
                 more matches, it stops and names the files it did not read. Use it to load a \
                 module, its tests or a project's configuration at once.",
                human_size(self.max_file_bytes),
                human_size(self.max_total_bytes)
            ),
        )
    }

    fn validate(&self, params: &ReadManyFilesParams, run: &Run) -> Result<(), String> {
        let root = run.workspace().root();
        let named = [("paths", &params.paths), ("include", &params.include)];
        for (name, entries) in named {
            for (i, entry) in entries.iter().enumerate() {
                let given = entry.trim();
                if given.is_empty() {
                    return Err(format!(
                        "{name}[{i}]: empty; give a path such as `src/main.rs` or a glob such as \
                         `src/**/*.rs`"
                    ));
                }
                let exists = run
                    .workspace()
                    .resolve(given)
                    .is_ok_and(|path| run.workspace().symlink_metadata(&path).is_ok());
                // An absolute pattern outside the workspace is reported
                // as skipped, with the other entries still read.
                if looks_like_glob(given)
                    && !exists
                    && let Ok(pattern) = glob::relative_pattern(given, root)
                    && let Err(error) = glob::compile(&pattern)
                {
                    return Err(error.replacen("pattern:", &format!("{name}[{i}]:"), 1));
                }
            }
        }
        Excludes::compile(&params.exclude, root).map(|_| ())
    }

    fn describe(&self, params: &ReadManyFilesParams) -> String {
        let entries: Vec<String> = params
            .paths
            .iter()
            .chain(&params.include)
            .map(|p| quote(p))
            .collect();
        let mut text = format!("read {}", entries.join(", "));
        if !params.exclude.is_empty() {
            let excludes: Vec<String> = params.exclude.iter().map(|p| quote(p)).collect();
            text.push_str(&format!(" except {}", excludes.join(", ")));
        }
        text
    }

    async fn execute(
        &self,
        params: ReadManyFilesParams,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let workspace = ctx.run.workspace().clone();
        let cancel = ctx.cancel.clone();
        let limits = *self;
        blocking(move || read(&workspace, &params, limits, &cancel)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_are_walked_from_their_literal_folder() {
        assert_eq!(literal_prefix("*.md"), "");
        assert_eq!(literal_prefix("src/*.rs"), "src");
        assert_eq!(literal_prefix("src/a/**/*.rs"), "src/a");
        assert_eq!(literal_prefix("**/x/*.rs"), "");
        assert_eq!(literal_prefix("app/[id]/page.tsx"), "app");
    }

    #[test]
    fn sections_count_lines_and_end_with_a_newline() {
        assert_eq!(
            section("a.txt", "x\ny\n"),
            "--- a.txt (2 lines) ---\nx\ny\n\n"
        );
        assert_eq!(section("b.txt", "x"), "--- b.txt (1 line) ---\nx\n\n");
        assert_eq!(section("c.txt", ""), "--- c.txt (empty) ---\n\n");
    }
}
