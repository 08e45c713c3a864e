//! The parallel walk: each file searched on a walker thread, what it found
//! kept in path order up to the cutoff (see the parent module).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use gantry_core::{CancellationToken, OpenDir, ToolError, Workspace};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};

use super::Query;
use super::sink::{FileHits, FileSink, Mode};
use crate::common::walker;

/// Matching lines counted past the cap, as a multiple of it, before the
/// walk stops looking past the cutoff: enough to say "at least 2,000" and
/// show the scale, without searching a whole monorepo for a common word.
const COUNT_FACTOR: u64 = 10;

/// Directory handles one walker thread keeps: the walk is depth first, so
/// the folders whose files are still to come are the few on the current
/// path, and a handful covers them without holding many descriptors.
const OPEN_DIRS: usize = 8;

/// The last directories a walker thread opened files in, most recent last.
#[derive(Default)]
pub(super) struct Dirs(Vec<OpenDir>);

impl Dirs {
    /// Opens the file at `path` as the walk listed it: by name in its
    /// directory's handle, which was opened beneath the root, so the
    /// kernel resolves one name rather than the whole path. A link, or an
    /// entry swapped for one since the listing, goes through
    /// [`Workspace::open_file`], which follows only links that stay inside.
    fn open(&mut self, workspace: &Workspace, path: &Path, link: bool) -> io::Result<File> {
        let (Some(parent), Some(name), false) = (path.parent(), path.file_name(), link) else {
            return workspace.open_file(path);
        };
        match self
            .0
            .iter()
            .rposition(|dir| dir.path().as_os_str() == parent.as_os_str())
        {
            Some(at) => self.0[at..].rotate_left(1),
            None => {
                // Out of descriptors, say: the path's own open decides.
                let Ok(dir) = workspace.open_dir(parent) else {
                    return workspace.open_file(path);
                };
                if self.0.len() == OPEN_DIRS {
                    self.0.remove(0);
                }
                self.0.push(dir);
            }
        }
        let dir = self.0.last().expect("the folder was just put last");
        workspace.open_entry(dir, name)
    }
}

/// The files that may still be shown, in path order, and the cutoff.
#[derive(Default)]
pub(super) struct Collected {
    pub(super) files: BTreeMap<OsString, FileHits>,
    /// Matching lines stored across `files`.
    pub(super) stored: u64,
    /// The path at which `stored` reaches the cap: nothing after it is
    /// shown.
    pub(super) cutoff: Option<OsString>,
}

impl Collected {
    /// Adds a file and moves the cutoff down if it now comes earlier.
    /// Returns whether the cutoff changed.
    fn add(&mut self, path: OsString, hits: FileHits, cap: u64) -> bool {
        self.stored += hits.stored;
        self.files.insert(path, hits);
        if self.stored < cap {
            return false;
        }
        let mut sum = 0;
        let mut cutoff = None;
        for (path, hits) in &self.files {
            sum += hits.stored;
            if sum >= cap {
                cutoff = Some(path.clone());
                break;
            }
        }
        let Some(cutoff) = cutoff else {
            return false;
        };
        let dropped = self.files.split_off(cutoff.as_os_str());
        // `split_off` keeps the cutoff itself in the second half.
        let mut dropped = dropped.into_iter();
        if let Some((path, hits)) = dropped.next() {
            self.files.insert(path, hits);
        }
        self.stored = self.files.values().map(|hits| hits.stored).sum();
        let changed = self.cutoff.as_ref() != Some(&cutoff);
        self.cutoff = Some(cutoff);
        changed
    }
}

/// Everything the walker threads share.
pub(super) struct Shared<'a> {
    pub(super) query: &'a Query,
    pub(super) base: &'a Path,
    pub(super) workspace: &'a Workspace,
    pub(super) cancel: &'a CancellationToken,
    pub(super) collected: Mutex<Collected>,
    /// Bumped whenever the cutoff moves, so threads re-read it only then.
    pub(super) generation: AtomicU64,
    /// Matching lines counted in all files searched.
    pub(super) matches: AtomicU64,
    pub(super) files_searched: AtomicU64,
    pub(super) files_matched: AtomicU64,
    pub(super) binary: AtomicU64,
    pub(super) unreadable: AtomicU64,
    /// Enough has been counted: skip everything past the cutoff.
    pub(super) counted_enough: AtomicBool,
    /// Something was skipped because of the cutoff: counts are a floor.
    pub(super) pruned: AtomicBool,
}

impl Shared<'_> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Collected> {
        self.collected
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<'s> ParallelVisitorBuilder<'s> for &'s Shared<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        let context = self.query.context;
        let searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(b'\0'))
            .before_context(context)
            .after_context(context)
            .build();
        Box::new(Worker {
            shared: self,
            searcher,
            sink: FileSink {
                matcher: &self.query.matcher,
                cancel: self.cancel,
                mode: Mode::Collect,
                cap: self.query.cap,
                matches: 0,
                stored: 0,
                full: false,
                binary: false,
                lines: Vec::new(),
                text: Vec::new(),
            },
            generation: 0,
            cutoff: None,
            dirs: Dirs::default(),
        })
    }
}

/// One walker thread with its own searcher and sink.
pub(super) struct Worker<'s> {
    pub(super) shared: &'s Shared<'s>,
    pub(super) searcher: Searcher,
    pub(super) sink: FileSink<'s>,
    /// The cutoff as of `generation`.
    pub(super) generation: u64,
    pub(super) cutoff: Option<OsString>,
    pub(super) dirs: Dirs,
}

impl Worker<'_> {
    fn past_cutoff(&mut self, path: &Path) -> bool {
        let generation = self.shared.generation.load(Ordering::Acquire);
        if generation != self.generation {
            self.cutoff = self.shared.lock().cutoff.clone();
            self.generation = generation;
        }
        self.cutoff
            .as_deref()
            .is_some_and(|cutoff| path.as_os_str() > cutoff)
    }

    fn search(&mut self, entry: DirEntry) -> WalkState {
        let shared = self.shared;
        let Some(file_type) = entry.file_type() else {
            return WalkState::Continue;
        };
        let path = entry.path();
        let past = self.past_cutoff(path);
        if past && shared.counted_enough.load(Ordering::Relaxed) {
            shared.pruned.store(true, Ordering::Relaxed);
            return if file_type.is_dir() {
                WalkState::Skip
            } else {
                WalkState::Continue
            };
        }
        if file_type.is_dir() {
            return WalkState::Continue;
        }
        if entry.depth() > 0
            && let Some(include) = &shared.query.include
            && !include.is_match(path, shared.base)
        {
            return WalkState::Continue;
        }
        if !file_type.is_file() && !file_type.is_symlink() {
            return WalkState::Continue;
        }
        // Opened again through the workspace, whatever the walk listed: a
        // link is searched only when it leads to a file inside, and a
        // folder swapped for a link since the listing leads nowhere out.
        let Ok(file) = self
            .dirs
            .open(shared.workspace, path, file_type.is_symlink())
        else {
            if !file_type.is_symlink() {
                shared.unreadable.fetch_add(1, Ordering::Relaxed);
            }
            return WalkState::Continue;
        };

        let mode = if past { Mode::Count } else { Mode::Collect };
        self.sink.reset(mode);
        let result = self
            .searcher
            .search_file(&shared.query.matcher, &file, &mut self.sink);
        if shared.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        shared.files_searched.fetch_add(1, Ordering::Relaxed);
        if result.is_err() {
            shared.unreadable.fetch_add(1, Ordering::Relaxed);
            return WalkState::Continue;
        }
        if self.sink.binary {
            shared.binary.fetch_add(1, Ordering::Relaxed);
            return WalkState::Continue;
        }
        if self.sink.matches == 0 {
            return WalkState::Continue;
        }
        shared.files_matched.fetch_add(1, Ordering::Relaxed);
        let total = shared
            .matches
            .fetch_add(self.sink.matches, Ordering::Relaxed)
            + self.sink.matches;
        if total >= shared.query.cap.saturating_mul(COUNT_FACTOR) {
            shared.counted_enough.store(true, Ordering::Relaxed);
        }
        if mode == Mode::Collect {
            let hits = FileHits {
                stored: self.sink.stored,
                lines: self.sink.lines.as_slice().into(),
                text: self.sink.text.as_slice().into(),
            };
            let changed = shared
                .lock()
                .add(path.as_os_str().to_owned(), hits, shared.query.cap);
            if changed {
                shared.generation.fetch_add(1, Ordering::Release);
            }
        }
        WalkState::Continue
    }
}

impl ParallelVisitor for Worker<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.shared.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        match entry {
            Ok(entry) => self.search(entry),
            Err(_) => {
                self.shared.unreadable.fetch_add(1, Ordering::Relaxed);
                WalkState::Continue
            }
        }
    }
}

/// What one search found.
pub(super) struct Outcome {
    pub(super) files: BTreeMap<OsString, FileHits>,
    pub(super) matches: u64,
    pub(super) files_searched: u64,
    pub(super) files_matched: u64,
    pub(super) binary: u64,
    pub(super) unreadable: u64,
    pub(super) pruned: bool,
}

pub(super) fn search(
    workspace: &Workspace,
    base: &Path,
    query: &Query,
    cancel: &CancellationToken,
) -> Result<Outcome, ToolError> {
    let hidden = query.include.as_ref().is_some_and(|m| m.wants_hidden);
    let shared = Shared {
        query,
        base,
        workspace,
        cancel,
        collected: Mutex::default(),
        generation: AtomicU64::new(0),
        matches: AtomicU64::new(0),
        files_searched: AtomicU64::new(0),
        files_matched: AtomicU64::new(0),
        binary: AtomicU64::new(0),
        unreadable: AtomicU64::new(0),
        counted_enough: AtomicBool::new(false),
        pruned: AtomicBool::new(false),
    };
    walker(base, hidden).build_parallel().visit(&mut &shared);
    if cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let collected = shared
        .collected
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    Ok(Outcome {
        files: collected.files,
        matches: shared.matches.into_inner(),
        files_searched: shared.files_searched.into_inner(),
        files_matched: shared.files_matched.into_inner(),
        binary: shared.binary.into_inner(),
        unreadable: shared.unreadable.into_inner(),
        pruned: shared.pruned.into_inner(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn cutoff_is_where_the_cap_is_reached_in_path_order() {
        let hits = |stored| FileHits {
            stored,
            lines: Box::new([]),
            text: Box::new([]),
        };
        let mut collected = Collected::default();
        assert!(!collected.add("/r/m".into(), hits(2), 3));
        assert!(collected.add("/r/z".into(), hits(2), 3));
        assert_eq!(collected.cutoff.as_deref(), Some(OsStr::new("/r/z")));
        // An earlier file moves the cutoff down and drops what is past it.
        assert!(collected.add("/r/a".into(), hits(1), 3));
        assert_eq!(collected.cutoff.as_deref(), Some(OsStr::new("/r/m")));
        let kept: Vec<_> = collected.files.keys().cloned().collect();
        assert_eq!(kept, [OsString::from("/r/a"), OsString::from("/r/m")]);
        assert_eq!(collected.stored, 3);
    }
}
