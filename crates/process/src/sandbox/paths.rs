//! Which paths the namespaces protect and hide, and the plan of one spawn.
//!
//! Protected: what programs outside the sandbox run later, inside a place
//! a command may write: git's config and hooks (`core.fsmonitor`, a
//! `pre-commit` hook run by the user's next `git commit`), Gantry's own
//! settings, the editors' and agents' configuration that starts processes
//! (VS Code tasks, MCP servers of Claude Code, Gemini CLI, Qwen Code,
//! Cursor), direnv's `.envrc`, and in a writable home the shell profiles
//! and git's user configuration. Hidden: what a command has no business
//! reading: keys and credentials, Gantry's own home (approvals, the
//! user's settings) and state (journals holding other workspaces' files),
//! the other users' homes.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::namespace::{Plan, RunNamespaces};

/// Kept read-only in every writable root that is a workspace root or
/// one the user named (`writableRoots`), where they exist.
pub const PROTECTED: &[&str] = &[
    ".git/config",
    ".git/hooks",
    // Each submodule's own config and hooks: the user's `git status`
    // runs git in every submodule.
    ".git/modules",
    ".gantry",
    ".vscode",
    ".idea",
    ".claude",
    ".gemini",
    ".qwen",
    ".cursor",
    ".mcp.json",
    ".envrc",
];

/// Kept read-only in a writable home.
pub const PROTECTED_IN_HOME: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".config/fish",
    ".gitconfig",
    ".config/git",
    ".ssh",
];

/// Folders made mount points of themselves where they exist, so that a
/// protected path inside cannot be moved aside with them (`mv .git
/// .git-old && git init`).
pub(super) const PINNED: &[&str] = &[".git"];

/// Hidden in the home directory by default.
const HIDDEN_IN_HOME: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".cargo/credentials",
];

/// The sockets of services that act with the user's rights, or more, on
/// what a client asks: a network a command's own network namespace does
/// not take away (a path's Unix socket is reached from any). Docker's and
/// containerd's run anything as root; the system bus reaches polkit; X11
/// takes keystrokes into the user's terminals.
const HIDDEN_SOCKETS: &[&str] = &[
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd",
    "/run/podman",
    "/run/dbus",
    "/var/run/dbus",
    "/tmp/.X11-unix",
];

/// The default hidden paths: the credentials above, Gantry's own home and
/// state directories, the other users' homes (`/home/*` and `/root` but
/// the user's own), the service sockets above, the user's runtime
/// directory (its session bus starts programs outside any sandbox:
/// `systemd-run --user`; its agents sign and decrypt) and the SSH agent's
/// socket.
pub fn default_hidden() -> Vec<PathBuf> {
    let home = dirs::home_dir();
    let mut hidden: Vec<PathBuf> = home
        .iter()
        .flat_map(|home| HIDDEN_IN_HOME.iter().map(|name| home.join(name)))
        .collect();
    hidden.push(gantry_core::settings::gantry_home());
    hidden.push(gantry_core::settings::state_dir());
    let others = std::fs::read_dir("/home")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .chain(std::iter::once(PathBuf::from("/root")));
    hidden.extend(others.filter(|other| home.as_deref() != Some(other.as_path())));
    hidden.extend(HIDDEN_SOCKETS.iter().map(PathBuf::from));
    let uid = rustix::process::getuid().as_raw();
    hidden.push(PathBuf::from(format!("/run/user/{uid}")));
    for variable in [
        "XDG_RUNTIME_DIR",
        "SSH_AUTH_SOCK",
        "DBUS_SESSION_BUS_ADDRESS",
    ] {
        let Some(value) = std::env::var_os(variable) else {
            continue;
        };
        // `unix:path=/run/user/1000/bus,guid=...` names a path too.
        let value = value.to_string_lossy();
        let path = value
            .strip_prefix("unix:path=")
            .map(|rest| rest.split(',').next().unwrap_or(rest))
            .unwrap_or(&value);
        if path.starts_with('/') {
            hidden.push(PathBuf::from(path));
        }
    }
    hidden.sort();
    hidden.dedup();
    hidden
}

/// What the namespaces do for one sandbox: the roots whose protected
/// paths are kept read-only, and the hidden paths; a [`Plan`] is made of
/// it at each spawn, from what exists then.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    /// Roots (workspace roots, `writableRoots`) and the relative paths
    /// protected in each.
    protected: Vec<(PathBuf, Vec<PathBuf>)>,
    /// Absolute paths protected wherever they are.
    protected_absolute: Vec<PathBuf>,
    hidden: Vec<PathBuf>,
    /// Where commands may write: a writable place beneath a hidden path
    /// stays visible.
    writable: Vec<PathBuf>,
    /// Hidden paths not hidden because a root lies beneath them.
    pub(super) not_hidden: Vec<PathBuf>,
    /// The build caches seen through an overlay, each with the upper
    /// folder of this workspace's, and the workspace root (for the work
    /// folders made at each spawn).
    caches: Vec<(PathBuf, PathBuf)>,
    workspace: PathBuf,
    /// The caches behind their overlays, made at the first spawn that
    /// needs them, for this layout's life (`None`: the kernel refused,
    /// and the caches are read-only instead).
    prepared: Arc<OnceLock<Option<Arc<PreparedRun>>>>,
    /// Whether sockets are denied (for the rules init makes again).
    network_denied: bool,
    /// A network namespace of the command's own, with listeners on these
    /// ports of its loopback (the proxy's, then `hostPorts`), handed to
    /// Gantry.
    own_network: Option<Vec<u16>>,
}

/// A spawn's namespaces: the plan, the protected paths that did not
/// exist, the run's namespaces to make them from, and a network made
/// for it beforehand.
pub(crate) struct Spawn {
    pub plan: Plan,
    pub absent: Vec<PathBuf>,
    pub run: Option<Arc<PreparedRun>>,
    pub network: Option<ReadyNetwork>,
}

/// A network namespace made ahead of the command that gets it, and its
/// listeners on the plan's ports, in order.
#[derive(Debug)]
pub(crate) struct ReadyNetwork {
    pub namespace: OwnedFd,
    pub listeners: Vec<OwnedFd>,
}

/// A layout's [`RunNamespaces`], the overlays' work folders (removed once
/// the namespaces are let go), and the next command's network.
#[derive(Debug)]
pub(crate) struct PreparedRun {
    namespace: Option<RunNamespaces>,
    work: Vec<PathBuf>,
    /// Made by a thread of its own when the last is taken, a few at once.
    next_networks: Mutex<Vec<ReadyNetwork>>,
    making_network: AtomicBool,
}

impl PreparedRun {
    /// Has a reaper make the run's namespaces, with the overlays of
    /// `caches` (cache, upper folder).
    fn new(caches: &[(PathBuf, PathBuf)], workspace: &Path) -> std::io::Result<PreparedRun> {
        let reaper = crate::reaper::located()
            .ok_or_else(|| std::io::Error::other("no reaper to prepare the namespaces"))?;
        let mut plan = Plan::default();
        let mut prepared = PreparedRun {
            namespace: None,
            work: Vec::new(),
            next_networks: Mutex::new(Vec::new()),
            making_network: AtomicBool::new(false),
        };
        for (cache, upper) in caches {
            let work = gantry_core::state::scratch_dir("caches-work", workspace)?;
            plan.overlay
                .extend([cache.clone(), upper.clone(), work.clone()]);
            prepared.work.push(work);
        }
        prepared.namespace = Some(reaper.prepare_run(plan.to_memfd()?)?);
        Ok(prepared)
    }

    pub(crate) fn namespace(&self) -> &RunNamespaces {
        self.namespace.as_ref().expect("held until dropped")
    }

    /// The network made for the next command with a network of its own
    /// listening on `ports` (the layout's, always the same), if it is
    /// ready; and the making of the one after starts. The first command
    /// of a run, or one that comes before its network is made, has its
    /// reaper make one itself.
    fn take_network(self: &Arc<Self>, ports: &[u16]) -> Option<ReadyNetwork> {
        let (taken, last) = {
            let mut ready = self.next_networks.lock().unwrap_or_else(|e| e.into_inner());
            (ready.pop(), ready.is_empty())
        };
        if last && !self.making_network.swap(true, Ordering::AcqRel) {
            let run = Arc::clone(self);
            let ports = ports.to_vec();
            let started = std::thread::Builder::new()
                .name("gantry-network".into())
                .spawn(move || {
                    match run.make_networks(ports) {
                        Ok(made) => run
                            .next_networks
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .extend(made),
                        Err(e) => tracing::debug!("no network made ahead: {e}"),
                    }
                    run.making_network.store(false, Ordering::Release);
                });
            if started.is_err() {
                self.making_network.store(false, Ordering::Release);
            }
        }
        taken
    }

    fn make_networks(&self, ports: Vec<u16>) -> std::io::Result<Vec<ReadyNetwork>> {
        let reaper = crate::reaper::located()
            .ok_or_else(|| std::io::Error::other("no reaper to make a network"))?;
        let plan = Plan {
            own_network: true,
            listen: ports,
            ..Plan::default()
        };
        let fds = reaper.prepare_network(plan.to_memfd()?, &self.namespace().user)?;
        let each = 1 + plan.listen.len();
        if fds.len() != each * super::namespace::NETWORKS_AHEAD {
            return Err(std::io::Error::other("the reaper sent too few descriptors"));
        }
        let mut fds = fds.into_iter();
        Ok(std::iter::from_fn(|| {
            let namespace = fds.next()?;
            let listeners = fds.by_ref().take(each - 1).collect();
            Some(ReadyNetwork {
                namespace,
                listeners,
            })
        })
        .collect())
    }
}

impl Drop for PreparedRun {
    fn drop(&mut self) {
        // The overlays end with the last namespace that holds them; their
        // work folders can go once ours are closed.
        self.namespace.take();
        for dir in &self.work {
            gantry_core::state::remove_scratch(dir);
        }
    }
}

/// Makes the user's cache folder (`$XDG_CACHE_HOME`, else `~/.cache`)
/// where it is missing, as the XDG base directory rules ask of any
/// program that needs it (mode 0700), when it is one of `caches` and lies
/// under no root: most builds keep their caches there (go-build, pip), and
/// on a fresh account a command could not make it itself (only a cache
/// that exists is seen through an overlay; the home above it is
/// read-only).
fn make_cache_home(caches: &[PathBuf], roots: &[PathBuf]) {
    let Some(home) = super::policy::cache_home() else {
        return;
    };
    if home.exists() || !caches.contains(&home) || roots.iter().any(|root| home.starts_with(root)) {
        return;
    }
    use std::os::unix::fs::DirBuilderExt;
    // The user's own cache folder, never a workspace's (checked above).
    #[allow(clippy::disallowed_methods)]
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&home);
    if let Err(e) = made {
        tracing::warn!("cannot make the cache folder {}: {e}", home.display());
    }
}

impl Layout {
    /// The layout for `roots` (workspace and `writableRoots`, where
    /// protected paths are kept), `writable` places, extra `protect`
    /// entries and `hide` beyond the defaults.
    pub(super) fn new(
        roots: &[PathBuf],
        writable: &[PathBuf],
        protect: &[PathBuf],
        hide: &[PathBuf],
        caches: &[PathBuf],
        network: &crate::network::Network,
    ) -> Layout {
        let workspace = roots.first().cloned().unwrap_or_else(|| PathBuf::from("/"));
        // A cache that holds a root (or the state directory, where its
        // upper folder would be) is not seen through an overlay: the
        // workspace's writes would land in the upper folder.
        let state = gantry_core::settings::state_dir();
        make_cache_home(caches, roots);
        let caches = caches
            .iter()
            .filter(|cache| cache.is_dir())
            .filter(|cache| !roots.iter().any(|root| root.starts_with(cache)))
            .filter(|cache| !state.starts_with(cache) && !cache.starts_with(&state))
            .filter_map(|cache| {
                let name = cache.to_string_lossy().replace('/', "_");
                let upper =
                    gantry_core::state::create_dir(&format!("caches/{name}"), &workspace).ok()?;
                Some((cache.clone(), upper))
            })
            .collect();
        let home = dirs::home_dir();
        let (absolute, relative): (Vec<PathBuf>, Vec<PathBuf>) =
            protect.iter().cloned().partition(|path| path.is_absolute());
        let protected = roots
            .iter()
            .map(|root| {
                let mut names: Vec<PathBuf> = PROTECTED.iter().map(PathBuf::from).collect();
                if home.as_deref() == Some(root.as_path()) {
                    names.extend(PROTECTED_IN_HOME.iter().map(PathBuf::from));
                }
                names.extend(relative.iter().cloned());
                (root.clone(), names)
            })
            .collect();
        // A hidden path above a root would hide the workspace itself.
        let (hidden, not_hidden): (Vec<PathBuf>, Vec<PathBuf>) = default_hidden()
            .into_iter()
            .chain(hide.iter().cloned())
            .filter(|path| path.is_absolute())
            .partition(|path| !roots.iter().any(|root| root.starts_with(path)));
        Layout {
            protected,
            protected_absolute: absolute,
            hidden,
            writable: writable.to_vec(),
            not_hidden,
            caches,
            workspace,
            prepared: Arc::default(),
            network_denied: !network.sockets(),
            // A network of its own: the proxy's port, and the host's
            // loopback ports the user opened.
            own_network: network.proxy().map(|proxy| {
                std::iter::once(crate::network::PROXY_PORT)
                    .chain(proxy.host_ports.iter().copied())
                    .collect()
            }),
        }
    }

    /// The caches seen through an overlay, with where their writes go.
    pub(super) fn private_caches(&self) -> &[(PathBuf, PathBuf)] {
        &self.caches
    }

    /// The hidden paths, as configured (whether they exist or not).
    pub(super) fn hidden(&self) -> &[PathBuf] {
        &self.hidden
    }

    /// The plan of a spawn now: what of the layout exists; and the
    /// protected paths that do not exist yet, which no mount can cover (a
    /// mount needs a place to stand on, and Gantry makes none in the
    /// checkout): what the command creates there is moved out when it
    /// ends ([`Sandbox::quarantine`](super::Sandbox::quarantine)).
    pub(super) fn spawn(&self, inbound: &[u16]) -> Spawn {
        let exists = |path: &Path| path.symlink_metadata().is_ok();
        let mut plan = Plan::default();
        let mut absent = Vec::new();
        for (root, names) in &self.protected {
            absent.extend(
                names
                    .iter()
                    .map(|name| root.join(name))
                    .filter(|path| !exists(path) && path.parent().is_some_and(Path::is_dir)),
            );
            for name in PINNED {
                let pinned = root.join(name);
                if pinned.is_dir() && !pinned.is_symlink() {
                    plan.pin.push(pinned);
                }
            }
            plan.protect.extend(
                names
                    .iter()
                    .map(|name| root.join(name))
                    // A symlink is resolved by the mount: its target would
                    // be protected, wherever that is; the link itself is
                    // what a later program follows, and it stays as is.
                    .filter(|path| exists(path) && !path.is_symlink()),
            );
        }
        plan.protect.extend(
            self.protected_absolute
                .iter()
                .filter(|path| exists(path) && !path.is_symlink())
                .cloned(),
        );
        // A hidden link is followed: what it leads to is what is hidden;
        // so is a link above it (`/var/run/dbus` is `/run/dbus`), and the
        // same place named twice is covered once.
        plan.hide = self
            .hidden
            .iter()
            .filter_map(|path| path.canonicalize().ok())
            .filter(|path| {
                !self
                    .protected
                    .iter()
                    .any(|(root, _)| root.starts_with(path))
            })
            .collect();
        plan.hide.sort();
        plan.hide.dedup();
        // A hidden path beneath another (a state directory inside Gantry's
        // home) is hidden with it: once the outer one is covered, the
        // inner one is not there to mount on.
        let outer = plan.hide.clone();
        plan.hide.retain(|path| {
            !outer
                .iter()
                .any(|other| other != path && path.starts_with(other) && other.is_dir())
        });
        plan.reveal = self
            .writable
            .iter()
            .filter(|place| {
                place.is_dir() && plan.hide.iter().any(|hidden| place.starts_with(hidden))
            })
            .cloned()
            .collect();
        plan.writable = self.writable.clone();
        if self.network_denied {
            plan.network_denied.push(PathBuf::from("/"));
        }
        if let Some(ports) = &self.own_network {
            plan.own_network = true;
            plan.listen = ports.clone();
            plan.listen.extend_from_slice(inbound);
        }
        // The run's overlays, one per cache, shared by its commands (the
        // upper folder is the workspace's, so what one downloads the next
        // one finds); where the kernel refuses them, the caches are
        // read-only: never shared writable.
        let run = self.prepared_run();
        if run.is_none() {
            plan.protect
                .extend(self.caches.iter().map(|(cache, _)| cache.clone()));
        }
        // Networks are made ahead with the layout's ports only.
        let network = match (&run, &self.own_network) {
            (Some(run), Some(ports)) if inbound.is_empty() => run.take_network(ports),
            _ => None,
        };
        Spawn {
            plan,
            absent,
            run,
            network,
        }
    }

    fn prepared_run(&self) -> Option<Arc<PreparedRun>> {
        self.prepared
            .get_or_init(|| {
                PreparedRun::new(&self.caches, &self.workspace)
                    .inspect_err(|e| {
                        tracing::warn!(
                            "each command's namespaces made anew, build caches read-only: {e}"
                        )
                    })
                    .ok()
                    .map(Arc::new)
            })
            .clone()
    }

    /// Whether `path` is, or lies beneath, a protected path of the layout.
    pub(super) fn protects(&self, path: &Path) -> bool {
        self.protected
            .iter()
            .flat_map(|(root, names)| names.iter().map(move |name| root.join(name)))
            .chain(self.protected_absolute.iter().cloned())
            .any(|protected| path.starts_with(protected))
    }
}
