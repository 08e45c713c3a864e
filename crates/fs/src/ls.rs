//! `ls`: one directory's entries, directories first.

use std::cmp::Ordering;
use std::path::Path;

use gantry_core::{Display, Part, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec};
use globset::{Glob, GlobSet, GlobSetBuilder};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::common::{blocking, counted, fenced, human_size, io_failure, quote, tail};

/// Most entries one listing shows; a directory with more says how many it
/// left out rather than flooding the model's context.
pub const MAX_ENTRIES: usize = 1000;

/// Parameters of [`Ls`].
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LsParams {
    /// The directory to list: a path relative to the workspace root (e.g.
    /// `src/tools`) or an absolute path inside the workspace. Defaults to
    /// the workspace root.
    #[serde(default = "dot")]
    pub path: String,
    /// Glob patterns of entries to leave out, e.g. `["*.log", "target",
    /// "node_modules"]`. Each pattern is matched against the entry's name
    /// and against its workspace-relative path. Nothing else is hidden:
    /// dotfiles and files that .gitignore excludes are listed.
    #[serde(default)]
    pub ignore: Vec<String>,
}

fn dot() -> String {
    ".".to_string()
}

/// Lists a directory. Registered for every run: it is the model's first
/// look at an unfamiliar checkout, so it lists everything there is instead
/// of second-guessing what the model wants to see.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ls;

struct Entry {
    name: String,
    is_dir: bool,
    size: Option<u64>,
    link: Option<String>,
}

struct Listing {
    shown: String,
    entries: Vec<Entry>,
    total: usize,
    ignored: usize,
    unreadable: usize,
}

fn compile_ignore(patterns: &[String]) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for (index, pattern) in patterns.iter().enumerate() {
        let glob = Glob::new(pattern.trim_end_matches('/')).map_err(|e| {
            format!(
                "ignore.{index}: invalid glob {}: {}",
                quote(pattern),
                e.kind()
            )
        })?;
        builder.add(glob);
    }
    builder.build().map_err(|e| format!("ignore: {e}"))
}

fn by_kind_then_name(a: &Entry, b: &Entry) -> Ordering {
    b.is_dir
        .cmp(&a.is_dir)
        .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
        .then_with(|| a.name.cmp(&b.name))
}

fn list(
    workspace: &gantry_core::Workspace,
    given: &str,
    dir: &Path,
    ignore: &GlobSet,
) -> Result<Listing, ToolError> {
    let meta = workspace
        .metadata(dir)
        .map_err(|e| io_failure(workspace, given, dir, e))?;
    let shown = workspace.display(dir);
    if !meta.is_dir() {
        return Err(ToolError::failed(format!(
            "{} is a file ({}), not a directory; use read_file to read it",
            quote(&shown),
            human_size(meta.len())
        )));
    }
    let reader = workspace
        .read_dir(dir)
        .map_err(|e| io_failure(workspace, given, dir, e))?;
    let mut entries = Vec::new();
    let mut ignored = 0;
    let mut unreadable = 0;
    for entry in reader {
        let name = entry.name.to_string_lossy().into_owned();
        let path = entry.path;
        let relative = workspace.display(&path);
        if ignore.is_match(&name) || ignore.is_match(&relative) {
            ignored += 1;
            continue;
        }
        let Ok(own_meta) = workspace.symlink_metadata(&path) else {
            unreadable += 1;
            continue;
        };
        let (link, target_meta) = if own_meta.file_type().is_symlink() {
            let target = workspace
                .read_link(&path)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".into());
            match workspace.metadata(&path) {
                Ok(meta) => (Some(target), Some(meta)),
                Err(error)
                    if error
                        .get_ref()
                        .is_some_and(|e| e.is::<gantry_core::PathError>()) =>
                {
                    (
                        Some(format!("{target} (leads outside the workspace)")),
                        None,
                    )
                }
                Err(_) => (Some(format!("{target} (broken link)")), None),
            }
        } else {
            (None, Some(own_meta))
        };
        let is_dir = target_meta.as_ref().is_some_and(|m| m.is_dir());
        let size = target_meta.filter(|m| m.is_file()).map(|m| m.len());
        entries.push(Entry {
            name,
            is_dir,
            size,
            link,
        });
    }
    entries.sort_by(by_kind_then_name);
    let total = entries.len();
    entries.truncate(MAX_ENTRIES);
    Ok(Listing {
        shown,
        entries,
        total,
        ignored,
        unreadable,
    })
}

fn render(listing: &Listing) -> ToolResult {
    let dirs = listing.entries.iter().filter(|e| e.is_dir).count();
    let files = listing.entries.len() - dirs;
    let mut notes = Vec::new();
    if listing.ignored > 0 {
        notes.push(format!(
            "{} left out by `ignore`",
            counted(listing.ignored as u64, "entry", "entries")
        ));
    }
    if listing.unreadable > 0 {
        notes.push(format!(
            "{} could not be read",
            counted(listing.unreadable as u64, "entry", "entries")
        ));
    }
    if listing.total > listing.entries.len() {
        notes.push(format!(
            "{} of {} entries shown; list a sub-directory or use glob to narrow it",
            listing.entries.len(),
            listing.total
        ));
    }
    let notes = tail(&notes, " (", "; ", ")");

    if listing.entries.is_empty() {
        let text = if listing.ignored > 0 {
            format!(
                "Directory {} has no entries left after `ignore`{notes}.",
                quote(&listing.shown)
            )
        } else {
            format!("Directory {} is empty{notes}.", quote(&listing.shown))
        };
        return ToolResult::text(text);
    }

    let mut body = String::new();
    for entry in &listing.entries {
        body.push_str(&entry.name);
        if entry.is_dir {
            body.push('/');
        }
        if let Some(size) = entry.size {
            body.push_str("  ");
            body.push_str(&human_size(size));
        }
        if let Some(target) = &entry.link {
            body.push_str("  -> ");
            body.push_str(target);
        }
        body.push('\n');
    }
    let header = format!(
        "Directory {}: {}, {}{notes}",
        quote(&listing.shown),
        counted(dirs as u64, "directory", "directories"),
        counted(files as u64, "file", "files"),
    );
    ToolResult::new(
        vec![Part::text(format!("{header}:\n{body}"))],
        Display::Markdown {
            markdown: format!("{header}\n\n{}", fenced("", &body)),
        },
    )
}

#[gantry_core::async_trait]
impl Tool for Ls {
    type Params = LsParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "ls",
            "List directory",
            Tier::Read,
            "Lists the entries of one directory: sub-directories first (with a trailing `/`), \
             then files with their sizes, each group sorted by name. Everything is listed, \
             including dotfiles and files .gitignore excludes; use `ignore` to leave entries out. \
             To find files by name across many folders use glob; to read a file use read_file.",
        )
    }

    fn validate(&self, params: &LsParams, _run: &gantry_core::Run) -> Result<(), String> {
        compile_ignore(&params.ignore).map(|_| ())
    }

    fn describe(&self, params: &LsParams) -> String {
        if params.ignore.is_empty() {
            format!("list {}", quote(&params.path))
        } else {
            format!(
                "list {} without {}",
                quote(&params.path),
                params.ignore.join(", ")
            )
        }
    }

    async fn execute(&self, params: LsParams, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let workspace = ctx.run.workspace().clone();
        let ignore = compile_ignore(&params.ignore).map_err(ToolError::Failed)?;
        // Resolving touches the disk (symlinks are followed), so it runs
        // off the runtime too.
        let listing = blocking(move || {
            let dir = workspace.resolve(&params.path)?;
            list(&workspace, &params.path, &dir, &ignore)
        })
        .await?;
        Ok(render(&listing))
    }
}
