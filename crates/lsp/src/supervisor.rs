//! The supervisor: one server per (server, root), started in the
//! background on first touch, restarted after a crash on next use (a
//! bounded number of times), stopped when idle, all killed when the run
//! ends. It is the run's [`Resource`].

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_core::lock;
use gantry_core::{Notices, Resource, Run, async_trait};
use gantry_process::Sandbox;
use tokio::sync::watch;

use crate::paths::find_markers;
use crate::server::{Launch, Server};
use crate::servers::{Choice, Config, ServerSpec, choose};
use crate::watch::{DiskWatch, WatchBarrier};

/// How long a graceful stop may take before the group is killed.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// Where one (server, root) pair stands.
#[derive(Clone)]
enum Phase {
    /// Not started yet, or stopped after being idle.
    Idle(Option<String>),
    /// Starting in the background.
    Starting,
    /// Running and initialized.
    Ready(Arc<Server>),
    /// Exited or failed to start; restarts on next use.
    Crashed(String),
    /// Crashed more often than allowed; only `reload` starts it again.
    GaveUp(String),
}

/// One (server, root) pair.
struct Slot {
    spec: ServerSpec,
    root: PathBuf,
    binary: PathBuf,
    /// Variables its toolchain needs set (see [`crate::toolchain`]).
    env: Vec<(String, String)>,
    /// Which interpreter or toolchain it uses, and why.
    uses: String,
    phase: watch::Sender<Phase>,
    restarts: AtomicU32,
}

impl Slot {
    fn phase(&self) -> Phase {
        self.phase.borrow().clone()
    }
}

/// Why a file has no server to ask.
#[derive(Debug, Clone, PartialEq)]
pub enum Unavailable {
    /// No server in the table serves this kind of file.
    NoServer(String),
    /// Servers exist but none can start here, or the one that serves it
    /// failed.
    Down(String),
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailable::NoServer(text) | Unavailable::Down(text) => f.write_str(text),
        }
    }
}

/// Told that a file the run works on is open in its server with the
/// content given (not a file about to be written: what the server says of
/// that may already be about the new content).
pub(crate) type Opened = Arc<dyn Fn(&Arc<Server>, &Path, &str) + Send + Sync>;

struct Inner {
    config: Config,
    workspace: PathBuf,
    /// The run's sandbox, which servers and checkers run in like every
    /// other process Gantry starts.
    sandbox: Sandbox,
    slots: Mutex<HashMap<(String, PathBuf), Arc<Slot>>>,
    notices: Notices,
    watch: Mutex<Option<DiskWatch>>,
    ended: AtomicBool,
    /// Who is told of each file opened for the run's work.
    opened: Mutex<Vec<Opened>>,
}

/// The run's language servers. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Supervisor {
    inner: Arc<Inner>,
}

impl Supervisor {
    /// A supervisor for `workspace` with the family's configuration,
    /// starting servers in `sandbox`; crashes are reported on the run's
    /// notice queue at once.
    pub fn new(workspace: &Path, config: Config, notices: Notices, sandbox: Sandbox) -> Self {
        Supervisor {
            inner: Arc::new(Inner {
                config,
                workspace: workspace.to_path_buf(),
                sandbox,
                slots: Mutex::default(),
                notices,
                watch: Mutex::default(),
                ended: AtomicBool::new(false),
                opened: Mutex::default(),
            }),
        }
    }

    /// The supervisor a run owns, if the family is wired.
    pub fn of(run: &Run) -> Option<Supervisor> {
        run.resource::<Supervisor>()
            .map(|supervisor| supervisor.as_ref().clone())
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The workspace the servers serve.
    pub fn workspace(&self) -> &Path {
        &self.inner.workspace
    }

    /// Adds to those told of each file opened for the run's work (the
    /// diagnostics baseline, the declarations a later write may touch).
    pub(crate) fn on_opened(&self, opened: Opened) {
        lock(&self.inner.opened).push(opened);
    }

    /// Tells those who asked that `path` is open in `server` as `text`
    /// for the run's work.
    pub(crate) fn opened(&self, server: &Arc<Server>, path: &Path, text: &str) {
        let told: Vec<Opened> = lock(&self.inner.opened).clone();
        for opened in told {
            opened(server, path, text);
        }
    }

    fn notice(&self, text: String) {
        self.inner.notices.push(text);
    }

    /// Starts, in the background, the server for `path` and opens the file
    /// in it, so that the first real request or write rarely waits and a
    /// later write has a diagnostics baseline (see [`Supervisor::on_opened`]).
    pub fn touch(&self, path: &Path) {
        self.warm(path, true);
    }

    /// Like [`Supervisor::touch`], for a file about to be written: what the
    /// server says about it may already be about the new content, so it is
    /// not taken as a baseline.
    pub(crate) fn touch_for_write(&self, path: &Path) {
        self.warm(path, false);
    }

    fn warm(&self, path: &Path, baseline: bool) {
        let Ok(slot) = self.slot_for(path) else {
            return;
        };
        self.ensure_started(&slot);
        let this = self.clone();
        let path = path.to_path_buf();
        tokio::spawn(async move {
            if let Ok(server) = this.ready(&slot).await {
                server.refresh().await;
                if let Ok(text) = server.open(&path).await
                    && baseline
                {
                    this.opened(&server, &path, &text);
                }
            }
        });
    }

    /// Closes, in every running server, the files opened only for writes
    /// before number `write`; returns them.
    pub(crate) async fn close_borrowed_before(&self, write: u64) -> Vec<PathBuf> {
        let mut closed = Vec::new();
        for server in self.running() {
            closed.extend(server.close_borrowed_before(write).await);
        }
        closed
    }

    /// The running server for `path`, started (or restarted after a
    /// crash) if needed, within the start deadline.
    pub async fn server_for(&self, path: &Path) -> Result<Arc<Server>, Unavailable> {
        let slot = self.slot_for(path)?;
        self.ensure_started(&slot);
        self.ready(&slot).await.map_err(Unavailable::Down)
    }

    /// The servers running now.
    pub fn running(&self) -> Vec<Arc<Server>> {
        lock(&self.inner.slots)
            .values()
            .filter_map(|slot| match slot.phase() {
                Phase::Ready(server) => Some(server),
                _ => None,
            })
            .collect()
    }

    fn slot_for(&self, path: &Path) -> Result<Arc<Slot>, Unavailable> {
        match choose(&self.inner.config, &self.inner.workspace, path) {
            Choice::NoServer => Err(Unavailable::NoServer(format!(
                "no server for this language: no language server in the table serves `{}` files",
                path.extension()
                    .map(|e| format!(".{}", e.to_string_lossy()))
                    .unwrap_or_else(|| "extension-less".into())
            ))),
            Choice::Missing(reasons) => Err(Unavailable::NoServer(format!(
                "no server for this language can start here: {}",
                reasons.join("; ")
            ))),
            Choice::Usable { prepared, root } => {
                let mut slots = lock(&self.inner.slots);
                let slot = slots
                    .entry((prepared.spec.id.clone(), root.clone()))
                    .or_insert_with(|| {
                        Arc::new(Slot {
                            spec: prepared.spec,
                            root,
                            binary: prepared.binary,
                            env: prepared.env,
                            uses: prepared.uses,
                            phase: watch::channel(Phase::Idle(None)).0,
                            restarts: AtomicU32::new(0),
                        })
                    });
                Ok(slot.clone())
            }
        }
    }

    fn ensure_started(&self, slot: &Arc<Slot>) {
        if self.inner.ended.load(Ordering::SeqCst) {
            return;
        }
        if let Phase::Ready(server) = slot.phase()
            && let Some(reason) = server.gone()
        {
            self.exited(slot, server.pid, reason);
        }
        let max = self.inner.config.max_restarts;
        let mut start = false;
        slot.phase.send_if_modified(|phase| match phase {
            Phase::Idle(_) => {
                *phase = Phase::Starting;
                start = true;
                true
            }
            Phase::Crashed(reason) => {
                if slot.restarts.load(Ordering::SeqCst) >= max {
                    *phase = Phase::GaveUp(format!(
                        "{reason}; it crashed {} times in a row without answering a request, so \
                         it is not restarted again until `lsp reload`",
                        max + 1
                    ));
                } else {
                    slot.restarts.fetch_add(1, Ordering::SeqCst);
                    *phase = Phase::Starting;
                    start = true;
                }
                true
            }
            _ => false,
        });
        if start {
            tokio::spawn(self.clone().start(slot.clone()));
        }
    }

    async fn start(self, slot: Arc<Slot>) {
        let weak_inner = Arc::downgrade(&self.inner);
        let weak_slot = Arc::downgrade(&slot);
        let on_exit = move |pid: u32, reason: String| {
            if let (Some(inner), Some(slot)) = (weak_inner.upgrade(), weak_slot.upgrade()) {
                Supervisor { inner }.exited(&slot, pid, reason);
            }
        };
        let launch = Launch {
            spec: &slot.spec,
            root: &slot.root,
            binary: &slot.binary,
            env: &slot.env,
            sandbox: &self.inner.sandbox,
            start_timeout: self.inner.config.start_timeout,
            request_timeout: self.inner.config.request_timeout,
        };
        match Server::start(launch, on_exit).await {
            Ok(server) => {
                if self.inner.ended.load(Ordering::SeqCst) {
                    server.kill_now();
                    return;
                }
                if let Some(barrier) = self.watch_root(&slot.root) {
                    server.follow_watcher(barrier);
                }
                slot.phase.send_replace(Phase::Ready(server.clone()));
                tokio::spawn(self.clone().idle_stop(slot.clone(), server));
            }
            Err(reason) => {
                slot.phase.send_replace(Phase::Crashed(reason));
            }
        }
    }

    /// Called at once when the server process `pid` exits (or is found
    /// gone). Word of a server the slot has already replaced is old news:
    /// it must not end the one serving now.
    fn exited(&self, slot: &Slot, pid: u32, reason: String) {
        let Phase::Ready(server) = slot.phase() else {
            return;
        };
        if server.pid != pid {
            return;
        }
        if server.is_stopping() || self.inner.ended.load(Ordering::SeqCst) {
            return;
        }
        // Helpers the server started (node under a Python shim) would
        // otherwise outlive it.
        server.kill_now();
        // Only crashes in a row count against the restarts: a server that
        // answered since its last start was working, whatever killed it.
        if server.client().transport().has_answered() {
            slot.restarts.store(0, Ordering::SeqCst);
        }
        let used = slot.restarts.load(Ordering::SeqCst);
        let max = self.inner.config.max_restarts;
        let next = if used < max {
            format!(
                "it restarts on the next lsp request or write (restart {} of {max} in a row)",
                used + 1
            )
        } else {
            "it crashed too often and stays down until `lsp reload`".into()
        };
        let reason = format!("crashed: {reason}");
        self.notice(format!(
            "the language server {} for {} {reason}; {next}.",
            slot.spec.id,
            self.display(&slot.root)
        ));
        slot.phase.send_replace(Phase::Crashed(reason));
    }

    async fn ready(&self, slot: &Slot) -> Result<Arc<Server>, String> {
        let mut phase = slot.phase.subscribe();
        let wait = self.inner.config.start_timeout + STOP_GRACE;
        let outcome =
            tokio::time::timeout(wait, phase.wait_for(|p| !matches!(p, Phase::Starting))).await;
        let phase = match outcome {
            Ok(Ok(phase)) => phase.clone(),
            _ => {
                return Err(format!(
                    "{} is still starting after {} s",
                    slot.spec.id,
                    wait.as_secs()
                ));
            }
        };
        match phase {
            Phase::Ready(server) => Ok(server),
            Phase::Crashed(reason) | Phase::GaveUp(reason) => {
                Err(format!("{} is down: {reason}", slot.spec.id))
            }
            Phase::Idle(_) | Phase::Starting => Err(format!("{} is not running", slot.spec.id)),
        }
    }

    /// Stops a server nobody used for the configured idle time.
    async fn idle_stop(self, slot: Arc<Slot>, server: Arc<Server>) {
        let idle = self.inner.config.idle;
        loop {
            let due = tokio::time::Instant::from_std(server.last_used() + idle);
            tokio::select! {
                _ = tokio::time::sleep_until(due) => {}
                _ = server.wait_exit() => return,
            }
            if server.last_used().elapsed() >= idle {
                server.stop(STOP_GRACE).await;
                slot.phase.send_replace(Phase::Idle(Some(format!(
                    "stopped after {} s unused; starts again on next use",
                    idle.as_secs()
                ))));
                return;
            }
        }
    }

    /// Restarts the server serving `file`, or every server; returns what
    /// was done.
    pub async fn reload(&self, file: Option<&Path>) -> Result<String, Unavailable> {
        let slots: Vec<Arc<Slot>> = match file {
            Some(file) => vec![self.slot_for(file)?],
            None => lock(&self.inner.slots).values().cloned().collect(),
        };
        if slots.is_empty() {
            return Ok("no language server has been started in this run; nothing to reload".into());
        }
        let mut lines = Vec::new();
        for slot in slots {
            if let Phase::Ready(server) = slot.phase() {
                server.stop(STOP_GRACE).await;
            }
            slot.restarts.store(0, Ordering::SeqCst);
            slot.phase.send_replace(Phase::Idle(None));
            self.ensure_started(&slot);
            let outcome = match self.ready(&slot).await {
                Ok(server) => format!("restarted (pid {})", server.pid),
                Err(reason) => reason,
            };
            lines.push(format!(
                "{} for {}: {outcome}",
                slot.spec.id,
                self.display(&slot.root)
            ));
        }
        Ok(lines.join("\n"))
    }

    /// Which servers run, for which roots, and why the others do not.
    pub async fn status(&self) -> String {
        let mut out = String::new();
        let mut slots: Vec<Arc<Slot>> = lock(&self.inner.slots).values().cloned().collect();
        slots.sort_by(|a, b| (&a.spec.id, &a.root).cmp(&(&b.spec.id, &b.root)));
        if slots.is_empty() {
            out.push_str("No language server has started in this run yet (they start when a file of their language is first touched).\n");
        } else {
            out.push_str("Servers of this run:\n");
            for slot in &slots {
                let state = match slot.phase() {
                    Phase::Idle(None) => "not started".to_string(),
                    Phase::Idle(Some(why)) => why,
                    Phase::Starting => "starting".into(),
                    Phase::Ready(server) => {
                        let busy = match server.observed().indexing() {
                            Some(what) => format!("still {what}"),
                            None => "ready".into(),
                        };
                        let name = match server.client().server_name() {
                            "" => String::new(),
                            name => format!(", {name}"),
                        };
                        format!(
                            "{busy}, pid {}, {} open file(s){name}",
                            server.pid,
                            server.open_count().await,
                        )
                    }
                    Phase::Crashed(reason) => {
                        format!("{reason}; restarts on next use")
                    }
                    Phase::GaveUp(reason) => reason,
                };
                let restarts = slot.restarts.load(Ordering::SeqCst);
                let restarts = if restarts > 0 {
                    format!(" [{restarts} restart(s) after crashes]")
                } else {
                    String::new()
                };
                out.push_str(&format!(
                    "- {} for {} ({}): {state}{restarts}\n",
                    slot.spec.id,
                    self.display(&slot.root),
                    slot.binary.display()
                ));
                if !slot.uses.is_empty() {
                    out.push_str(&format!("  uses {}\n", slot.uses));
                }
            }
        }
        let toolchain = self.inner.config.toolchain;
        out.push_str(&format!(
            "\nToolchains: {}{}.\n",
            toolchain.why(),
            if toolchain.outside_only() {
                format!(
                    " (each server gets an interpreter, TypeScript or toolchain found outside the checkout); for the project's own, {}",
                    toolchain.remedy()
                )
            } else {
                String::new()
            }
        ));
        out.push_str(
            "\nThe table (a server starts only when a root marker AND its binary are present):\n",
        );
        let root = self.inner.workspace.clone();
        let config = self.inner.config.clone();
        let lines = tokio::task::spawn_blocking(move || table_status(&root, &config))
            .await
            .unwrap_or_default();
        out.push_str(&lines);
        out
    }

    /// The workspace-relative form of a path.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.inner.workspace) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    /// Watches `root`, each change handed to the servers whose root holds
    /// it; returns the watcher's barrier.
    fn watch_root(&self, root: &Path) -> Option<Arc<WatchBarrier>> {
        let mut watch = lock(&self.inner.watch);
        if watch.is_none() {
            let inner = Arc::downgrade(&self.inner);
            *watch = DiskWatch::start(&self.inner.workspace, move |path, kind| {
                let Some(inner) = inner.upgrade() else {
                    return false;
                };
                for slot in (Supervisor { inner }).slots() {
                    if let Phase::Ready(server) = slot.phase()
                        && path.starts_with(&slot.root)
                    {
                        server.disk_changed(path.to_path_buf(), kind);
                    }
                }
                true
            });
        }
        let watch = watch.as_ref()?;
        watch.add_tree(root);
        watch.barrier()
    }

    fn slots(&self) -> Vec<Arc<Slot>> {
        lock(&self.inner.slots).values().cloned().collect()
    }
}

/// One line per table entry: binary found or not, markers found or not.
fn table_status(workspace: &Path, config: &Config) -> String {
    let specs = &config.servers;
    let all_markers: HashSet<&str> = specs
        .iter()
        .flat_map(|s| s.program.root_markers.iter().map(String::as_str))
        .collect();
    let found = find_markers(workspace, &all_markers);
    let mut out = String::new();
    for spec in specs {
        let roots: Vec<String> = found
            .iter()
            .filter(|(_, marker)| spec.program.root_markers.iter().any(|m| m == marker))
            .map(|(dir, _)| match dir.strip_prefix(workspace) {
                Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
                Ok(rel) => rel.display().to_string(),
                Err(_) => dir.display().to_string(),
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let root = found
            .iter()
            .find(|(_, marker)| spec.program.root_markers.iter().any(|m| m == marker))
            .map(|(dir, _)| dir.clone())
            .unwrap_or_else(|| workspace.to_path_buf());
        let binary = match spec.program.resolve_binary(workspace, &root) {
            Ok(path) => match config.prepare(spec, workspace, &root, &path) {
                Ok(prepared) if prepared.uses.is_empty() => {
                    format!("binary {}", prepared.binary.display())
                }
                Ok(prepared) => format!(
                    "binary {}, uses {}",
                    prepared.binary.display(),
                    prepared.uses
                ),
                Err(why) => format!("binary {}, NOT USABLE: {why}", path.display()),
            },
            Err(no) if no.unusable.is_empty() => format!(
                "MISSING binary `{}` (looked in {})",
                spec.program.binaries.join("` / `"),
                spec.program.searched()
            ),
            Err(no) => format!("UNUSABLE binary: {}", no.unusable.join("; ")),
        };
        let markers = if roots.is_empty() {
            format!(
                "MISSING root marker: none of {} in the workspace",
                spec.program.root_markers.join(", ")
            )
        } else {
            let shown: Vec<_> = roots.iter().take(5).cloned().collect();
            let more = roots.len().saturating_sub(5);
            format!(
                "roots: {}{}",
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            )
        };
        out.push_str(&format!(
            "- {} ({}): {binary}; {markers}\n",
            spec.id,
            spec.languages.join(", ")
        ));
    }
    out
}

#[async_trait]
impl Resource for Supervisor {
    fn name(&self) -> String {
        "language servers".into()
    }

    async fn shutdown(&self) {
        self.inner.ended.store(true, Ordering::SeqCst);
        let mut stops = tokio::task::JoinSet::new();
        for slot in self.slots() {
            if let Phase::Ready(server) = slot.phase() {
                stops.spawn(async move { server.stop(STOP_GRACE).await });
            }
        }
        while stops.join_next().await.is_some() {}
        lock(&self.inner.watch).take();
    }

    fn kill_now(&self) {
        self.inner.ended.store(true, Ordering::SeqCst);
        for slot in self.slots() {
            if let Phase::Ready(server) = slot.phase() {
                server.kill_now();
            }
        }
    }

    fn status(&self) -> String {
        let slots = self.slots();
        let running = slots
            .iter()
            .filter(|s| matches!(s.phase(), Phase::Ready(_)))
            .count();
        let down: Vec<String> = slots
            .iter()
            .filter_map(|s| match s.phase() {
                Phase::Crashed(reason) | Phase::GaveUp(reason) => {
                    Some(format!("{} {reason}", s.spec.id))
                }
                _ => None,
            })
            .collect();
        let mut line = format!("language servers: {running} running");
        if !down.is_empty() {
            line.push_str(&format!("; down: {}", down.join("; ")));
        }
        line
    }
}
