//! The log's own thread: numbers, scrubs, diffs and writes the records a
//! run sends, appending whole lines with one `write` per batch, and keeps
//! the folder of run logs within its size by removing the oldest ended
//! runs.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value};

use super::redact::{self, Scrubber};
use super::{Entry, FileChange};
use crate::write::ContentHash;

/// The longest diff kept of one file.
const DIFF_CAP: usize = 16 * 1024;
/// Files larger than this are not diffed (sizes and hashes only).
const DIFF_INPUT_CAP: usize = 1024 * 1024;
/// How often, in bytes this run wrote, the folder's size is checked.
const PRUNE_EVERY: u64 = 4 * 1024 * 1024;

/// How large the run logs may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Every run's log together: the oldest ended runs are removed past it.
    pub total_bytes: u64,
    /// One run's log: past it, records keep their outline but lose their
    /// texts, arguments, diffs and images.
    pub run_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits::of_total(256 * 1024 * 1024)
    }
}

impl Limits {
    /// The limits for a folder of `total_bytes`: one run may fill a quarter.
    pub fn of_total(total_bytes: u64) -> Self {
        Limits {
            total_bytes,
            run_bytes: (total_bytes / 4).max(64 * 1024),
        }
    }
}

/// Told of every record as written (on the log's thread, so it must hand
/// slow work on, as the OpenTelemetry exporter does).
pub trait Sink: Send + 'static {
    /// One record, as it went to the file.
    fn record(&mut self, record: &Map<String, Value>);
    /// The run's log is closing: send what is held, bounded.
    fn close(&mut self) {}
}

/// How long the log's thread leaves records to gather after writing a
/// batch, once calls come back to back. Waking a thread costs a call tens
/// of microseconds on an idle machine (about a fifth of a trivial `eval`
/// round trip); a record is still on disk within this of its call.
const COALESCE: Duration = Duration::from_millis(5);
/// Back to back means more than this many batches within [`BUSY_WINDOW`].
/// Below it each record is written at once, so the few calls a person
/// makes are on disk before anything could kill the run.
const BUSY_BATCHES: u32 = 32;
const BUSY_WINDOW: Duration = Duration::from_millis(100);

/// Creates the run's file, locked, and starts its thread.
// The run log, in the state directory's `runs` folder: Gantry's own file.
#[allow(clippy::disallowed_methods)]
pub(super) fn start(
    dir: &Path,
    limits: Limits,
    sinks: Vec<Box<dyn Sink>>,
) -> io::Result<(String, Sender<Entry>)> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let id = new_id();
    let path = dir.join(format!("{id}.jsonl"));
    let file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc_cloexec())
        .open(&path)?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
    let (sender, receiver) = std::sync::mpsc::channel();
    let writer = Writer {
        id: id.clone(),
        dir: dir.to_path_buf(),
        path,
        file,
        limits,
        sinks,
        scrubber: Scrubber::from_env(),
        seq: 0,
        written: 0,
        since_prune: 0,
        cut: false,
    };
    std::thread::Builder::new()
        .name("gantry-runlog".into())
        .spawn(move || {
            yield_to_calls();
            writer.serve(receiver)
        })?;
    Ok((id, sender))
}

/// Makes the calling thread (the log's) a batch thread: woken by a
/// record, it does not preempt the thread serving a call, and runs when
/// that one waits or on another core, so a call does not wait for its own
/// record to be written. It keeps its fair share of a busy machine.
fn yield_to_calls() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid pointer.
    let set = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
    if set != 0 {
        tracing::debug!(
            "the run log's thread keeps the normal policy: {}",
            io::Error::last_os_error()
        );
    }
}

/// `O_CLOEXEC`: no child inherits the lock (it would keep a killed run
/// looking alive).
fn libc_cloexec() -> i32 {
    rustix::fs::OFlags::CLOEXEC.bits() as i32
}

/// A new run's id, sorting by start: `20261202T073102Z-12345-1`.
fn new_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}-{}-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A record's time, as every record writes it.
pub(crate) fn timestamp(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time)
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

struct Writer {
    id: String,
    dir: PathBuf,
    path: PathBuf,
    file: File,
    limits: Limits,
    sinks: Vec<Box<dyn Sink>>,
    scrubber: Scrubber,
    seq: u64,
    written: u64,
    since_prune: u64,
    cut: bool,
}

impl Writer {
    fn serve(mut self, receiver: Receiver<Entry>) {
        // On this thread, not the run's start: the folder may hold many runs.
        self.prune();
        let mut batch = Vec::new();
        let (mut window, mut batches) = (Instant::now(), 0);
        while let Ok(first) = receiver.recv() {
            let mut closing = Vec::new();
            for entry in std::iter::once(first).chain(receiver.try_iter()) {
                match entry {
                    Entry::Close(done) => closing.push(done),
                    entry => self.line(entry, &mut batch),
                }
            }
            self.flush(&mut batch);
            if !closing.is_empty() {
                for sink in &mut self.sinks {
                    sink.close();
                }
                for done in closing {
                    let _ = done.send(());
                }
                continue;
            }
            // A deliberate back-off, not a wait for an event: records sent
            // meanwhile wait in the channel, and a send wakes this thread
            // only when it is blocked in `recv`, so back-to-back calls cost
            // one wake per interval rather than one per record.
            if window.elapsed() > BUSY_WINDOW {
                (window, batches) = (Instant::now(), 0);
            }
            batches += 1;
            if batches > BUSY_BATCHES {
                std::thread::sleep(COALESCE);
            }
        }
        for sink in &mut self.sinks {
            sink.close();
        }
    }

    fn line(&mut self, entry: Entry, batch: &mut Vec<u8>) {
        let (time, kind, mut fields) = match entry {
            Entry::Record { time, kind, fields } => (time, kind, fields),
            Entry::File { time, call, change } => (time, "file.write", file_fields(call, change)),
            Entry::Close(_) => return,
        };
        if !self.cut && self.written >= self.limits.run_bytes {
            self.cut = true;
            let note = Map::from_iter([(
                "text".to_string(),
                Value::from(format!(
                    "this run's log reached {} bytes; later records keep no texts, arguments, diffs or images",
                    self.limits.run_bytes
                )),
            )]);
            self.append(SystemTime::now(), "log.cut", note, batch);
        }
        if self.cut {
            for heavy in ["text", "args", "diff", "images"] {
                fields.remove(heavy);
            }
        }
        for (key, value) in fields.iter_mut() {
            if key != "images" {
                self.scrubber.value(value);
            }
        }
        self.append(time, kind, fields, batch);
    }

    fn append(
        &mut self,
        time: SystemTime,
        kind: &str,
        fields: Map<String, Value>,
        batch: &mut Vec<u8>,
    ) {
        let mut record = Map::with_capacity(fields.len() + 4);
        record.insert("seq".into(), self.seq.into());
        record.insert("time".into(), timestamp(time).into());
        record.insert("run".into(), self.id.clone().into());
        record.insert("kind".into(), kind.into());
        record.extend(fields);
        self.seq += 1;
        let start = batch.len();
        if serde_json::to_writer(&mut *batch, &record).is_err() {
            batch.truncate(start);
            return;
        }
        batch.push(b'\n');
        for sink in &mut self.sinks {
            sink.record(&record);
        }
    }

    /// One `write` per batch of whole lines: a reader, or a kill, sees
    /// whole records, but for a torn last line the readers skip.
    fn flush(&mut self, batch: &mut Vec<u8>) {
        if batch.is_empty() {
            return;
        }
        if let Err(error) = self.file.write_all(batch) {
            tracing::warn!(
                "could not write the run log {}: {error}",
                self.path.display()
            );
        }
        let bytes = batch.len() as u64;
        batch.clear();
        self.written += bytes;
        self.since_prune += bytes;
        if self.since_prune >= PRUNE_EVERY {
            self.since_prune = 0;
            self.prune();
        }
    }

    /// Removes the oldest ended runs until the folder is within its size;
    /// a running run (its file locked) is never removed.
    // Removes run logs from the state directory's `runs` folder only.
    #[allow(clippy::disallowed_methods)]
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut logs: Vec<(String, PathBuf, u64)> = entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let id = name.strip_suffix(".jsonl")?.to_string();
                let size = entry.metadata().ok()?.len();
                Some((id, entry.path(), size))
            })
            .collect();
        logs.sort();
        let mut total: u64 = logs.iter().map(|(_, _, size)| size).sum();
        for (id, path, size) in logs {
            if total <= self.limits.total_bytes {
                break;
            }
            if id == self.id || super::read::is_running(&path) {
                continue;
            }
            // A log is Gantry's own state, never the workspace's.
            if std::fs::remove_file(&path).is_ok() {
                total -= size;
            }
        }
    }
}

fn file_fields(call: Option<u64>, change: FileChange) -> Map<String, Value> {
    let mut fields = Map::new();
    if let Some(call) = call {
        fields.insert("call".into(), call.into());
    }
    fields.insert("path".into(), change.path.into());
    fields.insert("action".into(), change.action.into());
    if let Some(before) = &change.before {
        fields.insert("before".into(), before.len().into());
    }
    let after = change.after.as_deref();
    fields.insert("size".into(), after.map_or(0, <[u8]>::len).into());
    if let Some(after) = after {
        fields.insert("sha256".into(), ContentHash::of(after).to_string().into());
    }
    if let Some((diff, cut)) = diff(change.before.as_deref(), after) {
        fields.insert("diff".into(), diff.into());
        fields.insert("diff_cut".into(), cut.into());
    }
    fields
}

/// A unified diff of a text file's change, cut to [`DIFF_CAP`], bounded
/// in time; none for binary or very large files.
fn diff(before: Option<&[u8]>, after: Option<&[u8]>) -> Option<(String, bool)> {
    let before = before.unwrap_or_default();
    let after = after.unwrap_or_default();
    if before.len() > DIFF_INPUT_CAP || after.len() > DIFF_INPUT_CAP {
        return None;
    }
    let (old, new) = (
        std::str::from_utf8(before).ok()?,
        std::str::from_utf8(after).ok()?,
    );
    let text = similar::TextDiff::configure()
        .timeout(Duration::from_secs(1))
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .to_string();
    let cut = text.len() > DIFF_CAP;
    Some((
        if cut {
            redact::cut(&text, DIFF_CAP)
        } else {
            text
        },
        cut,
    ))
}
