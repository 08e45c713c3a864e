//! Whose toolchain a language server and a project checker use (SPEC §2).
//! At read tier, and in a folder the user has not trusted, none of the
//! checkout's code runs to serve `lsp` or diagnostics: each server is
//! handed an interpreter, a TypeScript or a Rust toolchain that Gantry
//! found outside the checkout, and is set so it cannot pick the
//! checkout's own (basedpyright's `.venv/bin/python`, a
//! `node_modules/typescript` found by walking up to `/`, a
//! `rust-toolchain.toml` that names any binary, build scripts and proc
//! macros). In a trusted folder at write tier and above, the project's own
//! toolchain may run, confined like every other child.
//!
//! Nothing Gantry chooses lies where a confined command may write (the
//! workspace, the temp directory, the caches): it could have been planted
//! there.

use std::path::{Path, PathBuf};

use gantry_core::Tier;
use gantry_process::program::{answer, on_path};
use serde_json::{Value, json};

use crate::spec::ServerSpec;

/// Whose toolchain the run's servers use, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toolchain {
    /// A trusted folder at write tier or above: the project's own.
    Project,
    /// A read-tier surface: only what Gantry found outside the checkout.
    ReadTier,
    /// A folder the user's `trustedFolders` does not list: the same.
    Untrusted,
}

impl Toolchain {
    /// The toolchain of a run with tier cap `tier` in a folder that is
    /// `trusted` or not; read tier decides first.
    pub fn of(tier: Tier, trusted: bool) -> Self {
        if tier == Tier::Read {
            Toolchain::ReadTier
        } else if !trusted {
            Toolchain::Untrusted
        } else {
            Toolchain::Project
        }
    }

    /// Whether only toolchains from outside the checkout may run.
    pub fn outside_only(self) -> bool {
        self != Toolchain::Project
    }

    /// Why, in words that follow "because" or stand in parentheses.
    pub fn why(self) -> &'static str {
        match self {
            Toolchain::Project => "trusted folder at write tier: the project's own, confined",
            Toolchain::ReadTier => "read tier: none of the checkout's code runs",
            Toolchain::Untrusted => "folder not trusted: none of the checkout's code runs",
        }
    }

    /// How to have the project's own toolchain, for a message that says
    /// what was not run.
    pub fn remedy(self) -> &'static str {
        "list the folder in the user's `trustedFolders` (~/.gantry/settings.json) and use a \
         surface at write tier or above (`--tier write`)"
    }
}

/// The places a chosen program may not lie under: where a confined
/// command can write (the workspace, the temp directory, the caches),
/// canonical.
#[derive(Debug, Clone, Default)]
pub struct Planted(Vec<PathBuf>);

impl Planted {
    /// From the sandbox's writable places and the workspace roots, plus
    /// the temp directory whether or not the sandbox confines.
    pub fn new(places: impl IntoIterator<Item = PathBuf>) -> Self {
        let temp = [
            std::env::temp_dir(),
            "/tmp".into(),
            "/var/tmp".into(),
            "/dev/shm".into(),
        ];
        Planted(
            places
                .into_iter()
                .chain(temp)
                .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
                .collect(),
        )
    }

    /// `path` canonical, or why Gantry will not run it: missing, or where
    /// a confined command could have put it.
    pub fn vet(&self, what: &str, path: &Path) -> Result<PathBuf, String> {
        let real = std::fs::canonicalize(path)
            .map_err(|e| format!("{what} {} cannot be resolved: {e}", path.display()))?;
        match self.0.iter().find(|place| real.starts_with(place)) {
            Some(place) => Err(format!(
                "{what} {} is refused: it lies under {}, where a confined command can write",
                real.display(),
                place.display()
            )),
            None => Ok(real),
        }
    }
}

/// A server as it is started: its table entry with Gantry's choices put
/// in, the binary, its environment, and what it uses in words for `lsp
/// status`.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The table entry, settings and initialization options merged.
    pub spec: ServerSpec,
    /// The binary that runs (rustup's proxy replaced by the real one).
    pub binary: PathBuf,
    /// Variables set for the server on top of the command environment.
    pub env: Vec<(String, String)>,
    /// Which interpreter, TypeScript or toolchain it uses, and why.
    pub uses: String,
}

/// Prepares `spec` found at `binary` to serve `root`, as `toolchain`
/// allows; an error says why it cannot run so.
pub fn prepare(
    toolchain: Toolchain,
    planted: &Planted,
    spec: &ServerSpec,
    workspace: &Path,
    root: &Path,
    binary: &Path,
) -> Result<Prepared, String> {
    let mut prepared = Prepared {
        spec: spec.clone(),
        binary: binary.to_path_buf(),
        env: Vec::new(),
        uses: String::new(),
    };
    let why = toolchain.why();
    if toolchain.outside_only() {
        planted.vet(&format!("{}'s binary", spec.id), binary)?;
    }
    match spec.id.as_str() {
        "basedpyright" | "pyright" | "pylsp" => {
            if !toolchain.outside_only() {
                prepared.uses =
                    format!("the project's interpreter (`.venv/bin/python` when present) ({why})");
                return Ok(prepared);
            }
            let python = outside_python(planted)?;
            let shown = python.display().to_string();
            if spec.id == "pylsp" {
                merge(
                    &mut prepared.spec.settings,
                    json!({"pylsp": {"plugins": {
                        "jedi": {"environment": shown},
                        "pylsp_mypy": {"enabled": false}
                    }}}),
                );
            } else {
                merge(
                    &mut prepared.spec.settings,
                    json!({"python": {"pythonPath": shown}}),
                );
            }
            let packages = venv_site_packages(root);
            if !packages.is_empty() && spec.id != "pylsp" {
                // pyright reads `basedpyright.analysis` before
                // `python.analysis`.
                let section = if spec.id == "basedpyright" {
                    "basedpyright"
                } else {
                    "python"
                };
                let paths: Vec<String> = packages.iter().map(|p| p.display().to_string()).collect();
                merge(
                    &mut prepared.spec.settings,
                    json!({section: {"analysis": {"extraPaths": paths}}}),
                );
            }
            prepared.uses = format!(
                "interpreter {shown}{} ({why})",
                if packages.is_empty() {
                    ""
                } else {
                    "; the project's virtual environment is read for imports, never run"
                }
            );
        }
        "typescript-language-server" => {
            let own = (toolchain == Toolchain::Project)
                .then(|| project_tsserver(workspace, root))
                .flatten();
            let (tsserver, whose) = match own {
                Some(own) => (own, "the project's"),
                None => (
                    outside_tsserver(planted, binary)?,
                    "Gantry's choice outside the checkout",
                ),
            };
            // Always named, so no `node_modules` found by walking up to
            // `/` (a temp folder above the workspace) is ever used.
            merge(
                &mut prepared.spec.initialization_options,
                json!({"tsserver": {"path": tsserver}}),
            );
            if toolchain.outside_only() {
                // Type acquisition runs npm.
                merge(
                    &mut prepared.spec.initialization_options,
                    json!({"disableAutomaticTypingAcquisition": true}),
                );
            }
            prepared.uses = format!("TypeScript {} ({whose}; {why})", tsserver.display());
        }
        "rust-analyzer" => {
            if !toolchain.outside_only() {
                prepared.uses = format!(
                    "the project's toolchain (rust-toolchain.toml honoured), build scripts and \
                     proc macros on ({why})"
                );
                return Ok(prepared);
            }
            let rust = outside_rust(planted, binary)?;
            prepared.binary = rust.analyzer.clone();
            prepared.env = rust.env();
            merge(
                &mut prepared.spec.initialization_options,
                json!({
                    "cargo": {"buildScripts": {"enable": false}},
                    "procMacro": {"enable": false},
                    "checkOnSave": false
                }),
            );
            prepared.uses = format!(
                "toolchain {} ({}; rust-toolchain.toml and .cargo/config.toml programs are \
                 ignored), build scripts and proc macros off ({why})",
                rust.name.as_deref().unwrap_or("from PATH"),
                rust.analyzer.display()
            );
        }
        "gopls" if toolchain.outside_only() => {
            prepared.env = go_env();
            prepared.uses = format!(
                "the go on PATH with GOTOOLCHAIN=local (go.mod cannot fetch another) and cgo off \
                 ({why})"
            );
        }
        "dart" if toolchain.outside_only() => {
            return Err(format!(
                "not started ({why}): analyzer plugins named in analysis_options.yaml run the \
                 project's code; to use it, {}",
                toolchain.remedy()
            ));
        }
        "clangd" => {
            prepared.uses =
                "no project program (the project's compiler is never queried)".to_string();
        }
        _ => {}
    }
    Ok(prepared)
}

/// What a Go command gets outside the project's toolchain: no toolchain
/// switch named by `go.mod`, no C compiler run for cgo.
pub(crate) fn go_env() -> Vec<(String, String)> {
    vec![
        ("GOTOOLCHAIN".into(), "local".into()),
        ("CGO_ENABLED".into(), "0".into()),
    ]
}

/// Deep-merges `extra` into `base` (objects key by key; anything else is
/// replaced).
fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(base), Value::Object(extra)) => {
            for (key, value) in extra {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, extra) => *base = extra,
    }
}

/// The interpreter Gantry chooses: `python3` on PATH, asked for its real
/// `sys.executable` from `/` in isolated mode (a pyenv shim then answers
/// with the interpreter it stands for, not one a `.python-version`
/// chose), canonical and outside every planted place.
pub(crate) fn outside_python(planted: &Planted) -> Result<PathBuf, String> {
    let python = on_path("python3")
        .ok_or("no `python3` on PATH to serve as the interpreter outside the checkout")?;
    let args = ["-I", "-c", "import sys; print(sys.executable)"].map(String::from);
    let real =
        answer(&python, &args).map_err(|e| format!("cannot ask python3 where it is: {e}"))?;
    planted.vet("the interpreter", Path::new(&real))
}

/// The site-packages folders of the project's `.venv` or `venv` (those
/// with a `pyvenv.cfg`), for imports to resolve without running it.
fn venv_site_packages(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for venv in [".venv", "venv"].map(|name| root.join(name)) {
        if !venv.join("pyvenv.cfg").is_file() {
            continue;
        }
        for lib in ["lib", "lib64"] {
            let Ok(entries) = std::fs::read_dir(venv.join(lib)) else {
                continue;
            };
            for entry in entries.flatten() {
                let packages = entry.path().join("site-packages");
                let named = entry.file_name().to_string_lossy().starts_with("python");
                if named && packages.is_dir() && !found.contains(&packages) {
                    found.push(packages);
                }
            }
        }
    }
    found.sort();
    found
}

/// The project's own `node_modules/typescript/lib/tsserver.js`, from
/// `root` up to the workspace (never above it).
fn project_tsserver(workspace: &Path, root: &Path) -> Option<PathBuf> {
    root.ancestors()
        .take_while(|dir| dir.starts_with(workspace))
        .map(|dir| dir.join("node_modules/typescript/lib/tsserver.js"))
        .find(|tsserver| tsserver.is_file())
}

/// The TypeScript Gantry found outside the checkout: the one beside the
/// `tsc` on PATH, else typescript-language-server's own dependency or its
/// sibling in a global `node_modules`, each canonical and outside every
/// planted place.
fn outside_tsserver(planted: &Planted, server: &Path) -> Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if let Some(tsc) = on_path("tsc").and_then(|tsc| std::fs::canonicalize(tsc).ok())
        && let Some(package) = tsc.parent().and_then(Path::parent)
    {
        candidates.push(package.join("lib/tsserver.js"));
    }
    if let Ok(server) = std::fs::canonicalize(server)
        && let Some(package) = server.parent().and_then(Path::parent)
    {
        candidates.push(package.join("node_modules/typescript/lib/tsserver.js"));
        if let Some(modules) = package.parent() {
            candidates.push(modules.join("typescript/lib/tsserver.js"));
        }
    }
    let mut refused = Vec::new();
    for candidate in candidates.iter().filter(|c| c.is_file()) {
        match planted.vet("tsserver", candidate) {
            Ok(real) => return Ok(real),
            Err(why) => refused.push(why),
        }
    }
    refused.insert(
        0,
        "no TypeScript outside the checkout (lib/tsserver.js beside the `tsc` on PATH or \
         typescript-language-server's own); install one globally (npm install -g typescript)"
            .into(),
    );
    Err(refused.join("; "))
}

/// A Rust toolchain chosen outside the checkout.
#[derive(Debug, Clone)]
pub(crate) struct Rust {
    /// rustup's name for it (`stable-x86_64-unknown-linux-gnu`), when
    /// rustup manages it.
    name: Option<String>,
    /// The real rust-analyzer binary, not a proxy.
    analyzer: PathBuf,
    /// Its `rustc` and `cargo`.
    rustc: PathBuf,
    cargo: PathBuf,
}

impl Rust {
    /// The variables that keep the checkout's files from choosing a
    /// program: rustup's proxies run this toolchain whatever
    /// `rust-toolchain.toml` says, and `.cargo/config.toml`'s `build.rustc`
    /// and wrappers are overridden by the environment (cargo's
    /// `target.*.runner` only runs for `cargo run`/`test`, which nothing
    /// here calls).
    fn env(&self) -> Vec<(String, String)> {
        let rustc = self.rustc.display().to_string();
        let mut env: Vec<(String, String)> = vec![
            ("RUSTC".into(), rustc.clone()),
            ("CARGO_BUILD_RUSTC".into(), rustc),
            ("CARGO".into(), self.cargo.display().to_string()),
            ("RUSTC_WRAPPER".into(), String::new()),
            ("CARGO_BUILD_RUSTC_WRAPPER".into(), String::new()),
            ("RUSTC_WORKSPACE_WRAPPER".into(), String::new()),
            ("CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER".into(), String::new()),
        ];
        if let Some(name) = &self.name {
            env.push(("RUSTUP_TOOLCHAIN".into(), name.clone()));
        }
        env
    }
}

/// The Rust toolchain outside the checkout for `binary` (the
/// rust-analyzer found on PATH): when it is rustup's proxy, the default
/// toolchain's real binaries as `rustup which` answers from `/`; else
/// the binary itself with the `rustc` and `cargo` on PATH.
pub(crate) fn outside_rust(planted: &Planted, binary: &Path) -> Result<Rust, String> {
    use std::os::unix::fs::MetadataExt;
    let same_file = |a: &Path, b: &Path| match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    };
    let rustup = on_path("rustup").filter(|rustup| same_file(rustup, binary));
    let which = |name: &str| -> Result<PathBuf, String> {
        let found = match &rustup {
            Some(rustup) => answer(rustup, &["which".into(), name.into()])
                .map(PathBuf::from)
                .map_err(|e| format!("rustup has no `{name}` in its default toolchain: {e}"))?,
            None if name == "rust-analyzer" => binary.to_path_buf(),
            None => on_path(name).ok_or(format!("no `{name}` on PATH"))?,
        };
        planted.vet(&format!("the toolchain's {name}"), &found)
    };
    let rustc = which("rustc")?;
    let name = rustup.as_ref().and_then(|_| {
        let toolchain = rustc.parent()?.parent()?;
        Some(toolchain.file_name()?.to_string_lossy().into_owned())
    });
    Ok(Rust {
        name,
        analyzer: which("rust-analyzer")?,
        cargo: which("cargo")?,
        rustc,
    })
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn read_tier_decides_first_then_trust() {
        assert_eq!(Toolchain::of(Tier::Read, true), Toolchain::ReadTier);
        assert_eq!(Toolchain::of(Tier::Exec, false), Toolchain::Untrusted);
        assert_eq!(Toolchain::of(Tier::Write, true), Toolchain::Project);
        assert!(!Toolchain::Project.outside_only());
    }

    #[test]
    fn a_program_under_a_writable_place_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("python3");
        std::fs::write(&file, "").unwrap();
        let why = Planted::new([]).vet("the interpreter", &file).unwrap_err();
        assert!(why.contains("where a confined command can write"), "{why}");
        assert_eq!(
            Planted::new([]).vet("x", Path::new("/bin/sh")).ok(),
            std::fs::canonicalize("/bin/sh").ok()
        );
    }

    #[test]
    fn settings_merge_key_by_key() {
        let mut base = json!({"python": {"analysis": {"typeCheckingMode": "strict"}}});
        merge(
            &mut base,
            json!({"python": {"pythonPath": "/usr/bin/python3"}}),
        );
        assert_eq!(
            base,
            json!({"python": {"analysis": {"typeCheckingMode": "strict"}, "pythonPath": "/usr/bin/python3"}})
        );
    }
}
