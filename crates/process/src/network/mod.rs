//! The network a confined command gets (`sandbox.network`, SPEC §2):
//! none, the host's whole network, or — the default — a network of its
//! own whose only way out is a proxy Gantry runs for the run, which lets
//! through the hosts the user listed and asks a person about the others.
//!
//! The command's network namespace holds only loopback: a test server it
//! starts and its clients work, nothing else is reachable directly, the
//! host's loopback included, and there is no resolver (names are resolved
//! by the proxy). Its reaper listens on [`PROXY_PORT`] of that loopback
//! (and on each of `hostPorts`) before the command starts and hands the
//! listening sockets to Gantry over its control socket; Gantry accepts
//! the command's connections on them directly, so a byte crosses one
//! proxy hop and no relay ([`proxy`]).

pub mod proxy;

use std::fmt;
use std::net::IpAddr;

use serde::Deserialize;

pub use self::proxy::Proxy;

/// The port of the proxy on a command's own loopback. Fixed: the
/// namespace is the command's alone, so it clashes with nothing of the
/// host's; the common development ports (3000, 5000, 8000, 8080) stay
/// free for the command's own servers.
pub const PROXY_PORT: u16 = 3128;

/// The network a confined command gets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    /// No socket but Unix ones (Landlock and seccomp).
    Deny,
    /// The host's network, as Gantry's own.
    Allow,
    /// A network of its own, out through the run's proxy only (the
    /// default, with nothing listed).
    Proxied(ProxyPolicy),
    /// The default: the proxy with an empty allowlist, asking a person
    /// about each new host where one can answer. Kept apart from
    /// [`Network::Proxied`] because, where a command cannot have its own
    /// network, the default gives way to `Deny` while a proxy the user
    /// wrote refuses commands.
    #[default]
    Default,
}

impl Network {
    /// Whether the command may open internet sockets at all (Landlock's
    /// TCP rules and the seccomp filter stand aside).
    pub fn sockets(&self) -> bool {
        !matches!(self, Network::Deny)
    }

    /// The proxy's policy, in the proxied modes.
    pub fn proxy(&self) -> Option<ProxyPolicy> {
        match self {
            Network::Proxied(policy) => Some(policy.clone()),
            Network::Default => Some(ProxyPolicy::default()),
            _ => None,
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Network::Deny => f.write_str("denied"),
            Network::Allow => f.write_str("the host's whole network"),
            Network::Default => write!(f, "through the run's proxy ({})", ProxyPolicy::default()),
            Network::Proxied(policy) => write!(f, "through the run's proxy ({policy})"),
        }
    }
}

/// The proxy mode's policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyPolicy {
    /// The hosts a command may reach.
    pub allow: Vec<HostRule>,
    /// Whether a connection to another host asks a person (where one is
    /// reachable); refused otherwise.
    pub ask: bool,
    /// Ports of the host's loopback a command reaches as its own
    /// (`127.0.0.1:PORT` inside is the host's).
    pub host_ports: Vec<u16>,
}

impl Default for ProxyPolicy {
    fn default() -> Self {
        ProxyPolicy {
            allow: Vec::new(),
            ask: true,
            host_ports: Vec::new(),
        }
    }
}

impl fmt::Display for ProxyPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.allow.as_slice() {
            [] => f.write_str("no host allowed")?,
            rules => {
                let shown: Vec<String> = rules.iter().map(ToString::to_string).collect();
                write!(f, "allowed: {}", shown.join(", "))?
            }
        }
        f.write_str(if self.ask {
            "; others asked about where a person can answer"
        } else {
            "; others refused"
        })?;
        if !self.host_ports.is_empty() {
            let ports: Vec<String> = self.host_ports.iter().map(u16::to_string).collect();
            write!(f, "; the host's loopback ports {}", ports.join(", "))?;
        }
        Ok(())
    }
}

/// One allowlist entry: `example.org`, `*.example.org`, an IP literal,
/// each with `:PORT` or `:*`; without a port, 80 and 443.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    host: HostPattern,
    ports: Ports,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// Exactly this name (lowercase, no trailing dot).
    Name(String),
    /// Any name below this one (`*.example.org`: `a.example.org`, not
    /// `example.org`).
    Below(String),
    /// This address, only when the command names it as an address.
    Address(IpAddr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ports {
    /// 80 and 443: the web's.
    Web,
    One(u16),
    Any,
}

/// Where a command asks to connect: a name or an address, and a port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Destination {
    /// The host as the command named it (lowercase, no trailing dot; an
    /// address as written).
    pub host: String,
    /// The port.
    pub port: u16,
}

impl Destination {
    /// `host` and `port`, normalised: lowercase, no trailing dot, an IPv6
    /// address without its brackets.
    pub fn new(host: &str, port: u16) -> Destination {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        Destination { host, port }
    }

    /// The address, when the command named one.
    pub fn address(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.address() {
            Some(IpAddr::V6(address)) => write!(f, "[{address}]:{}", self.port),
            _ => write!(f, "{}:{}", self.host, self.port),
        }
    }
}

impl HostRule {
    /// Reads an entry; the error says what was expected.
    pub fn parse(entry: &str) -> Result<HostRule, String> {
        let entry = entry.trim();
        let bad = |why: &str| {
            format!(
                "`{entry}`: {why} (expected `example.org`, `*.example.org` or an address, each \
                 optionally with `:PORT` or `:*`)"
            )
        };
        // `[v6]:port`, `v6` alone, or `host:port`.
        let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or_else(|| bad("an unclosed `[`"))?;
            (host, after.strip_prefix(':'))
        } else if entry.parse::<IpAddr>().is_ok() {
            (entry, None)
        } else {
            match entry.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (entry, None),
            }
        };
        let ports = match port {
            None => Ports::Web,
            Some("*") => Ports::Any,
            Some(port) => Ports::One(
                port.parse()
                    .ok()
                    .filter(|&port| port != 0)
                    .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?,
            ),
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let pattern = if let Ok(address) = host.parse::<IpAddr>() {
            HostPattern::Address(address)
        } else if let Some(below) = host.strip_prefix("*.") {
            HostPattern::Below(valid_name(below).ok_or_else(|| bad("not a host name"))?)
        } else {
            HostPattern::Name(valid_name(&host).ok_or_else(|| bad("not a host name"))?)
        };
        Ok(HostRule {
            host: pattern,
            ports,
        })
    }

    /// Whether the rule lets a command reach `to`. A name matches names
    /// only, an address addresses only: `10.0.0.1` in a request is
    /// allowed by `10.0.0.1`, never by a name that resolves to it.
    pub fn allows(&self, to: &Destination) -> bool {
        let port = match self.ports {
            Ports::Web => matches!(to.port, 80 | 443),
            Ports::One(port) => port == to.port,
            Ports::Any => true,
        };
        port && match (&self.host, to.address()) {
            (HostPattern::Address(address), Some(asked)) => *address == asked,
            (HostPattern::Name(name), None) => *name == to.host,
            (HostPattern::Below(parent), None) => to
                .host
                .strip_suffix(parent.as_str())
                .is_some_and(|label| label.len() > 1 && label.ends_with('.')),
            _ => false,
        }
    }

    /// The rule that allows exactly `to` (for an answer "allow always").
    pub fn exactly(to: &Destination) -> HostRule {
        HostRule {
            host: match to.address() {
                Some(address) => HostPattern::Address(address),
                None => HostPattern::Name(to.host.clone()),
            },
            ports: Ports::One(to.port),
        }
    }
}

/// A host name's labels checked (letters, digits, `-`, `_`), lowercase.
fn valid_name(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    ok.then(|| name.to_ascii_lowercase())
}

impl fmt::Display for HostRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostPattern::Name(name) => f.write_str(name)?,
            HostPattern::Below(parent) => write!(f, "*.{parent}")?,
            HostPattern::Address(IpAddr::V6(address)) => write!(f, "[{address}]")?,
            HostPattern::Address(address) => write!(f, "{address}")?,
        }
        match self.ports {
            Ports::Web => Ok(()),
            Ports::One(port) => write!(f, ":{port}"),
            Ports::Any => f.write_str(":*"),
        }
    }
}

/// `sandbox.network` as written: `"deny"`, `"allow"`, the proxy's object,
/// or the booleans of earlier versions (`false` is `"deny"`, `true`
/// `"allow"`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum NetworkSetting {
    /// `true` or `false`.
    Switch(bool),
    /// `"deny"` or `"allow"`.
    Word(Word),
    /// The proxy mode.
    Proxy(ProxySetting),
}

/// `"deny"` or `"allow"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Word {
    /// No network.
    Deny,
    /// The whole network.
    Allow,
}

/// The proxy mode's object, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProxySetting {
    /// Hosts allowed.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Whether to ask a person about other hosts (default: true).
    pub ask: Option<bool>,
    /// Ports of the host's loopback opened to commands.
    #[serde(default)]
    pub host_ports: Vec<u16>,
}

impl NetworkSetting {
    /// The mode this setting asks for; an entry that cannot be read is an
    /// error naming it.
    pub fn resolve(&self) -> Result<Network, String> {
        Ok(match self {
            NetworkSetting::Switch(false) | NetworkSetting::Word(Word::Deny) => Network::Deny,
            NetworkSetting::Switch(true) | NetworkSetting::Word(Word::Allow) => Network::Allow,
            NetworkSetting::Proxy(setting) => Network::Proxied(ProxyPolicy {
                allow: setting
                    .allow
                    .iter()
                    .map(|entry| HostRule::parse(entry))
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("`sandbox.network.allow`: {e}"))?,
                ask: setting.ask.unwrap_or(true),
                host_ports: setting.host_ports.clone(),
            }),
        })
    }
}

/// The user's network over the workspace's, and what of the workspace's
/// was ignored: a trusted workspace wins; any other may only narrow
/// (deny; under the proxy, drop entries, stop asking, close host ports).
pub fn layered(user: Network, workspace: Option<Network>, trusted: bool) -> (Network, Vec<String>) {
    let Some(workspace) = workspace else {
        return (user, Vec::new());
    };
    if trusted {
        return (workspace, Vec::new());
    }
    let mut ignored = Vec::new();
    let network = match (user, workspace) {
        (_, Network::Deny) => Network::Deny,
        (Network::Deny, wider) => {
            ignored.push(format!("network: {wider} (the user's settings deny it)"));
            Network::Deny
        }
        (Network::Allow, narrower) => narrower,
        (user @ (Network::Proxied(_) | Network::Default), Network::Allow) => {
            ignored.push("network: \"allow\" (wider than the user's proxy)".into());
            user
        }
        (user, Network::Default) => user,
        (user, Network::Proxied(asked)) => {
            let mine = user.proxy().unwrap_or_default();
            let allow = only_the_users(
                asked.allow,
                &mine.allow,
                "network.allow: {} (not in the user's allowlist)",
                &mut ignored,
            );
            if asked.ask && !mine.ask {
                ignored.push("network.ask: true (the user's settings do not ask)".into());
            }
            let host_ports = only_the_users(
                asked.host_ports,
                &mine.host_ports,
                "network.hostPorts: {} (not among the user's)",
                &mut ignored,
            );
            Network::Proxied(ProxyPolicy {
                allow,
                ask: asked.ask && mine.ask,
                host_ports,
            })
        }
    };
    (network, ignored)
}

/// What a workspace `asked` for that the user's `mine` also has; the rest
/// is listed in `ignored` by `said` (its `{}` the entries).
fn only_the_users<T: PartialEq + fmt::Display>(
    asked: Vec<T>,
    mine: &[T],
    said: &str,
    ignored: &mut Vec<String>,
) -> Vec<T> {
    let (kept, extra): (Vec<T>, Vec<T>) = asked.into_iter().partition(|item| mine.contains(item));
    if !extra.is_empty() {
        let shown: Vec<String> = extra.iter().map(ToString::to_string).collect();
        ignored.push(said.replace("{}", &shown.join(", ")));
    }
    kept
}

#[cfg(test)]
mod tests;
