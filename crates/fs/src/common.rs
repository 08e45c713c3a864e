//! Helpers the tools share: running blocking work off the runtime, the
//! ignore-aware walk, sizes and counts people can read, and "not found"
//! errors that point at what exists.

pub(crate) use gantry_core::text::{counted, thousands};
use std::path::{Component, Path};

use gantry_core::{ToolError, Workspace};
use ignore::WalkBuilder;

/// The walk every searching tool shares, the way ripgrep walks: in
/// parallel; .gitignore, .ignore and git's exclude file respected even
/// outside a git repository (a fresh checkout without `.git`, a vendored
/// tree), because those are the files a person means by "the project";
/// hidden files skipped unless `hidden` (the pattern names one); symlinks
/// not followed, so nothing outside the workspace is reached.
pub(crate) fn walker(from: &Path, hidden: bool) -> WalkBuilder {
    let mut walk = WalkBuilder::new(from);
    walk.hidden(!hidden)
        .require_git(false)
        .follow_links(false)
        // Git's own store is never what a search is after, even when
        // hidden files are walked.
        .filter_entry(|entry| entry.file_name() != ".git");
    walk
}

/// `parts` joined by `sep` between `open` and `close`, or nothing when
/// there are none: the `(…)` and `; …` tails that grep and ls put after a
/// count for what they skipped or left out, built one way.
pub(crate) fn tail(parts: &[String], open: &str, sep: &str, close: &str) -> String {
    if parts.is_empty() {
        String::new()
    } else {
        format!("{open}{}{close}", parts.join(sep))
    }
}

/// Runs filesystem work on the blocking pool, so a slow disk or a huge
/// tree never stalls the run's other calls.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ToolError::failed(format!("internal error in a file tool: {error}")))?
}

/// A size as people say it: `812 B`, `4.1 KB`, `1.2 MB` (SI units).
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KB", "MB", "GB", "TB", "PB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 999.95 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Quotes a path or pattern for a message: `src/lib.rs`.
pub(crate) fn quote(text: &str) -> String {
    format!("`{text}`")
}

/// The error for a path that does not exist, naming the closest existing
/// sibling of the first missing component, because a model that typed
/// `scr/lib.rs` should not have to list the directory to find `src`.
pub(crate) fn not_found(workspace: &Workspace, given: &str, resolved: &Path) -> ToolError {
    let Some(base) = resolved
        .ancestors()
        .skip(1)
        .find(|ancestor| workspace.symlink_metadata(ancestor).is_ok())
    else {
        return ToolError::failed(format!("{} does not exist", quote(given)));
    };
    let Ok(rest) = resolved.strip_prefix(base) else {
        return ToolError::failed(format!("{} does not exist", quote(given)));
    };
    let mut components = rest.components();
    let Some(Component::Normal(missing)) = components.next() else {
        return ToolError::failed(format!("{} does not exist", quote(given)));
    };
    let missing = missing.to_string_lossy().into_owned();
    let base_shown = workspace.display(base);
    let names: Vec<String> = workspace
        .read_dir(base)
        .map(|entries| {
            entries
                .into_iter()
                .map(|entry| entry.name.to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    match similar_name(&missing, &names) {
        Some(similar) => {
            let mut candidate = base.join(similar);
            if !components.as_path().as_os_str().is_empty() {
                candidate.push(components.as_path());
            }
            if workspace.symlink_metadata(&candidate).is_ok() {
                ToolError::failed(format!(
                    "{} does not exist; did you mean {}?",
                    quote(given),
                    quote(&workspace.display(&candidate))
                ))
            } else {
                ToolError::failed(format!(
                    "{} does not exist: {} has no entry {} (closest: {})",
                    quote(given),
                    quote(&base_shown),
                    quote(&missing),
                    quote(similar)
                ))
            }
        }
        None => ToolError::failed(format!(
            "{} does not exist: {} has no entry {}",
            quote(given),
            quote(&base_shown),
            quote(&missing)
        )),
    }
}

/// The existing name a typo most likely meant: one or two slipped keys
/// (`scr` for `src`, `mian.rs` for `main.rs`) first, then the core's
/// looser match (`lib` for `lib.rs`).
fn similar_name<'a>(wanted: &str, names: &'a [String]) -> Option<&'a str> {
    let wanted_lower = wanted.to_lowercase();
    let allowed = (wanted.chars().count() / 3).max(1);
    names
        .iter()
        .map(|name| {
            let distance = strsim::damerau_levenshtein(&wanted_lower, &name.to_lowercase());
            (name, distance)
        })
        .filter(|(_, distance)| *distance <= allowed)
        .min_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(b.0)))
        .map(|(name, _)| name.as_str())
        .or_else(|| gantry_core::suggest::closest(wanted, names.iter().map(String::as_str)))
}

/// A metadata or open failure said with the path and, for the common
/// cases, in words rather than an errno.
pub(crate) fn io_failure(
    workspace: &Workspace,
    given: &str,
    resolved: &Path,
    error: std::io::Error,
) -> ToolError {
    if let Some(refusal) = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<gantry_core::PathError>())
    {
        return ToolError::failed(refusal.to_string());
    }
    if let Some(special) = gantry_core::NotRegular::of(&error) {
        return ToolError::failed(format!("{} is {}", quote(given), special));
    }
    match error.kind() {
        std::io::ErrorKind::NotFound => not_found(workspace, given, resolved),
        std::io::ErrorKind::PermissionDenied => {
            ToolError::failed(format!("cannot read {}: permission denied", quote(given)))
        }
        _ => ToolError::failed(format!("cannot read {}: {error}", quote(given))),
    }
}

/// A Markdown code fence long enough that no backtick run inside `body`
/// closes it early.
pub(crate) fn fenced(info: &str, body: &str) -> String {
    // The longest run of backticks, found by memchr: a file read is
    // mostly text without any.
    let (mut longest, mut run, mut previous) = (0, 0, usize::MAX);
    for at in memchr::memchr_iter(b'`', body.as_bytes()) {
        run = if previous.wrapping_add(1) == at {
            run + 1
        } else {
            1
        };
        longest = longest.max(run);
        previous = at;
    }
    let fence = "`".repeat((longest + 1).max(3));
    let newline = if body.ends_with('\n') || body.is_empty() {
        ""
    } else {
        "\n"
    };
    let mut out = String::with_capacity(body.len() + 2 * fence.len() + info.len() + 2);
    for part in [fence.as_str(), info, "\n", body, newline, fence.as_str()] {
        out.push_str(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(812), "812 B");
        assert_eq!(human_size(4_100), "4.1 KB");
        assert_eq!(human_size(1_234_567), "1.2 MB");
        assert_eq!(human_size(999_999), "1.0 MB");
        assert_eq!(human_size(2_147_483_648), "2.1 GB");
    }

    #[test]
    fn fences_outgrow_backticks_inside() {
        assert_eq!(fenced("rust", "a"), "```rust\na\n```");
        assert_eq!(fenced("", "x ```` y\n"), "`````\nx ```` y\n`````");
    }
}
