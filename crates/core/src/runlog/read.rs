//! Reading the run logs back, for `gantry log` and `gantry view`.

use std::io::{self, BufRead, Read, Seek};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// One record as read back.
pub type Record = Map<String, Value>;

/// Whether a run is still going: its writer holds the file's lock.
pub fn is_running(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockShared).is_err()
}

/// How a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Its process is running it.
    Running,
    /// It ended and said so.
    Ended,
    /// Its process died without ending it (killed).
    Killed,
}

impl State {
    /// The word the log's readers print.
    pub fn word(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Ended => "ended",
            State::Killed => "killed",
        }
    }
}

/// A run's outline, from its log.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// The run's id (its file's name).
    pub id: String,
    /// The `run.start` record.
    pub start: Option<Record>,
    /// The `run.end` record, when it ended.
    pub end: Option<Record>,
    /// Running, ended or killed.
    pub state: State,
    /// The calls made.
    pub calls: u64,
    /// Sandbox refusals and declined confirmations.
    pub refused: u64,
    /// The log's size.
    pub bytes: u64,
}

impl RunSummary {
    /// The outline as JSON (the shape `gantry view`'s API serves).
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "id": self.id,
            "start": self.start,
            "end": self.end,
            "state": self.state.word(),
            "calls": self.calls,
            "refused": self.refused,
            "bytes": self.bytes,
        })
    }
}

/// The path of run `id`'s log in `dir`; none for an id that is not a
/// plain file name.
pub fn path_of(dir: &Path, id: &str) -> Option<PathBuf> {
    let plain = !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    plain.then(|| dir.join(format!("{id}.jsonl")))
}

/// Every run in `dir`, newest first.
pub fn runs(dir: &Path) -> io::Result<Vec<RunSummary>> {
    let mut ids: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                Some(name.strip_suffix(".jsonl")?.to_string())
            })
            .collect(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(error) => return Err(error),
    };
    ids.sort_unstable_by(|a, b| b.cmp(a));
    Ok(ids
        .into_iter()
        .filter_map(|id| summary(dir, &id).ok())
        .collect())
}

/// One run's outline.
pub fn summary(dir: &Path, id: &str) -> io::Result<RunSummary> {
    let path = path_of(dir, id).ok_or_else(|| io::Error::other(format!("no run `{id}`")))?;
    let running = is_running(&path);
    let (records, bytes) = records_from(&path, 0)?;
    let mut summary = RunSummary {
        id: id.to_string(),
        start: None,
        end: None,
        state: State::Killed,
        calls: 0,
        refused: 0,
        bytes,
    };
    for record in records {
        match kind(&record) {
            "run.start" => summary.start = Some(record),
            "run.end" => summary.end = Some(record),
            "call.start" => summary.calls += 1,
            "sandbox.refused" => summary.refused += 1,
            "confirm.answer" if record.get("answer").and_then(Value::as_str) != Some("yes") => {
                summary.refused += 1;
            }
            _ => {}
        }
    }
    // A run that wrote its end has ended, though its log's thread may
    // hold the lock a moment longer.
    summary.state = if summary.end.is_some() {
        State::Ended
    } else if running {
        State::Running
    } else {
        State::Killed
    };
    Ok(summary)
}

/// A record's kind.
pub fn kind(record: &Record) -> &str {
    record.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// Every whole record of the log at `path` from byte `offset` on, and the
/// offset just after the last whole line: a line still being written (or
/// torn by a kill) is left for the next read.
pub fn records_from(path: &Path, offset: u64) -> io::Result<(Vec<Record>, u64)> {
    let mut file = std::fs::File::open(path)?;
    file.seek(io::SeekFrom::Start(offset))?;
    let mut reader = io::BufReader::new(file.take(u64::MAX));
    let mut records = Vec::new();
    let mut at = offset;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 || line.last() != Some(&b'\n') {
            break;
        }
        at += n as u64;
        if let Ok(Value::Object(record)) = serde_json::from_slice(&line) {
            records.push(record);
        }
    }
    Ok((records, at))
}

/// New records as runs write them: for `gantry log --follow` and `gantry
/// view`. Woken by the file system's events on the folder (inotify), never
/// by polling on a timer.
pub struct Follow {
    dir: PathBuf,
    only: Option<String>,
    offsets: std::collections::HashMap<String, u64>,
    /// The logs an event named; `None` for an event that named none (an
    /// overflow), after which every log is read again.
    events: std::sync::mpsc::Receiver<Option<Vec<PathBuf>>>,
    _watcher: notify::RecommendedWatcher,
}

impl Follow {
    /// Follows the runs in `dir` (or only run `only`) from now on: what
    /// is already written is not returned.
    pub fn new(dir: &Path, only: Option<&str>) -> io::Result<Follow> {
        use notify::Watcher as _;
        // The state directory's `runs` folder, to watch it before a run starts.
        #[allow(clippy::disallowed_methods)]
        std::fs::create_dir_all(dir)?;
        let (sender, events) = std::sync::mpsc::channel();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let paths = event
                    .ok()
                    .map(|event| event.paths)
                    .filter(|paths| !paths.is_empty());
                let _ = sender.send(paths);
            })
            .map_err(io::Error::other)?;
        watcher
            .watch(dir, notify::RecursiveMode::NonRecursive)
            .map_err(io::Error::other)?;
        let mut follow = Follow {
            dir: dir.to_path_buf(),
            only: only.map(str::to_string),
            offsets: Default::default(),
            events,
            _watcher: watcher,
        };
        for id in follow.ids() {
            let size =
                std::fs::metadata(follow.dir.join(format!("{id}.jsonl"))).map_or(0, |m| m.len());
            follow.offsets.insert(id, size);
        }
        Ok(follow)
    }

    /// Says that run `id` was read up to `offset` already (by
    /// [`records_from`]), so nothing is returned twice.
    pub fn read_up_to(&mut self, id: &str, offset: u64) {
        self.offsets.insert(id.to_string(), offset);
    }

    fn ids(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = entries
            .flatten()
            .filter_map(|entry| {
                Some(
                    entry
                        .file_name()
                        .into_string()
                        .ok()?
                        .strip_suffix(".jsonl")?
                        .to_string(),
                )
            })
            .filter(|id| self.only.as_ref().is_none_or(|only| only == id))
            .collect();
        ids.sort();
        ids
    }

    /// The records written since the last call, waiting at most `wait`
    /// for some; the ids of runs seen for the first time come first.
    pub fn next(&mut self, wait: std::time::Duration) -> (Vec<String>, Vec<Record>) {
        let Ok(first) = self.events.recv_timeout(wait) else {
            return (Vec::new(), Vec::new());
        };
        // Only the logs the events named are read again, so a folder of
        // many runs costs a write of one of them no more than one read.
        let mut named: Option<std::collections::BTreeSet<String>> = Some(Default::default());
        for paths in std::iter::once(first).chain(self.events.try_iter()) {
            match (paths, &mut named) {
                (Some(paths), Some(named)) => named.extend(paths.iter().filter_map(|path| {
                    Some(
                        path.file_name()?
                            .to_str()?
                            .strip_suffix(".jsonl")?
                            .to_string(),
                    )
                })),
                _ => named = None,
            }
        }
        let ids: Vec<String> = match named {
            Some(named) => named
                .into_iter()
                .filter(|id| self.only.as_ref().is_none_or(|only| only == id))
                .collect(),
            None => self.ids(),
        };
        let mut new_runs = Vec::new();
        let mut records = Vec::new();
        for id in ids {
            let offset = match self.offsets.get(&id) {
                Some(offset) => *offset,
                None => {
                    new_runs.push(id.clone());
                    0
                }
            };
            let path = self.dir.join(format!("{id}.jsonl"));
            if let Ok((mut read, next)) = records_from(&path, offset) {
                records.append(&mut read);
                self.offsets.insert(id, next);
            }
        }
        (new_runs, records)
    }
}
