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

mod bench;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

struct Options {
    tree: PathBuf,
    runs: usize,
    pattern: String,
    fd_glob: String,
}

fn options() -> Result<Options, String> {
    let args = bench::args(
        "usage: glob_bench [TREE] [--runs N] [--pattern GLOB] [--fd-glob GLOB]",
        &["--pattern", "--fd-glob"],
    )?;
    let mut pattern = "**/*.rs".to_string();
    let mut fd_glob = "*.rs".to_string();
    for (flag, value) in args.flags {
        match flag.as_str() {
            "--pattern" => pattern = value,
            _ => fd_glob = value,
        }
    }
    Ok(Options {
        tree: args.tree,
        runs: args.runs,
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
    ["fdfind", "fd"]
        .into_iter()
        .find(|bin| bench::installed(bin))
}

#[tokio::main]
async fn main() {
    let options = bench::or_exit(options());
    let run = bench::run(&options.tree);
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
