//! The reaper reaps every process it kills before it exits itself. A
//! zombie it left would pass to the next subreaper or to PID 1, and in a
//! container PID 1 may never reap it. This test binary makes itself a
//! subreaper, so whatever the reaper leaves comes to it and is seen here
//! as a zombie instead of being reaped out of sight. One test per binary:
//! the subreaper flag is the whole process's.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use gantry_process::{Command, Reach, Stdout};
use rustix::process::set_child_subreaper;
use tokio::io::{AsyncBufReadExt, BufReader};

const BOUND: Duration = Duration::from_secs(10);
/// Processes that die at once when the command exits: enough for a death
/// to land between the reaper's last reap and its last look.
const ESCAPEES: usize = 40;
const ROUNDS: usize = 5;

#[tokio::test]
async fn every_killed_process_is_reaped_before_the_reaper_exits() {
    gantry_process::reaper::use_program(env!("CARGO_BIN_EXE_gantry-reap"));
    assert_eq!(gantry_process::reaper::reach(), Reach::Descendants);
    set_child_subreaper(Some(rustix::process::getpid())).unwrap();
    for _ in 0..ROUNDS {
        let script = format!(
            "for i in $(seq {ESCAPEES}); do setsid sleep 100 & echo $!; done; exec sleep 100"
        );
        let mut child = Command::new("sh", &common::unconfined())
            .arg("-c")
            .arg(script)
            .stdout(Stdout::Piped)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut pids = Vec::new();
        while pids.len() < ESCAPEES {
            let line = tokio::time::timeout(BOUND, lines.next_line())
                .await
                .expect("the command printed too little")
                .unwrap()
                .expect("the command ended before printing every pid");
            pids.push(line.trim().parse::<i32>().unwrap());
        }
        // Killed with its children at once: their deaths race the
        // reaper's last reap.
        child.kill_group();
        let status = tokio::time::timeout(BOUND, child.wait())
            .await
            .expect("the reaper did not end")
            .unwrap();
        assert_eq!(status.signal(), Some(9));
        let left: Vec<_> = pids
            .iter()
            .filter(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists())
            .collect();
        assert!(left.is_empty(), "left behind by the reaper: {left:?}");
    }
}
