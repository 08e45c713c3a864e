//! `ast_edit` and `resolve` through the real pipeline and the core's write
//! path: staging writes nothing, accept is all-or-nothing against the
//! contents captured at staging, and a process killed half-way through an
//! accept leaves the files all-old or all-new after recovery.
//!
//! The crash test re-runs this test binary with `GANTRY_TEST_CHILD` set,
//! selecting [`child_entry`], which stages and accepts an edit with a
//! failpoint armed.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{accept, edit_id, stage, workspace};
use gantry_core::testing::{err, ok, read, state_dir};
use gantry_core::write::recover;
use serde_json::json;

#[cfg(feature = "rust")]
const A: &str = "fn a(x: Option<u8>) -> u8 {\n    x.unwrap()\n}\n";
#[cfg(feature = "rust")]
const B: &str =
    "fn b(r: Result<u8, ()>) -> u8 {\n    let v = r.unwrap();\n    v + r.clone().unwrap()\n}\n";

#[cfg(feature = "rust")]
#[tokio::test]
async fn stage_then_accept_writes_every_file() {
    let (_dir, run) = workspace(&[
        ("src/a.rs", A),
        ("src/b.rs", B),
        ("src/c.rs", "fn c() {}\n"),
    ]);
    let text = stage(&run, "$X.unwrap()", "$X.expect(\"checked\")").await;
    assert!(
        text.starts_with(
            "(proposed) 3 replacements in 2 files: `$X.unwrap()` → `$X.expect(\"checked\")`"
        ),
        "{text}"
    );
    assert!(text.contains("Files: src/a.rs (1), src/b.rs (2)"), "{text}");
    assert!(text.contains("--- a/src/a.rs\n+++ b/src/a.rs"), "{text}");
    assert!(
        text.contains("-    x.unwrap()\n+    x.expect(\"checked\")"),
        "{text}"
    );
    // Staging wrote nothing.
    assert_eq!(read(&run, "src/a.rs"), A);
    assert_eq!(read(&run, "src/b.rs"), B);

    let id = edit_id(&text);
    assert_eq!(id, "edit_1");
    let applied = ok(&run, "resolve", json!({"edit_id": id, "action": "accept"})).await;
    assert_eq!(
        applied,
        "Applied edit_1: 3 replacements in 2 files (src/a.rs, src/b.rs)."
    );
    assert_eq!(
        read(&run, "src/a.rs"),
        "fn a(x: Option<u8>) -> u8 {\n    x.expect(\"checked\")\n}\n"
    );
    assert_eq!(
        read(&run, "src/b.rs"),
        "fn b(r: Result<u8, ()>) -> u8 {\n    let v = r.expect(\"checked\");\n    v + r.clone().expect(\"checked\")\n}\n"
    );
    // Resolved ids are not reused or accepted twice.
    let message = err(
        &run,
        "resolve",
        json!({"edit_id": "edit_1", "action": "accept"}),
    )
    .await;
    assert!(
        message.contains("`edit_1` was already accepted"),
        "{message}"
    );
    let message = err(
        &run,
        "resolve",
        json!({"edit_id": "edit_7", "action": "discard"}),
    )
    .await;
    assert!(
        message.contains("no staged edit `edit_7` in this run"),
        "{message}"
    );
}

#[cfg(feature = "rust")]
#[tokio::test]
async fn a_file_changed_after_staging_rejects_the_whole_accept() {
    let (_dir, run) = workspace(&[("src/a.rs", A), ("src/b.rs", B)]);
    let text = stage(&run, "$X.unwrap()", "$X?").await;
    let id = edit_id(&text);
    let moved = "fn b() { /* edited by someone else */ }\n";
    std::fs::write(run.workspace().root().join("src/b.rs"), moved).unwrap();
    let message = err(&run, "resolve", json!({"edit_id": id, "action": "accept"})).await;
    assert!(
        message.starts_with(&format!("{id} was not applied: nothing was written: a file changed since the change was planned (src/b.rs)")),
        "{message}"
    );
    // Nothing written, not even the file that did not move.
    assert_eq!(read(&run, "src/a.rs"), A);
    assert_eq!(read(&run, "src/b.rs"), moved);
    let message = err(&run, "resolve", json!({"edit_id": id, "action": "accept"})).await;
    assert!(message.contains("rejected"), "{message}");
}

#[cfg(feature = "rust")]
#[tokio::test]
async fn discard_drops_the_edit_and_writes_nothing() {
    let (_dir, run) = workspace(&[("src/a.rs", A)]);
    let text = ok(
        &run,
        "ast_edit",
        json!({"pattern": "$X.unwrap()", "rewrite": "$X?", "path": "src/a.rs"}),
    )
    .await;
    let id = edit_id(&text);
    let dropped = ok(&run, "resolve", json!({"edit_id": id, "action": "discard"})).await;
    assert_eq!(
        dropped,
        "Discarded edit_1: 1 replacements in 1 files dropped; nothing was written."
    );
    assert_eq!(read(&run, "src/a.rs"), A);
    let message = err(&run, "resolve", json!({"edit_id": id, "action": "accept"})).await;
    assert!(message.contains("already discarded"), "{message}");
}

#[cfg(feature = "rust")]
#[tokio::test]
async fn a_rewrite_with_an_unbound_metavariable_is_an_error() {
    let (_dir, run) = workspace(&[("src/a.rs", A)]);
    let message = err(
        &run,
        "ast_edit",
        json!({"pattern": "$X.unwrap()", "rewrite": "$Y.expect(\"x\")"}),
    )
    .await;
    assert_eq!(
        message,
        "rewrite: `$Y` is not bound by the pattern, so it would be replaced by nothing; the pattern binds $X"
    );
    let message = err(
        &run,
        "ast_edit",
        json!({"pattern": "f($$$ARGS)", "rewrite": "g($ARGS)"}),
    )
    .await;
    assert!(
        message.starts_with("rewrite: `$ARGS` must be written `$$$ARGS`"),
        "{message}"
    );
}

#[cfg(feature = "rust")]
#[tokio::test]
async fn nested_matches_rewrite_the_outermost_and_say_so() {
    let source = "fn f() {\n    let v = a.unwrap().b.unwrap();\n}\n";
    let (_dir, run) = workspace(&[("n.rs", source)]);
    let text = stage(&run, "$X.unwrap()", "must($X)").await;
    assert!(
        text.starts_with("(proposed) 1 replacement in 1 file"),
        "{text}"
    );
    assert!(
        text.contains("1 match nested inside another match was left as written"),
        "{text}"
    );
    accept(&run, &text).await;
    assert_eq!(
        read(&run, "n.rs"),
        "fn f() {\n    let v = must(a.unwrap().b);\n}\n"
    );
    // Again: the inner one now.
    let text = stage(&run, "$X.unwrap()", "must($X)").await;
    accept(&run, &text).await;
    assert_eq!(
        read(&run, "n.rs"),
        "fn f() {\n    let v = must(must(a).b);\n}\n"
    );
}

#[cfg(feature = "dart")]
#[tokio::test]
async fn dart_statement_runs_are_carried_into_the_rewrite() {
    let source = "void f() {\n  setState(() {\n    a = 1;\n    b = 2;\n  });\n}\n";
    let (_dir, run) = workspace(&[("lib/w.dart", source)]);
    let text = stage(&run, "setState(() { $$$BODY })", "update(() { $$$BODY })").await;
    accept(&run, &text).await;
    assert_eq!(
        read(&run, "lib/w.dart"),
        "void f() {\n  update(() { a = 1;\n  b = 2; });\n}\n"
    );
}

#[cfg(feature = "python")]
#[tokio::test]
async fn python_rewrite_with_repeated_metavariable() {
    let source = "def f(a, b):\n    if a == a:\n        pass\n    if a == b:\n        pass\n";
    let (_dir, run) = workspace(&[("m.py", source)]);
    let text = stage(&run, "$A == $A", "True").await;
    assert!(
        text.starts_with("(proposed) 1 replacement in 1 file"),
        "{text}"
    );
    accept(&run, &text).await;
    assert_eq!(
        read(&run, "m.py"),
        "def f(a, b):\n    if True:\n        pass\n    if a == b:\n        pass\n"
    );
}

#[cfg(feature = "rust")]
#[tokio::test]
async fn staged_edits_end_with_the_run() {
    let (dir, run) = workspace(&[("src/a.rs", A)]);
    let text = stage(&run, "$X.unwrap()", "$X?").await;
    let id = edit_id(&text);
    assert!(
        run.resource_status()
            .iter()
            .any(|s| s.contains("1 staged edit")),
        "{:?}",
        run.resource_status()
    );
    run.shutdown().await;
    drop(run);
    let run = gantry_ast::register(gantry_core::Run::builder(
        gantry_core::Workspace::new(dir.path()).unwrap(),
    ))
    .build();
    let message = err(&run, "resolve", json!({"edit_id": id, "action": "accept"})).await;
    assert!(message.contains("none is pending"), "{message}");
}

// ---- A crash in the middle of an accept --------------------------------

/// Not a test of its own: the entry point of the child processes below.
/// Without `GANTRY_TEST_CHILD` it does nothing.
#[test]
fn child_entry() {
    let Ok(root) = std::env::var("GANTRY_TEST_CHILD") else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let run = gantry_ast::register(gantry_core::Run::builder(
            gantry_core::Workspace::new(&root).unwrap(),
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
fn crash_accept(root: &Path, failpoint: &str) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
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
#[tokio::test]
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
#[tokio::test]
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
