//! What the write path's test files share: workspaces, the files and
//! journals left, and the change set the crash tests apply.

#![allow(dead_code)] // each test file uses a part

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use gantry_core::testing::{self, state_dir};
use gantry_core::write::ChangeSet;
use gantry_core::{Run, Workspace};

pub fn workspace_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Run) {
    let dir = testing::workspace_with(files);
    let run = Run::builder(Workspace::new(dir.path()).unwrap()).build();
    (dir, run)
}

/// Every file under `root`, relative.
pub fn files_under(root: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.is_symlink() {
                walk(root, &path, out);
            } else {
                out.insert(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, root, &mut out);
    out
}

pub fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The journals left for `root` in the state directory.
pub fn journals(root: &Path) -> Vec<PathBuf> {
    let roots = state_dir().join("roots");
    let Ok(entries) = std::fs::read_dir(&roots) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| {
            std::fs::read(entry.path().join("root"))
                .is_ok_and(|r| r == root.as_os_str().as_encoded_bytes())
        })
        .flat_map(|entry| std::fs::read_dir(entry.path()).unwrap().flatten())
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|e| e == "pending" || e == "committed")
        })
        .collect()
}

/// The change set the crash tests apply: two modifies, a delete, a create
/// in a new directory.
pub fn four_changes(run: &Run) -> ChangeSet {
    let ws = run.workspace();
    let path = |name: &str| ws.resolve(name).unwrap();
    let mut changes = ChangeSet::new();
    changes.plan_write(ws, &path("a.txt"), "new a\n").unwrap();
    changes.plan_write(ws, &path("b.txt"), "new b\n").unwrap();
    changes.plan_delete(ws, &path("c.txt")).unwrap();
    changes
        .plan_create(ws, &path("new/d.txt"), "new d\n")
        .unwrap();
    changes
}

pub const OLD_FILES: [(&str, &str); 3] = [
    ("a.txt", "old a\n"),
    ("b.txt", "old b\n"),
    ("c.txt", "old c\n"),
];
