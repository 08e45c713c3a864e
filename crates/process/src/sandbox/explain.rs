//! What the sandbox refused, read from a confined command's output, so the
//! model learns why a command failed and how to proceed instead of
//! retrying it, or guessing at file permissions.
//!
//! A program says `Permission denied` (`EACCES`) or `Read-only file
//! system` next to the path it could not write, in many shapes (`touch:
//! cannot touch '/x': Permission denied`, `bash: /x: Permission denied`,
//! `PermissionError: [Errno 13] Permission denied: '/x'`). A line with
//! such words and a path outside the writable places is a refusal; one
//! with no path, under `network: false`, is taken for a refused socket.

use std::path::{Path, PathBuf};

use super::{DEVICES, Mode, SETTINGS_KEY, Sandbox};

/// Words a refused write or socket leaves in an error message.
const REFUSED: [&str; 3] = ["Permission denied", "Read-only file system", "EACCES"];

/// Words a change to a protected path leaves: its mount is read-only, and
/// it cannot be moved or removed (`mv .git ...`: a mount point is busy).
const PROTECTED: [&str; 3] = ["Read-only file system", "Device or resource busy", "EBUSY"];

/// At most this many refused paths are named.
const MAX_NAMED: usize = 5;

pub(super) fn explain(sandbox: &Sandbox, output: &str) -> Option<String> {
    protected(sandbox, output)
        .or_else(|| hidden(sandbox, output))
        .or_else(|| refused(sandbox, output))
        .or_else(|| own_loopback(sandbox, output))
}

/// A connection refused on loopback where the command has a network of
/// its own: a service the user runs on the host (a database, a dev
/// server) is not there, unless `hostPorts` opens its port.
fn own_loopback(sandbox: &Sandbox, output: &str) -> Option<String> {
    if !sandbox.own_network() {
        return None;
    }
    let refused = output.lines().any(|line| {
        let line = line.to_ascii_lowercase();
        line.contains("connection refused")
            && ["127.0.0.1", "localhost", "[::1]", "::1"]
                .iter()
                .any(|host| line.contains(host))
    });
    refused.then(|| {
        format!(
            "[sandbox] The command has a network of its own: its 127.0.0.1 is not the host's, \
             so a service running on the host (a database, a dev server) is not there. To reach \
             one, ask the user to list its port in `{SETTINGS_KEY}.network.hostPorts` in \
             ~/.gantry/settings.json, or start the service in the same command."
        )
    })
}

/// A read of a hidden path (it reads as an empty folder, or an empty
/// file): which, and why.
fn hidden(sandbox: &Sandbox, output: &str) -> Option<String> {
    let mut named: Vec<PathBuf> = Vec::new();
    for line in output.lines() {
        if !["No such file or directory", "Permission denied", "ENOENT"]
            .iter()
            .any(|word| line.contains(word))
        {
            continue;
        }
        for path in paths_in(line) {
            if let Some(hidden) = sandbox.hidden_above(&path)
                && !named.contains(&hidden)
            {
                named.push(hidden);
            }
        }
    }
    if named.is_empty() {
        return None;
    }
    let shown: Vec<String> = named
        .iter()
        .map(|path| format!("`{}`", path.display()))
        .collect();
    Some(format!(
        "[sandbox] {} is hidden from commands (keys, credentials and Gantry's own files read \
         as empty). If the command needs it, ask the user to run it, or run it again with \
         `sandbox: false`, which needs the user's approval.",
        shown.join(", ")
    ))
}

/// A change the command tried to make to a protected path: which, and
/// how to proceed.
fn protected(sandbox: &Sandbox, output: &str) -> Option<String> {
    let mut named: Vec<String> = Vec::new();
    for line in output.lines() {
        if !PROTECTED.iter().any(|word| line.contains(word)) {
            continue;
        }
        let hit = sandbox.protected_names().into_iter().find(|name| {
            line.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '‘' | '’'))
                .map(|token| token.trim_end_matches([':', ',', ';', ')', '.', ']']))
                .any(|token| {
                    token.trim_start_matches("./").starts_with(name.as_str())
                        || (token.starts_with('/') && sandbox.protects(Path::new(token)))
                })
        });
        if let Some(name) = hit
            && !named.contains(&name)
        {
            named.push(name);
        }
    }
    if named.is_empty() {
        return None;
    }
    let (is, it) = match named.len() {
        1 => ("is", "it"),
        _ => ("are", "them"),
    };
    Some(format!(
        "[sandbox] `{}` {is} protected: commands may not change {it}, even in the workspace, \
         because programs outside the sandbox act on {it} later (git runs its hooks and \
         `core.fsmonitor`, editors and agents their tasks and servers). If the change is \
         needed, ask the user to make it, or run the command again with `sandbox: false`, \
         which needs the user's approval.",
        named.join("`, `")
    ))
}

fn refused(sandbox: &Sandbox, output: &str) -> Option<String> {
    let policy = sandbox.policy();
    let mut refused_paths: Vec<PathBuf> = Vec::new();
    let mut refused_socket = false;
    // In read-only mode a refusal naming no absolute path (`touch: cannot
    // touch 'x'`) is a write all the same.
    let mut refused_unnamed = false;
    for line in output.lines() {
        if !REFUSED.iter().any(|word| line.contains(word)) {
            continue;
        }
        // bash's `/dev/tcp/HOST/PORT` is a connection, not a file.
        let paths: Vec<PathBuf> = paths_in(line)
            .into_iter()
            .filter(|path| !path.starts_with("/dev/tcp") && !path.starts_with("/dev/udp"))
            .collect();
        if paths.is_empty() {
            refused_socket |= !policy.network.sockets();
            refused_unnamed |= policy.mode == Mode::ReadOnly;
            continue;
        }
        for path in paths {
            if !writable(sandbox, &path) && !refused_paths.contains(&path) {
                refused_paths.push(path);
            }
        }
    }
    if refused_paths.is_empty() && !refused_socket && !refused_unnamed {
        return None;
    }
    let mut what = Vec::new();
    if refused_unnamed && refused_paths.is_empty() {
        what.push(format!(
            "a write (in `read-only` mode commands may write nothing but {})",
            DEVICES.join(", ")
        ));
    }
    if !refused_paths.is_empty() {
        let named: Vec<String> = refused_paths
            .iter()
            .take(MAX_NAMED)
            .map(|path| format!("`{}`", path.display()))
            .collect();
        let more = refused_paths.len().saturating_sub(MAX_NAMED);
        let where_ = match policy.mode {
            Mode::WorkspaceWrite => format!(
                "only beneath {} and the devices",
                sandbox
                    .writable()
                    .iter()
                    .map(|path| path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => format!("nothing but {}", DEVICES.join(", ")),
        };
        what.push(format!(
            "writing {}{} (in `{}` mode commands may write {where_})",
            named.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            },
            policy.mode
        ));
    }
    if refused_socket {
        what.push(format!(
            "a network connection (`{SETTINGS_KEY}.network: false` denies every socket but Unix ones)"
        ));
    }
    let widen = if refused_unnamed && refused_paths.is_empty() {
        format!("set `{SETTINGS_KEY}.mode` to `workspace-write`")
    } else if refused_paths.is_empty() {
        format!("allow the network (`{SETTINGS_KEY}.network`)")
    } else {
        format!("add the directory to `{SETTINGS_KEY}.writableRoots`")
    };
    Some(format!(
        "[sandbox] The sandbox probably refused {}. Two ways forward: {widen} in \
         ~/.gantry/settings.json (the user's file: a workspace's settings cannot loosen the \
         sandbox), or run the command again with `sandbox: false`, which needs the user's \
         approval.",
        what.join(" and ")
    ))
}

/// Whether a confined command may write `path`.
fn writable(sandbox: &Sandbox, path: &Path) -> bool {
    sandbox
        .writable()
        .iter()
        .flat_map(|root| [root.clone(), root.canonicalize().unwrap_or_default()])
        .filter(|root| !root.as_os_str().is_empty())
        .chain(DEVICES.iter().map(PathBuf::from))
        .any(|root| path.starts_with(&root))
}

/// The absolute paths a message names: quoted (`'…'`, `"…"`, `` `…` ``,
/// `‘…’`) or standing alone, with trailing punctuation dropped, `..`
/// resolved lexically.
fn paths_in(line: &str) -> Vec<PathBuf> {
    line.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '‘' | '’'))
        .map(|token| token.trim_end_matches([':', ',', ';', ')', '.', ']']))
        .filter(|token| token.starts_with('/') && token.len() > 1)
        .map(|token| gantry_core::workspace::normalize(Path::new(token)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_read_from_the_shapes_programs_print() {
        let cases = [
            (
                "touch: cannot touch '/root/x': Permission denied",
                "/root/x",
            ),
            ("bash: line 1: /etc/y: Read-only file system", "/etc/y"),
            (
                "PermissionError: [Errno 13] Permission denied: '/home/u/z'",
                "/home/u/z",
            ),
            ("error: failed to open `/opt/a/../b/c`, EACCES", "/opt/b/c"),
            (
                "mkdir: cannot create directory ‘/srv/d’: Permission denied",
                "/srv/d",
            ),
        ];
        for (line, path) in cases {
            assert_eq!(paths_in(line), vec![PathBuf::from(path)], "{line}");
        }
        assert!(paths_in("Permission denied (os error 13)").is_empty());
    }
}
