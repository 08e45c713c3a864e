//! The file watcher behind the language servers: one non-recursive watch
//! per folder under the servers' roots, each change handed to whoever
//! started it, and the barrier through it that keeps a request from being
//! answered from a view older than a change just made on disk.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_core::lock;
use lsp_types::FileChangeType;
use notify::Watcher;

use crate::paths::ignored;

/// Most directories one workspace watch covers.
const MAX_WATCHED_DIRS: usize = 20_000;

/// Watches the directories under the servers' roots (one non-recursive
/// watch per directory, so build output and dependencies cost nothing) and
/// hands each change to the servers whose root holds it.
pub(crate) struct DiskWatch {
    watcher: Arc<Mutex<notify::RecommendedWatcher>>,
    watched: Arc<Mutex<HashSet<PathBuf>>>,
    /// `None` where the state directory cannot be written.
    barrier: Option<Arc<WatchBarrier>>,
}

impl DiskWatch {
    /// Starts watching (nothing yet: see [`DiskWatch::add_tree`]) and hands
    /// each change of a file the watcher does not skip to `changed`, until
    /// it returns `false` (nobody listens any more). A folder created in a
    /// watched one is watched too.
    pub(crate) fn start(
        workspace: &Path,
        changed: impl Fn(&Path, FileChangeType) -> bool + Send + 'static,
    ) -> Option<DiskWatch> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if let Ok(event) = event {
                    let _ = tx.send(event);
                }
            })
            .map_err(|e| tracing::warn!("no file watching for language servers: {e}"))
            .ok()?;
        let barrier = WatchBarrier::new(workspace, &mut watcher).map(Arc::new);
        let watch = DiskWatch {
            watcher: Arc::new(Mutex::new(watcher)),
            watched: Arc::default(),
            barrier: barrier.clone(),
        };
        let (watcher, watched) = (watch.watcher.clone(), watch.watched.clone());
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if let Some(barrier) = &barrier
                    && barrier.passed(&event.paths)
                {
                    continue;
                }
                let Some(kind) = change_kind(&event.kind) else {
                    continue;
                };
                for path in event.paths {
                    if ignored(&path) {
                        continue;
                    }
                    if kind == FileChangeType::CREATED && path.is_dir() {
                        add_tree(&watcher, &watched, &path);
                        continue;
                    }
                    if !changed(&path, kind) {
                        return;
                    }
                }
            }
        });
        Some(watch)
    }

    /// Watches every folder under `root` the watcher does not skip.
    pub(crate) fn add_tree(&self, root: &Path) {
        add_tree(&self.watcher, &self.watched, root);
    }

    /// The barrier through this watcher, where the state directory can be
    /// written.
    pub(crate) fn barrier(&self) -> Option<Arc<WatchBarrier>> {
        self.barrier.clone()
    }
}

/// A barrier through the file watcher, so that no answer comes from a view
/// older than the request: a change a shell made just before is still on
/// its way from inotify when the next request comes. A file created in a
/// watched folder of Gantry's state directory (never the workspace) joins
/// the same inotify queue behind that change; once the watcher has handed
/// on the file's event, it has handed on the change.
pub(crate) struct WatchBarrier {
    dir: gantry_core::state::ProcessDir,
    next: AtomicU64,
    crossed: tokio::sync::watch::Sender<u64>,
}

/// How long a request waits for the watcher to catch up before it goes
/// ahead anyway (a watcher thread starved for that long is not waited for).
const BARRIER_BOUND: Duration = Duration::from_secs(2);

impl WatchBarrier {
    fn new(workspace: &Path, watcher: &mut notify::RecommendedWatcher) -> Option<WatchBarrier> {
        let made = gantry_core::state::ProcessDir::create("lsp-watch", workspace).and_then(|dir| {
            watcher
                .watch(dir.path(), notify::RecursiveMode::NonRecursive)
                .map_err(std::io::Error::other)?;
            Ok(dir)
        });
        match made {
            Ok(dir) => Some(WatchBarrier {
                dir,
                next: AtomicU64::new(0),
                crossed: tokio::sync::watch::Sender::new(0),
            }),
            Err(e) => {
                tracing::warn!("language servers may answer from a view a shell just changed: {e}");
                None
            }
        }
    }

    /// Waits, bounded, until every change made on disk before this call
    /// has been handed to the servers.
    pub(crate) async fn cross(&self) {
        let number = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mark = number.to_string();
        if self.dir.touch(&mark).is_err() {
            return;
        }
        let mut crossed = self.crossed.subscribe();
        let _ = tokio::time::timeout(BARRIER_BOUND, crossed.wait_for(|seen| *seen >= number)).await;
        self.dir.remove(&mark);
    }

    /// Whether an event is one of the barrier's own (then it records how
    /// far the watcher has come).
    fn passed(&self, paths: &[PathBuf]) -> bool {
        let mut own = false;
        for path in paths
            .iter()
            .filter(|path| path.parent() == Some(self.dir.path()))
        {
            own = true;
            if let Some(number) = path
                .file_name()
                .and_then(|name| name.to_str()?.parse().ok())
            {
                self.crossed.send_if_modified(|seen| {
                    let later = number > *seen;
                    if later {
                        *seen = number;
                    }
                    later
                });
            }
        }
        own
    }
}

fn add_tree(
    watcher: &Mutex<notify::RecommendedWatcher>,
    watched: &Mutex<HashSet<PathBuf>>,
    root: &Path,
) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        {
            let mut watched = lock(watched);
            if watched.len() >= MAX_WATCHED_DIRS || !watched.insert(dir.clone()) {
                continue;
            }
        }
        if lock(watcher)
            .watch(&dir, notify::RecursiveMode::NonRecursive)
            .is_err()
        {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) && !ignored(&path) {
                stack.push(path);
            }
        }
    }
}

/// A watcher's event in the form servers take; `None` for what they need
/// not hear (metadata only).
fn change_kind(kind: &notify::EventKind) -> Option<FileChangeType> {
    use notify::EventKind;
    match kind {
        EventKind::Create(_) => Some(FileChangeType::CREATED),
        EventKind::Modify(notify::event::ModifyKind::Metadata(_)) => None,
        EventKind::Modify(_) => Some(FileChangeType::CHANGED),
        EventKind::Remove(_) => Some(FileChangeType::DELETED),
        _ => None,
    }
}
