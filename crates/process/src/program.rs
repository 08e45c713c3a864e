//! Whether a program can serve a file: a root marker above the file inside
//! the workspace AND a binary that resolves and runs. Language servers,
//! debug adapters and kernels are all found this way, and say the same
//! thing when they are not: which of the two is missing, and for a binary
//! whether it is not installed or installed but broken.
//!
//! A binary resolves only when it runs: a rustup proxy for a component
//! that is not installed exists on `PATH` but answers every call with an
//! error, so each candidate must pass its program's cheap probe
//! (`--version`) first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::capture::Capture;
use crate::child::{Command, Stdout, describe_exit};
use crate::sandbox::{Mode, Policy, Sandbox};

/// Where a binary was looked for, for a message that says so.
pub const SEARCHED: &str = "node_modules/.bin, .venv/bin and venv/bin of the project, then PATH";

/// Where a binary was looked for when the project's own were passed over.
pub const SEARCHED_OUTSIDE: &str = "PATH (the project's own node_modules/.bin, .venv/bin and \
     venv/bin are used only in a folder the user's `trustedFolders` lists)";

/// How long a binary's probe may run before the binary counts as unusable.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The most of a probe's stdout kept: a version line or a path.
const ANSWER_BYTES: usize = 16 * 1024;

/// A program a family runs for a project, and how it is found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Program {
    /// Binary names tried in order (or paths, absolute or relative to the
    /// workspace); the first that resolves is used.
    pub binaries: Vec<String>,
    /// Arguments of a cheap run (`--version`) that must exit 0 within
    /// [`PROBE_TIMEOUT`] for a found binary to count; `None` when the
    /// program has no such mode or the user named the binary themselves.
    pub probe: Option<Vec<String>>,
    /// Also accept `NAME-NN` on `PATH` (Debian's `clangd-19`), the highest
    /// version first, when no plain name resolves.
    pub versioned: bool,
    /// Files whose directory is a project root.
    pub root_markers: Vec<String>,
    /// Pass over the project's own binaries (`node_modules/.bin`, ...):
    /// for a program that runs unconfined, such as a language server,
    /// in a checkout the user has not trusted, where a planted binary
    /// would run with the user's full rights on the first file read.
    pub outside_workspace_only: bool,
}

/// `name` on `PATH`, or else its highest versioned form (`clangd-19`),
/// whether or not it runs: for a test or a script to ask what is
/// installed the way Gantry looks for it.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let program = Program {
        binaries: vec![name.to_string()],
        versioned: true,
        ..Program::default()
    };
    let anywhere = Path::new("/");
    program.resolve_binary(anywhere, anywhere).ok()
}

/// Where a usable program is.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// The project root it serves: the nearest directory with a marker.
    pub root: PathBuf,
    /// The binary that runs.
    pub binary: PathBuf,
}

/// Why a program cannot serve a file: the marker, the binary, or both, in
/// words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", .0.join("; "))]
pub struct Unusable(pub Vec<String>);

/// Why no binary of a program resolved, for messages that say which of
/// "not installed" and "installed but broken" it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NoBinary {
    /// Candidates that exist but failed their probe, each with the reason
    /// (the command and the first lines of its error); empty when no
    /// candidate exists at all.
    pub unusable: Vec<String>,
}

impl Program {
    /// The program's root and binary for `file`, or why it cannot serve it.
    pub fn locate(&self, workspace: &Path, file: &Path) -> Result<Located, Unusable> {
        let root = self.find_root(workspace, file);
        let binary = self.resolve_binary(workspace, root.as_deref().unwrap_or(workspace));
        match (root, binary) {
            (Some(root), Ok(binary)) => Ok(Located { root, binary }),
            (root, binary) => {
                let mut missing = Vec::new();
                if root.is_none() {
                    missing.push(format!(
                        "no root marker ({}) above the file inside the workspace",
                        self.root_markers.join(", ")
                    ));
                }
                if let Err(no) = binary {
                    missing.push(self.describe(&no));
                }
                Err(Unusable(missing))
            }
        }
    }

    /// The nearest directory at or above `file`'s directory, inside
    /// `workspace`, that holds one of the root markers.
    pub fn find_root(&self, workspace: &Path, file: &Path) -> Option<PathBuf> {
        let mut dir = if file.is_dir() { file } else { file.parent()? };
        loop {
            if !dir.starts_with(workspace) {
                return None;
            }
            if self.root_markers.iter().any(|m| dir.join(m).exists()) {
                return Some(dir.to_path_buf());
            }
            dir = dir.parent()?;
        }
    }

    /// Resolves the first binary that exists and passes the probe: the
    /// project's own `node_modules/.bin`, `.venv/bin` and `venv/bin` (from
    /// `root` up to the workspace), then `PATH`, then versioned names on
    /// `PATH`. Blocks for the probes of binaries not probed before.
    pub fn resolve_binary(&self, workspace: &Path, root: &Path) -> Result<PathBuf, NoBinary> {
        let path: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).collect())
            .unwrap_or_default();
        self.resolve_binary_on(workspace, root, &path)
    }

    /// [`Program::resolve_binary`] with `path` for the directories of
    /// `PATH`.
    pub fn resolve_binary_on(
        &self,
        workspace: &Path,
        root: &Path,
        path: &[PathBuf],
    ) -> Result<PathBuf, NoBinary> {
        let mut refused = NoBinary::default();
        // An executable that runs its probe (or has none to run).
        let mut usable = |candidate: &Path| {
            if !is_executable(candidate) {
                return false;
            }
            let Some(args) = &self.probe else {
                return true;
            };
            match probe(candidate, args) {
                Ok(()) => true,
                Err(why) => {
                    // A directory named twice on PATH is one candidate.
                    if !refused.unusable.contains(&why) {
                        refused.unusable.push(why);
                    }
                    false
                }
            }
        };
        for name in &self.binaries {
            let given = Path::new(name);
            if given.components().count() > 1 {
                if usable(&workspace.join(given)) {
                    return Ok(workspace.join(given));
                }
                continue;
            }
            let project = root
                .ancestors()
                .take_while(|dir| !self.outside_workspace_only && dir.starts_with(workspace))
                .flat_map(|dir| {
                    ["node_modules/.bin", ".venv/bin", "venv/bin"].map(|local| dir.join(local))
                });
            if let Some(found) = project
                .chain(path.iter().cloned())
                .map(|dir| dir.join(name))
                .find(|c| usable(c))
            {
                return Ok(found);
            }
        }
        if self.versioned {
            let mut versions: Vec<(u32, PathBuf)> = Vec::new();
            for dir in path {
                let Ok(entries) = std::fs::read_dir(dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let file_name = entry.file_name();
                    let Some(file_name) = file_name.to_str() else {
                        continue;
                    };
                    for name in &self.binaries {
                        let version = file_name
                            .strip_prefix(name.as_str())
                            .and_then(|rest| rest.strip_prefix('-'))
                            .and_then(|v| v.parse::<u32>().ok());
                        if let Some(version) = version {
                            versions.push((version, entry.path()));
                        }
                    }
                }
            }
            // The highest version that runs; earlier PATH entries win a tie.
            versions.sort_by_key(|(version, _)| std::cmp::Reverse(*version));
            if let Some((_, found)) = versions.into_iter().find(|(_, c)| usable(c)) {
                return Ok(found);
            }
        }
        Err(refused)
    }

    /// Where its binaries are looked for, in words.
    pub fn searched(&self) -> &'static str {
        if self.outside_workspace_only {
            SEARCHED_OUTSIDE
        } else {
            SEARCHED
        }
    }

    /// Why no binary resolved, in words: not found (and where it was looked
    /// for), or found but failing its probe.
    pub fn describe(&self, no: &NoBinary) -> String {
        let names = self.binaries.join("` or `");
        if no.unusable.is_empty() {
            format!("binary `{names}` not found in {}", self.searched())
        } else {
            format!(
                "binary `{names}` found but not usable: {}",
                no.unusable.join("; ")
            )
        }
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether `binary args` runs, asked once per binary and probe for the
/// life of the process: resolution happens on every call that touches a
/// file, and a probe costs a process start.
fn probe(binary: &Path, args: &[String]) -> Result<(), String> {
    answer(binary, args).map(drop)
}

/// What `binary args` prints on stdout, run as a probe is (confined
/// read-only, from `/`, bounded by [`PROBE_TIMEOUT`]) and asked once per
/// binary and arguments for the life of the process: for a family that
/// must learn where a program's real toolchain is (`rustup which
/// rust-analyzer`, an interpreter's `sys.executable`) without letting a
/// checkout's settings choose it. An error says why it did not answer.
pub fn answer(binary: &Path, args: &[String]) -> Result<String, String> {
    type Cache = Mutex<HashMap<(PathBuf, Vec<String>), Result<String, String>>>;
    static ASKED: OnceLock<Cache> = OnceLock::new();
    let cache = ASKED.get_or_init(Cache::default);
    let key = (binary.to_path_buf(), args.to_vec());
    let lock = || cache.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = lock().get(&key) {
        return known.clone();
    }
    let outcome = run_probe(binary, args, PROBE_TIMEOUT);
    lock().insert(key, outcome.clone());
    outcome
}

/// Runs `binary args` with no input and decides by its exit: 0 within
/// `timeout` is usable (and its stdout is the answer), anything else is
/// not, said with the first lines of its error. Resolution is synchronous (and called from async code),
/// so the probe runs on a thread of its own with a runtime of its own.
fn run_probe(binary: &Path, args: &[String], timeout: Duration) -> Result<String, String> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| {
                        format!("no runtime for the probe of {}: {e}", binary.display())
                    })?;
                runtime.block_on(probe_once(binary, args, timeout))
            })
            .join()
            .unwrap_or_else(|_| Err(format!("the probe of {} panicked", binary.display())))
    })
}

/// The sandbox every probe runs in, whatever run asked: read-only (a
/// `--version` writes nothing), with the default environment policy, so
/// a planted binary that a probe runs can change nothing and learns no
/// secret. Probes are asked once per process, so no run's own sandbox
/// would be the right one anyway.
fn probe_sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| {
        let policy = Policy {
            mode: Mode::ReadOnly,
            ..Policy::default()
        };
        Sandbox::new(policy, &[])
    })
}

async fn probe_once(binary: &Path, args: &[String], timeout: Duration) -> Result<String, String> {
    let mut command = Command::new(binary, probe_sandbox());
    // Outside every workspace: a program that reads its settings from
    // where it runs (a rustup proxy's `rust-toolchain.toml`, Python's
    // current directory on `sys.path`) finds none of a checkout's.
    command.args(args).current_dir("/").stdout(Stdout::Capture {
        head: ANSWER_BYTES,
        tail: 0,
    });
    let shown = format!("`{}`", command.shown());
    let child = command
        .spawn()
        .map_err(|e| format!("{shown} could not run: {e}"))?;
    let status = tokio::time::timeout(timeout, child.exited()).await;
    // The group goes either way, so a probe leaves nothing running; the
    // leader, killed, is reaped within a moment (or by the drop).
    child.kill_group();
    let _ = tokio::time::timeout(Duration::from_secs(1), child.wait()).await;
    if let Some(output) = child.output() {
        let _ = tokio::time::timeout(Duration::from_secs(1), output.finished()).await;
    }
    let said = match child.stderr() {
        Some(stderr) => {
            // Only a helper that left the group could still hold the pipe.
            let _ = tokio::time::timeout(Duration::from_secs(1), stderr.finished()).await;
            Capture::explain(stderr)
        }
        None => String::new(),
    };
    let said = if said.is_empty() {
        said
    } else {
        format!(": {said}")
    };
    match status {
        Ok(Ok(status)) if status.success() => Ok(child
            .output()
            .map(|output| {
                String::from_utf8_lossy(output.lock().head())
                    .trim()
                    .to_string()
            })
            .unwrap_or_default()),
        Ok(Ok(status)) => Err(format!("{shown} {}{said}", describe_exit(status))),
        Ok(Err(e)) => Err(format!("{shown} could not be waited for: {e}")),
        Err(_) => Err(format!(
            "{shown} did not finish within {} s{said}",
            timeout.as_secs_f32()
        )),
    }
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(path: &Path, body: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn program(binaries: &[&str], markers: &[&str]) -> Program {
        Program {
            binaries: binaries.iter().map(|b| b.to_string()).collect(),
            root_markers: markers.iter().map(|m| m.to_string()).collect(),
            ..Program::default()
        }
    }

    #[test]
    fn root_is_the_nearest_marker_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("crates/a/src")).unwrap();
        std::fs::write(ws.join("Cargo.toml"), "").unwrap();
        std::fs::write(ws.join("crates/a/Cargo.toml"), "").unwrap();
        let cargo = program(&["cargo"], &["Cargo.toml"]);
        let file = ws.join("crates/a/src/lib.rs");
        assert_eq!(cargo.find_root(ws, &file), Some(ws.join("crates/a")));
        assert_eq!(
            cargo.find_root(ws, &ws.join("src/main.rs")),
            Some(ws.to_path_buf())
        );
        // A marker above the workspace does not count.
        let inner = ws.join("crates/b");
        std::fs::create_dir_all(&inner).unwrap();
        assert_eq!(cargo.find_root(&inner, &inner.join("x.rs")), None);
    }

    #[test]
    fn the_projects_binary_wins_over_path_and_versioned_names_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let bin = dir.path().join("bin");
        script(&bin.join("debugpy-adapter"), "exit 0");
        script(&ws.join(".venv/bin/debugpy-adapter"), "exit 0");
        std::fs::write(ws.join("pyproject.toml"), "").unwrap();
        let mut adapter = program(&["debugpy-adapter"], &["pyproject.toml"]);
        adapter.probe = Some(vec!["--version".into()]);
        let path = [bin.clone()];
        assert_eq!(
            adapter.resolve_binary_on(&ws, &ws.join("pkg"), &path),
            Ok(ws.join(".venv/bin/debugpy-adapter"))
        );
        std::fs::remove_file(ws.join(".venv/bin/debugpy-adapter")).unwrap();
        assert_eq!(
            adapter.resolve_binary_on(&ws, &ws, &path),
            Ok(bin.join("debugpy-adapter"))
        );
        // A project's node_modules above the root, up to the workspace.
        script(&ws.join("node_modules/.bin/debugpy-adapter"), "exit 0");
        assert_eq!(
            adapter.resolve_binary_on(&ws, &ws.join("web/app"), &path),
            Ok(ws.join("node_modules/.bin/debugpy-adapter"))
        );
        // Passed over on request, PATH's stands, and the message says so.
        let mut outside = adapter.clone();
        outside.outside_workspace_only = true;
        assert_eq!(
            outside.resolve_binary_on(&ws, &ws.join("web/app"), &path),
            Ok(bin.join("debugpy-adapter"))
        );
        assert_eq!(
            outside.resolve_binary_on(&ws, &ws, &[]),
            Err(NoBinary::default())
        );
        assert!(
            outside
                .describe(&NoBinary::default())
                .ends_with(SEARCHED_OUTSIDE)
        );

        // Versioned names: a PATH holding clangd-14 and clangd-19.
        let mut clangd = program(&["clangd"], &[]);
        clangd.versioned = true;
        for name in ["clangd-14", "clangd-19", "clangd-tidy"] {
            script(&bin.join(name), "exit 0");
        }
        assert_eq!(
            clangd.resolve_binary_on(&ws, &ws, &path),
            Ok(bin.join("clangd-19"))
        );
        script(&bin.join("clangd"), "exit 0");
        assert_eq!(
            clangd.resolve_binary_on(&ws, &ws, &path),
            Ok(bin.join("clangd"))
        );
        std::fs::remove_file(bin.join("clangd")).unwrap();
        clangd.versioned = false;
        assert_eq!(
            clangd.resolve_binary_on(&ws, &ws, &path),
            Err(NoBinary::default())
        );
    }

    #[test]
    fn locate_says_which_of_marker_and_binary_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let gopls = program(&["gantry-test-missing-gopls"], &["go.work", "go.mod"]);
        let file = ws.join("main.go");
        let why = gopls.locate(ws, &file).unwrap_err().to_string();
        assert_eq!(
            why,
            format!(
                "no root marker (go.work, go.mod) above the file inside the workspace; binary `gantry-test-missing-gopls` not found in {SEARCHED}"
            )
        );
        std::fs::write(ws.join("go.mod"), "module x\n").unwrap();
        let why = gopls.locate(ws, &file).unwrap_err().to_string();
        assert!(
            why.starts_with("binary `gantry-test-missing-gopls` not found"),
            "{why}"
        );
        script(&ws.join("venv/bin/gantry-test-missing-gopls"), "exit 0");
        assert_eq!(
            gopls.locate(ws, &file),
            Ok(Located {
                root: ws.to_path_buf(),
                binary: ws.join("venv/bin/gantry-test-missing-gopls")
            })
        );
    }

    #[test]
    fn a_binary_resolves_only_when_its_probe_runs_and_is_probed_once() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        // What rustup's proxy does for a component that is not installed,
        // in the project's .venv where it is tried first.
        let broken = ws.join(".venv/bin");
        script(
            &broken.join("rust-analyzer"),
            "echo \"error: Unknown binary 'rust-analyzer' in official toolchain 'stable'.\" >&2\n\
             echo 'note: see rustup component add' >&2\nexit 1",
        );
        let mut ra = program(&["rust-analyzer"], &["Cargo.toml"]);
        ra.probe = Some(vec!["--version".into()]);
        let refused = ra.resolve_binary_on(&ws, &ws, &[]).unwrap_err();
        assert_eq!(refused.unusable.len(), 1, "{refused:?}");
        let said = ra.describe(&refused);
        assert_eq!(
            said,
            format!(
                "binary `rust-analyzer` found but not usable: `{}/rust-analyzer --version` exited with code 1: error: Unknown binary 'rust-analyzer' in official toolchain 'stable'. | note: see rustup component add",
                broken.display()
            )
        );
        // A working one on PATH, counting its runs on a datagram socket
        // (a probe is confined read-only: it cannot leave a file).
        let good = dir.path().join("good");
        let runs = dir.path().join("runs");
        let counter = std::os::unix::net::UnixDatagram::bind(&runs).unwrap();
        counter.set_nonblocking(true).unwrap();
        script(
            &good.join("rust-analyzer"),
            &format!(
                "python3 -c \"import socket; socket.socket(socket.AF_UNIX, \
                 socket.SOCK_DGRAM).sendto(b'run', '{}')\"",
                runs.display()
            ),
        );
        for _ in 0..3 {
            assert_eq!(
                ra.resolve_binary_on(&ws, &ws, std::slice::from_ref(&good)),
                Ok(good.join("rust-analyzer"))
            );
        }
        let mut got = [0u8; 8];
        let mut probes = 0;
        while counter.recv(&mut got).is_ok() {
            probes += 1;
        }
        assert_eq!(probes, 1, "probed once per binary");

        // A binary that is only found, not probed, resolves as it is.
        ra.probe = None;
        assert_eq!(
            ra.resolve_binary_on(&ws, &ws, &[]),
            Ok(broken.join("rust-analyzer"))
        );
    }

    #[test]
    fn a_probe_that_hangs_is_bounded_and_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let hang = dir.path().join("hang");
        script(
            &hang,
            &format!(
                "echo $$ > {}\nsleep 600 &\nexec sleep 600",
                pid_file.display()
            ),
        );
        let why = run_probe(&hang, &["--version".into()], Duration::from_millis(300)).unwrap_err();
        assert!(why.contains("did not finish within 0.3 s"), "{why}");
        // (A machine too loaded to start the script within the bound has
        // nothing to check.)
        if let Ok(pid) = std::fs::read_to_string(&pid_file) {
            assert!(
                !Path::new(&format!("/proc/{}", pid.trim())).exists(),
                "the probe's process {pid} is still there"
            );
        }
    }
}
