//! Which interpreter a kernel runs, and the environment `%pip` installs
//! into: the project's `.venv` (or `venv`) when it has one, otherwise an
//! environment Gantry creates once per workspace in its state directory
//! (`--system-site-packages`, so what the system has stays importable),
//! so the system Python is never modified and nothing is written into the
//! checkout.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gantry_process::Sandbox;

/// A kernel's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// CPython, with the driver in `drivers/python.py`.
    Python,
    /// Node.js, with the driver in `drivers/node.js`.
    JavaScript,
}

impl Language {
    /// The name people use.
    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "Python",
            Language::JavaScript => "JavaScript",
        }
    }

    /// The driver, embedded in the binary and handed to the interpreter
    /// on its command line.
    pub fn driver(self) -> &'static str {
        match self {
            Language::Python => include_str!("../drivers/python.py"),
            Language::JavaScript => include_str!("../drivers/node.js"),
        }
    }
}

/// The interpreter a kernel runs and where it came from.
#[derive(Debug, Clone)]
pub struct Interpreter {
    /// The program to start.
    pub program: PathBuf,
    /// Where it comes from, for the model: "the project's .venv".
    pub origin: String,
    /// Gantry's kernel environment, when the kernel runs in it: the
    /// kernel may write there (`%pip`) beyond the sandbox's defaults.
    pub environment: Option<PathBuf>,
}

/// What `locate` would choose here, without creating or starting
/// anything: for `gantry status`.
pub fn describe(root: &Path) -> Vec<String> {
    let python = [".venv", "venv"]
        .into_iter()
        .map(|dir| root.join(dir).join("bin").join("python"))
        .find(|python| python.is_file())
        .map(|python| format!("eval: Python cells run {}", python.display()))
        .unwrap_or_else(|| {
            let env = gantry_core::state::root_dir("kernel", root).join("venv");
            let state = if env.join("bin").join("python").is_file() {
                "made"
            } else {
                "made on the first cell"
            };
            format!(
                "eval: Python cells run python3 in Gantry's environment for this workspace ({}, {state}); a .venv in the workspace would be preferred",
                env.display()
            )
        });
    let node = match on_path("node") {
        Some(node) => format!("eval: JavaScript cells run {}", node.display()),
        None => "eval: JavaScript cells cannot run: node is not on PATH (install Node.js)".into(),
    };
    vec![python, node]
}

/// The first executable file named `name` on `PATH`, as the spawn will
/// find it (a few lines; no crate needed for that).
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| {
            path.metadata()
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// How long creating a kernel environment may take.
const CREATE_BOUND: Duration = Duration::from_secs(120);

/// The interpreter for `language` in the workspace at `root`; for Python
/// the project's environment, else Gantry's one for this workspace in the
/// state directory, created on first use in `sandbox`.
pub async fn locate(
    language: Language,
    root: &Path,
    sandbox: &Sandbox,
) -> Result<Interpreter, String> {
    if language == Language::JavaScript {
        return Ok(Interpreter {
            program: "node".into(),
            origin: "node on PATH".into(),
            environment: None,
        });
    }
    for dir in [".venv", "venv"] {
        let python = root.join(dir).join("bin").join("python");
        if python.is_file() {
            return Ok(Interpreter {
                program: python,
                origin: format!("the project's {dir}"),
                environment: None,
            });
        }
    }
    let env = gantry_core::state::root_dir("kernel", root).join("venv");
    let python = env.join("bin").join("python");
    if !python.is_file() {
        create(root, sandbox).await?;
    }
    Ok(Interpreter {
        program: python,
        origin: "Gantry's kernel environment for this workspace".into(),
        environment: Some(env),
    })
}

/// Creates the environment of the workspace at `root` (and the folders
/// above it). Without pip of its own, which makes it fast: `%pip` runs the
/// system's pip, visible through the system site packages, and that
/// installs into the environment. Two runs creating it at once is
/// harmless: `venv` on an existing environment only completes it.
///
/// Confined like the kernel itself, writing only its own folder, isolated
/// (`-I`: no current directory, user site or `PYTHON*` variables on the
/// path) and run from that folder: a `venv.py` in the checkout is never
/// what `-m venv` imports.
async fn create(root: &Path, sandbox: &Sandbox) -> Result<(), String> {
    let dir = gantry_core::state::create_dir("kernel", root)
        .map_err(|e| format!("cannot make the kernel environment's folder: {e}"))?;
    let env = dir.join("venv");
    let child = gantry_process::Command::new("python3", &sandbox.also_writable(&dir))
        .args([
            "-I",
            "-m",
            "venv",
            "--system-site-packages",
            "--without-pip",
        ])
        .arg(&env)
        .current_dir(&dir)
        .spawn()
        .map_err(|e| format!("cannot run python3 to create the kernel environment: {e}"))?;
    let status = tokio::time::timeout(CREATE_BOUND, child.wait())
        .await
        .map_err(|_| "creating the kernel environment took over 2 minutes".to_string())?
        .map_err(|e| e.to_string())?;
    if !status.success() {
        let why = child.stderr().map(|c| c.explain()).unwrap_or_default();
        return Err(format!(
            "python3 -I -m venv {} {}: {why}",
            env.display(),
            gantry_process::describe_exit(status)
        ));
    }
    Ok(())
}
