//! One running server process: its client, the documents it has open,
//! what it published, whether it is still indexing, and the files that
//! changed on disk since it last heard.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use gantry_core::lock;
use gantry_process::{Child, Command, Sandbox, Stdout, describe_exit};
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
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::BufReader;
use tokio::sync::watch;

use crate::client::Client;
use crate::convert::{path_to_uri, uri_to_path};
use crate::servers::{ServerSpec, language_of};
use crate::supervisor::WatchBarrier;
use crate::transport::{Incoming, Observer, RequestHandler, RpcError, Transport};

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
    watchers: Mutex<Vec<GlobMatcher>>,
    pull_registered: AtomicBool,
    pull_workspace: AtomicBool,
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

    fn on_incoming(&self, message: &Incoming) {
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

/// An open document as the server last saw it.
struct OpenDoc {
    version: i32,
    text: Arc<str>,
    stamp: Option<Stamp>,
    /// Whether a Gantry write has gone to the server for it: its
    /// diagnostics may then no longer be a baseline from before the write.
    written: bool,
    /// Set when the file is open only because a write could break it (it
    /// uses what the write changed): the number of the last write that
    /// needed it. Such a file is closed again once the run no longer needs
    /// it; reading or writing it makes it the run's own.
    borrowed: Option<u64>,
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
    /// The file watcher's barrier, crossed before the changes it saw are
    /// sent: see [`crate::supervisor::WatchBarrier`].
    watcher: Mutex<Option<Arc<WatchBarrier>>>,
    last_used: Mutex<Instant>,
    exit: watch::Receiver<Option<String>>,
    stopping: AtomicBool,
    request_timeout: Duration,
    /// It was given a compilation database that lists the project's files.
    has_database: bool,
}

/// How much of the project a server's cross-file answers cover.
#[derive(Debug, Clone, PartialEq)]
pub enum Coverage {
    /// The whole project, as far as the server knows it.
    Whole,
    /// Not yet: the server is loading or indexing; why, in a sentence
    /// (`clangd is still indexing: 40 %`).
    Busy(String),
    /// Only the files open in the server, and why, in a sentence: clangd
    /// without a compilation database has no list of files to index.
    OpenFiles(String),
}

impl Coverage {
    /// The sentence saying why an answer may be incomplete, if it may.
    pub fn caveat(&self) -> Option<&str> {
        match self {
            Coverage::Whole => None,
            Coverage::Busy(why) | Coverage::OpenFiles(why) => Some(why),
        }
    }
}

/// What starting a server needs besides its table entry.
pub struct Launch<'a> {
    /// Its table entry.
    pub spec: &'a ServerSpec,
    /// Its root.
    pub root: &'a Path,
    /// Its binary.
    pub binary: &'a Path,
    /// Variables its toolchain needs (`RUSTUP_TOOLCHAIN`, ...), set on
    /// top of the command environment.
    pub env: &'a [(String, String)],
    /// The run's sandbox; the server may also write its own cache folder
    /// (and clangd its compilation database's) in Gantry's state
    /// directory, never the user's home.
    pub sandbox: &'a Sandbox,
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
        let database = match launch.spec.compilation_database {
            true => {
                let root = launch.root.to_path_buf();
                tokio::task::spawn_blocking(move || crate::compile_db::prepare(&root))
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| format!("cannot prepare the compilation database: {e}"))?
            }
            false => None,
        };
        let cache =
            gantry_core::state::create_dir(&format!("lsp-cache/{}", launch.spec.id), launch.root)
                .map_err(|e| format!("cannot make the server's cache folder: {e}"))?;
        let mut sandbox = launch.sandbox.also_writable(&cache);
        if let Some(dir) = &database {
            sandbox = sandbox.also_writable(dir);
        }
        let mut command = Command::new(launch.binary, &sandbox);
        command
            .args(&launch.spec.args)
            // Where servers keep their caches (tsserver's typings, ...).
            .env("XDG_CACHE_HOME", &cache)
            .envs(launch.env.iter().map(|(key, value)| (key, value)));
        if let Some(dir) = &database {
            command.arg(format!("--compile-commands-dir={}", dir.display()));
        }
        let mut child = command
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
        let observed = Arc::new(Observed::new(launch.spec.ready_log.clone()));
        let observer = {
            let observed = observed.clone();
            Arc::new(move |message: &Incoming| observed.on_incoming(message)) as Observer
        };
        // Everything arrives through the observer; the channel is unused.
        let (transport, _incoming) =
            Transport::start_observed(BufReader::new(stdout), stdin, handler, Some(observer));

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
            watcher: Mutex::default(),
            last_used: Mutex::new(Instant::now()),
            exit,
            stopping: AtomicBool::new(false),
            request_timeout: launch.request_timeout,
            has_database: database.is_some(),
        }))
    }

    /// The client, for requests.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// What the observer learnt from the server's notifications.
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
            None => self.observed.pull_workspace.load(Ordering::SeqCst),
        }
    }

    /// How much of the project the server's cross-file answers
    /// (references, implementations, workspace symbols, renames) cover now.
    pub async fn coverage(&self) -> Coverage {
        let id = &self.spec.id;
        if let Some(task) = self.observed.indexing() {
            return Coverage::Busy(format!("{id} is still {task}"));
        }
        if !self.spec.compilation_database {
            return Coverage::Whole;
        }
        if !self.has_database {
            return Coverage::OpenFiles(format!(
                "{id} has no index of the whole project here (no {} or {} for its background \
                 index to list the files from), so it knows only the {} file(s) open in this run",
                crate::compile_db::DATABASES.join(" or "),
                crate::compile_db::FLAGS,
                self.open_count().await
            ));
        }
        if !self.observed.progress_ended() {
            return Coverage::Busy(format!(
                "{id} has not finished indexing the project yet (it knows the open files and \
                 what they include)"
            ));
        }
        Coverage::Whole
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

    /// Follows the file watcher: each refresh first waits until it has
    /// handed on the changes made before.
    pub(crate) fn follow_watcher(&self, barrier: Arc<WatchBarrier>) {
        *lock(&self.watcher) = Some(barrier);
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
        let barrier = lock(&self.watcher).clone();
        if let Some(barrier) = barrier {
            barrier.cross().await;
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
                    self.close_doc(&path);
                    docs.remove(&path);
                }
            }
        }
    }

    /// Opens `path` if needed (after [`Server::refresh`] made it fresh)
    /// and returns the text the server now has.
    pub async fn open(&self, path: &Path) -> std::io::Result<Arc<str>> {
        let mut docs = self.docs.lock().await;
        if let Some(doc) = docs.get_mut(path) {
            doc.borrowed = None;
            return Ok(doc.text.clone());
        }
        self.open_locked(&mut docs, path, None).await
    }

    /// Opens `path` because write number `write` could break it; a file
    /// the run has open stays the run's. Returns whether it was opened now
    /// (its diagnostics are then still to come).
    pub async fn open_borrowed(&self, path: &Path, write: u64) -> std::io::Result<bool> {
        let mut docs = self.docs.lock().await;
        if let Some(doc) = docs.get_mut(path) {
            if let Some(last) = doc.borrowed.as_mut() {
                *last = write;
            }
            return Ok(false);
        }
        self.open_locked(&mut docs, path, Some(write)).await?;
        Ok(true)
    }

    /// Closes the files opened only for writes before number `write`;
    /// returns them.
    pub async fn close_borrowed_before(&self, write: u64) -> Vec<PathBuf> {
        let mut docs = self.docs.lock().await;
        let done: Vec<PathBuf> = docs
            .iter()
            .filter(|(_, doc)| doc.borrowed.is_some_and(|last| last < write))
            .map(|(path, _)| path.clone())
            .collect();
        for path in &done {
            docs.remove(path);
            self.close_doc(path);
        }
        done
    }

    /// Whether `path` is open only because a write could break it.
    pub async fn is_borrowed(&self, path: &Path) -> bool {
        self.docs
            .lock()
            .await
            .get(path)
            .is_some_and(|doc| doc.borrowed.is_some())
    }

    fn close_doc(&self, path: &Path) {
        self.client
            .notify::<DidCloseTextDocument>(&DidCloseTextDocumentParams {
                text_document: TextDocumentIdentifier::new(path_to_uri(path)),
            });
        self.observed.forget(path);
    }

    async fn open_locked(
        &self,
        docs: &mut HashMap<PathBuf, OpenDoc>,
        path: &Path,
        borrowed: Option<u64>,
    ) -> std::io::Result<Arc<str>> {
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
                borrowed,
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
                self.close_doc(path);
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
                doc.borrowed = None;
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
                        borrowed: None,
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

    /// Waits until the server's cross-file answers are no longer
    /// [`Coverage::Busy`], at most until `deadline`; what they cover then.
    pub async fn wait_covered(&self, deadline: tokio::time::Instant) -> Coverage {
        let mut events = self.observed.events();
        loop {
            let coverage = self.coverage().await;
            if !matches!(coverage, Coverage::Busy(_))
                || tokio::time::timeout_at(deadline, events.changed())
                    .await
                    .map_or(true, |r| r.is_err())
            {
                return coverage;
            }
        }
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
