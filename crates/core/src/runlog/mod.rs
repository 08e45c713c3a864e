//! The run log: one honest record of every run, for the person who runs
//! the agents (`gantry log`, `gantry view`, OpenTelemetry).
//!
//! Each run appends JSON lines to its own file under the state directory
//! (`runs/<id>.jsonl`, never the workspace): its start, every call with
//! who asked and how it ended, confirmations, sandbox refusals, the files
//! each write changed, notices, workers' turns, the live resources that
//! came and went, and its end. The record shape is documented in
//! ARCHITECTURE.md ("The run log").
//!
//! A call pays for building its record's fields (arguments already cut,
//! see [`redact::loggable`]) and one channel send; scrubbing secrets out
//! of text, diffing, serialising and writing happen on the log's own
//! thread ([`writer`]). The file is `flock`ed while the run lives, which
//! is how a reader tells a running run from one that was killed.

pub mod read;
pub mod redact;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::result::{Part, ToolResult};

pub use writer::{Limits, Sink};

/// The folder of the run logs under the state directory.
pub fn runs_dir() -> PathBuf {
    crate::settings::state_dir().join("runs")
}

/// Where a run came from, for its first record.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The front end: `mcp stdio`, `mcp http`, `call`, `agent`.
    pub front: String,
    /// The client's name and version, when it said (MCP `clientInfo`).
    pub client: Option<(String, String)>,
}

tokio::task_local! {
    /// The call whose work is running on this task, and its run's log, so
    /// that what the call causes deep down (a write, a sandbox refusal) is
    /// logged against it without every layer passing the run along.
    static CALL: (u64, RunLog);
}

/// The id of the call running on this task, if any.
pub fn current_call() -> Option<u64> {
    CALL.try_with(|(id, _)| *id).ok()
}

/// Records `kind` in the log of the run whose call is running on this
/// task, against that call; nothing outside a call.
pub fn record_in_call(kind: &'static str, fields: Value) {
    let _ = CALL.try_with(|(_, log)| log.record(kind, fields));
}

/// Runs `work` as the work of call `id` of `log`'s run (see [`current_call`]).
pub(crate) async fn within_call<F: std::future::Future>(
    id: u64,
    log: RunLog,
    work: F,
) -> F::Output {
    CALL.scope((id, log), work).await
}

/// A file a write changed, diffed on the log's thread.
pub(crate) struct FileChange {
    pub(crate) path: String,
    pub(crate) action: &'static str,
    pub(crate) before: Option<Vec<u8>>,
    pub(crate) after: Option<Vec<u8>>,
}

/// What travels to the log's thread.
pub(crate) enum Entry {
    Record {
        time: SystemTime,
        kind: &'static str,
        fields: Map<String, Value>,
    },
    File {
        time: SystemTime,
        call: Option<u64>,
        change: FileChange,
    },
    /// Flush, then say so.
    Close(std::sync::mpsc::Sender<()>),
}

struct Shared {
    id: String,
    calls: AtomicU64,
    ended: std::sync::atomic::AtomicBool,
    sender: std::sync::mpsc::Sender<Entry>,
}

/// A run's log. Cheap to clone; a disabled log records nothing.
#[derive(Clone, Default)]
pub struct RunLog(Option<Arc<Shared>>);

impl std::fmt::Debug for RunLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RunLog").field(&self.id()).finish()
    }
}

/// How long closing waits for the log's thread to write what it holds.
const CLOSE_BOUND: Duration = Duration::from_secs(3);

impl RunLog {
    /// Opens a new run's log under [`runs_dir`]; a log that cannot be
    /// opened is a warning, never a failed run. `sinks` are told of every
    /// record too (the OpenTelemetry exporter).
    pub fn open(limits: Limits, sinks: Vec<Box<dyn Sink>>) -> RunLog {
        RunLog::open_in(&runs_dir(), limits, sinks)
    }

    pub(crate) fn open_in(
        dir: &std::path::Path,
        limits: Limits,
        sinks: Vec<Box<dyn Sink>>,
    ) -> RunLog {
        match writer::start(dir, limits, sinks) {
            Ok((id, sender)) => RunLog(Some(Arc::new(Shared {
                id,
                calls: AtomicU64::new(0),
                ended: Default::default(),
                sender,
            }))),
            Err(error) => {
                tracing::warn!("the run log is off for this run: {error}");
                RunLog(None)
            }
        }
    }

    /// The run's id (its log file's name), when the log is on.
    pub fn id(&self) -> Option<&str> {
        self.0.as_deref().map(|shared| shared.id.as_str())
    }

    /// Appends a record of `kind` with `fields` (a JSON object; `call` is
    /// filled in from the task when the record is made within a call).
    pub fn record(&self, kind: &'static str, fields: Value) {
        let Some(shared) = &self.0 else { return };
        let mut fields = match fields {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        if !fields.contains_key("call")
            && let Some(call) = current_call()
        {
            fields.insert("call".into(), call.into());
        }
        let _ = shared.sender.send(Entry::Record {
            time: SystemTime::now(),
            kind,
            fields,
        });
    }

    /// Whether records go anywhere (so a caller can skip building them).
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn file(&self, change: FileChange) {
        let Some(shared) = &self.0 else { return };
        let _ = shared.sender.send(Entry::File {
            time: SystemTime::now(),
            call: current_call(),
            change,
        });
    }

    pub(crate) fn next_call(&self) -> u64 {
        self.0
            .as_ref()
            .map_or(0, |shared| shared.calls.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// Records the run's end, once, and writes what the log holds.
    pub(crate) fn end(&self, reason: &str) {
        let Some(shared) = &self.0 else { return };
        if shared.ended.swap(true, Ordering::Relaxed) {
            return;
        }
        let calls = shared.calls.load(Ordering::Relaxed);
        self.record("run.end", json!({ "reason": reason, "calls": calls }));
        self.close();
    }

    /// Writes what the log's thread holds and waits for it, bounded: the
    /// run's last records reach the disk before the process exits.
    pub fn close(&self) {
        let Some(shared) = &self.0 else { return };
        let (done, written) = std::sync::mpsc::channel();
        if shared.sender.send(Entry::Close(done)).is_ok() {
            let _ = written.recv_timeout(CLOSE_BOUND);
        }
    }
}

/// A call's outcome as the log words it.
pub(crate) fn call_end_fields(
    tool: &str,
    started: std::time::Instant,
    outcome: Result<&ToolResult, (&'static str, &str)>,
) -> Value {
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let mut fields = json!({ "tool": tool, "ms": (ms * 1000.0).round() / 1000.0 });
    match outcome {
        Ok(result) => {
            fields["outcome"] = "ok".into();
            let mut text = String::new();
            let mut images = Vec::new();
            for part in &result.llm_content {
                match part {
                    Part::Text { text: piece } => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&redact::cut(piece, redact::TEXT_CAP));
                    }
                    Part::Image { mime_type, data } if data.len() <= redact::IMAGE_CAP => {
                        images.push(json!({ "mime": mime_type, "data": base64::engine::general_purpose::STANDARD.encode(data) }));
                    }
                    Part::Image { mime_type, data } => {
                        text.push_str(&format!(
                            "\n[{mime_type} image of {} bytes not kept]",
                            data.len()
                        ));
                    }
                    Part::Json { .. } => {}
                }
            }
            fields["text"] = redact::cut(&text, redact::TEXT_CAP).into();
            if !images.is_empty() {
                fields["images"] = images.into();
            }
            if let Some(background) = &result.background {
                fields["background"] = background.handle.clone().into();
            }
        }
        Err((outcome, message)) => {
            fields["outcome"] = outcome.into();
            fields["text"] = redact::cut(message, redact::TEXT_CAP).into();
        }
    }
    fields
}

/// The time a record wrote (see [`writer`]'s format), read back.
pub fn parse_time(time: &str) -> Option<SystemTime> {
    chrono::DateTime::parse_from_rfc3339(time)
        .ok()
        .map(|time| SystemTime::from(time.with_timezone(&chrono::Utc)))
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::read::{self, State};
    use super::*;

    fn kinds(dir: &std::path::Path, id: &str) -> Vec<String> {
        let (records, _) = read::records_from(&read::path_of(dir, id).unwrap(), 0).unwrap();
        records.iter().map(|r| read::kind(r).to_string()).collect()
    }

    #[test]
    fn records_are_numbered_in_order_and_a_running_run_is_told_from_an_ended_one() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::open_in(dir.path(), Limits::default(), Vec::new());
        let id = log.id().unwrap().to_string();
        log.record("run.start", json!({"front": "test"}));
        log.record(
            "notice",
            json!({"text": "found ghp_abcdefghijklmnopqrstuvwxyz0123 here"}),
        );
        log.close();
        assert_eq!(
            read::summary(dir.path(), &id).unwrap().state,
            State::Running
        );
        log.end("done");
        let (records, _) = read::records_from(&read::path_of(dir.path(), &id).unwrap(), 0).unwrap();
        let seqs: Vec<u64> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, [0, 1, 2]);
        assert_eq!(records[1]["text"], "found [secret] here");
        assert_eq!(kinds(dir.path(), &id), ["run.start", "notice", "run.end"]);
        drop(log);
        let summary = read::summary(dir.path(), &id).unwrap();
        assert_eq!(summary.state, State::Ended);
    }

    #[test]
    fn a_torn_last_line_is_left_unread_and_a_run_without_an_end_was_killed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("20260101T000000Z-1-1.jsonl");
        std::fs::write(
            &path,
            "{\"seq\":0,\"kind\":\"run.start\"}\n{\"seq\":1,\"kind\":\"call.st",
        )
        .unwrap();
        let (records, offset) = read::records_from(&path, 0).unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(offset, 29);
        let summary = read::summary(dir.path(), "20260101T000000Z-1-1").unwrap();
        assert_eq!(summary.state, State::Killed);
    }

    #[test]
    fn past_its_cap_a_run_keeps_outlines_and_the_folder_loses_its_oldest_ended_runs() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..4 {
            std::fs::write(
                dir.path().join(format!("2026010{n}T000000Z-1-1.jsonl")),
                vec![b'x'; 40_000],
            )
            .unwrap();
        }
        let limits = Limits {
            total_bytes: 100_000,
            run_bytes: 1_000,
        };
        let log = RunLog::open_in(dir.path(), limits, Vec::new());
        let id = log.id().unwrap().to_string();
        // Pruning is the log thread's first work; a close waits for it.
        log.close();
        let left: Vec<String> = read::runs(dir.path())
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(left.len(), 3, "{left:?}");
        assert!(
            !left.iter().any(|id| id.starts_with("20260100")),
            "the oldest went first: {left:?}"
        );
        for _ in 0..20 {
            log.record("call.end", json!({"tool": "x", "text": "y".repeat(200)}));
            log.close();
        }
        let (records, _) = read::records_from(&read::path_of(dir.path(), &id).unwrap(), 0).unwrap();
        let cut = records
            .iter()
            .position(|r| read::kind(r) == "log.cut")
            .expect("a log.cut record");
        assert!(records[cut + 1..].iter().all(|r| !r.contains_key("text")));
        assert!(records[..cut].iter().all(|r| r.contains_key("text")));
        assert!(
            std::fs::metadata(read::path_of(dir.path(), &id).unwrap())
                .unwrap()
                .len()
                < 4_000
        );
    }
}
