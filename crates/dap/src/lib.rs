//! Gantry's debug: the Debug Adapter Protocol client and its one tool.

use gantry_core::RunBuilder;

/// The family as the assembly wires it.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("dap", register);

/// Registers the family's tools.
pub fn register(builder: RunBuilder) -> RunBuilder {
    builder
}
