//! The sandbox's policy as the settings describe it: the mode, the
//! places commands may write, what is hidden, the network, what a
//! workspace's settings may and may not change (`Policy::layered`), and
//! the check `gantry status` reports. `mod.rs` turns a policy into the
//! run's [`Sandbox`](super::Sandbox).

use std::fmt;
use std::path::PathBuf;

use gantry_core::settings::Settings;
use serde::Deserialize;

use super::SETTINGS_KEY;
use crate::network::{self, Network, NetworkSetting};

/// What a confined command may write, loosest last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Nothing but the [`DEVICES`].
    ReadOnly,
    /// The workspace roots, the temp directory, the build caches and
    /// `writableRoots` (the default).
    #[default]
    WorkspaceWrite,
    /// Not confined at all.
    Off,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::ReadOnly => "read-only",
            Mode::WorkspaceWrite => "workspace-write",
            Mode::Off => "off",
        })
    }
}

/// The `sandbox` settings section of one file, as written; every field is
/// optional so a workspace's section can be told apart from the user's
/// field by field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxSettings {
    /// `workspace-write` (default), `read-only` or `off`.
    pub mode: Option<Mode>,
    /// Directories writable besides the workspace, the temp directory and
    /// the caches (absolute, or `~/`).
    pub writable_roots: Option<Vec<String>>,
    /// `"deny"`, `"allow"`, or the proxy's allowlist (the default, with
    /// nothing listed): see [`crate::network`].
    pub network: Option<NetworkSetting>,
    /// The build caches kept writable, replacing [`default_caches`]
    /// (`[]`: none).
    pub caches: Option<Vec<String>>,
    /// Paths kept read-only inside every writable root, besides
    /// [`paths::PROTECTED`]: relative (to each root) or absolute (`~/`).
    /// A workspace may only add.
    pub protect: Option<Vec<String>>,
    /// Paths a command cannot read, besides [`paths::default_hidden`]
    /// (absolute, or `~/`). A workspace may only add.
    pub hide: Option<Vec<String>>,
    /// Protections without which commands are refused rather than run
    /// less confined: `"namespaces"`. A workspace may only add.
    pub require: Option<Vec<Requirement>>,
    /// `false` runs commands under Landlock alone, without their own
    /// namespaces (for a tool that cannot run in them); said in `gantry
    /// status`. Only the user's settings (or a trusted folder's) turn
    /// them off.
    pub namespaces: Option<bool>,
}

/// A protection `sandbox.require` can insist on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Requirement {
    /// The command's own user, mount, PID and IPC namespaces: protected
    /// and hidden paths, its own processes only.
    Namespaces,
}

/// The sandbox the settings ask for, before it meets a kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The mode.
    pub mode: Mode,
    /// Whether a settings file chose the mode (where Landlock is missing,
    /// only the default gives way to `off`).
    pub mode_chosen: bool,
    /// `writableRoots`, resolved.
    pub writable_roots: Vec<PathBuf>,
    /// The caches kept writable, resolved.
    pub caches: Vec<PathBuf>,
    /// The network commands get.
    pub network: Network,
    /// `protect` beyond the defaults, as written (relative or resolved).
    pub protect: Vec<PathBuf>,
    /// `hide` beyond the defaults, resolved.
    pub hide: Vec<PathBuf>,
    /// Whether commands are refused where namespaces are not available.
    pub require_namespaces: bool,
    /// Whether commands get their own namespaces where the machine gives
    /// them.
    pub namespaces: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            mode: Mode::default(),
            mode_chosen: false,
            writable_roots: Vec::new(),
            caches: default_caches(),
            network: Network::default(),
            protect: Vec::new(),
            hide: Vec::new(),
            require_namespaces: false,
            namespaces: true,
        }
    }
}

/// A policy from the two levels of settings, and what of the workspace's
/// was ignored.
#[derive(Debug, Clone)]
pub struct Layered {
    /// The policy in force.
    pub policy: Policy,
    /// Each workspace field that would have loosened the sandbox, with why.
    pub ignored: Vec<String>,
}

impl Policy {
    /// The user's section overlaid with the workspace's (SPEC §3). A
    /// trusted workspace wins field by field; any other may only tighten:
    /// a stricter mode, `network: false`, fewer caches. A looser mode,
    /// `network: true` over the user's `false`, `writableRoots` and caches
    /// the user's list lacks are ignored and listed.
    pub fn layered(
        user: Option<SandboxSettings>,
        workspace: Option<SandboxSettings>,
        workspace_trusted: bool,
    ) -> Result<Layered, String> {
        let user = user.unwrap_or_default();
        let resolve_network = |setting: &Option<NetworkSetting>| {
            setting.as_ref().map(NetworkSetting::resolve).transpose()
        };
        let user_network = resolve_network(&user.network)?.unwrap_or_default();
        let workspace_network = match &workspace {
            Some(workspace) => resolve_network(&workspace.network)?,
            None => None,
        };
        let (network, mut ignored) =
            network::layered(user_network, workspace_network, workspace_trusted);
        let mut policy = Policy {
            mode: user.mode.unwrap_or_default(),
            mode_chosen: user.mode.is_some(),
            writable_roots: resolve_all(user.writable_roots.unwrap_or_default()),
            caches: user.caches.map(resolve_all).unwrap_or_else(default_caches),
            network,
            protect: resolve_all(user.protect.unwrap_or_default()),
            hide: resolve_all(user.hide.unwrap_or_default()),
            require_namespaces: user
                .require
                .is_some_and(|required| required.contains(&Requirement::Namespaces)),
            namespaces: user.namespaces.unwrap_or(true),
        };
        let Some(workspace) = workspace else {
            return Ok(Layered { policy, ignored });
        };
        // What only tightens is honoured from any workspace, trusted or
        // not; nothing a workspace says removes a protection.
        policy
            .protect
            .extend(resolve_all(workspace.protect.clone().unwrap_or_default()));
        policy
            .hide
            .extend(resolve_all(workspace.hide.clone().unwrap_or_default()));
        policy.require_namespaces |= workspace
            .require
            .as_ref()
            .is_some_and(|required| required.contains(&Requirement::Namespaces));
        if workspace_trusted {
            if let Some(mode) = workspace.mode {
                policy.mode = mode;
                policy.mode_chosen = true;
            }
            if let Some(roots) = workspace.writable_roots {
                policy.writable_roots = resolve_all(roots);
            }
            if let Some(caches) = workspace.caches {
                policy.caches = resolve_all(caches);
            }
            policy.namespaces = workspace.namespaces.unwrap_or(policy.namespaces);
            return Ok(Layered { policy, ignored });
        }
        match workspace.namespaces {
            Some(false) if policy.namespaces => {
                ignored.push("namespaces: false (only the user's settings turn them off)".into())
            }
            Some(namespaces) => policy.namespaces = namespaces,
            None => {}
        }
        match workspace.mode {
            Some(looser) if looser > policy.mode => ignored.push(format!(
                "mode: {looser} (looser than the user's `{}`)",
                policy.mode
            )),
            Some(stricter) => {
                policy.mode = stricter;
                policy.mode_chosen = true;
            }
            None => {}
        }
        if let Some(roots) = workspace.writable_roots.filter(|roots| !roots.is_empty()) {
            ignored.push(format!(
                "writableRoots: {} (only the user's settings widen what commands may write)",
                roots.join(", ")
            ));
        }
        if let Some(caches) = workspace.caches {
            let (kept, extra): (Vec<PathBuf>, Vec<PathBuf>) = resolve_all(caches)
                .into_iter()
                .partition(|cache| policy.caches.contains(cache));
            if !extra.is_empty() {
                ignored.push(format!(
                    "caches: {} (not among the user's caches)",
                    shown(&extra)
                ));
            }
            policy.caches = kept;
        }
        Ok(Layered { policy, ignored })
    }

    /// The policy of a run's settings; an error names the section and the
    /// files when a level's section has the wrong shape.
    pub fn from_settings(settings: &Settings) -> Result<Layered, String> {
        let user = settings
            .user_section::<SandboxSettings>(SETTINGS_KEY)
            .map_err(|e| e.to_string())?;
        let workspace = settings
            .workspace_section::<SandboxSettings>(SETTINGS_KEY)
            .map_err(|e| e.to_string())?;
        let mut layered = Policy::layered(user, workspace, settings.workspace_trusted())?;
        // What the user answered "allow always" to, kept beside their
        // settings (user level: a workspace cannot write there).
        let file = network::proxy::allowlist_file();
        let remembered = network::proxy::remembered(&file)?
            .iter()
            .map(|entry| {
                network::HostRule::parse(entry).map_err(|e| format!("{}: {e}", file.display()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if !remembered.is_empty()
            && let Some(mut proxy) = layered.policy.network.proxy()
        {
            proxy.allow.extend(remembered);
            layered.policy.network = Network::Proxied(proxy);
        }
        Ok(layered)
    }
}

/// `~/` expanded; relative paths, which would mean a different place for
/// every command's directory, are kept as written and never match.
fn resolve(path: &str) -> PathBuf {
    match path.strip_prefix("~/") {
        Some(rest) => dirs::home_dir()
            .map(|home| home.join(rest))
            .unwrap_or_else(|| PathBuf::from(path)),
        None => PathBuf::from(path),
    }
}

fn resolve_all(paths: Vec<String>) -> Vec<PathBuf> {
    paths.iter().map(|path| resolve(path)).collect()
}

/// Paths for a message, comma-separated.
pub(super) fn shown(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "none".into();
    }
    paths
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The user's cache folder: `$XDG_CACHE_HOME`, else `~/.cache`.
pub(super) fn cache_home() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|home| home.join(".cache")))
}

/// The caches builds and installs write, writable by default in
/// `workspace-write`: `$XDG_CACHE_HOME` or `~/.cache` (pip, go-build,
/// many more), Cargo's registry and git checkouts (under `$CARGO_HOME`),
/// npm's cache, and Go's module cache (`$GOMODCACHE`, else under
/// `$GOPATH` or `~/go`).
pub fn default_caches() -> Vec<PathBuf> {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    };
    let Some(home) = dirs::home_dir() else {
        return Vec::new();
    };
    let cargo = env("CARGO_HOME").unwrap_or_else(|| home.join(".cargo"));
    let go_modules = env("GOMODCACHE").unwrap_or_else(|| {
        env("GOPATH")
            .and_then(|path| std::env::split_paths(&path).next())
            .unwrap_or_else(|| home.join("go"))
            .join("pkg/mod")
    });
    vec![
        cache_home().unwrap_or_else(|| home.join(".cache")),
        cargo.join("registry"),
        cargo.join("git"),
        home.join(".npm"),
        go_modules,
    ]
}

/// The sandbox's lines and warnings, for a family that reports it: its
/// settings check (a section of the wrong shape, a loosening the
/// workspace may not make).
pub fn check(settings: &Settings) -> Vec<String> {
    let layered = match Policy::from_settings(settings) {
        Err(error) => return vec![error],
        Ok(layered) => layered,
    };
    let mut warnings: Vec<String> = layered
        .policy
        .writable_roots
        .iter()
        .chain(&layered.policy.caches)
        .filter(|path| !path.is_absolute())
        .map(|path| {
            format!(
                "`{SETTINGS_KEY}`: `{}` is not an absolute path (or `~/...`), so it is not \
                 writable",
                path.display()
            )
        })
        .collect();
    if !layered.ignored.is_empty() {
        let file = settings.workspace_file_shown();
        warnings.push(format!(
            "ignored from {file}: `{SETTINGS_KEY}` {}; a workspace's settings may only tighten \
             the sandbox unless `trustedFolders` in ~/.gantry/settings.json lists the folder",
            layered.ignored.join("; ")
        ));
    }
    warnings
}
