//! `ast_edit` and `resolve` through the real pipeline and the core's write
//! path: staging writes nothing, and accept is all-or-nothing against the
//! contents captured at staging (`accept_crash.rs` has a process killed
//! half-way through an accept).

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{accept, edit_id, stage, workspace};
use gantry_core::testing::{err, ok, read};
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
