//! Child processes for Gantry's families, and the plumbing of the peers
//! they are. Every child a family starts (a shell command, a language
//! server, a project checker, a debug adapter, a kernel) is started here,
//! so every one of them ends the same safe way.
//!
//! - [`child`]: a [`Command`] spawns a [`Child`] as the leader of a new
//!   process group, with stdin and stdout piped or captured as asked and a
//!   bounded capture of stderr. Its exit is observed on a pidfd without
//!   reaping it; the group is killed, and only then is the leader reaped,
//!   so a signal to the group never reaches a process that reused its id.
//! - [`env`]: what a child run on the model's behalf inherits of Gantry's
//!   environment (never its secrets), and `$VAR` expansion for the
//!   environments of servers the user configures.
//! - [`reaper`]: the small process each child runs under, which ends
//!   every process the child started (those that left its group too) when
//!   it exits, when asked, and when Gantry dies; `gantry-reap`, or the
//!   `gantry` binary itself.
//! - [`capture`]: the head-and-tail buffer that keeps a child's output
//!   bounded, and [`explain`], which quotes the lines of a crash that say
//!   why.
//! - [`framing`]: `Content-Length` framing, the base protocol of LSP and
//!   DAP alike.
//! - [`pass`]: descriptors a child keeps beside its stdio (a kernel's
//!   protocol pipes).
//! - [`pending`]: requests waiting for their answers, by JSON-RPC id or
//!   DAP `seq`, failed all at once when the peer exits.
//! - [`sandbox`]: what a command run for the model may do once it runs:
//!   Landlock write rules and, without network, a seccomp filter, applied
//!   in the child only (by its reaper, or between fork and exec).
//! - [`program`]: whether a program can serve a file (a root marker above
//!   it, a binary that resolves and runs) and, if not, why.
//!
//! ```no_run
//! use std::time::Duration;
//! use gantry_process::{Command, Sandbox, Stdout};
//!
//! # async fn demo() -> std::io::Result<()> {
//! let child = Command::new("make", &Sandbox::default())
//!     .arg("-j4")
//!     .stdout(Stdout::Capture { head: 8 << 10, tail: 24 << 10 })
//!     .spawn()?;
//! match tokio::time::timeout(Duration::from_secs(60), child.wait()).await {
//!     Ok(status) => println!("{:?}", status?),
//!     // make, its compilers and anything they left behind.
//!     Err(_) => drop(child),
//! }
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

pub mod capture;
pub mod child;
pub mod env;
pub mod framing;
pub mod network;
pub mod pass;
pub mod pending;
pub mod program;
pub mod reaper;
pub mod sandbox;

pub use capture::{Capped, Capture, explain};
pub use child::{Child, Command, Stderr, Stdout, describe_exit};
pub use env::{EnvPolicy, EnvPolicySettings, Inherit, expand, expand_env};
pub use pending::{Closed, Pending, Reply};
pub use program::{Located, NoBinary, Program, Unusable};
pub use reaper::Reach;
pub use sandbox::Sandbox;
