//! The web tools through the real pipeline, against HTTP servers on
//! loopback.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod fetch;
mod search;
mod server;
