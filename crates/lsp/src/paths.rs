//! What a path is to the language servers: its language, whether it is a
//! C/C++ header, whether a watcher or a scan skips it (all from its name),
//! and which folders hold a server's root marker. A leaf: every other
//! module may ask, it asks none.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The LSP language id of a file, from its extension.
pub(crate) fn language_of(path: &Path) -> Option<&'static str> {
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

/// Whether `path` is a C/C++ header.
pub(crate) fn is_header(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    matches!(
        ext.as_deref(),
        Some("h" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "inl" | "inc")
    )
}

/// A C/C++ source or header.
pub(crate) fn is_c_family(path: &Path) -> bool {
    is_header(path) || matches!(language_of(path), Some("c" | "cpp"))
}

/// Paths a watcher should not bother servers with.
pub(crate) fn ignored(path: &Path) -> bool {
    const SKIP: [&str; 5] = [".git", "target", "node_modules", "__pycache__", ".gantry"];
    path.components()
        .any(|c| SKIP.iter().any(|s| c.as_os_str() == *s))
}

/// Directories (at most four levels deep, skipping build output and
/// dependencies) holding any of `markers`.
pub(crate) fn find_markers(workspace: &Path, markers: &HashSet<&str>) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut stack = vec![(workspace.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if markers.contains(name.as_str()) {
                found.push((dir.clone(), name.clone()));
            }
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir && depth < 4 && !name.starts_with('.') && !ignored(Path::new(&name)) {
                stack.push((path, depth + 1));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_come_from_extensions() {
        assert_eq!(language_of(Path::new("a/b.rs")), Some("rust"));
        assert_eq!(language_of(Path::new("x.PY")), Some("python"));
        assert_eq!(language_of(Path::new("x.tsx")), Some("typescriptreact"));
        assert_eq!(language_of(Path::new("x.h")), Some("c"));
        assert_eq!(language_of(Path::new("x.md")), None);
    }
}
