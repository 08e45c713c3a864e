//! A run: one agent conversation, its tools, its live resources and its
//! notices (SPEC §1). Ending the run ends every resource it owns.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::human::Human;
use crate::lock;
use crate::registry::{Listing, Registry};
use crate::runlog::{Origin, RunLog};
use crate::settings::Settings;
use crate::tier::{ApprovalMode, Tier};
use crate::tool::DynTool;
use crate::workspace::Workspace;
use crate::write::{WriteHook, WriteHooks};

/// Something a run owns and must end: a language server, a kernel, a
/// background job table.
#[async_trait]
pub trait Resource: Send + Sync + 'static {
    /// Shown in `status` and logs.
    fn name(&self) -> String;

    /// Ends the resource gracefully, within a bounded time.
    async fn shutdown(&self);

    /// Ends it at once, without awaiting; called when a run is dropped
    /// without [`Run::shutdown`]. Must not block.
    fn kill_now(&self);

    /// A line for `status`: what it is doing.
    fn status(&self) -> String {
        self.name()
    }

    /// Whether its start and end go in the run log: yes for what runs
    /// (a process, a session), no for the run's own machinery.
    fn in_run_log(&self) -> bool {
        true
    }
}

/// A resource the run owns, kept both as itself (to end it) and as its
/// type (for [`Run::resource`]), under a key that tells several of one
/// type apart (a kernel per language).
struct Owned {
    resource: Arc<dyn Resource>,
    typed: Arc<dyn Any + Send + Sync>,
    key: String,
    /// Started while the run went on, so its start and end are in the run
    /// log (what a family wires at the start, a table, is not).
    logged: bool,
}

impl Owned {
    fn new<R: Resource>(key: &str, resource: Arc<R>, logged: bool) -> Self {
        Owned {
            resource: resource.clone(),
            typed: resource,
            key: key.to_string(),
            logged,
        }
    }

    fn get<R: Resource>(&self, key: Option<&str>) -> Option<Arc<R>> {
        if key.is_some_and(|key| key != self.key) {
            return None;
        }
        self.typed.clone().downcast::<R>().ok()
    }
}

/// Per resource type and key, the lock a start of it holds, so two calls
/// never start the same one-per-run resource twice.
type StartLocks = Mutex<HashMap<(std::any::TypeId, String), Arc<tokio::sync::Mutex<()>>>>;

/// Told when a tool starts working on a file (a read, a write), so a family
/// can warm up for it: a language server starts in the background and opens
/// the file before the first real request.
pub type TouchObserver = Arc<dyn Fn(&Run, &std::path::Path) + Send + Sync>;

/// The run's notice queue, shareable on its own: a background watcher (a
/// language server's exit, a worker finishing) holds this, not the run, so
/// it can report at once without keeping the run alive.
#[derive(Clone, Default)]
pub struct Notices {
    queue: Arc<Mutex<Vec<String>>>,
    /// The run's log, once the run has one: every notice is recorded.
    log: Arc<std::sync::OnceLock<RunLog>>,
}

impl Notices {
    /// Queues a notice for the model, appended once to the next result.
    pub fn push(&self, notice: impl Into<String>) {
        let notice = notice.into();
        if let Some(log) = self.log.get() {
            log.record("notice", serde_json::json!({ "text": notice }));
        }
        lock(&self.queue).push(notice);
    }

    fn drain(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.queue))
    }
}

/// Who is calling and what they may see: a tier cap and an approval mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Surface {
    /// The most powerful tier visible.
    pub cap: Tier,
    /// When Gantry asks the person.
    pub approval: ApprovalMode,
}

impl Surface {
    /// A surface; plan mode tightens the cap to `read`.
    pub fn new(cap: Tier, approval: ApprovalMode) -> Self {
        Surface {
            cap: cap.min(approval.cap()),
            approval,
        }
    }

    /// The surface a call made on this one's behalf gets when `other` is
    /// asked for: never wider than either, in tier cap and approval mode.
    pub fn within(self, other: Surface) -> Self {
        let approval = self.approval.stricter(other.approval);
        let cap = if approval == ApprovalMode::Plan {
            Tier::Read
        } else {
            self.cap.min(other.cap)
        };
        Surface { cap, approval }
    }
}

impl Default for Surface {
    fn default() -> Self {
        Surface::new(Tier::Exec, ApprovalMode::Client)
    }
}

pub(crate) struct RunInner {
    pub(crate) workspace: Workspace,
    pub(crate) settings: Settings,
    pub(crate) surface: Surface,
    registry: std::sync::RwLock<Arc<Registry>>,
    /// Bumped at every change of the registry after the run was built.
    tools_changed: tokio::sync::watch::Sender<u64>,
    /// True once every start registered with [`RunBuilder::arriving`] has
    /// ended.
    arrived: tokio::sync::watch::Receiver<bool>,
    pub(crate) human: Option<Arc<dyn Human>>,
    resources: Mutex<Vec<Owned>>,
    starting: StartLocks,
    notices: Notices,
    instructions: Vec<String>,
    pub(crate) write_lock: Arc<tokio::sync::Mutex<()>>,
    pub(crate) write_hooks: WriteHooks,
    touch_observers: Vec<TouchObserver>,
    pub(crate) log: RunLog,
}

impl Drop for RunInner {
    /// Kills every resource at once, last wired first, as
    /// [`Run::shutdown`] ends them: one wired first may need the others
    /// gone (the processes that could write).
    fn drop(&mut self) {
        let resources = std::mem::take(self.resources.get_mut().unwrap_or_else(|p| p.into_inner()));
        for owned in resources.into_iter().rev() {
            if owned.logged {
                self.log.record(
                    "resource.end",
                    serde_json::json!({ "resource": owned.resource.name(), "detail": "killed as the run ended" }),
                );
            }
            owned.resource.kill_now();
        }
        self.log.end("the run was dropped");
    }
}

/// One run. Cheap to clone; every clone is the same run.
#[derive(Clone)]
pub struct Run {
    pub(crate) inner: Arc<RunInner>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("root", &self.inner.workspace.root())
            .field("surface", &self.inner.surface)
            .finish()
    }
}

impl Run {
    /// Starts building a run rooted at `workspace`.
    pub fn builder(workspace: Workspace) -> RunBuilder {
        RunBuilder {
            workspace,
            settings: Settings::default(),
            surface: Surface::default(),
            registry: Registry::default(),
            human: None,
            resources: Vec::new(),
            instructions: Vec::new(),
            write_hooks: Vec::new(),
            touch_observers: Vec::new(),
            notices: Notices::default(),
            on_build: Vec::new(),
            arriving: Vec::new(),
            log: None,
        }
    }

    /// A handle that does not keep the run alive, for a background task
    /// the run owns (a bridged server's watcher) that must reach the run
    /// later without keeping it from ending.
    pub fn downgrade(&self) -> WeakRun {
        WeakRun(Arc::downgrade(&self.inner))
    }

    /// The workspace the run is confined to.
    pub fn workspace(&self) -> &Workspace {
        &self.inner.workspace
    }

    /// The merged settings.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The run's own surface (its cap and approval mode).
    pub fn surface(&self) -> Surface {
        self.inner.surface
    }

    /// The registry of this run as it is now.
    pub fn registry(&self) -> Arc<Registry> {
        self.inner
            .registry
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The tools the run's surface sees.
    pub fn tools(&self) -> Vec<Listing> {
        self.registry().list(self.inner.surface.cap)
    }

    /// Whether the tool `name`, as this run's surface sees it, asks a
    /// person: asked of every call, so it lists nothing.
    pub fn tool_needs_person(&self, name: &str) -> bool {
        self.registry().get(name).is_some_and(|entry| {
            entry.spec.needs_person && entry.spec.tier <= self.inner.surface.cap
        })
    }

    /// Changes the registry after the run was built (a family whose
    /// bridged server came or went) and tells every watcher of
    /// [`Run::tools_changed`], so front ends can say the list changed.
    /// Calls in flight keep the tools they looked up.
    pub fn change_tools<T>(&self, change: impl FnOnce(&mut Registry) -> T) -> T {
        let outcome = {
            let mut registry = self
                .inner
                .registry
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let mut next = Registry::clone(&registry);
            let outcome = change(&mut next);
            *registry = Arc::new(next);
            outcome
        };
        self.inner
            .tools_changed
            .send_modify(|version| *version += 1);
        outcome
    }

    /// A receiver that wakes at every change of the run's tools.
    pub fn tools_changed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.tools_changed.subscribe()
    }

    /// Resolves once the tools on their way when the run was built (see
    /// [`RunBuilder::arriving`]) have arrived or stopped being waited
    /// for: a front end awaits it before its first listing, so a client
    /// that lists tools once sees them all.
    /// The future holds no part of the run, so a task may wait on it
    /// without keeping the run alive.
    pub fn arrived(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut arrived = self.inner.arrived.clone();
        async move {
            // A closed channel means the waiting task is gone: nothing to
            // wait for any more.
            let _ = arrived.wait_for(|arrived| *arrived).await;
        }
    }

    /// Whether [`Run::arrived`] would resolve at once.
    pub fn has_arrived(&self) -> bool {
        *self.inner.arrived.borrow()
    }

    /// Text for the client's system prompt (memory files, notes of
    /// families).
    pub fn instructions(&self) -> String {
        self.inner.instructions.join("\n\n")
    }

    /// Queues a notice for the model, appended once to the next result.
    pub fn notify(&self, notice: impl Into<String>) {
        self.inner.notices.push(notice);
    }

    pub(crate) fn drain_notices(&self) -> Vec<String> {
        self.inner.notices.drain()
    }

    /// Adds a resource the run must end (started lazily by a tool).
    pub fn own<R: Resource>(&self, resource: Arc<R>) {
        self.own_keyed("", resource);
    }

    /// Adds a resource under `key`, one of several of its type.
    pub fn own_keyed<R: Resource>(&self, key: &str, resource: Arc<R>) {
        let logged = resource.in_run_log();
        if logged {
            self.inner.log.record(
                "resource.start",
                serde_json::json!({ "resource": resource.name() }),
            );
        }
        lock(&self.inner.resources).push(Owned::new(key, resource, logged));
    }

    /// The run's log (families record what only they see: a worker's
    /// turn, a job's end, a sandbox refusal).
    pub fn log(&self) -> &RunLog {
        &self.inner.log
    }

    /// The first owned resource of type `R`, whatever its key.
    pub fn resource<R: Resource>(&self) -> Option<Arc<R>> {
        lock(&self.inner.resources)
            .iter()
            .find_map(|owned| owned.get::<R>(None))
    }

    /// The owned resource of type `R` under `key`.
    pub fn resource_keyed<R: Resource>(&self, key: &str) -> Option<Arc<R>> {
        lock(&self.inner.resources)
            .iter()
            .find_map(|owned| owned.get::<R>(Some(key)))
    }

    /// The resource of type `R` under `key`, started by `start` if the run
    /// has none: for one-per-run things (the debug session, a kernel per
    /// language, the worker pool). Concurrent callers wait for the one
    /// start instead of starting twice; a failed start leaves nothing, so
    /// the next call tries again.
    pub async fn resource_or_start<R, E, Fut>(
        &self,
        key: &str,
        start: impl FnOnce() -> Fut,
    ) -> Result<Arc<R>, E>
    where
        R: Resource,
        Fut: std::future::Future<Output = Result<Arc<R>, E>>,
    {
        if let Some(found) = self.resource_keyed::<R>(key) {
            return Ok(found);
        }
        let gate = lock(&self.inner.starting)
            .entry((std::any::TypeId::of::<R>(), key.to_string()))
            .or_default()
            .clone();
        let _starting = gate.lock().await;
        if let Some(found) = self.resource_keyed::<R>(key) {
            return Ok(found);
        }
        let started = start().await?;
        self.own_keyed(key, started.clone());
        Ok(started)
    }

    /// Stops owning `resource` (it died, and the next call should start a
    /// fresh one); whether it was owned. The caller ends it if need be.
    pub fn release<R: Resource>(&self, resource: &Arc<R>) -> bool {
        let mut resources = lock(&self.inner.resources);
        let mut released = false;
        resources.retain(|owned| {
            let this = owned
                .typed
                .clone()
                .downcast::<R>()
                .is_ok_and(|typed| Arc::ptr_eq(&typed, resource));
            released |= this && owned.logged;
            !this
        });
        drop(resources);
        if released {
            self.inner.log.record(
                "resource.end",
                serde_json::json!({ "resource": resource.name() }),
            );
        }
        released
    }

    /// Status lines of every live resource.
    pub fn resource_status(&self) -> Vec<String> {
        lock(&self.inner.resources)
            .iter()
            .map(|owned| owned.resource.status())
            .collect()
    }

    /// Says that a tool is working on `path`; observers warm up for it.
    pub fn touch(&self, path: &std::path::Path) {
        for observer in &self.inner.touch_observers {
            observer(self, path);
        }
    }

    /// Ends every resource the run owns, awaiting each, last wired first.
    /// A front end may bound this (a server told to stop must be gone
    /// within a second): when the future is dropped part-way, the
    /// resources not yet ended, the one being ended included, are killed
    /// at once, so nothing outlives an impatient shutdown.
    pub async fn shutdown(&self) {
        /// Resources still to end; killed if the shutdown is dropped.
        struct Pending(Vec<Owned>);
        impl Drop for Pending {
            fn drop(&mut self) {
                for owned in self.0.drain(..).rev() {
                    owned.resource.kill_now();
                }
            }
        }
        let mut pending = Pending(std::mem::take(&mut *lock(&self.inner.resources)));
        while let Some(owned) = pending.0.last() {
            let (resource, logged) = (owned.resource.clone(), owned.logged);
            tracing::debug!(resource = %resource.name(), "shutting down");
            resource.shutdown().await;
            if logged {
                self.inner.log.record(
                    "resource.end",
                    serde_json::json!({ "resource": resource.name() }),
                );
            }
            pending.0.pop();
        }
        let log = self.inner.log.clone();
        let _ = tokio::task::spawn_blocking(move || log.end("shut down")).await;
    }
}

/// A run that may have ended: see [`Run::downgrade`].
#[derive(Clone)]
pub struct WeakRun(std::sync::Weak<RunInner>);

impl WeakRun {
    /// The run, unless it has ended.
    pub fn upgrade(&self) -> Option<Run> {
        self.0.upgrade().map(|inner| Run { inner })
    }
}

/// Called with the run once it is built (see [`RunBuilder::on_build`]).
pub type BuildHook = Box<dyn FnOnce(&Run) + Send>;

/// Wires a run: its surface, tools, resources and human port.
pub struct RunBuilder {
    workspace: Workspace,
    settings: Settings,
    surface: Surface,
    registry: Registry,
    human: Option<Arc<dyn Human>>,
    resources: Vec<Owned>,
    instructions: Vec<String>,
    write_hooks: WriteHooks,
    touch_observers: Vec<TouchObserver>,
    notices: Notices,
    on_build: Vec<BuildHook>,
    arriving: Vec<Arriving>,
    log: Option<(RunLog, Origin)>,
}

/// A start whose tools arrive after the run is built.
type Arriving = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

impl RunBuilder {
    /// Records the run in `log`, which starts with where the run came
    /// from; without it the run keeps no log (the families' own tests).
    pub fn log(mut self, log: RunLog, origin: Origin) -> Self {
        self.log = Some((log, origin));
        self
    }

    /// The merged settings the run's families read.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Settings while wiring (families read their sections).
    pub fn current_settings(&self) -> &Settings {
        &self.settings
    }

    /// The workspace being wired.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The surface: tier cap and approval mode.
    pub fn surface(mut self, surface: Surface) -> Self {
        self.surface = surface;
        self
    }

    /// The surface while wiring (a family that runs less at read tier).
    pub fn current_surface(&self) -> Surface {
        self.surface
    }

    /// The port to a person; without one, confirmations and `ask_user`
    /// fail closed.
    pub fn human(mut self, human: Arc<dyn Human>) -> Self {
        self.human = Some(human);
        self
    }

    /// Whether a person is wired (for families that register only then).
    pub fn has_human(&self) -> bool {
        self.human.is_some()
    }

    /// Registers a tool.
    ///
    /// # Panics
    /// On a duplicate name or an invalid schema: both are wiring bugs that
    /// tests catch, not conditions a user can cause.
    pub fn tool(mut self, tool: impl DynTool) -> Self {
        self.add_tool(Arc::new(tool));
        self
    }

    /// Registers a shared tool object (see [`RunBuilder::tool`]).
    pub fn add_tool(&mut self, tool: Arc<dyn DynTool>) {
        if let Err(message) = self.registry.register(tool) {
            panic!("{message}");
        }
    }

    /// Records a tool that is not wired for this run and why.
    pub fn withhold(mut self, name: &str, reason: &str) -> Self {
        self.registry.withhold(name, reason);
        self
    }

    /// A resource the run owns from the start.
    pub fn resource<R: Resource>(mut self, resource: Arc<R>) -> Self {
        self.resources.push(Owned::new("", resource, false));
        self
    }

    /// Adds text to the run's instructions.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions.push(text.into());
        self
    }

    /// Adds a hook every write of the run goes through (see
    /// [`crate::write`]); hooks run in the order added.
    pub fn write_hook(mut self, hook: Arc<dyn WriteHook>) -> Self {
        self.write_hooks.push(hook);
        self
    }

    /// The run's notice queue, for a family whose background watchers must
    /// report without holding the run.
    pub fn notices(&self) -> Notices {
        self.notices.clone()
    }

    /// Adds an observer told of every file a tool works on.
    pub fn on_touch(mut self, observer: TouchObserver) -> Self {
        self.touch_observers.push(observer);
        self
    }

    /// Adds a hook called with the run once every family is wired: for a
    /// family whose tools arrive after wiring (a slow bridged server), or
    /// that must see the other families' tools first (built-in names win).
    pub fn on_build(mut self, hook: impl FnOnce(&Run) + Send + 'static) -> Self {
        self.on_build.push(Box::new(hook));
        self
    }

    /// Registers tools on their way: a family that starts something slow
    /// (a bridged server) hands its start over here instead of holding up
    /// the other families' wiring and the client's `initialize`. Listing
    /// the tools ([`Run::arrived`]) and calling a name not yet known wait
    /// until every such `start` has resolved; each bounds its own wait.
    /// Tools that come later are announced as any change of the list.
    pub fn arriving(
        mut self,
        start: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Self {
        self.arriving.push(Box::pin(start));
        self
    }

    /// Finishes wiring, then calls the [`RunBuilder::on_build`] hooks in
    /// the order added. With tools on their way (see
    /// [`RunBuilder::arriving`]), it must be called within a tokio runtime.
    pub fn build(self) -> Run {
        let hooks = self.on_build;
        let (arrived_tx, arrived) = tokio::sync::watch::channel(self.arriving.is_empty());
        if !self.arriving.is_empty() {
            let starts = self.arriving;
            tokio::spawn(async move {
                futures_util::future::join_all(starts).await;
                let _ = arrived_tx.send(true);
            });
        }
        let log = match self.log {
            Some((log, origin)) => {
                log.record(
                    "run.start",
                    serde_json::json!({
                        "front": origin.front,
                        "client": origin.client.map(|(name, version)| serde_json::json!({ "name": name, "version": version })),
                        "workspace": self.workspace.root().display().to_string(),
                        "surface": { "cap": self.surface.cap.to_string(), "approval": self.surface.approval.to_string() },
                        "pid": std::process::id(),
                        "version": env!("CARGO_PKG_VERSION"),
                    }),
                );
                let _ = self.notices.log.set(log.clone());
                log
            }
            None => RunLog::default(),
        };
        let run = Run {
            inner: Arc::new(RunInner {
                workspace: self.workspace,
                settings: self.settings,
                surface: self.surface,
                registry: std::sync::RwLock::new(Arc::new(self.registry)),
                tools_changed: tokio::sync::watch::channel(0).0,
                arrived,
                human: self.human,
                resources: Mutex::new(self.resources),
                starting: StartLocks::default(),
                notices: self.notices,
                instructions: self.instructions,
                write_lock: Arc::default(),
                write_hooks: self.write_hooks,
                touch_observers: self.touch_observers,
                log,
            }),
        };
        for hook in hooks {
            hook(&run);
        }
        run
    }
}
