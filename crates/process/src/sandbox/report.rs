//! What the sandbox says: to the model, a refusal read from a command's
//! output, the connections the network policy refused and what was taken
//! out of protected places, each with the ways forward; to the person,
//! `gantry status`'s lines.

use std::path::{Path, PathBuf};

use super::{
    DEVICES, Inner, Mode, Namespaces, PROTECTED, SETTINGS_KEY, Sandbox, State, WITHOUT_NAMESPACES,
    explain, shown,
};
use crate::network;

impl Sandbox {
    /// What the sandbox refused, read from a confined command's output
    /// (`Permission denied`, `Read-only file system` or `EACCES` naming a
    /// path outside the writable places, or a refused connection under
    /// `network: false`), with the two ways forward; `None` when the output
    /// shows no such refusal.
    pub fn explain(&self, output: &str) -> Option<String> {
        if !self.confines() {
            return None;
        }
        let explained = explain::explain(self, output)?;
        gantry_core::runlog::record_in_call(
            "sandbox.refused",
            serde_json::json!({ "what": "file", "detail": explained }),
        );
        Some(explained)
    }

    /// Lines for `gantry status`: the mode and what it allows, or why
    /// commands run unconfined or are refused; what the workspace's
    /// settings asked for and did not get.
    pub fn status(&self) -> Vec<String> {
        let Inner {
            policy,
            ignored,
            abi,
            state,
            ..
        } = &*self.inner;
        let kernel = match abi {
            0 => "this kernel has no Landlock".to_string(),
            abi => format!("Landlock ABI {abi}"),
        };
        let mut lines = vec![match state {
            State::Confined(_) => format!(
                "sandbox: {} ({kernel}), network {}; reads are not confined (Landlock has no \
                 deny rules)",
                policy.mode, policy.network
            ),
            State::Unconfined(why) => format!("sandbox: off: {why}"),
            State::Refused(why) => format!("sandbox: {why}"),
        }];
        if let Some(note) = &self.inner.network_note {
            lines.push(format!("sandbox: {note}"));
        }
        if let Some(proxy) = &self.inner.proxy {
            lines.push(format!(
                "sandbox: each command has a network of its own: its loopback works (its own \
                 servers and their clients); the rest only through Gantry's proxy, announced in \
                 HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (127.0.0.1:{}); hosts go in \
                 `{SETTINGS_KEY}.network.allow`, \"allow always\" answers in {}",
                network::PROXY_PORT,
                network::proxy::allowlist_file().display()
            ));
            lines.extend(
                proxy
                    .status()
                    .into_iter()
                    .map(|line| format!("sandbox: {line}")),
            );
        }
        match (state, &self.inner.namespaces) {
            (State::Confined(_), Namespaces::Given(layout)) => {
                lines.push(format!(
                    "sandbox: each command runs in its own user, mount, PID and IPC namespaces: \
                     it sees its own processes only; read-only inside every workspace root and \
                     `writableRoots`: {}{} (`{SETTINGS_KEY}.protect` adds); hidden (read as \
                     empty): {} (`{SETTINGS_KEY}.hide` adds)",
                    PROTECTED.join(", "),
                    if policy.protect.is_empty() {
                        String::new()
                    } else {
                        format!(", {}", shown(&policy.protect))
                    },
                    shown(layout.hidden()),
                ));
                if !layout.private_caches().is_empty() {
                    let caches: Vec<PathBuf> = layout
                        .private_caches()
                        .iter()
                        .map(|(cache, _)| cache.clone())
                        .collect();
                    lines.push(format!(
                        "sandbox: build caches seen through an overlay of this workspace's: {} \
                         (commands read what is there; what they write lands in Gantry's state \
                         directory, never where the user's own tools read; to share a cache \
                         writable, list it in `{SETTINGS_KEY}.writableRoots`)",
                        shown(&caches)
                    ));
                }
                if !layout.not_hidden.is_empty() {
                    lines.push(format!(
                        "sandbox: not hidden, since a workspace root lies beneath: {}",
                        shown(&layout.not_hidden)
                    ));
                }
            }
            _ => {
                if let Some(why) = self.without_namespaces() {
                    lines.push(format!("sandbox: {why}"));
                }
            }
        }
        if matches!(state, State::Confined(_)) {
            let writable = match policy.mode {
                Mode::WorkspaceWrite => format!("{}, ", shown(&self.inner.writable)),
                _ => String::new(),
            };
            lines.push(format!(
                "sandbox: commands may write {writable}{}",
                DEVICES.join(", ")
            ));
            if policy.mode == Mode::WorkspaceWrite {
                lines.push(format!(
                    "sandbox: writable caches (`{SETTINGS_KEY}.caches` to change): {}",
                    shown(&policy.caches)
                ));
            }
        }
        lines.push(format!(
            "sandbox: no exemption: every process Gantry starts runs in it (commands, kernels \
             and the making of their environments, debug adapters, language servers, project \
             checkers, every probe of a program, discovered commands, bridged servers), with the \
             environment `shellEnvironmentPolicy` allows and never Gantry's own secrets; a \
             language server writes only its own cache folder in Gantry's cache directory \
             besides what commands may write{}",
            match state {
                State::Confined(prepared) => format!("; {}", prepared.describe()),
                _ => String::new(),
            }
        ));
        if !ignored.is_empty() {
            lines.push(format!(
                "sandbox: ignored from the workspace's settings: {}; a workspace's settings may \
                 only tighten the sandbox unless `trustedFolders` in ~/.gantry/settings.json \
                 lists the folder",
                ignored.join("; ")
            ));
        }
        lines
    }

    /// Moves out of the workspace what a command created at protected
    /// paths that did not exist when it started (`created`: see
    /// [`Child::protected_created`](crate::Child::protected_created)), into
    /// Gantry's state directory, and says so for the command's result;
    /// `None` when it created none.
    pub fn quarantine(&self, created: &[PathBuf]) -> Option<String> {
        if created.is_empty() {
            return None;
        }
        let root = self
            .inner
            .roots
            .first()
            .map(PathBuf::as_path)
            .unwrap_or(Path::new("/"));
        let moved: Vec<String> = created
            .iter()
            .map(|path| match gantry_core::state::quarantine(root, path) {
                Ok(Some(to)) => format!("`{}` (moved to {})", path.display(), to.display()),
                Ok(None) => format!("`{}` (removed: it could not be moved)", path.display()),
                Err(e) => format!("`{}` (could not be moved out: {e})", path.display()),
            })
            .collect();
        Some(format!(
            "[sandbox] The command created {}, which is protected: programs outside the sandbox \
             act on such paths later (git, editors, agents), so Gantry took it out of the \
             workspace. Review it; if it is wanted, ask the user to put it back.",
            moved.join(", ")
        ))
    }

    /// The connections the network policy refused to a command (see
    /// [`Child::network_refused`](crate::Child::network_refused)), with
    /// the ways forward, for its result; `None` when none was.
    pub fn network_report(refused: &[String]) -> Option<String> {
        if refused.is_empty() {
            return None;
        }
        for destination in refused {
            gantry_core::runlog::record_in_call(
                "sandbox.refused",
                serde_json::json!({ "what": "network", "detail": format!("a connection to {destination}"), "host": destination }),
            );
        }
        Some(format!(
            "[sandbox] The network policy refused the command's connection to {}. Commands \
             reach only the hosts in `{SETTINGS_KEY}.network.allow`: ask the user to add the \
             host there, in ~/.gantry/settings.json (`\"example.org\"`, `\"*.example.org\"`, \
             `\"example.org:8443\"`), or to approve running the command with `sandbox: false`. \
             Do not retry the same connection before then.",
            refused.join(", ")
        ))
    }

    /// Why commands run without namespaces, when they do.
    pub fn without_namespaces(&self) -> Option<String> {
        match (&self.inner.state, &self.inner.namespaces) {
            (State::Confined(_), Namespaces::Missing(why)) => Some(format!(
                "commands run under Landlock alone: {why}; they lose {WITHOUT_NAMESPACES}. Set \
                 `{SETTINGS_KEY}.require: [\"namespaces\"]` to refuse them instead"
            )),
            _ => None,
        }
    }
}
