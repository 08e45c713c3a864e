//! Structural search and staged rewrites (SPEC §7): `ast_grep` finds code
//! by its syntax tree, `ast_edit` stages a rewrite of every match and
//! `resolve` applies it all-or-nothing through the core's write path, or
//! drops it.
//!
//! Built on `ast-grep-core` and the grammars of `ast-grep-language`, with
//! three things the `ast-grep` CLI does not do:
//!
//! - a fragment is parsed inside a ladder of scaffolds (top level, a
//!   statement in a function body, an initialiser expression, a class
//!   member) and the pattern node is the one spanning exactly the
//!   fragment, so `setState(() { $$$BODY })` in Dart is a call, not a
//!   broken function signature; where several contexts accept a fragment
//!   and mean different things (Dart `int x = 1;` as a top-level variable,
//!   a field or a local) all of them are searched;
//! - nothing fails silently: an unparseable pattern lists the contexts
//!   tried and where each failed, a zero-match result says what the
//!   pattern compiled to and how many files were searched, metavariables
//!   swallowed by a string are pointed out;
//! - search is fast: files are filtered on the pattern's literal text
//!   before any parse, walked and searched in parallel, and parsed trees
//!   are kept in a size-capped cache owned by the run; once a tree is
//!   evicted its file's outline stays, and a later pattern parses only
//!   the top-level pieces holding its literal text.
//!
//! Each grammar is a cargo feature (all on by default); a lean build picks
//! a few: `--no-default-features --features rust,python`.
//!
//! ```
//! use gantry_core::{Run, Workspace};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("main.rs"), "fn main() { let n = s.parse().unwrap(); }\n").unwrap();
//! let run = gantry_ast::register(Run::builder(Workspace::new(dir.path()).unwrap())).build();
//!
//! let result = run
//!     .call("ast_grep", serde_json::json!({"pattern": "$X.unwrap()"}))
//!     .await
//!     .unwrap();
//! assert!(result.text_content().contains("main.rs:1:21: s.parse().unwrap()"));
//! assert!(result.text_content().contains("$X = s.parse()"));
//! # });
//! ```
#![deny(missing_docs)]

mod alloc;
mod cache;
#[doc(hidden)]
pub mod fuzz;
mod lang;
mod pattern;
mod pieces;
mod search;
mod staged;
mod tools;

use std::sync::{Arc, Mutex};

use gantry_core::{Resource, RunBuilder, async_trait};
use serde::Deserialize;

pub use alloc::use_mimalloc_for_trees;
pub use cache::{CacheStats, DEFAULT_CAP};
pub use tools::{Action, AstEdit, AstEditParams, AstGrep, AstGrepParams, Resolve, ResolveParams};

/// The settings section this family reads.
const SETTINGS_SECTION: &str = "ast";

/// Settings `ast`: `{"cacheMegabytes": 512}`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AstSettings {
    /// Cap of the parse cache in MiB; 0 turns it off.
    cache_megabytes: Option<usize>,
}

/// What the three tools share within one run: the parse cache and the
/// staged edits. Owned by the run (as a resource), so both end with it.
pub struct AstState {
    cache: cache::ParseCache,
    staged: Mutex<staged::Staged>,
}

impl AstState {
    /// What the parse cache holds now.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }
}

#[async_trait]
impl Resource for AstState {
    fn name(&self) -> String {
        "ast".into()
    }

    async fn shutdown(&self) {
        self.kill_now();
    }

    fn kill_now(&self) {
        self.cache.clear();
        self.staged
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
    }

    fn status(&self) -> String {
        let stats = self.cache.stats();
        let pending = self
            .staged
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pending();
        format!(
            "ast: {} parsed files cached ({:.1} MiB of {} MiB), {}",
            stats.files,
            stats.bytes as f64 / (1 << 20) as f64,
            stats.cap >> 20,
            gantry_core::text::counted(pending as u64, "staged edit", "staged edits")
        )
    }
}

/// The family as the run assembly wires it.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("ast", register)
    .settings(&[SETTINGS_SECTION], |settings| {
        gantry_core::check_section::<AstSettings>(settings, SETTINGS_SECTION)
    });

/// Adds `ast_grep`, `ast_edit` and `resolve`, sharing one parse cache and
/// one table of staged edits that live and die with the run. The cache cap
/// comes from settings `ast.cacheMegabytes` (default 512).
pub fn register(builder: RunBuilder) -> RunBuilder {
    let settings = match builder
        .current_settings()
        .section::<AstSettings>(SETTINGS_SECTION)
    {
        Ok(settings) => settings,
        Err(error) => {
            tracing::warn!("{error}; using the default parse cache size");
            AstSettings::default()
        }
    };
    let cap = settings
        .cache_megabytes
        .map_or(DEFAULT_CAP, |mb| mb.saturating_mul(1 << 20));
    let state = Arc::new(AstState {
        cache: cache::ParseCache::new(cap),
        staged: Mutex::default(),
    });
    builder
        .resource(state.clone())
        .tool(AstGrep {
            state: state.clone(),
        })
        .tool(AstEdit {
            state: state.clone(),
        })
        .tool(Resolve { state })
}
