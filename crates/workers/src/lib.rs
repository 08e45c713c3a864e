//! Gantry's vibe_* background workers driven by a built-in agent loop.

use gantry_core::RunBuilder;

/// The family as the assembly wires it.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("workers", register);

/// Registers the family's tools.
pub fn register(builder: RunBuilder) -> RunBuilder {
    builder
}
