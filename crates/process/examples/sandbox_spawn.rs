//! What confining a child costs at its spawn, for `bench/sandbox.sh`: the
//! spawn and wait of `true` under a reaper, unconfined and in a
//! workspace-write sandbox with the network allowed and denied,
//! interleaved in one process so load hits all three alike.
//!
//! `sandbox_spawn REAPER [ROUNDS] [BALLAST_MB]`: with a ballast, this
//! process first fills that much memory, as a Gantry holding indexes
//! would: a fork (which the sandbox's pre-exec step needs, where an
//! unconfined spawn does without) copies page tables in proportion.

use std::time::{Duration, Instant};

use gantry_process::network::Network;
use gantry_process::sandbox::{Mode, Policy};
use gantry_process::{Command, Sandbox};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(reaper) = args.get(1) else {
        eprintln!("usage: sandbox_spawn REAPER [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(300);
    let ballast_mb: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(0);
    let ballast = vec![1u8; ballast_mb << 20];
    gantry_process::reaper::use_program(reaper);
    let workspace = tempfile::tempdir().unwrap();
    let roots = [workspace.path().to_path_buf()];
    let confined = |network| {
        let policy = Policy {
            mode: Mode::WorkspaceWrite,
            mode_chosen: true,
            network,
            ..Policy::default()
        };
        let sandbox = Sandbox::new(policy, &roots);
        assert!(sandbox.confines(), "{:?}", sandbox.status());
        sandbox
    };
    let off = Policy {
        mode: Mode::Off,
        mode_chosen: true,
        ..Policy::default()
    };
    let sides = [
        ("unconfined", Sandbox::new(off, &roots)),
        ("sandbox, network allowed", confined(Network::Allow)),
        ("sandbox, network denied", confined(Network::Deny)),
        ("sandbox, network of its own", confined(Network::default())),
    ];
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut took = vec![Vec::with_capacity(rounds); sides.len()];
    runtime.block_on(async {
        for round in 0..rounds + 20 {
            for (side, (_, sandbox)) in sides.iter().enumerate() {
                let started = Instant::now();
                let status = Command::new("true", sandbox)
                    .spawn()
                    .unwrap()
                    .wait()
                    .await
                    .unwrap();
                assert!(status.success());
                if round >= 20 {
                    took[side].push(started.elapsed());
                }
            }
        }
    });
    let median = |values: &mut Vec<Duration>| {
        values.sort();
        values[values.len() / 2].as_secs_f64() * 1e3
    };
    std::hint::black_box(&ballast);
    if ballast_mb > 0 {
        println!("with {ballast_mb} MB of memory in use:");
    }
    let base = median(&mut took[0]);
    for (side, (label, _)) in sides.iter().enumerate() {
        let ms = median(&mut took[side]);
        println!(
            "spawn+wait `true`, {label:<26} median {ms:6.3} ms   difference {:+6.3} ms",
            ms - base
        );
    }
}
