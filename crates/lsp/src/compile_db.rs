//! clangd's compilation database, handed over from Gantry's state
//! directory.
//!
//! clangd keeps its background index beside the compilation database it
//! reads (`<dir>/.cache/clangd/index`): started on a checkout's own
//! `compile_commands.json`, it writes into the checkout. So Gantry gives it
//! a copy in the state directory with `--compile-commands-dir`; the index
//! lands there, and the next run on the same root finds it warm. A project
//! with only `compile_flags.txt` gets a database that lists its source
//! files with those flags, so the background index covers the whole
//! project and not just the files a run opened.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::paths::{ignored, is_c_family, is_header};

/// Where a project's own compilation database may be, from its root.
pub(crate) const DATABASES: [&str; 2] = ["compile_commands.json", "build/compile_commands.json"];
/// clangd's flags-only project file: one argument per line, for every file.
pub(crate) const FLAGS: &str = "compile_flags.txt";
/// The database Gantry writes for clangd, in its folder of the state
/// directory.
const DATABASE: &str = "compile_commands.json";
/// C/C++ files a walk of the workspace lists at most.
pub(crate) const MAX_FILES: usize = 20_000;

/// Writes the database clangd should read for the project at `root` into
/// the state directory and returns the folder to pass as
/// `--compile-commands-dir`; `None` when the project has neither a
/// database nor flags (clangd then uses its fallback flags, and keeps any
/// index in the user's cache directory).
pub(crate) fn prepare(root: &Path) -> io::Result<Option<PathBuf>> {
    let entries = match DATABASES
        .iter()
        .map(|name| root.join(name))
        .find(|p| p.is_file())
    {
        Some(database) => copied(&database)?,
        None if root.join(FLAGS).is_file() => from_flags(root)?,
        None => return Ok(None),
    };
    let dir = gantry_core::state::root_dir("clangd", root);
    let contents = serde_json::to_vec_pretty(&entries).map_err(io::Error::other)?;
    // Unchanged, it is left alone: clangd need not read it again.
    if std::fs::read(dir.join(DATABASE)).ok().as_deref() != Some(contents.as_slice()) {
        gantry_core::state::write_file("clangd", root, DATABASE, &contents)?;
    }
    Ok(Some(dir))
}

/// The project's database with every `directory` made absolute (a relative
/// one is relative to the database's own folder, which the copy leaves).
fn copied(database: &Path) -> io::Result<Vec<Value>> {
    let text = gantry_core::read_regular(database)?;
    let mut entries: Vec<Value> = serde_json::from_slice(&text).map_err(|error| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is not a compilation database: {error}",
                database.display()
            ),
        )
    })?;
    let base = database.parent().unwrap_or(Path::new("/"));
    for entry in &mut entries {
        let directory = entry
            .get("directory")
            .and_then(Value::as_str)
            .unwrap_or(".");
        let absolute = gantry_core::workspace::normalize(&base.join(directory));
        entry["directory"] = json!(absolute);
    }
    Ok(entries)
}

/// One entry per source file under `root` (headers get their commands
/// from the sources that include them), compiled with the flags of
/// `compile_flags.txt` from the root, as clangd would for each of them.
fn from_flags(root: &Path) -> io::Result<Vec<Value>> {
    let text = gantry_core::read_regular(&root.join(FLAGS))?;
    let flags: Vec<String> = String::from_utf8_lossy(&text)
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(String::from)
        .collect();
    let entries = c_family_files(root)
        .into_iter()
        .filter(|file| !is_header(file))
        .map(|file| {
            let mut arguments = vec!["clang".to_string()];
            arguments.extend(flags.iter().cloned());
            arguments.push(file.display().to_string());
            json!({"directory": root, "file": file, "arguments": arguments})
        })
        .collect();
    Ok(entries)
}

/// The C/C++ files (sources and headers) under `root`, build output,
/// dependencies and hidden folders skipped, at most [`MAX_FILES`].
pub(crate) fn c_family_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !name.to_string_lossy().starts_with('.') && !ignored(Path::new(&name)) {
                    stack.push(path);
                }
            } else if kind.is_file() && is_c_family(&path) {
                if files.len() == MAX_FILES {
                    return files;
                }
                files.push(path);
            }
        }
    }
    files
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    fn database(dir: &Path) -> Vec<Value> {
        serde_json::from_slice(&std::fs::read(dir.join("compile_commands.json")).unwrap()).unwrap()
    }

    #[test]
    fn a_database_is_copied_out_of_the_checkout_with_absolute_directories() {
        gantry_core::testing::state_dir();
        let project = project(&[(
            "build/compile_commands.json",
            r#"[{"directory": "..", "file": "a.c", "arguments": ["cc", "-DX", "a.c"]}]"#,
        )]);
        let root = project.path();
        let dir = prepare(root).unwrap().unwrap();
        assert!(!dir.starts_with(root));
        let entries = database(&dir);
        assert_eq!(entries[0]["directory"], json!(root));
        assert_eq!(entries[0]["arguments"], json!(["cc", "-DX", "a.c"]));
    }

    #[test]
    fn flags_become_a_database_of_every_source_file() {
        gantry_core::testing::state_dir();
        let project = project(&[
            ("compile_flags.txt", "-Iinclude\n-DMODE=2\n\n"),
            ("src/a.c", ""),
            ("src/b.cpp", ""),
            ("include/ops.h", ""),
            ("node_modules/x/c.c", ""),
            (".hidden/d.c", ""),
        ]);
        let root = project.path();
        let dir = prepare(root).unwrap().unwrap();
        let mut files: Vec<String> = database(&dir)
            .iter()
            .map(|entry| entry["file"].as_str().unwrap().to_string())
            .collect();
        files.sort();
        let expected: Vec<String> = ["src/a.c", "src/b.cpp"]
            .iter()
            .map(|name| root.join(name).display().to_string())
            .collect();
        assert_eq!(files, expected);
        let first = &database(&dir)[0];
        assert_eq!(first["directory"], json!(root));
        assert_eq!(first["arguments"][1], json!("-Iinclude"));
        assert_eq!(first["arguments"][2], json!("-DMODE=2"));
    }

    #[test]
    fn a_project_without_either_gets_none() {
        gantry_core::testing::state_dir();
        let project = project(&[("a.c", "")]);
        assert_eq!(prepare(project.path()).unwrap(), None);
    }
}
