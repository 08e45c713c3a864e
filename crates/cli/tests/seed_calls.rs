//! Every tool call shown in the product notes, run as written on small
//! projects, through the real binary: the headline `ast_grep` on Dart, the
//! staged `ast_edit` and its `resolve`, and each `lsp` action on a Python
//! project served by basedpyright (installed by scripts/test.sh; a missing
//! one fails, and `GANTRY_SKIP_LSP=1` skips the lsp calls on request). The
//! calls and what their results must say live in tests/fixtures/seed-calls.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/seed-calls")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn the_seed_documents_calls_work_as_written() {
    let spec: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("calls.json")).unwrap())
            .unwrap();
    let mut calls: Vec<&Value> = spec["calls"].as_array().unwrap().iter().collect();
    // The lsp calls need basedpyright; skipped only when asked to.
    if gantry_core::testing::skip_requested(
        "GANTRY_SKIP_LSP",
        "the lsp calls, which need basedpyright",
    ) {
        calls.retain(|call| call["tool"] != "lsp");
    }
    let work = tempfile::tempdir().unwrap();
    let mut dirs: Vec<&str> = calls.iter().map(|c| c["dir"].as_str().unwrap()).collect();
    dirs.dedup();
    let mut failures = Vec::new();
    for dir in dirs {
        let root = work.path().join(dir);
        copy_dir(&fixtures().join(dir), &root);
        let mine: Vec<&Value> = calls.iter().copied().filter(|c| c["dir"] == dir).collect();
        let requests: Vec<Value> = mine
            .iter()
            .map(|call| json!({"tool": call["tool"], "args": call["args"]}))
            .collect();
        let replies = common::session(&root, work.path(), &requests);
        for (call, reply) in mine.iter().zip(&replies) {
            let seed = call["seed"].as_str().unwrap();
            let text = match reply["ok"].as_bool() {
                Some(true) => reply["result"]["llm_content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                _ => {
                    failures.push(format!("{seed}: failed: {}", reply["error"]));
                    continue;
                }
            };
            for want in call["expect"].as_array().into_iter().flatten() {
                let want = want.as_str().unwrap();
                if !text.contains(want) {
                    failures.push(format!("{seed}: missing {want:?} in:\n{text}"));
                }
            }
            for unwanted in call["reject"].as_array().into_iter().flatten() {
                let unwanted = unwanted.as_str().unwrap();
                if text.contains(unwanted) {
                    failures.push(format!("{seed}: unexpected {unwanted:?} in:\n{text}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The accepted rewrite is on disk.
    let screen = std::fs::read_to_string(work.path().join("dart/lib/screen.dart")).unwrap();
    assert!(
        screen.contains("    controller.dispose();\n  }"),
        "{screen}"
    );
    assert!(screen.contains("void dispose(Controller c) {"), "{screen}");
}
