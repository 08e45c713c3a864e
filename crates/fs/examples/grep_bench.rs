//! Times the `grep` tool in-process against `rg` on a large real tree, so
//! "ripgrep-class speed" is a number rather than a claim.
//!
//! ```text
//! cargo run --release -p gantry-fs --example grep_bench -- [TREE] [--runs N] [--pattern REGEX]...
//! ```
//!
//! TREE defaults to `$GANTRY_BENCH_TREE`, else `~/.cargo/registry/src`
//! (present on any machine that has built a Rust project); it is the
//! workspace root. Without `--pattern`, three regexes are timed: a common
//! literal, an identifier pattern and a rare name. Both sides match case
//! exactly (`rg -n REGEX`, and grep with `case_insensitive: false`), and
//! runs alternate between the two so that load from other processes falls
//! on both. `bench/grep.sh` runs this and, when the `gantry` binary is
//! built, the same searches through the CLI under hyperfine.
//!
//! The two do not always do the same work: rg prints every match, while
//! grep stops once it has its first 200 lines in path order and has
//! counted well past them. A rare pattern makes both search every file,
//! which is the like-for-like figure.

mod bench;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

/// A literal that is everywhere, an identifier shape, and a rare name.
const DEFAULT_PATTERNS: [&str; 3] = [r"unwrap\(\)", r"fn \w+_test", "PhantomPinned"];

struct Options {
    tree: PathBuf,
    runs: usize,
    patterns: Vec<String>,
}

fn options() -> Result<Options, String> {
    let args = bench::args(
        "usage: grep_bench [TREE] [--runs N] [--pattern REGEX]...",
        &["--pattern"],
    )?;
    let mut patterns: Vec<String> = args.flags.into_iter().map(|(_, value)| value).collect();
    if patterns.is_empty() {
        patterns = DEFAULT_PATTERNS.iter().map(|p| p.to_string()).collect();
    }
    Ok(Options {
        tree: args.tree,
        runs: args.runs,
        patterns,
    })
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn min(times: &[Duration]) -> Duration {
    times.iter().copied().min().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let options = bench::or_exit(options());
    let run = bench::run(&options.tree);
    let have_rg = bench::installed("rg");
    let tree = options.tree.to_str().expect("UTF-8 tree path").to_string();
    println!(
        "tree: {tree}; {} runs each, alternating; times are medians (min in brackets)",
        options.runs
    );
    if !have_rg {
        println!("rg not installed: gantry only (apt-get install ripgrep)");
    }
    println!(
        "{:<16} {:>22} {:>22} {:>13}   what each returned",
        "regex", "gantry grep (in-proc)", "rg -n (process)", "gantry/rg"
    );

    for pattern in &options.patterns {
        let args = json!({ "pattern": pattern, "case_insensitive": false });
        let rg = || {
            Command::new("rg")
                .args(["-n", pattern.as_str(), tree.as_str()])
                .stderr(Stdio::null())
                .output()
                .expect("run rg")
        };
        // Warm the page cache and the dentry cache for both.
        let first = run
            .call("grep", args.clone())
            .await
            .unwrap_or_else(|e| panic!("grep {pattern} failed: {e}"));
        let header = first.text_content();
        let header = header.lines().next().unwrap_or_default().to_string();
        let rg_lines = if have_rg {
            rg().stdout.iter().filter(|b| **b == b'\n').count()
        } else {
            0
        };

        let mut gantry_times = Vec::with_capacity(options.runs);
        let mut rg_times = Vec::with_capacity(options.runs);
        for _ in 0..options.runs {
            let started = Instant::now();
            let result = run.call("grep", args.clone()).await.expect("grep");
            gantry_times.push(started.elapsed());
            std::hint::black_box(result);
            if have_rg {
                let started = Instant::now();
                let output = rg();
                rg_times.push(started.elapsed());
                std::hint::black_box(output);
            }
        }
        let gantry = format!(
            "{:.1} ms [{:.1}]",
            ms(median(&gantry_times)),
            ms(min(&gantry_times))
        );
        let (rg_cell, ratio) = if have_rg {
            (
                format!(
                    "{:.1} ms [{:.1}]",
                    ms(median(&rg_times)),
                    ms(min(&rg_times))
                ),
                format!(
                    "{:.2}x",
                    median(&gantry_times).as_secs_f64() / median(&rg_times).as_secs_f64()
                ),
            )
        } else {
            ("-".to_string(), "-".to_string())
        };
        println!("{pattern:<16} {gantry:>22} {rg_cell:>22} {ratio:>13}   gantry: {header}");
        if have_rg {
            println!("{:<76}   rg: {rg_lines} lines", "");
        }
    }
}
