//! What the reaper costs and what it buys, for `bench/shell.sh`:
//!
//! - the round trip of `shell` running `true` (the median and the 90th
//!   percentile of many calls through the run's pipeline), and a bare
//!   spawn and wait of `true` through `gantry_process`;
//! - the time from a timeout to every descendant gone (a setsid child, a
//!   background child, the command), each awaited on its pidfd.
//!
//! `reaper_bench MODE [REAPER]`: MODE `direct` spawns without a reaper,
//! `reaper` under the program REAPER (`gantry-reap`, or `gantry`, which
//! serves as its own). One mode per process: the choice is process-wide.

#[path = "../tests/harness/mod.rs"]
mod harness;

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gantry_core::{Run, Workspace};
use gantry_process::{Command, Stderr};
use serde_json::json;

const CALLS: usize = 300;
const TIMEOUTS: usize = 7;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("direct");
    let label = match (mode, args.get(2)) {
        ("direct", _) => {
            gantry_process::reaper::disable();
            "no reaper".to_string()
        }
        ("reaper", Some(program)) => {
            gantry_process::reaper::use_program(program);
            format!(
                "under {}",
                Path::new(program).file_name().unwrap().to_string_lossy()
            )
        }
        _ => {
            eprintln!("usage: reaper_bench direct | reaper PROGRAM");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let run = gantry_shell::register(Run::builder(Workspace::new(dir.path()).unwrap())).build();
        let trip = round_trips(&run).await;
        let spawn = spawns().await;
        let gone = timeouts(&run, dir.path()).await;
        println!(
            "{label:<22} shell `true` p50 {:>6.2} ms  p90 {:>6.2} ms | spawn+wait `true` p50 {:>6.2} ms | timeout to all gone {gone}",
            trip.0, trip.1, spawn
        );
    });
}

/// The median and 90th percentile of `values`, in milliseconds.
fn percentiles(mut values: Vec<Duration>) -> (f64, f64) {
    values.sort();
    let at = |q: f64| values[((values.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    (at(0.5), at(0.9))
}

async fn round_trips(run: &Run) -> (f64, f64) {
    let call = || run.call("shell", json!({"command": "true"}));
    for _ in 0..20 {
        call().await.unwrap();
    }
    let mut took = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let started = Instant::now();
        let result = call().await.unwrap();
        took.push(started.elapsed());
        assert!(result.text_content().contains("[exit code 0"));
    }
    percentiles(took)
}

async fn spawns() -> f64 {
    let mut took = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let started = Instant::now();
        let child = Command::new("true", &gantry_process::Sandbox::default())
            .stderr(Stderr::Null)
            .spawn()
            .unwrap();
        child.wait().await.unwrap();
        took.push(started.elapsed());
    }
    percentiles(took).0
}

/// From the moment the timeout fires to the last descendant's death, the
/// median over a few runs; or how many survived.
async fn timeouts(run: &Run, dir: &Path) -> String {
    let fifo_path: PathBuf = dir.join("tree.fifo");
    let mut tree = harness::fifo(&fifo_path);
    let mut gone_after = Vec::new();
    let mut returned_after = Vec::new();
    let mut survivors = 0;
    for _ in 0..TIMEOUTS {
        let started = Instant::now();
        let call = async {
            let outcome = run
                .call(
                    "shell",
                    json!({
                        "command": "setsid sleep 100 & s=$!; sleep 100 & b=$!; echo \"$$ $s $b\" > tree.fifo; sleep 100",
                        "timeout": 1
                    }),
                )
                .await;
            (outcome, Instant::now())
        };
        // Each death is timed as it happens, while the call is running.
        let deaths = async {
            let pids = harness::pids(&mut tree, Duration::from_secs(5)).await;
            let mut deaths = tokio::task::JoinSet::new();
            for pid in pids {
                let fd = harness::pidfd(pid).expect("running");
                deaths.spawn(async move {
                    let died = harness::ends(&fd, Duration::from_secs(3))
                        .await
                        .then(Instant::now);
                    if died.is_none() {
                        // SAFETY: a pidfd and a signal: the survivor, and no
                        // process that may have taken its pid since.
                        unsafe {
                            libc::syscall(
                                libc::SYS_pidfd_send_signal,
                                fd.as_raw_fd(),
                                libc::SIGKILL,
                                std::ptr::null::<libc::siginfo_t>(),
                                0,
                            )
                        };
                    }
                    died
                });
            }
            deaths.join_all().await
        };
        let ((outcome, returned), deaths) = tokio::join!(call, deaths);
        assert!(outcome.is_err(), "the command timed out");
        let fired = started + Duration::from_secs(1);
        returned_after.push(returned.saturating_duration_since(fired));
        survivors += deaths.iter().filter(|died| died.is_none()).count();
        if let Some(last) = deaths.into_iter().flatten().max() {
            gone_after.push(last.saturating_duration_since(fired));
        }
    }
    let returned = percentiles(returned_after).0;
    if survivors > 0 {
        format!(
            "never: {survivors} of {} processes survived (call returned after {returned:.1} ms)",
            TIMEOUTS * 3
        )
    } else {
        format!(
            "p50 {:.1} ms (call returned after {returned:.1} ms)",
            percentiles(gone_after).0
        )
    }
}
