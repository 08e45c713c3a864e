//! Who includes a C/C++ file: a bounded scan of the workspace's C/C++
//! files for their `#include` lines, each file read again only when it
//! changed, followed through headers that include headers.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use gantry_core::lock;

use crate::paths::is_header;

/// Bytes of one C/C++ file the include scan reads at most.
const MAX_SCAN_BYTES: usize = 256 * 1024;

/// What one file includes, as written, with the file's size and time when
/// read: a scan reads again only the files that changed.
#[derive(Default)]
pub(crate) struct IncludeCache {
    files: Mutex<HashMap<PathBuf, Scanned>>,
}

/// One file as the include scan last read it.
struct Scanned {
    len: u64,
    modified: SystemTime,
    targets: Arc<Vec<String>>,
}

/// The `#include "…"` and `#include <…>` targets of a C/C++ text.
fn include_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("include") else {
            continue;
        };
        let rest = rest.trim_start();
        let close = match rest.chars().next() {
            Some('"') => '"',
            Some('<') => '>',
            _ => continue,
        };
        if let Some(end) = rest[1..].find(close) {
            out.push(rest[1..1 + end].to_string());
        }
    }
    out
}

/// Whether `target`, included from `file`, names `header`: beside the
/// including file, or as the tail of the header's path (an include
/// directory given with `-I`).
fn names(file: &Path, target: &str, header: &Path) -> bool {
    let beside = file
        .parent()
        .map(|dir| gantry_core::workspace::normalize(&dir.join(target)))
        .is_some_and(|p| p == header);
    beside || (!target.contains("..") && header.ends_with(target))
}

/// The workspace's C/C++ files that include `header` (a header, or a
/// source file included as one), directly or through other headers: a
/// bounded scan of the files (build output and
/// dependencies skipped), each read again only when it changed.
pub(crate) fn includers(root: &Path, header: &Path, cache: &IncludeCache) -> Vec<PathBuf> {
    let sources = crate::compile_db::c_family_files(root);
    let mut graph: Vec<(PathBuf, Arc<Vec<String>>)> = Vec::with_capacity(sources.len());
    {
        for path in sources {
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            let stamp = (
                meta.len(),
                meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            );
            let known = lock(&cache.files)
                .get(&path)
                .filter(|known| (known.len, known.modified) == stamp)
                .map(|known| known.targets.clone());
            let targets = match known {
                Some(targets) => targets,
                None => {
                    let Ok(bytes) = gantry_core::read_regular(&path) else {
                        continue;
                    };
                    let head = &bytes[..bytes.len().min(MAX_SCAN_BYTES)];
                    let targets = Arc::new(include_targets(&String::from_utf8_lossy(head)));
                    let scanned = Scanned {
                        len: stamp.0,
                        modified: stamp.1,
                        targets: targets.clone(),
                    };
                    lock(&cache.files).insert(path.clone(), scanned);
                    targets
                }
            };
            graph.push((path, targets));
        }
    }
    let mut found: Vec<PathBuf> = Vec::new();
    let mut pending = vec![header.to_path_buf()];
    let mut done: HashSet<PathBuf> = HashSet::new();
    while let Some(target) = pending.pop() {
        if !done.insert(target.clone()) {
            continue;
        }
        for (file, includes) in &graph {
            if *file == header || found.contains(file) {
                continue;
            }
            if includes.iter().any(|inc| names(file, inc, &target)) {
                found.push(file.clone());
                if is_header(file) {
                    pending.push(file.clone());
                }
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn includers_are_found_through_other_headers_and_include_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let files = [
            ("include/ops.h", "int mul(int a, int b);\n"),
            ("include/all.h", "#include \"ops.h\"\n"),
            ("src/app.c", "#include <ops.h>\nint app(void);\n"),
            ("src/more.c", "  #  include \"../include/all.h\"\n"),
            ("src/other.c", "#include \"other.h\"\n"),
            ("node_modules/x/y.c", "#include \"ops.h\"\n"),
        ];
        for (path, text) in files {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        let cache = IncludeCache::default();
        let found = includers(root, &root.join("include/ops.h"), &cache);
        let names: Vec<_> = found
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["include/all.h", "src/app.c", "src/more.c"]);
        // The second scan reads nothing again and finds the same.
        assert_eq!(includers(root, &root.join("include/ops.h"), &cache), found);
    }
}
