//! `glob` through the run's pipeline, on real trees.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{Fixture, set_mtime};
use serde_json::json;

fn listed(text: &str) -> Vec<&str> {
    text.lines().skip(1).collect()
}

#[tokio::test]
async fn newest_first_then_by_path() {
    let fx = Fixture::new();
    for (path, secs) in [
        ("old.rs", 1_000),
        ("src/new.rs", 3_000),
        ("src/b.rs", 2_000),
        ("src/a.rs", 2_000),
        ("notes.txt", 4_000),
    ] {
        let path = fx.write(path, "");
        set_mtime(&path, secs);
    }
    let text = fx.ok("glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(
        text.lines().next().unwrap(),
        "4 files match `**/*.rs` in `.`, newest first:"
    );
    assert_eq!(
        listed(&text),
        ["src/new.rs", "src/a.rs", "src/b.rs", "old.rs"]
    );
}

#[tokio::test]
async fn a_pattern_without_slash_matches_names_at_any_depth() {
    let fx = Fixture::with(&[("top.rs", ""), ("a/b/deep.rs", ""), ("a/b/deep.txt", "")]);
    let text = fx.ok("glob", json!({"pattern": "*.rs"})).await;
    let mut files = listed(&text);
    files.sort();
    assert_eq!(files, ["a/b/deep.rs", "top.rs"]);

    // With a slash the pattern is a path, and `*` stays in one folder.
    let text = fx.ok("glob", json!({"pattern": "a/*.rs"})).await;
    assert!(text.starts_with("No files match `a/*.rs`"), "{text}");
    let text = fx.ok("glob", json!({"pattern": "a/**/*.rs"})).await;
    assert_eq!(listed(&text), ["a/b/deep.rs"]);
    let text = fx
        .ok("glob", json!({"pattern": "./a/*/deep.{rs,txt}"}))
        .await;
    assert_eq!(listed(&text).len(), 2, "{text}");
}

#[tokio::test]
async fn path_narrows_the_search_and_output_stays_workspace_relative() {
    let fx = Fixture::with(&[("src/x/lib.rs", ""), ("other/lib.rs", "")]);
    let text = fx
        .ok("glob", json!({"pattern": "x/*.rs", "path": "src"}))
        .await;
    assert_eq!(listed(&text), ["src/x/lib.rs"]);
    // Relative to `path`, not to the root: say so when nothing matched.
    let text = fx
        .ok("glob", json!({"pattern": "src/x/*.rs", "path": "src"}))
        .await;
    assert!(
        text.contains("matched against paths relative to `src`"),
        "{text}"
    );
    // An absolute pattern under the folder is understood.
    let absolute = format!("{}/src/**/*.rs", fx.root().display());
    let text = fx.ok("glob", json!({"pattern": absolute})).await;
    assert_eq!(listed(&text), ["src/x/lib.rs"]);
    let err = fx.err("glob", json!({"pattern": "/elsewhere/*.rs"})).await;
    assert!(
        err.contains("is absolute; put the folder in `path`"),
        "{err}"
    );
}

#[tokio::test]
async fn gitignore_is_respected_without_a_git_repository_and_hidden_is_skipped() {
    let fx = Fixture::with(&[
        (".gitignore", "target/\n*.gen.rs\n"),
        ("src/.ignore", "skipme.rs\n"),
        ("src/main.rs", ""),
        ("src/x.gen.rs", ""),
        ("src/skipme.rs", ""),
        ("target/debug/build.rs", ""),
        (".hidden/secret.rs", ""),
        (".github/workflows/ci.yml", ""),
    ]);
    assert!(!fx.path(".git").exists());

    let text = fx.ok("glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(listed(&text), ["src/main.rs"], "{text}");

    // A pattern that names a hidden folder walks hidden entries.
    let text = fx.ok("glob", json!({"pattern": ".github/**/*.yml"})).await;
    assert_eq!(listed(&text), [".github/workflows/ci.yml"]);
}

#[tokio::test]
async fn results_are_capped_at_500_and_the_cap_is_said() {
    let fx = Fixture::new();
    for n in 0..523 {
        let path = fx.write(&format!("d{}/f{n:03}.txt", n % 7), "");
        set_mtime(&path, 10_000 + n);
    }
    let text = fx.ok("glob", json!({"pattern": "*.txt"})).await;
    let header = text.lines().next().unwrap();
    assert_eq!(
        header,
        "523 files match `*.txt` in `.`, newest first; 500 of 523 files shown (narrow `pattern` or `path` to see the rest):"
    );
    let files = listed(&text);
    assert_eq!(files.len(), 500);
    assert_eq!(files[0], "d4/f522.txt");
    assert_eq!(files[499], "d2/f023.txt");
}

#[tokio::test]
async fn a_custom_cap_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..5 {
        std::fs::write(dir.path().join(format!("{n}.md")), "").unwrap();
    }
    let run = gantry_core::Run::builder(gantry_core::Workspace::new(dir.path()).unwrap())
        .tool(gantry_fs::Glob::with_max_results(2))
        .build();
    let result = run.call("glob", json!({"pattern": "*.md"})).await.unwrap();
    assert!(
        result.text_content().contains("2 of 5 files shown"),
        "{}",
        result.text_content()
    );
}

#[tokio::test]
async fn bad_patterns_and_file_paths_are_explained() {
    let fx = Fixture::new();
    fx.write("a.rs", "");
    let err = fx.err("glob", json!({"pattern": "src/[a-"})).await;
    assert!(
        err.starts_with("invalid parameters for `glob`: pattern: invalid glob `src/[a-`"),
        "{err}"
    );
    let err = fx.err("glob", json!({"pattern": ""})).await;
    assert!(err.contains("pattern: expected non-empty string"), "{err}");
    let err = fx
        .err("glob", json!({"pattern": "*", "path": "a.rs"}))
        .await;
    assert!(err.starts_with("`a.rs` is a file, not a folder"), "{err}");
    let err = fx.err("glob", json!({"pattern": "*", "path": "sr"})).await;
    assert_eq!(err, "`sr` does not exist: `.` has no entry `sr`");
}
