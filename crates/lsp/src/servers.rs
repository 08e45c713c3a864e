//! The server table: which server serves which language, where its root
//! is, and where its binary is. A server is usable for a file only when a
//! root marker exists above the file inside the workspace AND a binary
//! resolves and runs (gantry-process's [`Program`], shared with the other
//! process-backed families); [`Choice`] says which one is missing
//! otherwise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gantry_process::{Located, Program};
use serde::Deserialize;
use serde_json::Value;

use crate::paths::language_of;
pub use crate::spec::ServerSpec;
use crate::toolchain::{Planted, Prepared, Toolchain, prepare};

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
        program: Program {
            binaries: strings(binaries),
            root_markers: strings(root_markers),
            ..Program::default()
        },
        args: strings(args),
        languages: strings(languages),
        initialization_options: Value::Null,
        settings: Value::Null,
        ready_log: None,
        compilation_database: false,
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
        server.program.probe = Some(vec![probe.to_string()]);
        server
    };
    // The background index makes references, workspace symbols and
    // renames cover the files of the compilation database, not just the
    // open ones; until it has gone through them once, answers say so.
    let mut clangd = spec(
        "clangd",
        &["clangd"],
        &["--background-index", "--log=error"],
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
    clangd.program.versioned = true;
    clangd.compilation_database = true;
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
    /// Restarts after crashes in a row (with no request answered between
    /// them) before a server is given up (default 3).
    pub max_restarts: Option<u32>,
    /// Whether a write that changes a declaration first finds the files
    /// using it (its references; in C and C++, the files that include the
    /// changed one) and opens them, so the problems it causes there are
    /// reported too (default true).
    pub dependents: Option<bool>,
    /// Most files one write looks at that way (default 50); the result
    /// says when there were more.
    pub dependents_cap: Option<usize>,
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
    /// Restarts allowed after crashes in a row.
    pub max_restarts: u32,
    /// Whether writes look for the files they could break.
    pub dependents: bool,
    /// Most such files one write opens.
    pub dependents_cap: usize,
    /// Whose toolchain servers and checkers use (the safe one, only what
    /// is outside the checkout, until [`Config::with_toolchain`] says).
    pub toolchain: Toolchain,
    /// Where no program Gantry chooses may lie.
    pub planted: Planted,
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
                server.program.binaries = command;
                server.program.versioned = false;
                server.program.probe = None;
            }
            if let Some(probe) = change.probe {
                server.program.probe = (!probe.is_empty()).then_some(probe);
            }
            if let Some(args) = change.args {
                server.args = args;
            }
            if let Some(languages) = change.languages {
                server.languages = languages;
            }
            if let Some(markers) = change.root_markers {
                server.program.root_markers = markers;
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
            dependents: settings.dependents.unwrap_or(true),
            dependents_cap: settings.dependents_cap.unwrap_or(50).max(1),
            toolchain: Toolchain::Untrusted,
            planted: Planted::default(),
        }
        .with_toolchain(Toolchain::Untrusted, Planted::new([]))
    }

    /// This configuration with `toolchain`: outside the project's own, no
    /// server binary is taken from inside the workspace (its
    /// `node_modules/.bin`, `.venv/bin`), and nothing chosen may lie in
    /// `planted` places.
    pub fn with_toolchain(mut self, toolchain: Toolchain, planted: Planted) -> Self {
        for server in &mut self.servers {
            server.program.outside_workspace_only = toolchain.outside_only();
        }
        self.toolchain = toolchain;
        self.planted = planted;
        self
    }

    /// `spec` found at `binary`, prepared to serve `root` with this
    /// configuration's toolchain.
    pub fn prepare(
        &self,
        spec: &ServerSpec,
        workspace: &Path,
        root: &Path,
        binary: &Path,
    ) -> Result<Prepared, String> {
        prepare(self.toolchain, &self.planted, spec, workspace, root, binary)
    }
}

/// What serving a file would take, as decided by the table.
#[derive(Debug, Clone)]
pub enum Choice {
    /// A server can start: marker and binary are both there, and the
    /// toolchain it may use.
    Usable {
        /// The server as it starts.
        prepared: Box<Prepared>,
        /// Its root for this file.
        root: PathBuf,
    },
    /// No server in the table serves this kind of file.
    NoServer,
    /// Servers exist for the language but none can start; one reason each.
    Missing(Vec<String>),
}

/// Chooses the server for `file`: the first of its language, in table
/// order, whose marker and binary are both present and that can run with
/// the configuration's toolchain.
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
        let prepared = spec
            .program
            .locate(workspace, file)
            .map_err(|why| why.to_string())
            .and_then(|Located { root, binary }| {
                let prepared = config.prepare(spec, workspace, &root, &binary)?;
                Ok((prepared, root))
            });
        match prepared {
            Ok((prepared, root)) => {
                return Choice::Usable {
                    prepared: Box::new(prepared),
                    root,
                };
            }
            Err(why) => reasons.push(format!("{}: {why}", spec.id)),
        }
    }
    if reasons.is_empty() {
        Choice::NoServer
    } else {
        Choice::Missing(reasons)
    }
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn the_table_probes_what_a_proxy_could_fake() {
        let table = builtin();
        let probe = |id: &str| {
            let server = table.iter().find(|s| s.id == id).unwrap();
            server.program.probe.clone()
        };
        // rustup installs a `rust-analyzer` proxy whether or not the
        // component is installed.
        assert_eq!(probe("rust-analyzer"), Some(vec!["--version".into()]));
        assert_eq!(probe("gopls"), Some(vec!["version".into()]));
        assert_eq!(probe("basedpyright"), None, "takes no --version");
    }

    #[test]
    fn choose_says_which_of_marker_and_binary_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let mut config = Config::default().with_toolchain(Toolchain::Project, Planted::default());
        for server in &mut config.servers {
            server.program.binaries = vec![format!("gantry-test-missing-{}", server.id)];
            server.program.versioned = false;
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
        assert!(clangd.program.versioned);
        let zls = config.servers.iter().find(|s| s.id == "zls").unwrap();
        assert_eq!(zls.program.root_markers, ["build.zig"]);
        assert_eq!(
            zls.program.probe, None,
            "a binary the user named is not probed"
        );
        let bad = serde_json::from_value::<LspSettings>(serde_json::json!({"idle": 1}));
        assert!(bad.unwrap_err().to_string().contains("unknown field"));
    }
}
