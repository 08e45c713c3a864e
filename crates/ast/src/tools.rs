//! The three tools: `ast_grep` (read), `ast_edit` and `resolve` (write).

use std::fmt::Write as _;
use std::sync::Arc;

use ast_grep_core::replacer::TemplateFix;
use ast_grep_language::SupportLang;
use gantry_core::text::counted;
use gantry_core::write::{Change, ChangeSet, WriteError};
use gantry_core::{
    Confirmation, Prepared, Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec,
    async_trait,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::AstState;
use crate::lang;
use crate::pattern::{Query, metavar_tokens};
use crate::search::{self, Candidate, Outcome, shorten};
use crate::staged::{Resolution, StagedFile};

/// Default `max_results` of `ast_grep`.
const DEFAULT_MAX_RESULTS: usize = 50;
/// Longest captured text shown.
const CAPTURE_CHARS: usize = 80;
/// Files named in a list before "and N more".
const NAMED_FILES: usize = 10;
/// Diff lines shown in an `ast_edit` preview.
const DIFF_LINES: usize = 400;
/// How long a staged diff may look for the smallest edit before settling
/// for a larger one; the same bound as `edit`'s diffs, so the two share
/// one instance of the diff code.
const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// `ast_grep`: find code by its syntax tree.
pub struct AstGrep {
    pub(crate) state: Arc<AstState>,
}

/// Parameters of `ast_grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AstGrepParams {
    /// A code fragment in the target language, with metavariables:
    /// `$NAME` matches one node, `$$$NAME` a run of sibling nodes (call
    /// arguments, statements in a block), `$_` anything without binding.
    /// A name used twice must match the same code. Examples:
    /// `$X.unwrap()`, `foo($$$ARGS)`, `if ($C) { $$$BODY }`,
    /// `setState(() { $$$ })`.
    pub pattern: String,
    /// File or folder to search, workspace-relative or absolute (default:
    /// the whole workspace). `.gitignore` is respected.
    pub path: Option<String>,
    /// Grammar id: bash, c, cpp, csharp, dart, go, java, javascript,
    /// kotlin, lua, php, python, ruby, rust, swift, typescript, tsx.
    /// Optional when `path` is a file, or a folder holding one of these
    /// languages.
    pub language: Option<String>,
    /// Most matches to show (default 50); the search stops early and says
    /// "50 of at least N".
    #[schemars(range(min = 1))]
    pub max_results: Option<usize>,
}

/// `ast_edit`: stage a structural rewrite.
pub struct AstEdit {
    pub(crate) state: Arc<AstState>,
}

/// Parameters of `ast_edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AstEditParams {
    /// What to rewrite: a code fragment with metavariables, exactly as for
    /// ast_grep (e.g. `$X.unwrap()`).
    pub pattern: String,
    /// The replacement, with the pattern's metavariables substituted back
    /// in (e.g. `$X.expect("checked above")`). Only metavariables the
    /// pattern binds may be used.
    pub rewrite: String,
    /// File or folder to rewrite in (default: the whole workspace).
    pub path: Option<String>,
    /// Grammar id, as for ast_grep; optional when it can be inferred.
    pub language: Option<String>,
}

/// `resolve`: apply or drop a staged edit.
pub struct Resolve {
    pub(crate) state: Arc<AstState>,
}

/// What to do with a staged edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Write it: all files or none.
    Accept,
    /// Drop it; nothing is written.
    Discard,
}

/// Parameters of `resolve`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveParams {
    /// The id ast_edit returned, e.g. `edit_1`.
    pub edit_id: String,
    /// `accept` to write the staged change (refused as a whole if any of
    /// its files changed since it was staged), `discard` to drop it.
    pub action: Action,
}

/// Which files to search, in which language: shared by ast_grep and
/// ast_edit.
struct Target {
    lang: SupportLang,
    candidates: Vec<Candidate>,
    shown: String,
}

/// Walks `path` and settles the language: the one given, the file's, or
/// the only one the folder holds.
fn target(run: &Run, path: Option<&str>, language: Option<&str>) -> Result<Target, ToolError> {
    let given = path.unwrap_or(".");
    let root = run.workspace().resolve(given)?;
    let shown = run.workspace().display(&root);
    let lang = language
        .map(lang::parse)
        .transpose()
        .map_err(ToolError::Failed)?;
    let mut candidates = match search::walk(run.workspace(), &root) {
        Ok(candidates) => candidates,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ToolError::failed(format!(
                "path: `{given}` does not exist in the workspace"
            )));
        }
        Err(e) => {
            return Err(ToolError::failed(format!(
                "path: cannot read `{given}`: {e}"
            )));
        }
    };
    let is_file = root.is_file();
    let lang = match lang {
        Some(lang) => lang,
        None if is_file => lang::of_path(&root).ok_or_else(|| {
            ToolError::failed(format!(
                "language: cannot tell the language of `{shown}` from its extension; give `language` (one of {})",
                lang::ids()
            ))
        })?,
        None => {
            let found = search::languages(&candidates);
            match found.len() {
                1 => candidates[0].lang,
                0 => {
                    return Err(ToolError::failed(format!(
                        "language: `{shown}` holds no files of a supported language ({}); check `path`",
                        lang::ids()
                    )));
                }
                _ => {
                    let listed: Vec<String> = found
                        .iter()
                        .map(|(id, count)| format!("{id} ({count} files)"))
                        .collect();
                    return Err(ToolError::failed(format!(
                        "language: `{shown}` holds files of several languages: {}; give `language` (or a narrower `path`)",
                        listed.join(", ")
                    )));
                }
            }
        }
    };
    if is_file {
        // A file is searched with the language asked for, whatever its
        // extension says.
        if let Ok(metadata) = run.workspace().metadata(&root) {
            candidates = vec![Candidate {
                path: root.clone(),
                lang,
                stamp: crate::cache::Stamp {
                    modified: metadata.modified().ok(),
                    len: metadata.len(),
                    lang,
                },
            }];
        }
    } else {
        candidates.retain(|c| c.lang == lang);
    }
    Ok(Target {
        lang,
        candidates,
        shown,
    })
}

fn compile(pattern: &str, lang: SupportLang) -> Result<Query, ToolError> {
    Query::compile(pattern, lang).map_err(|e| ToolError::Failed(e.0))
}

/// One search (or the search of an edit) as asked.
struct Request {
    path: Option<String>,
    language: Option<String>,
    pattern: String,
    rewrite: Option<String>,
    limit: Option<usize>,
}

/// Checks the parameters ast_grep and ast_edit share, in this order: a
/// pattern, `max_results` (ast_grep only; `None` for ast_edit) and the
/// language. One place, so both tools refuse the same input the same way.
fn validate_search(
    pattern: &str,
    language: Option<&str>,
    max_results: Option<usize>,
) -> Result<(), String> {
    if pattern.trim().is_empty() {
        return Err("pattern: expected a code fragment such as `$X.unwrap()`".into());
    }
    if max_results == Some(0) {
        return Err("max_results: expected at least 1".into());
    }
    if let Some(language) = language {
        lang::parse(language)?;
    }
    Ok(())
}

/// Runs the blocking walk, compile and search on the blocking pool.
async fn search_blocking(
    run: Run,
    cancel: gantry_core::CancellationToken,
    state: &Arc<AstState>,
    request: Request,
) -> Result<(Target, Query, Outcome, usize), ToolError> {
    let state = state.clone();
    let task = tokio::task::spawn_blocking(move || {
        let target = target(&run, request.path.as_deref(), request.language.as_deref())?;
        let query = compile(&request.pattern, target.lang)?;
        let fix = match &request.rewrite {
            Some(rewrite) => Some(validate_rewrite(rewrite, &query)?),
            None => None,
        };
        let outcome = search::run(
            run.workspace(),
            &target.candidates,
            &query,
            &state.cache,
            fix.as_ref(),
            request.limit,
            &cancel,
        );
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let files = target.candidates.len();
        Ok((target, query, outcome, files))
    });
    task.await
        .map_err(|e| ToolError::failed(format!("the search failed: {e}")))?
}

/// Refuses a rewrite that uses a metavariable the pattern does not bind
/// (it would be substituted by nothing), or uses `$X` for a `$$$X`.
fn validate_rewrite(rewrite: &str, query: &Query) -> Result<TemplateFix, ToolError> {
    let bound = query.bound();
    let listed = || {
        if bound.is_empty() {
            "the pattern binds none".to_string()
        } else {
            let names: Vec<String> = bound
                .iter()
                .map(|(name, multi)| format!("{}{name}", if *multi { "$$$" } else { "$" }))
                .collect();
            format!("the pattern binds {}", names.join(", "))
        }
    };
    for (written, name, _) in metavar_tokens(rewrite, '$') {
        if name.is_empty() || name == "_" {
            continue;
        }
        let multi = written.starts_with("$$$");
        match bound.get(&name) {
            None => {
                return Err(ToolError::failed(format!(
                    "rewrite: `{written}` is not bound by the pattern, so it would be replaced by nothing; {}",
                    listed()
                )));
            }
            Some(&bound_multi) if bound_multi != multi => {
                let right = if bound_multi { "$$$" } else { "$" };
                return Err(ToolError::failed(format!(
                    "rewrite: `{written}` must be written `{right}{name}`, as in the pattern; {}",
                    listed()
                )));
            }
            Some(_) => {}
        }
    }
    TemplateFix::try_new(rewrite, &query.lang)
        .map_err(|e| ToolError::failed(format!("rewrite: {e}")))
}

#[async_trait]
impl Tool for AstGrep {
    type Params = AstGrepParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "ast_grep",
            "Structural search",
            Tier::Read,
            "Find code by its syntax tree, not its text: the pattern is parsed by the language's grammar, \
             so it matches however the code is spaced, wrapped or commented, and never inside strings or \
             comments. `$X` matches one node, `$$$X` a run of nodes, a repeated name the same code. \
             Returns matches grouped by file with path:line:col, the matched text and the captured \
             metavariables. A pattern that cannot be parsed is an error saying why; zero matches say what \
             the pattern compiled to and how many files were searched.",
        )
    }

    fn validate(&self, params: &AstGrepParams, _: &Run) -> Result<(), String> {
        validate_search(
            &params.pattern,
            params.language.as_deref(),
            params.max_results,
        )
    }

    fn describe(&self, params: &AstGrepParams) -> String {
        format!(
            "structural search for `{}` in {}",
            params.pattern,
            params.path.as_deref().unwrap_or("the workspace")
        )
    }

    async fn execute(
        &self,
        params: AstGrepParams,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let max = params.max_results.unwrap_or(DEFAULT_MAX_RESULTS);
        let (target, query, outcome, files) = search_blocking(
            ctx.run.clone(),
            ctx.cancel.clone(),
            &self.state,
            Request {
                path: params.path,
                language: params.language,
                pattern: params.pattern,
                rewrite: None,
                limit: Some(max),
            },
        )
        .await?;
        Ok(ToolResult::text(render_search(
            &ctx.run, &target, &query, &outcome, files, max,
        )))
    }
}

/// The text of an `ast_grep` result.
fn render_search(
    run: &Run,
    target: &Target,
    query: &Query,
    outcome: &Outcome,
    files: usize,
    max: usize,
) -> String {
    let ws = run.workspace();
    let lang = lang::id(target.lang);
    let mut out = notes(query);
    if outcome.total == 0 {
        let _ = writeln!(
            out,
            "No matches for `{}` in {}. The pattern compiled to {}; searched {}, \
             {} of which contained the pattern's literal text and were parsed. If the code should be \
             there, the pattern's shape differs from it (try a smaller fragment, or `$X` for a part); \
             otherwise it is truly absent.",
            query.source,
            target.shown,
            query.describe(),
            counted(
                files as u64,
                &format!("{lang} file"),
                &format!("{lang} files")
            ),
            outcome.parsed,
        );
    } else {
        let shown_total = outcome.total.min(max);
        let count = if outcome.stopped {
            format!("{shown_total} of at least {} matches", outcome.total)
        } else {
            format!(
                "{} match{}",
                outcome.total,
                if outcome.total == 1 { "" } else { "es" }
            )
        };
        let _ = writeln!(
            out,
            "{count} for `{}` ({lang}, compiled to {}):",
            query.source,
            query.describe()
        );
        let mut left = max;
        for file in &outcome.files {
            if left == 0 {
                break;
            }
            let display = ws.display(&file.path);
            let _ = writeln!(out, "\n{display}");
            for located in file.matches.iter().take(left) {
                let _ = writeln!(
                    out,
                    "  {display}:{}:{}: {}",
                    located.line, located.column, located.snippet
                );
                for (name, text) in &located.found.captures {
                    let _ = writeln!(out, "      {name} = {}", shorten(text, CAPTURE_CHARS));
                }
            }
            left = left.saturating_sub(file.matches.len());
        }
        if outcome.stopped {
            let _ = writeln!(
                out,
                "\nShowing {shown_total} of at least {} matches: the search stopped early at max_results={max}. \
                 Narrow `path` or raise `max_results` to see more.",
                outcome.total
            );
        }
        let _ = writeln!(
            out,
            "\nSearched {} of {}; {} contained the pattern's literal text and were parsed.",
            outcome.searched,
            counted(
                files as u64,
                &format!("{lang} file"),
                &format!("{lang} files")
            ),
            outcome.parsed
        );
    }
    render_problems(&mut out, run, outcome);
    out.trim_end().to_string()
}

/// The start of an ast_grep or ast_edit result: the notes on how the
/// pattern was read, one `Note:` line each.
fn notes(query: &Query) -> String {
    let mut out = String::new();
    for note in &query.notes {
        let _ = writeln!(out, "Note: {note}");
    }
    out
}

/// Names the files that failed to parse or could not be read.
fn render_problems(out: &mut String, run: &Run, outcome: &Outcome) {
    let ws = run.workspace();
    if !outcome.with_errors.is_empty() {
        let _ = writeln!(
            out,
            "{} had syntax errors (searched anyway; code next to an error may not match): {}",
            counted(
                outcome.with_errors.len() as u64,
                "parsed file",
                "parsed files"
            ),
            name_files(outcome.with_errors.iter().map(|p| ws.display(p)))
        );
    }
    if !outcome.unreadable.is_empty() {
        let _ = writeln!(
            out,
            "{} could not be searched: {}",
            counted(outcome.unreadable.len() as u64, "file", "files"),
            name_files(
                outcome
                    .unreadable
                    .iter()
                    .map(|(p, why)| format!("{} ({why})", ws.display(p)))
            )
        );
    }
}

fn name_files(names: impl Iterator<Item = String>) -> String {
    let names: Vec<String> = names.collect();
    let mut listed = names[..names.len().min(NAMED_FILES)].join(", ");
    if names.len() > NAMED_FILES {
        let _ = write!(listed, " and {} more", names.len() - NAMED_FILES);
    }
    listed
}

#[async_trait]
impl Tool for AstEdit {
    type Params = AstEditParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "ast_edit",
            "Structural rewrite",
            Tier::Write,
            "Stage a structural rewrite: every match of `pattern` (as in ast_grep) is replaced by \
             `rewrite` with the metavariables substituted. Nothing is written: the result shows the count, \
             the files and a diff, and an edit_id to pass to resolve (accept writes all files or none; \
             discard drops it). Where matches nest, the outermost is rewritten.",
        )
    }

    fn validate(&self, params: &AstEditParams, _: &Run) -> Result<(), String> {
        validate_search(&params.pattern, params.language.as_deref(), None)
    }

    fn describe(&self, params: &AstEditParams) -> String {
        format!(
            "stage rewriting `{}` to `{}` in {}",
            params.pattern,
            params.rewrite,
            params.path.as_deref().unwrap_or("the workspace")
        )
    }

    async fn execute(
        &self,
        params: AstEditParams,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let rewrite = params.rewrite.clone();
        let (target, query, outcome, files) = search_blocking(
            ctx.run.clone(),
            ctx.cancel.clone(),
            &self.state,
            Request {
                path: params.path,
                language: params.language,
                pattern: params.pattern,
                rewrite: Some(params.rewrite),
                limit: None,
            },
        )
        .await?;
        let ws = ctx.run.workspace();
        let mut staged_files = Vec::new();
        let mut nested = 0;
        let mut diff = String::new();
        for file in &outcome.files {
            let before = file.source.as_deref().unwrap_or_default();
            let mut after = String::with_capacity(before.len());
            let mut copied = 0;
            let mut count = 0;
            for found in file.matches.iter().map(|m| &m.found) {
                if found.range.start < copied {
                    nested += 1;
                    continue;
                }
                after.push_str(&before[copied..found.range.start]);
                after.push_str(found.replacement.as_deref().unwrap_or_default());
                copied = found.range.end;
                count += 1;
            }
            after.push_str(&before[copied..]);
            if after == before {
                continue;
            }
            let display = ws.display(&file.path);
            diff.push_str(
                &similar::TextDiff::configure()
                    .timeout(DIFF_TIMEOUT)
                    .diff_lines(before, &after)
                    .unified_diff()
                    .context_radius(2)
                    .header(&format!("a/{display}"), &format!("b/{display}"))
                    .to_string(),
            );
            staged_files.push(StagedFile {
                path: file.path.clone(),
                display,
                before: before.to_string(),
                after,
                count,
            });
        }
        let mut out = notes(&query);
        if staged_files.is_empty() {
            let _ = writeln!(
                out,
                "Nothing staged: {} for `{}` in {}. The pattern compiled to {}; searched {}, \
                 {} of which contained its literal text and were parsed.",
                if outcome.total == 0 {
                    "no matches".to_string()
                } else {
                    format!("the {} matches already read as `{rewrite}`", outcome.total)
                },
                query.source,
                target.shown,
                query.describe(),
                counted(
                    files as u64,
                    &format!("{} file", lang::id(target.lang)),
                    &format!("{} files", lang::id(target.lang))
                ),
                outcome.parsed,
            );
            render_problems(&mut out, &ctx.run, &outcome);
            return Ok(ToolResult::text(out.trim_end().to_string()));
        }
        let count: usize = staged_files.iter().map(|f| f.count).sum();
        let file_list: Vec<String> = staged_files
            .iter()
            .map(|f| format!("{} ({})", f.display, f.count))
            .collect();
        let file_count = staged_files.len();
        let id = lock_staged(&self.state).stage(staged_files, diff.clone());
        let _ = writeln!(
            out,
            "(proposed) {} in {}: `{}` → `{rewrite}`. Nothing is written yet: \
             call resolve with edit_id \"{id}\" and action \"accept\" to write all of it, or \"discard\" to drop it.",
            counted(count as u64, "replacement", "replacements"),
            counted(file_count as u64, "file", "files"),
            query.source,
        );
        let _ = writeln!(out, "Files: {}", file_list.join(", "));
        if nested > 0 {
            let _ = writeln!(
                out,
                "{nested} match{} nested inside another match {} left as written (the outermost match is \
                 rewritten); after accepting, run ast_edit again to reach {}.",
                if nested == 1 { "" } else { "es" },
                if nested == 1 { "was" } else { "were" },
                if nested == 1 { "it" } else { "them" },
            );
        }
        render_problems(&mut out, &ctx.run, &outcome);
        let _ = write!(out, "\n{}", cap_lines(&diff, DIFF_LINES));
        Ok(ToolResult::text(out.trim_end().to_string()))
    }
}

/// At most `max` lines of `text`, saying how many were cut.
fn cap_lines(text: &str, max: usize) -> String {
    let total = text.lines().count();
    if total <= max {
        return text.to_string();
    }
    let mut out: String = text.lines().take(max).collect::<Vec<_>>().join("\n");
    let _ = write!(
        out,
        "\n… diff preview cut at {max} of {total} lines; the staged edit holds all of it"
    );
    out
}

fn lock_staged(state: &AstState) -> std::sync::MutexGuard<'_, crate::staged::Staged> {
    state
        .staged
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[async_trait]
impl Tool for Resolve {
    type Params = ResolveParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "resolve",
            "Resolve staged edit",
            Tier::Write,
            "Accept or discard an edit staged by ast_edit. accept writes every file of the edit or none: \
             if any file changed since the edit was staged, nothing is written and the changed files are \
             named. discard drops the edit without writing.",
        )
    }

    fn describe(&self, params: &ResolveParams) -> String {
        match params.action {
            Action::Accept => format!("apply staged edit {}", params.edit_id),
            Action::Discard => format!("discard staged edit {}", params.edit_id),
        }
    }

    async fn confirmation(
        &self,
        params: &ResolveParams,
        _run: &Run,
    ) -> Result<Option<Prepared>, ToolError> {
        if params.action == Action::Discard {
            return Ok(None);
        }
        let staged = lock_staged(&self.state);
        let edit = staged.get(&params.edit_id).map_err(ToolError::Failed)?;
        let files: Vec<&str> = edit.files.iter().map(|f| f.display.as_str()).collect();
        Ok(Some(Prepared::show(Confirmation {
            summary: format!(
                "apply {}: {} replacements in {}",
                edit.id,
                edit.count(),
                files.join(", ")
            ),
            details: Some(edit.diff.clone()),
        })))
    }

    async fn execute(
        &self,
        params: ResolveParams,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let id = params.edit_id.trim();
        match params.action {
            Action::Discard => {
                let edit = lock_staged(&self.state)
                    .take(id, Resolution::Discarded)
                    .map_err(ToolError::Failed)?;
                Ok(ToolResult::text(format!(
                    "Discarded {id}: {} replacements in {} files dropped; nothing was written.",
                    edit.count(),
                    edit.files.len()
                )))
            }
            Action::Accept => {
                let edit = lock_staged(&self.state)
                    .take(id, Resolution::Accepted)
                    .map_err(ToolError::Failed)?;
                let ws = ctx.run.workspace();
                let mut changes = ChangeSet::new();
                for file in &edit.files {
                    changes
                        .push(
                            ws,
                            Change::modified(
                                &file.path,
                                file.before.as_bytes(),
                                file.after.as_bytes(),
                            ),
                        )
                        .map_err(|e| rejected(&self.state, id, e))?;
                }
                let applied = ctx
                    .run
                    .apply(changes)
                    .await
                    .map_err(|e| rejected(&self.state, id, e))?;
                let names: Vec<&str> = applied.changes.iter().map(|c| c.display.as_str()).collect();
                let mut result = ToolResult::text(format!(
                    "Applied {id}: {} replacements in {} ({}).",
                    edit.count(),
                    counted(names.len() as u64, "file", "files"),
                    names.join(", ")
                ));
                for note in &applied.notes {
                    result.append_text(note);
                }
                Ok(result)
            }
        }
    }
}

/// An accept that did not go through: the edit is dropped and the model
/// told why and what to do.
fn rejected(state: &AstState, id: &str, error: WriteError) -> ToolError {
    lock_staged(state).reject(id);
    ToolError::failed(format!(
        "{id} was not applied: {error}. The staged edit is dropped; run ast_edit again to stage it against the current files."
    ))
}
