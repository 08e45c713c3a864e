//! Fetching a file's diagnostics from its server: pulled where the server
//! offers it, else the publish for the version it has; and, after a write,
//! syncing the written files and gathering what comes back within the
//! write's deadline.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lsp_types::request::DocumentDiagnosticRequest;
use lsp_types::{
    Diagnostic, DocumentDiagnosticParams, DocumentDiagnosticReport, DocumentDiagnosticReportResult,
    PartialResultParams, TextDocumentIdentifier, WorkDoneProgressParams,
};
use tokio::time::Instant;

use crate::convert::path_to_uri;
use crate::server::Server;

/// At most this long without a new publish ends the wait for follow-ups.
const QUIET_WINDOW: Duration = Duration::from_millis(150);

/// Current diagnostics of `path` from `server`: pulled where offered,
/// else the publish for the version the server has, waited for until
/// `deadline`. `None` when nothing came in time.
pub(crate) async fn current(
    server: &Server,
    path: &Path,
    deadline: Instant,
) -> Option<Vec<Diagnostic>> {
    if server.pulls_diagnostics() {
        return pull(server, path, deadline).await;
    }
    let version = server.version(path).await;
    let mut events = server.observed().events();
    loop {
        if let Some(published) = server.observed().published(path)
            && (published.version.is_none() || published.version >= version)
        {
            return Some(published.items);
        }
        if tokio::time::timeout_at(deadline, events.changed())
            .await
            .map_or(true, |r| r.is_err())
        {
            return None;
        }
    }
}

pub(super) async fn pull(
    server: &Server,
    path: &Path,
    deadline: Instant,
) -> Option<Vec<Diagnostic>> {
    let params = DocumentDiagnosticParams {
        text_document: TextDocumentIdentifier::new(path_to_uri(path)),
        identifier: None,
        previous_result_id: None,
        work_done_progress_params: WorkDoneProgressParams::default(),
        partial_result_params: PartialResultParams::default(),
    };
    let left = deadline.saturating_duration_since(Instant::now());
    let report = server
        .client()
        .request::<DocumentDiagnosticRequest>(&params, left)
        .await
        .ok()?;
    match report {
        DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(full)) => {
            Some(full.full_document_diagnostic_report.items)
        }
        DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Unchanged(_)) => {
            server.observed().published(path).map(|p| p.items)
        }
        DocumentDiagnosticReportResult::Partial(_) => None,
    }
}

/// Why a file's diagnostics are in a write's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// The write changed it.
    Written,
    /// The run has it open.
    Open,
    /// Opened for the write: it uses what the write changed.
    Dependent,
}

/// One file's diagnostics after a write.
pub(super) struct Arrived {
    pub(super) path: PathBuf,
    pub(super) items: Vec<Diagnostic>,
    pub(super) role: Role,
}

/// The role of a file the write did not change: opened for it, or the
/// run's own.
pub(super) async fn role_of(server: &Server, path: &Path) -> Role {
    if server.is_borrowed(path).await {
        Role::Dependent
    } else {
        Role::Open
    }
}

/// What telling a server about a write left to wait for.
pub(super) struct Synced {
    /// The publish sequence number before the write reached the server.
    pub(super) seq_before: u64,
    /// The written files it has, with the version sent.
    versions: Vec<(PathBuf, i32)>,
}

/// Tells `server` about the written files.
pub(super) async fn sync(server: &Server, written: &[(PathBuf, Option<Vec<u8>>)]) -> Synced {
    let seq_before = server.observed().seq();
    let mut versions = Vec::new();
    for (path, content) in written {
        if let Some(version) = server.written(path, content.as_deref()).await {
            versions.push((path.clone(), version));
        }
    }
    Synced {
        seq_before,
        versions,
    }
}

/// What arrived from one server after a write, and what did not.
#[derive(Default)]
pub(super) struct Gathered {
    pub(super) arrived: Vec<Arrived>,
    /// Written files whose diagnostics did not come in time.
    pub(super) missing: Vec<PathBuf>,
    /// Files using what changed whose diagnostics did not come in time.
    pub(super) late_dependents: Vec<PathBuf>,
}

/// Collects diagnostics until `deadline`: for each written file, the pull
/// or the publish for the written version (or, without versions, the
/// first publish after the change); for each of `dependents`, the first
/// publish after the change (or its pull); then at most [`QUIET_WINDOW`]
/// of quiet for other open files.
pub(super) async fn gather(
    server: &Arc<Server>,
    synced: &Synced,
    dependents: &[PathBuf],
    deadline: Instant,
) -> Gathered {
    let (seq_before, versions) = (synced.seq_before, &synced.versions);
    let mut out = Gathered::default();
    if server.pulls_diagnostics() {
        let mut targets: Vec<(PathBuf, Role)> = versions
            .iter()
            .map(|(p, _)| (p.clone(), Role::Written))
            .collect();
        for path in server.open_paths().await {
            if !targets.iter().any(|(p, _)| *p == path) {
                let role = role_of(server, &path).await;
                targets.push((path, role));
            }
        }
        // All pulls in flight at once: the slowest bounds the wait.
        let mut pulls = tokio::task::JoinSet::new();
        for (index, (path, _)) in targets.iter().enumerate() {
            let (server, path) = (server.clone(), path.clone());
            pulls.spawn(async move { (index, pull(&server, &path, deadline).await) });
        }
        let mut results = vec![None; targets.len()];
        while let Some(joined) = pulls.join_next().await {
            if let Ok((index, items)) = joined {
                results[index] = items;
            }
        }
        for ((path, role), items) in targets.into_iter().zip(results) {
            match items {
                Some(items) => out.arrived.push(Arrived { path, items, role }),
                None if role == Role::Written => out.missing.push(path),
                None if dependents.contains(&path) => out.late_dependents.push(path),
                None => {}
            }
        }
        return out;
    }
    let mut events = server.observed().events();
    let fresh = |path: &Path, version: Option<i32>| {
        server
            .observed()
            .published(path)
            .is_some_and(|p| match (p.version, version) {
                (Some(v), Some(version)) => v >= version,
                _ => p.seq > seq_before,
            })
    };
    let started = Instant::now();
    while !versions.iter().all(|(path, v)| fresh(path, Some(*v))) {
        if tokio::time::timeout_at(deadline, events.changed())
            .await
            .map_or(true, |r| r.is_err())
        {
            break;
        }
    }
    // The files using what changed are checked after the written ones,
    // each taking about as long: waited for while publishes keep coming,
    // up to twice what the written files took without one (a server that
    // sees nothing to recheck in a file publishes nothing for it).
    let open = server.open_paths().await;
    let dependents: Vec<&PathBuf> = dependents.iter().filter(|p| open.contains(p)).collect();
    let patience = (started.elapsed() * 2).max(QUIET_WINDOW);
    settle(server, &mut events, patience, deadline, || {
        dependents.iter().all(|path| fresh(path, None))
    })
    .await;
    // Follow-ups for other open files (a broken caller) come soon after;
    // none can once every open file has published since the write.
    let settled = || {
        open.iter().all(|path| {
            let version = versions.iter().find(|(p, _)| p == path).map(|(_, v)| *v);
            fresh(path, version)
        })
    };
    settle(server, &mut events, QUIET_WINDOW, deadline, settled).await;
    for (path, version) in versions {
        if fresh(path, Some(*version)) {
            let items = server
                .observed()
                .published(path)
                .map(|p| p.items)
                .unwrap_or_default();
            out.arrived.push(Arrived {
                path: path.clone(),
                items,
                role: Role::Written,
            });
        } else {
            out.missing.push(path.clone());
        }
    }
    for (path, published) in server.observed().published_since(seq_before) {
        if open.contains(&path) && !versions.iter().any(|(p, _)| *p == path) {
            let role = role_of(server, &path).await;
            out.arrived.push(Arrived {
                path,
                items: published.items,
                role,
            });
        }
    }
    for path in dependents {
        if !out.arrived.iter().any(|a| a.path == *path) {
            out.late_dependents.push(path.clone());
        }
    }
    out
}

/// The first publish for `path` after sequence number `seq`, waited for
/// until `deadline`.
pub(super) async fn published_after(
    server: &Server,
    path: &Path,
    seq: u64,
    deadline: Instant,
) -> Option<Vec<Diagnostic>> {
    let mut events = server.observed().events();
    loop {
        if let Some(published) = server.observed().published(path)
            && published.seq > seq
        {
            return Some(published.items);
        }
        if tokio::time::timeout_at(deadline, events.changed())
            .await
            .map_or(true, |r| r.is_err())
        {
            return None;
        }
    }
}

/// Waits until `done`, or until `server` has published nothing for
/// `quiet` (each publish starts the window again), never past `deadline`.
async fn settle(
    server: &Server,
    events: &mut tokio::sync::watch::Receiver<u64>,
    quiet: Duration,
    deadline: Instant,
    done: impl Fn() -> bool,
) {
    let mut last_seq = server.observed().seq();
    let mut quiet_until = (Instant::now() + quiet).min(deadline);
    while Instant::now() < quiet_until && !done() {
        if tokio::time::timeout_at(quiet_until, events.changed())
            .await
            .map_or(true, |r| r.is_err())
        {
            break;
        }
        let seq = server.observed().seq();
        if seq != last_seq {
            last_seq = seq;
            quiet_until = (Instant::now() + quiet).min(deadline);
        }
    }
}
