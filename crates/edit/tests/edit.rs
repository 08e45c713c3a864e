//! `edit` through `Run::call`: matching, counting, line endings, and the
//! errors a model gets when its `old_string` is not what the file says.

mod common;

use common::*;
use gantry_core::CallErrorKind;
use gantry_core::testing::{fails, ok_result};
use serde_json::json;

const SOURCE: &str = "fn main() {\n    let total = compute(1, 2);\n    println!(\"{total}\");\n}\n";

#[tokio::test]
async fn replaces_one_occurrence_and_shows_the_diff() {
    let dir = workspace(&[("src/main.rs", SOURCE.as_bytes())]);
    let run = run(&dir);
    let result = ok_result(
        &run,
        "edit",
        json!({"path": "src/main.rs", "old_string": "compute(1, 2)", "new_string": "compute(3, 4)"}),
    )
    .await;
    let text = result.text_content();
    assert!(
        text.starts_with("Edited src/main.rs: replaced 1 occurrence (+1 -1 lines)."),
        "{text}"
    );
    assert!(
        text.contains("-    let total = compute(1, 2);\n+    let total = compute(3, 4);"),
        "{text}"
    );
    assert_eq!(
        read_text(&dir, "src/main.rs"),
        SOURCE.replace("(1, 2)", "(3, 4)")
    );
}

#[tokio::test]
async fn zero_matches_show_the_closest_lines() {
    let dir = workspace(&[("src/main.rs", SOURCE.as_bytes())]);
    let run = run(&dir);
    let error = fails(
        &run,
        "edit",
        json!({"path": "src/main.rs", "old_string": "let total = compute(1, 3);", "new_string": "x"}),
        CallErrorKind::Failed,
    )
    .await;
    assert!(error.message.starts_with("old_string was not found in src/main.rs (0 matches, nothing changed); the closest lines are 2-2:\n     2\t    let total = compute(1, 2);"), "{}", error.message);

    // Right text, wrong indentation: said so.
    let error = fails(
        &run,
        "edit",
        json!({"path": "src/main.rs", "old_string": "let total = compute(1, 2);\nprintln!(\"{total}\");", "new_string": "x"}),
        CallErrorKind::Failed,
    )
    .await;
    assert!(
        error
            .message
            .contains("lines 2-3 match except for whitespace"),
        "{}",
        error.message
    );
    assert_eq!(read_text(&dir, "src/main.rs"), SOURCE);
}

#[tokio::test]
async fn more_matches_than_expected_say_how_many_and_where() {
    let dir = workspace(&[("list.txt", b"item\nother\nitem\nother\nitem\n")]);
    let run = run(&dir);
    let error = fails(
        &run,
        "edit",
        json!({"path": "list.txt", "old_string": "item", "new_string": "thing"}),
        CallErrorKind::Failed,
    )
    .await;
    assert!(
        error.message.starts_with("found 3 matches of old_string in list.txt (at lines 1, 3, 5) but expected_replacements is 1; nothing changed."),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("set expected_replacements to 3"),
        "{}",
        error.message
    );
    let error = fails(&run, "edit", json!({"path": "list.txt", "old_string": "item", "new_string": "thing", "expected_replacements": 4}), CallErrorKind::Failed).await;
    assert!(
        error.message.contains("found 3 matches")
            && error.message.contains("Set expected_replacements to 3"),
        "{}",
        error.message
    );
    assert_eq!(
        read_text(&dir, "list.txt"),
        "item\nother\nitem\nother\nitem\n"
    );

    let result = ok_result(&run, "edit", json!({"path": "list.txt", "old_string": "item", "new_string": "thing", "expected_replacements": 3})).await;
    assert!(
        result
            .text_content()
            .starts_with("Edited list.txt: replaced 3 occurrences (+3 -3 lines).")
    );
    assert_eq!(
        read_text(&dir, "list.txt"),
        "thing\nother\nthing\nother\nthing\n"
    );
}

#[tokio::test]
async fn invalid_parameters_are_refused_by_name() {
    let dir = workspace(&[("a.txt", b"a\n")]);
    let run = run(&dir);
    let error = fails(
        &run,
        "edit",
        json!({"path": "a.txt", "old_string": "a", "new_string": "b", "expected_replacements": 0}),
        CallErrorKind::InvalidParams,
    )
    .await;
    assert_eq!(
        error.message,
        "invalid parameters for `edit`: expected_replacements: expected integer >= 1, got 0"
    );
    let error = fails(
        &run,
        "edit",
        json!({"path": "a.txt", "old_string": "a", "new_string": "a"}),
        CallErrorKind::InvalidParams,
    )
    .await;
    assert!(
        error
            .message
            .ends_with("new_string: is identical to old_string, so the edit would change nothing"),
        "{}",
        error.message
    );
    let error = fails(
        &run,
        "edit",
        json!({"path": "../x", "old_string": "a", "new_string": "b"}),
        CallErrorKind::InvalidParams,
    )
    .await;
    assert!(
        error
            .message
            .contains("path: `../x` is outside the workspace"),
        "{}",
        error.message
    );
    let error = fails(
        &run,
        "edit",
        json!({"path": "a.txt", "old_string": "a"}),
        CallErrorKind::InvalidParams,
    )
    .await;
    assert!(
        error
            .message
            .contains("new_string: missing required parameter"),
        "{}",
        error.message
    );
    assert_eq!(read_text(&dir, "a.txt"), "a\n");
}

#[tokio::test]
async fn crlf_bom_and_final_newline_are_kept() {
    let dir = workspace(&[
        ("win.txt", b"first\r\nsecond\r\nthird\r\n"),
        ("bom.cs", "\u{feff}class A {}\nclass B {}\n".as_bytes()),
        ("open.txt", b"alpha\nbeta"),
        ("closed.txt", b"alpha\nbeta\n"),
    ]);
    let run = run(&dir);
    // The model sends LF; the file is CRLF and stays CRLF.
    ok_result(&run, "edit", json!({"path": "win.txt", "old_string": "first\nsecond\n", "new_string": "first\nnew second\nextra\n"})).await;
    assert_eq!(
        read_text(&dir, "win.txt"),
        "first\r\nnew second\r\nextra\r\nthird\r\n"
    );
    // An edit at the very start of a file with a byte-order mark.
    ok_result(
        &run,
        "edit",
        json!({"path": "bom.cs", "old_string": "class A {}", "new_string": "class Z {}"}),
    )
    .await;
    assert_eq!(
        read_text(&dir, "bom.cs"),
        "\u{feff}class Z {}\nclass B {}\n"
    );
    // No final newline stays none, even if new_string adds one.
    ok_result(
        &run,
        "edit",
        json!({"path": "open.txt", "old_string": "beta", "new_string": "gamma\n"}),
    )
    .await;
    assert_eq!(read_text(&dir, "open.txt"), "alpha\ngamma");
    // A final newline stays, even if the edit drops it.
    ok_result(
        &run,
        "edit",
        json!({"path": "closed.txt", "old_string": "beta\n", "new_string": "gamma"}),
    )
    .await;
    assert_eq!(read_text(&dir, "closed.txt"), "alpha\ngamma\n");
}

#[tokio::test]
async fn empty_old_string_creates_a_missing_file_only() {
    let dir = workspace(&[("exists.txt", b"x\n")]);
    let run = run(&dir);
    let result = ok_result(
        &run,
        "edit",
        json!({"path": "new/file.txt", "old_string": "", "new_string": "hello\n"}),
    )
    .await;
    assert_eq!(result.text_content(), "Created new/file.txt (1 line).");
    assert_eq!(read_text(&dir, "new/file.txt"), "hello\n");
    let error = fails(
        &run,
        "edit",
        json!({"path": "exists.txt", "old_string": "", "new_string": "y"}),
        CallErrorKind::Failed,
    )
    .await;
    assert!(
        error
            .message
            .starts_with("old_string is empty but exists.txt already exists"),
        "{}",
        error.message
    );
    let error = fails(
        &run,
        "edit",
        json!({"path": "missing.txt", "old_string": "a", "new_string": "b"}),
        CallErrorKind::Failed,
    )
    .await;
    assert!(
        error.message.starts_with("missing.txt does not exist."),
        "{}",
        error.message
    );
    assert_eq!(read_text(&dir, "exists.txt"), "x\n");
}

#[tokio::test]
async fn binary_files_are_left_alone() {
    let dir = workspace(&[("logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")]);
    let run = run(&dir);
    let error = fails(
        &run,
        "edit",
        json!({"path": "logo.png", "old_string": "PNG", "new_string": "JPG"}),
        CallErrorKind::Failed,
    )
    .await;
    assert!(
        error
            .message
            .starts_with("logo.png is a binary or non-UTF-8 file"),
        "{}",
        error.message
    );
    assert_eq!(
        read(&dir, "logo.png"),
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    );
}
