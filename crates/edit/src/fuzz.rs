//! The entry point of the `apply_patch` fuzz target (`fuzz/`): a patch a
//! model wrote, parsed in either format. Not an API: hidden from the
//! docs, kept only for the target.

/// Parses `text` as `apply_patch` does: a patch, or an error naming the
/// line and what was wrong, never a panic.
pub fn patch(text: &str) {
    if let Err(error) = crate::patch::parse::parse(text) {
        assert!(!error.is_empty(), "a parse error that says nothing");
    }
}
