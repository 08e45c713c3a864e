//! A checkout without `.venv` that plants what making Gantry's kernel
//! environment (`python3 -m venv`) would import if it took the workspace
//! on `sys.path` (issue 21): `venv.py`, `ensurepip.py`, start-up hooks. The
//! environment is made confined and isolated, none of them runs, and the
//! kernel works; again when a cell deletes its interpreter and resets; and
//! a payload a cell writes in place of that interpreter runs, at the next
//! start, only in the run's sandbox. Needs Landlock (GANTRY_SKIP_SANDBOX=1
//! skips on request).

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use gantry_core::testing::{Payload, skip_requested};
use serde_json::json;

fn sandbox_here() -> bool {
    !skip_requested(
        "GANTRY_SKIP_SANDBOX",
        "the test, which needs Landlock to confine the kernel",
    )
}

/// The modules planted in the checkout; none may run in the making of the
/// environment, whose `-m venv` (and, were it asked, `ensurepip`) would
/// import the first two from the current directory.
const PLANTED: [&str; 4] = [
    "venv.py",
    "ensurepip.py",
    "sitecustomize.py",
    "usercustomize.py",
];

/// A reset cell that shows which interpreter runs it.
fn reset_and_show_prefix() -> serde_json::Value {
    json!({"code": "import sys; sys.prefix", "description": "start afresh and show the prefix", "reset": true})
}

#[tokio::test]
async fn the_kernel_environment_is_made_without_the_checkouts_modules() {
    if !sandbox_here() {
        return;
    }
    let dir = workspace(&[("pyproject.toml", "")]);
    let payload = Payload::new(dir.path());
    for name in PLANTED {
        std::fs::write(dir.path().join(name), payload.python(name)).unwrap();
    }
    let run = run(dir.path());
    let prefix = cell(&run, py("import sys; sys.prefix")).await;
    assert!(
        prefix.contains(&gantry_core::testing::state_dir().display().to_string()),
        "the kernel runs in Gantry's environment: {prefix}"
    );
    assert_eq!(payload.landed_outside(), Vec::<String>::new());
    assert_eq!(payload.ran_inside(), Vec::<String>::new());

    // A cell removes its environment's interpreter and asks for a reset:
    // the environment is made again, as confined and isolated.
    let removed = cell(
        &run,
        py("import os, sys\nfor name in ('python', 'python3'):\n    os.remove(os.path.join(sys.prefix, 'bin', name))\n'removed'"),
    )
    .await;
    assert!(removed.contains("removed"), "{removed}");
    let again = cell(&run, reset_and_show_prefix()).await;
    let first_line = |text: &str| text.lines().next().unwrap_or_default().to_string();
    assert_eq!(
        first_line(&again),
        first_line(&prefix),
        "made again: {again}"
    );
    assert_eq!(payload.landed_outside(), Vec::<String>::new());
    assert_eq!(payload.ran_inside(), Vec::<String>::new());
    run.shutdown().await;
}

#[tokio::test]
async fn a_payload_written_as_the_environments_interpreter_runs_only_confined() {
    if !sandbox_here() {
        return;
    }
    let dir = workspace(&[("setup.py", "")]);
    let payload = Payload::new(dir.path());
    let run = run(dir.path());
    // The cell replaces its environment's `bin/python` with a script that
    // leaves the markers and then runs the real interpreter.
    let script = format!(
        "#!/bin/sh\n{}exec \"$(cat \"$(dirname \"$0\")/real\")\" \"$@\"\n",
        payload.shell("bin-python")
    );
    let planted = cell(
        &run,
        py(&format!(
            "import os, sys\nbin = os.path.join(sys.prefix, 'bin')\nopen(os.path.join(bin, 'real'), 'w').write(sys._base_executable)\nos.remove(os.path.join(bin, 'python'))\nopen(os.path.join(bin, 'python'), 'w').write({script:?})\nos.chmod(os.path.join(bin, 'python'), 0o755)\n'planted'"
        )),
    )
    .await;
    assert!(planted.contains("planted"), "{planted}");
    // What runs it next is the kernel's own start, in the run's sandbox:
    // it runs (its marker in the workspace), and nothing lands outside.
    let next = cell(&run, reset_and_show_prefix()).await;
    assert_eq!(
        payload.ran_inside(),
        vec!["bin-python".to_string()],
        "{next}"
    );
    assert_eq!(payload.landed_outside(), Vec::<String>::new());
    // So does another run's first cell in the same workspace.
    run.shutdown().await;
    let other = common::run(dir.path());
    cell(&other, py("1 + 1")).await;
    assert_eq!(payload.ran_inside().len(), 2);
    assert_eq!(payload.landed_outside(), Vec::<String>::new());
    other.shutdown().await;
}

#[tokio::test]
async fn a_cell_does_not_see_gantrys_secrets() {
    if !sandbox_here() {
        return;
    }
    // SAFETY: set once, before any kernel of this binary starts a process
    // that reads the environment; the names are this test's own.
    unsafe {
        std::env::set_var("GANTRY_HTTP_TOKEN", "planted-http-token");
        std::env::set_var("GANTRY_ATTACK_TEST_API_KEY", "planted-api-key");
    }
    let dir = workspace(&[]);
    let run = run(dir.path());
    let seen = cell(
        &run,
        py("import os\nsorted(k for k, v in os.environ.items() if k.endswith('_KEY') or k == 'GANTRY_HTTP_TOKEN' or v.startswith('planted-'))"),
    )
    .await;
    assert!(seen.starts_with("[]"), "{seen}");
    run.shutdown().await;
}
