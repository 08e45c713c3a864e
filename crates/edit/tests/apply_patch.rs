//! `apply_patch` through `Run::call`: both formats, every kind of file
//! change, and all-or-nothing refusal.

mod common;

use common::*;
use gantry_core::testing::{fails, ok_result};
use gantry_core::{CallError, CallErrorKind, Display, Run};
use serde_json::json;

/// The error of applying `patch`, which must fail with `kind`.
async fn refused(run: &Run, patch: &str, kind: CallErrorKind) -> CallError {
    fails(run, "apply_patch", json!({"patch": patch}), kind).await
}

const LIB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\npub fn sub(a: i32, b: i32) -> i32 {\n    a - b\n}\n";

#[tokio::test]
async fn begin_patch_adds_updates_moves_and_deletes() {
    let dir = workspace(&[
        ("src/lib.rs", LIB.as_bytes()),
        ("src/old_name.rs", b"mod x;\n"),
        ("obsolete.txt", b"bye\n"),
    ]);
    let run = run(&dir);
    let patch = "*** Begin Patch
*** Add File: docs/notes.md
+# Notes
+
+More.
*** Update File: src/lib.rs
@@ pub fn sub(a: i32, b: i32) -> i32 {
-    a - b
+    a.wrapping_sub(b)
*** Update File: src/old_name.rs
*** Move to: src/new_name.rs
-mod x;
+mod y;
*** Delete File: obsolete.txt
*** End Patch
";
    let result = ok_result(&run, "apply_patch", json!({"patch": patch})).await;
    let text = result.text_content();
    assert!(
        text.starts_with(
            "Applied the patch: 4 files changed (+5 -3).\nA docs/notes.md (+3)\nM src/lib.rs (+1 -1)\nR src/old_name.rs -> src/new_name.rs (+1 -1)\nD obsolete.txt (-1)\n"
        ),
        "{text}"
    );
    assert!(text.contains("+    a.wrapping_sub(b)"), "{text}");
    assert!(matches!(result.return_display, Display::Markdown { .. }));
    assert_eq!(read_text(&dir, "docs/notes.md"), "# Notes\n\nMore.\n");
    assert_eq!(
        read_text(&dir, "src/lib.rs"),
        LIB.replace("    a - b", "    a.wrapping_sub(b)")
    );
    assert_eq!(read_text(&dir, "src/new_name.rs"), "mod y;\n");
    assert!(!dir.path().join("src/old_name.rs").exists());
    assert!(!dir.path().join("obsolete.txt").exists());
}

#[tokio::test]
async fn unified_diffs_apply_too() {
    let dir = workspace(&[("src/lib.rs", LIB.as_bytes()), ("gone.txt", b"old\n")]);
    let run = run(&dir);
    // Line numbers off by a few, as a model's often are: found anyway.
    let patch = "diff --git a/src/lib.rs b/src/lib.rs
index 111..222 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -3,3 +3,4 @@ pub fn add(a: i32, b: i32) -> i32 {
 pub fn add(a: i32, b: i32) -> i32 {
-    a + b
+    // checked
+    a.checked_add(b).unwrap()
 }
--- /dev/null
+++ b/added.txt
@@ -0,0 +1 @@
+new
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-old
";
    let result = ok_result(&run, "apply_patch", json!({"patch": patch})).await;
    assert!(
        result
            .text_content()
            .starts_with("Applied the patch: 3 files changed (+3 -2)."),
        "{}",
        result.text_content()
    );
    assert!(read_text(&dir, "src/lib.rs").starts_with(
        "pub fn add(a: i32, b: i32) -> i32 {\n    // checked\n    a.checked_add(b).unwrap()\n}\n"
    ));
    assert_eq!(read_text(&dir, "added.txt"), "new\n");
    assert!(!dir.path().join("gone.txt").exists());
}

#[tokio::test]
async fn a_hunk_that_does_not_apply_changes_no_file_at_all() {
    let dir = workspace(&[("a.txt", b"alpha\nbeta\n"), ("src/lib.rs", LIB.as_bytes())]);
    let run = run(&dir);
    let before = snapshot(&dir);
    let patch = "*** Begin Patch
*** Update File: a.txt
-alpha
+ALPHA
*** Add File: b.txt
+bee
*** Update File: src/lib.rs
@@
 pub fn mul(a: i32, b: i32) -> i32 {
-    a * b
+    a.wrapping_mul(b)
*** End Patch";
    let error = refused(&run, patch, CallErrorKind::Failed).await;
    assert!(
        error.message.starts_with(
            "the patch was not applied and no file was changed; 1 problem:\n\nsrc/lib.rs: hunk 1 of 1 (patch line 8): these lines were not found:\n  |pub fn mul(a: i32, b: i32) -> i32 {\n  |    a * b\n"
        ),
        "{}",
        error.message
    );
    // The closest line is offered.
    assert!(
        error
            .message
            .contains("pub fn sub(a: i32, b: i32) -> i32 {"),
        "{}",
        error.message
    );
    assert_eq!(
        snapshot(&dir),
        before,
        "a file was written although one hunk failed"
    );
}

#[tokio::test]
async fn syntax_errors_name_the_patch_line() {
    let dir = workspace(&[("a.txt", b"a\n")]);
    let run = run(&dir);
    let cases = [
        (
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\nb\n*** End Patch",
            "patch: line 5: in `*** Update File: a.txt`: expected a hunk line",
        ),
        (
            "*** Begin Patch\n*** Update File: a.txt\n-a\n+b\n",
            "patch: line 4: the patch ends without `*** End Patch` (was it cut off?)",
        ),
        (
            "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @\n-a\n+b\n",
            "patch: line 3: malformed hunk header `@@ -1 +1 @`",
        ),
        (
            "please change a to b",
            "patch: line 1: `please change a to b` starts no known patch format",
        ),
        (
            "*** Begin Patch\n*** Update File: ../outside.txt\n-a\n+b\n*** End Patch",
            "patch: line 2: `../outside.txt` is outside the workspace",
        ),
    ];
    for (patch, expected) in cases {
        let error = refused(&run, patch, CallErrorKind::InvalidParams).await;
        let message = error
            .message
            .strip_prefix("invalid parameters for `apply_patch`: ")
            .unwrap();
        assert!(
            message.starts_with(expected),
            "{message}\n  expected: {expected}"
        );
    }
    assert_eq!(read_text(&dir, "a.txt"), "a\n");
}

#[tokio::test]
async fn files_that_are_not_as_the_patch_says_are_named() {
    let dir = workspace(&[("here.txt", b"x\n")]);
    let run = run(&dir);
    let patch = "*** Begin Patch\n*** Add File: here.txt\n+y\n*** Update File: nowhere.txt\n-a\n+b\n*** Delete File: gone.txt\n*** End Patch";
    let error = refused(&run, patch, CallErrorKind::Failed).await;
    for expected in [
        "3 problems",
        "here.txt (patch line 2): `Add File` but the file already exists; use `*** Update File` to change it",
        "nowhere.txt (patch line 4): the file does not exist; use `*** Add File` to create it",
        "gone.txt (patch line 7): the file does not exist",
    ] {
        assert!(
            error.message.contains(expected),
            "{expected}\n{}",
            error.message
        );
    }
}

#[tokio::test]
async fn whitespace_drift_line_endings_bom_and_final_newline() {
    let dir = workspace(&[
        ("win.txt", b"one\r\ntwo  \r\nthree\r\n"),
        ("bom.txt", "\u{feff}first\nsecond".as_bytes()),
    ]);
    let run = run(&dir);
    // The model's context lacks the trailing spaces and uses LF.
    let patch = "*** Begin Patch
*** Update File: win.txt
 one
-two
+TWO
+2.5
 three
*** Update File: bom.txt
 first
-second
+SECOND
*** End of File
*** End Patch";
    ok_result(&run, "apply_patch", json!({"patch": patch})).await;
    assert_eq!(read_text(&dir, "win.txt"), "one\r\nTWO\r\n2.5\r\nthree\r\n");
    assert_eq!(read_text(&dir, "bom.txt"), "\u{feff}first\nSECOND");
}
