//! What `glob_bench` and `grep_bench` share: the `[TREE] [--runs N]`
//! command line with its default tree, the check that a peer tool is
//! installed, and the run on the tree. Written once so both benches take
//! the same arguments and search the same tree the same way.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use gantry_core::{Run, Workspace};

/// The parsed command line.
pub struct Args {
    /// The tree to search; it is the workspace root.
    pub tree: PathBuf,
    /// Timed runs per contender, at least 1.
    pub runs: usize,
    /// The bench's own flags (each in `flags` takes a value), in order.
    pub flags: Vec<(String, String)>,
}

/// Parses `[TREE] [--runs N]` and the value-taking `flags`; `usage` is the
/// answer to `--help`. TREE defaults to `$GANTRY_BENCH_TREE`, else
/// `~/.cargo/registry/src`, and must be a directory.
pub fn args(usage: &str, flags: &[&str]) -> Result<Args, String> {
    let mut tree = std::env::var_os("GANTRY_BENCH_TREE").map(PathBuf::from);
    let mut runs = 10;
    let mut own = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--runs" => {
                runs = value("--runs")?
                    .parse()
                    .map_err(|e| format!("--runs: {e}"))?
            }
            flag if flags.contains(&flag) => {
                let value = value(flag)?;
                own.push((arg, value));
            }
            "-h" | "--help" => return Err(usage.into()),
            _ => tree = Some(PathBuf::from(arg)),
        }
    }
    let tree = match tree {
        Some(tree) => tree,
        None => std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
            .ok_or("no TREE given and neither CARGO_HOME nor HOME is set")?
            .join("registry/src"),
    };
    if !tree.is_dir() {
        return Err(format!(
            "{} is not a directory: give a TREE or set GANTRY_BENCH_TREE (after `cargo build`, ~/.cargo/registry/src is one)",
            tree.display()
        ));
    }
    Ok(Args {
        tree,
        runs: runs.max(1),
        flags: own,
    })
}

/// The options, or their error on stderr and exit status 2.
pub fn or_exit<T>(options: Result<T, String>) -> T {
    options.unwrap_or_else(|message| {
        eprintln!("{message}");
        std::process::exit(2);
    })
}

/// Whether `bin --version` runs and succeeds.
pub fn installed(bin: &str) -> bool {
    Command::new(bin)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A run on `tree` with the fs tools registered.
pub fn run(tree: &std::path::Path) -> Run {
    gantry_fs::register(Run::builder(
        Workspace::new(tree).expect("open the tree as a workspace"),
    ))
    .build()
}
