//! Gantry's eval: persistent Python and JavaScript kernels with the tool bridge.

use gantry_core::RunBuilder;

/// The family as the assembly wires it.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("kernel", register);

/// Registers the family's tools.
pub fn register(builder: RunBuilder) -> RunBuilder {
    builder
}
