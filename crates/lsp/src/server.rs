//! One running server process: its client, the documents it has open,
//! what it published, whether it is still indexing, and the files that
//! changed on disk since it last heard.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use gantry_core::lock;
use gantry_process::{Child, Command, Stdout, describe_exit};
use globset::{Glob, GlobMatcher};
use lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
    DidSaveTextDocument,
};
use lsp_types::{
    Diagnostic, DidChangeTextDocumentParams, DidChangeWatchedFilesParams,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams,
    FileChangeType, FileEvent, TextDocumentContentChangeEvent, TextDocumentIdentifier,
    TextDocumentItem, VersionedTextDocumentIdentifier,
};
use serde_json::{Value, json};
use tokio::io::BufReader;
use tokio::sync::{mpsc, watch};

use crate::client::Client;
use crate::convert::{path_to_uri, uri_to_path};
use crate::servers::{ServerSpec, language_of};
use crate::transport::{Incoming, RequestHandler, RpcError, Transport};

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

/// What the notification pump learns; read by requests and the write hook.
#[derive(Default)]
pub struct Observed {
    warming: Option<String>,
    warm: AtomicBool,
    progress: Mutex<HashMap<String, String>>,
    quiescent: Mutex<Option<bool>>,
    diagnostics: Mutex<HashMap<PathBuf, Published>>,
    watchers: Mutex<Vec<GlobMatcher>>,
    pull_registered: AtomicBool,
    seq: AtomicU64,
    events: watch::Sender<u64>,
}

impl Observed {
    fn new(ready_log: Option<String>) -> Self {
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

    /// What the server is busy with, if it said so: an open work-done
    /// progress, or rust-analyzer not yet quiescent.
    pub fn indexing(&self) -> Option<String> {
        if self.warming() {
            return Some("loading the workspace".into());
        }
        if let Some(title) = lock(&self.progress).values().next() {
            return Some(title.clone());
        }
        if *lock(&self.quiescent) == Some(false) {
            return Some("loading the workspace".into());
        }
        None
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

    fn on_incoming(&self, message: Incoming) {
        match message.method.as_str() {
            "textDocument/publishDiagnostics" => {
                let Ok(params) =
                    serde_json::from_value::<lsp_types::PublishDiagnosticsParams>(message.params)
                else {
                    return;
                };
                let Some(path) = uri_to_path(&params.uri) else {
                    return;
                };
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
                match value["kind"].as_str() {
                    Some("begin") => {
                        let title = value["title"]
                            .as_str()
                            .filter(|t| !t.is_empty())
                            .unwrap_or("analysing")
                            .to_string();
                        lock(&self.progress).insert(token, title);
                    }
                    Some("end") => {
                        lock(&self.progress).remove(&token);
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
                            self.pull_registered.store(true, Ordering::SeqCst)
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

/// An open document as the server last saw it.
struct OpenDoc {
    version: i32,
    text: Arc<str>,
    stamp: Option<Stamp>,
    /// Whether a Gantry write has gone to the server for it: its
    /// diagnostics may then no longer be a baseline from before the write.
    written: bool,
}

/// What a file looked like on disk when last synced: enough to notice a
/// change made behind Gantry's back with one `stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: SystemTime,
    len: u64,
}

/// Reads a file on the blocking pool, never waiting on a FIFO or device
/// planted where a source file was (the caller holds the documents' lock).
async fn read_off_runtime(path: &Path) -> std::io::Result<Vec<u8>> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || gantry_core::read_regular(&path))
        .await
        .map_err(std::io::Error::other)?
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        modified: meta.modified().ok()?,
        len: meta.len(),
    })
}

/// A running server.
pub struct Server {
    /// Its table entry.
    pub spec: ServerSpec,
    /// The root it serves.
    pub root: PathBuf,
    /// The binary it runs.
    pub binary: PathBuf,
    /// Its process id (also its process group).
    pub pid: u32,
    child: Arc<Child>,
    client: Client,
    observed: Arc<Observed>,
    docs: tokio::sync::Mutex<HashMap<PathBuf, OpenDoc>>,
    disk_changes: Mutex<HashMap<PathBuf, FileChangeType>>,
    last_used: Mutex<Instant>,
    exit: watch::Receiver<Option<String>>,
    stopping: AtomicBool,
    request_timeout: Duration,
}

/// What starting a server needs besides its table entry.
pub struct Launch<'a> {
    /// Its table entry.
    pub spec: &'a ServerSpec,
    /// Its root.
    pub root: &'a Path,
    /// Its binary.
    pub binary: &'a Path,
    /// Deadline of the start, `initialize` included.
    pub start_timeout: Duration,
    /// Deadline of every later request.
    pub request_timeout: Duration,
}

impl Server {
    /// Spawns the process in its own process group and runs the handshake.
    /// `on_exit` is called once, at once, when the process exits.
    pub async fn start(
        launch: Launch<'_>,
        on_exit: impl FnOnce(String) + Send + 'static,
    ) -> Result<Arc<Server>, String> {
        let mut child = Command::new(launch.binary)
            .args(&launch.spec.args)
            .current_dir(launch.root)
            .stdin_piped()
            .stdout(Stdout::Piped)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", launch.binary.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the server's pipes could not be opened".into());
        };
        let child = Arc::new(child);
        let pid = child.pid();

        let settings = launch.spec.settings.clone();
        let root_uri = path_to_uri(launch.root);
        let handler: RequestHandler = Arc::new(move |method, params| {
            answer_server_request(method, params, &settings, &root_uri)
        });
        let (transport, incoming) = Transport::start(BufReader::new(stdout), stdin, handler);
        let observed = Arc::new(Observed::new(launch.spec.ready_log.clone()));
        tokio::spawn(pump(incoming, observed.clone()));

        let (exit_tx, exit) = watch::channel(None);
        let watched = child.clone();
        tokio::spawn(async move {
            // Helpers the server started (node under a Python shim) go with
            // it: its group is killed as soon as it exits.
            let status = watched.wait().await;
            let mut reason = match status {
                Ok(status) => describe_exit(status),
                Err(e) => format!("could not be waited for: {e}"),
            };
            let stderr = explain_stderr(&watched).await;
            if !stderr.is_empty() {
                reason.push_str(&format!("; its stderr: {stderr}"));
            }
            exit_tx.send_replace(Some(reason.clone()));
            on_exit(reason);
        });

        let initialized = Client::initialize(
            transport,
            launch.root,
            &launch.spec.initialization_options,
            launch.start_timeout,
        )
        .await;
        let client = match initialized {
            Ok(client) => client,
            Err(e) => {
                child.kill_group();
                let mut exit = exit.clone();
                let waited =
                    tokio::time::timeout(Duration::from_secs(2), exit.wait_for(Option::is_some))
                        .await
                        .ok()
                        .and_then(|reason| reason.ok()?.clone());
                let why = match waited {
                    Some(reason)
                        if !matches!(e, crate::transport::RequestError::Timeout { .. }) =>
                    {
                        reason
                    }
                    _ => {
                        let stderr = explain_stderr(&child).await;
                        if stderr.is_empty() {
                            e.to_string()
                        } else {
                            format!("{e}; its stderr: {stderr}")
                        }
                    }
                };
                return Err(format!("{} did not start: {why}", launch.spec.id));
            }
        };
        Ok(Arc::new(Server {
            spec: launch.spec.clone(),
            root: launch.root.to_path_buf(),
            binary: launch.binary.to_path_buf(),
            pid,
            child,
            client,
            observed,
            docs: tokio::sync::Mutex::default(),
            disk_changes: Mutex::default(),
            last_used: Mutex::new(Instant::now()),
            exit,
            stopping: AtomicBool::new(false),
            request_timeout: launch.request_timeout,
        }))
    }

    /// The client, for requests.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// What the pump observed.
    pub fn observed(&self) -> &Observed {
        &self.observed
    }

    /// The deadline of one request.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// Whether the process has exited (and why).
    pub fn exited(&self) -> Option<String> {
        self.exit.borrow().clone()
    }

    /// Resolves when the process has exited.
    pub async fn wait_exit(&self) {
        let mut exit = self.exit.clone();
        let _ = exit.wait_for(Option::is_some).await;
    }

    /// When it was last asked anything.
    pub fn last_used(&self) -> Instant {
        *lock(&self.last_used)
    }

    /// Whether the server offers pull diagnostics for documents.
    pub fn pulls_diagnostics(&self) -> bool {
        self.client.capabilities().diagnostic_provider.is_some()
            || self.observed.pull_registered.load(Ordering::SeqCst)
    }

    /// Whether the server offers workspace-wide pull diagnostics.
    pub fn workspace_diagnostics(&self) -> bool {
        use lsp_types::DiagnosticServerCapabilities as D;
        match &self.client.capabilities().diagnostic_provider {
            Some(D::Options(o)) => o.workspace_diagnostics,
            Some(D::RegistrationOptions(o)) => o.diagnostic_options.workspace_diagnostics,
            None => false,
        }
    }

    /// How many documents are open.
    pub async fn open_count(&self) -> usize {
        self.docs.lock().await.len()
    }

    /// The version of an open document the server has.
    pub async fn version(&self, path: &Path) -> Option<i32> {
        self.docs.lock().await.get(path).map(|doc| doc.version)
    }

    /// Paths of the open documents.
    pub async fn open_paths(&self) -> Vec<PathBuf> {
        self.docs.lock().await.keys().cloned().collect()
    }

    /// Records a change on disk seen by the file watcher; sent before the
    /// next request.
    pub fn disk_changed(&self, path: PathBuf, kind: FileChangeType) {
        lock(&self.disk_changes).insert(path, kind);
    }

    /// Brings the server's view up to date before a request: changes the
    /// watcher saw go out as `didChangeWatchedFiles`, and every open
    /// document whose file changed on disk (by a shell, git, an editor) is
    /// re-sent, so no answer comes from a stale view.
    pub async fn refresh(&self) {
        *lock(&self.last_used) = Instant::now();
        if self.observed.warming() {
            let deadline = tokio::time::Instant::now() + self.request_timeout;
            let mut events = self.observed.events();
            while self.observed.warming() {
                if tokio::time::timeout_at(deadline, events.changed())
                    .await
                    .map_or(true, |r| r.is_err())
                {
                    break;
                }
            }
        }
        let changes: Vec<_> = lock(&self.disk_changes).drain().collect();
        let mut docs = self.docs.lock().await;
        let mut events = Vec::new();
        for (path, kind) in changes {
            if docs.contains_key(&path) || !self.wants(&path) {
                continue;
            }
            events.push(FileEvent::new(path_to_uri(&path), kind));
        }
        if !events.is_empty() {
            self.client
                .notify::<DidChangeWatchedFiles>(&DidChangeWatchedFilesParams { changes: events });
        }
        let paths: Vec<PathBuf> = docs.keys().cloned().collect();
        for path in paths {
            let now = stamp(&path);
            let doc = docs.get_mut(&path).expect("listed above");
            if now == doc.stamp {
                continue;
            }
            match read_off_runtime(&path).await {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    if *text != *doc.text {
                        self.change_doc(&path, doc, text.into_owned());
                    }
                    doc.stamp = now;
                }
                Err(_) => {
                    self.client
                        .notify::<DidCloseTextDocument>(&DidCloseTextDocumentParams {
                            text_document: TextDocumentIdentifier::new(path_to_uri(&path)),
                        });
                    docs.remove(&path);
                }
            }
        }
    }

    /// Opens `path` if needed (after [`Server::refresh`] made it fresh)
    /// and returns the text the server now has.
    pub async fn open(&self, path: &Path) -> std::io::Result<Arc<str>> {
        let mut docs = self.docs.lock().await;
        if let Some(doc) = docs.get(path) {
            return Ok(doc.text.clone());
        }
        let stamp_before = stamp(path);
        let bytes = read_off_runtime(path).await?;
        let text: Arc<str> = String::from_utf8_lossy(&bytes).into();
        self.client
            .notify::<DidOpenTextDocument>(&DidOpenTextDocumentParams {
                text_document: TextDocumentItem::new(
                    path_to_uri(path),
                    language_of(path).unwrap_or("plaintext").to_string(),
                    1,
                    text.to_string(),
                ),
            });
        docs.insert(
            path.to_path_buf(),
            OpenDoc {
                version: 1,
                text: text.clone(),
                stamp: stamp_before,
                written: false,
            },
        );
        Ok(text)
    }

    /// Whether `path` is open and no Gantry write has been sent for it:
    /// what the server says about it is then a baseline from before any
    /// write of this run.
    pub async fn unwritten(&self, path: &Path) -> bool {
        self.docs
            .lock()
            .await
            .get(path)
            .is_some_and(|doc| !doc.written)
    }

    /// Tells the server about a write Gantry made: new content for an
    /// open document (`didChange` + `didSave`), `didOpen` for one it had
    /// not seen, `didClose` for a deleted one. Returns the version sent.
    pub async fn written(&self, path: &Path, content: Option<&[u8]>) -> Option<i32> {
        *lock(&self.last_used) = Instant::now();
        let mut docs = self.docs.lock().await;
        let uri = path_to_uri(path);
        let Some(content) = content else {
            if docs.remove(path).is_some() {
                self.client
                    .notify::<DidCloseTextDocument>(&DidCloseTextDocumentParams {
                        text_document: TextDocumentIdentifier::new(uri.clone()),
                    });
            }
            self.client
                .notify::<DidChangeWatchedFiles>(&DidChangeWatchedFilesParams {
                    changes: vec![FileEvent::new(uri, FileChangeType::DELETED)],
                });
            return None;
        };
        let text = String::from_utf8_lossy(content).into_owned();
        lock(&self.disk_changes).remove(path);
        let version = match docs.get_mut(path) {
            Some(doc) => {
                if *doc.text != *text {
                    self.change_doc(path, doc, text);
                }
                doc.stamp = stamp(path);
                doc.written = true;
                doc.version
            }
            None => {
                let arc: Arc<str> = text.into();
                self.client
                    .notify::<DidOpenTextDocument>(&DidOpenTextDocumentParams {
                        text_document: TextDocumentItem::new(
                            uri.clone(),
                            language_of(path).unwrap_or("plaintext").to_string(),
                            1,
                            arc.to_string(),
                        ),
                    });
                docs.insert(
                    path.to_path_buf(),
                    OpenDoc {
                        version: 1,
                        text: arc,
                        stamp: stamp(path),
                        written: true,
                    },
                );
                1
            }
        };
        self.client
            .notify::<DidSaveTextDocument>(&DidSaveTextDocumentParams {
                text_document: TextDocumentIdentifier::new(uri),
                text: None,
            });
        Some(version)
    }

    fn change_doc(&self, path: &Path, doc: &mut OpenDoc, text: String) {
        doc.version += 1;
        self.client
            .notify::<DidChangeTextDocument>(&DidChangeTextDocumentParams {
                text_document: VersionedTextDocumentIdentifier::new(path_to_uri(path), doc.version),
                content_changes: vec![TextDocumentContentChangeEvent {
                    range: None,
                    range_length: None,
                    text: text.clone(),
                }],
            });
        doc.text = text.into();
    }

    /// Whether a file change matters to this server: a pattern it
    /// registered, or (when it registered none) a file of its languages.
    fn wants(&self, path: &Path) -> bool {
        let watchers = lock(&self.observed.watchers);
        if watchers.is_empty() {
            return language_of(path).is_some_and(|l| self.spec.languages.iter().any(|s| s == l));
        }
        watchers.iter().any(|w| w.is_match(path))
    }

    /// Stops the server politely within `timeout` (`shutdown` and
    /// `exit`), then its group with SIGTERM within `timeout` more, then
    /// SIGKILL.
    pub async fn stop(&self, timeout: Duration) {
        self.stopping.store(true, Ordering::SeqCst);
        if self.exited().is_none() {
            let _ = tokio::time::timeout(timeout, self.client.shutdown(timeout)).await;
        }
        let _ = self.child.stop(timeout).await;
    }

    /// Whether [`Server::stop`] was called (an exit is then not a crash).
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Kills the process group at once, without waiting.
    pub fn kill_now(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.child.kill_group();
    }

    /// Waits until the server is not indexing, at most until `deadline`;
    /// true when it is idle.
    pub async fn wait_idle(&self, deadline: tokio::time::Instant) -> bool {
        let mut events = self.observed.events();
        loop {
            if self.observed.indexing().is_none() {
                return true;
            }
            if tokio::time::timeout_at(deadline, events.changed())
                .await
                .map_or(true, |r| r.is_err())
            {
                return self.observed.indexing().is_none();
            }
        }
    }
}

/// Answers what servers ask of their client. Nothing here blocks.
fn answer_server_request(
    method: &str,
    params: &Value,
    settings: &Value,
    root: &lsp_types::Url,
) -> Result<Value, RpcError> {
    match method {
        "workspace/configuration" => {
            let items = params["items"].as_array().cloned().unwrap_or_default();
            Ok(Value::Array(
                items
                    .iter()
                    .map(|item| {
                        let section = item["section"].as_str().unwrap_or("");
                        section
                            .split('.')
                            .filter(|s| !s.is_empty())
                            .try_fold(settings, |value, key| value.get(key))
                            .cloned()
                            .unwrap_or(Value::Null)
                    })
                    .collect(),
            ))
        }
        "workspace/workspaceFolders" => Ok(json!([{"uri": root, "name": "root"}])),
        "workspace/applyEdit" => Ok(json!({
            "applied": false,
            "failureReason": "Gantry applies edits only through its own write path"
        })),
        "client/registerCapability"
        | "client/unregisterCapability"
        | "window/workDoneProgress/create"
        | "window/showMessageRequest"
        | "window/showDocument"
        | "workspace/diagnostic/refresh"
        | "workspace/semanticTokens/refresh"
        | "workspace/inlayHint/refresh"
        | "workspace/inlineValue/refresh"
        | "workspace/codeLens/refresh" => Ok(Value::Null),
        other => Err(RpcError::method_not_found(other)),
    }
}

async fn pump(mut incoming: mpsc::UnboundedReceiver<Incoming>, observed: Arc<Observed>) {
    while let Some(message) = incoming.recv().await {
        observed.on_incoming(message);
    }
}

/// What a server said on stderr about its death, in one line. Its group is
/// dead or being killed, so the pipe ends at once unless a process that
/// left the group holds it: that is waited for a moment only.
async fn explain_stderr(child: &Child) -> String {
    let Some(stderr) = child.stderr() else {
        return String::new();
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), stderr.finished()).await;
    stderr.explain()
}

/// Files of the workspace that changed, in the form servers take.
pub fn change_kind(kind: &notify::EventKind) -> Option<FileChangeType> {
    use notify::EventKind;
    match kind {
        EventKind::Create(_) => Some(FileChangeType::CREATED),
        EventKind::Modify(notify::event::ModifyKind::Metadata(_)) => None,
        EventKind::Modify(_) => Some(FileChangeType::CHANGED),
        EventKind::Remove(_) => Some(FileChangeType::DELETED),
        _ => None,
    }
}

/// Paths a watcher should not bother servers with.
pub fn ignored(path: &Path) -> bool {
    const SKIP: [&str; 5] = [".git", "target", "node_modules", "__pycache__", ".gantry"];
    path.components()
        .any(|c| SKIP.iter().any(|s| c.as_os_str() == *s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_is_answered_from_settings_by_section() {
        let settings = json!({"python": {"analysis": {"typeCheckingMode": "strict"}}});
        let root = lsp_types::Url::parse("file:///w").unwrap();
        let answer = answer_server_request(
            "workspace/configuration",
            &json!({"items": [{"section": "python.analysis"}, {"section": "other"}, {}]}),
            &settings,
            &root,
        )
        .unwrap();
        assert_eq!(
            answer,
            json!([{"typeCheckingMode": "strict"}, null, settings])
        );
        assert!(answer_server_request("x/y", &Value::Null, &settings, &root).is_err());
    }

    #[test]
    fn progress_and_server_status_make_a_server_busy() {
        let observed = Observed::new(Some("source file".into()));
        assert!(observed.indexing().is_some());
        observed.on_incoming(Incoming {
            method: "window/logMessage".into(),
            params: json!({"type": 3, "message": "Found 3 source files"}),
        });
        let message = |method: &str, params: Value| Incoming {
            method: method.into(),
            params,
        };
        assert_eq!(observed.indexing(), None);
        observed.on_incoming(message(
            "$/progress",
            json!({"token": 1, "value": {"kind": "begin", "title": "Indexing"}}),
        ));
        assert_eq!(observed.indexing().as_deref(), Some("Indexing"));
        observed.on_incoming(message(
            "$/progress",
            json!({"token": 1, "value": {"kind": "end"}}),
        ));
        assert_eq!(observed.indexing(), None);
        observed.on_incoming(message(
            "experimental/serverStatus",
            json!({"health": "ok", "quiescent": false}),
        ));
        assert!(observed.indexing().is_some());
        observed.on_incoming(message(
            "textDocument/publishDiagnostics",
            json!({"uri": "file:///w/a.py", "version": 3, "diagnostics": []}),
        ));
        let published = observed.published(Path::new("/w/a.py")).unwrap();
        assert_eq!((published.version, published.seq), (Some(3), 1));
    }
}
