//! Gantry's tools discovered from a command and bridged from other MCP servers.

use gantry_core::RunBuilder;

/// The family as the assembly wires it.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("discovery", register);

/// Registers the family's tools.
pub fn register(builder: RunBuilder) -> RunBuilder {
    builder
}
