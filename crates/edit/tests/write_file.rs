//! `write_file` through `Run::call`.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use gantry_core::testing::{fails, ok_result};
use gantry_core::{CallErrorKind, Display};
use serde_json::json;

#[tokio::test]
async fn creates_the_file_and_its_parents() {
    let dir = workspace(&[]);
    let run = run(&dir);
    let result = ok_result(
        &run,
        "write_file",
        json!({"path": "src/deep/new.rs", "content": "fn a() {}\nfn b() {}\n"}),
    )
    .await;
    assert_eq!(result.text_content(), "Created src/deep/new.rs (2 lines).");
    match &result.return_display {
        Display::FileDiff { path, diff } => {
            assert_eq!(path, "src/deep/new.rs");
            assert!(
                diff.starts_with("--- /dev/null\n+++ b/src/deep/new.rs\n"),
                "{diff}"
            );
            assert!(diff.contains("+fn b() {}"), "{diff}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(read_text(&dir, "src/deep/new.rs"), "fn a() {}\nfn b() {}\n");
}

#[tokio::test]
async fn overwriting_says_so_with_counts_and_diff() {
    let dir = workspace(&[("notes.txt", b"one\ntwo\nthree\n")]);
    let run = run(&dir);
    let result = ok_result(
        &run,
        "write_file",
        json!({"path": "notes.txt", "content": "one\n2\nthree\nfour\n"}),
    )
    .await;
    let text = result.text_content();
    assert!(
        text.starts_with("Overwrote notes.txt (3 lines -> 4 lines, +2 -1)."),
        "{text}"
    );
    assert!(text.contains("\n-two\n+2\n three\n+four"), "{text}");
    assert_eq!(read_text(&dir, "notes.txt"), "one\n2\nthree\nfour\n");

    // The same content again: nothing to write.
    let result = ok_result(
        &run,
        "write_file",
        json!({"path": "notes.txt", "content": "one\n2\nthree\nfour\n"}),
    )
    .await;
    assert_eq!(
        result.text_content(),
        "notes.txt already has exactly this content; nothing was written."
    );
}

#[tokio::test]
async fn writes_through_a_symlink_and_keeps_the_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = workspace(&[("bin/tool.sh", b"#!/bin/sh\n")]);
    let script = dir.path().join("bin/tool.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("bin/tool.sh", dir.path().join("tool")).unwrap();
    let run = run(&dir);
    ok_result(
        &run,
        "write_file",
        json!({"path": "tool", "content": "#!/bin/sh\necho hi\n"}),
    )
    .await;
    assert!(
        dir.path()
            .join("tool")
            .symlink_metadata()
            .unwrap()
            .is_symlink()
    );
    assert_eq!(read_text(&dir, "bin/tool.sh"), "#!/bin/sh\necho hi\n");
    assert_eq!(
        script.metadata().unwrap().permissions().mode() & 0o777,
        0o755
    );
}

#[tokio::test]
async fn bad_paths_are_refused_before_anything_runs() {
    let dir = workspace(&[("src/lib.rs", b"")]);
    let run = run(&dir);
    let error = fails(
        &run,
        "write_file",
        json!({"path": "../escape.txt", "content": "x"}),
        CallErrorKind::InvalidParams,
    )
    .await;
    assert!(
        error.message.starts_with(
            "invalid parameters for `write_file`: path: `../escape.txt` is outside the workspace"
        ),
        "{}",
        error.message
    );
    let error = fails(
        &run,
        "write_file",
        json!({"path": "src", "content": "x"}),
        CallErrorKind::InvalidParams,
    )
    .await;
    assert!(
        error
            .message
            .ends_with("path: `src` is a directory, not a file"),
        "{}",
        error.message
    );
    let error = fails(
        &run,
        "write_file",
        json!({"file_path": "a", "content": "x"}),
        CallErrorKind::InvalidParams,
    )
    .await;
    assert!(
        error
            .message
            .contains("file_path: unknown parameter (did you mean `path`?)"),
        "{}",
        error.message
    );
    assert!(!dir.path().parent().unwrap().join("escape.txt").exists());
}
