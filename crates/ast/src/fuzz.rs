//! The entry point of the `ast_pattern` fuzz target (`fuzz/`): a pattern a
//! model wrote, compiled for a language, and matched against a source.
//! Not an API: hidden from the docs, kept only for the target.

use ast_grep_language::LanguageExt;

use crate::lang;
use crate::pattern::Query;

/// Compiles `pattern` for the enabled language `which` picks (modulo
/// their number) and, when it compiles, finds it in `source`: a clear
/// compile error or matches inside `source`, never a panic.
pub fn pattern(which: u8, pattern: &str, source: &str) {
    let languages = lang::enabled();
    let Some(&language) = languages.get(usize::from(which) % languages.len().max(1)) else {
        return;
    };
    let query = match Query::compile(pattern, language) {
        Ok(query) => query,
        Err(error) => {
            assert!(!error.0.is_empty(), "a compile error that says nothing");
            return;
        }
    };
    let _ = query.describe();
    if !query.may_match(source.as_bytes()) {
        return;
    }
    let root = language.ast_grep(source);
    for found in query.find(&root, None) {
        assert!(
            found.range.end <= source.len() && found.range.start <= found.range.end,
            "a match outside the source: {:?}",
            found.range
        );
    }
}
