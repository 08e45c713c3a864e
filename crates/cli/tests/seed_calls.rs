//! Every tool call shown in the product notes, run as written on small
//! projects, through the real binary: the headline `ast_grep` on Dart, the
//! staged `ast_edit` and its `resolve`, and each `lsp` action on a Python
//! project served by basedpyright (installed by scripts/test.sh). The calls
//! and what their results must say live in tests/fixtures/seed-calls.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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
    let calls = spec["calls"].as_array().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut dirs: Vec<&str> = calls.iter().map(|c| c["dir"].as_str().unwrap()).collect();
    dirs.dedup();
    let mut failures = Vec::new();
    for dir in dirs {
        let root = work.path().join(dir);
        copy_dir(&fixtures().join(dir), &root);
        let mine: Vec<&Value> = calls.iter().filter(|c| c["dir"] == dir).collect();
        let mut child = Command::new(env!("CARGO_BIN_EXE_gantry"))
            .args(["session", "--approval", "yolo"])
            .current_dir(&root)
            .env("GANTRY_STATE_DIR", work.path().join("state"))
            .env("GANTRY_HOME", work.path().join("home"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        {
            let mut stdin = child.stdin.take().unwrap();
            for call in &mine {
                writeln!(
                    stdin,
                    "{}",
                    json!({"tool": call["tool"], "args": call["args"]})
                )
                .unwrap();
            }
        }
        let output = child.wait_with_output().unwrap();
        let replies: Vec<Value> = String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(replies.len(), mine.len(), "{dir}: a call got no reply");
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
