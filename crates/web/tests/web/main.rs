//! The web tools through the real pipeline, against HTTP servers on
//! loopback.

mod fetch;
mod search;
mod server;
