//! The workspace root and path confinement (SPEC §5).
//!
//! Every path a tool touches goes through [`Workspace::resolve`], so `..`,
//! absolute paths elsewhere and symlinks that point out are refused in one
//! place rather than in each tool.

use std::io;
use std::path::{Component, Path, PathBuf};

/// A path was refused or could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The path leaves every root the run may touch.
    #[error("`{given}` is outside the workspace ({root}); only paths inside it are allowed")]
    Outside {
        /// What the caller gave.
        given: String,
        /// The workspace root, for the message.
        root: String,
    },
    /// A symlink inside the workspace points outside it.
    #[error("`{given}` is a symlink that resolves outside the workspace (to {target})")]
    SymlinkEscape {
        /// What the caller gave.
        given: String,
        /// Where the link leads.
        target: String,
    },
    /// The path is empty or not valid text.
    #[error(
        "path is empty: give a workspace-relative path such as `src/main.rs`, or `.` for the root"
    )]
    Empty,
}

/// The roots a run may touch: the workspace plus any extra roots the
/// settings allow.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    extra_roots: Vec<PathBuf>,
}

impl Workspace {
    /// Opens a workspace at `root`, which must exist.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = root.as_ref().canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("workspace root {} is not a directory", root.display()),
            ));
        }
        Ok(Workspace {
            root,
            extra_roots: Vec::new(),
        })
    }

    /// Allows paths under further roots (settings `extraRoots`).
    pub fn with_extra_roots(mut self, roots: impl IntoIterator<Item = PathBuf>) -> Self {
        self.extra_roots.extend(
            roots
                .into_iter()
                .filter_map(|root| root.canonicalize().ok()),
        );
        self
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a workspace-relative or absolute path and refuses anything
    /// outside the roots, following symlinks of the part that exists.
    ///
    /// The returned path is absolute and lexically normal; it is not
    /// canonicalised, so a symlink inside the root stays a symlink (writes
    /// go through it to its target, which is itself inside).
    pub fn resolve(&self, given: &str) -> Result<PathBuf, PathError> {
        let trimmed = given.trim();
        if trimmed.is_empty() {
            return Err(PathError::Empty);
        }
        let joined = if Path::new(trimmed).is_absolute() {
            PathBuf::from(trimmed)
        } else {
            self.root.join(trimmed)
        };
        let normal = normalize(&joined);
        if !self.is_inside(&normal) {
            return Err(PathError::Outside {
                given: given.to_string(),
                root: self.root.display().to_string(),
            });
        }
        // Follow symlinks on the longest prefix that exists; what does not
        // exist yet cannot point anywhere.
        let mut existing = normal.as_path();
        let mut rest = Vec::new();
        let real = loop {
            match existing.canonicalize() {
                Ok(real) => break real,
                Err(_) => match (existing.parent(), existing.file_name()) {
                    (Some(parent), Some(name)) => {
                        rest.push(name.to_owned());
                        existing = parent;
                    }
                    _ => break existing.to_path_buf(),
                },
            }
        };
        if !self.is_inside(&real) {
            let mut target = real;
            target.extend(rest.iter().rev());
            return Err(PathError::SymlinkEscape {
                given: given.to_string(),
                target: target.display().to_string(),
            });
        }
        Ok(normal)
    }

    /// The path relative to the workspace root, for output; paths under an
    /// extra root stay absolute.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    fn is_inside(&self, path: &Path) -> bool {
        std::iter::once(&self.root)
            .chain(&self.extra_roots)
            .any(|root| path.starts_with(root))
    }
}

/// Removes `.` and resolves `..` lexically. `..` at the filesystem root
/// stays at the root, as the kernel does.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("src")).unwrap();
        fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn relative_and_absolute_paths_inside_resolve() {
        let (_dir, ws) = workspace();
        let want = ws.root().join("src/lib.rs");
        assert_eq!(ws.resolve("src/lib.rs").unwrap(), want);
        assert_eq!(ws.resolve("./src/../src/lib.rs").unwrap(), want);
        assert_eq!(ws.resolve(want.to_str().unwrap()).unwrap(), want);
        assert_eq!(ws.resolve(".").unwrap(), ws.root());
        // Not existing yet is fine: a file about to be written.
        assert!(ws.resolve("new/dir/file.txt").is_ok());
    }

    #[test]
    fn dot_dot_and_foreign_absolute_paths_are_refused() {
        let (_dir, ws) = workspace();
        for bad in ["../x", "src/../../x", "/etc/passwd"] {
            let err = ws.resolve(bad).unwrap_err();
            assert!(matches!(err, PathError::Outside { .. }), "{bad}: {err}");
            assert!(err.to_string().contains("outside the workspace"));
        }
        assert!(matches!(ws.resolve("  "), Err(PathError::Empty)));
    }

    #[test]
    fn symlink_pointing_out_is_refused_and_inside_link_is_kept() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
        std::os::unix::fs::symlink("src/lib.rs", dir.path().join("inside")).unwrap();

        for bad in ["escape", "escape/secret", "escape/not-yet"] {
            let err = ws.resolve(bad).unwrap_err();
            assert!(
                matches!(err, PathError::SymlinkEscape { .. }),
                "{bad}: {err}"
            );
        }
        assert_eq!(ws.resolve("inside").unwrap(), ws.root().join("inside"));
    }

    #[test]
    fn extra_roots_widen_the_fence() {
        let (_dir, ws) = workspace();
        let other = tempfile::tempdir().unwrap();
        let ws = ws.with_extra_roots([other.path().to_path_buf()]);
        let inside_other = other.path().canonicalize().unwrap().join("a");
        assert!(ws.resolve(inside_other.to_str().unwrap()).is_ok());
        assert_eq!(ws.display(&ws.root().join("a/b")), "a/b");
    }
}
