//! One language server as the table describes it. A leaf below the
//! toolchain (which prepares a spec's launch) and the table (which lists
//! the specs), so that neither imports the other's.

use gantry_process::Program;
use serde_json::Value;

/// One language server: how to start it and what it serves.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// Stable id used in settings and `status` (`clangd`, `basedpyright`).
    pub id: String,
    /// Its binaries, their probe and its root markers. The probe is `None`
    /// when the server has no cheap mode (pyright's language server takes
    /// no arguments but `--stdio`) or the user named the binary
    /// themselves.
    pub program: Program,
    /// Arguments after the binary.
    pub args: Vec<String>,
    /// LSP language ids served.
    pub languages: Vec<String>,
    /// Sent as `initializationOptions`.
    pub initialization_options: Value,
    /// Answered to `workspace/configuration`, looked up by section.
    pub settings: Value,
    /// Text of the log message by which a server that reports no progress
    /// says it has finished loading the workspace (pyright's "Found N
    /// source files"). Until it arrives the server counts as indexing and
    /// requests wait for it (bounded), because pyright leaves requests
    /// sent earlier unanswered.
    pub ready_log: Option<String>,
    /// The server reads a clang compilation database (clangd): Gantry
    /// hands it one from its state directory, made from the project's
    /// `compile_commands.json` or `compile_flags.txt` (see `compile_db`),
    /// so its index stays out of the checkout. Without either its
    /// cross-file answers cover the open files only, and say so. `false`
    /// for servers that find the project's files themselves.
    pub compilation_database: bool,
}
