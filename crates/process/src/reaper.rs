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

use std::ffi::{OsStr, OsString};
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use crate::sandbox::namespace::{self, Plan, RunNamespaces};
use crate::sandbox::{Prepared, read_filter, restrict};
use rustix::event::{PollFd, PollFlags, poll};
use rustix::io::{FdFlags, fcntl_dupfd_cloexec, fcntl_setfd};
use rustix::process::{
    Pid, PidfdFlags, Signal, WaitOptions, getppid, kill_process_group, pidfd_open,
    pidfd_send_signal, set_child_subreaper, set_parent_process_death_signal, wait,
};

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

/// Appends to `pending` what the non-blocking `socket` holds now, up to
/// its end.
pub(crate) fn read_available(socket: &UnixStream, pending: &mut Vec<u8>) {
    let mut chunk = [0u8; 256];
    loop {
        match (&*socket).read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => pending.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// How a reaper (or a namespace's init) says why it could not start the
/// command: `error ERRNO MESSAGE`, the errno for the error's kind (a
/// missing program is `NotFound`, as without a reaper), the message for
/// a person (which path could not be hidden).
pub(crate) fn error_line(error: &io::Error, otherwise: i32) -> String {
    let errno = error.raw_os_error().unwrap_or(match error.kind() {
        io::ErrorKind::NotFound => libc::ENOENT,
        io::ErrorKind::PermissionDenied => libc::EACCES,
        io::ErrorKind::InvalidInput => libc::EINVAL,
        _ => otherwise,
    });
    let message = error.to_string().replace('\n', " ");
    format!("error {errno} {message}\n")
}

/// The error an [`error_line`] says.
pub(crate) fn parse_error(line: &str) -> Option<io::Error> {
    let rest = line.strip_prefix("error ")?;
    let (errno, message) = rest.split_once(' ').unwrap_or((rest, ""));
    let from_errno = io::Error::from_raw_os_error(errno.trim().parse().ok()?);
    Some(match message.trim() {
        "" => from_errno,
        message => io::Error::new(from_errno.kind(), message.to_string()),
    })
}

/// `exit N`, `signal N` or `signal N core`, as an exit status.
fn parse_status(line: &str) -> Option<ExitStatus> {
    let mut words = line.split_whitespace();
    let raw = match (words.next()?, words.next()?.parse::<i32>().ok()?) {
        ("exit", code) => (code & 0xff) << 8,
        ("signal", signal) => {
            signal
                | if words.next() == Some("core") {
                    0x80
                } else {
                    0
                }
        }
        _ => return None,
    };
    Some(ExitStatus::from_raw(raw))
}

/// The line [`parse_status`] reads.
pub(crate) fn status_line(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}\n"),
        (_, Some(signal)) if status.core_dumped() => format!("signal {signal} core\n"),
        (_, Some(signal)) => format!("signal {signal}\n"),
        _ => "exit 128\n".into(),
    }
}

/// Runs as the reaper with the arguments after [`INVOKED_AS`] (a leading
/// [`INVOKED_AS`] is skipped too): `[--parent PID] [--control FD] --
/// PROGRAM ARGS...`. Exits with the command's code, or 128 plus the signal
/// that killed it; 125 when the arguments are wrong, 126 or 127 when the
/// command cannot start.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ! {
    let code = match Options::parse(args) {
        Ok(options) => reap(options),
        Err(message) => {
            eprintln!(
                "gantry-reap: {message}\nusage: gantry-reap [--parent PID] [--control FD] \
                 [--landlock FD --seccomp FD [--namespaces FD [--join-user FD --join-mount FD \
                 [--join-network FD]]]] -- PROGRAM [ARGS...]\n       gantry-reap \
                 --prepare-run --control FD --namespaces FD --\n       gantry-reap \
                 --prepare-network --control FD --namespaces FD --join-user FD --"
            );
            125
        }
    };
    std::process::exit(code)
}

struct Options {
    parent: Option<Pid>,
    control: Option<UnixStream>,
    /// The sandbox's Landlock ruleset.
    landlock: Option<OwnedFd>,
    /// The sandbox's seccomp program, in a memfd.
    seccomp: Option<OwnedFd>,
    /// The namespaces' plan, in a memfd: see [`namespace`].
    namespaces: Option<OwnedFd>,
    /// The run's user and mount namespaces (`--join-user`,
    /// `--join-mount`) with its build caches in place, to make the
    /// command's from, and a network namespace made for it beforehand
    /// (`--join-network`).
    join: [Option<OwnedFd>; 3],
    job: Job,
}

/// What a reaper was started for.
enum Job {
    /// A command and its arguments.
    Run {
        program: OsString,
        args: Vec<OsString>,
    },
    /// The run's [`RunNamespaces`] (`--prepare-run`, no command): the
    /// plan's overlays mounted, the namespaces sent back, and done.
    PrepareRun,
    /// A command's network namespace, ahead of it (`--prepare-network`):
    /// see [`namespace::prepare_network`].
    PrepareNetwork,
}

impl Options {
    fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Options, String> {
        let mut args = args.into_iter().peekable();
        if args.peek().is_some_and(|a| a == INVOKED_AS) {
            args.next();
        }
        let mut parent = None;
        let mut control = None;
        let mut landlock = None;
        let mut seccomp = None;
        let mut namespaces = None;
        let mut join: [Option<OwnedFd>; 3] = Default::default();
        let mut prepare = None;
        loop {
            let flag = args.next().ok_or("missing `-- PROGRAM`")?;
            let flag = flag.to_string_lossy();
            if flag == "--" {
                break;
            }
            match &*flag {
                "--prepare-run" => prepare = Some(Job::PrepareRun),
                "--prepare-network" => prepare = Some(Job::PrepareNetwork),
                _ => {}
            }
            if flag.starts_with("--prepare-") && prepare.is_some() {
                continue;
            }
            let value: i32 = args
                .next()
                .and_then(|v| v.to_str()?.parse().ok())
                .ok_or(format!("{flag}: expected a number"))?;
            match &*flag {
                "--parent" => parent = Some(Pid::from_raw(value).ok_or("--parent: not a pid")?),
                "--control" => {
                    if value < 3 {
                        return Err("--control: expected a descriptor above stderr".into());
                    }
                    // SAFETY: Gantry passed this descriptor for the reaper
                    // to own; nothing else in this process uses it.
                    let socket = unsafe { UnixStream::from_raw_fd(value) };
                    fcntl_setfd(&socket, FdFlags::CLOEXEC)
                        .map_err(|e| format!("--control {value}: {e}"))?;
                    control = Some(socket);
                }
                "--landlock" | "--seccomp" | "--namespaces" | "--join-user" | "--join-mount"
                | "--join-network" => {
                    if value < 3 {
                        return Err(format!("{flag}: expected a descriptor above stderr"));
                    }
                    // SAFETY: Gantry handed this descriptor for the reaper
                    // to own; nothing else in this process uses it.
                    let fd = unsafe { OwnedFd::from_raw_fd(value) };
                    fcntl_setfd(&fd, FdFlags::CLOEXEC)
                        .map_err(|e| format!("{flag} {value}: {e}"))?;
                    match &*flag {
                        "--landlock" => landlock = Some(fd),
                        "--seccomp" => seccomp = Some(fd),
                        "--join-user" => join[0] = Some(fd),
                        "--join-mount" => join[1] = Some(fd),
                        "--join-network" => join[2] = Some(fd),
                        _ => namespaces = Some(fd),
                    }
                }
                other => return Err(format!("unknown option `{other}`")),
            }
        }
        let job = match (prepare, args.next()) {
            (None, Some(program)) => Job::Run {
                program,
                args: args.collect(),
            },
            (Some(job), None) => job,
            (None, None) => return Err("missing the PROGRAM after `--`".into()),
            (Some(_), Some(_)) => return Err("--prepare-* runs no PROGRAM".into()),
        };
        if seccomp.is_some() != landlock.is_some() {
            return Err("--landlock and --seccomp go together".into());
        }
        let [user, mount, network] = &join;
        let well_formed = match job {
            Job::Run { .. } => {
                user.is_some() == mount.is_some() && (network.is_none() || user.is_some())
            }
            Job::PrepareRun => user.is_none() && mount.is_none() && network.is_none(),
            Job::PrepareNetwork => user.is_some() && mount.is_none() && network.is_none(),
        };
        if !well_formed {
            return Err("--join-user, --join-mount and --join-network: not that way".into());
        }
        Ok(Options {
            parent,
            control,
            landlock,
            seccomp,
            namespaces,
            join,
            job,
        })
    }
}

/// The signals the reaper takes through its signalfd: children's exits,
/// its parent's death, and requests to terminate.
const SIGNALS: [i32; 6] = [
    libc::SIGCHLD,
    libc::SIGUSR1,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
];
/// The parent-death signal: a request to check whether the parent is gone.
const PARENT_DIED: Signal = Signal::USR1;

fn reap(options: Options) -> i32 {
    let Options {
        parent,
        control,
        landlock,
        seccomp,
        namespaces,
        join: [join_user, join_mount, join_network],
        job,
    } = options;
    // Never SIGPIPE: a Gantry that is gone needs no telling.
    let say = |line: &str| {
        if let Some(control) = &control {
            let _ = rustix::net::send(control, line.as_bytes(), rustix::net::SendFlags::NOSIGNAL);
        }
    };
    // Before any `/proc` is mounted over this one.
    host_proc();
    let plan = || {
        namespaces
            .as_ref()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))
            .and_then(Plan::read)
    };
    let prepared = match job {
        Job::Run { program, args } => Ok((program, args)),
        Job::PrepareRun => Err(plan()
            .and_then(|plan| namespace::prepare_run(&plan))
            .map(|run| vec![run.user, run.mount])),
        Job::PrepareNetwork => Err(plan().and_then(|plan| {
            let user = join_user.as_ref().expect("checked by the parse");
            namespace::prepare_network(user, &plan)
        })),
    };
    let (program, args) = match prepared {
        Ok(command) => command,
        Err(prepared) => {
            return match (prepared, &control) {
                (Ok(fds), Some(control)) => {
                    let _ = send_with_fds(control, b"ready\n", &fds);
                    0
                }
                (Ok(_), None) => 125,
                (Err(e), _) => {
                    say(&error_line(&e, libc::EPERM));
                    126
                }
            };
        }
    };
    let run = match (join_user, join_mount) {
        (Some(user), Some(mount)) => Some(RunNamespaces { user, mount }),
        _ => None,
    };
    let signals = match Signals::block() {
        Ok(signals) => signals,
        Err(e) => {
            say(&error_line(&e, libc::EIO));
            return 126;
        }
    };
    // Orphans of the command's tree come to us, not to PID 1.
    if let Err(e) = set_child_subreaper(Some(rustix::process::getpid())) {
        say(&error_line(&e.into(), libc::EPERM));
        return 126;
    }
    if let Some(parent) = parent {
        // Set by us, so it can race the parent's death: check after.
        let _ = set_parent_process_death_signal(Some(PARENT_DIED));
        if getppid() != Some(parent) {
            return 125;
        }
    }
    let filter = match seccomp.as_ref().map(read_filter).transpose() {
        Ok(filter) => filter,
        Err(e) => {
            say(&error_line(&e, libc::EINVAL));
            return 126;
        }
    };
    let confine = || match (&landlock, &filter) {
        (Some(ruleset), Some(filter)) => restrict(ruleset.as_fd(), filter),
        (None, None) => Ok(()),
        _ => Err(io::Error::from_raw_os_error(libc::EINVAL)),
    };
    let started = match namespaces.as_ref().map(Plan::read).transpose() {
        Err(e) => Err(e),
        // In namespaces of its own: the namespace's init confines itself
        // and starts the command (Landlock forbids the mounts it makes
        // first). The reaper stays outside the command's Landlock domain,
        // where a confined command can neither signal nor trace it.
        Ok(Some(plan)) => namespace::enter(&plan, run, join_network).and_then(|listeners| {
            // The rules again, on what the paths are now (an overlay is
            // new inodes, which rules made before it never name).
            let confine_here = || {
                let (Some(_), Some(filter)) = (&landlock, &filter) else {
                    return Err(io::Error::from_raw_os_error(libc::EINVAL));
                };
                let network = plan.network_denied.is_empty();
                let prepared =
                    Prepared::build(&plan.writable, network, crate::sandbox::landlock_abi())
                        .map_err(io::Error::other)?;
                restrict(prepared.descriptors().0, filter)
            };
            namespace::Init::start(&confine_here, &|| spawn_command(&program, &args))
                .map(|(init, command)| (command, Some(init), listeners))
        }),
        // Confined before the command starts, which inherits the
        // confinement.
        Ok(None) => confine()
            .and_then(|()| spawn_command(&program, &args))
            .map(|command| (command, None, Vec::new())),
    };
    let (command, init, listeners) = match started {
        Ok(started) => started,
        Err(e) => {
            say(&error_line(&e, libc::EPERM));
            return if e.kind() == io::ErrorKind::NotFound {
                127
            } else {
                126
            };
        }
    };
    // The pid, with the listeners of the command's own network (Gantry
    // serves them; ours close).
    if let Some(control) = &control {
        let line = format!("pid {}\n", command.as_raw_nonzero());
        let _ = send_with_fds(control, line.as_bytes(), &listeners);
    }
    drop(listeners);
    // Keep no copy of the command's stdio: its readers see their end when
    // the command's processes are done, its writers their EPIPE.
    if let Ok(null) = std::fs::File::options()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        let _ = rustix::stdio::dup2_stdin(&null);
        let _ = rustix::stdio::dup2_stdout(&null);
        let _ = rustix::stdio::dup2_stderr(&null);
    }

    let mut tree = Tree {
        command,
        init,
        status: None,
    };
    let mut end = false;
    while tree.status.is_none() && !end {
        let mut fds = vec![PollFd::new(&signals.fd, PollFlags::IN)];
        if let Some(control) = &control {
            fds.push(PollFd::new(control, PollFlags::IN));
        }
        match poll(&mut fds, None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => end = true,
        }
        let requested = fds.get(1).is_some_and(|fd| !fd.revents().is_empty());
        for signal in signals.drain() {
            end |= match signal {
                libc::SIGCHLD => false,
                // Also sent when only the thread that spawned us exits.
                libc::SIGUSR1 => parent.is_some() && getppid() != parent,
                _ => true,
            };
        }
        tree.reap_exited();
        if requested && let Some(socket) = &control {
            let mut asked = [0u8; 64];
            match (&*socket).read(&mut asked) {
                Ok(0) => end = true,
                Ok(n) => {
                    for byte in &asked[..n] {
                        match byte {
                            b't' if tree.status.is_none() => tree.terminate(),
                            b't' => {}
                            _ => end = true,
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => end = true,
            }
        }
    }
    tree.sweep(&signals);
    let status = tree.status.unwrap_or(ExitStatus::from_raw(libc::SIGKILL));
    say(&status_line(status));
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (_, Some(signal)) => 128 + signal,
        _ => 128,
    }
}

/// Sends `bytes` with `fds` attached (`SCM_RIGHTS`).
fn send_with_fds(socket: &UnixStream, bytes: &[u8], fds: &[OwnedFd]) -> io::Result<()> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
    let borrowed: Vec<_> = fds.iter().map(|fd| fd.as_fd()).collect();
    let mut space =
        vec![std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(borrowed.len()))];
    let mut ancillary = SendAncillaryBuffer::new(&mut space);
    if !borrowed.is_empty() && !ancillary.push(SendAncillaryMessage::ScmRights(&borrowed)) {
        return Err(io::Error::from_raw_os_error(libc::E2BIG));
    }
    sendmsg(
        socket,
        &[io::IoSlice::new(bytes)],
        &mut ancillary,
        SendFlags::NOSIGNAL,
    )?;
    Ok(())
}

/// Starts the command in a process group of its own, with no signal
/// blocked (we block ours) and SIGPIPE back to its default (Rust ignores
/// it), inheriting the rest: our stdio, environment and directory.
/// `posix_spawnp`, as std's own spawn, so the child does not copy our
/// page tables only to exec: std would fork to clear the signal mask.
/// The program is looked up on our `PATH`, which is the command's.
fn spawn_command(program: &OsStr, args: &[OsString]) -> io::Result<Pid> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c_string = |arg: &OsStr| {
        CString::new(arg.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
    };
    let program = c_string(program)?;
    let args = args
        .iter()
        .map(|arg| c_string(arg))
        .collect::<io::Result<Vec<_>>>()?;
    let argv: Vec<*mut libc::c_char> = std::iter::once(&program)
        .chain(&args)
        .map(|arg| arg.as_ptr().cast_mut())
        .chain(std::iter::once(std::ptr::null_mut()))
        .collect();
    unsafe extern "C" {
        static environ: *const *mut libc::c_char;
    }
    // SAFETY: every pointer handed over lives to the end of the call:
    // the attributes are initialised before use and destroyed after, the
    // signal sets filled by sigemptyset, argv is null-terminated over
    // CStrings still owned here, and environ is the process's own.
    unsafe {
        let mut attributes = std::mem::zeroed::<libc::posix_spawnattr_t>();
        let failed = libc::posix_spawnattr_init(&mut attributes);
        if failed != 0 {
            return Err(io::Error::from_raw_os_error(failed));
        }
        let mut unblocked = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut unblocked);
        let mut defaulted = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut defaulted);
        libc::sigaddset(&mut defaulted, libc::SIGPIPE);
        libc::posix_spawnattr_setsigmask(&mut attributes, &unblocked);
        libc::posix_spawnattr_setsigdefault(&mut attributes, &defaulted);
        libc::posix_spawnattr_setpgroup(&mut attributes, 0);
        let flags = libc::POSIX_SPAWN_SETSIGMASK
            | libc::POSIX_SPAWN_SETSIGDEF
            | libc::POSIX_SPAWN_SETPGROUP;
        libc::posix_spawnattr_setflags(&mut attributes, flags as libc::c_short);
        let mut pid = 0;
        let failed = libc::posix_spawnp(
            &mut pid,
            program.as_ptr(),
            std::ptr::null(),
            &attributes,
            argv.as_ptr(),
            environ,
        );
        libc::posix_spawnattr_destroy(&mut attributes);
        match failed {
            0 => Pid::from_raw(pid).ok_or_else(|| io::Error::other("spawned pid 0")),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }
}

/// The command and what became of it.
struct Tree {
    command: Pid,
    /// The init of the command's namespaces, our child in its stead.
    init: Option<namespace::Init>,
    status: Option<ExitStatus>,
}

impl Tree {
    /// Reaps every child that has exited (the command among them, or
    /// orphans of its tree), keeping the command's status: its own, or as
    /// its namespace's init reported it before it exited.
    fn reap_exited(&mut self) {
        while let Ok(Some((pid, status))) = wait(WaitOptions::NOHANG) {
            match &mut self.init {
                Some(init) if pid == init.pid => {
                    // Killed before it could say: as if by SIGKILL.
                    self.status = Some(
                        init.status()
                            .and_then(|line| parse_status(&line))
                            .unwrap_or(ExitStatus::from_raw(libc::SIGKILL)),
                    );
                }
                Some(_) => {}
                None if pid == self.command => {
                    self.status = Some(ExitStatus::from_raw(status.as_raw()));
                }
                None => {}
            }
        }
    }

    /// Asks the command's group to stop (SIGTERM) while it runs: directly,
    /// or through its init, which alone knows whether it has reaped the
    /// command (and so whether the group id is still the command's).
    fn terminate(&self) {
        match &self.init {
            Some(init) => init.terminate(),
            // Unreaped, so the group id is still its.
            None => {
                let _ = kill_process_group(self.command, Signal::TERM);
            }
        }
    }

    /// SIGKILLs every descendant, again until none is left, reaping them:
    /// a process forked meanwhile is reparented to us when its parent
    /// dies, and found in the next round.
    fn sweep(&mut self, signals: &Signals) {
        loop {
            self.reap_exited();
            let Descendants {
                live,
                dead_children,
            } = descendants();
            // A child that died between the reap and the look is reaped
            // in the next round, or PID 1 would inherit a zombie it may
            // never reap.
            if live.is_empty() && !dead_children {
                return;
            }
            for pidfd in &live {
                let _ = pidfd_send_signal(pidfd, Signal::KILL);
            }
            // A child's death says so at once; the bound only rescans in
            // case a death reached no one of ours yet (or was told before
            // this round's reap).
            let mut fds = [PollFd::new(&signals.fd, PollFlags::IN)];
            let bound = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 50_000_000,
            };
            let _ = poll(&mut fds, Some(&bound));
            signals.drain();
        }
    }
}

/// What is below this process: the processes left to kill, and whether a
/// child of ours is dead but not yet reaped.
struct Descendants {
    live: Vec<OwnedFd>,
    dead_children: bool,
}

/// Pidfds of every live process below this one. Each is checked after
/// its pidfd is open to still be the child of the process it was found
/// under, so a pid reused meanwhile is never signalled; our own children
/// cannot be reused before we reap them.
fn descendants() -> Descendants {
    let me = rustix::process::getpid();
    let mut found = Vec::new();
    let mut dead_children = false;
    let mut parents = Vec::new();
    // We have one thread: our children are those of our one task.
    let ours = format!("self/task/{}/children", me.as_raw_nonzero());
    let (first, table) = match read_proc(&ours) {
        Ok(list) => (parse_pids(&list), None),
        Err(_) => {
            let table = parent_table();
            (children_in(&table, me), Some(table))
        }
    };
    let mut children = first;
    let mut parent = me;
    loop {
        for child in children {
            let Ok(pidfd) = pidfd_open(child, PidfdFlags::empty()) else {
                continue;
            };
            let Some(stat) = stat_of(child) else {
                continue;
            };
            if stat.parent != parent {
                // Reused meanwhile.
                continue;
            }
            if parent == me && stat.state == 'Z' {
                // Ours and dead: the next reap takes it.
                dead_children = true;
                continue;
            }
            found.push(pidfd);
            parents.push(child);
        }
        let Some(next) = parents.pop() else {
            return Descendants {
                live: found,
                dead_children,
            };
        };
        parent = next;
        children = match &table {
            None => children_of(parent),
            Some(table) => children_in(table, parent),
        };
    }
}

fn parse_pids(list: &str) -> Vec<Pid> {
    list.split_whitespace()
        .filter_map(|pid| pid.parse().ok().and_then(Pid::from_raw))
        .collect()
}

fn children_in(table: &[(Pid, Pid)], parent: Pid) -> Vec<Pid> {
    table
        .iter()
        .filter(|(_, p)| *p == parent)
        .map(|(pid, _)| *pid)
        .collect()
}

/// The children of `pid` through `/proc/PID/task/*/children` (a child
/// belongs to the thread that forked it).
pub(crate) fn children_of(pid: Pid) -> Vec<Pid> {
    let tasks = format!("{}/task", pid.as_raw_nonzero());
    proc_entries(&tasks)
        .iter()
        .filter_map(|task| read_proc(&format!("{tasks}/{task}/children")).ok())
        .flat_map(|list| parse_pids(&list))
        .collect()
}

/// Every process with its parent, from `/proc/*/stat`: for kernels
/// without the `children` files.
fn parent_table() -> Vec<(Pid, Pid)> {
    proc_entries(".")
        .iter()
        .filter_map(|name| {
            let pid = Pid::from_raw(name.parse().ok()?)?;
            Some((pid, stat_of(pid)?.parent))
        })
        .collect()
}

/// The `/proc` this process started with, held open: the namespace's
/// init mounts its own `/proc` over it in the mount namespace it shares
/// with the reaper (one mount namespace less to make and to free per
/// command), and the reaper must go on seeing its own processes. Opened
/// by the reaper before any such mount.
fn host_proc() -> Option<&'static OwnedFd> {
    static PROC: std::sync::OnceLock<Option<OwnedFd>> = std::sync::OnceLock::new();
    PROC.get_or_init(|| {
        rustix::fs::open(
            "/proc",
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .ok()
    })
    .as_ref()
}

/// A file of [`host_proc`], by its path relative to it.
fn read_proc(relative: &str) -> io::Result<String> {
    let proc = host_proc().ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
    let fd = rustix::fs::openat(
        proc,
        relative,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    io::read_to_string(std::fs::File::from(fd))
}

/// The names in a folder of [`host_proc`], by its path relative to it.
fn proc_entries(relative: &str) -> Vec<String> {
    let Some(proc) = host_proc() else {
        return Vec::new();
    };
    let Ok(dir) = rustix::fs::openat(
        proc,
        relative,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) else {
        return Vec::new();
    };
    let Ok(dir) = rustix::fs::Dir::read_from(&dir) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str().ok().map(str::to_string))
        .filter(|name| name != "." && name != "..")
        .collect()
}

struct Stat {
    state: char,
    parent: Pid,
}

/// The state and parent of `pid` from `/proc/PID/stat`.
fn stat_of(pid: Pid) -> Option<Stat> {
    let stat = read_proc(&format!("{}/stat", pid.as_raw_nonzero())).ok()?;
    // The command name may hold spaces and parentheses: parse after the last `)`.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = Pid::from_raw(fields.next()?.parse().ok()?)?;
    Some(Stat { state, parent })
}

/// The reaper's signals, blocked and read from a signalfd, so none is
/// lost between two looks and no handler runs in the middle of the code.
/// The command gets an empty mask instead: see [`spawn_command`].
struct Signals {
    fd: OwnedFd,
}

impl Signals {
    fn block() -> io::Result<Signals> {
        // SAFETY: the set is initialised by sigemptyset before use, and
        // sigprocmask and signalfd only read it; signalfd returns a new
        // descriptor that we own.
        unsafe {
            let mut set = std::mem::zeroed::<libc::sigset_t>();
            libc::sigemptyset(&mut set);
            for signal in SIGNALS {
                libc::sigaddset(&mut set, signal);
            }
            if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
            let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(Signals {
                fd: OwnedFd::from_raw_fd(fd),
            })
        }
    }

    /// The signals that arrived since the last look.
    fn drain(&self) -> Vec<i32> {
        let mut got = Vec::new();
        let mut info = [0u8; std::mem::size_of::<libc::signalfd_siginfo>()];
        while let Ok(n) = rustix::io::read(&self.fd, &mut info) {
            if n < info.len() {
                break;
            }
            // ssi_signo is the first field, a u32 in native byte order.
            got.push(u32::from_ne_bytes([info[0], info[1], info[2], info[3]]) as i32);
        }
        got
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_travel_as_lines() {
        for raw in [0, 3 << 8, 130 << 8, 2, 9, 11 | 0x80] {
            let status = ExitStatus::from_raw(raw);
            let line = status_line(status);
            assert_eq!(parse_status(line.trim()), Some(status), "{line}");
        }
        // An exit of 130 is not a death by SIGINT.
        assert_eq!(status_line(ExitStatus::from_raw(130 << 8)), "exit 130\n");
        assert_eq!(status_line(ExitStatus::from_raw(2)), "signal 2\n");
        assert_eq!(parse_status("pid 12"), None);
    }

    #[test]
    fn options_need_the_program_after_the_separator() {
        let parse = |args: &[&str]| Options::parse(args.iter().map(OsString::from));
        let options = parse(&["__reap", "--parent", "1", "--", "sleep", "1"]).unwrap();
        let Job::Run { program, args } = &options.job else {
            panic!("a command to run");
        };
        assert_eq!(program, "sleep");
        assert_eq!(args, &["1"]);
        assert_eq!(options.parent, Pid::from_raw(1));
        assert!(matches!(
            parse(&["--prepare-run", "--"]).map(|o| o.job),
            Ok(Job::PrepareRun)
        ));
        assert!(parse(&["--prepare-run", "--", "x"]).is_err());
        // A network made beforehand needs the run's user namespace.
        assert!(parse(&["--prepare-network", "--"]).is_err());
        assert!(parse(&["sleep"]).is_err());
        assert!(parse(&["--"]).is_err());
        assert!(parse(&["--control", "1", "--", "x"]).is_err());
        assert!(parse(&["--bogus", "1", "--", "x"]).is_err());
        assert!(parse(&["--landlock", "2", "--", "x"]).is_err());
        assert!(parse(&["--seccomp", "1", "--", "x"]).is_err());
    }
}
