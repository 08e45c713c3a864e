//! One running server process: its start and handshake, its end, and what
//! it asks of Gantry. What it has open and the files that changed on disk
//! since it last heard are in [`documents`]; what it published and whether
//! it is still indexing, in [`observed`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gantry_core::lock;
use gantry_process::{Child, Command, Sandbox, Stdout, describe_exit};
use lsp_types::FileChangeType;
use serde_json::{Value, json};
use tokio::io::BufReader;
use tokio::sync::watch;

use crate::client::Client;
use crate::convert::path_to_uri;
use crate::spec::ServerSpec;
use crate::transport::{Incoming, Observer, RequestHandler, RpcError, Transport};
use crate::watch::WatchBarrier;

mod documents;
mod observed;

use documents::OpenDoc;
pub use observed::{Observed, Published};

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
    /// sent: see [`crate::watch::WatchBarrier`].
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
    /// `on_exit` is called once, at once, when the process exits, with its
    /// pid (which server of the slot this was) and how it ended.
    pub async fn start(
        launch: Launch<'_>,
        on_exit: impl FnOnce(u32, String) + Send + 'static,
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
            on_exit(pid, reason);
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

    /// Why the server can no longer answer, if it cannot: its process
    /// exited, or (sooner than the exit is reaped) its pipe closed.
    pub fn gone(&self) -> Option<String> {
        self.exited()
            .or_else(|| self.client().transport().closed_reason())
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
}
