//! The run's cache of parsed files: text and tree, keyed by path and
//! invalidated by modification time and size, capped in bytes.
//!
//! Parsing is most of a structural search; an agent searches the same
//! checkout many times in a run, with different patterns. The cap keeps
//! the memory bounded: the least recently used files go first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use ast_grep_language::SupportLang;

use crate::pattern::AstRoot;

/// What one tree-sitter node costs in memory, on average, with the
/// allocator's overhead: measured on the Rust sources of a dependency
/// tree (3,613 files, 146 MB of text, 4.4 GB resident once all cached;
/// see bench/ast.sh). Trees are about 30 times the size of their text.
const BYTES_PER_NODE: usize = 100;

/// Default cap: enough for the sources of a large checkout's hot part.
pub const DEFAULT_CAP: usize = 512 << 20;

/// A size-capped map from file to its parsed tree.
pub struct ParseCache {
    cap: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    slots: HashMap<PathBuf, Slot>,
    bytes: usize,
    clock: u64,
}

struct Slot {
    stamp: Stamp,
    doc: Arc<AstRoot>,
    cost: usize,
    used: u64,
}

/// What decides whether a cached tree still describes the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Modification time, when the filesystem reports one.
    pub modified: Option<SystemTime>,
    /// Length in bytes.
    pub len: u64,
    /// The grammar it was parsed with.
    pub lang: SupportLang,
}

/// Files held and their estimated memory, for `status` and the bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Files held.
    pub files: usize,
    /// Estimated bytes held (text plus tree).
    pub bytes: usize,
    /// The cap.
    pub cap: usize,
}

impl ParseCache {
    /// A cache holding at most about `cap` bytes; 0 disables it.
    pub fn new(cap: usize) -> Self {
        ParseCache {
            cap,
            state: Mutex::default(),
        }
    }

    /// The tree of `path` if it was parsed from a file with this stamp.
    pub fn get(&self, path: &Path, stamp: &Stamp) -> Option<Arc<AstRoot>> {
        let mut state = self.lock();
        state.clock += 1;
        let clock = state.clock;
        let slot = state.slots.get_mut(path)?;
        if slot.stamp != *stamp {
            return None;
        }
        slot.used = clock;
        Some(slot.doc.clone())
    }

    /// Keeps `doc` for `path`, evicting the least recently used files
    /// when over the cap. A file bigger than a quarter of the cap is not
    /// kept.
    pub fn insert(&self, path: &Path, stamp: Stamp, doc: Arc<AstRoot>) {
        let cost = cost(&doc);
        if cost > self.cap / 4 {
            return;
        }
        let mut state = self.lock();
        state.clock += 1;
        let used = state.clock;
        if let Some(old) = state.slots.insert(
            path.to_path_buf(),
            Slot {
                stamp,
                doc,
                cost,
                used,
            },
        ) {
            state.bytes -= old.cost;
        }
        state.bytes += cost;
        if state.bytes > self.cap {
            let mut ages: Vec<(u64, PathBuf)> = state
                .slots
                .iter()
                .map(|(path, slot)| (slot.used, path.clone()))
                .collect();
            ages.sort_unstable();
            // Down to three quarters, so eviction is not paid per insert.
            let goal = self.cap / 4 * 3;
            for (_, path) in ages {
                if state.bytes <= goal {
                    break;
                }
                if let Some(slot) = state.slots.remove(&path) {
                    state.bytes -= slot.cost;
                }
            }
        }
    }

    /// How much is held.
    pub fn stats(&self) -> CacheStats {
        let state = self.lock();
        CacheStats {
            files: state.slots.len(),
            bytes: state.bytes,
            cap: self.cap,
        }
    }

    /// Drops everything (the run ended).
    pub fn clear(&self) {
        let mut state = self.lock();
        state.slots.clear();
        state.bytes = 0;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Estimated memory of a parsed file: its text and its nodes.
fn cost(doc: &AstRoot) -> usize {
    let nodes = doc.root().get_inner_node().descendant_count();
    doc.source().len() + nodes * BYTES_PER_NODE
}
