//! Diagnostics: fetching them for a file (pull where offered, else the
//! publish for the current version), the per-run ledger that decides what
//! a write introduced, and the after-write hook every writer goes
//! through.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

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

/// One file's diagnostics after a write.
struct Arrived {
    path: PathBuf,
    items: Vec<Diagnostic>,
    written: bool,
}

/// Tells `server` about the written files and collects diagnostics until
/// `deadline`: for each written file, the pull or the publish for the
/// written version (or, without versions, the first publish after the
/// change); then at most [`QUIET_WINDOW`] of quiet for other open files.
/// Returns what arrived and the written files still missing.
async fn collect(
    server: &Arc<Server>,
    written: &[(PathBuf, Option<Vec<u8>>)],
    deadline: Instant,
) -> (Vec<Arrived>, Vec<PathBuf>) {
    let seq_before = server.observed().seq();
    let mut versions = Vec::new();
    for (path, content) in written {
        if let Some(version) = server.written(path, content.as_deref()).await {
            versions.push((path.clone(), version));
        }
    }
    if server.pulls_diagnostics() {
        let mut arrived = Vec::new();
        let mut missing = Vec::new();
        let mut targets: Vec<(PathBuf, bool)> =
            versions.iter().map(|(p, _)| (p.clone(), true)).collect();
        for path in server.open_paths().await {
            if !targets.iter().any(|(p, _)| *p == path) {
                targets.push((path, false));
            }
        }
        // All pulls in flight at once: the slowest bounds the wait.
        let mut pulls = tokio::task::JoinSet::new();
        for (index, (path, _)) in targets.iter().enumerate() {
            let (server, path) = (server.clone(), path.clone());
            pulls.spawn(async move { (index, pull(&server, &path, deadline).await) });
        }
        let mut results = vec![None; targets.len()];
        while let Some(Ok((index, items))) = pulls.join_next().await {
            results[index] = items;
        }
        for ((path, written), items) in targets.into_iter().zip(results) {
            match items {
                Some(items) => arrived.push(Arrived {
                    path,
                    items,
                    written,
                }),
                None if written => missing.push(path),
                None => {}
            }
        }
        return (arrived, missing);
    }
    let mut events = server.observed().events();
    let fresh = |path: &Path, version: i32| {
        server
            .observed()
            .published(path)
            .is_some_and(|p| match p.version {
                Some(v) => v >= version,
                None => p.seq > seq_before,
            })
    };
    loop {
        if versions.iter().all(|(path, v)| fresh(path, *v)) {
            break;
        }
        if tokio::time::timeout_at(deadline, events.changed())
            .await
            .map_or(true, |r| r.is_err())
        {
            break;
        }
    }
    // Follow-ups for other files (a broken caller) come soon after.
    let mut last_seq = server.observed().seq();
    let mut quiet_until = (Instant::now() + QUIET_WINDOW).min(deadline);
    while Instant::now() < quiet_until {
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
    let mut arrived = Vec::new();
    let mut missing = Vec::new();
    for (path, version) in &versions {
        if fresh(path, *version) {
            let items = server
                .observed()
                .published(path)
                .map(|p| p.items)
                .unwrap_or_default();
            arrived.push(Arrived {
                path: path.clone(),
                items,
                written: true,
            });
        } else {
            missing.push(path.clone());
        }
    }
    let open = server.open_paths().await;
    for (path, published) in server.observed().published_since(seq_before) {
        if open.contains(&path) && !versions.iter().any(|(p, _)| *p == path) {
            arrived.push(Arrived {
                path,
                items: published.items,
                written: false,
            });
        }
    }
    (arrived, missing)
}

/// Runs the written files through the ledger and words the result.
fn report(supervisor: &Supervisor, arrived: &[Arrived]) -> Option<String> {
    let mut introduced: BTreeMap<PathBuf, (bool, Vec<Diagnostic>)> = BTreeMap::new();
    let mut unbased: BTreeMap<PathBuf, Vec<Diagnostic>> = BTreeMap::new();
    {
        let mut ledger = supervisor
            .inner
            .ledger
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for file in arrived {
            match ledger.update(&file.path, &file.items) {
                Delta::New(new) if !new.is_empty() => {
                    introduced.insert(file.path.clone(), (file.written, new));
                }
                Delta::NoBaseline(all) if !all.is_empty() => {
                    unbased.insert(file.path.clone(), all);
                }
                _ => {}
            }
        }
    }
    let mut out = String::new();
    if !introduced.is_empty() {
        out.push_str("the write succeeded; it introduced these problems:\n");
        for (path, (written, items)) in &introduced {
            let note = if *written { "" } else { " (another open file)" };
            out.push_str(&render_file(supervisor, path, note, items));
        }
    }
    if !unbased.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(
            "problems in this file after the write (no earlier diagnostics of it to compare with, so some may be older):\n",
        );
        for (path, items) in &unbased {
            out.push_str(&render_file(supervisor, path, "", items));
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

/// The after-write hook: syncs written files to their servers and appends
/// the problems the write introduced.
pub struct DiagnosticsHook {
    supervisor: Supervisor,
}

impl DiagnosticsHook {
    /// A hook reporting through `supervisor`.
    pub fn new(supervisor: Supervisor) -> Self {
        DiagnosticsHook { supervisor }
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

#[async_trait]
impl WriteHook for DiagnosticsHook {
    async fn before_write(&self, _run: &Run, changes: &ChangeSet) {
        for change in changes.changes() {
            self.supervisor.touch_for_write(change.path());
        }
        // What servers last published is the baseline of files the run has
        // not seen diagnostics for yet; no write waits for one.
        let mut ledger = self
            .supervisor
            .inner
            .ledger
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for server in self.supervisor.running() {
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

    async fn after_write(&self, run: &Run, applied: &Applied) -> Option<String> {
        let deadline = Instant::now() + self.supervisor.config().diagnostics_deadline;
        let mut by_server: Vec<(Arc<Server>, Vec<(PathBuf, Option<Vec<u8>>)>)> = Vec::new();
        let mut late: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
        for (path, content) in written_files(applied) {
            let server = tokio::time::timeout_at(deadline, self.supervisor.server_for(&path)).await;
            match server {
                Ok(Ok(server)) => match by_server.iter_mut().find(|(s, _)| Arc::ptr_eq(s, &server))
                {
                    Some((_, files)) => files.push((path, content)),
                    None => by_server.push((server, vec![(path, content)])),
                },
                Ok(Err(Unavailable::NoServer(_) | Unavailable::Down(_))) => {}
                Err(_) => late.push((path, content)),
            }
        }
        let mut arrived = Vec::new();
        let mut missing: Vec<(Arc<Server>, PathBuf)> = Vec::new();
        for (server, files) in &by_server {
            let (got, lost) = collect(server, files, deadline).await;
            arrived.extend(got);
            missing.extend(lost.into_iter().map(|p| (server.clone(), p)));
        }
        let mut text = report(&self.supervisor, &arrived);
        if !missing.is_empty() || !late.is_empty() {
            let names: Vec<String> = missing
                .iter()
                .map(|(_, p)| p)
                .chain(late.iter().map(|(p, _)| p))
                .map(|p| self.supervisor.display(p))
                .collect();
            let line = format!(
                "diagnostics for {} did not arrive within {:.1} s; they will follow as a run notice",
                names.join(", "),
                self.supervisor.config().diagnostics_deadline.as_secs_f64()
            );
            text = Some(match text {
                Some(text) => format!("{text}\n{line}"),
                None => line,
            });
            tokio::spawn(follow_up(
                self.supervisor.clone(),
                run.clone(),
                missing,
                late,
            ));
        }
        text
    }
}

/// Waits (bounded) for diagnostics that missed a write's deadline and
/// hands them to the run as a notice.
async fn follow_up(
    supervisor: Supervisor,
    run: Run,
    missing: Vec<(Arc<Server>, PathBuf)>,
    late: Vec<(PathBuf, Option<Vec<u8>>)>,
) {
    let deadline = Instant::now() + LATE_BOUND;
    let mut arrived = Vec::new();
    for (server, path) in missing {
        if let Some(items) = current(&server, &path, deadline).await {
            arrived.push(Arrived {
                path,
                items,
                written: true,
            });
        }
    }
    for (path, content) in late {
        let Ok(Ok(server)) = tokio::time::timeout_at(deadline, supervisor.server_for(&path)).await
        else {
            continue;
        };
        let (got, _) = collect(&server, &[(path, content)], deadline).await;
        arrived.extend(got);
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
