//! The layer under Landlock: a command's own user, mount, PID and IPC
//! namespaces, set up by its reaper before the command starts.
//!
//! Landlock only grants: it cannot keep one file read-only inside a
//! writable folder, nor hide a folder inside a readable one. A mount
//! namespace can: paths a command must not change (`.git/config`,
//! `.git/hooks`, `.gantry/`, the editors' and agents' configuration)
//! become read-only bind mounts of themselves, and `.git` a mount point of
//! itself, so it cannot be moved aside and replaced; paths it must not
//! read (keys, credentials, Gantry's own home and state) are covered by an
//! empty folder or `/dev/null`. A PID namespace, with its own `/proc`,
//! shows the command its own processes only.
//!
//! Why the reaper and not bubblewrap: the reaper already runs between
//! Gantry and every command, single-threaded, and already confines itself
//! before it starts the command; doing the namespaces there costs a fork
//! of a small process instead of one more exec, needs no setuid helper or
//! package, and keeps one spawn path for every child. Hand-written over a
//! crate because the few calls (`unshare`, `mount`, the id maps) must run
//! in a precise order between the reaper's fork and the command's spawn,
//! which no crate here offers.
//!
//! Gantry builds a [`Plan`] per spawn (which protected paths exist now),
//! hands it to the reaper in a memfd, and the reaper:
//! 1. [`enter`]s new mount, IPC and PID namespaces (and network), in the
//!    user namespace of the run's [`RunNamespaces`] where there is one
//!    (its overlays copied in) or a new one, and lays out the mounts;
//! 2. forks the namespace's init (PID 1), which mounts a `/proc` of its
//!    own ([`Init::start`]), confines itself (capabilities, Landlock,
//!    seccomp) and starts the command;
//! 3. learns the command's pid outside the namespace, reports it to
//!    Gantry, and sweeps as before. When init exits, every process of the
//!    namespace dies with it.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use super::mounts::{bind_self, check, make_mounts_private, mount, private_cache};

/// What the reaper mounts in the command's namespace: paths are absolute
/// and existed when the plan was made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Made read-only, themselves and all beneath.
    pub protect: Vec<PathBuf>,
    /// Made mount points of themselves, writable as before, so that they
    /// cannot be renamed or removed (`.git`, whose config and hooks are
    /// protected, moved aside and made again by `git init`).
    pub pin: Vec<PathBuf>,
    /// Covered: a folder by an empty one, a file by `/dev/null`.
    pub hide: Vec<PathBuf>,
    /// Places beneath a hidden folder that stay as they are (a kernel's
    /// environment in Gantry's state directory).
    pub reveal: Vec<PathBuf>,
    /// Build caches seen through an overlay: the cache as it is below,
    /// and what the command writes in an upper folder of Gantry's, so
    /// that the user's own tools never read it (`cache`, `upper`, `work`
    /// in threes).
    pub overlay: Vec<PathBuf>,
    /// Where the command may write. Landlock's rules hold for the inodes
    /// they were made on, and an overlay is new ones: the namespace's
    /// init makes the rules again once its mounts are in place.
    pub writable: Vec<PathBuf>,
    /// `network: false`, as one record `N/`.
    pub network_denied: Vec<PathBuf>,
    /// A network namespace of its own (record `E/`).
    pub own_network: bool,
    /// Ports its reaper listens on inside that namespace, in order, and
    /// hands to Gantry (records `L` and the port in decimal).
    pub listen: Vec<u16>,
}

/// The list of a plan one record tag stands for.
type List = fn(&mut Plan) -> &mut Vec<PathBuf>;

/// Record tags in the plan's memfd: one byte, the path, a NUL.
const TAGS: [(u8, List); 7] = [
    (b'p', |plan| &mut plan.protect),
    (b'n', |plan| &mut plan.pin),
    (b'h', |plan| &mut plan.hide),
    (b'r', |plan| &mut plan.reveal),
    (b'o', |plan| &mut plan.overlay),
    (b'w', |plan| &mut plan.writable),
    (b'N', |plan| &mut plan.network_denied),
];

impl Plan {
    /// The plan in a memfd, for a reaper to read with [`Plan::read`].
    pub(crate) fn to_memfd(&self) -> io::Result<OwnedFd> {
        let mut bytes = Vec::new();
        let mut copy = self.clone();
        for (tag, list) in TAGS {
            for path in list(&mut copy).iter() {
                bytes.push(tag);
                bytes.extend_from_slice(path.as_os_str().as_bytes());
                bytes.push(0);
            }
        }
        if self.own_network {
            bytes.extend_from_slice(b"E/\0");
        }
        for port in &self.listen {
            bytes.extend_from_slice(format!("L{port}\0").as_bytes());
        }
        let memfd = rustix::fs::memfd_create("gantry-namespaces", rustix::fs::MemfdFlags::CLOEXEC)?;
        std::fs::File::from(memfd.try_clone()?).write_all_at(&bytes, 0)?;
        Ok(memfd)
    }

    /// The plan a memfd holds.
    pub(crate) fn read(memfd: &OwnedFd) -> io::Result<Plan> {
        let file = std::fs::File::from(memfd.try_clone()?);
        let mut bytes = vec![0u8; file.metadata()?.len() as usize];
        file.read_exact_at(&mut bytes, 0)?;
        let mut plan = Plan::default();
        for record in bytes.split(|&b| b == 0).filter(|r| !r.is_empty()) {
            let (tag, path) = record.split_first().expect("not empty");
            let invalid = || io::Error::from_raw_os_error(libc::EINVAL);
            match tag {
                b'E' => {
                    plan.own_network = true;
                    continue;
                }
                b'L' => {
                    let port = std::str::from_utf8(path).ok().and_then(|p| p.parse().ok());
                    plan.listen.push(port.ok_or_else(invalid)?);
                    continue;
                }
                _ => {}
            }
            let list = TAGS
                .iter()
                .find(|(known, _)| known == tag)
                .map(|(_, list)| list)
                .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
            let path = PathBuf::from(OsStr::from_bytes(path));
            if !path.is_absolute() {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            list(&mut plan).push(path);
        }
        Ok(plan)
    }
}

// A file of /proc (the namespace's id maps), not a file on disk.
#[allow(clippy::disallowed_methods)]
fn write_proc(file: &str, text: &str) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| io::Error::new(e.kind(), format!("{file}: {e}")))
}

/// Enters new user, mount, IPC and PID namespaces (the PID one for the
/// children to come), and a network one where the plan says so, and lays
/// out `plan`'s mounts. Run by the reaper, single-threaded, before it
/// forks the namespace's init. Returns the listeners on the plan's ports
/// of the new loopback, in order, for Gantry.
///
/// With the `run`'s namespaces (see [`prepare_run`]), the new mount
/// namespace is a copy of the run's, with its overlays already in place,
/// in its user namespace; without, both are new and the plan's overlays
/// (if any) are mounted here. With a `network` made beforehand (see
/// [`prepare_network`], in the run's user namespace), the command gets
/// that one instead of a new one, and Gantry holds its listeners already.
pub(crate) fn enter(
    plan: &Plan,
    run: Option<RunNamespaces>,
    network: Option<OwnedFd>,
) -> io::Result<Vec<OwnedFd>> {
    // Joining a mount namespace moves the working directory to its root;
    // and a directory held across new mounts would lead past them. So it
    // is found again by its path once the mounts are laid out.
    let directory = std::env::current_dir()?;
    let (uid, gid) = own_ids();
    let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWIPC | libc::CLONE_NEWPID;
    // Joined, the descriptors are closed: nothing forked from here (the
    // namespace's init) holds a way back into the run's namespaces.
    let joined = run.is_some();
    match run {
        Some(run) => run.join()?,
        None => flags |= libc::CLONE_NEWUSER,
    }
    let made_network = plan.own_network && network.is_none();
    match network {
        Some(network) if joined => set_namespace(&network, libc::CLONE_NEWNET)?,
        Some(_) => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
        None if plan.own_network => flags |= libc::CLONE_NEWNET,
        None => {}
    }
    unshare(flags)?;
    if !joined {
        map_own_ids(uid, gid)?;
    }
    let listeners = match made_network {
        true => own_network(&plan.listen)?,
        false => Vec::new(),
    };
    make_mounts_private()?;
    // What stays visible beneath a hidden folder is held open first: once
    // the folder is covered its path leads into the empty one.
    // O_PATH handles, to hold folders open: nothing is written.
    #[allow(clippy::disallowed_methods)]
    let revealed: Vec<(PathBuf, OwnedFd)> = plan
        .reveal
        .iter()
        .filter_map(|path| {
            let fd = rustix::fs::open(
                path,
                rustix::fs::OFlags::PATH
                    | rustix::fs::OFlags::DIRECTORY
                    | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .ok()?;
            Some((path.clone(), fd))
        })
        .collect();
    // A path removed since the plan was made has nothing left to guard.
    let gone = |result: io::Result<()>| match result {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    };
    mount_overlays(plan)?;
    for path in &plan.pin {
        gone(bind_self(path, false))?;
    }
    for path in &plan.protect {
        gone(bind_self(path, true))?;
    }
    for path in &plan.hide {
        if path.is_dir() {
            mount(
                None,
                path,
                Some("tmpfs"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                Some("mode=0755,size=64k"),
            )
            // Hiding is not optional: a path that cannot be covered
            // refuses the command.
            .map_err(|e| {
                io::Error::new(e.kind(), format!("cannot hide {}: {e}", path.display()))
            })?;
        } else {
            mount(
                Some(Path::new("/dev/null")),
                path,
                None,
                libc::MS_BIND,
                None,
            )?;
        }
    }
    for (path, fd) in &revealed {
        // A mount point in the tmpfs that hides a folder, in the reaper's
        // own mount namespace: nothing reaches the disk.
        #[allow(clippy::disallowed_methods)]
        std::fs::create_dir_all(path)?;
        let source = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        mount(
            Some(&source),
            path,
            None,
            libc::MS_BIND | libc::MS_REC,
            None,
        )?;
    }
    std::env::set_current_dir(&directory)?;
    Ok(listeners)
}

/// Maps this process's ids (`uid`, `gid`: read before it unshared, as
/// they show as `nobody` after) to themselves in its new user namespace
/// (root to root: a user namespace cannot map more of its parent's ids without
/// a helper outside it, so other users' files show as `nobody`).
fn map_own_ids(uid: u32, gid: u32) -> io::Result<()> {
    write_proc("/proc/self/setgroups", "deny")?;
    write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1"))?;
    write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1"))
}

fn own_ids() -> (u32, u32) {
    (
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    )
}

fn mount_overlays(plan: &Plan) -> io::Result<()> {
    for layers in plan.overlay.chunks(3) {
        let [cache, upper, work] = layers else {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        };
        private_cache(cache, upper, work)?;
    }
    Ok(())
}

/// A user namespace and a mount namespace with a run's build caches
/// behind their overlays (if it has any), held by descriptors: each
/// confined command's namespaces are made from these instead of anew.
///
/// An overlay costs at its mount (feature checks that write and remove
/// files in its work folder) and more at its end (the kernel waits for an
/// RCU grace period per overlay when it frees one). Mounted once per run
/// and copied into each command's mount namespace, they cost neither per
/// command; and the commands of a run share one overlay per cache, the
/// only way the kernel supports an upper folder used at once.
#[derive(Debug)]
pub(crate) struct RunNamespaces {
    pub user: OwnedFd,
    pub mount: OwnedFd,
}

impl RunNamespaces {
    /// Enters the two namespaces; the caller, single-threaded, then holds
    /// every capability in that user namespace, enough to unshare the
    /// others from it.
    fn join(self) -> io::Result<()> {
        set_namespace(&self.user, libc::CLONE_NEWUSER)?;
        set_namespace(&self.mount, libc::CLONE_NEWNS)
    }
}

fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: unshare with namespace flags only changes this process.
    check(unsafe { libc::unshare(flags) })
        .map_err(|e| io::Error::new(e.kind(), format!("unshare: {e}")))
}

fn set_namespace(fd: &OwnedFd, kind: libc::c_int) -> io::Result<()> {
    // SAFETY: setns on a namespace descriptor we hold.
    check(unsafe { libc::setns(fd.as_raw_fd(), kind) })
        .map_err(|e| io::Error::new(e.kind(), format!("setns: {e}")))
}

// A read-only open (O_PATH or O_RDONLY): it writes nothing.
#[allow(clippy::disallowed_methods)]
fn open_namespace(name: &str) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        format!("/proc/self/ns/{name}"),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?)
}

/// How many networks a reaper makes ahead at once: one start of a
/// process for several commands.
pub(crate) const NETWORKS_AHEAD: usize = 4;

/// Makes [`NETWORKS_AHEAD`] network namespaces in the run's user
/// namespace (`user`), each with its loopback up and listening on
/// `plan`'s ports, in a reaper started for that alone, ahead of the
/// commands that will get them: a new network namespace costs about a
/// millisecond, which is then nobody's wait. Returns, for each, the
/// namespace and then its listeners in the plan's order.
pub(crate) fn prepare_network(user: &OwnedFd, plan: &Plan) -> io::Result<Vec<OwnedFd>> {
    set_namespace(user, libc::CLONE_NEWUSER)?;
    let mut made = Vec::new();
    for _ in 0..NETWORKS_AHEAD {
        unshare(libc::CLONE_NEWNET)?;
        let listeners = own_network(&plan.listen)?;
        made.push(open_namespace("net")?);
        made.extend(listeners);
    }
    Ok(made)
}

/// Makes a user namespace and a mount namespace with `plan`'s overlays,
/// in a reaper started for that alone, which hands the two back and
/// exits: descriptors keep namespaces alive without a process in them.
pub(crate) fn prepare_run(plan: &Plan) -> io::Result<RunNamespaces> {
    let (uid, gid) = own_ids();
    unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS)?;
    map_own_ids(uid, gid)?;
    make_mounts_private()?;
    mount_overlays(plan)?;
    Ok(RunNamespaces {
        user: open_namespace("user")?,
        mount: open_namespace("mnt")?,
    })
}

/// Brings up the new network namespace's loopback (down at its birth) and
/// listens on `ports` of it.
fn own_network(ports: &[u16]) -> io::Result<Vec<OwnedFd>> {
    let up = || -> io::Result<()> {
        // SAFETY: a plain socket call; the descriptor is owned at once.
        let socket =
            unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if socket < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `socket` is a new descriptor nothing else owns.
        let socket = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(socket) };
        // SAFETY: a zeroed ifreq is valid; the name is NUL-terminated and
        // the ioctls read and write only the struct given.
        unsafe {
            let mut request = std::mem::zeroed::<libc::ifreq>();
            for (to, from) in request.ifr_name.iter_mut().zip(b"lo\0") {
                *to = *from as libc::c_char;
            }
            check(libc::ioctl(
                socket.as_raw_fd(),
                libc::SIOCGIFFLAGS,
                &mut request,
            ))?;
            request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            check(libc::ioctl(
                socket.as_raw_fd(),
                libc::SIOCSIFFLAGS,
                &request,
            ))
        }
    };
    up().map_err(|e| io::Error::new(e.kind(), format!("bringing up the loopback: {e}")))?;
    ports
        .iter()
        .map(|&port| {
            std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port))
                .map(OwnedFd::from)
                .map_err(|e| io::Error::new(e.kind(), format!("listening on port {port}: {e}")))
        })
        .collect()
}

/// The namespace's init, seen from the reaper: its pid and the socket it
/// reports on.
pub(crate) struct Init {
    /// Init's pid outside the namespace (the reaper's child).
    pub pid: rustix::process::Pid,
    socket: UnixStream,
    pending: Vec<u8>,
}

/// What init does between its fork and the command's spawn: confine
/// itself (given the ruleset and filter by the reaper).
pub(crate) type Confine<'a> = &'a dyn Fn() -> io::Result<()>;

impl Init {
    /// Forks the namespace's init (PID 1): it mounts a `/proc` of its own
    /// (the reaper holds the host's open, to find and end the command's
    /// processes), runs `confine`, starts
    /// `program` with `spawn`, says so, and waits for it; when the command
    /// exits it reports the status and exits, which ends every process of
    /// the namespace. Returns in the reaper once init has started the
    /// command (or with why it could not).
    pub(crate) fn start(
        confine: Confine<'_>,
        spawn: &dyn Fn() -> io::Result<rustix::process::Pid>,
    ) -> io::Result<(Init, rustix::process::Pid)> {
        let (ours, theirs) = UnixStream::pair()?;
        // SAFETY: the reaper is single-threaded, so the child may run
        // ordinary code after the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            drop(ours);
            let code = init_main(theirs, confine, spawn);
            // SAFETY: leaving the forked child without running the
            // reaper's destructors or atexit handlers.
            unsafe { libc::_exit(code) }
        }
        drop(theirs);
        let pid = rustix::process::Pid::from_raw(pid).expect("a fork's pid is positive");
        let mut init = Init {
            pid,
            socket: ours,
            pending: Vec::new(),
        };
        let line = init.line()?;
        if let Some(error) = crate::reaper::wire::parse_error(&line) {
            return Err(error);
        }
        if line != "started" {
            return Err(io::Error::other(format!(
                "the namespace's init said `{line}`"
            )));
        }
        // The command is init's one child, unreaped until we answer.
        let command = crate::reaper::children_of(pid)
            .into_iter()
            .next()
            .ok_or_else(|| io::Error::other("the namespace's init has no command"))?;
        init.socket.write_all(b"go\n")?;
        Ok((init, command))
    }

    /// Asks init to send SIGTERM to the command's group, if it has not
    /// reaped the command yet.
    pub(crate) fn terminate(&self) {
        let _ = rustix::net::send(&self.socket, b"t", rustix::net::SendFlags::NOSIGNAL);
    }

    /// The command's status line, once init sent it (`exit N`,
    /// `signal N`); `None` before.
    pub(crate) fn status(&mut self) -> Option<String> {
        self.socket.set_nonblocking(true).ok()?;
        crate::reaper::wire::read_available(&self.socket, &mut self.pending);
        let text = String::from_utf8_lossy(&self.pending);
        text.lines()
            .map(str::to_string)
            .find(|line| line.starts_with("exit ") || line.starts_with("signal "))
    }

    /// One line from init, waiting at most as long as a command's start may
    /// take.
    fn line(&mut self) -> io::Result<String> {
        self.socket
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
        let mut chunk = [0u8; 64];
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let rest = self.pending.split_off(end + 1);
                let line = String::from_utf8_lossy(&self.pending).trim().to_string();
                self.pending = rest;
                return Ok(line);
            }
            match (&self.socket).read(&mut chunk) {
                Ok(0) => {
                    return Err(io::Error::other(
                        "the namespace's init exited before it started the command",
                    ));
                }
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Init's life: its own `/proc`, confinement, the command, its status.
fn init_main(
    socket: UnixStream,
    confine: Confine<'_>,
    spawn: &dyn Fn() -> io::Result<rustix::process::Pid>,
) -> i32 {
    let say = |line: &str| {
        let _ = (&socket).write_all(line.as_bytes());
    };
    let started = own_proc().and_then(|()| confine()).and_then(|()| spawn());
    let command = match started {
        Ok(pid) => pid,
        Err(e) => {
            say(&crate::reaper::wire::error_line(&e, libc::EPERM));
            return 126;
        }
    };
    say("started\n");
    // Reap nothing until the reaper has found the command's pid.
    let mut answer = [0u8; 3];
    let _ = (&socket).read(&mut answer);
    let children = match child_exits() {
        Ok(fd) => fd,
        Err(_) => return 125,
    };
    loop {
        let mut fds = [
            rustix::event::PollFd::new(&children, rustix::event::PollFlags::IN),
            rustix::event::PollFd::new(&socket, rustix::event::PollFlags::IN),
        ];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return 125,
        }
        let asked = !fds[1].revents().is_empty();
        let mut info = [0u8; std::mem::size_of::<libc::signalfd_siginfo>()];
        while rustix::io::read(&children, &mut info).is_ok() {}
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status it is given.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            if pid == command.as_raw_nonzero().get() {
                let status = std::os::unix::process::ExitStatusExt::from_raw(status);
                say(&crate::reaper::wire::status_line(status));
                return 0;
            }
        }
        if asked {
            let mut request = [0u8; 16];
            match (&socket).read(&mut request) {
                // The reaper is gone: so is everything here, with us.
                Ok(0) => return 125,
                Ok(n) if request[..n].contains(&b't') => {
                    // Unreaped, so the group id is still the command's.
                    // SAFETY: kill takes plain integers.
                    unsafe { libc::kill(-command.as_raw_nonzero().get(), libc::SIGTERM) };
                }
                _ => {}
            }
        }
    }
}

/// A signalfd for SIGCHLD, which init inherited blocked from the reaper.
fn child_exits() -> io::Result<OwnedFd> {
    // SAFETY: the set is initialised by sigemptyset before use; signalfd
    // returns a new descriptor that we own.
    unsafe {
        let mut set = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(std::os::fd::FromRawFd::from_raw_fd(fd))
    }
}

/// A `/proc` of init's PID namespace, over the one the reaper (which
/// shares this mount namespace) holds open.
fn own_proc() -> io::Result<()> {
    mount(
        Some(Path::new("proc")),
        Path::new("/proc"),
        Some("proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )
}

/// Whether this machine gives a process new user, mount, PID and IPC
/// namespaces, asked once per process by a child that tries (`unshare` is
/// refused to a multi-threaded process such as Gantry).
pub(crate) fn available() -> Result<(), String> {
    static ANSWER: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    ANSWER
        .get_or_init(|| {
            let (ours, theirs) = UnixStream::pair().map_err(|e| e.to_string())?;
            // SAFETY: the child makes system calls only (no allocation, no
            // lock) and leaves with _exit.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                return Err(io::Error::last_os_error().to_string());
            }
            if pid == 0 {
                // SAFETY: system calls on plain values and static strings,
                // then _exit.
                unsafe {
                    libc::_exit(probe_child(theirs.as_raw_fd()));
                }
            }
            drop(theirs);
            let mut byte = [0u8; 1];
            let read = (&ours).read(&mut byte);
            // SAFETY: reaping the child we forked.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
            match read {
                Ok(1) if byte[0] == 0 => Ok(()),
                Ok(1) => Err(io::Error::from_raw_os_error(byte[0] as i32).to_string()),
                _ => Err("the namespace probe died".into()),
            }
        })
        .clone()
}

/// The probe's child: what [`enter`] and init do, in system calls only
/// (it is a fork of a multi-threaded Gantry): the namespaces, a private
/// root, and in a grandchild, PID 1 of the new namespace, a `/proc` of its
/// own (refused in containers whose `/proc` is partly masked). Writes the
/// errno of the first failure (0: none) on `fd`.
///
/// # Safety
/// Only in a freshly forked child.
unsafe fn probe_child(fd: libc::c_int) -> libc::c_int {
    // SAFETY: as the caller promises; every pointer is a static string.
    unsafe {
        let report = |errno: libc::c_int| {
            let byte = errno as u8;
            libc::write(fd, (&byte as *const u8).cast(), 1);
            0
        };
        let errno = || *libc::__errno_location();
        let flags =
            libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWIPC | libc::CLONE_NEWPID;
        if libc::unshare(flags) != 0 {
            return report(errno());
        }
        let none = std::ptr::null();
        if libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_REC | libc::MS_PRIVATE,
            none.cast(),
        ) != 0
        {
            return report(errno());
        }
        let init = libc::fork();
        if init < 0 {
            return report(errno());
        }
        if init == 0 {
            let failed = libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                none.cast(),
            ) != 0;
            libc::_exit(if failed { errno() } else { 0 });
        }
        let mut status = 0;
        libc::waitpid(init, &mut status, 0);
        report(if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            libc::EIO
        })
    }
}
