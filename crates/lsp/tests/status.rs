//! Detection and status: what `lsp status` and an unusable language say,
//! for servers with no usable package here (rust-analyzer, gopls, dart),
//! for a binary that is missing, one that is there but does not run, and
//! one that dies with a backtrace.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

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
/// A run on `workspace` whose user settings are `user` (in `home`), with
/// the workspace's settings file, if any, approved as it is (`gantry trust`), so
/// that `trustedFolders` alone decides; and the family's settings warnings.
fn with_user_settings(
    workspace: &std::path::Path,
    home: &std::path::Path,
    user: serde_json::Value,
) -> (gantry_core::Run, String) {
    let user_file = home.join("settings.json");
    std::fs::write(&user_file, user.to_string()).unwrap();
    if workspace.join(".gantry/settings.json").exists() {
        gantry_core::trust::Approvals::beside(&user_file)
            .approve(workspace)
            .unwrap();
    }
    let settings = gantry_core::Settings::load_from(&user_file, workspace).unwrap();
    let warnings = gantry_core::Family::check_settings(&gantry_lsp::LspFamily, &settings);
    let builder = gantry_core::Run::builder(gantry_core::Workspace::new(workspace).unwrap())
        .settings(settings);
    (gantry_lsp::register(builder).build(), warnings.join("\n"))
}

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
    // Not in the temp directory: a server binary where a confined command
    // could write is refused.
    let bin = gantry_core::testing::outside_the_writable_defaults();
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

/// A cloned repository may tune the servers but not choose what they run:
/// its `.gantry/settings.json`'s `command` is ignored (and said so), and a
/// binary it ships (`node_modules/.bin/gopls`) is passed over, never even
/// probed, unless the user's `trustedFolders` lists the folder (and then
/// it is probed read-only, and runs confined).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_workspace_cannot_choose_a_servers_program() {
    let dir = gantry_core::testing::workspace_with(&[
        ("go.mod", "module x\n"),
        ("main.go", "package main\n"),
        (
            ".gantry/settings.json",
            r#"{"lsp": {"maxRestarts": 0, "servers": {
                "gopls": {"command": ["gantry-test-planted"]},
                "gantry-test-added": {"languages": ["go"], "rootMarkers": ["go.mod"]}
            }}}"#,
        ),
    ]);
    let planted = dir.path().join("node_modules/.bin/gopls");
    std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
    // A probe runs read-only: the planted binary says it ran on its output.
    script(&planted, "echo planted-ran >&2; exit 1");
    let home = tempfile::tempdir().unwrap();
    let status_with = |user: serde_json::Value| with_user_settings(dir.path(), home.path(), user);

    let (run, warnings) = status_with(json!({}));
    let status = lsp(&run, json!({"action": "status"})).await;
    assert!(!status.contains("gantry-test-planted"), "{status}");
    assert!(!status.contains("gantry-test-added"), "{status}");
    assert!(
        warnings.contains("`lsp.servers.gantry-test-added`"),
        "{warnings}"
    );
    assert!(
        status.contains("- gopls (go): MISSING binary `gopls` (looked in PATH (the project's own"),
        "{status}"
    );
    assert!(
        warnings.contains("`lsp.servers.gopls.command`") && warnings.contains("trustedFolders"),
        "{warnings}"
    );
    let hover = json!({"action": "hover", "file": "main.go", "line": 1, "symbol": "main"});
    let refused = lsp(&run, hover.clone()).await;
    assert!(refused.contains("not found in PATH"), "{refused}");
    assert!(
        !refused.contains("planted-ran") && !status.contains("planted-ran"),
        "the planted binary ran in an untrusted folder: {status}\n{refused}"
    );
    run.shutdown().await;

    // Trusted, the folder's own settings and binaries count.
    let (run, warnings) = status_with(json!({"trustedFolders": [dir.path()]}));
    let status = lsp(&run, json!({"action": "status"})).await;
    assert!(
        status.contains("- gopls (go): MISSING binary `gantry-test-planted`"),
        "{status}"
    );
    assert!(status.contains("- gantry-test-added (go)"), "{status}");
    assert!(!warnings.contains("ignored"), "{warnings}");
    run.shutdown().await;
    std::fs::write(dir.path().join(".gantry/settings.json"), "{}").unwrap();
    let (run, _) = status_with(json!({"trustedFolders": [dir.path()]}));
    let tried = lsp(&run, hover).await;
    assert!(
        tried.contains("node_modules/.bin/gopls version` exited with code 1: planted-ran"),
        "a trusted folder's own binary is tried: {tried}"
    );
    run.shutdown().await;
}

/// `diagnostics "*"` runs the project's checker, which runs the project's
/// code (a `tsc` from its own `node_modules`, build scripts): in the run's
/// sandbox, as `shell` would, so it writes in the workspace and nowhere
/// else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_checker_runs_in_the_runs_sandbox() {
    let outside = gantry_core::testing::outside_the_writable_defaults();
    let target = outside.path().join("written-by-the-checker");
    // Trusted: an untrusted folder's checker is looked for on PATH only.
    let dir = gantry_core::testing::workspace_with(&[("tsconfig.json", "{}\n")]);
    let home = tempfile::tempdir().unwrap();
    let (run, _) = with_user_settings(
        dir.path(),
        home.path(),
        json!({"trustedFolders": [dir.path()]}),
    );
    if !gantry_process::Sandbox::of(&run).await.confines() {
        assert!(
            gantry_core::testing::skip_requested(
                "GANTRY_SKIP_SANDBOX",
                "the confined-checker test, which needs Landlock"
            ),
            "Landlock does not confine here; set GANTRY_SKIP_SANDBOX=1 to skip"
        );
        return;
    }
    let tsc = dir.path().join("node_modules/.bin/tsc");
    std::fs::create_dir_all(tsc.parent().unwrap()).unwrap();
    script(
        &tsc,
        &format!(
            "echo in > checked.txt && echo wrote inside\n\
             echo out > '{}' || echo refused outside",
            target.display()
        ),
    );
    let said = lsp(&run, json!({"action": "diagnostics", "file": "*"})).await;
    assert!(said.contains("$ tsc --noEmit"), "{said}");
    assert!(
        said.contains("wrote inside") && said.contains("refused outside"),
        "{said}"
    );
    assert!(dir.path().join("checked.txt").exists());
    assert!(!target.exists(), "the checker wrote outside the sandbox");
    run.shutdown().await;
}
