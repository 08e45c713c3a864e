//! The sandbox: what a command Gantry runs for the model may do once it
//! runs (SPEC §2). Tiers decide which tools a caller sees; this decides
//! that `rm -rf ~` or a test suite writing into the home directory fails
//! instead of succeeding.
//!
//! On Linux the confinement is Landlock, strictly: a ruleset the kernel can
//! only partly enforce is a refusal with the reason, never a quieter
//! sandbox. In `workspace-write` (the default) a command may write only
//! beneath the workspace roots, the temp directory, the build caches
//! ([`default_caches`]) and `sandbox.writableRoots`, plus `/dev/null`,
//! `/dev/tty`, `/dev/pts` and `/dev/ptmx` ([`DEVICES`]); in `read-only`,
//! only those devices. Reads are
//! not confined: Landlock has no deny rules, so a sandbox that reads
//! nowhere but a few places would break every compiler. `network: false`
//! denies TCP `connect` and `bind` (Landlock ABI 4) and, through a seccomp
//! filter, every socket but Unix, TCP ones excepted (so UDP and raw
//! sockets, which Landlock does not cover).
//!
//! The ruleset and the filter are built once per run, in Gantry, and
//! applied only in the child, so Gantry itself is never confined: under
//! a [reaper](crate::reaper), the reaper is handed the ruleset and the
//! filter as two descriptors and applies them to itself
//! (`prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self`, the seccomp
//! load) before it starts the command, which inherits them; spawned
//! directly, the child applies them between fork and exec, the same three
//! system calls, nothing allocated. The reaper is confined with its
//! command: it only reads `/proc`, opens `/dev/null` and signals its
//! descendants, all of which the sandbox allows, and so Gantry spawns it
//! with `posix_spawn` as before, never a fork (whose copy of Gantry's
//! page tables costs milliseconds per command once Gantry holds a few
//! hundred megabytes).
//!
//! A family applies the run's sandbox in one line where it builds a
//! [`Command`](crate::Command):
//!
//! ```no_run
//! # async fn demo(run: gantry_core::Run) -> std::io::Result<()> {
//! use gantry_process::{Command, Sandbox};
//!
//! let child = Command::new("python3", &Sandbox::of(&run).await)
//!     .arg("script.py")
//!     .spawn()?; // refused, with the reason and how to proceed, where it cannot confine
//! # Ok(())
//! # }
//! ```
//!
//! Where Landlock is missing (another platform, a kernel before 6.2) and
//! the settings name no mode, the default becomes `off`, said once per run
//! as a notice and in `gantry status`; a mode the settings ask for and the
//! kernel cannot give refuses every command with the reason.

mod explain;
mod landlock;
mod mounts;
pub(crate) mod namespace;
pub(crate) mod paths;
mod policy;
mod report;
mod seccomp;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gantry_core::Workspace;
use gantry_core::settings::Settings;
use gantry_core::{Resource, Run, async_trait};

use crate::env::EnvPolicy;
use crate::network::{Network, Proxy};

pub(crate) use self::landlock::{Prepared, abi as landlock_abi, restrict};
use self::paths::Layout;
pub use self::paths::{PROTECTED, PROTECTED_IN_HOME, default_hidden};
use self::policy::shown;
pub use self::policy::{
    Layered, Mode, Policy, Requirement, SandboxSettings, check, default_caches,
};
pub(crate) use self::seccomp::read_filter;

/// The settings key of the sandbox.
pub const SETTINGS_KEY: &str = "sandbox";

/// The devices every confined command may write: the null device, its
/// terminal, and new pseudo-terminals (a test runner's `pty.openpty()`).
pub const DEVICES: [&str; 4] = ["/dev/null", "/dev/tty", "/dev/pts", "/dev/ptmx"];

/// The Landlock ABI the filesystem rules need: 3 is the first that
/// controls truncation, without which a "read-only" file can be emptied.
pub const FS_ABI: u32 = 3;
/// The Landlock ABI that `network: false` needs (TCP connect and bind).
pub const NET_ABI: u32 = 4;

/// Keeps Gantry's memory and environment (its tokens, the user's keys)
/// from the processes it starts: Gantry becomes non-dumpable, so reading
/// its `/proc/PID/environ` or `mem`, or attaching to it, needs
/// `CAP_SYS_PTRACE`, which no confined command has (not even as root:
/// confinement drops every capability), and Landlock refuses a confined
/// tracer any process outside its sandbox besides. Also no core dump of
/// Gantry lands on disk. Called at the start of `main` by a front end
/// (a reaper execs afresh, dumpable again, and holds no secret).
pub fn shield_gantry() {
    // SAFETY: a prctl on the calling process with plain integers.
    let failed = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0;
    if failed {
        tracing::warn!(
            "Gantry could not make itself non-dumpable ({}): a process of the same user may \
             read its environment",
            std::io::Error::last_os_error()
        );
    }
}

/// The Landlock ABI of this kernel, 0 without Landlock.
pub fn kernel_abi() -> u32 {
    landlock::abi()
}

/// What the sandbox does for the commands of a run.
enum State {
    /// Commands are confined by these rules.
    Confined(Arc<Prepared>),
    /// Commands run unconfined, for this reason (said once per run).
    Unconfined(String),
    /// Commands are refused, for this reason and with how to proceed.
    Refused(String),
}

/// A run's sandbox: the policy, the places it lets commands write, and
/// the rules built from them once. Cheap to clone; set it on every
/// [`Command`](crate::Command) spawned for the model with
/// [`Command::sandbox`](crate::Command::sandbox).
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

struct Inner {
    policy: Policy,
    /// What commands inherit of Gantry's environment
    /// (`shellEnvironmentPolicy`; Gantry's own secrets never).
    env: EnvPolicy,
    /// The workspace roots.
    roots: Vec<PathBuf>,
    /// Where confined commands may write, existing or not.
    writable: Vec<PathBuf>,
    /// What the workspace's settings asked for and did not get.
    ignored: Vec<String>,
    abi: u32,
    namespaces: Namespaces,
    state: State,
    /// The run's proxy, where commands get a network of their own.
    proxy: Option<Arc<Proxy>>,
    /// Why the network is not what the settings asked for, when the
    /// machine cannot give it.
    network_note: Option<String>,
}

/// The layer under Landlock, for a confining sandbox.
#[derive(Debug, Clone)]
enum Namespaces {
    /// Every command gets its own namespaces, laid out so.
    Given(Layout),
    /// Not available here, for this reason: commands run under Landlock
    /// alone (or are refused, where `sandbox.require` says so).
    Missing(String),
    /// The sandbox does not confine.
    Off,
}

/// What commands lose where namespaces are missing, for the messages
/// that say so.
const WITHOUT_NAMESPACES: &str = "protected paths (`.git/config`, `.git/hooks`, `.gantry`, the \
     editors' and agents' configuration stay writable), hidden paths (keys and Gantry's own \
     state stay readable) and process isolation (commands see the user's other processes)";

impl Namespaces {
    /// What a sandbox of `policy` over these roots and writable places
    /// gets on this machine.
    fn for_policy(policy: &Policy, roots: &[PathBuf], writable: &[PathBuf]) -> Namespaces {
        if policy.mode == Mode::Off {
            return Namespaces::Off;
        }
        if !policy.namespaces {
            return Namespaces::Missing(format!("`{SETTINGS_KEY}.namespaces` is false"));
        }
        if crate::reaper::located().is_none() {
            return Namespaces::Missing(
                "no reaper runs the commands (it is what sets the namespaces up)".into(),
            );
        }
        match namespace::available() {
            Ok(()) => {
                let protected_roots: Vec<PathBuf> = roots
                    .iter()
                    .chain(&policy.writable_roots)
                    .cloned()
                    .collect();
                // A cache the user listed in `writableRoots` is shared.
                let caches: Vec<PathBuf> = match policy.mode {
                    Mode::WorkspaceWrite => policy
                        .caches
                        .iter()
                        .filter(|cache| !policy.writable_roots.contains(cache))
                        .cloned()
                        .collect(),
                    _ => Vec::new(),
                };
                Namespaces::Given(Layout::new(
                    &protected_roots,
                    writable,
                    &policy.protect,
                    &policy.hide,
                    &caches,
                    &policy.network,
                ))
            }
            Err(why) => Namespaces::Missing(format!(
                "this machine gives a process no user namespace ({why}: unprivileged user \
                 namespaces disabled, by AppArmor or a container's seccomp profile)"
            )),
        }
    }
}

impl Sandbox {
    /// The sandbox of `policy` for a workspace with these roots, on this
    /// kernel.
    pub fn new(policy: Policy, workspace_roots: &[PathBuf]) -> Sandbox {
        Self::on_kernel(policy, workspace_roots, kernel_abi())
    }

    /// As [`Sandbox::new`] for a kernel offering Landlock ABI `abi` (0:
    /// none): what Gantry would do there. Rules are only built when this
    /// kernel offers that ABI too.
    pub fn on_kernel(policy: Policy, workspace_roots: &[PathBuf], abi: u32) -> Sandbox {
        Self::build(
            policy,
            EnvPolicy::default(),
            workspace_roots,
            abi,
            Vec::new(),
        )
    }

    /// The sandbox of `policy`, remembering what of the workspace's
    /// settings was `ignored` (for `gantry status`).
    fn build(
        policy: Policy,
        env: EnvPolicy,
        workspace_roots: &[PathBuf],
        abi: u32,
        ignored: Vec<String>,
    ) -> Sandbox {
        let writable = match policy.mode {
            Mode::WorkspaceWrite => workspace_roots
                .iter()
                .cloned()
                .chain([std::env::temp_dir(), PathBuf::from("/dev/shm")])
                .chain(policy.writable_roots.iter().cloned())
                .chain(policy.caches.iter().cloned())
                .collect(),
            Mode::ReadOnly | Mode::Off => Vec::new(),
        };
        Self::assemble(Inner {
            policy,
            env,
            roots: workspace_roots.to_vec(),
            writable,
            ignored,
            abi,
            namespaces: Namespaces::Off,
            state: State::Unconfined(String::new()),
            proxy: None,
            network_note: None,
        })
    }

    /// The sandbox of `inner`'s policy, roots and writable places, its
    /// namespaces, network and state decided here (those given are
    /// replaced; a proxy given is kept where commands have their own
    /// network).
    fn assemble(mut inner: Inner) -> Sandbox {
        inner.namespaces = Namespaces::for_policy(&inner.policy, &inner.roots, &inner.writable);
        // The default proxy needs the command's own network namespace;
        // without one it gives way to no network (or, on a kernel that
        // cannot deny it, the whole network), said in `gantry status`.
        if let (Namespaces::Missing(why), Network::Default) =
            (&inner.namespaces, &inner.policy.network)
            && inner.policy.mode != Mode::Off
        {
            let (network, what) = if inner.abi >= NET_ABI {
                (Network::Deny, "no network at all")
            } else {
                (
                    Network::Allow,
                    "the whole network (this kernel's Landlock cannot deny it)",
                )
            };
            inner.network_note = Some(format!(
                "commands get {what} instead of the proxy (which needs their own network                  namespace: {why}); set `{SETTINGS_KEY}.network` to \"deny\" or \"allow\" to                  choose"
            ));
            inner.policy.network = network;
            inner.namespaces = Namespaces::for_policy(&inner.policy, &inner.roots, &inner.writable);
        }
        inner.state = decide(&inner.policy, &inner.writable, inner.abi, &inner.namespaces);
        inner.proxy = match (
            &inner.state,
            &inner.namespaces,
            inner.policy.network.proxy(),
        ) {
            (State::Confined(_), Namespaces::Given(_), Some(policy)) => inner
                .proxy
                .take()
                .or_else(|| Some(Proxy::new(policy, true))),
            _ => None,
        };
        Sandbox {
            inner: Arc::new(inner),
        }
    }

    /// The run's sandbox, built from its settings and workspace the first
    /// time a family asks, and the same value after that. An unconfined
    /// sandbox (`mode: off`, or Landlock missing) is said once per run as
    /// a notice.
    pub async fn of(run: &Run) -> Sandbox {
        let started = run
            .resource_or_start::<RunSandbox, std::convert::Infallible, _>("", || async {
                let sandbox = Sandbox::for_run(run);
                if let State::Unconfined(why) = &sandbox.inner.state {
                    run.notify(format!("the sandbox is off: {why}"));
                }
                if let Some(why) = sandbox.without_namespaces() {
                    run.notify(format!("the sandbox is weaker here: {why}"));
                }
                if let Some(note) = &sandbox.inner.network_note {
                    run.notify(format!("the sandbox's network: {note}"));
                }
                Ok(Arc::new(RunSandbox(sandbox)))
            })
            .await;
        match started {
            Ok(found) => found.0.clone(),
            Err(never) => match never {},
        }
    }

    /// The sandbox a run's settings and workspace describe (not cached:
    /// see [`Sandbox::of`]).
    pub fn for_run(run: &Run) -> Sandbox {
        Sandbox::of_settings(run.settings(), run.workspace())
    }

    /// The sandbox `settings` describe for `workspace`: for what is
    /// started or wired before a run exists (a discovery command, the
    /// language servers' supervisor). A `sandbox` or
    /// `shellEnvironmentPolicy` section of the wrong shape refuses every
    /// command rather than guess what the user meant to forbid or hide.
    pub fn of_settings(settings: &Settings, workspace: &Workspace) -> Sandbox {
        let workspace_roots: Vec<PathBuf> = std::iter::once(workspace.root())
            .chain(workspace.extra_roots())
            .map(Path::to_path_buf)
            .collect();
        let env = EnvPolicy::of_settings(settings).map(|layered| layered.policy);
        match (Policy::from_settings(settings), env) {
            (Ok(layered), Ok(env)) => Sandbox::build(
                layered.policy,
                env,
                &workspace_roots,
                kernel_abi(),
                layered.ignored,
            ),
            (Err(error), _) | (_, Err(error)) => Sandbox {
                inner: Arc::new(Inner {
                    policy: Policy::default(),
                    env: EnvPolicy::default(),
                    roots: workspace_roots,
                    writable: Vec::new(),
                    ignored: Vec::new(),
                    abi: kernel_abi(),
                    namespaces: Namespaces::Off,
                    state: State::Refused(format!(
                        "the sandbox settings cannot be read, so commands are refused: {error}; \
                         fix the section"
                    )),
                    proxy: None,
                    network_note: None,
                }),
            },
        }
    }

    /// This sandbox without confinement, the environment policy kept: only
    /// for a command a person approved to run outside the sandbox
    /// (`shell` with `sandbox: false`), never for anything Gantry starts
    /// on its own.
    pub fn lifted(&self) -> Sandbox {
        let Inner {
            policy,
            env,
            roots,
            ignored,
            abi,
            ..
        } = &*self.inner;
        Sandbox {
            inner: Arc::new(Inner {
                policy: Policy {
                    mode: Mode::Off,
                    mode_chosen: true,
                    ..policy.clone()
                },
                env: env.clone(),
                roots: roots.clone(),
                writable: Vec::new(),
                ignored: ignored.clone(),
                abi: *abi,
                namespaces: Namespaces::Off,
                state: State::Unconfined("a person approved running it outside the sandbox".into()),
                proxy: None,
                network_note: None,
            }),
        }
    }

    /// What commands inherit of Gantry's environment.
    pub fn environment(&self) -> &EnvPolicy {
        &self.inner.env
    }

    /// This sandbox with `place` writable too, in any confining mode: for
    /// Gantry's own directories a program it starts must write (a kernel's
    /// environment in the state directory), never the user's. The rules
    /// are built again; a sandbox that does not confine is returned as is.
    pub fn also_writable(&self, place: &Path) -> Sandbox {
        if !self.confines() {
            return self.clone();
        }
        let Inner {
            policy,
            env,
            roots,
            writable,
            ignored,
            abi,
            ..
        } = &*self.inner;
        let mut writable = writable.clone();
        writable.push(place.to_path_buf());
        // The same run, the same proxy (its answers, its record).
        Self::assemble(Inner {
            policy: policy.clone(),
            env: env.clone(),
            roots: roots.clone(),
            writable,
            ignored: ignored.clone(),
            abi: *abi,
            namespaces: Namespaces::Off,
            state: State::Unconfined(String::new()),
            proxy: self.inner.proxy.clone(),
            network_note: None,
        })
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// Whether commands run confined.
    pub fn confines(&self) -> bool {
        matches!(self.inner.state, State::Confined(_))
    }

    /// The run's proxy, when commands get a network of their own.
    pub(crate) fn proxy(&self) -> Option<&Arc<Proxy>> {
        self.inner.proxy.as_ref()
    }

    /// Whether each command gets a network of its own (loopback, and the
    /// proxy): a program Gantry talks to over TCP must then dial Gantry
    /// ([`Command::listen_inside`](crate::Command::listen_inside)), since
    /// nothing outside reaches its loopback.
    pub fn own_network(&self) -> bool {
        self.inner.proxy.is_some()
    }

    /// Why commands are refused, when they are.
    pub fn refusal(&self) -> Option<&str> {
        match &self.inner.state {
            State::Refused(why) => Some(why),
            _ => None,
        }
    }

    /// Where confined commands may write (beside the devices).
    pub fn writable(&self) -> &[PathBuf] {
        &self.inner.writable
    }

    /// Refuses, with the reason, a program that needs loopback TCP (a
    /// debug adapter that talks to its debuggee over a port) when
    /// `network: false` denies it.
    pub fn needs_loopback_tcp(&self, what: &str) -> Result<(), String> {
        if self.inner.policy.network.sockets() || !self.confines() {
            return Ok(());
        }
        Err(format!(
            "{what} talks over loopback TCP, which `sandbox.network: false` denies; allow the \
             network in the `{SETTINGS_KEY}` settings to use it"
        ))
    }

    /// The plan of a confined command's namespaces, made now (what of the
    /// protected and hidden paths exists), in a memfd for its reaper;
    /// `None` where the sandbox does not confine or namespaces are
    /// missing.
    pub(crate) fn namespace_plan(
        &self,
        inbound: &[u16],
    ) -> std::io::Result<Option<(std::os::fd::OwnedFd, paths::Spawn)>> {
        match (&self.inner.state, &self.inner.namespaces) {
            (State::Confined(_), Namespaces::Given(layout)) => {
                let spawn = layout.spawn(inbound);
                Ok(Some((spawn.plan.to_memfd()?, spawn)))
            }
            _ => Ok(None),
        }
    }

    /// Whether `path` is protected: a command may not change it even
    /// where it may write (for the explanation of a refusal).
    pub fn protects(&self, path: &Path) -> bool {
        match &self.inner.namespaces {
            Namespaces::Given(layout) => layout.protects(path),
            _ => false,
        }
    }

    /// The hidden path `path` is, or lies beneath, if any.
    pub(crate) fn hidden_above(&self, path: &Path) -> Option<PathBuf> {
        match (&self.inner.state, &self.inner.namespaces) {
            (State::Confined(_), Namespaces::Given(layout)) => layout
                .hidden()
                .iter()
                .find(|hidden| path.starts_with(hidden))
                .cloned(),
            _ => None,
        }
    }

    /// The protected paths as named inside a root (`.git/config`), for
    /// messages.
    pub(crate) fn protected_names(&self) -> Vec<String> {
        match &self.inner.namespaces {
            Namespaces::Given(_) => PROTECTED
                .iter()
                .map(|name| name.to_string())
                .chain(
                    self.inner
                        .policy
                        .protect
                        .iter()
                        .filter(|path| path.is_relative())
                        .map(|path| path.display().to_string()),
                )
                // Pinned (it holds protected paths), named last so that
                // what is inside it is named first.
                .chain(paths::PINNED.iter().map(|name| name.to_string()))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The rules a spawn applies (`None`: unconfined), or the refusal
    /// of the spawn, as its error.
    pub(crate) fn confinement(&self) -> std::io::Result<Option<&Arc<Prepared>>> {
        match &self.inner.state {
            State::Confined(prepared) => Ok(Some(prepared)),
            State::Unconfined(_) => Ok(None),
            State::Refused(why) => Err({
                gantry_core::runlog::record_in_call(
                    "sandbox.refused",
                    serde_json::json!({ "what": "spawn", "detail": why }),
                );
                std::io::Error::new(std::io::ErrorKind::PermissionDenied, Refusal(why.clone()))
            }),
        }
    }
}

/// The sandbox of no settings and no workspace: the default policy, so
/// commands write only the temp directory, the caches and the devices.
/// For a library user or a test with no run; a run's commands take
/// [`Sandbox::of`].
impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::new(Policy::default(), &[])
    }
}

impl fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sandbox")
            .field("mode", &self.inner.policy.mode)
            .field("network", &self.inner.policy.network)
            .field("confines", &self.confines())
            .finish()
    }
}

/// The error of a spawn the sandbox refused: why, and how to proceed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

impl Refusal {
    /// The refusal an error of [`Command::spawn`](crate::Command::spawn)
    /// carries, if the sandbox refused the command.
    pub fn of(error: &std::io::Error) -> Option<&Refusal> {
        error.get_ref()?.downcast_ref()
    }
}

/// How to run commands unconfined, for refusals.
const HOW_TO_TURN_OFF: &str = "to run commands unconfined instead, set \"sandbox\": {\"mode\": \
     \"off\"} in ~/.gantry/settings.json";

/// What the sandbox does on a kernel offering `abi`.
fn decide(policy: &Policy, writable: &[PathBuf], abi: u32, namespaces: &Namespaces) -> State {
    if policy.mode == Mode::Off {
        return State::Unconfined(
            "`sandbox.mode` is `off`, so commands run with Gantry's full rights".into(),
        );
    }
    let network_abi_missing = !policy.network.sockets() && abi < NET_ABI;
    if abi < FS_ABI && !policy.mode_chosen && policy.network.sockets() {
        return State::Unconfined(format!(
            "{} (the sandbox needs Landlock ABI {FS_ABI}, Linux 6.2), so commands run with \
             Gantry's full rights; this is the default only where Landlock is missing",
            match abi {
                0 => "this kernel has no Landlock".to_string(),
                abi => format!("this kernel offers Landlock ABI {abi} only"),
            }
        ));
    }
    if abi < FS_ABI || network_abi_missing {
        let (needed, what) = if abi < FS_ABI {
            (FS_ABI, format!("`sandbox.mode: {}`", policy.mode))
        } else {
            (NET_ABI, "`sandbox.network: false`".to_string())
        };
        return State::Refused(format!(
            "the sandbox cannot confine commands here, so they are refused: {what} needs Landlock ABI {needed} and this kernel offers {}; \
             {HOW_TO_TURN_OFF}",
            if abi == 0 {
                "none".to_string()
            } else {
                abi.to_string()
            }
        ));
    }
    if let (Namespaces::Missing(why), true) = (namespaces, policy.require_namespaces) {
        return State::Refused(format!(
            "the sandbox cannot confine commands as `{SETTINGS_KEY}.require` asks, so they are \
             refused: {why}; without namespaces commands would lose {WITHOUT_NAMESPACES}. Allow \
             unprivileged user namespaces (on Ubuntu: `sysctl \
             kernel.apparmor_restrict_unprivileged_userns=0`), or remove \"namespaces\" from \
             `{SETTINGS_KEY}.require` to run under Landlock alone"
        ));
    }
    if let (Namespaces::Missing(why), Some(_)) = (namespaces, policy.network.proxy()) {
        return State::Refused(format!(
            "the sandbox cannot confine commands as `{SETTINGS_KEY}.network` asks, so they are \
             refused: the proxy needs each command's own network namespace, and {why}. Allow \
             unprivileged user namespaces (on Ubuntu: `sysctl \
             kernel.apparmor_restrict_unprivileged_userns=0`), or set `{SETTINGS_KEY}.network` \
             to \"deny\" (no network) or \"allow\" (the whole network)"
        ));
    }
    match Prepared::build(writable, policy.network.sockets(), abi) {
        Ok(prepared) => State::Confined(Arc::new(prepared)),
        Err(error) => State::Refused(format!(
            "the sandbox cannot confine commands here, so they are refused: the sandbox could not be built ({error}); {HOW_TO_TURN_OFF}"
        )),
    }
}

/// The run's sandbox as a run resource, so every family shares one.
struct RunSandbox(Sandbox);

#[async_trait]
impl Resource for RunSandbox {
    fn name(&self) -> String {
        "sandbox".into()
    }

    async fn shutdown(&self) {}

    fn kill_now(&self) {}

    fn in_run_log(&self) -> bool {
        false
    }

    /// The mode, and in the proxy mode the hosts reached and refused so
    /// far in the run.
    fn status(&self) -> String {
        let mut line = self.0.status().remove(0);
        if let Some(proxy) = self.0.proxy() {
            for part in proxy.status() {
                line.push_str("; ");
                line.push_str(&part);
            }
        }
        line
    }
}

#[cfg(test)]
mod tests;
