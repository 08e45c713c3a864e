//! The same tools against a real clangd (Debian's versioned `clangd-NN`
//! is found on PATH), which negotiates UTF-8 positions.

mod common;

use common::*;
use gantry_core::testing::{ok, read};
use serde_json::json;

const HEADER: &str = "int add(int a, int b);\n";
const UTIL: &str = "#include \"util.h\"\n\nint add(int a, int b) { return a + b; }\n";
const MAIN: &str = "#include \"util.h\"\n\nint main(void) {\n    const char *s = \"ünïcödé ☕\"; int r = add(1, 2);\n    (void)s;\n    return r;\n}\n";

fn c_project() -> Option<(tempfile::TempDir, gantry_core::Run)> {
    if !need(&["clangd"]) {
        return None;
    }
    Some(project(
        &[
            ("compile_flags.txt", "-std=c11\n-Wall\n"),
            ("util.h", HEADER),
            ("util.c", UTIL),
            ("main.c", MAIN),
        ],
        json!({}),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_on_a_non_ascii_line_with_utf8_positions() {
    let Some((_dir, run)) = c_project() else {
        return;
    };
    let definition = lsp(
        &run,
        json!({"action": "definition", "file": "main.c", "line": 4, "symbol": "add"}),
    )
    .await;
    assert!(definition.contains("util."), "{definition}");
    assert!(definition.contains("add(int a, int b)"), "{definition}");
    let hover = lsp(
        &run,
        json!({"action": "hover", "file": "main.c", "line": 4, "symbol": "add"}),
    )
    .await;
    assert!(hover.contains("int add(int a, int b)"), "{hover}");
    let outline = lsp(&run, json!({"action": "symbols", "file": "main.c"})).await;
    assert!(outline.contains("3: function main"), "{outline}");
    let references = lsp(
        &run,
        json!({"action": "references", "file": "main.c", "line": 4, "symbol": "r = add"}),
    )
    .await;
    assert!(references.contains("4: const char *s"), "{references}");
    assert!(references.contains("6: return r;"), "{references}");
    let status = lsp(&run, json!({"action": "status"})).await;
    assert!(status.contains("- clangd for . (/"), "{status}");
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnostics_on_write_and_rename_with_clangd() {
    let Some((_dir, run)) = c_project() else {
        return;
    };
    let clean = lsp(&run, json!({"action": "diagnostics", "file": "main.c"})).await;
    assert!(clean.starts_with("none found"), "{clean}");
    let broken = MAIN.replace("return r;", "return r + mul(2, 3);");
    let note = write(&run, "main.c", &broken).await;
    assert!(
        note.starts_with("the write succeeded; it introduced these problems:"),
        "{note}"
    );
    assert!(
        note.contains("main.c:6: error") && note.contains("mul"),
        "{note}"
    );
    let moved = broken.replace("int main(void) {", "\n\n\n\nint main(void) {");
    let note = write(&run, "main.c", &moved).await;
    assert!(!note.contains("mul"), "{note}");
    let note = write(&run, "main.c", MAIN).await;
    assert!(!note.contains("introduced"), "{note}");
    let note = write(&run, "main.c", &broken).await;
    assert!(note.contains("mul"), "{note}");
    write(&run, "main.c", MAIN).await;

    // Open the other files so clangd's index of open files sees them.
    lsp(&run, json!({"action": "symbols", "file": "util.c"})).await;
    lsp(&run, json!({"action": "symbols", "file": "util.h"})).await;
    let renamed = ok(
        &run,
        "lsp_rename",
        json!({"file": "main.c", "line": 4, "symbol": "add", "new_name": "sum"}),
    )
    .await;
    assert!(renamed.contains("renamed `add` to `sum`"), "{renamed}");
    assert!(read(&run, "main.c").contains("int r = sum(1, 2);"));
    assert!(read(&run, "util.h").contains("int sum(int a, int b);"));
    run.shutdown().await;
}
