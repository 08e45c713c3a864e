//! Times `edit` and `apply_patch` on a 10,000-line file through `Run::call`
//! (validation, planning, diff, the write path, the result), and how much
//! of each call the write path takes. Run by `bench/edit.sh`.
//!
//! The write path is timed two ways: by a write hook that notes the time
//! between its before and after calls (the apply proper: hash check, temp
//! files and fsyncs, journal, renames), and by the same number of direct
//! `Run::apply` calls of a one-line change, outside any tool.
//!
//! Arguments: `[calls]` (default 1000). The workspace and Gantry's state
//! directory are temp dirs under `$TMPDIR`, so they sit on its filesystem.

// Benches build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gantry_core::write::{Applied, Change, ChangeSet, WriteHook};
use gantry_core::{Run, Workspace, async_trait};
use serde_json::json;

const LINES: usize = 10_000;

/// Sums the time between before-write and after-write.
#[derive(Default)]
struct WritePathTimer {
    started: Mutex<Option<Instant>>,
    spent: Mutex<Vec<Duration>>,
}

#[async_trait]
impl WriteHook for WritePathTimer {
    async fn before_write(&self, _: &Run, _: &ChangeSet) {
        *self.started.lock().unwrap() = Some(Instant::now());
    }

    async fn after_write(&self, _: &Run, _: &Applied) -> Option<String> {
        if let Some(started) = self.started.lock().unwrap().take() {
            self.spent.lock().unwrap().push(started.elapsed());
        }
        None
    }
}

impl WritePathTimer {
    fn take(&self) -> Vec<Duration> {
        std::mem::take(&mut self.spent.lock().unwrap())
    }
}

fn line(n: usize, animal: &str) -> String {
    format!("line {n:05}: the quick brown {animal} jumps over the lazy dog")
}

fn original() -> String {
    (0..LINES).map(|n| line(n, "fox") + "\n").collect()
}

/// Mean, median and 99th percentile, in milliseconds.
fn stats(mut times: Vec<Duration>) -> (f64, f64, f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = ms(times.iter().sum::<Duration>()) / times.len() as f64;
    let at = |q: f64| ms(times[((times.len() - 1) as f64 * q).round() as usize]);
    (mean, at(0.5), at(0.99))
}

fn report(name: &str, calls: Vec<Duration>, write_path: Vec<Duration>) {
    let (mean, p50, p99) = stats(calls);
    let (write_mean, _, _) = stats(write_path);
    println!("{name}: {mean:.3} ms per call (p50 {p50:.3}, p99 {p99:.3})");
    println!(
        "  write path {write_mean:.3} ms per call = {:.0}% of the call",
        100.0 * write_mean / mean
    );
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("calls: a number"))
        .unwrap_or(1000);
    assert!(calls <= LINES / 3, "at most {} calls", LINES / 3);
    let state = tempfile::tempdir().unwrap();
    // Before any thread exists: keep the journals out of the user's home.
    unsafe { std::env::set_var("GANTRY_STATE_DIR", state.path()) };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.txt");
    // Setting the bench up, not a tool writing: the write path is what is timed.
    std::fs::write(&file, original()).unwrap();
    let timer = Arc::new(WritePathTimer::default());
    let run = gantry_edit::register(Run::builder(Workspace::new(dir.path()).unwrap()))
        .write_hook(timer.clone())
        .build();
    // Lines 1, 4, 7, ... in a scattered order: never the same line twice,
    // never a neighbour of another target (whose context must not move).
    let targets: Vec<usize> = (0..calls)
        .map(|i| 1 + 3 * ((i * 7919) % (LINES / 3 - 1)))
        .collect();
    println!(
        "{calls} calls per tool on a {LINES}-line file ({} KiB) in {}",
        original().len() / 1024,
        dir.path().display()
    );

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut times = Vec::with_capacity(calls);
        for &n in &targets {
            let args = json!({"path": "big.txt", "old_string": line(n, "fox"), "new_string": line(n, "cat")});
            let started = Instant::now();
            run.call("edit", args).await.unwrap();
            times.push(started.elapsed());
        }
        report("edit", times, timer.take());

        std::fs::write(&file, original()).unwrap();
        let mut times = Vec::with_capacity(calls);
        for &n in &targets {
            let patch = format!(
                "*** Begin Patch\n*** Update File: big.txt\n@@\n {}\n-{}\n+{}\n {}\n*** End Patch\n",
                line(n - 1, "fox"),
                line(n, "fox"),
                line(n, "owl"),
                line(n + 1, "fox"),
            );
            let started = Instant::now();
            run.call("apply_patch", json!({"patch": patch})).await.unwrap();
            times.push(started.elapsed());
        }
        report("apply_patch", times, timer.take());

        // The write path alone: one-line changes applied directly.
        let ws = run.workspace();
        let path = ws.resolve("big.txt").unwrap();
        let mut times = Vec::with_capacity(calls);
        for &n in &targets {
            let before = std::fs::read_to_string(&path).unwrap();
            let after = before.replacen(&line(n, "owl"), &line(n, "elk"), 1);
            let mut changes = ChangeSet::new();
            changes.push(ws, Change::modified(&path, before, after)).unwrap();
            let started = Instant::now();
            run.apply(changes).await.unwrap();
            times.push(started.elapsed());
        }
        timer.take();
        let (mean, p50, p99) = stats(times);
        println!("Run::apply alone: {mean:.3} ms per call (p50 {p50:.3}, p99 {p99:.3})");
    });
}
