//! Files changed by the `shell` tool, in the same run, then queried: the
//! language server answers from the new content (SPEC §6: no answer from a
//! stale view), against a real basedpyright.

mod common;

use common::*;
use gantry_core::testing::ok;
use serde_json::json;

const UTIL: &str = "def greet(name: str) -> str:\n    return \"hello \" + name\n";
const MAIN: &str = "from app.util import greet\n\nmessage = greet(\"x\")\nprint(message)\n";

fn python_project_with_shell() -> Option<(tempfile::TempDir, gantry_core::Run)> {
    if !need(&["basedpyright-langserver", "bash"]) {
        return None;
    }
    Some(project_with(
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"demo\"\nversion = \"0\"\n",
            ),
            ("app/__init__.py", ""),
            ("app/util.py", UTIL),
            ("main.py", MAIN),
        ],
        json!({}),
        gantry_shell::register,
    ))
}

async fn shell(run: &gantry_core::Run, command: &str) -> String {
    let result = ok(run, "shell", json!({"command": command})).await;
    assert!(result.contains("exit code 0"), "{result}");
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_by_shell_is_queried_fresh() {
    let Some((_dir, run)) = python_project_with_shell() else {
        return;
    };
    // main.py is open in the server from here on.
    let before = lsp(
        &run,
        json!({"action": "references", "file": "main.py", "line": 3, "symbol": "message"}),
    )
    .await;
    assert!(before.contains("  4: print(message)"), "{before}");

    // An open file rewritten by sed: the next request sees the new names.
    shell(&run, "sed -i 's/message/note/g' main.py").await;
    let renamed = lsp(
        &run,
        json!({"action": "references", "file": "main.py", "line": 3, "symbol": "note"}),
    )
    .await;
    assert!(
        renamed.contains("  3: note = greet(\"x\")") && renamed.contains("  4: print(note)"),
        "{renamed}"
    );

    // Appended to by a heredoc: a new function, with its signature.
    shell(
        &run,
        "cat >> main.py <<'EOF'\n\ndef fresh_function(count: int) -> float:\n    return count / 2\nEOF",
    )
    .await;
    let hover = lsp(
        &run,
        json!({"action": "hover", "file": "main.py", "line": 6, "symbol": "fresh_function"}),
    )
    .await;
    assert!(
        hover.contains("fresh_function(count: int) -> float"),
        "{hover}"
    );

    // A file the server never opened, changed on disk: a caller's view of
    // it follows.
    shell(
        &run,
        "sed -i 's/-> str:/-> int:/; s/return \"hello \" + name/return len(name)/' app/util.py",
    )
    .await;
    let signature = lsp(
        &run,
        json!({"action": "hover", "file": "main.py", "line": 3, "symbol": "greet"}),
    )
    .await;
    assert!(
        signature.contains("def greet(name: str) -> int"),
        "{signature}"
    );

    // A file created by the shell is found by the server.
    shell(
        &run,
        "printf 'def brand_new() -> bytes:\\n    return b\"\"\\n' > app/extra.py",
    )
    .await;
    let created = lsp(&run, json!({"action": "symbols", "file": "app/extra.py"})).await;
    assert!(created.contains("1: function brand_new"), "{created}");
    run.shutdown().await;
}
