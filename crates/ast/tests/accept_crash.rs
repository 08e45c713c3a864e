//! A process killed half-way through an `ast_edit` accept leaves the files
//! all-old or all-new after recovery.
//!
//! Its own `main` (`harness = false`): run with `GANTRY_TEST_CHILD` naming
//! a workspace, this binary is the child that stages and accepts an edit
//! there with a failpoint armed; run without, it runs the tests.

mod common;

use std::process::ExitCode;
#[cfg(feature = "rust")]
use std::{
    path::{Path, PathBuf},
    process::Command,
};

#[cfg(feature = "rust")]
use common::workspace;
use common::{edit_id, stage};
use gantry_core::testing::harness;
#[cfg(feature = "rust")]
use gantry_core::{
    testing::{read, state_dir},
    write::recover,
};
use serde_json::json;

#[cfg(feature = "rust")]
const A: &str = "fn a(x: Option<u8>) -> u8 {\n    x.unwrap()\n}\n";
#[cfg(feature = "rust")]
const B: &str =
    "fn b(r: Result<u8, ()>) -> u8 {\n    let v = r.unwrap();\n    v + r.clone().unwrap()\n}\n";

fn main() -> ExitCode {
    if let Ok(root) = std::env::var("GANTRY_TEST_CHILD") {
        child(&root);
        return ExitCode::SUCCESS;
    }
    harness::run(&[
        #[cfg(feature = "rust")]
        (
            "a_crash_between_renames_of_an_accept_is_finished_by_recovery",
            || Box::pin(a_crash_between_renames_of_an_accept_is_finished_by_recovery()),
        ),
        #[cfg(feature = "rust")]
        (
            "a_crash_before_the_commit_of_an_accept_is_rolled_back",
            || Box::pin(a_crash_before_the_commit_of_an_accept_is_rolled_back()),
        ),
    ])
}

/// The child process: stages an edit on `root` and accepts it, with the
/// failpoint the parent armed.
fn child(root: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let run = gantry_ast::register(gantry_core::Run::builder(
            gantry_core::Workspace::new(root).unwrap(),
        ))
        .build();
        let text = stage(&run, "$X.unwrap()", "$X?").await;
        let outcome = run
            .call(
                "resolve",
                json!({"edit_id": edit_id(&text), "action": "accept"}),
            )
            .await;
        panic!("the failpoint did not fire: {outcome:?}");
    });
}

/// Runs the child on `root` with the failpoint armed; it must abort.
#[cfg(feature = "rust")]
fn crash_accept(root: &Path, failpoint: &str) {
    let output = Command::new(std::env::current_exe().unwrap())
        .env("GANTRY_TEST_CHILD", root)
        .env("GANTRY_STATE_DIR", state_dir())
        .env("GANTRY_FAILPOINT", failpoint)
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        output.status.signal(),
        Some(6),
        "the child should have aborted at {failpoint}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[cfg(feature = "rust")]
fn contents(root: &Path) -> Vec<(PathBuf, String)> {
    let mut files: Vec<(PathBuf, String)> = walk(root)
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p.strip_prefix(root).unwrap().to_path_buf(), text)
        })
        .collect();
    files.sort();
    files
}

#[cfg(feature = "rust")]
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[cfg(feature = "rust")]
async fn a_crash_between_renames_of_an_accept_is_finished_by_recovery() {
    let (_dir, run) = workspace(&[("src/a.rs", A), ("src/b.rs", B)]);
    let root = run.workspace().root().to_path_buf();
    crash_accept(&root, "after-first-rename");
    // Half-way: exactly one of the two files is new, and temp files lie
    // beside them.
    let new_a = read(&run, "src/a.rs") != A;
    let new_b = read(&run, "src/b.rs") != B;
    assert!(new_a ^ new_b, "expected a half-applied accept");
    assert!(contents(&root).len() > 2);

    let report = recover(&root).unwrap();
    assert!(!report.is_empty());
    let files = contents(&root);
    assert_eq!(
        files,
        [
            (
                PathBuf::from("src/a.rs"),
                "fn a(x: Option<u8>) -> u8 {\n    x?\n}\n".to_string()
            ),
            (
                PathBuf::from("src/b.rs"),
                "fn b(r: Result<u8, ()>) -> u8 {\n    let v = r?;\n    v + r.clone()?\n}\n"
                    .to_string()
            ),
        ],
        "all new after recovery"
    );
}

#[cfg(feature = "rust")]
async fn a_crash_before_the_commit_of_an_accept_is_rolled_back() {
    let (_dir, run) = workspace(&[("src/a.rs", A), ("src/b.rs", B)]);
    let root = run.workspace().root().to_path_buf();
    crash_accept(&root, "before-commit");
    recover(&root).unwrap();
    assert_eq!(
        contents(&root),
        [
            (PathBuf::from("src/a.rs"), A.to_string()),
            (PathBuf::from("src/b.rs"), B.to_string()),
        ],
        "all old after recovery"
    );
}
