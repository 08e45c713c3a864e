//! Diagnostics on every write: the run's [`Diagnostics`] (the ledger of
//! what each file had, the baselines being fetched, the files a write can
//! break) and the write hook every writer goes through, which reports
//! what a write introduced in the files it changed and in those using
//! what it changed (see [`crate::dependents`]). The top of the stack below
//! the tools: it asks the supervisor for servers, and the supervisor tells
//! it of each file opened for the run's work.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use gantry_core::lock;
use gantry_core::write::ChangeKind;
use gantry_core::{Applied, ChangeSet, Resource, Run, WriteHook, async_trait};
use lsp_types::Diagnostic;
use tokio::time::Instant;

use crate::convert::LineIndex;
use crate::dependents::{Dependents, Found};
use crate::server::Server;
use crate::supervisor::{Supervisor, Unavailable};

mod fetch;
mod ledger;

pub(crate) use fetch::current;
use fetch::{Arrived, Role, gather, published_after, pull, role_of, sync};
use ledger::severity_rank;
pub use ledger::{Delta, Ledger, relevant};

/// How long diagnostics that missed the write's deadline are still waited
/// for, to arrive as a run notice.
const LATE_BOUND: Duration = Duration::from_secs(30);

/// The run's diagnostics state, shared by the write hook and the `lsp`
/// tool, and kept as a run resource so that it ends with the run.
pub struct Diagnostics {
    supervisor: Supervisor,
    dependents: Dependents,
    ledger: Mutex<Ledger>,
    /// Files whose baseline diagnostics are being fetched.
    seeding: Mutex<HashSet<PathBuf>>,
    /// How many writes have gone through the write hook: files opened for
    /// a write are closed after a later one no longer needs them.
    writes: AtomicU64,
}

impl Diagnostics {
    /// The state of a run whose servers `supervisor` runs; each file the
    /// supervisor opens for the run's work gets its baseline fetched and
    /// its declarations learnt.
    pub fn new(supervisor: Supervisor) -> Arc<Self> {
        let diagnostics = Arc::new(Diagnostics {
            dependents: Dependents::new(supervisor.clone()),
            supervisor: supervisor.clone(),
            ledger: Mutex::default(),
            seeding: Mutex::default(),
            writes: AtomicU64::new(0),
        });
        let weak = Arc::downgrade(&diagnostics);
        supervisor.on_opened(Arc::new(move |server, path, text| {
            if let Some(diagnostics) = weak.upgrade() {
                diagnostics.baseline(server, path);
                diagnostics.dependents.learn_symbols(server, path, text);
            }
        }));
        diagnostics
    }

    /// The state a run owns, if the family is wired.
    pub fn of(run: &Run) -> Option<Arc<Diagnostics>> {
        run.resource::<Diagnostics>()
    }

    /// Whether the run has a diagnostics baseline for `path`: a write to it
    /// then reports the problems it introduced rather than all of them.
    pub fn has_baseline(&self, path: &Path) -> bool {
        lock(&self.ledger).has(path)
    }

    /// Records what the server says of `path` now, asked by a person or a
    /// model: a later write compares with it.
    pub(crate) fn record(&self, path: &Path, items: &[Diagnostic]) {
        lock(&self.ledger).update(path, items);
    }

    /// Fetches, in the background, the diagnostics of a file the run has
    /// opened but not written, as the ledger's baseline: the first write
    /// then reports what it introduced, not every problem of the file, and
    /// never waits for a baseline itself. Pull servers publish nothing
    /// unasked, so without this their first write would have none. Nothing
    /// is recorded when a write reached the server meanwhile, or when the
    /// ledger already has the file.
    fn baseline(self: &Arc<Self>, server: &Arc<Server>, path: &Path) {
        if lock(&self.ledger).has(path) || !lock(&self.seeding).insert(path.into()) {
            return;
        }
        let this = self.clone();
        let (server, path) = (server.clone(), path.to_path_buf());
        tokio::spawn(async move {
            let deadline = Instant::now() + server.request_timeout();
            if server.unwritten(&path).await
                && let Some(items) = current(&server, &path, deadline).await
                && server.unwritten(&path).await
            {
                lock(&this.ledger).seed(&path, &items);
            }
            lock(&this.seeding).remove(&path);
        });
    }

    /// Closes the files opened only for writes before number `write`, and
    /// forgets what the run knew of them.
    async fn close_borrowed_before(&self, write: u64) {
        for path in self.supervisor.close_borrowed_before(write).await {
            lock(&self.ledger).forget(&path);
            self.dependents.forget(&path);
        }
    }

    /// Runs the files through the ledger and words the result.
    fn report(&self, arrived: &[Arrived]) -> Option<String> {
        report(&self.supervisor, &mut lock(&self.ledger), arrived)
    }
}

#[async_trait]
impl Resource for Diagnostics {
    fn name(&self) -> String {
        "diagnostics".into()
    }

    /// Nothing runs in it: the servers are the supervisor's.
    async fn shutdown(&self) {}

    fn kill_now(&self) {}

    fn status(&self) -> String {
        format!(
            "diagnostics: baselines of {} file(s), {} write(s) checked",
            lock(&self.ledger).baselines(),
            self.writes.load(Ordering::SeqCst)
        )
    }

    fn in_run_log(&self) -> bool {
        false
    }
}

/// Runs the files through `ledger` and words the result.
fn report(supervisor: &Supervisor, ledger: &mut Ledger, arrived: &[Arrived]) -> Option<String> {
    let mut introduced: BTreeMap<PathBuf, (Role, Vec<Diagnostic>)> = BTreeMap::new();
    let mut unbased: BTreeMap<PathBuf, (Role, Vec<Diagnostic>)> = BTreeMap::new();
    {
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
    diagnostics: Arc<Diagnostics>,
    /// Filled by `before_write`, taken by the `after_write` of the same
    /// write: a run's writes never overlap.
    prepared: Mutex<Option<Prepared>>,
}

impl DiagnosticsHook {
    /// A hook keeping `diagnostics`.
    pub fn new(diagnostics: Arc<Diagnostics>) -> Self {
        DiagnosticsHook {
            diagnostics,
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
                lock(&self.diagnostics.ledger).forget(path);
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
                lock(&self.diagnostics.ledger).seed(&path, &items);
            }
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
        let state = &self.diagnostics;
        let sup = &state.supervisor;
        let deadline = Instant::now() + sup.config().diagnostics_deadline;
        let write = state.writes.fetch_add(1, Ordering::SeqCst) + 1;
        for change in changes.changes() {
            sup.touch_for_write(change.path());
        }
        let found = if sup.config().dependents {
            (state.dependents)
                .find(changes, sup.config().dependents_cap, deadline)
                .await
        } else {
            Found::default()
        };
        self.open_dependents(&found, write, deadline).await;
        // What servers last published is the baseline of files the run has
        // not seen diagnostics for yet; no write waits for one.
        {
            let mut ledger = lock(&state.ledger);
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
        let state = &self.diagnostics;
        let sup = &state.supervisor;
        let prepared = lock(&self.prepared).take();
        let (deadline, write, found) = match prepared {
            Some(p) => (p.deadline, p.write, p.found),
            None => (
                Instant::now() + sup.config().diagnostics_deadline,
                state.writes.load(Ordering::SeqCst),
                Found::default(),
            ),
        };
        type Files = Vec<(PathBuf, Option<Vec<u8>>)>;
        let mut by_server: Vec<(Arc<Server>, Files, Vec<PathBuf>)> = Vec::new();
        let mut late: Files = Vec::new();
        for (path, content) in written_files(applied) {
            if content.is_none() {
                state.dependents.forget(&path);
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
        let mut lines: Vec<String> = state.report(&arrived).into_iter().collect();
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
                state.clone(),
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
                    (state.dependents).learn_symbols(
                        server,
                        path,
                        &String::from_utf8_lossy(content),
                    );
                }
            }
        }
        // Files opened for earlier writes and not needed by this one.
        state.close_borrowed_before(write).await;
        tokio::spawn(close_when_idle(Arc::downgrade(state), write));
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}

/// Closes the files opened for write number `write` when no write came
/// after it for [`BORROWED_IDLE`].
async fn close_when_idle(diagnostics: Weak<Diagnostics>, write: u64) {
    tokio::time::sleep(BORROWED_IDLE).await;
    let Some(diagnostics) = diagnostics.upgrade() else {
        return;
    };
    if diagnostics.writes.load(Ordering::SeqCst) == write {
        diagnostics.close_borrowed_before(write + 1).await;
    }
}

/// Waits (bounded) for diagnostics that missed a write's deadline and
/// hands them to the run as a notice.
async fn follow_up(
    diagnostics: Arc<Diagnostics>,
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
        let Ok(Ok(server)) =
            tokio::time::timeout_at(deadline, diagnostics.supervisor.server_for(&path)).await
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
    if let Some(text) = diagnostics.report(&arrived) {
        run.notify(format!("late diagnostics of an earlier write: {text}"));
    }
}
