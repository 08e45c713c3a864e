//! Diagnostics: fetching them for a file (pull where offered, else the
//! publish for the current version), the per-run ledger that decides what
//! a write introduced, and the write hook every writer goes through
//! (which also reaches the files a write can break: see [`crate::dependents`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_core::lock;
use gantry_core::write::ChangeKind;
use gantry_core::{Applied, ChangeSet, Run, WriteHook, async_trait};
use lsp_types::request::DocumentDiagnosticRequest;
use lsp_types::{
    Diagnostic, DiagnosticSeverity, DiagnosticTag, DocumentDiagnosticParams,
    DocumentDiagnosticReport, DocumentDiagnosticReportResult, PartialResultParams,
    TextDocumentIdentifier, WorkDoneProgressParams,
};
use tokio::time::Instant;

use crate::convert::{LineIndex, path_to_uri};
use crate::dependents::{self, Found};
use crate::server::Server;
use crate::supervisor::{Supervisor, Unavailable};

/// At most this long without a new publish ends the wait for follow-ups.
const QUIET_WINDOW: Duration = Duration::from_millis(150);
/// How long diagnostics that missed the write's deadline are still waited
/// for, to arrive as a run notice.
const LATE_BOUND: Duration = Duration::from_secs(30);

/// The identity of a problem, deliberately without its position: a
/// problem that only moved is the same problem.
type Key = (u8, String, String);

fn key(d: &Diagnostic) -> Key {
    let code = match &d.code {
        Some(lsp_types::NumberOrString::Number(n)) => n.to_string(),
        Some(lsp_types::NumberOrString::String(s)) => s.clone(),
        None => String::new(),
    };
    (severity_rank(d), code, d.message.clone())
}

fn severity_rank(d: &Diagnostic) -> u8 {
    match d.severity {
        Some(DiagnosticSeverity::WARNING) => 2,
        _ => 1,
    }
}

/// Errors and warnings only: hints, information and code the server
/// merely greys out as unnecessary are noise for a model.
pub fn relevant(d: &Diagnostic) -> bool {
    let severe = matches!(
        d.severity,
        None | Some(DiagnosticSeverity::ERROR) | Some(DiagnosticSeverity::WARNING)
    );
    let unnecessary = d
        .tags
        .as_ref()
        .is_some_and(|tags| tags.contains(&DiagnosticTag::UNNECESSARY));
    severe && !unnecessary
}

/// What a fresh set of diagnostics means against the ledger.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// Problems whose count went up.
    New(Vec<Diagnostic>),
    /// The run had no earlier diagnostics for the file: these are all its
    /// problems, not necessarily introduced.
    NoBaseline(Vec<Diagnostic>),
}

/// Per file, the multiset of (severity, code, message) last seen.
#[derive(Debug, Default)]
pub struct Ledger {
    files: HashMap<PathBuf, HashMap<Key, usize>>,
}

fn multiset(items: &[Diagnostic]) -> HashMap<Key, usize> {
    let mut set = HashMap::new();
    for d in items.iter().filter(|d| relevant(d)) {
        *set.entry(key(d)).or_insert(0) += 1;
    }
    set
}

impl Ledger {
    /// Whether `path` has a baseline.
    pub fn has(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }

    /// Forgets `path` (closed in its server): when it opens again, what it
    /// has then is the baseline.
    pub fn forget(&mut self, path: &Path) {
        self.files.remove(path);
    }

    /// Takes `items` as the baseline of `path` unless it has one.
    pub fn seed(&mut self, path: &Path, items: &[Diagnostic]) {
        self.files
            .entry(path.to_path_buf())
            .or_insert_with(|| multiset(items));
    }

    /// Compares `items` with the ledger, then records them, so that a
    /// problem fixed and brought back is new again.
    pub fn update(&mut self, path: &Path, items: &[Diagnostic]) -> Delta {
        let mut current: Vec<Diagnostic> = items.iter().filter(|d| relevant(d)).cloned().collect();
        current.sort_by_key(|d| (d.range.start.line, d.range.start.character));
        let before = self.files.insert(path.to_path_buf(), multiset(&current));
        let Some(before) = before else {
            return Delta::NoBaseline(current);
        };
        // For each key, the instances past its old count are the new ones
        // (the last ones in the file: where they are is not part of the
        // key, so which of equal problems is "new" is a convention).
        let mut seen: HashMap<Key, usize> = HashMap::new();
        let mut new = Vec::new();
        for d in current {
            let k = key(&d);
            let old = before.get(&k).copied().unwrap_or(0);
            let index = seen.entry(k).or_insert(0);
            *index += 1;
            if *index > old {
                new.push(d);
            }
        }
        Delta::New(new)
    }
}

/// Current diagnostics of `path` from `server`: pulled where offered,
/// else the publish for the version the server has, waited for until
/// `deadline`. `None` when nothing came in time.
pub async fn current(server: &Server, path: &Path, deadline: Instant) -> Option<Vec<Diagnostic>> {
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

async fn pull(server: &Server, path: &Path, deadline: Instant) -> Option<Vec<Diagnostic>> {
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
enum Role {
    /// The write changed it.
    Written,
    /// The run has it open.
    Open,
    /// Opened for the write: it uses what the write changed.
    Dependent,
}

/// One file's diagnostics after a write.
struct Arrived {
    path: PathBuf,
    items: Vec<Diagnostic>,
    role: Role,
}

/// The role of a file the write did not change: opened for it, or the
/// run's own.
async fn role_of(server: &Server, path: &Path) -> Role {
    if server.is_borrowed(path).await {
        Role::Dependent
    } else {
        Role::Open
    }
}

/// What telling a server about a write left to wait for.
struct Synced {
    /// The publish sequence number before the write reached the server.
    seq_before: u64,
    /// The written files it has, with the version sent.
    versions: Vec<(PathBuf, i32)>,
}

/// Tells `server` about the written files.
async fn sync(server: &Server, written: &[(PathBuf, Option<Vec<u8>>)]) -> Synced {
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
struct Gathered {
    arrived: Vec<Arrived>,
    /// Written files whose diagnostics did not come in time.
    missing: Vec<PathBuf>,
    /// Files using what changed whose diagnostics did not come in time.
    late_dependents: Vec<PathBuf>,
}

/// Collects diagnostics until `deadline`: for each written file, the pull
/// or the publish for the written version (or, without versions, the
/// first publish after the change); for each of `dependents`, the first
/// publish after the change (or its pull); then at most [`QUIET_WINDOW`]
/// of quiet for other open files.
async fn gather(
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
    let mut last_seq = server.observed().seq();
    let mut quiet_until = (Instant::now() + patience).min(deadline);
    while !dependents.iter().all(|path| fresh(path, None)) {
        if tokio::time::timeout_at(quiet_until, events.changed())
            .await
            .map_or(true, |r| r.is_err())
        {
            break;
        }
        let seq = server.observed().seq();
        if seq != last_seq {
            last_seq = seq;
            quiet_until = (Instant::now() + patience).min(deadline);
        }
    }
    // Follow-ups for other open files (a broken caller) come soon after;
    // none can once every open file has published since the write.
    let settled = || {
        open.iter().all(|path| {
            let version = versions.iter().find(|(p, _)| p == path).map(|(_, v)| *v);
            fresh(path, version)
        })
    };
    let mut last_seq = server.observed().seq();
    let mut quiet_until = (Instant::now() + QUIET_WINDOW).min(deadline);
    while Instant::now() < quiet_until && !settled() {
        if tokio::time::timeout_at(quiet_until, events.changed())
            .await
            .map_or(true, |r| r.is_err())
        {
            break;
        }
        let seq = server.observed().seq();
        if seq != last_seq {
            last_seq = seq;
            quiet_until = (Instant::now() + QUIET_WINDOW).min(deadline);
        }
    }
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

/// Runs the files through the ledger and words the result.
fn report(supervisor: &Supervisor, arrived: &[Arrived]) -> Option<String> {
    let mut introduced: BTreeMap<PathBuf, (Role, Vec<Diagnostic>)> = BTreeMap::new();
    let mut unbased: BTreeMap<PathBuf, (Role, Vec<Diagnostic>)> = BTreeMap::new();
    {
        let mut ledger = supervisor
            .inner
            .ledger
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for file in arrived {
            match ledger.update(&file.path, &file.items) {
                Delta::New(new) if !new.is_empty() => {
                    introduced.insert(file.path.clone(), (file.role, new));
                }
                Delta::NoBaseline(all) if !all.is_empty() => {
                    unbased.insert(file.path.clone(), (file.role, all));
                }
                _ => {}
            }
        }
    }
    let note = |role: Role| match role {
        Role::Written => "",
        Role::Open => " (another open file)",
        Role::Dependent => " (uses what the write changed)",
    };
    let mut out = String::new();
    if !introduced.is_empty() {
        out.push_str("the write succeeded; it introduced these problems:\n");
        for (path, (role, items)) in &introduced {
            out.push_str(&render_file(supervisor, path, note(*role), items));
        }
    }
    if !unbased.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(
            "problems in this file after the write (no earlier diagnostics of it to compare with, so some may be older):\n",
        );
        for (path, (role, items)) in &unbased {
            out.push_str(&render_file(supervisor, path, note(*role), items));
        }
    }
    (!out.is_empty()).then(|| out.trim_end().to_string())
}

/// One file's problems as `path:line: severity[code]: message` plus the
/// source line.
pub fn render_file(
    supervisor: &Supervisor,
    path: &Path,
    note: &str,
    items: &[Diagnostic],
) -> String {
    let text = gantry_core::read_regular(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    let index = LineIndex::new(&text);
    let shown = supervisor.display(path);
    let mut out = format!("{shown}{note}\n");
    for d in items {
        let line = d.range.start.line as usize;
        let severity = if severity_rank(d) == 2 {
            "warning"
        } else {
            "error"
        };
        let code = match &d.code {
            Some(lsp_types::NumberOrString::Number(n)) => format!("[{n}]"),
            Some(lsp_types::NumberOrString::String(s)) => format!("[{s}]"),
            None => String::new(),
        };
        let message = d.message.replace('\n', " ");
        out.push_str(&format!(
            "  {shown}:{}: {severity}{code}: {message}\n",
            line + 1
        ));
        if let Some(source) = index.line(line).filter(|l| !l.trim().is_empty()) {
            out.push_str(&format!("    | {}\n", source.trim()));
        }
    }
    out
}

/// What a write's before-write step prepared for its after-write step.
struct Prepared {
    /// The write's one deadline, from before the lookup.
    deadline: Instant,
    /// The write's number.
    write: u64,
    /// The files it can break, opened in their servers.
    found: Found,
}

/// The write hook: before a write, finds and opens the files it can break
/// (so what they had is the baseline); after it, syncs the written files
/// to their servers and appends the problems the write introduced, in the
/// written files and in those.
pub struct DiagnosticsHook {
    supervisor: Supervisor,
    /// Filled by `before_write`, taken by the `after_write` of the same
    /// write: a run's writes never overlap.
    prepared: Mutex<Option<Prepared>>,
}

impl DiagnosticsHook {
    /// A hook reporting through `supervisor`.
    pub fn new(supervisor: Supervisor) -> Self {
        DiagnosticsHook {
            supervisor,
            prepared: Mutex::default(),
        }
    }

    /// Opens the files found in their servers; those opened now get their
    /// current problems as the ledger's baseline, waited for until
    /// `deadline`, so only what the write adds there is reported.
    async fn open_dependents(&self, found: &Found, write: u64, deadline: Instant) {
        let mut opened = Vec::new();
        for (server, path) in &found.files {
            let seq = server.observed().seq();
            if let Ok(true) = server.open_borrowed(path, write).await {
                lock(&self.supervisor.inner.ledger).forget(path);
                opened.push((server.clone(), path.clone(), seq));
            }
        }
        let mut baselines = tokio::task::JoinSet::new();
        for (server, path, seq) in opened {
            baselines.spawn(async move {
                let items = if server.pulls_diagnostics() {
                    pull(&server, &path, deadline).await
                } else {
                    published_after(&server, &path, seq, deadline).await
                };
                (path, items)
            });
        }
        while let Some(joined) = baselines.join_next().await {
            if let Ok((path, Some(items))) = joined {
                lock(&self.supervisor.inner.ledger).seed(&path, &items);
            }
        }
    }
}

/// The first publish for `path` after sequence number `seq`, waited for
/// until `deadline`.
async fn published_after(
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

/// The written files of a change set, with the renamed-away sources as
/// deletions.
fn written_files(applied: &Applied) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut files = Vec::new();
    for change in &applied.changes {
        if let ChangeKind::Renamed { from } = &change.kind {
            files.push((from.clone(), None));
        }
        files.push((change.path.clone(), change.content.clone()));
    }
    files
}

/// How long files opened for a write stay open when no later write comes.
const BORROWED_IDLE: Duration = Duration::from_secs(120);

#[async_trait]
impl WriteHook for DiagnosticsHook {
    async fn before_write(&self, _run: &Run, changes: &ChangeSet) {
        let sup = &self.supervisor;
        let deadline = Instant::now() + sup.config().diagnostics_deadline;
        let write = sup.inner.writes.fetch_add(1, Ordering::SeqCst) + 1;
        for change in changes.changes() {
            sup.touch_for_write(change.path());
        }
        let found = if sup.config().dependents {
            dependents::find(sup, changes, sup.config().dependents_cap, deadline).await
        } else {
            Found::default()
        };
        self.open_dependents(&found, write, deadline).await;
        // What servers last published is the baseline of files the run has
        // not seen diagnostics for yet; no write waits for one.
        {
            let mut ledger = lock(&sup.inner.ledger);
            for server in sup.running() {
                for change in changes.changes() {
                    if let Some(published) = server.observed().published(change.source()) {
                        ledger.seed(change.source(), &published.items);
                    }
                }
                for (path, published) in server.observed().published_since(0) {
                    ledger.seed(&path, &published.items);
                }
            }
        }
        *lock(&self.prepared) = Some(Prepared {
            deadline,
            write,
            found,
        });
    }

    async fn after_write(&self, run: &Run, applied: &Applied) -> Option<String> {
        let sup = &self.supervisor;
        let prepared = lock(&self.prepared).take();
        let (deadline, write, found) = match prepared {
            Some(p) => (p.deadline, p.write, p.found),
            None => (
                Instant::now() + sup.config().diagnostics_deadline,
                sup.inner.writes.load(Ordering::SeqCst),
                Found::default(),
            ),
        };
        type Files = Vec<(PathBuf, Option<Vec<u8>>)>;
        let mut by_server: Vec<(Arc<Server>, Files, Vec<PathBuf>)> = Vec::new();
        let mut late: Files = Vec::new();
        for (path, content) in written_files(applied) {
            if content.is_none() {
                sup.inner.symbols.forget(&path);
            }
            let server = tokio::time::timeout_at(deadline, sup.server_for(&path)).await;
            match server {
                Ok(Ok(server)) => {
                    match by_server
                        .iter_mut()
                        .find(|(s, _, _)| Arc::ptr_eq(s, &server))
                    {
                        Some((_, files, _)) => files.push((path, content)),
                        None => by_server.push((server, vec![(path, content)], Vec::new())),
                    }
                }
                Ok(Err(Unavailable::NoServer(_) | Unavailable::Down(_))) => {}
                Err(_) => late.push((path, content)),
            }
        }
        for (server, path) in &found.files {
            if by_server
                .iter()
                .any(|(_, files, _)| files.iter().any(|(p, _)| p == path))
            {
                continue;
            }
            match by_server
                .iter_mut()
                .find(|(s, _, _)| Arc::ptr_eq(s, server))
            {
                Some((_, _, dependents)) => dependents.push(path.clone()),
                None => by_server.push((server.clone(), Vec::new(), vec![path.clone()])),
            }
        }
        let mut synced = Vec::new();
        for (server, files, _) in &by_server {
            synced.push(sync(server, files).await);
        }
        let mut arrived = Vec::new();
        let mut missing: Vec<(Arc<Server>, PathBuf)> = Vec::new();
        let mut late_dependents: Vec<(Arc<Server>, PathBuf, u64)> = Vec::new();
        for ((server, _, dependents), synced) in by_server.iter().zip(&synced) {
            let got = gather(server, synced, dependents, deadline).await;
            arrived.extend(got.arrived);
            missing.extend(got.missing.into_iter().map(|p| (server.clone(), p)));
            late_dependents.extend(
                got.late_dependents
                    .into_iter()
                    .map(|p| (server.clone(), p, synced.seq_before)),
            );
        }
        let mut lines: Vec<String> = report(sup, &arrived).into_iter().collect();
        if found.beyond_cap > 0 {
            let cap = sup.config().dependents_cap;
            lines.push(format!(
                "{} files use what the write changed; only the first {cap} were checked (the cap is {cap}: setting lsp.dependentsCap)",
                cap + found.beyond_cap
            ));
        }
        let seconds = sup.config().diagnostics_deadline.as_secs_f64();
        if !missing.is_empty() || !late.is_empty() {
            let names: Vec<String> = missing
                .iter()
                .map(|(_, p)| p)
                .chain(late.iter().map(|(p, _)| p))
                .map(|p| sup.display(p))
                .collect();
            lines.push(format!(
                "diagnostics for {} did not arrive within {seconds:.1} s; they will follow as a run notice",
                names.join(", "),
            ));
        }
        if !late_dependents.is_empty() {
            let names: Vec<String> = late_dependents
                .iter()
                .map(|(_, p, _)| sup.display(p))
                .collect();
            lines.push(format!(
                "{} (using what the write changed) not checked again within the {seconds:.1} s deadline; problems found there later come as a run notice",
                names.join(", "),
            ));
        }
        if !missing.is_empty() || !late.is_empty() || !late_dependents.is_empty() {
            tokio::spawn(follow_up(
                sup.clone(),
                run.clone(),
                missing,
                late,
                late_dependents,
            ));
        }
        // The declarations of what was written, for the next write: asked
        // once the server has checked it, so the question does not hold
        // up the checking.
        for (server, files, _) in &by_server {
            for (path, content) in files {
                if let Some(content) = content {
                    sup.learn_symbols(server, path, &String::from_utf8_lossy(content));
                }
            }
        }
        // Files opened for earlier writes and not needed by this one.
        sup.close_borrowed_before(write).await;
        tokio::spawn(close_when_idle(Arc::downgrade(&sup.inner), write));
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}

/// Closes the files opened for write number `write` when no write came
/// after it for [`BORROWED_IDLE`].
async fn close_when_idle(inner: std::sync::Weak<crate::supervisor::Inner>, write: u64) {
    tokio::time::sleep(BORROWED_IDLE).await;
    let Some(inner) = inner.upgrade() else { return };
    if inner.writes.load(Ordering::SeqCst) == write {
        Supervisor { inner }.close_borrowed_before(write + 1).await;
    }
}

/// Waits (bounded) for diagnostics that missed a write's deadline and
/// hands them to the run as a notice.
async fn follow_up(
    supervisor: Supervisor,
    run: Run,
    missing: Vec<(Arc<Server>, PathBuf)>,
    late: Vec<(PathBuf, Option<Vec<u8>>)>,
    dependents: Vec<(Arc<Server>, PathBuf, u64)>,
) {
    let deadline = Instant::now() + LATE_BOUND;
    let mut arrived = Vec::new();
    for (server, path) in missing {
        if let Some(items) = current(&server, &path, deadline).await {
            arrived.push(Arrived {
                path,
                items,
                role: Role::Written,
            });
        }
    }
    for (path, content) in late {
        let Ok(Ok(server)) = tokio::time::timeout_at(deadline, supervisor.server_for(&path)).await
        else {
            continue;
        };
        let files = [(path, content)];
        let synced = sync(&server, &files).await;
        let got = gather(&server, &synced, &[], deadline).await;
        arrived.extend(got.arrived);
    }
    for (server, path, seq) in dependents {
        let items = if server.pulls_diagnostics() {
            pull(&server, &path, deadline).await
        } else {
            published_after(&server, &path, seq, deadline).await
        };
        if let Some(items) = items {
            let role = role_of(&server, &path).await;
            arrived.push(Arrived { path, items, role });
        }
    }
    if let Some(text) = report(&supervisor, &arrived) {
        run.notify(format!("late diagnostics of an earlier write: {text}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{NumberOrString, Position, Range};

    fn diag(line: u32, message: &str, severity: DiagnosticSeverity) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 0), Position::new(line, 1)),
            severity: Some(severity),
            code: Some(NumberOrString::String("E1".into())),
            message: message.into(),
            ..Diagnostic::default()
        }
    }

    #[test]
    fn the_ledger_reports_counts_that_went_up_and_ignores_moves() {
        let mut ledger = Ledger::default();
        let path = Path::new("/w/a.py");
        let err = |line| diag(line, "undefined name x", DiagnosticSeverity::ERROR);
        assert_eq!(ledger.update(path, &[]), Delta::NoBaseline(vec![]));
        // Introduced.
        assert_eq!(ledger.update(path, &[err(3)]), Delta::New(vec![err(3)]));
        // Moved four lines down: not new.
        assert_eq!(ledger.update(path, &[err(7)]), Delta::New(vec![]));
        // A second one of the same kind: one new.
        assert_eq!(
            ledger.update(path, &[err(7), err(9)]),
            Delta::New(vec![err(9)])
        );
        // Fixed, then back: new again.
        assert_eq!(ledger.update(path, &[]), Delta::New(vec![]));
        assert_eq!(ledger.update(path, &[err(2)]), Delta::New(vec![err(2)]));
    }

    #[test]
    fn hints_and_unnecessary_code_are_dropped_and_seeds_do_not_overwrite() {
        let mut hint = diag(1, "unused", DiagnosticSeverity::HINT);
        assert!(!relevant(&hint));
        hint.severity = Some(DiagnosticSeverity::WARNING);
        hint.tags = Some(vec![DiagnosticTag::UNNECESSARY]);
        assert!(!relevant(&hint));
        let warning = diag(1, "shadowed", DiagnosticSeverity::WARNING);
        assert!(relevant(&warning));

        let mut ledger = Ledger::default();
        let path = Path::new("/w/b.py");
        ledger.seed(path, std::slice::from_ref(&warning));
        ledger.seed(path, &[]);
        assert_eq!(
            ledger.update(path, &[warning.clone(), hint]),
            Delta::New(vec![])
        );
    }
}
