//! The run's debug supervisor: the breakpoints set so far (kept across
//! sessions, placed at every launch), the one session of the run, and
//! which adapters can start here. It is the run's [`Resource`], so the
//! session ends with the run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_core::{Notices, Resource, async_trait, lock};
use gantry_process::{Located, Program, Sandbox, Unusable};
use serde::Deserialize;

use crate::adapters::{Adapter, Target};
use crate::session::{Placed, Session, Start, State};

/// The hard limit on a session's life (SPEC §8).
pub const DEFAULT_TTL: Duration = Duration::from_secs(30 * 60);

/// The `debug` settings section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DebugSettings {
    /// Seconds a session may live before it is torn down (default 1800).
    pub ttl_seconds: Option<u64>,
}

/// The run's debugger.
pub struct Debugger {
    ttl: Duration,
    notices: Notices,
    breakpoints: Mutex<BTreeMap<PathBuf, Vec<u32>>>,
    session: Mutex<Option<Arc<Session>>>,
    /// The last session that ended, for its output and how it ended.
    previous: Mutex<Option<Arc<Session>>>,
}

impl Debugger {
    /// A debugger whose sessions end after `ttl`, and say so through
    /// `notices`.
    pub fn new(ttl: Duration, notices: Notices) -> Self {
        Debugger {
            ttl,
            notices,
            breakpoints: Mutex::default(),
            session: Mutex::default(),
            previous: Mutex::default(),
        }
    }

    /// The session, while one is live. One that is over (its program
    /// exited, its adapter died, its time ran out) is ended, its adapter
    /// killed, and let go, and why it ended is returned instead, so the
    /// next `launch` starts afresh; `output` and `status` still show it.
    pub async fn live(&self) -> Result<Arc<Session>, String> {
        let over = match lock(&self.session).as_ref() {
            None => return Err("no debug session: `launch` a program (or `attach`) first".into()),
            Some(session) if session.is_over() || session.state().is_over() => session.clone(),
            Some(session) => return Ok(session.clone()),
        };
        let why = over.why_over();
        self.let_go(&over);
        over.end(why.clone()).await;
        Err(format!("{why}; `launch` to start a new session"))
    }

    /// The session, live or the last one (for `status` and `output`).
    pub fn current(&self) -> Option<Arc<Session>> {
        lock(&self.session)
            .clone()
            .or_else(|| lock(&self.previous).clone())
    }

    /// Moves `session` out of the live slot, keeping it as the last one.
    fn let_go(&self, session: &Arc<Session>) {
        let mut slot = lock(&self.session);
        if slot.as_ref().is_some_and(|live| Arc::ptr_eq(live, session)) {
            *slot = None;
        }
        *lock(&self.previous) = Some(session.clone());
    }

    /// Ends the session, if any, and lets it go.
    pub async fn end(&self, why: &str) -> Option<Arc<Session>> {
        let session = lock(&self.session).clone()?;
        self.let_go(&session);
        session.end(why.to_string()).await;
        Some(session)
    }

    /// Records the breakpoints of `file` (none clears it), for this
    /// session and every later launch.
    pub fn remember(&self, file: &Path, lines: &[u32]) {
        let mut breakpoints = lock(&self.breakpoints);
        if lines.is_empty() {
            breakpoints.remove(file);
        } else {
            breakpoints.insert(file.to_path_buf(), lines.to_vec());
        }
    }

    /// Every breakpoint recorded, by file.
    pub fn breakpoints(&self) -> Vec<(PathBuf, Vec<u32>)> {
        lock(&self.breakpoints)
            .iter()
            .map(|(file, lines)| (file.clone(), lines.clone()))
            .collect()
    }

    /// Starts a session of `adapter` (its `binary`, `None` to reach a
    /// debug server's port directly) for `target` in `root`, with every
    /// breakpoint recorded; refused while a session lives.
    pub async fn start(
        &self,
        adapter: Adapter,
        binary: Option<PathBuf>,
        root: PathBuf,
        target: Target,
        python: Option<PathBuf>,
        sandbox: Sandbox,
    ) -> Result<(Arc<Session>, Vec<(PathBuf, Vec<Placed>)>), String> {
        if let Ok(live) = self.live().await {
            return Err(format!(
                "a debug session is already live ({}, {}); `terminate` it first, or keep using it",
                live.adapter.name(),
                describe_state(&live.state())
            ));
        }
        let (session, placed) = Session::start(Start {
            adapter,
            binary,
            root,
            target,
            python,
            sandbox,
            breakpoints: self.breakpoints(),
            ttl: self.ttl,
            notices: self.notices.clone(),
        })
        .await?;
        gantry_core::runlog::record_in_call(
            "resource.start",
            serde_json::json!({ "resource": "debug session", "detail": adapter.name() }),
        );
        *lock(&self.session) = Some(session.clone());
        Ok((session, placed))
    }
}

/// Where `adapter` can serve `place` (a file or directory in the
/// workspace): its root and binary, or why not. Blocks for the binary's
/// probe the first time: run it off the async threads.
pub async fn locate(adapter: Adapter, workspace: &Path, place: &Path) -> Result<Located, Unusable> {
    let (workspace, place) = (workspace.to_path_buf(), place.to_path_buf());
    tokio::task::spawn_blocking(move || adapter.program().locate(&workspace, &place))
        .await
        .unwrap_or_else(|e| Err(Unusable(vec![format!("the adapter lookup failed: {e}")])))
}

/// The interpreter debugpy's debuggee runs with: the project's own
/// `.venv`/`venv` python before `PATH`'s, which is another environment.
pub async fn project_python(workspace: &Path, root: &Path) -> Option<PathBuf> {
    let (workspace, root) = (workspace.to_path_buf(), root.to_path_buf());
    let python = Program {
        binaries: vec!["python3".into(), "python".into()],
        ..Program::default()
    };
    tokio::task::spawn_blocking(move || python.resolve_binary(&workspace, &root).ok())
        .await
        .ok()
        .flatten()
}

/// The state in a few words.
pub fn describe_state(state: &State) -> String {
    match state {
        State::Starting => "starting".into(),
        State::Running => "running".into(),
        State::Stopped(stop) => match stop.thread_id {
            Some(thread) => format!("stopped ({}) in thread {thread}", stop.reason),
            None => format!("stopped ({})", stop.reason),
        },
        State::Exited => "the program exited".into(),
        State::Terminated => "ended".into(),
    }
}

#[async_trait]
impl Resource for Debugger {
    fn name(&self) -> String {
        "debug".into()
    }

    async fn shutdown(&self) {
        self.end("the run ended").await;
    }

    fn kill_now(&self) {
        if let Some(session) = lock(&self.session).take() {
            session.kill_now();
        }
        lock(&self.previous).take();
    }

    fn status(&self) -> String {
        match self.current() {
            Some(session) if !session.is_over() => format!(
                "debug: {} session, {}",
                session.adapter.name(),
                describe_state(&session.state())
            ),
            _ => "debug: no session".into(),
        }
    }
}
