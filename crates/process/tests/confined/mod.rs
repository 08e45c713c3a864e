//! What the sandbox's tests share: whether they run here, the reaper they
//! use, a scratch folder outside the writable defaults, and a confined
//! `bash -c`.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]
// Each test binary uses its own part of these.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use gantry_process::network::Network;
use gantry_process::sandbox::{Mode, NET_ABI, Policy, kernel_abi};
use gantry_process::{Command, Reach, Sandbox, Stderr, Stdout};

pub const BOUND: Duration = Duration::from_secs(20);

/// Whether the sandbox tests run: always, unless skipped on request; a
/// kernel that cannot run them is a failure that says so.
pub fn landlock_here() -> bool {
    if gantry_core::testing::skip_requested(
        "GANTRY_SKIP_SANDBOX",
        "the test, which needs Landlock ABI 4",
    ) {
        return false;
    }
    let abi = kernel_abi();
    assert!(
        abi >= NET_ABI,
        "this kernel offers Landlock ABI {abi}; the sandbox tests need {NET_ABI} (set \
         GANTRY_SKIP_SANDBOX=1 to skip them on purpose)"
    );
    gantry_process::reaper::use_program(reaper_program());
    assert_eq!(gantry_process::reaper::reach(), Reach::Descendants);
    true
}

/// The reaper cargo built, unless `GANTRY_REAPER` names a copy: the
/// unprivileged rerun of `scripts/test.sh` runs copies of these binaries
/// from a folder its user can enter, which the checkout may not be.
pub fn reaper_program() -> std::path::PathBuf {
    std::env::var_os(gantry_process::reaper::ENV)
        .map(Into::into)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_gantry-reap").into())
}

/// A directory outside the temp directory and the caches, so only a rule
/// of its own makes it writable.
pub fn scratch() -> tempfile::TempDir {
    gantry_core::testing::outside_the_writable_defaults()
}

pub fn sandbox(mode: Mode, network: bool, workspace: &Path) -> Sandbox {
    let network = match network {
        true => Network::Allow,
        false => Network::Deny,
    };
    let policy = Policy {
        mode,
        mode_chosen: true,
        network,
        ..Policy::default()
    };
    let sandbox = Sandbox::new(policy, &[workspace.to_path_buf()]);
    assert!(sandbox.confines(), "{:?}", sandbox.status());
    sandbox
}

/// Runs `script` with bash in `dir`, confined by `sandbox`: its exit code
/// and its output (stdout and stderr together).
pub async fn run(sandbox: &Sandbox, dir: &Path, script: &str) -> (i32, String) {
    let child = Command::new("bash", sandbox)
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdout(Stdout::Capture {
            head: 1 << 16,
            tail: 1 << 16,
        })
        .stderr(Stderr::Stdout)
        .spawn()
        .unwrap();
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .expect("the command ends")
        .unwrap();
    tokio::time::timeout(BOUND, child.output().unwrap().finished())
        .await
        .unwrap();
    let output = child.output().unwrap().lock();
    let text = String::from_utf8_lossy(output.head()).into_owned()
        + &String::from_utf8_lossy(&output.tail());
    (status.code().unwrap_or(-1), text)
}
