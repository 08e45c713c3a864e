//! SPEC §2 through the real binary: at read tier and in a folder not
//! trusted, the language servers run none of the checkout's code; in a
//! trusted folder at write tier they may, confined; and no server sees
//! Gantry's secrets. Each test plants a payload that leaves a marker in a
//! folder outside every writable root (and, where the point is that it
//! never ran, one in the workspace) and fails if a marker appears.
//! `GANTRY_SKIP_LSP=1` skips the tests that need a real language server.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};

/// Whether a test that needs `binary` runs (see the lsp crate's tests).
fn need(binary: &str) -> bool {
    let skipped = format!("the test, which needs {binary}");
    if gantry_core::testing::skip_requested("GANTRY_SKIP_LSP", &skipped) {
        return false;
    }
    assert!(
        gantry_process::program::on_path(binary).is_some(),
        "missing {binary} on PATH: scripts/install-lsp.sh installs it; set GANTRY_SKIP_LSP=1 to skip"
    );
    true
}

/// A shell script at `path` that appends to each of `markers`, then runs
/// `then`.
fn payload(path: &Path, markers: &[&Path], then: &str) {
    let body: String = markers
        .iter()
        .map(|m| format!("echo \"$0 $*\" >> '{}' 2>/dev/null\n", m.display()))
        .collect();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}{then}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn assert_absent(marker: &Path, context: &str) {
    if let Ok(ran) = std::fs::read_to_string(marker) {
        panic!("{context}: a payload ran ({}): {ran}", marker.display());
    }
}

struct Setup {
    ws: tempfile::TempDir,
    state: tempfile::TempDir,
    outside: tempfile::TempDir,
}

impl Setup {
    fn new(files: &[(&str, &str)]) -> Setup {
        let setup = Setup {
            ws: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
            outside: gantry_core::testing::outside_the_writable_defaults(),
        };
        for (name, text) in files {
            let path = setup.ws.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        setup
    }

    fn root(&self) -> PathBuf {
        self.ws.path().canonicalize().unwrap()
    }

    fn outside_marker(&self) -> PathBuf {
        self.outside.path().join("ran")
    }

    fn inside_marker(&self) -> PathBuf {
        self.root().join("payload-ran")
    }

    /// Lists the workspace in the user's `trustedFolders`.
    fn trust(&self) {
        let home = self.state.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let settings = json!({"trustedFolders": [self.root()]});
        std::fs::write(home.join("settings.json"), settings.to_string()).unwrap();
    }

    fn session(&self, surface: &[&str], calls: &[(&str, Value)]) -> Vec<String> {
        let requests: Vec<Value> = calls
            .iter()
            .map(|(tool, args)| json!({"tool": tool, "args": args}))
            .collect();
        let command = common::gantry(self.ws.path(), self.state.path());
        common::session_on(command, self.ws.path(), surface, |_| requests)
            .iter()
            .map(Value::to_string)
            .collect()
    }
}

const PYPROJECT: &str = "[project]\nname = \"demo\"\nversion = \"0\"\n";
const MAIN_PY: &str = "def greet(name: str) -> str:\n    return name\n\ngreet(\"x\")\n";

/// A read-only agent calls only `read_file` of a Python file, then
/// `lsp hover`: the checkout's `.venv/bin/python` never runs.
#[test]
fn a_read_tier_session_never_runs_the_checkouts_interpreter() {
    if !need("basedpyright-langserver") {
        return;
    }
    let setup = Setup::new(&[
        ("pyproject.toml", PYPROJECT),
        ("main.py", MAIN_PY),
        (".venv/pyvenv.cfg", "home = /usr/bin\n"),
    ]);
    // A trusted folder: read tier alone decides.
    setup.trust();
    let (outside, inside) = (setup.outside_marker(), setup.inside_marker());
    for name in ["python", "python3"] {
        payload(
            &setup.root().join(".venv/bin").join(name),
            &[&outside, &inside],
            "exit 0",
        );
    }
    let replies = setup.session(
        &["--tier", "read"],
        &[
            ("read_file", json!({"path": "main.py"})),
            (
                "lsp",
                json!({"action": "hover", "file": "main.py", "line": 4, "symbol": "greet"}),
            ),
            ("lsp", json!({"action": "status"})),
        ],
    );
    assert_absent(&outside, &replies.join("\n"));
    assert_absent(&inside, &replies.join("\n"));
    assert!(
        replies[1].contains("def greet(name: str)"),
        "{}",
        replies[1]
    );
    assert!(
        replies[2].contains("read tier: none of the checkout's code runs"),
        "{}",
        replies[2]
    );
}

/// rustup's proxy obeys `rust-toolchain.toml`'s `path`: neither `gantry
/// status` (the table's probes) nor a read-tier `lsp` on a Rust file runs
/// it. (rust-analyzer itself is not installed by scripts/install-lsp.sh:
/// the server start is covered only as far as it is tried here.)
#[test]
fn a_toolchain_file_runs_nothing_through_status_or_lsp() {
    let setup = Setup::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("src/main.rs", "fn main() {\n    let answer = 1;\n}\n"),
    ]);
    let (outside, inside) = (setup.outside_marker(), setup.inside_marker());
    let toolchain = setup.root().join("evil-toolchain");
    for tool in ["rust-analyzer", "cargo", "rustc"] {
        payload(
            &toolchain.join("bin").join(tool),
            &[&outside, &inside],
            "exit 0",
        );
    }
    std::fs::write(
        setup.root().join("rust-toolchain.toml"),
        format!("[toolchain]\npath = \"{}\"\n", toolchain.display()),
    )
    .unwrap();
    let status = common::gantry(setup.ws.path(), setup.state.path())
        .arg("status")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&status.stdout).into_owned();
    assert_absent(&outside, &said);
    assert_absent(&inside, &said);
    let replies = setup.session(
        &["--tier", "read"],
        &[
            ("read_file", json!({"path": "src/main.rs"})),
            (
                "lsp",
                json!({"action": "hover", "file": "src/main.rs", "line": 2, "symbol": "answer"}),
            ),
            ("lsp", json!({"action": "diagnostics", "file": "*"})),
        ],
    );
    assert_absent(&outside, &replies.join("\n"));
    assert_absent(&inside, &replies.join("\n"));
    assert!(
        replies[2].contains("`cargo check` not run (read tier"),
        "{}",
        replies[2]
    );
}

/// In a trusted folder at write tier a confined command writes
/// `.venv/bin/basedpyright-langserver`; `lsp` then starts it (the
/// project's own toolchain may be used there), confined: its write
/// outside never lands.
#[test]
fn a_project_server_written_by_a_command_runs_confined() {
    if !need("basedpyright-langserver") {
        return;
    }
    let setup = Setup::new(&[("pyproject.toml", PYPROJECT), ("main.py", MAIN_PY)]);
    setup.trust();
    let (outside, inside) = (setup.outside_marker(), setup.inside_marker());
    let real = gantry_process::program::on_path("basedpyright-langserver").unwrap();
    let staged = setup.state.path().join("staged");
    payload(
        &staged,
        &[&outside, &inside],
        &format!("exec '{}' \"$@\"", real.display()),
    );
    let write = format!(
        "mkdir -p .venv/bin && cp '{}' .venv/bin/basedpyright-langserver",
        staged.display()
    );
    let replies = setup.session(
        &["--tier", "exec"],
        &[
            ("shell", json!({"command": write})),
            (
                "lsp",
                json!({"action": "hover", "file": "main.py", "line": 4, "symbol": "greet"}),
            ),
            ("lsp", json!({"action": "status"})),
        ],
    );
    let context = replies.join("\n");
    assert!(
        std::fs::read_to_string(&inside)
            .is_ok_and(|ran| ran.contains(".venv/bin/basedpyright-langserver")),
        "the project's server was started: {context}"
    );
    assert_absent(&outside, &context);
    assert!(replies[1].contains("def greet(name: str)"), "{context}");
    assert!(
        replies[2].contains("trusted folder at write tier"),
        "{context}"
    );
}

/// A language server's environment holds none of Gantry's secrets: read
/// from `/proc/<server pid>/environ` while the session runs.
#[test]
fn a_language_server_never_sees_gantrys_secrets() {
    if !need("basedpyright-langserver") {
        return;
    }
    let setup = Setup::new(&[("pyproject.toml", PYPROJECT), ("main.py", MAIN_PY)]);
    let mut child = common::gantry(setup.ws.path(), setup.state.path())
        .args(["session", "--approval", "yolo"])
        .env("GANTRY_HTTP_TOKEN", "gantry-token-1")
        .env("OPENAI_API_KEY", "openai-key-1")
        .env("MY_SERVICE_KEY", "my-key-1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut call = |args: Value| {
        writeln!(stdin, "{}", json!({"tool": "lsp", "args": args})).unwrap();
        lines.next().expect("a reply").unwrap()
    };
    let hover = call(json!({"action": "hover", "file": "main.py", "line": 4, "symbol": "greet"}));
    let status = call(json!({"action": "status"}));
    let pid: u32 = status
        .split("pid ")
        .nth(1)
        .and_then(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no server pid in {status} (hover: {hover})"));
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    drop(stdin);
    child.wait().unwrap();
    let environ = String::from_utf8_lossy(&environ);
    let names: Vec<&str> = environ
        .split('\0')
        .filter_map(|entry| entry.split_once('=').map(|(name, _)| name))
        .collect();
    assert!(names.contains(&"PATH"), "{names:?}");
    for name in &names {
        assert!(
            *name != "GANTRY_HTTP_TOKEN" && !name.ends_with("_KEY"),
            "{name} reached the language server: {names:?}"
        );
    }
}
