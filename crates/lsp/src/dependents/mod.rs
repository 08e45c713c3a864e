//! The files a write can break: before a change set is applied, the
//! declarations whose lines it touches (the file's document symbols, kept
//! per content so that an edit inside a function body asks the server
//! nothing), then the files that use them: the server's references, or
//! for C and C++, where a change reaches other files only through
//! `#include`, the files that include the changed one, found by a bounded
//! scan of the workspace (clangd's references cover only the open files
//! unless its background index has a compilation database; and a file
//! that only calls a function whose definition changed is not affected). The write hook
//! opens those files before the write, so what they had before is the
//! baseline and only what the write broke there is reported.
//!
//! Above the supervisor (it asks the servers) and below the diagnostics
//! (whose state holds the [`Dependents`] of a run).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gantry_core::write::{ChangeKind, ChangeSet};
use lsp_types::request::References;
use lsp_types::{
    PartialResultParams, ReferenceContext, ReferenceParams, TextDocumentIdentifier,
    TextDocumentPositionParams, WorkDoneProgressParams,
};
use tokio::time::Instant;

use crate::convert::{path_to_uri, uri_to_path};
use crate::paths::{ignored, is_c_family, language_of};
use crate::server::Server;
use crate::supervisor::Supervisor;

mod includes;
mod symbols;

use includes::{IncludeCache, includers};
use symbols::{Decl, SymbolCache, hunks, remap, touched};

/// Declarations one write asks references for at most: a rewrite of a
/// whole file touches all of them, and each is a request.
const MAX_DECLARATIONS: usize = 20;

/// What a run knows to find the files a write can break: the declarations
/// of the files it works on, per content, and what the workspace's C/C++
/// files include, per file version.
pub(crate) struct Dependents {
    supervisor: Supervisor,
    symbols: Arc<SymbolCache>,
    includes: Arc<IncludeCache>,
}

impl Dependents {
    /// Nothing known yet, the servers asked through `supervisor`.
    pub(crate) fn new(supervisor: Supervisor) -> Self {
        Dependents {
            supervisor,
            symbols: Arc::default(),
            includes: Arc::default(),
        }
    }

    /// Fetches, in the background, the declarations of a file as the
    /// server has it (`text`), unless known: a write to it then knows
    /// without asking whether it touches a declaration (an edit inside a
    /// function body asks the server nothing).
    pub(crate) fn learn_symbols(&self, server: &Arc<Server>, path: &Path, text: &str) {
        if !self.supervisor.config().dependents || self.symbols.has(path, text) {
            return;
        }
        let symbols = self.symbols.clone();
        let (server, path, text) = (server.clone(), path.to_path_buf(), text.to_string());
        tokio::spawn(async move {
            let deadline = Instant::now() + server.request_timeout();
            symbols.get(&server, &path, &text, deadline).await;
        });
    }

    /// Forgets what is known of a file (closed, deleted).
    pub(crate) fn forget(&self, path: &Path) {
        self.symbols.forget(path);
    }

    /// Finds the files `changes` can break, within `deadline` and at most
    /// `cap` of them. A modified file whose change touches no declaration
    /// costs no request once its symbols are known.
    pub(crate) async fn find(&self, changes: &ChangeSet, cap: usize, deadline: Instant) -> Found {
        let sup = &self.supervisor;
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
            let Some(decls) = self.symbols.get(&server, source, &text, deadline).await else {
                continue;
            };
            let touched: Vec<&Decl> = if whole {
                decls.iter().filter(|d| d.top).collect()
            } else {
                touched(&decls, &hunks)
            };
            if touched.is_empty() {
                if let Some(new) = &new {
                    self.symbols.set(change.path(), new, remap(&decls, &hunks));
                }
                continue;
            }
            // In C and C++ a change reaches another file only through
            // `#include`: the files that include this one, however they got
            // there, are the ones to check (a caller of a function defined
            // here sees only its declaration in a header). Elsewhere, the
            // server's references.
            let users = if is_c_family(source) {
                let root = sup.workspace().to_path_buf();
                let header = source.to_path_buf();
                let includes = self.includes.clone();
                let scan =
                    tokio::task::spawn_blocking(move || includers(&root, &header, &includes));
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
                let Ok(inside) = path.strip_prefix(sup.workspace()) else {
                    continue;
                };
                if changed.contains(path.as_path())
                    || ignored(inside)
                    || !path.starts_with(&server.root)
                    || !language_of(&path)
                        .is_some_and(|l| server.spec.languages.iter().any(|s| s == l))
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
}

/// What the lookup found for one change set.
#[derive(Default)]
pub(crate) struct Found {
    /// The files to open and check, each with the server that serves it.
    pub files: Vec<(Arc<Server>, PathBuf)>,
    /// How many more there were past the cap.
    pub beyond_cap: usize,
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
