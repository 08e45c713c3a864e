//! The run's cache of parsed files: text and tree, keyed by path and
//! invalidated by modification time and size, capped in bytes.
//!
//! Parsing is most of a structural search; an agent searches the same
//! checkout many times in a run, with different patterns. The cap keeps
//! the memory bounded: the least recently used trees go first.
//!
//! A tree is about 30 times its text, so a large checkout's trees do not
//! fit; each parsed file's outline does (its top-level pieces, 16 bytes
//! each), and it outlives the tree. With it a later search parses only
//! the pieces that hold the pattern's literal text (see `search`).

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
    /// Dropped first when over the cap; the outline stays.
    doc: Option<Arc<AstRoot>>,
    doc_cost: usize,
    outline: Option<Outline>,
    outline_cost: usize,
    used: u64,
}

/// One top-level piece of a parsed file (a child of its root): enough to
/// parse the piece alone later and check the result is the same piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Byte offsets in the file.
    pub start: u32,
    /// End, exclusive.
    pub end: u32,
    /// Its node kind.
    pub kind: u16,
    /// Its node count, itself included.
    pub nodes: u32,
}

/// A file's top-level pieces in order, from a parse without syntax
/// errors.
pub type Outline = Arc<[Piece]>;

/// What the cache holds for a file.
pub enum Held {
    /// Its tree.
    Tree(Arc<AstRoot>),
    /// Only its outline.
    Outline(Outline),
    /// Nothing that still describes it.
    Nothing,
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
    /// Files whose tree is held.
    pub files: usize,
    /// Files whose outline is held (with or without the tree).
    pub outlined: usize,
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

    /// What is held for `path`, if it was parsed from a file with this
    /// stamp.
    pub fn get(&self, path: &Path, stamp: &Stamp) -> Held {
        let mut state = self.lock();
        state.clock += 1;
        let clock = state.clock;
        let Some(slot) = state.slots.get_mut(path) else {
            return Held::Nothing;
        };
        if slot.stamp != *stamp {
            return Held::Nothing;
        }
        slot.used = clock;
        match (&slot.doc, &slot.outline) {
            (Some(doc), _) => Held::Tree(doc.clone()),
            (None, Some(outline)) => Held::Outline(outline.clone()),
            (None, None) => Held::Nothing,
        }
    }

    /// Keeps the whole parse `doc` of `path` and its outline, evicting
    /// the least recently used trees, then outlines, when over the cap.
    /// A tree bigger than a quarter of the cap is not kept, its outline
    /// is; a tree with syntax errors has no outline.
    pub fn insert(&self, path: &Path, stamp: Stamp, doc: Arc<AstRoot>) {
        let outline = outline(&doc);
        let outline_cost = outline.as_ref().map_or(0, |outline| {
            path.as_os_str().len() + size_of::<Slot>() + size_of_val(&**outline)
        });
        let mut doc_cost = cost(&doc);
        let mut doc = Some(doc);
        if doc_cost > self.cap / 4 {
            (doc, doc_cost) = (None, 0);
        }
        if (doc.is_none() && outline.is_none()) || outline_cost > self.cap / 4 {
            return;
        }
        let mut state = self.lock();
        state.clock += 1;
        let used = state.clock;
        let slot = Slot {
            stamp,
            doc,
            doc_cost,
            outline,
            outline_cost,
            used,
        };
        state.bytes += slot.doc_cost + slot.outline_cost;
        if let Some(old) = state.slots.insert(path.to_path_buf(), slot) {
            state.bytes -= old.doc_cost + old.outline_cost;
        }
        if state.bytes > self.cap {
            let evicted = self.evict(&mut state);
            // Freeing thousands of trees takes a while: not under the lock.
            drop(state);
            drop(evicted);
        }
    }

    /// Down to three quarters of the cap (so eviction is not paid per
    /// insert): trees first, least recently used first, then whole slots.
    /// Returns the trees taken out, for the caller to free.
    fn evict(&self, state: &mut State) -> Vec<Arc<AstRoot>> {
        let mut evicted = Vec::new();
        let goal = self.cap / 4 * 3;
        let mut ages: Vec<(u64, PathBuf)> = state
            .slots
            .iter()
            .map(|(path, slot)| (slot.used, path.clone()))
            .collect();
        ages.sort_unstable();
        for (_, path) in &ages {
            if state.bytes <= goal {
                return evicted;
            }
            if let Some(slot) = state.slots.get_mut(path)
                && let Some(doc) = slot.doc.take()
            {
                state.bytes -= std::mem::take(&mut slot.doc_cost);
                evicted.push(doc);
            }
        }
        for (_, path) in &ages {
            if state.bytes <= goal {
                break;
            }
            if let Some(slot) = state.slots.remove(path) {
                state.bytes -= slot.outline_cost;
            }
        }
        evicted
    }

    /// How much is held.
    pub fn stats(&self) -> CacheStats {
        let state = self.lock();
        CacheStats {
            files: state
                .slots
                .values()
                .filter(|slot| slot.doc.is_some())
                .count(),
            outlined: state
                .slots
                .values()
                .filter(|slot| slot.outline.is_some())
                .count(),
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

/// The top-level pieces of a parse without syntax errors; `None` for one
/// with errors (a piece's bounds are then guesswork) or a file too big
/// for 32-bit offsets.
pub(crate) fn outline(doc: &AstRoot) -> Option<Outline> {
    let root = doc.root();
    if root.get_inner_node().has_error() {
        return None;
    }
    root.children()
        .map(|child| {
            let range = child.range();
            Some(Piece {
                start: range.start.try_into().ok()?,
                end: range.end.try_into().ok()?,
                kind: child.kind_id(),
                nodes: child.get_inner_node().descendant_count().try_into().ok()?,
            })
        })
        .collect()
}

/// Estimated memory of a parsed file: its text and its nodes.
fn cost(doc: &AstRoot) -> usize {
    let nodes = doc.root().get_inner_node().descendant_count();
    doc.source().len() + nodes * BYTES_PER_NODE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Arc<AstRoot> {
        Arc::new(AstRoot::str(text, SupportLang::Rust))
    }

    fn stamp(len: usize) -> Stamp {
        Stamp {
            modified: None,
            len: len as u64,
            lang: SupportLang::Rust,
        }
    }

    #[test]
    fn trees_go_before_outlines_and_the_cap_holds() {
        let text = "fn a() { g(1); }\n\nfn b() { g(2); }\n";
        let tree_cost = cost(&parsed(text));
        // Room for three trees.
        let cache = ParseCache::new(tree_cost * 4);
        let path = |n: usize| PathBuf::from(format!("/w/{n}.rs"));
        for n in 0..4 {
            cache.insert(&path(n), stamp(text.len()), parsed(text));
        }
        let stats = cache.stats();
        assert!(stats.bytes <= stats.cap, "{stats:?}");
        assert!(stats.files < 4, "{stats:?}");
        assert_eq!(stats.outlined, 4, "{stats:?}");
        // The least recently used tree went first; its outline stayed.
        assert!(
            matches!(cache.get(&path(0), &stamp(text.len())), Held::Outline(o) if o.len() == 2)
        );
        assert!(matches!(
            cache.get(&path(3), &stamp(text.len())),
            Held::Tree(_)
        ));
        // Another stamp: the file changed since.
        assert!(matches!(cache.get(&path(3), &stamp(1)), Held::Nothing));

        // Outlines too are dropped once they alone pass the cap.
        for n in 4..20_000 {
            cache.insert(&path(n), stamp(text.len()), parsed(text));
        }
        let stats = cache.stats();
        assert!(stats.bytes <= stats.cap, "{stats:?}");
        assert!(stats.outlined < 20_000, "{stats:?}");
    }

    #[test]
    fn a_tree_with_syntax_errors_has_no_outline() {
        let cache = ParseCache::new(DEFAULT_CAP);
        let text = "fn a( { g(1); }\n";
        cache.insert(Path::new("/w/a.rs"), stamp(text.len()), parsed(text));
        assert!(matches!(
            cache.get(Path::new("/w/a.rs"), &stamp(text.len())),
            Held::Tree(_)
        ));
        assert_eq!(cache.stats().outlined, 0);
    }
}
