//! `ls` through the run's pipeline, on real directories.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use common::Fixture;
use serde_json::json;

#[tokio::test]
async fn directories_come_first_then_files_with_sizes_each_sorted() {
    let fx = Fixture::new();
    fx.write("b.txt", "hello");
    fx.write("A.md", "x".repeat(4100));
    fx.write(".hidden", "");
    fx.mkdir("zeta");
    fx.mkdir("alpha");
    fx.write("Beta/inner.rs", "");

    let text = fx.ok("ls", json!({})).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "Directory `.`: 3 directories, 3 files:", "{text}");
    assert_eq!(
        &lines[1..],
        &[
            "alpha/",
            "Beta/",
            "zeta/",
            ".hidden  0 B",
            "A.md  4.1 KB",
            "b.txt  5 B"
        ],
        "{text}"
    );
}

#[tokio::test]
async fn lists_a_sub_directory_and_shows_symlinks() {
    let fx = Fixture::new();
    fx.write("src/lib.rs", "pub fn a() {}\n");
    std::os::unix::fs::symlink("lib.rs", fx.path("src/link.rs")).unwrap();
    let text = fx.ok("ls", json!({"path": "src"})).await;
    assert!(
        text.starts_with("Directory `src`: 0 directories, 2 files:"),
        "{text}"
    );
    assert!(text.contains("lib.rs  14 B\n"), "{text}");
    assert!(text.contains("link.rs  14 B  -> lib.rs\n"), "{text}");
}

#[tokio::test]
async fn ignore_globs_match_names_and_paths_and_are_counted() {
    let fx = Fixture::with(&[
        ("keep.rs", ""),
        ("debug.log", ""),
        ("node_modules/x.js", ""),
        ("src/generated/g.rs", ""),
        ("src/main.rs", ""),
    ]);

    let text = fx
        .ok("ls", json!({"ignore": ["*.log", "node_modules/"]}))
        .await;
    assert!(text.contains("keep.rs"), "{text}");
    assert!(text.contains("src/"), "{text}");
    assert!(!text.contains("debug.log"), "{text}");
    assert!(!text.contains("node_modules"), "{text}");
    assert!(text.contains("2 entries left out by `ignore`"), "{text}");

    let text = fx
        .ok("ls", json!({"path": "src", "ignore": ["src/generated"]}))
        .await;
    assert!(!text.contains("generated"), "{text}");
    assert!(text.contains("main.rs"), "{text}");
}

#[tokio::test]
async fn says_when_a_directory_is_empty_or_everything_was_ignored() {
    let fx = Fixture::new();
    fx.mkdir("empty");
    fx.write("logs/a.log", "");
    let text = fx.ok("ls", json!({"path": "empty"})).await;
    assert_eq!(text, "Directory `empty` is empty.");
    let text = fx
        .ok("ls", json!({"path": "logs", "ignore": ["*.log"]}))
        .await;
    assert_eq!(
        text,
        "Directory `logs` has no entries left after `ignore` (1 entry left out by `ignore`)."
    );
}

#[tokio::test]
async fn a_file_is_not_a_directory_and_read_file_is_suggested() {
    let fx = Fixture::new();
    fx.write("Cargo.toml", "[package]\n");
    let err = fx.err("ls", json!({"path": "Cargo.toml"})).await;
    assert_eq!(
        err,
        "`Cargo.toml` is a file (10 B), not a directory; use read_file to read it"
    );
}

#[tokio::test]
async fn a_missing_directory_names_the_closest_sibling() {
    let fx = Fixture::new();
    fx.write("src/tools/mod.rs", "");
    fx.mkdir("tests");
    let err = fx.err("ls", json!({"path": "scr"})).await;
    assert_eq!(err, "`scr` does not exist; did you mean `src`?");
    let err = fx.err("ls", json!({"path": "src/tool"})).await;
    assert_eq!(err, "`src/tool` does not exist; did you mean `src/tools`?");
    let err = fx.err("ls", json!({"path": "scr/tools"})).await;
    assert_eq!(err, "`scr/tools` does not exist; did you mean `src/tools`?");
    let err = fx.err("ls", json!({"path": "docs"})).await;
    assert_eq!(err, "`docs` does not exist: `.` has no entry `docs`");
}

#[tokio::test]
async fn a_bad_ignore_glob_is_a_parameter_error() {
    let fx = Fixture::new();
    let err = fx.err("ls", json!({"ignore": ["ok", "[unclosed"]})).await;
    assert!(
        err.starts_with("invalid parameters for `ls`: ignore.1: invalid glob `[unclosed`"),
        "{err}"
    );
}
