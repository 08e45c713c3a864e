//! Times the `glob` tool in-process against `fd` on a large real tree, so
//! "ripgrep-class speed" is a number rather than a claim.
//!
//! ```text
//! cargo run --release -p gantry-fs --example glob_bench -- [TREE] [--runs N] [--pattern GLOB] [--fd-glob GLOB]
//! ```
//!
//! TREE defaults to `$GANTRY_BENCH_TREE`, else `~/.cargo/registry/src`
//! (present on any machine that has built a Rust project). The tree is the
//! workspace root. `bench/glob.sh` runs this and, when the `gantry` binary
//! is built, the same search through the CLI under hyperfine.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gantry_core::{Run, Workspace};
use serde_json::json;

struct Options {
    tree: PathBuf,
    runs: usize,
    pattern: String,
    fd_glob: String,
}

fn options() -> Result<Options, String> {
    let mut tree = std::env::var_os("GANTRY_BENCH_TREE").map(PathBuf::from);
    let mut runs = 10;
    let mut pattern = "**/*.rs".to_string();
    let mut fd_glob = "*.rs".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--runs" => {
                runs = value("--runs")?
                    .parse()
                    .map_err(|e| format!("--runs: {e}"))?
            }
            "--pattern" => pattern = value("--pattern")?,
            "--fd-glob" => fd_glob = value("--fd-glob")?,
            "-h" | "--help" => {
                return Err(
                    "usage: glob_bench [TREE] [--runs N] [--pattern GLOB] [--fd-glob GLOB]".into(),
                );
            }
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
    Ok(Options {
        tree,
        runs: runs.max(1),
        pattern,
        fd_glob,
    })
}

/// Mean, median, min and max of some timings.
fn summary(times: &[Duration]) -> (Duration, Duration, Duration, Duration) {
    let mut sorted = times.to_vec();
    sorted.sort();
    let mean = sorted.iter().sum::<Duration>() / sorted.len() as u32;
    (
        mean,
        sorted[sorted.len() / 2],
        sorted[0],
        sorted[sorted.len() - 1],
    )
}

fn show(label: &str, times: &[Duration]) -> Duration {
    let (mean, median, min, max) = summary(times);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{label:<34} mean {:>8.1} ms   median {:>8.1} ms   min {:>8.1} ms   max {:>8.1} ms   ({} runs)",
        ms(mean),
        ms(median),
        ms(min),
        ms(max),
        times.len()
    );
    mean
}

fn fd_binary() -> Option<&'static str> {
    ["fdfind", "fd"].into_iter().find(|bin| {
        Command::new(bin)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

#[tokio::main]
async fn main() {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let run = gantry_fs::register(Run::builder(
        Workspace::new(&options.tree).expect("open the tree as a workspace"),
    ))
    .build();
    let args = json!({ "pattern": options.pattern });

    // Warm the page cache and the dentry cache for both contenders.
    let first = run
        .call("glob", args.clone())
        .await
        .unwrap_or_else(|e| panic!("glob failed: {e}"));
    let header = first.text_content();
    let header = header.lines().next().unwrap_or_default();
    let gantry_count: usize = header
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);

    let mut gantry_times = Vec::with_capacity(options.runs);
    for _ in 0..options.runs {
        let started = Instant::now();
        let result = run.call("glob", args.clone()).await.expect("glob");
        gantry_times.push(started.elapsed());
        std::hint::black_box(result);
    }

    println!("tree: {}", options.tree.display());
    println!(
        "gantry glob {}: {gantry_count} files ({header})",
        options.pattern
    );
    let gantry_mean = show("gantry glob (in-process)", &gantry_times);

    let Some(fd) = fd_binary() else {
        println!("fd/fdfind not installed: no comparison (apt-get install fd-find)");
        return;
    };
    let fd_args = [
        "-g",
        options.fd_glob.as_str(),
        "-t",
        "f",
        options.tree.to_str().expect("UTF-8 tree path"),
    ];
    let fd_run = || {
        Command::new(fd)
            .args(fd_args)
            .stderr(Stdio::null())
            .output()
            .expect("run fd")
    };
    let fd_count = fd_run().stdout.split(|b| *b == b'\n').count() - 1;
    let mut fd_times = Vec::with_capacity(options.runs);
    for _ in 0..options.runs {
        let started = Instant::now();
        let output = fd_run();
        fd_times.push(started.elapsed());
        std::hint::black_box(output);
    }
    println!("{fd} -g '{}' -t f: {fd_count} files", options.fd_glob);
    let fd_mean = show(&format!("{fd} (process)"), &fd_times);
    println!(
        "ratio gantry/{fd} (mean): {:.2}x",
        gantry_mean.as_secs_f64() / fd_mean.as_secs_f64()
    );
}
