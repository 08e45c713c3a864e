//! The run's workers: each a background task running the agent loop,
//! with a record the five tools read and a cancellation that ends the loop
//! and every call (and so every process) it has in flight.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gantry_core::{CancellationToken, Notices, Resource, async_trait, lock};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::agent::{self, Agent, Ending, Observer};
use crate::client::Usage;
use crate::settings::TierName;

/// How long a kill waits for the worker's loop to let go of what it was
/// doing (a dropped call kills its process group at once; this bounds a
/// wait that is normally a few milliseconds).
const KILL_GRACE: Duration = Duration::from_secs(5);
/// Lines of what a worker did kept for the person.
const ACTIONS_KEPT: usize = 50;

/// Where a worker is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The loop is running.
    Running,
    /// It answered; waiting for a `vibe_send`.
    Done,
    /// Its turns ran out.
    OutOfTurns,
    /// The model endpoint or the loop failed; the reason.
    Failed(String),
    /// Stopped by `vibe_kill` (or the run's end); final.
    Killed,
}

impl Status {
    /// The word for lists and refusals.
    pub fn word(&self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Done => "done",
            Status::OutOfTurns => "out of turns",
            Status::Failed(_) => "failed",
            Status::Killed => "killed",
        }
    }
}

/// What the tools show of a worker.
#[derive(Debug, Clone)]
pub struct Record {
    /// Where it is.
    pub status: Status,
    /// Its last answer (or why it has none).
    pub last_result: Option<String>,
    /// Tokens used over all its turns.
    pub usage: Usage,
    /// Model requests made.
    pub requests: u64,
    /// Tool calls made.
    pub tool_calls: u64,
    /// What it did, one line per tool call, most recent last.
    pub actions: Vec<String>,
    /// When the current run of the loop started.
    pub started: Instant,
    /// When it last stopped running.
    pub ended: Option<Instant>,
}

/// One worker.
pub struct Worker {
    /// `w1`, `w2`, ...
    pub id: String,
    /// What the director called it.
    pub label: String,
    /// Its tier.
    pub tier: TierName,
    /// The model id its tier sends.
    pub model: String,
    record: Mutex<Record>,
    /// The conversation while no loop holds it; `None` while one runs.
    conversation: Mutex<Option<Vec<Value>>>,
    /// Bumped at every change of status, for `vibe_wait`.
    changed: watch::Sender<u64>,
    /// Ends the worker for good.
    cancel: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
    agent: Agent,
    notices: Notices,
}

impl Worker {
    /// A copy of its record.
    pub fn record(&self) -> Record {
        lock(&self.record).clone()
    }

    /// Seconds it has run (the current run, or its last one).
    pub fn elapsed(&self) -> Duration {
        let record = lock(&self.record);
        record.ended.unwrap_or_else(Instant::now) - record.started
    }

    /// Waits until it is not running or `timeout` passes; its record then.
    pub async fn wait(&self, timeout: Duration, cancel: &CancellationToken) -> Record {
        let mut changes = self.changed.subscribe();
        let settled = async {
            loop {
                if lock(&self.record).status != Status::Running {
                    return;
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::select! {
            _ = settled => {}
            _ = tokio::time::sleep(timeout) => {}
            _ = cancel.cancelled() => {}
        }
        self.record()
    }

    /// Starts the loop on the conversation with `message` appended as a
    /// user turn; refused (with its status) unless it is idle.
    fn start(self: &Arc<Self>, message: String) -> Result<(), String> {
        let mut messages = {
            let record = lock(&self.record);
            if record.status == Status::Running || record.status == Status::Killed {
                return Err(format!(
                    "worker {} is {}; {}",
                    self.id,
                    record.status.word(),
                    if record.status == Status::Killed {
                        "a killed worker stays killed: spawn a new one"
                    } else {
                        "wait for it (vibe_wait) before sending it more"
                    }
                ));
            }
            drop(record);
            lock(&self.conversation)
                .take()
                .ok_or_else(|| format!("worker {} is running", self.id))?
        };
        messages.push(json!({"role": "user", "content": message}));
        {
            let mut record = lock(&self.record);
            record.status = Status::Running;
            record.started = Instant::now();
            record.ended = None;
        }
        self.changed.send_modify(|version| *version += 1);
        self.agent.run.log().record(
            "resource.start",
            json!({ "resource": format!("worker {}", self.id), "detail": self.label }),
        );
        let worker = self.clone();
        let task = tokio::spawn(async move {
            let observer: Arc<dyn Observer> = worker.clone();
            let outcome = tokio::select! {
                biased;
                _ = worker.cancel.cancelled() => None,
                outcome = worker.agent.run(&mut messages, &observer) => Some(outcome),
            };
            worker.settle(outcome, messages);
            worker.agent.run.log().record(
                "resource.end",
                json!({ "resource": format!("worker {}", worker.id), "detail": lock(&worker.record).status.word() }),
            );
        });
        *lock(&self.task) = Some(task);
        Ok(())
    }

    /// Records how a run of the loop ended; a killed worker stays killed.
    fn settle(&self, outcome: Option<Result<Ending, String>>, messages: Vec<Value>) {
        let finished = {
            let mut record = lock(&self.record);
            record.ended = Some(Instant::now());
            if record.status == Status::Killed {
                None
            } else {
                let (status, result) = match outcome {
                    None => (Status::Killed, "killed".to_string()),
                    Some(Ok(Ending::Answered(text))) => (Status::Done, text),
                    Some(Ok(Ending::OutOfTurns(turns))) => (
                        Status::OutOfTurns,
                        format!("stopped after {turns} model turns without a final answer"),
                    ),
                    Some(Err(error)) => (Status::Failed(error.clone()), error),
                };
                record.status = status;
                record.last_result = Some(result.clone());
                Some((record.status.word(), result))
            }
        };
        *lock(&self.conversation) = Some(messages);
        self.changed.send_modify(|version| *version += 1);
        if let Some((word, result)) = finished {
            self.notices.push(format!(
                "worker {} ({}) is {word}: {}",
                self.id,
                self.label,
                gantry_core::text::shorten(&result, 200)
            ));
        }
    }

    /// Stops it for good: its loop and every call it has in flight are
    /// cancelled (a cancelled shell call kills its process group), and the
    /// kill returns once the loop has let go of them and the background
    /// jobs its calls started are stopped; one line for each of those.
    pub async fn kill(&self) -> Vec<String> {
        self.stop_loop().await;
        self.agent.stop_background().await
    }

    /// Marks it killed, cancels its loop and waits (bounded) for the loop
    /// to let go of what it was doing.
    async fn stop_loop(&self) {
        self.mark_killed();
        self.cancel.cancel();
        let task = lock(&self.task).take();
        if let Some(task) = task {
            let abort = task.abort_handle();
            if tokio::time::timeout(KILL_GRACE, task).await.is_err() {
                abort.abort();
            }
        }
        // A write the cancelled call had begun finishes (all or nothing)
        // before the kill is said done.
        let _ = tokio::time::timeout(KILL_GRACE, self.agent.run.writes_settled()).await;
    }

    fn mark_killed(&self) {
        {
            let mut record = lock(&self.record);
            if record.status == Status::Killed {
                return;
            }
            if record.status == Status::Running {
                record.ended = Some(Instant::now());
            }
            record.status = Status::Killed;
        }
        self.changed.send_modify(|version| *version += 1);
    }
}

impl Observer for Worker {
    fn requesting(&self) {
        lock(&self.record).requests += 1;
    }

    fn acted(&self, line: String) {
        let mut record = lock(&self.record);
        record.tool_calls += 1;
        if record.actions.len() == ACTIONS_KEPT {
            record.actions.remove(0);
        }
        record.actions.push(line);
    }

    fn used(&self, usage: Usage) {
        lock(&self.record).usage.add(usage);
    }
}

/// The run's workers, oldest first. Owned by the run, which kills them
/// all when it ends.
pub struct Pool {
    workers: Mutex<Vec<Arc<Worker>>>,
    next: AtomicU64,
    max_running: usize,
    notices: Notices,
}

/// What a new worker is.
pub struct Spawn {
    /// What the director calls it.
    pub label: String,
    /// Its tier.
    pub tier: TierName,
    /// Its brief, the first user turn.
    pub brief: String,
    /// Ends it for good; the agent's caller is cancelled by it.
    pub cancel: CancellationToken,
    /// Its model, tools and bounds.
    pub agent: Agent,
}

impl Pool {
    /// An empty pool of at most `max_running` running workers, reporting
    /// finished workers to `notices`.
    pub fn new(max_running: usize, notices: Notices) -> Self {
        Pool {
            workers: Mutex::new(Vec::new()),
            next: AtomicU64::new(1),
            max_running,
            notices,
        }
    }

    /// Starts a worker, unless `max_running` already run (then the refusal
    /// lists them).
    pub fn spawn(&self, spawn: Spawn) -> Result<Arc<Worker>, String> {
        let mut workers = lock(&self.workers);
        let running: Vec<String> = workers
            .iter()
            .filter(|worker| worker.record().status == Status::Running)
            .map(|worker| format!("{} ({})", worker.id, worker.label))
            .collect();
        if running.len() >= self.max_running {
            return Err(format!(
                "{} workers are already running, the most allowed (workers.maxRunning): {}; wait \
                 for one (vibe_wait) or stop one (vibe_kill) first",
                running.len(),
                running.join(", ")
            ));
        }
        let id = format!("w{}", self.next.fetch_add(1, Ordering::Relaxed));
        let now = Instant::now();
        let agent = Agent {
            caller: spawn
                .agent
                .caller
                .clone()
                .on_behalf_of(&format!("worker {id}")),
            worker: id.clone(),
            ..spawn.agent
        };
        let worker = Arc::new(Worker {
            id,
            label: spawn.label,
            tier: spawn.tier,
            model: agent.client.model().to_string(),
            record: Mutex::new(Record {
                status: Status::Done,
                last_result: None,
                usage: Usage::default(),
                requests: 0,
                tool_calls: 0,
                actions: Vec::new(),
                started: now,
                ended: None,
            }),
            conversation: Mutex::new(Some(vec![
                json!({"role": "system", "content": agent::SYSTEM_PROMPT}),
            ])),
            changed: watch::channel(0).0,
            cancel: spawn.cancel,
            task: Mutex::new(None),
            agent,
            notices: self.notices.clone(),
        });
        worker.start(spawn.brief)?;
        workers.push(worker.clone());
        Ok(worker)
    }

    /// The worker `id`, or an error listing the ones there are.
    pub fn get(&self, id: &str) -> Result<Arc<Worker>, String> {
        let workers = lock(&self.workers);
        workers
            .iter()
            .find(|worker| worker.id == id)
            .cloned()
            .ok_or_else(|| {
                let known: Vec<&str> = workers.iter().map(|w| w.id.as_str()).collect();
                if known.is_empty() {
                    format!("worker_id: no worker `{id}`; none was spawned in this run")
                } else {
                    format!(
                        "worker_id: no worker `{id}`; this run has {}",
                        known.join(", ")
                    )
                }
            })
    }

    /// Sends `message` to worker `id` as a new user turn and runs it again.
    pub fn send(&self, id: &str, message: String) -> Result<Arc<Worker>, String> {
        let worker = self.get(id)?;
        worker.start(message)?;
        Ok(worker)
    }

    /// Every worker, oldest first.
    pub fn all(&self) -> Vec<Arc<Worker>> {
        lock(&self.workers).clone()
    }
}

#[async_trait]
impl Resource for Pool {
    fn name(&self) -> String {
        "workers".into()
    }

    /// Stops every worker's loop and lets go of them (a worker's caller
    /// holds the run, so keeping them would keep the run alive); their
    /// background jobs end with the run's own job table.
    async fn shutdown(&self) {
        let workers = std::mem::take(&mut *lock(&self.workers));
        for worker in workers {
            worker.stop_loop().await;
        }
    }

    fn kill_now(&self) {
        let workers = std::mem::take(&mut *lock(&self.workers));
        for worker in workers {
            worker.mark_killed();
            worker.cancel.cancel();
            if let Some(task) = lock(&worker.task).take() {
                task.abort();
            }
        }
    }

    fn status(&self) -> String {
        let workers = self.all();
        let running = workers
            .iter()
            .filter(|worker| worker.record().status == Status::Running)
            .count();
        format!("workers: {} spawned, {running} running", workers.len())
    }
}
