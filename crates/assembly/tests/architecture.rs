//! The invariants of ARCHITECTURE.md, checked from the sources and
//! manifests (through `cargo metadata`): the core names no tool; families depend on the core and the
//! support crates (process, http) only; front ends name no tool or family; only the write
//! path writes workspace files. Test code (`#[cfg(test)]` modules, tests
//! folders) is not held to them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn crates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The non-test code of every `.rs` file under `dir`, with its path:
/// files named like tests are skipped, a `#[cfg(test)]` module (by
/// convention the last thing in a file) is cut off, and comments dropped.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".rs") || name.contains("test") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let text = match text.find("#[cfg(test)]") {
                Some(at) => &text[..at],
                None => &text,
            };
            // Comments (and the doc examples in them) are not code.
            let code: String = text
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
                .map(|line| format!("{line}\n"))
                .collect();
            out.push((path, code));
        }
    }
    out
}

/// Every tool Gantry has, by name.
fn tool_names() -> BTreeSet<String> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = runtime
        .block_on(gantry_assembly::reference_run(dir.path()))
        .unwrap();
    let names: BTreeSet<String> = run.tools().into_iter().map(|t| t.name).collect();
    assert!(names.len() >= 15, "{names:?}");
    names
}

/// String literals in `code` that are exactly a tool's name.
fn named_tools(code: &str, tools: &BTreeSet<String>) -> Vec<String> {
    tools
        .iter()
        .filter(|name| code.contains(&format!("\"{name}\"")))
        .cloned()
        .collect()
}

/// The `gantry-*` packages the crate in `crates/FOLDER` needs to build,
/// as `cargo metadata` resolves its manifest: normal and build
/// dependencies, on every target, renamed or not (dev-dependencies are
/// its tests', which may put families together).
fn gantry_dependencies(folder: &str) -> Vec<String> {
    static METADATA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    let metadata = METADATA.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let output = std::process::Command::new(cargo)
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ])
            .current_dir(crates())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    });
    let manifest = Path::new(folder).join("Cargo.toml");
    let package = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|package| Path::new(package["manifest_path"].as_str().unwrap()).ends_with(&manifest))
        .unwrap_or_else(|| panic!("no package in crates/{folder}"));
    package["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|dependency| dependency["kind"].as_str() != Some("dev"))
        .filter_map(|dependency| dependency["name"].as_str())
        .filter(|name| name.starts_with("gantry-"))
        .map(str::to_string)
        .collect()
}

const FAMILIES: [&str; 12] = [
    "fs",
    "edit",
    "shell",
    "web",
    "memory",
    "ask",
    "lsp",
    "ast",
    "kernel",
    "dap",
    "discovery",
    "workers",
];
/// What families may build on besides the core: the one place children
/// are spawned, and the one HTTP client setup.
const SUPPORT: [&str; 2] = ["gantry-process", "gantry-http"];
const FRONT_ENDS: [&str; 3] = ["mcp", "cli", "view"];

#[test]
fn the_core_names_no_tool() {
    let tools = tool_names();
    let mut found = Vec::new();
    for (path, code) in sources(&crates().join("core/src")) {
        for name in named_tools(&code, &tools) {
            found.push(format!("{} names `{name}`", path.display()));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn families_depend_on_the_core_and_the_support_crates_only() {
    let mut found = Vec::new();
    for family in FAMILIES {
        for dependency in gantry_dependencies(family) {
            if dependency != "gantry-core" && !SUPPORT.contains(&dependency.as_str()) {
                found.push(format!("the {family} family depends on {dependency}"));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn front_ends_name_no_tool_and_no_family() {
    let tools = tool_names();
    let mut found = Vec::new();
    for front in FRONT_ENDS {
        for dependency in gantry_dependencies(front) {
            if FAMILIES.iter().any(|f| dependency == format!("gantry-{f}")) {
                found.push(format!("{front} depends on the family {dependency}"));
            }
        }
        for (path, code) in sources(&crates().join(front).join("src")) {
            for name in named_tools(&code, &tools) {
                found.push(format!("{} names `{name}`", path.display()));
            }
            for family in FAMILIES {
                if code.contains(&format!("gantry_{family}::")) {
                    found.push(format!("{} names the {family} family", path.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Calls that write or remove files by path.
const WRITES: [&str; 7] = [
    "fs::write(",
    "File::create(",
    "OpenOptions::new()",
    "fs::rename(",
    "fs::remove_file(",
    "fs::create_dir",
    "fs::remove_dir",
];

/// Writes that never touch a workspace file, each with why.
const NOT_THE_WORKSPACE: [(&str, &str); 8] = [
    // Gantry's own files about a workspace, in the state directory.
    ("core/src/state.rs", "the state directory"),
    // The run logs, in the state directory's `runs` folder.
    ("core/src/runlog/writer.rs", "the run logs"),
    ("core/src/runlog/read.rs", "the run logs"),
    // The journal and its beacon live in the state directory.
    ("core/src/write/journal.rs", "the state directory"),
    // --log-file, where the person asked for logs.
    ("cli/src/main.rs", "the log file"),
    // This process's own memory, to blank a --token in its command line.
    ("cli/src/http_tokens.rs", "/proc/self/mem"),
    // ~/.gantry, created for the user's memory file before the write path
    // writes the file itself.
    ("memory/src/lib.rs", "the user's ~/.gantry folder"),
    // A reaper's own id maps in /proc, and the mount points it makes in
    // the empty folder that covers a hidden one, in its own namespace.
    (
        "process/src/sandbox/namespace.rs",
        "/proc and a reaper's own mounts",
    ),
];

#[test]
fn only_the_write_path_writes_workspace_files() {
    let mut found = Vec::new();
    let root = crates();
    for entry in std::fs::read_dir(&root).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        for (path, code) in sources(&src) {
            let relative = path.strip_prefix(&root).unwrap().display().to_string();
            if relative.starts_with("core/src/write/")
                || relative.starts_with("core/src/workspace/")
                || NOT_THE_WORKSPACE.iter().any(|(file, _)| relative == *file)
            {
                continue;
            }
            for call in WRITES {
                if code.contains(call) {
                    found.push(format!("{relative} calls {call}"));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Every file ARCHITECTURE.md names in backticks exists: a path with a
/// folder as the end of a path in the repository (the text has already
/// said which crate), a bare name as some file of the repository. A map
/// that names a file gone misleads every reader after it. Files of the
/// user's projects it names are listed here.
#[test]
fn every_file_the_architecture_names_exists() {
    let root = crates().join("..");
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | "node_modules") {
                    stack.push(path);
                }
                continue;
            }
            files.push(path.strip_prefix(&root).unwrap().to_path_buf());
        }
    }
    let extensions = ["rs", "sh", "py", "md", "toml", "json", "js", "ts"];
    let named: BTreeSet<&str> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| {
            !quoted.contains(char::is_whitespace)
                && !quoted.starts_with('~')
                && !quoted.starts_with('$')
                && !quoted.starts_with('.')
                && Path::new(quoted)
                    .extension()
                    .is_some_and(|e| extensions.contains(&&*e.to_string_lossy()))
        })
        .collect();
    assert!(named.len() > 20, "few file names found: {named:?}");
    let the_users = ["compile_commands.json", "rust-toolchain.toml"];
    let missing: Vec<&str> = named
        .into_iter()
        .filter(|name| !the_users.contains(name))
        .filter(|name| {
            let wanted = Path::new(name);
            !files.iter().any(|file| file.ends_with(wanted))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names files that do not exist: {missing:?}"
    );
}

/// Every repository path ARCHITECTURE.md names in backticks with a folder
/// in it exists: from the repository's root or from `crates/` when its
/// first folder is one of theirs (`crates/core/src/runlog/`,
/// `scripts/test.sh`, `core/src/state.rs`), else as the end of some path of
/// the repository (`reaper/` in the text about the process crate); a
/// folder where it ends in `/`. Bare file names are the test above's.
/// Absolute paths and routes (`/proc`, `/api/runs`), a user's files
/// (`~/.gantry/...`, `.venv/bin`, `$STATE/...`) and code are not the
/// repository's.
#[test]
fn every_path_the_architecture_names_exists() {
    let root = crates().join("..");
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    // Named with a `/` but not paths: MCP methods, and a folder of the
    // user's projects.
    let not_paths = [
        "tools/list_changed",
        "subscriptions/listen",
        "node_modules/.bin",
    ];
    let entries = |dir: &Path| -> BTreeSet<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| !matches!(name.as_str(), "target" | ".git" | "node_modules"))
            .collect()
    };
    let top = entries(&root);
    let crate_folders = entries(&crates());
    // Every file and folder of the repository, from its root.
    let mut all = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for name in entries(&dir) {
            let path = dir.join(&name);
            all.push((
                path.strip_prefix(&root).unwrap().to_path_buf(),
                path.is_dir(),
            ));
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    let named: BTreeSet<&str> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| {
            quoted.contains('/')
                && !quoted.starts_with(['/', '.'])
                && quoted
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c))
                && !not_paths.contains(quoted)
        })
        .collect();
    assert!(named.len() > 10, "few paths found: {named:?}");
    let missing: Vec<&str> = named
        .into_iter()
        .filter(|name| {
            let folder = name.ends_with('/');
            let exists = |path: PathBuf| {
                if folder { path.is_dir() } else { path.exists() }
            };
            let first = name.split('/').next().unwrap_or_default();
            if top.contains(first) {
                !exists(root.join(name))
            } else if crate_folders.contains(first) {
                !exists(crates().join(name))
            } else {
                let wanted = Path::new(name.trim_end_matches('/'));
                !all.iter()
                    .any(|(path, is_dir)| path.ends_with(wanted) && (*is_dir || !folder))
            }
        })
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

/// The modules of a crate that each module's non-test code names through
/// `crate::`, by top-level module (a folder module counts as one).
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let top = |path: &Path| {
        let inside = path.strip_prefix(src).unwrap();
        let first = inside.components().next().unwrap().as_os_str();
        first.to_string_lossy().trim_end_matches(".rs").to_string()
    };
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, code) in sources(src) {
        let from = top(&path);
        let named = graph.entry(from.clone()).or_default();
        for (at, _) in code.match_indices("crate::") {
            let name: String = code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `crate::Type` (a re-export of lib.rs) names no module.
            if name.starts_with(|c: char| c.is_ascii_lowercase()) && name != from {
                named.insert(name);
            }
        }
    }
    graph
}

/// A circle in `graph`, if it has one, as the modules along it.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut found = path[at..].to_vec();
            found.push(module.to_string());
            return Some(found);
        }
        if !done.insert(module.to_string()) {
            return None;
        }
        path.push(module.to_string());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|module| visit(module, graph, &mut Vec::new(), &mut done))
}

/// Crates whose modules still import each other in a circle, and where:
/// known debt, each to be cut as lsp's was. The test fails when one of
/// them loses its circle, so that it leaves this list.
const CIRCLES_LEFT: [(&str, &str); 3] = [
    ("core", "caller -> pipeline -> caller"),
    ("discovery", "server -> client -> server"),
    ("process", "reaper -> sandbox -> reaper"),
];

/// Every crate is a stack of modules, each importing only those below it
/// (helix-lsp's transport ← client ← server ← supervisor ← ...): a circle
/// is two modules that can only change together. The compiler allows
/// circles inside a crate, so this test is where they are refused.
#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    let mut wrong = Vec::new();
    for entry in std::fs::read_dir(crates()).unwrap() {
        let folder = entry.unwrap().path();
        let src = folder.join("src");
        if !src.is_dir() {
            continue;
        }
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        let found = circle(&module_graph(&src)).map(|found| found.join(" -> "));
        let known = CIRCLES_LEFT
            .iter()
            .find(|(left, _)| *left == name)
            .map(|(_, circle)| circle.to_string());
        if found != known {
            wrong.push(format!(
                "{name}: {} (known: {})",
                found.as_deref().unwrap_or("no circle"),
                known.as_deref().unwrap_or("none")
            ));
        }
    }
    assert!(wrong.is_empty(), "import circles:\n{}", wrong.join("\n"));
}
