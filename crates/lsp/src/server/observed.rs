//! What a server tells without being asked: the diagnostics it publishes,
//! its progress, and so whether it is still loading or indexing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use gantry_core::lock;
use globset::{Glob, GlobMatcher};
use lsp_types::Diagnostic;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::watch;

use crate::convert::uri_to_path;
use crate::transport::Incoming;

/// How soon after a close the server's empty publish for the file comes.
const CLOSE_PUBLISH: Duration = Duration::from_secs(5);

/// A set of diagnostics a server published for one file.
#[derive(Debug, Clone)]
pub struct Published {
    /// The document version it was computed for, when the server says.
    pub version: Option<i32>,
    /// The diagnostics.
    pub items: Vec<Diagnostic>,
    /// Order of arrival across all files of this server.
    pub seq: u64,
}

/// One work-done progress a server reported and has not ended.
#[derive(Debug, Clone, Default, PartialEq)]
struct Progress {
    title: String,
    message: Option<String>,
    percentage: Option<u32>,
}

impl Progress {
    /// `indexing: 40 %`, `initializing JS/TS language features…`.
    fn describe(&self) -> String {
        let mut title = self.title.clone();
        // "Initializing …" reads as "still initializing …".
        if let Some(first) = title.chars().next()
            && title.chars().nth(1).is_some_and(char::is_lowercase)
        {
            title.replace_range(..first.len_utf8(), &first.to_lowercase().to_string());
        }
        match self.percentage {
            Some(percentage) => format!("{title}: {percentage} %"),
            None => title,
        }
    }
}

/// What the notification observer learns; read by requests and the write
/// hook. Updated on the transport's reader task, so it is never behind an
/// answer the server sent after it.
#[derive(Default)]
pub struct Observed {
    warming: Option<String>,
    warm: AtomicBool,
    progress: Mutex<HashMap<String, Progress>>,
    /// Whether any progress ever ended: clangd's background index says
    /// when it has gone through the project once.
    progress_ended: AtomicBool,
    quiescent: Mutex<Option<bool>>,
    diagnostics: Mutex<HashMap<PathBuf, Published>>,
    /// Files closed a moment ago: servers clear a closed file's
    /// diagnostics with an empty publish, which must not become the
    /// baseline if the file opens again.
    closing: Mutex<HashMap<PathBuf, Instant>>,
    pub(super) watchers: Mutex<Vec<GlobMatcher>>,
    pub(super) pull_registered: AtomicBool,
    pub(super) pull_workspace: AtomicBool,
    seq: AtomicU64,
    events: watch::Sender<u64>,
}

impl Observed {
    pub(super) fn new(ready_log: Option<String>) -> Self {
        Observed {
            warm: AtomicBool::new(ready_log.is_none()),
            warming: ready_log,
            ..Observed::default()
        }
    }

    /// Whether the server has not yet said it loaded the workspace.
    pub fn warming(&self) -> bool {
        !self.warm.load(Ordering::SeqCst)
    }

    /// What the server is busy with, if it said so, worded to follow
    /// "still": an open work-done progress with its percentage
    /// (`indexing: 40 %`), or the workspace still loading.
    pub fn indexing(&self) -> Option<String> {
        if self.warming() {
            return Some("loading the workspace".into());
        }
        if let Some(progress) = lock(&self.progress).values().next() {
            return Some(progress.describe());
        }
        if *lock(&self.quiescent) == Some(false) {
            return Some("loading the workspace".into());
        }
        None
    }

    /// Whether a work-done progress of the server has ever ended.
    pub fn progress_ended(&self) -> bool {
        self.progress_ended.load(Ordering::SeqCst)
    }

    /// Forgets what was published for a file the server no longer has
    /// open, and the empty publish that clears it: neither is a baseline
    /// when it opens again.
    pub fn forget(&self, path: &Path) {
        lock(&self.diagnostics).remove(path);
        lock(&self.closing).insert(path.to_path_buf(), Instant::now());
    }

    /// The last publish for `path`.
    pub fn published(&self, path: &Path) -> Option<Published> {
        lock(&self.diagnostics).get(path).cloned()
    }

    /// Every file with a publish newer than `seq`.
    pub fn published_since(&self, seq: u64) -> Vec<(PathBuf, Published)> {
        lock(&self.diagnostics)
            .iter()
            .filter(|(_, p)| p.seq > seq)
            .map(|(path, p)| (path.clone(), p.clone()))
            .collect()
    }

    /// The sequence number of the latest publish.
    pub fn seq(&self) -> u64 {
        self.seq.load(Ordering::SeqCst)
    }

    /// A receiver that changes on every publish and progress event.
    pub fn events(&self) -> watch::Receiver<u64> {
        self.events.subscribe()
    }

    fn bump(&self) {
        self.events.send_modify(|n| *n += 1);
    }

    pub(super) fn on_incoming(&self, message: &Incoming) {
        match message.method.as_str() {
            "textDocument/publishDiagnostics" => {
                let Ok(params) = lsp_types::PublishDiagnosticsParams::deserialize(&message.params)
                else {
                    return;
                };
                let Some(path) = uri_to_path(&params.uri) else {
                    return;
                };
                let closed = lock(&self.closing)
                    .remove(&path)
                    .is_some_and(|at| at.elapsed() < CLOSE_PUBLISH);
                if closed && params.diagnostics.is_empty() && params.version.is_none() {
                    return;
                }
                let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
                lock(&self.diagnostics).insert(
                    path,
                    Published {
                        version: params.version,
                        items: params.diagnostics,
                        seq,
                    },
                );
            }
            "$/progress" => {
                let token = match &message.params["token"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let value = &message.params["value"];
                let percentage = value["percentage"].as_u64().map(|p| p.min(100) as u32);
                let message = value["message"]
                    .as_str()
                    .filter(|m| !m.is_empty())
                    .map(String::from);
                match value["kind"].as_str() {
                    Some("begin") => {
                        let title = value["title"]
                            .as_str()
                            .filter(|t| !t.is_empty())
                            .unwrap_or("analysing")
                            .to_string();
                        lock(&self.progress).insert(
                            token,
                            Progress {
                                title,
                                message,
                                percentage,
                            },
                        );
                    }
                    Some("report") => {
                        if let Some(progress) = lock(&self.progress).get_mut(&token) {
                            if percentage.is_some() {
                                progress.percentage = percentage;
                            }
                            if message.is_some() {
                                progress.message = message;
                            }
                        }
                    }
                    Some("end") => {
                        lock(&self.progress).remove(&token);
                        self.progress_ended.store(true, Ordering::SeqCst);
                    }
                    _ => return,
                }
            }
            "window/logMessage" => {
                let loaded = self.warming.as_deref().is_some_and(|marker| {
                    message.params["message"]
                        .as_str()
                        .is_some_and(|text| text.contains(marker))
                });
                if !loaded {
                    return;
                }
                self.warm.store(true, Ordering::SeqCst);
            }
            "experimental/serverStatus" => {
                *lock(&self.quiescent) = message.params["quiescent"].as_bool();
            }
            "client/registerCapability" => {
                let registrations = message.params["registrations"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                for registration in registrations {
                    match registration["method"].as_str() {
                        Some("workspace/didChangeWatchedFiles") => {
                            let watchers = registration["registerOptions"]["watchers"]
                                .as_array()
                                .cloned()
                                .unwrap_or_default();
                            let mut list = lock(&self.watchers);
                            for watcher in watchers {
                                let pattern = match &watcher["globPattern"] {
                                    Value::String(s) => s.clone(),
                                    relative => relative["pattern"]
                                        .as_str()
                                        .map(|p| format!("**/{p}"))
                                        .unwrap_or_default(),
                                };
                                if let Ok(glob) = Glob::new(&pattern) {
                                    list.push(glob.compile_matcher());
                                }
                            }
                        }
                        Some("textDocument/diagnostic") => {
                            self.pull_registered.store(true, Ordering::SeqCst);
                            let workspace = registration["registerOptions"]["workspaceDiagnostics"]
                                .as_bool()
                                .unwrap_or(false);
                            self.pull_workspace.store(workspace, Ordering::SeqCst);
                        }
                        _ => {}
                    }
                }
            }
            _ => return,
        }
        self.bump();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_and_server_status_make_a_server_busy() {
        let observed = Observed::new(Some("source file".into()));
        assert!(observed.indexing().is_some());
        observed.on_incoming(&Incoming {
            method: "window/logMessage".into(),
            params: json!({"type": 3, "message": "Found 3 source files"}),
        });
        let message = |method: &str, params: Value| Incoming {
            method: method.into(),
            params,
        };
        assert_eq!(observed.indexing(), None);
        observed.on_incoming(&message(
            "$/progress",
            json!({"token": 1, "value": {"kind": "begin", "title": "Indexing"}}),
        ));
        assert_eq!(observed.indexing().as_deref(), Some("indexing"));
        assert!(!observed.progress_ended());
        observed.on_incoming(&message(
            "$/progress",
            json!({"token": 1, "value": {"kind": "end"}}),
        ));
        assert_eq!(observed.indexing(), None);
        assert!(observed.progress_ended());
        // clangd's background index: begin, reports with a percentage.
        observed.on_incoming(&message(
            "$/progress",
            json!({"token": "backgroundIndexProgress", "value": {"kind": "begin", "title": "indexing", "percentage": 0}}),
        ));
        observed.on_incoming(&message(
            "$/progress",
            json!({"token": "backgroundIndexProgress", "value": {"kind": "report", "message": "2/5", "percentage": 40}}),
        ));
        assert_eq!(observed.indexing().as_deref(), Some("indexing: 40 %"));
        observed.on_incoming(&message(
            "$/progress",
            json!({"token": "backgroundIndexProgress", "value": {"kind": "end"}}),
        ));
        // A title that is a sentence follows "still" in lower case.
        observed.on_incoming(&message(
            "$/progress",
            json!({"token": "t", "value": {"kind": "begin", "title": "Initializing JS/TS language features…"}}),
        ));
        assert_eq!(
            observed.indexing().as_deref(),
            Some("initializing JS/TS language features…")
        );
        observed.on_incoming(&message(
            "$/progress",
            json!({"token": "t", "value": {"kind": "end"}}),
        ));
        observed.on_incoming(&message(
            "experimental/serverStatus",
            json!({"health": "ok", "quiescent": false}),
        ));
        assert!(observed.indexing().is_some());
        observed.on_incoming(&message(
            "textDocument/publishDiagnostics",
            json!({"uri": "file:///w/a.py", "version": 3, "diagnostics": []}),
        ));
        let published = observed.published(Path::new("/w/a.py")).unwrap();
        assert_eq!((published.version, published.seq), (Some(3), 1));
        // Closed: forgotten, and the empty publish clearing it ignored.
        observed.forget(Path::new("/w/a.py"));
        assert!(observed.published(Path::new("/w/a.py")).is_none());
        let empty = json!({"uri": "file:///w/a.py", "diagnostics": []});
        observed.on_incoming(&message("textDocument/publishDiagnostics", empty.clone()));
        assert!(observed.published(Path::new("/w/a.py")).is_none());
        observed.on_incoming(&message("textDocument/publishDiagnostics", empty));
        assert_eq!(observed.published(Path::new("/w/a.py")).unwrap().seq, 2);
    }
}
