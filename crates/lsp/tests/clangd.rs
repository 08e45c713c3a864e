//! The same tools against a real clangd (Debian's versioned `clangd-NN`
//! is found on PATH), which negotiates UTF-8 positions.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use gantry_core::testing::{ok, read};
use serde_json::{Value, json};

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

    // compile_flags.txt becomes a database of every source file: the
    // rename waits for clangd's index and then covers the unopened files.
    let renamed = ok(
        &run,
        "lsp_rename",
        json!({"file": "main.c", "line": 4, "symbol": "add", "new_name": "sum"}),
    )
    .await;
    assert!(renamed.contains("renamed `add` to `sum`"), "{renamed}");
    assert!(!renamed.contains("incomplete"), "{renamed}");
    assert!(read(&run, "main.c").contains("int r = sum(1, 2);"));
    assert!(read(&run, "util.c").contains("int sum(int a, int b)"));
    assert!(read(&run, "util.h").contains("int sum(int a, int b);"));
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_database_a_rename_is_refused_unless_asked_to_go_ahead() {
    let Some((_dir, run)) = ops_project(&[], json!({}), MAKEFILE) else {
        return;
    };
    let refused = lsp_rename(
        &run,
        json!({"file": "ops.h", "line": 1, "symbol": "mul", "new_name": "times"}),
    )
    .await;
    assert!(
        refused.starts_with(
            "ERROR: nothing was renamed: clangd has no index of the whole project here"
        ) && refused.contains("allow_incomplete: true"),
        "{refused}"
    );
    assert!(read(&run, "app.c").contains("mul(2, 3)"));
    // Asked to go ahead, it renames what clangd knows, and says the rest
    // may keep the old name.
    lsp(&run, json!({"action": "symbols", "file": "ops.h"})).await;
    let renamed = ok(
        &run,
        "lsp_rename",
        json!({"file": "app.c", "line": 4, "symbol": "mul", "new_name": "times", "allow_incomplete": true}),
    )
    .await;
    assert!(
        renamed.contains("note: renamed with an incomplete index"),
        "{renamed}"
    );
    assert!(read(&run, "app.c").contains("times(2, 3)"), "{renamed}");
    assert!(
        read(&run, "more.c").contains("mul(4, 5)"),
        "not known, not renamed"
    );
    run.shutdown().await;
}

/// Calls `lsp_rename`; the text of the result, or of the error.
async fn lsp_rename(run: &gantry_core::Run, args: Value) -> String {
    match run.call("lsp_rename", args).await {
        Ok(result) => result.text_content(),
        Err(error) => format!("ERROR: {}", error.message),
    }
}

const OPS: &str = "int mul(int a, int b);\n";
const APP: &str = "#include \"ops.h\"\n\nint app(void) {\n    return mul(2, 3);\n}\n";
const MORE: &str = "#include \"ops.h\"\n\nint more(void) {\n    return mul(4, 5);\n}\n";

/// clangd's flags for every file, from which Gantry makes a database.
const FLAGS: (&str, &str) = ("compile_flags.txt", "-std=c11\n-Wall\n");
/// A project clangd serves with no database: only its root marker.
const MAKEFILE: (&str, &str) = ("Makefile", "all:\n");

/// ops.h declares `mul`, which app.c and more.c call; the run never
/// opens them. `extra` adds files; `project_file` is the root marker.
fn ops_project(
    extra: &[(&str, &str)],
    lsp: Value,
    project_file: (&'static str, &'static str),
) -> Option<(tempfile::TempDir, gantry_core::Run)> {
    if !need(&["clangd"]) {
        return None;
    }
    let mut files = vec![
        project_file,
        ("ops.h", OPS),
        ("app.c", APP),
        ("more.c", MORE),
    ];
    files.extend_from_slice(extra);
    Some(project(&files, lsp))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_header_reaches_the_files_that_call_it() {
    let Some((_dir, run)) = ops_project(&[], json!({}), FLAGS) else {
        return;
    };
    // As read_file does, and the edit right after it.
    gantry_lsp::touch(&run, &run.workspace().resolve("ops.h").unwrap());
    let three = "int mul(int a, int b, int c);\n";
    let note = write(&run, "ops.h", three).await;
    assert!(
        note.starts_with("the write succeeded; it introduced these problems:"),
        "{note}"
    );
    for (file, line) in [("app.c", 4), ("more.c", 4)] {
        assert!(
            note.contains(&format!("{file} (uses what the write changed)"))
                && note.contains(&format!("{file}:{line}: error"))
                && note.contains("Too few arguments to function call, expected 3, have 2"),
            "{file}: {note}"
        );
    }
    assert!(!note.contains("no earlier diagnostics"), "{note}");
    // Warm: back, then the same change again.
    let note = write(&run, "ops.h", OPS).await;
    assert!(!note.contains("introduced"), "{note}");
    let note = write(&run, "ops.h", three).await;
    assert!(
        note.contains("app.c:4: error") && note.contains("more.c:4: error"),
        "{note}"
    );
    write(&run, "ops.h", OPS).await;
    // An edit inside a function body asks clangd nothing.
    let app = run.workspace().resolve("app.c").unwrap();
    let server = gantry_lsp::Supervisor::of(&run)
        .unwrap()
        .server_for(&app)
        .await
        .unwrap();
    gantry_lsp::touch(&run, &app);
    write(&run, "app.c", &APP.replace("mul(2, 3)", "mul(2, 4)")).await;
    let before = server.client().transport().requests_sent();
    let note = write(&run, "app.c", &APP.replace("mul(2, 3)", "mul(2, 5)")).await;
    assert!(!note.contains("introduced"), "{note}");
    assert_eq!(before, server.client().transport().requests_sent());
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_dependents_than_the_cap_are_said() {
    let (third, fourth) = (APP.replace("app", "third"), MORE.replace("more", "fourth"));
    let Some((_dir, run)) = ops_project(
        &[("third.c", &third), ("fourth.c", &fourth)],
        json!({"dependentsCap": 2}),
        FLAGS,
    ) else {
        return;
    };
    gantry_lsp::touch(&run, &run.workspace().resolve("ops.h").unwrap());
    let note = write(&run, "ops.h", "int mul(int a, int b, int c);\n").await;
    assert!(
        note.contains(
            "4 files use what the write changed; only the first 2 were checked (the cap is 2"
        ),
        "{note}"
    );
    assert_eq!(
        note.matches("(uses what the write changed)\n").count(),
        2,
        "{note}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn references_say_when_clangd_knows_only_the_open_files() {
    let Some((_dir, run)) = ops_project(&[], json!({}), MAKEFILE) else {
        return;
    };
    let references = lsp(
        &run,
        json!({"action": "references", "file": "ops.h", "line": 1, "symbol": "mul"}),
    )
    .await;
    assert!(
        references.contains("ops.h:1: int mul(int a, int b);"),
        "{references}"
    );
    assert!(
        references.contains(
            "note: this answer may be incomplete: clangd has no index of the whole project here (no compile_commands.json or build/compile_commands.json or compile_flags.txt"
        ),
        "{references}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_compile_commands_the_background_index_covers_the_project() {
    let Some((dir, run)) = ops_project(&[], json!({}), MAKEFILE) else {
        return;
    };
    let root = dir.path().canonicalize().unwrap();
    let commands: Vec<Value> = ["app.c", "more.c"]
        .iter()
        .map(|file| json!({"directory": root, "file": file, "arguments": ["cc", "-std=c11", "-c", file]}))
        .collect();
    std::fs::write(
        root.join("compile_commands.json"),
        serde_json::to_string(&commands).unwrap(),
    )
    .unwrap();
    // Every answer is complete or says why not; once the index is built,
    // complete.
    let mut answers = Vec::new();
    let complete = within(std::time::Duration::from_secs(60), async || {
        let references = lsp(
            &run,
            json!({"action": "references", "file": "ops.h", "line": 1, "symbol": "mul"}),
        )
        .await;
        let whole = references.contains("app.c") && references.contains("more.c");
        let said = references.contains("note: this answer may be incomplete: clangd");
        assert!(whole || said, "{references}");
        answers.push(references);
        whole && !said
    })
    .await;
    assert!(complete, "{answers:#?}");
    // Now a rename goes through without being asked to.
    let renamed = ok(
        &run,
        "lsp_rename",
        json!({"file": "ops.h", "line": 1, "symbol": "mul", "new_name": "times"}),
    )
    .await;
    assert!(renamed.contains("in 3 file(s)"), "{renamed}");
    assert!(read(&run, "more.c").contains("times(4, 5)"));
    run.shutdown().await;
    index_kept_out_of_the_checkout(&root);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_compile_flags_the_background_index_covers_the_project() {
    let Some((dir, run)) = ops_project(&[], json!({}), FLAGS) else {
        return;
    };
    let mut answers = Vec::new();
    let complete = within(std::time::Duration::from_secs(60), async || {
        let references = lsp(
            &run,
            json!({"action": "references", "file": "ops.h", "line": 1, "symbol": "mul"}),
        )
        .await;
        let whole = references.contains("app.c\n  4: return mul(2, 3);")
            && references.contains("more.c\n  4: return mul(4, 5);")
            && !references.contains("incomplete");
        answers.push(references);
        whole
    })
    .await;
    assert!(
        complete,
        "{:#?}",
        &answers[answers.len().saturating_sub(2)..]
    );
    run.shutdown().await;
    index_kept_out_of_the_checkout(&dir.path().canonicalize().unwrap());
}

/// clangd wrote its index, into Gantry's state directory and not into the
/// checkout (where it keeps it beside the project's own database).
fn index_kept_out_of_the_checkout(root: &std::path::Path) {
    let stray: Vec<_> = walk(root)
        .into_iter()
        .filter(|path| path.components().any(|c| c.as_os_str() == ".cache"))
        .collect();
    assert!(stray.is_empty(), "written into the checkout: {stray:?}");
    let kept = gantry_core::state::root_dir("clangd", root).join(".cache/clangd/index");
    assert!(
        walk(&kept)
            .iter()
            .any(|path| path.extension().is_some_and(|e| e == "idx")),
        "no index in {}",
        kept.display()
    );
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                files.push(entry.path());
            }
        }
    }
    files
}
