//! SPEC §2: in a folder not trusted (and at read tier), no language server
//! and no checker runs the checkout's code. Each test plants a payload
//! that leaves a marker in a folder outside every writable root (and one
//! in the workspace: the point is that it never ran at all), drives the
//! real server, and fails if either marker appears.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use gantry_core::{Run, Settings, Workspace};
use serde_json::json;

/// Where a payload leaves word that it ran: outside every writable root,
/// and inside the workspace.
struct Markers {
    _outside: tempfile::TempDir,
    paths: [PathBuf; 2],
}

impl Markers {
    fn new(workspace: &Path) -> Self {
        let outside = gantry_core::testing::outside_the_writable_defaults();
        let paths = [outside.path().join("ran"), workspace.join("payload-ran")];
        Markers {
            _outside: outside,
            paths,
        }
    }

    /// A shell script that leaves both markers, then exits 0.
    fn script(&self, path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        let body: String = self
            .paths
            .iter()
            .map(|marker| format!("echo \"$0 $*\" >> '{}' 2>/dev/null\n", marker.display()))
            .collect();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("#!/bin/sh\n{body}exit 0\n")).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The same in JavaScript (a planted tsserver or plugin) or Python (a
    /// module the interpreter could import).
    fn source(&self, path: &Path, language: &str) {
        let body: String = self
            .paths
            .iter()
            .map(|marker| match language {
                "js" => format!(
                    "try {{ require('fs').appendFileSync('{}', __filename + '\\n'); }} catch (e) {{}}\n",
                    marker.display()
                ),
                _ => format!(
                    "try:\n    open('{}', 'a').write(__file__ + '\\n')\nexcept OSError:\n    pass\n",
                    marker.display()
                ),
            })
            .collect();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }

    /// Fails naming what ran if any marker is there.
    fn assert_never_ran(&self, context: &str) {
        for marker in &self.paths {
            if let Ok(ran) = std::fs::read_to_string(marker) {
                panic!("{context}: a payload ran ({}): {ran}", marker.display());
            }
        }
    }
}

/// A run on `root` with the family wired, in a folder not trusted (the
/// tests' settings come from no user file).
fn run_on(root: &Path) -> Run {
    gantry_core::testing::state_dir();
    let settings = Settings::from_value(json!({"lsp": {
        "requestTimeoutSeconds": 60, "startTimeoutSeconds": 60, "diagnosticsDeadlineMs": 20000
    }}))
    .unwrap();
    let builder = Run::builder(Workspace::new(root).unwrap()).settings(settings);
    gantry_lsp::register(builder).build()
}

fn write(root: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// A Python project with a virtual environment whose interpreter is a
/// payload and whose site-packages holds a package the code imports.
fn venv_project(root: &Path, markers: &Markers) {
    write(
        root,
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"demo\"\nversion = \"0\"\n",
            ),
            (".venv/pyvenv.cfg", "home = /usr/bin\n"),
            (
                ".venv/lib/python3.11/site-packages/venvpkg/__init__.py",
                "def venv_function(count: int) -> str:\n    \"\"\"Only the venv has this.\"\"\"\n    return str(count)\n",
            ),
            (
                "main.py",
                "from venvpkg import venv_function\n\nvenv_function(3)\n",
            ),
        ],
    );
    for name in ["python", "python3"] {
        markers.script(&root.join(".venv/bin").join(name));
    }
    // Modules an interpreter run from the root could import.
    for module in ["json", "sitecustomize", "encodings", "os"] {
        markers.source(&root.join(format!("{module}.py")), "py");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basedpyright_resolves_the_venv_without_running_its_interpreter() {
    if !need(&["basedpyright-langserver"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let markers = Markers::new(&root);
    venv_project(&root, &markers);
    let run = run_on(&root);
    let hover = lsp(
        &run,
        json!({"action": "hover", "file": "main.py", "line": 3, "symbol": "venv_function"}),
    )
    .await;
    let definition = lsp(
        &run,
        json!({"action": "definition", "file": "main.py", "line": 3, "symbol": "venv_function"}),
    )
    .await;
    let status = lsp(&run, json!({"action": "status"})).await;
    let all = lsp(&run, json!({"action": "diagnostics", "file": "*"})).await;
    run.shutdown().await;
    markers.assert_never_ran(&format!("hover, definition, diagnostics *: {all}"));
    assert!(
        hover.contains("venv_function(count: int) -> str") && hover.contains("Only the venv"),
        "the venv's package resolves: {hover}"
    );
    assert!(
        definition.contains(".venv/lib/python3.11/site-packages/venvpkg/__init__.py:1"),
        "{definition}"
    );
    assert!(
        status.contains("uses interpreter /") && status.contains("never run"),
        "{status}"
    );
    assert!(status.contains("folder not trusted"), "{status}");
}

/// What an attacker tries next: a config file that names a planted
/// virtual environment (pyrightconfig.json, and pyproject.toml's
/// `[tool.basedpyright]`) for basedpyright to take its interpreter from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_naming_a_planted_venv_runs_nothing() {
    if !need(&["basedpyright-langserver"]) {
        return;
    }
    for config in ["pyrightconfig.json", "pyproject.toml"] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let markers = Markers::new(&root);
        venv_project(&root, &markers);
        let text = match config {
            "pyrightconfig.json" => {
                r#"{"venvPath": ".", "venv": "evil", "pythonPath": "evil/bin/python"}"#
            }
            _ => {
                "[project]\nname = \"demo\"\nversion = \"0\"\n\n[tool.basedpyright]\nvenvPath = \".\"\nvenv = \"evil\"\n"
            }
        };
        write(
            &root,
            &[(config, text), ("evil/pyvenv.cfg", "home = /usr/bin\n")],
        );
        markers.script(&root.join("evil/bin/python"));
        markers.script(&root.join("evil/bin/python3"));
        let run = run_on(&root);
        let hover = lsp(
            &run,
            json!({"action": "hover", "file": "main.py", "line": 3, "symbol": "venv_function"}),
        )
        .await;
        run.shutdown().await;
        markers.assert_never_ran(&format!("{config}: {hover}"));
    }
}

/// A TypeScript project whose hover needs a real tsserver.
fn typescript_project(root: &Path) {
    write(
        root,
        &[
            (
                "tsconfig.json",
                r#"{"compilerOptions": {"strict": true, "plugins": [{"name": "evil-plugin"}]}}"#,
            ),
            ("package.json", r#"{"name": "demo"}"#),
            (
                "src/index.ts",
                "export function shout(word: string): string {\n  return word.toUpperCase();\n}\nshout(\"a\");\n",
            ),
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_tsserver_in_the_checkout_or_a_parent_never_runs() {
    if !typescript() {
        return;
    }
    // The workspace sits in a folder of its own, as a temp folder above
    // every workspace would.
    let parent = tempfile::tempdir().unwrap();
    let parent = parent.path().canonicalize().unwrap();
    let root = parent.join("ws");
    std::fs::create_dir(&root).unwrap();
    let markers = Markers::new(&root);
    typescript_project(&root);
    for dir in [&root, &parent] {
        markers.source(&dir.join("node_modules/typescript/lib/tsserver.js"), "js");
        write(
            dir,
            &[(
                "node_modules/typescript/package.json",
                r#"{"name": "typescript", "version": "9.9.9"}"#,
            )],
        );
        // A tsconfig plugin, and a server binary in node_modules/.bin.
        markers.source(&dir.join("node_modules/evil-plugin/index.js"), "js");
        markers.script(&dir.join("node_modules/.bin/typescript-language-server"));
        markers.script(&dir.join("node_modules/.bin/tsc"));
    }
    let run = run_on(&root);
    let hover = lsp(
        &run,
        json!({"action": "hover", "file": "src/index.ts", "line": 4, "symbol": "shout"}),
    )
    .await;
    let status = lsp(&run, json!({"action": "status"})).await;
    let all = lsp(&run, json!({"action": "diagnostics", "file": "*"})).await;
    run.shutdown().await;
    markers.assert_never_ran(&format!("hover, status, diagnostics *: {status}\n{all}"));
    assert!(
        hover.contains("function shout(word: string): string"),
        "the outside TypeScript answers: {hover}"
    );
    assert!(
        status.contains("uses TypeScript /") && status.contains("outside the checkout"),
        "{status}"
    );
}

/// rustup's proxy obeys `rust-toolchain.toml`'s `path`; cargo's config
/// names a wrapper. Neither runs: not for the server (whether or not
/// rust-analyzer is installed, the proxy is never run from the root) and
/// not for `diagnostics "*"` (no `cargo check` outside trust).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolchain_file_and_cargo_config_choose_no_program() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let markers = Markers::new(&root);
    let toolchain = root.join("evil-toolchain");
    for tool in ["rust-analyzer", "cargo", "rustc"] {
        markers.script(&toolchain.join("bin").join(tool));
    }
    markers.script(&root.join("wrapper.sh"));
    write(
        &root,
        &[
            (
                "rust-toolchain.toml",
                &format!("[toolchain]\npath = \"{}\"\n", toolchain.display()),
            ),
            (
                ".cargo/config.toml",
                "[build]\nrustc-wrapper = \"./wrapper.sh\"\nrustc = \"./wrapper.sh\"\n",
            ),
            (
                "Cargo.toml",
                "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            (
                "src/main.rs",
                "fn main() {\n    let answer = 42;\n    println!(\"{answer}\");\n}\n",
            ),
        ],
    );
    let run = run_on(&root);
    let hover = lsp(
        &run,
        json!({"action": "hover", "file": "src/main.rs", "line": 2, "symbol": "answer"}),
    )
    .await;
    let status = lsp(&run, json!({"action": "status"})).await;
    let all = lsp(&run, json!({"action": "diagnostics", "file": "*"})).await;
    run.shutdown().await;
    markers.assert_never_ran(&format!(
        "hover: {hover}\nstatus: {status}\ndiagnostics *: {all}"
    ));
    assert!(
        all.contains("`cargo check` not run (folder not trusted") && all.contains("trustedFolders"),
        "{all}"
    );
}
