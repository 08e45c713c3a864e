//! Helpers for the tests of tool families (feature `testing`): every write
//! of a test binary journals into one temp state directory, never the
//! user's, and workspaces are temp folders with the files a test names.

use std::path::Path;
use std::sync::OnceLock;

/// Points `GANTRY_STATE_DIR` at one temp dir for the whole test binary
/// (and the child processes it starts), and returns it.
pub fn state_dir() -> &'static Path {
    static STATE: OnceLock<tempfile::TempDir> = OnceLock::new();
    STATE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("creating a temp state directory");
            // SAFETY: set once, before any write of the binary reads it; std
            // serialises environment access.
            unsafe { std::env::set_var("GANTRY_STATE_DIR", dir.path()) };
            dir
        })
        .path()
}

/// A temp workspace holding `files` (paths relative to it; bytes, so tests
/// can write CRLF, BOMs and binaries), with [`state_dir`] in force.
pub fn workspace_with<C: AsRef<[u8]>>(files: &[(&str, C)]) -> tempfile::TempDir {
    state_dir();
    let dir = tempfile::tempdir().expect("creating a temp workspace");
    for (name, content) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("creating a folder of the workspace");
        }
        std::fs::write(path, content).expect("writing a file of the workspace");
    }
    dir
}
