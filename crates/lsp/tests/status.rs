//! Detection and status: what `lsp status` and an unusable language say,
//! for servers with no usable package here (rust-analyzer, gopls, dart)
//! and for a binary that is missing.

mod common;

use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_names_markers_and_missing_binaries() {
    let (_dir, run) = project(
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
            ),
            ("src/main.rs", "fn main() {}\n"),
            ("go/go.mod", "module example.com/x\n"),
            ("go/main.go", "package main\n"),
            ("dart/pubspec.yaml", "name: x\n"),
        ],
        json!({"servers": {
            "gopls": {"command": ["gantry-test-no-gopls"]},
            "dart": {"command": ["gantry-test-no-dart"]}
        }}),
    );
    let status = lsp(&run, json!({"action": "status"})).await;
    assert!(
        status.contains("No language server has started"),
        "{status}"
    );
    assert!(status.contains("- rust-analyzer (rust): "), "{status}");
    assert!(
        status.contains("- gopls (go): MISSING binary `gantry-test-no-gopls`"),
        "{status}"
    );
    assert!(status.contains("roots: go"), "{status}");
    assert!(status.contains("- dart (dart): MISSING binary"), "{status}");
    assert!(status.contains("roots: dart"), "{status}");

    let go = lsp(
        &run,
        json!({"action": "hover", "file": "go/main.go", "line": 1, "symbol": "main"}),
    )
    .await;
    assert!(
        go.starts_with("no server for this language can start here: gopls: binary `gantry-test-no-gopls` not found"),
        "{go}"
    );
    let text = lsp(&run, json!({"action": "symbols", "file": "Cargo.toml"})).await;
    assert!(text.starts_with("no server for this language"), "{text}");

    // rust-analyzer: a real answer where it works; where only the rustup
    // proxy is installed, the reason it did not start.
    let rust = lsp(&run, json!({"action": "symbols", "file": "src/main.rs"})).await;
    assert!(
        rust.contains("function main")
            || rust.contains("rust-analyzer is down: rust-analyzer did not start"),
        "{rust}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_marker_means_nothing_starts_and_says_so() {
    let (_dir, run) = project(&[("loose.py", "x = 1\n")], json!({}));
    let answer = lsp(
        &run,
        json!({"action": "hover", "file": "loose.py", "line": 1, "symbol": "x"}),
    )
    .await;
    assert!(
        answer.contains("basedpyright: no root marker (pyproject.toml"),
        "{answer}"
    );
    run.shutdown().await;
}
