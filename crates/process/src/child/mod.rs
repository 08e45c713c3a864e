//! A child in a process group of its own, watched through a pidfd, and
//! run under a [`crate::reaper`] when there is one.
//!
//! Under a reaper, the unit of cleanup is every process the command
//! started, wherever it went (`setsid` included), and also when Gantry
//! itself is killed: the reaper ends them all before it exits, and
//! reports the command's status. The process Gantry spawns and watches is
//! then the reaper; the [`Child`] speaks for the command.
//!
//! Without one ([`Command::direct`], or none found), the unit of cleanup
//! is the group: a language server's node helpers, a build's compilers and
//! `sleep 100 &` go with their leader. The order is what makes that safe:
//! the leader's exit is *observed* (`waitid` with `WNOWAIT` on the pidfd)
//! without reaping it, then the group is killed, and only then is the
//! leader reaped. An unreaped leader keeps its pid, and so its group id,
//! from being reused, so a signal to the group can never reach a
//! stranger's processes.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rustix::process::{
    Pid, PidfdFlags, Signal, WaitId, WaitIdOptions, WaitIdStatus, kill_process_group, pidfd_open,
    waitid,
};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;

mod command;

pub use command::{Command, Stderr, Stdout};

use crate::capture::Capture;
use crate::reaper::{self, Control, Reach};

/// Bytes of a child's stderr kept from its start by default: a panic's
/// message comes before a backtrace long enough to fill any tail.
pub const STDERR_HEAD: usize = 4000;
/// Bytes of a child's stderr kept from its end by default, where an error
/// usually lands.
pub const STDERR_TAIL: usize = 2000;

/// How long [`Child::wait`] waits for a reaper to exit once it has
/// reported the command's end (it exits right after).
const REAPER_EXIT: Duration = Duration::from_secs(2);

impl Command {
    /// Starts the child as the leader of a new process group, under a
    /// reaper unless [`Command::direct`] (or none is found: see
    /// [`crate::reaper`]); returns once the program runs, or with
    /// the error that kept it from starting. Must be called inside a
    /// tokio runtime: the pidfd and the pipes are registered with its
    /// reactor, and captures read on its tasks.
    pub fn spawn(&self) -> io::Result<Child> {
        let reaper = if self.direct { None } else { reaper::located() };
        let confinement = self.sandbox.confinement()?;
        let (namespaces, spawn) = match reaper {
            Some(_) => match self.sandbox.namespace_plan(&self.inbound)? {
                Some((plan, spawn)) => (Some(plan), Some(spawn)),
                None => (None, None),
            },
            None => (None, None),
        };
        let (protected_absent, run, network, listening) = match spawn {
            Some(spawn) => (spawn.absent, spawn.run, spawn.network, spawn.plan.listen),
            None => (Vec::new(), None, None, Vec::new()),
        };
        // The reaper gets the environment, directory and stdio, and hands
        // them on to the command; it confines itself and the command in
        // the sandbox's rules before it starts it.
        let (mut command, setup) = match reaper {
            Some(reaper) => {
                let (command, setup) = reaper.command(
                    &self.program,
                    &self.args,
                    confinement.map(|c| &**c),
                    namespaces,
                    run.as_deref().map(|run| run.namespace()),
                    network.as_ref().map(|network| &network.namespace),
                )?;
                (command, Some(setup))
            }
            None => {
                let mut command = std::process::Command::new(&self.program);
                command.args(&self.args);
                if let Some(prepared) = confinement {
                    prepared.apply_on_exec(&mut command);
                }
                (command, None)
            }
        };
        let inherit = self
            .inherit
            .as_ref()
            .unwrap_or_else(|| self.sandbox.environment());
        // The proxy is announced where it is the way out.
        let proxy = self
            .sandbox
            .proxy()
            .filter(|_| listening.contains(&crate::network::PROXY_PORT));
        command
            .env_clear()
            .envs(inherit.environment())
            .envs(
                proxy
                    .map(|_| crate::network::proxy::environment())
                    .unwrap_or_default(),
            )
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .process_group(0)
            .stdin(if self.stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        crate::pass::keep_open(&mut command, &self.passed);
        let out = match self.stdout {
            Stdout::Null => None,
            Stdout::Piped | Stdout::Capture { .. } => Some(io::pipe()?),
        };
        let mut err = None;
        command.stderr(match (self.stderr, &out) {
            (Stderr::Stdout, Some((_, writer))) => Stdio::from(writer.try_clone()?),
            (Stderr::Null | Stderr::Stdout, _) => Stdio::null(),
            (Stderr::Capture { .. }, _) => {
                let (reader, writer) = io::pipe()?;
                err = Some(reader);
                Stdio::from(writer)
            }
        });
        // Never inherited: Gantry's own stdout may be a protocol stream
        // (MCP over stdio, `gantry session`) that one stray line breaks.
        let out = match out {
            Some((reader, writer)) => {
                command.stdout(writer);
                Some(reader)
            }
            None => {
                command.stdout(Stdio::null());
                None
            }
        };
        let (mut spawned, mut control) = match setup {
            Some(setup) => {
                let (spawned, control) = setup.spawn(&mut command)?;
                (spawned, Some(control))
            }
            None => {
                let _spawning = reaper::spawning();
                (command.spawn()?, None)
            }
        };
        // Our copies of the write ends close here: the reader sees the end
        // of output once the child's processes have closed theirs.
        drop(command);
        // Made ahead with the network, or by the reaper with it.
        let listeners = match network {
            Some(network) => network.listeners,
            None => control
                .as_mut()
                .map(reaper::Control::take_listeners)
                .unwrap_or_default(),
        };
        let network = proxy.map(|proxy| {
            OwnNetwork::serve(
                proxy,
                listening.into_iter().zip(listeners).collect(),
                &self.inbound,
                self.asker.0.clone(),
            )
        });
        let reports = control.as_ref().map(Control::socket_copy).transpose()?;
        let leader = Leader::new(spawned.id(), control).map_err(|(error, control)| {
            // Without a pidfd there is no safe way to signal it later: end
            // it now, while the pid is surely still its (a reaper told to
            // end its command first, by closing its control socket).
            match control {
                Some(control) => drop(control),
                None => {
                    let _ = spawned.kill();
                }
            }
            let _ = spawned.wait();
            error
        })?;
        // SAFETY: the leader owns its pidfd for its whole life and always
        // returns that one from `as_raw_fd`.
        let leader = unsafe { AsyncFd::register_with_interest(leader, Interest::READABLE) }
            .map_err(|e| e.into_parts().1)?;
        let reports = reports
            // SAFETY: an owned descriptor, whose `as_raw_fd` is always it.
            .map(|fd| unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) })
            .transpose()
            .map_err(|e| e.into_parts().1)?;
        let mut child = Child {
            leader,
            reports,
            stdin: None,
            stdout: None,
            output: None,
            stderr: None,
            protected_absent,
            network: None,
        };
        child.network = network.transpose()?;
        // From here on an error drops `child`, which kills the group.
        if let Some(stdin) = spawned.stdin.take() {
            child.stdin = Some(pipe::Sender::from_owned_fd(OwnedFd::from(stdin))?);
        }
        if let Some(reader) = out {
            let reader = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
            match self.stdout {
                Stdout::Capture { head, tail } => {
                    child.output = Some(Capture::start(reader, head, tail))
                }
                _ => child.stdout = Some(reader),
            }
        }
        if let (Some(reader), Stderr::Capture { head, tail }) = (err, self.stderr) {
            let reader = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
            child.stderr = Some(Capture::start(reader, head, tail));
        }
        Ok(child)
    }
}

/// A running child and its process group, or under a reaper every process
/// it started. Dropping it kills them (and reaps the leader, or has the
/// reaper do it), so a cancelled call leaves nothing behind.
pub struct Child {
    leader: AsyncFd<Leader>,
    /// The reaper's control socket, readable when it reports the
    /// command's end (before its own).
    reports: Option<AsyncFd<OwnedFd>>,
    /// The child's stdin, when [`Command::stdin_piped`] asked for it.
    pub stdin: Option<pipe::Sender>,
    /// The child's stdout, when [`Stdout::Piped`] asked for it.
    pub stdout: Option<pipe::Receiver>,
    output: Option<Capture>,
    stderr: Option<Capture>,
    /// Protected paths that did not exist when it started.
    protected_absent: Vec<PathBuf>,
    /// Folders made for its namespaces, held only to be removed when it
    /// is dropped.
    /// Its own network's side in Gantry, where it has one.
    network: Option<OwnNetwork>,
}

/// A child's own network, as Gantry holds it: the proxy serving its
/// listeners, what was refused to it, and the listeners Gantry accepts
/// on itself.
struct OwnNetwork {
    _serving: crate::network::proxy::Serving,
    tap: std::sync::Arc<crate::network::proxy::Tap>,
    inbound: std::sync::Mutex<Vec<(u16, OwnedFd)>>,
}

impl OwnNetwork {
    /// `listeners` by port, in the plan's order: the proxy's, the host's
    /// loopback ports, then `inbound`.
    fn serve(
        proxy: &std::sync::Arc<crate::network::Proxy>,
        listeners: Vec<(u16, OwnedFd)>,
        inbound: &[u16],
        asker: Option<std::sync::Arc<dyn gantry_core::human::Human>>,
    ) -> io::Result<OwnNetwork> {
        let mut own = None;
        let mut host_ports = Vec::new();
        let mut accepted = Vec::new();
        for (port, listener) in listeners {
            if port == crate::network::PROXY_PORT && own.is_none() {
                own = Some(listener);
            } else if inbound.contains(&port) {
                accepted.push((port, listener));
            } else {
                host_ports.push((port, listener));
            }
        }
        let tap = crate::network::proxy::Tap::new(asker);
        Ok(OwnNetwork {
            _serving: proxy.serve(own, host_ports, tap.clone())?,
            tap,
            inbound: std::sync::Mutex::new(accepted),
        })
    }
}

impl Child {
    /// The protected paths that did not exist when the child started and
    /// do now: what it created where no mount could stand, for
    /// [`Sandbox::quarantine`] once it has ended.
    pub fn protected_created(&self) -> Vec<PathBuf> {
        self.protected_absent
            .iter()
            .filter(|path| path.symlink_metadata().is_ok())
            .cloned()
            .collect()
    }

    /// The connections the network policy refused to the child, each with
    /// why (`pkg.example.org:443 (it is not in ...)`): for its result.
    pub fn network_refused(&self) -> Vec<String> {
        self.network
            .as_ref()
            .map(|network| network.tap.refused())
            .unwrap_or_default()
    }

    /// The listener on `port` of the child's own loopback
    /// ([`Command::listen_inside`]), once; `None` where it has no network
    /// of its own.
    pub fn take_inbound(&self, port: u16) -> io::Result<Option<tokio::net::TcpListener>> {
        let Some(network) = &self.network else {
            return Ok(None);
        };
        let mut inbound = network.inbound.lock().unwrap_or_else(|e| e.into_inner());
        let Some(index) = inbound.iter().position(|(p, _)| *p == port) else {
            return Ok(None);
        };
        let listener = std::net::TcpListener::from(inbound.remove(index).1);
        listener.set_nonblocking(true)?;
        tokio::net::TcpListener::from_std(listener).map(Some)
    }

    /// The program's pid, which is also the id of its process group.
    pub fn pid(&self) -> u32 {
        let leader = self.leader.get_ref();
        leader.command.unwrap_or(leader.pid).as_raw_nonzero().get() as u32
    }

    /// How far ending this child reaches: every process it started
    /// (under a reaper), or its process group.
    pub fn reach(&self) -> Reach {
        match self.leader.get_ref().command {
            Some(_) => Reach::Descendants,
            None => Reach::Group,
        }
    }

    /// What [`Stdout::Capture`] captured (with stderr, under
    /// [`Stderr::Stdout`]).
    pub fn output(&self) -> Option<&Capture> {
        self.output.as_ref()
    }

    /// What [`Stderr::Capture`] captured.
    pub fn stderr(&self) -> Option<&Capture> {
        self.stderr.as_ref()
    }

    /// Resolves when the leader has exited, with its status. The leader is
    /// not reaped: its group can still be signalled safely. Under a
    /// reaper, resolves once the command has exited and every process it
    /// started is gone, with the command's status as the reaper reported
    /// it (an error if the reaper died without reporting). Any number of
    /// tasks may wait at once.
    pub async fn exited(&self) -> io::Result<ExitStatus> {
        // Until the control socket is readable with no report on it (the
        // reaper closed it without one: then its exit says the rest).
        let mut reports = self.reports.as_ref();
        loop {
            if let Some(status) = self.try_exited()? {
                return Ok(status);
            }
            let mut ready = match reports {
                Some(socket) => tokio::select! {
                    ready = self.leader.readable() => ready?,
                    ready = socket.readable() => {
                        let mut ready = ready?;
                        if let Some(status) = self.try_exited()? {
                            return Ok(status);
                        }
                        ready.clear_ready();
                        reports = None;
                        continue;
                    }
                },
                None => self.leader.readable().await?,
            };
            if let Some(status) = self.try_exited()? {
                return Ok(status);
            }
            ready.clear_ready();
        }
    }

    /// The leader's status if it has exited, without waiting or reaping.
    pub fn try_exited(&self) -> io::Result<Option<ExitStatus>> {
        self.leader.get_ref().peek()
    }

    /// Sends SIGKILL to the whole group at once, without waiting (under a
    /// reaper: asks it to SIGKILL every process the command started).
    /// Nothing is signalled once the leader is reaped.
    pub fn kill_group(&self) {
        self.leader.get_ref().signal(Signal::KILL);
    }

    /// Waits for the leader to exit, kills what it left in its group, and
    /// reaps it: the one way a child ends in this crate. (Under a reaper,
    /// nothing is left: the reaper killed it before it exited.)
    pub async fn wait(&self) -> io::Result<ExitStatus> {
        let status = self.exited().await?;
        let leader = self.leader.get_ref();
        leader.signal(Signal::KILL);
        if !leader.reap()? {
            // A reaper reports the command's end a moment before it exits
            // itself: reaped here once it has, not left a zombie for as
            // long as this `Child` is held (a debug session's, until the
            // next launch). Bounded; dropping the `Child` reaps it anyway.
            let reaped = async {
                loop {
                    let mut ready = self.leader.readable().await?;
                    if leader.reap()? {
                        return io::Result::Ok(());
                    }
                    ready.clear_ready();
                }
            };
            let _ = tokio::time::timeout(REAPER_EXIT, reaped).await;
        }
        Ok(status)
    }

    /// Stops the child: SIGTERM to the group, at most `grace` for the
    /// leader to exit, then SIGKILL to the group (under a reaper, to every
    /// process it started) and the reap. A leader that already exited is
    /// not asked again.
    pub async fn stop(&self, grace: Duration) -> io::Result<ExitStatus> {
        if self.try_exited()?.is_none() {
            self.leader.get_ref().signal(Signal::TERM);
            let _ = tokio::time::timeout(grace, self.exited()).await;
        }
        self.kill_group();
        self.wait().await
    }
}

impl std::fmt::Debug for Child {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Child")
            .field("pid", &self.pid())
            .field("reach", &self.reach())
            .finish()
    }
}

/// The process spawned (the group leader, or the reaper): its pid and
/// pidfd, and whether it was reaped, under one lock so that no signal goes
/// out after the reap.
struct Leader {
    pid: Pid,
    pidfd: OwnedFd,
    /// The command's pid when `pid` is its reaper.
    command: Option<Pid>,
    state: Mutex<State>,
}

struct State {
    exit: Option<ExitStatus>,
    reaped: bool,
    /// The way to the reaper, when there is one.
    control: Option<Control>,
    /// The command's status as its reaper reported it.
    reported: Option<Result<ExitStatus, String>>,
}

impl Leader {
    fn new(pid: u32, control: Option<Control>) -> Result<Leader, (io::Error, Option<Control>)> {
        let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            let error = io::Error::other(format!("spawned process has pid {pid}"));
            return Err((error, control));
        };
        // Race-free: the child is ours and unreaped, so the pid is its.
        let pidfd = match pidfd_open(pid, PidfdFlags::empty()) {
            Ok(pidfd) => pidfd,
            Err(error) => return Err((error.into(), control)),
        };
        Ok(Leader {
            pid,
            pidfd,
            command: control.as_ref().map(Control::command),
            state: Mutex::new(State {
                exit: None,
                reaped: false,
                control,
                reported: None,
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The exit status, if the process spawned has exited: its own, or
    /// the command's as its reaper reported it.
    fn peek(&self) -> io::Result<Option<ExitStatus>> {
        let mut state = self.state();
        if state.exit.is_none()
            && state.reported.is_none()
            && let Some(status) = state.control.as_mut().and_then(Control::status_now)
        {
            state.reported = Some(Ok(status));
        }
        if let Some(reported) = &state.reported {
            return reported.clone().map(Some).map_err(io::Error::other);
        }
        if state.exit.is_none() {
            let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
            state.exit = waitid(WaitId::PidFd(self.pidfd.as_fd()), options)?.map(exit_status);
        }
        let Some(exit) = state.exit else {
            return Ok(None);
        };
        let State {
            control, reported, ..
        } = &mut *state;
        match control {
            None => Ok(Some(exit)),
            Some(control) => reported
                .get_or_insert_with(|| control.report(exit))
                .clone()
                .map(Some)
                .map_err(io::Error::other),
        }
    }

    /// Signals the group, or asks the reaper to.
    fn signal(&self, signal: Signal) {
        let state = self.state();
        match &state.control {
            Some(control) => control.request(signal),
            // ESRCH: every member is gone already.
            None if !state.reaped => {
                let _ = kill_process_group(self.pid, signal);
            }
            None => {}
        }
    }

    /// Reaps the leader if it has exited; true once it is reaped.
    fn reap(&self) -> io::Result<bool> {
        let mut state = self.state();
        if !state.reaped {
            let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG;
            if let Some(status) = waitid(WaitId::PidFd(self.pidfd.as_fd()), options)? {
                state.exit.get_or_insert(exit_status(status));
                state.reaped = true;
            }
        }
        Ok(state.reaped)
    }
}

impl AsRawFd for Leader {
    fn as_raw_fd(&self) -> RawFd {
        self.pidfd.as_raw_fd()
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        self.signal(Signal::KILL);
        if matches!(self.reap(), Ok(true) | Err(_)) {
            return;
        }
        // Killed a moment ago and not dead yet: a thread waits for the
        // death and reaps it, so no zombie stays and drop never blocks.
        if let Ok(pidfd) = self.pidfd.try_clone() {
            std::thread::spawn(move || {
                let _ = waitid(WaitId::PidFd(pidfd.as_fd()), WaitIdOptions::EXITED);
            });
        }
    }
}

/// The std form of a `waitid` status, so callers describe it as any other.
fn exit_status(status: WaitIdStatus) -> ExitStatus {
    // The wait(2) encoding: the code in the second byte, or the signal in
    // the low seven bits with 0x80 for a core dump.
    let raw = match (status.exit_status(), status.terminating_signal()) {
        (Some(code), _) => (code & 0xff) << 8,
        (None, Some(signal)) => signal | if status.dumped() { 0x80 } else { 0 },
        (None, None) => 0,
    };
    ExitStatus::from_raw(raw)
}

/// How a process ended, in words: `exited with code 1`, `was killed by
/// signal 9`.
pub fn describe_exit(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (_, Some(signal)) => format!("was killed by signal {signal}"),
        _ => "exited".into(),
    }
}
