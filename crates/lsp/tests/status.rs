//! Detection and status: what `lsp status` and an unusable language say,
//! for servers with no usable package here (rust-analyzer, gopls, dart),
//! for a binary that is missing, one that is there but does not run, and
//! one that dies with a backtrace.

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
    // proxy is installed, that it does not run and what it said.
    let rust = lsp(&run, json!({"action": "symbols", "file": "src/main.rs"})).await;
    assert!(
        rust.contains("function main")
            || rust.contains("binary `rust-analyzer` found but not usable: `")
            || rust.contains("binary `rust-analyzer` not found"),
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

/// An executable shell script at `path`.
fn script(path: &std::path::Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_that_does_not_run_is_unusable_and_says_why() {
    let bin = tempfile::tempdir().unwrap();
    let proxy = bin.path().join("gopls");
    // Like rustup's proxy for a component that is not installed.
    script(
        &proxy,
        "echo \"error: Unknown binary 'gopls' in official toolchain\" >&2\nexit 1",
    );
    let (_dir, run) = project(
        &[("go.mod", "module x\n"), ("main.go", "package main\n")],
        json!({"servers": {"gopls": {"command": [proxy], "probe": ["version"]}}}),
    );
    let status = lsp(&run, json!({"action": "status"})).await;
    let said = format!(
        "- gopls (go): UNUSABLE binary: `{} version` exited with code 1: error: Unknown binary 'gopls' in official toolchain;",
        proxy.display()
    );
    assert!(status.contains(&said), "{status}");
    let hover = lsp(
        &run,
        json!({"action": "hover", "file": "main.go", "line": 1, "symbol": "main"}),
    )
    .await;
    assert!(
        hover.contains("gopls: binary `") && hover.contains("` found but not usable: `"),
        "{hover}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_is_quoted_by_its_error_not_its_backtrace() {
    let bin = tempfile::tempdir().unwrap();
    let server = bin.path().join("gopls");
    // Answers its probe, then panics as a server, backtrace and all.
    script(
        &server,
        "[ \"$1\" = version ] && exit 0\n\
         echo \"thread 'main' panicked at src/main.rs:9:5:\" >&2\n\
         echo 'failed to load the workspace: out of cheese' >&2\n\
         echo 'stack backtrace:' >&2\n\
         i=0; while [ $i -lt 200 ]; do echo \"  $i: gopls::frame_$i\" >&2; i=$((i+1)); done\n\
         exit 101",
    );
    let (_dir, run) = project(
        &[("go.mod", "module x\n"), ("main.go", "package main\n")],
        json!({"maxRestarts": 0, "servers": {"gopls": {"command": [server], "probe": ["version"]}}}),
    );
    let hover = lsp(
        &run,
        json!({"action": "hover", "file": "main.go", "line": 1, "symbol": "main"}),
    )
    .await;
    assert!(
        hover.contains(
            "thread 'main' panicked at src/main.rs:9:5: | failed to load the workspace: out of cheese"
        ),
        "{hover}"
    );
    assert!(!hover.contains("frame_"), "{hover}");
    run.shutdown().await;
}
