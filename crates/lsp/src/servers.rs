//! The server table: which server serves which language, where its root
//! is, and where its binary is. A server is usable for a file only when a
//! root marker exists above the file inside the workspace AND a binary
//! resolves; [`Choice`] says which one is missing otherwise. A binary
//! resolves only when it runs: a rustup proxy for a component that is not
//! installed exists on `PATH` but answers every call with an error, so each
//! candidate must pass its entry's cheap probe (`--version`) first.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use gantry_core::lock;
use serde::Deserialize;
use serde_json::Value;

/// One language server: how to start it and what it serves.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// Stable id used in settings and `status` (`clangd`, `basedpyright`).
    pub id: String,
    /// Binary names tried in order; the first that resolves is used.
    pub binaries: Vec<String>,
    /// Arguments of a cheap run (`--version`) that must exit 0 for a found
    /// binary to count; `None` when the server has no such mode (pyright's
    /// language server takes no arguments but `--stdio`) or the user named
    /// the binary themselves.
    pub probe: Option<Vec<String>>,
    /// Also accept `NAME-NN` on `PATH` (Debian's `clangd-19`), the highest
    /// version first, when no plain name resolves.
    pub versioned: bool,
    /// Arguments after the binary.
    pub args: Vec<String>,
    /// LSP language ids served.
    pub languages: Vec<String>,
    /// Files whose directory is a project root.
    pub root_markers: Vec<String>,
    /// Sent as `initializationOptions`.
    pub initialization_options: Value,
    /// Answered to `workspace/configuration`, looked up by section.
    pub settings: Value,
    /// Text of the log message by which a server that reports no progress
    /// says it has finished loading the workspace (pyright's "Found N
    /// source files"). Until it arrives the server counts as indexing and
    /// requests wait for it (bounded), because pyright leaves requests
    /// sent earlier unanswered.
    pub ready_log: Option<String>,
}

fn spec(
    id: &str,
    binaries: &[&str],
    args: &[&str],
    languages: &[&str],
    root_markers: &[&str],
) -> ServerSpec {
    let strings = |items: &[&str]| items.iter().map(|s| s.to_string()).collect();
    ServerSpec {
        id: id.into(),
        binaries: strings(binaries),
        probe: None,
        versioned: false,
        args: strings(args),
        languages: strings(languages),
        root_markers: strings(root_markers),
        initialization_options: Value::Null,
        settings: Value::Null,
        ready_log: None,
    }
}

const PYTHON_MARKERS: &[&str] = &[
    "pyproject.toml",
    "pyrightconfig.json",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "Pipfile",
];

/// The built-in table, in order of preference within a language.
pub fn builtin() -> Vec<ServerSpec> {
    let probed = |mut server: ServerSpec, probe: &str| {
        server.probe = Some(vec![probe.to_string()]);
        server
    };
    let mut clangd = spec(
        "clangd",
        &["clangd"],
        &["--background-index=false", "--log=error"],
        &["c", "cpp"],
        &[
            "compile_commands.json",
            "compile_flags.txt",
            ".clangd",
            "CMakeLists.txt",
            "meson.build",
            "Makefile",
        ],
    );
    clangd.versioned = true;
    // pyright's language servers accept no `--version` (they fail without
    // `--stdio`): they are found, not probed.
    let pyright_like = |id: &str, binary: &str| {
        let mut server = spec(id, &[binary], &["--stdio"], &["python"], PYTHON_MARKERS);
        server.ready_log = Some("source file".into());
        server
    };
    // While tsserver loads a project, typescript-language-server answers
    // navigation from a syntax-only server that sees one file: a
    // definition lands on the import line, references miss other files.
    // One semantic server answers once the project is loaded, or not at
    // all within the deadline. A rename started at an import renames the
    // declaration and every use, not just the local name behind an
    // `as` alias.
    let mut typescript = spec(
        "typescript-language-server",
        &["typescript-language-server"],
        &["--stdio"],
        &[
            "typescript",
            "typescriptreact",
            "javascript",
            "javascriptreact",
        ],
        &["tsconfig.json", "jsconfig.json", "package.json"],
    );
    typescript.initialization_options = serde_json::json!({
        "tsserver": {"useSyntaxServer": "never"},
        "preferences": {"providePrefixAndSuffixTextForRename": false}
    });
    vec![
        // rustup installs a `rust-analyzer` proxy whether or not the
        // component is installed; only a run tells them apart.
        probed(
            spec(
                "rust-analyzer",
                &["rust-analyzer"],
                &[],
                &["rust"],
                &["Cargo.toml"],
            ),
            "--version",
        ),
        pyright_like("basedpyright", "basedpyright-langserver"),
        pyright_like("pyright", "pyright-langserver"),
        probed(
            spec("pylsp", &["pylsp"], &[], &["python"], PYTHON_MARKERS),
            "--version",
        ),
        probed(typescript, "--version"),
        probed(clangd, "--version"),
        probed(
            spec("gopls", &["gopls"], &[], &["go"], &["go.work", "go.mod"]),
            "version",
        ),
        probed(
            spec(
                "dart",
                &["dart"],
                &["language-server", "--protocol=lsp"],
                &["dart"],
                &["pubspec.yaml"],
            ),
            "--version",
        ),
    ]
}

/// The LSP language id of a file, from its extension.
pub fn language_of(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "ipp" => "cpp",
        "go" => "go",
        "dart" => "dart",
        _ => return None,
    })
}

/// A server's entry in settings section `lsp.servers`: every field
/// optional, so a workspace can change one thing (`args`) or add a server.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ServerOverride {
    /// Switch a built-in server off.
    pub disabled: bool,
    /// Binary candidates, or one absolute path. Naming them drops the
    /// table's probe (the user chose the binary) unless `probe` is given.
    pub command: Option<Vec<String>>,
    /// Arguments of a cheap run that must exit 0 for a found binary to
    /// count (`["--version"]`); `[]` turns the probe off.
    pub probe: Option<Vec<String>>,
    /// Arguments.
    pub args: Option<Vec<String>>,
    /// Language ids.
    pub languages: Option<Vec<String>>,
    /// Root markers.
    pub root_markers: Option<Vec<String>>,
    /// `initializationOptions`.
    pub initialization_options: Option<Value>,
    /// Settings answered to `workspace/configuration`.
    pub settings: Option<Value>,
}

/// Settings section `lsp`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct LspSettings {
    /// Seconds a server may sit unused before it is shut down (default
    /// 1800).
    pub idle_seconds: Option<u64>,
    /// Deadline of one request in seconds (default 10).
    pub request_timeout_seconds: Option<u64>,
    /// Deadline of a start, `initialize` included, in seconds (default 60).
    pub start_timeout_seconds: Option<u64>,
    /// The one deadline of diagnostics after a write, in milliseconds
    /// (default 3000).
    pub diagnostics_deadline_ms: Option<u64>,
    /// Bound of the project checker behind `diagnostics "*"`, in seconds
    /// (default 120).
    pub checker_timeout_seconds: Option<u64>,
    /// Restarts after crashes before a server is given up (default 3).
    pub max_restarts: Option<u32>,
    /// Per-server changes and additions, by id.
    pub servers: BTreeMap<String, ServerOverride>,
}

/// The effective configuration of the family for one run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The table after settings.
    pub servers: Vec<ServerSpec>,
    /// Idle time before shutdown.
    pub idle: Duration,
    /// Deadline of one request.
    pub request_timeout: Duration,
    /// Deadline of a start.
    pub start_timeout: Duration,
    /// Deadline of the post-write step.
    pub diagnostics_deadline: Duration,
    /// Bound of a project checker.
    pub checker_timeout: Duration,
    /// Restarts allowed after crashes.
    pub max_restarts: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config::from_settings(LspSettings::default())
    }
}

impl Config {
    /// Applies settings to the built-in table.
    pub fn from_settings(settings: LspSettings) -> Self {
        let mut servers = builtin();
        for (id, change) in settings.servers {
            let position = servers.iter().position(|s| s.id == id);
            if change.disabled {
                if let Some(position) = position {
                    servers.remove(position);
                }
                continue;
            }
            let mut server = match position {
                Some(position) => servers.remove(position),
                None => spec(&id, &[&id], &[], &[], &[]),
            };
            if let Some(command) = change.command {
                server.binaries = command;
                server.versioned = false;
                server.probe = None;
            }
            if let Some(probe) = change.probe {
                server.probe = (!probe.is_empty()).then_some(probe);
            }
            if let Some(args) = change.args {
                server.args = args;
            }
            if let Some(languages) = change.languages {
                server.languages = languages;
            }
            if let Some(markers) = change.root_markers {
                server.root_markers = markers;
            }
            if let Some(options) = change.initialization_options {
                server.initialization_options = options;
            }
            if let Some(values) = change.settings {
                server.settings = values;
            }
            // A configured server goes first among those of its languages.
            servers.insert(position.unwrap_or(0), server);
        }
        Config {
            servers,
            idle: Duration::from_secs(settings.idle_seconds.unwrap_or(1800)),
            request_timeout: Duration::from_secs(settings.request_timeout_seconds.unwrap_or(10)),
            start_timeout: Duration::from_secs(settings.start_timeout_seconds.unwrap_or(60)),
            diagnostics_deadline: Duration::from_millis(
                settings.diagnostics_deadline_ms.unwrap_or(3000),
            ),
            checker_timeout: Duration::from_secs(settings.checker_timeout_seconds.unwrap_or(120)),
            max_restarts: settings.max_restarts.unwrap_or(3),
        }
    }
}

/// The nearest directory at or above `file`'s directory, inside
/// `workspace`, that holds one of `markers`.
pub fn find_root(workspace: &Path, file: &Path, markers: &[String]) -> Option<PathBuf> {
    let mut dir = if file.is_dir() { file } else { file.parent()? };
    loop {
        if !dir.starts_with(workspace) {
            return None;
        }
        if markers.iter().any(|marker| dir.join(marker).exists()) {
            return Some(dir.to_path_buf());
        }
        dir = dir.parent()?;
    }
}

/// Where a binary was looked for, for a message that says so.
pub const SEARCHED: &str = "node_modules/.bin, .venv/bin and venv/bin of the project, then PATH";

/// How long a binary's probe may run before the binary counts as unusable.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why no binary of an entry resolved, for messages that say which of
/// "not installed" and "installed but broken" it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NoBinary {
    /// Candidates that exist but failed their probe, each with the reason
    /// (the command and the first line of its error); empty when no
    /// candidate exists at all.
    pub unusable: Vec<String>,
}

impl NoBinary {
    /// The reason in words: not found (and where it was looked for), or
    /// found but failing its probe.
    pub fn describe(&self, spec: &ServerSpec) -> String {
        let names = spec.binaries.join("` or `");
        if self.unusable.is_empty() {
            format!("binary `{names}` not found in {SEARCHED}")
        } else {
            format!(
                "binary `{names}` found but not usable: {}",
                self.unusable.join("; ")
            )
        }
    }
}

/// Resolves the first of `spec.binaries` that exists and passes the
/// entry's probe: the project's own `node_modules/.bin`, `.venv/bin` and
/// `venv/bin` (from `root` up to the workspace), then `PATH`, then
/// versioned names on `PATH`.
pub fn resolve_binary(
    spec: &ServerSpec,
    workspace: &Path,
    root: &Path,
) -> Result<PathBuf, NoBinary> {
    let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    resolve_in(spec, workspace, root, &path_dirs)
}

fn resolve_in(
    spec: &ServerSpec,
    workspace: &Path,
    root: &Path,
    path_dirs: &[PathBuf],
) -> Result<PathBuf, NoBinary> {
    let mut refused = NoBinary::default();
    // An executable that runs its probe (or has none to run).
    let mut usable = |path: &Path| {
        if !is_executable(path) {
            return false;
        }
        let Some(args) = &spec.probe else {
            return true;
        };
        match probe(path, args) {
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
    for name in &spec.binaries {
        let given = Path::new(name);
        if given.components().count() > 1 {
            let path = if given.is_absolute() {
                given.to_path_buf()
            } else {
                workspace.join(given)
            };
            if usable(&path) {
                return Ok(path);
            }
            continue;
        }
        let mut dir = Some(root);
        while let Some(current) = dir.filter(|d| d.starts_with(workspace)) {
            for local in ["node_modules/.bin", ".venv/bin", "venv/bin"] {
                let candidate = current.join(local).join(name);
                if usable(&candidate) {
                    return Ok(candidate);
                }
            }
            dir = current.parent();
        }
        if let Some(found) = path_dirs.iter().map(|d| d.join(name)).find(|c| usable(c)) {
            return Ok(found);
        }
    }
    if spec.versioned {
        let mut versions: Vec<(u32, PathBuf)> = Vec::new();
        for dir in path_dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let file_name = entry.file_name();
                let Some(file_name) = file_name.to_str() else {
                    continue;
                };
                for name in &spec.binaries {
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
        if let Some((_, path)) = versions.into_iter().find(|(_, path)| usable(path)) {
            return Ok(path);
        }
    }
    Err(refused)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Whether `binary args` runs, asked once per binary and probe for the
/// life of the process: resolution happens on every call that touches a
/// file, and a probe costs a process start.
fn probe(binary: &Path, args: &[String]) -> Result<(), String> {
    type Cache = Mutex<HashMap<(PathBuf, Vec<String>), Result<(), String>>>;
    static PROBED: OnceLock<Cache> = OnceLock::new();
    let cache = PROBED.get_or_init(Cache::default);
    let key = (binary.to_path_buf(), args.to_vec());
    if let Some(known) = lock(cache).get(&key) {
        return known.clone();
    }
    let outcome = run_probe(binary, args, PROBE_TIMEOUT);
    lock(cache).insert(key, outcome.clone());
    outcome
}

/// Runs `binary args` in its own process group with no input and decides
/// by its exit: 0 within `timeout` is usable, anything else is not, said
/// with the first lines of its error. The group is killed afterwards
/// either way, so a probe leaves nothing running.
fn run_probe(binary: &Path, args: &[String], timeout: Duration) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let shown = if args.is_empty() {
        format!("`{}`", binary.display())
    } else {
        format!("`{} {}`", binary.display(), args.join(" "))
    };
    let mut child = std::process::Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("{shown} could not run: {e}"))?;
    let pid = child.id();
    let stderr = child.stderr.take();
    let (text_tx, text_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(stderr) = stderr {
            let _ = stderr.take(64 * 1024).read_to_end(&mut bytes);
        }
        let _ = text_tx.send(bytes);
    });
    let (status_tx, status_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = status_tx.send(child.wait());
    });
    let status = status_rx.recv_timeout(timeout);
    crate::server::kill_group(pid);
    if status.is_err() {
        // Reaped before returning, so nothing of the probe outlives it.
        let _ = status_rx.recv_timeout(Duration::from_secs(1));
    }
    // The group is dead, so its end of the pipe is closed; only a helper
    // that left the group could hold it open, and that is not waited for.
    let stderr = text_rx
        .recv_timeout(Duration::from_secs(1))
        .unwrap_or_default();
    let said = crate::server::explain_stderr(&String::from_utf8_lossy(&stderr));
    let said = if said.is_empty() {
        String::new()
    } else {
        format!(": {said}")
    };
    match status {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!(
            "{shown} {}{said}",
            crate::server::describe_exit(status)
        )),
        Ok(Err(e)) => Err(format!("{shown} could not be waited for: {e}")),
        Err(_) => Err(format!(
            "{shown} did not finish within {} s{said}",
            timeout.as_secs_f32()
        )),
    }
}

/// What serving a file would take, as decided by the table.
#[derive(Debug, Clone)]
pub enum Choice {
    /// A server can start: marker and binary are both there.
    Usable {
        /// The server.
        spec: Box<ServerSpec>,
        /// Its root for this file.
        root: PathBuf,
        /// Its binary.
        binary: PathBuf,
    },
    /// No server in the table serves this kind of file.
    NoServer,
    /// Servers exist for the language but none can start; one reason each.
    Missing(Vec<String>),
}

/// Chooses the server for `file`: the first of its language, in table
/// order, whose marker and binary are both present.
pub fn choose(config: &Config, workspace: &Path, file: &Path) -> Choice {
    let Some(language) = language_of(file) else {
        return Choice::NoServer;
    };
    let mut reasons = Vec::new();
    for spec in config
        .servers
        .iter()
        .filter(|s| s.languages.iter().any(|l| l == language))
    {
        let root = find_root(workspace, file, &spec.root_markers);
        let binary = resolve_binary(spec, workspace, root.as_deref().unwrap_or(workspace));
        match (root, binary) {
            (Some(root), Ok(binary)) => {
                return Choice::Usable {
                    spec: Box::new(spec.clone()),
                    root,
                    binary,
                };
            }
            (root, binary) => {
                let mut missing = Vec::new();
                if root.is_none() {
                    missing.push(format!(
                        "no root marker ({}) above the file inside the workspace",
                        spec.root_markers.join(", ")
                    ));
                }
                if let Err(no) = binary {
                    missing.push(no.describe(spec));
                }
                reasons.push(format!("{}: {}", spec.id, missing.join("; ")));
            }
        }
    }
    if reasons.is_empty() {
        Choice::NoServer
    } else {
        Choice::Missing(reasons)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn languages_come_from_extensions() {
        assert_eq!(language_of(Path::new("a/b.rs")), Some("rust"));
        assert_eq!(language_of(Path::new("x.PY")), Some("python"));
        assert_eq!(language_of(Path::new("x.tsx")), Some("typescriptreact"));
        assert_eq!(language_of(Path::new("x.h")), Some("c"));
        assert_eq!(language_of(Path::new("x.md")), None);
    }

    #[test]
    fn root_is_the_nearest_marker_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("crates/a/src")).unwrap();
        std::fs::write(ws.join("Cargo.toml"), "").unwrap();
        std::fs::write(ws.join("crates/a/Cargo.toml"), "").unwrap();
        let markers = vec!["Cargo.toml".to_string()];
        let file = ws.join("crates/a/src/lib.rs");
        assert_eq!(find_root(ws, &file, &markers), Some(ws.join("crates/a")));
        assert_eq!(
            find_root(ws, &ws.join("src/main.rs"), &markers),
            Some(ws.to_path_buf())
        );
        // A marker above the workspace does not count.
        let inner = ws.join("crates/b");
        std::fs::create_dir_all(&inner).unwrap();
        assert_eq!(find_root(&inner, &inner.join("x.rs"), &markers), None);
    }

    #[test]
    fn project_binaries_win_and_versioned_names_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        executable(&ws.join("node_modules/.bin/typescript-language-server"));
        let table = builtin();
        let ts = table
            .iter()
            .find(|s| s.id == "typescript-language-server")
            .unwrap();
        assert_eq!(
            resolve_binary(ts, ws, &ws.join("web")),
            Ok(ws.join("node_modules/.bin/typescript-language-server"))
        );
        // Versioned names: simulate a PATH holding clangd-14 and clangd-19.
        let bin = tempfile::tempdir().unwrap();
        executable(&bin.path().join("clangd-14"));
        executable(&bin.path().join("clangd-19"));
        executable(&bin.path().join("clangd-tidy"));
        let clangd = table.iter().find(|s| s.id == "clangd").unwrap();
        let path = [bin.path().to_path_buf()];
        assert_eq!(
            resolve_in(clangd, ws, ws, &path),
            Ok(bin.path().join("clangd-19"))
        );
        executable(&bin.path().join("clangd"));
        assert_eq!(
            resolve_in(clangd, ws, ws, &path),
            Ok(bin.path().join("clangd"))
        );
        let mut plain = clangd.clone();
        plain.versioned = false;
        std::fs::remove_file(bin.path().join("clangd")).unwrap();
        assert_eq!(resolve_in(&plain, ws, ws, &path), Err(NoBinary::default()));
    }

    fn script(path: &Path, body: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_binary_resolves_only_when_its_probe_runs_and_is_probed_once() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        // What rustup's proxy does for a component that is not installed.
        let broken = dir.path().join("broken");
        script(
            &broken.join("rust-analyzer"),
            "echo \"error: Unknown binary 'rust-analyzer' in official toolchain 'stable'.\" >&2\nexit 1",
        );
        // A working one, counting its runs.
        let good = dir.path().join("good");
        script(
            &good.join("rust-analyzer"),
            &format!("echo run >> {}\nexit 0", dir.path().join("runs").display()),
        );
        let table = builtin();
        let ra = table.iter().find(|s| s.id == "rust-analyzer").unwrap();
        assert_eq!(ra.probe.as_deref(), Some(&["--version".to_string()][..]));

        let only_broken = [broken.clone()];
        let refused = resolve_in(ra, &ws, &ws, &only_broken).unwrap_err();
        assert_eq!(refused.unusable.len(), 1, "{refused:?}");
        let said = refused.describe(ra);
        assert!(
            said.starts_with("binary `rust-analyzer` found but not usable: `"),
            "{said}"
        );
        assert!(
            said.ends_with(
                "rust-analyzer --version` exited with code 1: error: Unknown binary 'rust-analyzer' in official toolchain 'stable'."
            ),
            "{said}"
        );

        let both = [broken, good.clone()];
        for _ in 0..3 {
            assert_eq!(
                resolve_in(ra, &ws, &ws, &both),
                Ok(good.join("rust-analyzer"))
            );
        }
        let runs = std::fs::read_to_string(dir.path().join("runs")).unwrap();
        assert_eq!(runs.lines().count(), 1, "probed once per binary");

        // A binary that is only found, not probed, resolves as it is.
        let mut unprobed = ra.clone();
        unprobed.probe = None;
        assert_eq!(
            resolve_in(&unprobed, &ws, &ws, &only_broken),
            Ok(only_broken[0].join("rust-analyzer"))
        );
    }

    #[test]
    fn a_probe_that_hangs_is_bounded_and_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let hang = dir.path().join("hang");
        script(
            &hang,
            &format!("echo $$ > {}\nexec sleep 600", pid_file.display()),
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

    #[test]
    fn choose_says_which_of_marker_and_binary_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let mut config = Config::default();
        for server in &mut config.servers {
            server.binaries = vec![format!("gantry-test-missing-{}", server.id)];
            server.versioned = false;
        }
        let file = ws.join("main.go");
        match choose(&config, ws, &file) {
            Choice::Missing(reasons) => {
                assert_eq!(reasons.len(), 1);
                assert!(reasons[0].starts_with("gopls: no root marker (go.work, go.mod)"));
                assert!(reasons[0].contains("binary `gantry-test-missing-gopls` not found"));
            }
            other => panic!("{other:?}"),
        }
        std::fs::write(ws.join("go.mod"), "module x\n").unwrap();
        let Choice::Missing(reasons) = choose(&config, ws, &file) else {
            panic!()
        };
        assert!(!reasons[0].contains("root marker"), "{reasons:?}");
        executable(&ws.join(".venv/bin/gantry-test-missing-gopls"));
        assert!(matches!(
            choose(&config, ws, &file),
            Choice::Usable { ref root, .. } if root == ws
        ));
        assert!(matches!(
            choose(&config, ws, &ws.join("README.md")),
            Choice::NoServer
        ));
    }

    #[test]
    fn settings_change_add_and_disable_servers() {
        let settings: LspSettings = serde_json::from_value(serde_json::json!({
            "idleSeconds": 5,
            "servers": {
                "basedpyright": {"disabled": true},
                "clangd": {"args": ["--log=verbose"]},
                "zls": {"command": ["zls"], "languages": ["zig"], "rootMarkers": ["build.zig"]}
            }
        }))
        .unwrap();
        let config = Config::from_settings(settings);
        assert_eq!(config.idle, Duration::from_secs(5));
        assert!(config.servers.iter().all(|s| s.id != "basedpyright"));
        let clangd = config.servers.iter().find(|s| s.id == "clangd").unwrap();
        assert_eq!(clangd.args, ["--log=verbose"]);
        assert!(clangd.versioned);
        let zls = config.servers.iter().find(|s| s.id == "zls").unwrap();
        assert_eq!(zls.root_markers, ["build.zig"]);
        let bad = serde_json::from_value::<LspSettings>(serde_json::json!({"idle": 1}));
        assert!(bad.unwrap_err().to_string().contains("unknown field"));
    }
}
