//! The reaper process itself: started with `__reap`, it becomes the
//! command's subreaper, confines itself, starts the command, ends every
//! descendant when the command ends or Gantry asks or dies, and reports
//! the command's status (see the parent module for the whole mechanism).

use super::INVOKED_AS;
use super::wire::{error_line, parse_status, status_line};
use std::ffi::{OsStr, OsString};
use std::io::{self, Read};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use crate::sandbox::namespace::{self, Plan, RunNamespaces};
use crate::sandbox::{Prepared, read_filter, restrict};
use rustix::event::{PollFd, PollFlags, poll};
use rustix::io::{FdFlags, fcntl_setfd};
use rustix::process::{
    Pid, PidfdFlags, Signal, WaitOptions, getppid, kill_process_group, pidfd_open,
    pidfd_send_signal, set_child_subreaper, set_parent_process_death_signal, wait,
};

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
    // the command's processes are done, its writers their EPIPE. (Opens
    // /dev/null for it: no file is written.)
    #[allow(clippy::disallowed_methods)]
    let null = std::fs::File::options()
        .read(true)
        .write(true)
        .open("/dev/null");
    if let Ok(null) = null {
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
// Reads the host's /proc (O_RDONLY or O_PATH): it writes nothing.
#[allow(clippy::disallowed_methods)]
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
// Reads the host's /proc (O_RDONLY or O_PATH): it writes nothing.
#[allow(clippy::disallowed_methods)]
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
// Reads the host's /proc (O_RDONLY or O_PATH): it writes nothing.
#[allow(clippy::disallowed_methods)]
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
