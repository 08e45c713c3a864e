//! What every fs tool shares: confinement to the workspace, parameter
//! checking by the pipeline, and the schemas the model reads.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use common::Fixture;
use gantry_core::{CallErrorKind, Tier};
use serde_json::{Value, json};

#[tokio::test]
async fn paths_outside_the_workspace_are_refused_by_every_tool() {
    let fx = Fixture::new();
    fx.write("inside.txt", "ok\n");
    let calls = [
        ("ls", json!({"path": "../"})),
        ("read_file", json!({"path": "../etc/passwd"})),
        ("read_file", json!({"path": "/etc/passwd"})),
        ("glob", json!({"pattern": "*", "path": ".."})),
        ("grep", json!({"pattern": "root", "path": "/etc"})),
    ];
    for (tool, args) in calls {
        let err = fx.call(tool, args.clone()).await.unwrap_err();
        assert_eq!(err.kind, CallErrorKind::Failed, "{tool} {args}");
        assert!(
            err.message.contains("is outside the workspace"),
            "{tool} {args}: {}",
            err.message
        );
    }
    // An absolute path inside is fine.
    let inside = fx.path("inside.txt");
    let text = fx
        .ok("read_file", json!({"path": inside.to_str().unwrap()}))
        .await;
    assert_eq!(text, "     1\tok\n");
}

#[tokio::test]
async fn symlinks_that_escape_are_refused_and_never_listed_by_glob() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), fx.path("out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), fx.path("leak.txt")).unwrap();
    fx.write("real.txt", "real\n");
    std::os::unix::fs::symlink("real.txt", fx.path("alias.txt")).unwrap();

    for (tool, args) in [
        ("ls", json!({"path": "out"})),
        ("read_file", json!({"path": "out/secret.txt"})),
        ("read_file", json!({"path": "leak.txt"})),
        ("glob", json!({"pattern": "*", "path": "out"})),
    ] {
        let err = fx.err(tool, args.clone()).await;
        assert!(
            err.contains("is a symlink that resolves outside the workspace"),
            "{tool} {args}: {err}"
        );
    }
    let text = fx.ok("glob", json!({"pattern": "*.txt"})).await;
    let mut files: Vec<&str> = text.lines().skip(1).collect();
    files.sort();
    assert_eq!(files, ["alias.txt", "real.txt"], "{text}");
}

#[tokio::test]
async fn bad_parameters_are_caught_by_the_pipeline_and_named() {
    let fx = Fixture::new();
    fx.write("a.txt", "a\n");
    let err = fx
        .call("read_file", json!({"path": "a.txt", "offset": "abc"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind, CallErrorKind::InvalidParams);
    assert_eq!(
        err.message,
        r#"invalid parameters for `read_file`: offset: expected integer >= 1, got "abc""#
    );
    let err = fx
        .err("read_file", json!({"path": "a.txt", "limit": 0}))
        .await;
    assert!(
        err.ends_with("limit: expected integer >= 1, got 0"),
        "{err}"
    );
    let err = fx.err("read_file", json!({"file_path": "a.txt"})).await;
    assert!(
        err.contains("path: missing required parameter (expected string)"),
        "{err}"
    );
    assert!(
        err.contains("file_path: unknown parameter (did you mean `path`?)"),
        "{err}"
    );
    let err = fx.err("glob", json!({"path": "."})).await;
    assert!(err.contains("pattern: missing required parameter"), "{err}");
    let err = fx.err("ls", json!({"ignore": "*.log"})).await;
    assert!(
        err.contains(r#"ignore: expected array of string, got "*.log""#),
        "{err}"
    );
    // `null` means "not given".
    let text = fx
        .ok("read_file", json!({"path": "a.txt", "offset": null}))
        .await;
    assert_eq!(text, "     1\ta\n");
}

#[tokio::test]
async fn the_family_is_read_tier_with_documented_parameters() {
    let fx = Fixture::new();
    let tools = fx.run.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["glob", "grep", "ls", "read_file", "read_many_files"]
    );
    let expected: [(&str, &[&str], &[&str]); 5] = [
        ("glob", &["pattern", "path"], &["pattern"]),
        (
            "grep",
            &[
                "pattern",
                "path",
                "include",
                "case_insensitive",
                "literal",
                "context",
                "max_results",
            ],
            &["pattern"],
        ),
        ("ls", &["path", "ignore"], &[]),
        ("read_file", &["path", "offset", "limit"], &["path"]),
        (
            "read_many_files",
            &["paths", "include", "exclude"],
            &["paths"],
        ),
    ];
    for (tool, (name, params, required)) in tools.iter().zip(expected) {
        assert_eq!(tool.name, name);
        assert_eq!(tool.tier, Tier::Read);
        assert!(!tool.description.is_empty());
        let schema = &tool.input_schema;
        let props = schema["properties"].as_object().unwrap();
        let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
        let mut want = params.to_vec();
        keys.sort();
        want.sort();
        assert_eq!(keys, want, "{name}");
        for (param, prop) in props {
            let doc = prop["description"].as_str().unwrap_or_default();
            assert!(doc.len() > 40, "{name}.{param} needs a description: {prop}");
        }
        let req: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(req, required, "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
    }
    let ls = &tools[2].input_schema["properties"];
    assert_eq!(ls["path"]["default"], ".");
    let grep = &tools[1].input_schema["properties"];
    assert_eq!(grep["context"]["maximum"], 10);
    assert_eq!(grep["max_results"]["maximum"], 2000);
    let many = &tools[4].input_schema["properties"];
    assert_eq!(many["paths"]["minItems"], 1);
}

#[tokio::test]
async fn describe_says_what_a_call_will_do() {
    let fx = Fixture::new();
    let registry = fx.run.registry();
    let describe = |tool: &str, args: Value| registry.get(tool).unwrap().tool.describe(&args);
    assert_eq!(
        describe(
            "read_file",
            json!({"path": "a.rs", "offset": 10, "limit": 5})
        ),
        "read `a.rs` lines 10-14"
    );
    assert_eq!(describe("ls", json!({})), "list `.`");
    assert_eq!(
        describe("glob", json!({"pattern": "**/*.rs"})),
        "find files matching `**/*.rs` in `.`"
    );
    assert_eq!(
        describe("grep", json!({"pattern": "fn main", "include": "*.rs"})),
        "search for `fn main` in `.` (files matching `*.rs`)"
    );
    assert_eq!(
        describe(
            "read_many_files",
            json!({"paths": ["src/**/*.rs", "README.md"], "exclude": ["**/tests/**"]})
        ),
        "read `src/**/*.rs`, `README.md` except `**/tests/**`"
    );
}

/// grep opens the files of a folder by name in one handle on the folder:
/// while that folder is swapped for a link to outside, as fast as a thread
/// can, no search returns a line of the outside file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_never_reads_outside_while_a_folder_is_swapped_for_a_link() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    for n in 0..20 {
        fx.write(&format!("racedir/f{n}.txt"), "needle inside\n");
        std::fs::write(outside.path().join(format!("f{n}.txt")), "needle OUTSIDE\n").unwrap();
    }
    std::os::unix::fs::symlink(outside.path(), fx.path("racelink")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (a, b) = (fx.path("racedir"), fx.path("racelink"));
        let (stop, swaps) = (stop.clone(), swaps.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &a,
                    rustix::fs::CWD,
                    &b,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let (mut searches, mut found_inside) = (0, 0);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while std::time::Instant::now() < until {
        let text = fx.ok("grep", json!({"pattern": "needle"})).await;
        assert!(!text.contains("OUTSIDE"), "grep read outside:\n{text}");
        searches += 1;
        found_inside += usize::from(text.contains("needle inside"));
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    eprintln!("{searches} searches ({found_inside} found the inside file), {swaps} swaps");
    assert!(swaps > 1000, "the race barely ran: {swaps} swaps");
    assert!(found_inside > 0, "no search found the inside files");
}
