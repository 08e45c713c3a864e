//! The reaper: a small process between Gantry and a command, so that
//! everything the command starts dies with it, with Gantry, or on request,
//! even a process that left the command's process group.
//!
//! A process group does not hold what leaves it (`setsid sleep 100 &`, a
//! daemon that double-forks), and nothing at all outlives a SIGKILLed
//! Gantry's cleanup code. So each command runs under a reaper that:
//!
//! - is a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): whatever the
//!   command starts stays its descendant, because orphans of its subtree
//!   are reparented to it rather than to PID 1;
//! - ends every descendant (SIGKILL to each, found through
//!   `/proc/PID/task/*/children` from itself down, again until none is
//!   left) when the command exits, when Gantry asks (a byte on the control
//!   socket, or the socket closing), when it is told to terminate, and
//!   when Gantry dies (the socket closes; `PR_SET_PDEATHSIG` says so too,
//!   checked against `getppid()` because it also fires when merely the
//!   *thread* that spawned it exits);
//! - then exits, after writing the command's status on the control socket
//!   (`exit 3`, `signal 2`), so Gantry tells a command that exited 130 from
//!   one killed by SIGINT. Its own exit code is the command's, or 128 plus
//!   the signal.
//!
//! Handed a Landlock ruleset (`--landlock FD`) and a seccomp program
//! (`--seccomp FD`, a memfd), it confines itself in them before it starts
//! the command, which inherits them: see [`crate::sandbox`]. Handed a
//! namespaces plan too (`--namespaces FD`, with the run's namespaces to
//! join: `--join-user`, `--join-mount`, `--join-network`), the command
//! runs in namespaces of its own: see `sandbox::namespace`. Started with
//! `--prepare-run` or `--prepare-network` instead of a command, it makes
//! the run's namespaces, or networks ahead of commands, sends them back
//! and exits.
//!
//! It execs nothing but the command, which runs in a process group of its
//! own with the reaper's stdin, stdout and stderr (the reaper keeps no copy
//! of them, so a pipe's reader sees its end when the command's processes
//! are done). It is invoked as `REAPER __reap [--parent PID] [--control
//! FD] [--landlock FD --seccomp FD] -- PROGRAM ARGS...`: the `gantry` binary serves it itself
//! ([`run_if_invoked`], [`use_current_exe`]), so an installed Gantry needs
//! no second binary; tests and library users have the `gantry-reap`
//! binary of this crate, found beside the running executable (or one
//! directory up, where Cargo puts binaries for the tests in `deps/`) or
//! named by `GANTRY_REAPER`. Without one, children are spawned directly
//! and only their process group is reached ([`Reach::Group`]); Gantry
//! warns once.
//!
//! Two programs meet here: Gantry's side in this module (choosing the
//! reaper, starting it, the [`Control`] of a running one), and the reaper
//! process itself in [`process`]; [`wire`] holds the lines they exchange
//! on the control socket.

mod process;
pub(crate) mod wire;

pub(crate) use process::children_of;
pub use process::main;

use self::wire::{parse_error, parse_status, read_available};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use crate::sandbox::Prepared;
use crate::sandbox::namespace::RunNamespaces;
use rustix::io::{FdFlags, fcntl_dupfd_cloexec, fcntl_setfd};
use rustix::process::{Pid, Signal};

/// The first argument that makes a binary serve as the reaper
/// ([`run_if_invoked`]); every reaper program is started with it.
pub const INVOKED_AS: &str = "__reap";

/// The variable naming the reaper program, when neither the binary
/// registered one nor a `gantry-reap` lies beside it. `off` (or empty)
/// spawns every child directly.
pub const ENV: &str = "GANTRY_REAPER";

/// How far ending a child reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Every process the command started, wherever it went: a reaper runs
    /// it, and also ends it all if Gantry dies.
    Descendants,
    /// The command's process group only: a process that left the group
    /// (`setsid`, a daemon) is not reached, and nothing is ended if Gantry
    /// is killed. No reaper was found, or the caller chose
    /// [`Command::direct`](crate::Command::direct).
    Group,
}

/// A reaper program and how to start it.
#[derive(Debug, Clone)]
pub(crate) struct Reaper {
    program: PathBuf,
    arg0: Option<OsString>,
}

static CHOSEN: OnceLock<Option<Reaper>> = OnceLock::new();

/// Serves as the reaper and exits if this process was started as one
/// (its first argument is [`INVOKED_AS`]); returns at once otherwise. A
/// binary that calls [`use_current_exe`] calls this first thing in `main`,
/// before it parses arguments or starts threads.
pub fn run_if_invoked() {
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() == Some(OsStr::new(INVOKED_AS)) {
        main(args)
    }
}

/// Makes this binary its own reaper (it must call [`run_if_invoked`]),
/// through `/proc/self/exe`, which stays valid when the file is replaced
/// by an upgrade; but a `gantry-reap` installed beside it is preferred:
/// a binary of Gantry's size takes milliseconds more to start (tens of
/// thousands of relocations), and a reaper starts for every command.
/// Takes effect only before the first spawn, and wins over
/// `GANTRY_REAPER`; a later choice is ignored.
pub fn use_current_exe() {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("gantry-reap")))
        .filter(|reaper| reaper.is_file());
    let chosen = match beside {
        Some(reaper) => Reaper::at(reaper),
        None => Reaper {
            program: "/proc/self/exe".into(),
            arg0: std::env::args_os().next(),
        },
    };
    let _ = CHOSEN.set(Some(chosen));
}

/// Runs every child under `program` (the `gantry-reap` binary, or any
/// binary that calls [`run_if_invoked`]). Takes effect only before the
/// first spawn; a later choice is ignored.
pub fn use_program(program: impl Into<PathBuf>) {
    let _ = CHOSEN.set(Some(Reaper::at(program.into())));
}

/// Spawns every child directly, reaching only its process group: for the
/// tests of that fallback. Takes effect only before the first spawn.
pub fn disable() {
    let _ = CHOSEN.set(None);
}

/// How far ending a child started now would reach.
pub fn reach() -> Reach {
    match located() {
        Some(_) => Reach::Descendants,
        None => Reach::Group,
    }
}

/// The reaper children run under, chosen once: a registered one, else
/// `GANTRY_REAPER`, else a `gantry-reap` beside the running executable or
/// one directory up. Without one, a warning says what is lost.
pub(crate) fn located() -> Option<&'static Reaper> {
    CHOSEN
        .get_or_init(|| {
            let found = discover();
            if found.is_none() {
                tracing::warn!(
                    "no reaper (set {ENV}, or put gantry-reap beside the executable): children \
                     are spawned directly, so a process that leaves a command's process group \
                     (setsid, a daemon) is not killed with it, and nothing is killed if Gantry \
                     itself is"
                );
            }
            found
        })
        .as_ref()
}

fn discover() -> Option<Reaper> {
    if let Some(named) = std::env::var_os(ENV) {
        if named.is_empty() || named == "off" {
            return None;
        }
        return Some(Reaper::at(named.into()));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [Some(dir), dir.parent()]
        .into_iter()
        .flatten()
        .map(|dir| dir.join("gantry-reap"))
        .find(|candidate| candidate.is_file())
        .map(Reaper::at)
}

/// Spawns of this crate that may copy an inheritable descriptor: a
/// reaper's end of its control socket is inheritable from its creation to
/// its reaper's spawn, and must not leak into a child spawned meanwhile
/// on another thread, so those spawns wait (every child is spawned here).
static SPAWNING: RwLock<()> = RwLock::new(());

/// Held around a spawn that passes no inheritable descriptor.
pub(crate) fn spawning() -> RwLockReadGuard<'static, ()> {
    SPAWNING.read().unwrap_or_else(|e| e.into_inner())
}

/// How long a reaper may take to start its command and say so.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// A reaper about to be spawned: the std command that starts it, our end
/// of the control socket, and the descriptors it is handed (its end of
/// the socket, then the sandbox's ruleset and filter, if any), each a
/// close-on-exec copy until the spawn.
pub(crate) struct Setup {
    ours: UnixStream,
    handed: Vec<OwnedFd>,
}

impl Reaper {
    /// The reaper at `program`, made absolute: a child starts in its own
    /// directory, where a relative path would name something else.
    fn at(program: PathBuf) -> Reaper {
        Reaper {
            program: std::path::absolute(&program).unwrap_or(program),
            arg0: None,
        }
    }

    /// This reaper's invocation, and the two ends of its control socket
    /// (ours, and the one it is handed).
    fn invocation(&self) -> io::Result<(std::process::Command, UnixStream, OwnedFd)> {
        let (ours, theirs) = UnixStream::pair()?;
        let mut command = std::process::Command::new(&self.program);
        if let Some(arg0) = &self.arg0 {
            command.arg0(arg0);
        }
        command.arg(INVOKED_AS);
        Ok((command, ours, OwnedFd::from(theirs)))
    }

    /// A command that starts this reaper running `program` with `args`,
    /// confined in `confine` when given, in namespaces laid out by the
    /// plan in `namespaces` when given; the caller adds the environment,
    /// directory and stdio, then spawns it with [`Setup::spawn`].
    pub(crate) fn command(
        &self,
        program: &OsStr,
        args: &[OsString],
        confine: Option<&Prepared>,
        namespaces: Option<OwnedFd>,
        run: Option<&RunNamespaces>,
        network: Option<&OwnedFd>,
    ) -> io::Result<(std::process::Command, Setup)> {
        let (mut command, ours, theirs) = self.invocation()?;
        command
            .arg("--parent")
            .arg(std::process::id().to_string())
            .arg("--control")
            .arg(theirs.as_raw_fd().to_string());
        let mut handed = vec![theirs];
        if let Some(prepared) = confine {
            let (ruleset, filter) = prepared.descriptors();
            for (flag, fd) in [("--landlock", ruleset), ("--seccomp", filter)] {
                let copy = fcntl_dupfd_cloexec(fd, 3)?;
                command.arg(flag).arg(copy.as_raw_fd().to_string());
                handed.push(copy);
            }
        }
        if let Some(plan) = namespaces {
            command
                .arg("--namespaces")
                .arg(plan.as_raw_fd().to_string());
            handed.push(plan);
        }
        let run = run.map(|run| [("--join-user", &run.user), ("--join-mount", &run.mount)]);
        let network = network.map(|network| ("--join-network", network));
        for (flag, fd) in run.into_iter().flatten().chain(network) {
            let copy = fcntl_dupfd_cloexec(fd, 3)?;
            command.arg(flag).arg(copy.as_raw_fd().to_string());
            handed.push(copy);
        }
        command.arg("--").arg(program).args(args);
        Ok((command, Setup { ours, handed }))
    }

    /// Has a reaper make the run's [`RunNamespaces`] with the overlays of
    /// `plan` (a memfd), and waits (bounded) for it.
    pub(crate) fn prepare_run(&self, plan: OwnedFd) -> io::Result<RunNamespaces> {
        match <[OwnedFd; 2]>::try_from(self.prepare("--prepare-run", plan, None)?) {
            Ok([user, mount]) => Ok(RunNamespaces { user, mount }),
            Err(_) => Err(io::Error::other("the reaper sent no namespaces")),
        }
    }

    /// Has a reaper make a network namespace in the run's user namespace
    /// (`user`) with listeners on the ports of `plan` (a memfd), and waits
    /// (bounded) for it: the namespace, then the listeners in order.
    pub(crate) fn prepare_network(
        &self,
        plan: OwnedFd,
        user: &OwnedFd,
    ) -> io::Result<Vec<OwnedFd>> {
        self.prepare("--prepare-network", plan, Some(user))
    }

    /// Runs a reaper for the `job` of preparing namespaces from `plan`
    /// (joining `user` first where given), and takes what it sends.
    fn prepare(
        &self,
        job: &str,
        plan: OwnedFd,
        user: Option<&OwnedFd>,
    ) -> io::Result<Vec<OwnedFd>> {
        let (mut command, ours, theirs) = self.invocation()?;
        command
            .arg(job)
            .arg("--control")
            .arg(theirs.as_raw_fd().to_string())
            .arg("--namespaces")
            .arg(plan.as_raw_fd().to_string());
        let mut handed = vec![theirs, plan];
        if let Some(user) = user {
            let copy = fcntl_dupfd_cloexec(user, 3)?;
            command.arg("--join-user").arg(copy.as_raw_fd().to_string());
            handed.push(copy);
        }
        command
            .arg("--")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null());
        let mut reaper = spawn_handing(&mut command, handed)?;
        let answer = read_line_with_fds(&ours);
        let _ = reaper.kill();
        let _ = reaper.wait();
        let (line, _, fds) = answer?;
        if let Some(error) = parse_error(&line) {
            return Err(error);
        }
        match line == "ready" {
            true => Ok(fds),
            false => Err(io::Error::other(format!(
                "the reaper said `{line}` instead of preparing namespaces"
            ))),
        }
    }
}

/// Spawns `command` with the `handed` descriptors inherited, and only
/// those: they lose close-on-exec while no other spawn can run.
fn spawn_handing(
    command: &mut std::process::Command,
    handed: Vec<OwnedFd>,
) -> io::Result<std::process::Child> {
    let _alone: RwLockWriteGuard<'_, ()> = SPAWNING.write().unwrap_or_else(|e| e.into_inner());
    for fd in &handed {
        fcntl_setfd(fd, FdFlags::empty())?;
    }
    let spawned = command.spawn();
    drop(handed);
    spawned
}

impl Setup {
    /// Spawns the reaper with the descriptors it is handed, and waits
    /// (bounded) for it to start the command: the command's pid, or the
    /// error that kept it from starting (a missing program is `NotFound`,
    /// as without a reaper).
    pub(crate) fn spawn(
        self,
        command: &mut std::process::Command,
    ) -> io::Result<(std::process::Child, Control)> {
        let Setup { ours, handed } = self;
        let mut spawned = spawn_handing(command, handed)?;
        match handshake(&ours) {
            Ok((command, pending, listeners)) => {
                ours.set_nonblocking(true)?;
                Ok((
                    spawned,
                    Control {
                        socket: ours,
                        command,
                        pending,
                        listeners,
                    },
                ))
            }
            Err(error) => {
                // Before a command runs there is nothing to sweep: the
                // reaper is ours and unreaped, so its pid is still its.
                let _ = spawned.kill();
                let _ = spawned.wait();
                Err(error)
            }
        }
    }
}

/// Reads the reaper's first line: `pid N` (with the listeners of the
/// command's own network attached), or `error ERRNO`.
fn handshake(socket: &UnixStream) -> io::Result<(Pid, Vec<u8>, Vec<OwnedFd>)> {
    let (line, rest, listeners) = read_line_with_fds(socket)?;
    let parsed = |word: &str| line.strip_prefix(word).and_then(|n| n.trim().parse().ok());
    if let Some(pid) = parsed("pid ").and_then(Pid::from_raw) {
        return Ok((pid, rest, listeners));
    }
    if let Some(error) = parse_error(&line) {
        return Err(error);
    }
    Err(io::Error::other(format!(
        "the reaper said `{line}` instead of starting the command"
    )))
}

/// The reaper's first line, what came after it, and the descriptors sent
/// with it, waiting at most [`HANDSHAKE`].
fn read_line_with_fds(socket: &UnixStream) -> io::Result<(String, Vec<u8>, Vec<OwnedFd>)> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    socket.set_read_timeout(Some(HANDSHAKE))?;
    let mut got = Vec::new();
    let mut chunk = [0u8; 64];
    let mut listeners = Vec::new();
    let mut space = vec![std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(64))];
    let line = loop {
        if let Some(end) = got.iter().position(|&b| b == b'\n') {
            let rest = got.split_off(end + 1);
            break (String::from_utf8_lossy(&got).trim().to_string(), rest);
        }
        let mut ancillary = RecvAncillaryBuffer::new(&mut space);
        let received = recvmsg(
            socket,
            &mut [io::IoSliceMut::new(&mut chunk)],
            &mut ancillary,
            RecvFlags::CMSG_CLOEXEC,
        )
        .map(|message| message.bytes)
        .map_err(io::Error::from);
        for message in ancillary.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = message {
                listeners.extend(fds);
            }
        }
        match received {
            Ok(0) => {
                return Err(io::Error::other(
                    "the reaper exited before it started the command",
                ));
            }
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the reaper did not start the command within {} s",
                        HANDSHAKE.as_secs()
                    ),
                ));
            }
            Err(e) => return Err(e),
        }
    };
    let (line, rest) = line;
    Ok((line, rest, listeners))
}

/// Gantry's end of a running reaper: requests go one way, the command's
/// status comes back.
pub(crate) struct Control {
    socket: UnixStream,
    command: Pid,
    pending: Vec<u8>,
    /// The listeners on the command's own loopback, in the plan's order,
    /// until taken.
    listeners: Vec<OwnedFd>,
}

impl Control {
    /// The command's pid, which is also its process group's id.
    pub(crate) fn command(&self) -> Pid {
        self.command
    }

    /// The listeners on the command's own loopback, in the plan's order.
    pub(crate) fn take_listeners(&mut self) -> Vec<OwnedFd> {
        std::mem::take(&mut self.listeners)
    }

    /// Asks the reaper to end everything (SIGKILL) or to ask the command's
    /// group to stop (SIGTERM, or any other signal). Never blocks; a
    /// reaper that is gone needs no asking.
    pub(crate) fn request(&self, signal: Signal) {
        let byte = if signal == Signal::KILL { b"k" } else { b"t" };
        let _ = rustix::net::send(&self.socket, byte, rustix::net::SendFlags::NOSIGNAL);
    }

    /// The command's status, if the reaper has reported it already: it
    /// does once every process the command started is gone, before its
    /// own exit, which frees the command's namespaces and can take a few
    /// milliseconds more that nobody needs to wait for.
    pub(crate) fn status_now(&mut self) -> Option<ExitStatus> {
        read_available(&self.socket, &mut self.pending);
        String::from_utf8_lossy(&self.pending)
            .lines()
            .rev()
            .find_map(parse_status)
    }

    /// A second descriptor of the control socket, for a reactor to say
    /// when the report may have come.
    pub(crate) fn socket_copy(&self) -> io::Result<OwnedFd> {
        Ok(OwnedFd::from(self.socket.try_clone()?))
    }

    /// The command's status as the reaper reported it before it exited
    /// (`exited` is the reaper's own exit), or why there is none.
    pub(crate) fn report(&mut self, exited: ExitStatus) -> Result<ExitStatus, String> {
        read_available(&self.socket, &mut self.pending);
        let text = String::from_utf8_lossy(&self.pending);
        text.lines().rev().find_map(parse_status).ok_or_else(|| {
            format!(
                "its reaper {} without reporting how the command ended; processes it \
                     started may still run",
                crate::describe_exit(exited)
            )
        })
    }
}
