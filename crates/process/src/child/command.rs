//! What a child is to be: its program, arguments, folder, environment,
//! standard streams, sandbox and network, built up before
//! [`Command::spawn`] (in the parent module) starts it.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use super::{STDERR_HEAD, STDERR_TAIL};
use crate::env::EnvPolicy;
use crate::sandbox::Sandbox;

/// Where a child's standard output goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Stdout {
    /// Discarded.
    #[default]
    Null,
    /// A pipe the caller reads: [`Child::stdout`].
    Piped,
    /// Read by the crate into a buffer keeping `head` and `tail` bytes:
    /// [`Child::output`].
    Capture {
        /// Bytes kept from the start.
        head: usize,
        /// Bytes kept from the end.
        tail: usize,
    },
}

/// Where a child's standard error goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stderr {
    /// Discarded.
    Null,
    /// Read by the crate into a buffer keeping `head` and `tail` bytes, to
    /// explain the child's death: [`Child::stderr`]. The default, with
    /// [`STDERR_HEAD`] and [`STDERR_TAIL`].
    Capture {
        /// Bytes kept from the start.
        head: usize,
        /// Bytes kept from the end.
        tail: usize,
    },
    /// Into the same pipe as stdout, interleaved in the order written (as a
    /// terminal shows them); discarded when stdout is.
    Stdout,
}

impl Default for Stderr {
    fn default() -> Self {
        Stderr::Capture {
            head: STDERR_HEAD,
            tail: STDERR_TAIL,
        }
    }
}

/// What to start: a builder in the manner of [`std::process::Command`],
/// which it becomes only inside [`Command::spawn`] (so no copy of a pipe's
/// write end outlives the spawn and hides the child's end of output).
#[derive(Debug, Clone)]
pub struct Command {
    pub(super) program: OsString,
    pub(super) args: Vec<OsString>,
    pub(super) dir: Option<PathBuf>,
    /// What the child inherits of Gantry's environment, when not the
    /// sandbox's own policy: [`Command::inherit`].
    pub(super) inherit: Option<EnvPolicy>,
    pub(super) envs: Vec<(OsString, OsString)>,
    pub(super) stdin: bool,
    pub(super) stdout: Stdout,
    pub(super) stderr: Stderr,
    pub(super) direct: bool,
    /// The sandbox the child is confined in, and whose environment policy
    /// it inherits by.
    pub(super) sandbox: Sandbox,
    /// Descriptors the child keeps at their numbers: [`Command::pass_fd`].
    pub(super) passed: Vec<std::sync::Arc<OwnedFd>>,
    /// Ports of its own loopback Gantry accepts on:
    /// [`Command::listen_inside`].
    pub(super) inbound: Vec<u16>,
    /// Who is asked when it connects to a host the network policy does
    /// not list: [`Command::asking`].
    pub(super) asker: Asker,
}

/// The person a command's connections are asked about, if any.
#[derive(Clone, Default)]
pub(super) struct Asker(pub(super) Option<std::sync::Arc<dyn gantry_core::human::Human>>);

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "a person"
        } else {
            "nobody"
        })
    }
}

impl Command {
    /// Runs `program` (a path, or a name looked up on `PATH`) confined in
    /// `sandbox`, with stdin and stdout closed and stderr captured. There is
    /// no spawn without a sandbox: every child Gantry starts, a language
    /// server's probe as much as a shell command, runs in one (SPEC §2),
    /// with the environment its policy allows (never Gantry's secrets);
    /// only a person's yes gives an unconfined one ([`Sandbox::lifted`]).
    /// [`Command::spawn`] fails, saying why and how to proceed, where the
    /// sandbox cannot confine.
    pub fn new(program: impl AsRef<OsStr>, sandbox: &Sandbox) -> Self {
        Command {
            program: program.as_ref().to_os_string(),
            args: Vec::new(),
            dir: None,
            inherit: None,
            envs: Vec::new(),
            stdin: false,
            stdout: Stdout::Null,
            stderr: Stderr::default(),
            direct: false,
            sandbox: sandbox.clone(),
            passed: Vec::new(),
            inbound: Vec::new(),
            asker: Asker::default(),
        }
    }

    /// Listens on `port` of the child's own loopback, where the sandbox
    /// gives it a network of its own ([`Sandbox::own_network`]), for
    /// Gantry to accept on: [`Child::take_inbound`]. A program Gantry
    /// talks to over TCP dials it there (a debug adapter's
    /// `--client-addr`), since nothing outside reaches that loopback.
    pub fn listen_inside(&mut self, port: u16) -> &mut Self {
        self.inbound.push(port);
        self
    }

    /// Asks `human` (the person behind the call that runs the command)
    /// when the command connects to a host the network policy does not
    /// list and says to ask about; without one such connections are
    /// refused.
    pub fn asking(
        &mut self,
        human: Option<std::sync::Arc<dyn gantry_core::human::Human>>,
    ) -> &mut Self {
        self.asker = Asker(human);
        self
    }

    /// Adds an argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(&mut self, args: I) -> &mut Self {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// The working directory of the child.
    pub fn current_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.dir = Some(dir.into());
        self
    }

    /// Sets a variable in the child's environment.
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.envs
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// Sets variables in the child's environment, in order (a later one
    /// wins).
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (key, value) in vars {
            self.env(key, value);
        }
        self
    }

    /// Inherits Gantry's environment by `policy` instead of the sandbox's
    /// (`shellEnvironmentPolicy`): for what the user configured to run
    /// with their credentials ([`EnvPolicy::all_but_gantrys_secrets`]).
    /// Gantry's own secrets are removed whatever the policy.
    pub fn inherit(&mut self, policy: EnvPolicy) -> &mut Self {
        self.inherit = Some(policy);
        self
    }

    /// Gives the child a stdin pipe: [`Child::stdin`]. Without it, stdin is
    /// `/dev/null`, so nothing waits for a person to type.
    pub fn stdin_piped(&mut self) -> &mut Self {
        self.stdin = true;
        self
    }

    /// Where stdout goes (default: discarded).
    pub fn stdout(&mut self, stdout: Stdout) -> &mut Self {
        self.stdout = stdout;
        self
    }

    /// Where stderr goes (default: a bounded capture).
    pub fn stderr(&mut self, stderr: Stderr) -> &mut Self {
        self.stderr = stderr;
        self
    }

    /// Spawns the program itself, not under a reaper: ending it reaches
    /// its process group only ([`Reach::Group`]), and it survives a killed
    /// Gantry. For callers that must see the group's own mechanics.
    pub fn direct(&mut self) -> &mut Self {
        self.direct = true;
        self
    }

    /// Hands `fd` to the child at the number it has here, which this
    /// returns so the caller can tell the child (an argument, a variable):
    /// a dedicated channel beside stdio, such as a kernel's protocol
    /// pipes. Gantry's copy closes when this command is dropped; drop it
    /// after the spawn so the child's end is the only one. See
    /// [`crate::pass`].
    pub fn pass_fd(&mut self, fd: OwnedFd) -> RawFd {
        let number = fd.as_raw_fd();
        self.passed.push(std::sync::Arc::new(fd));
        number
    }

    /// The program and its arguments, as a person would type them.
    pub fn shown(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|part| part.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    }
}
