//! `lsp`, `lsp_rename` and diagnostics on write against a real
//! basedpyright on small projects.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::time::Duration;

use common::*;
use gantry_core::testing::{ok, read};
use serde_json::json;

const UTIL: &str = r#"def greet(name: str) -> str:
    """Say hello to someone."""
    return "hello " + name


class Base:
    def run(self) -> int:
        raise NotImplementedError


class Impl(Base):
    def run(self) -> int:
        return 1
"#;

const MAIN: &str = r#"from app.util import greet, Impl

naïve = "☕☕"; café = greet(naïve)
message = greet("x")
print(greet(message))
Impl().run()
"#;

fn python_project() -> Option<(tempfile::TempDir, gantry_core::Run)> {
    if !need(&["basedpyright-langserver"]) {
        return None;
    }
    Some(project(
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"demo\"\nversion = \"0\"\n\n[tool.basedpyright]\ntypeCheckingMode = \"standard\"\n",
            ),
            ("app/__init__.py", ""),
            ("app/util.py", UTIL),
            ("main.py", MAIN),
        ],
        json!({}),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_answers_with_paths_lines_and_source() {
    let Some((_dir, run)) = python_project() else {
        return;
    };
    let definition = lsp(
        &run,
        json!({"action": "definition", "file": "main.py", "line": 4, "symbol": "greet"}),
    )
    .await;
    assert!(
        definition.contains("app/util.py:1: def greet(name: str) -> str:"),
        "{definition}"
    );

    // A non-ASCII line: `greet` comes after multi-byte characters, and
    // basedpyright counts UTF-16 units.
    let on_unicode = lsp(
        &run,
        json!({"action": "definition", "file": "main.py", "line": 3, "symbol": "greet"}),
    )
    .await;
    assert!(on_unicode.contains("app/util.py:1:"), "{on_unicode}");
    let naive = lsp(
        &run,
        json!({"action": "references", "file": "main.py", "line": 3, "symbol": "naïve", "occurrence": 2}),
    )
    .await;
    // Two uses on one line are two references, and the count says so.
    assert!(
        naive.contains("(2 references on 1 line in 1 file)")
            && naive.contains("  3: naïve = \"☕☕\"; café = greet(naïve)  (2 on this line)"),
        "{naive}"
    );
    assert!(!naive.contains("ERROR"), "{naive}");

    let references = lsp(
        &run,
        json!({"action": "references", "file": "app/util.py", "line": 1, "symbol": "greet"}),
    )
    .await;
    assert!(references.contains("lines in 2 files)"), "{references}");
    assert!(
        references.contains("main.py\n  1: from app.util import greet, Impl"),
        "{references}"
    );
    assert!(
        references.contains("  5: print(greet(message))"),
        "{references}"
    );

    let hover = lsp(
        &run,
        json!({"action": "hover", "file": "main.py", "line": 5, "symbol": "greet"}),
    )
    .await;
    assert!(hover.contains("def greet(name: str) -> str"), "{hover}");
    assert!(hover.contains("Say hello to someone."), "{hover}");

    let outline = lsp(&run, json!({"action": "symbols", "file": "app/util.py"})).await;
    assert!(outline.contains("1: function greet"), "{outline}");
    assert!(outline.contains("11: class Impl"), "{outline}");
    assert!(outline.contains("  12: method run"), "{outline}");

    let search = lsp(&run, json!({"action": "symbols", "query": "Impl"})).await;
    assert!(search.contains("app/util.py:11: class Impl"), "{search}");

    let type_definition = lsp(
        &run,
        json!({"action": "type_definition", "file": "main.py", "line": 4, "symbol": "message"}),
    )
    .await;
    assert!(type_definition.contains("class str"), "{type_definition}");

    let actions = lsp(
        &run,
        json!({"action": "code_actions", "file": "main.py", "line": 6, "symbol": "run"}),
    )
    .await;
    assert!(
        actions.starts_with("code actions") || actions.starts_with("none found"),
        "{actions}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positions_are_checked_against_the_line() {
    let Some((_dir, run)) = python_project() else {
        return;
    };
    let missing = lsp(
        &run,
        json!({"action": "definition", "file": "main.py", "line": 4}),
    )
    .await;
    assert!(
        missing.contains("symbol: required for definition"),
        "{missing}"
    );
    let elsewhere = lsp(
        &run,
        json!({"action": "hover", "file": "main.py", "line": 1, "symbol": "message"}),
    )
    .await;
    assert!(
        elsewhere.contains(
            "`message` is not on line 1 of main.py. Line 1 is: `from app.util import greet, Impl`"
        ),
        "{elsewhere}"
    );
    assert!(
        elsewhere.contains("It does appear on line 4."),
        "{elsewhere}"
    );
    let not_ident = lsp(
        &run,
        json!({"action": "definition", "file": "main.py", "line": 3, "symbol": "= "}),
    )
    .await;
    assert!(not_ident.contains("not on an identifier"), "{not_ident}");
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_goes_through_the_write_path_across_files() {
    let Some((_dir, run)) = python_project() else {
        return;
    };
    let result = ok(
        &run,
        "lsp_rename",
        json!({"file": "app/util.py", "line": 1, "symbol": "greet", "new_name": "salute"}),
    )
    .await;
    assert!(
        result.contains("renamed `greet` to `salute` in 2 file(s)"),
        "{result}"
    );
    assert!(
        result.contains("M app/util.py") && result.contains("M main.py"),
        "{result}"
    );
    assert!(read(&run, "app/util.py").starts_with("def salute(name: str)"));
    let main = read(&run, "main.py");
    assert!(main.contains("café = salute(naïve)"), "{main}");
    assert!(!main.contains("greet"), "{main}");
    // The servers' view follows: the new name resolves.
    let definition = lsp(
        &run,
        json!({"action": "definition", "file": "main.py", "line": 5, "symbol": "salute"}),
    )
    .await;
    assert!(
        definition.contains("app/util.py:1: def salute"),
        "{definition}"
    );
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnostics_on_write_report_only_what_is_new() {
    let Some((_dir, run)) = python_project() else {
        return;
    };
    let clean = lsp(&run, json!({"action": "diagnostics", "file": "main.py"})).await;
    assert!(clean.starts_with("none found"), "{clean}");
    let util = lsp(
        &run,
        json!({"action": "diagnostics", "file": "app/util.py"}),
    )
    .await;
    assert!(util.starts_with("none found"), "{util}");

    let broken = format!("{MAIN}undefined_thing()\n");
    let note = write(&run, "main.py", &broken).await;
    assert!(
        note.starts_with("the write succeeded; it introduced these problems:"),
        "{note}"
    );
    assert!(note.contains("main.py:7: error"), "{note}");
    assert!(note.contains("undefined_thing"), "{note}");

    // Moved four lines down: the same problem, not reported again.
    let moved = format!("{MAIN}\n\n\n\nundefined_thing()\n");
    let note = write(&run, "main.py", &moved).await;
    assert!(!note.contains("undefined_thing"), "{note}");

    // Fixed, then brought back: reported again.
    let note = write(&run, "main.py", MAIN).await;
    assert!(!note.contains("introduced"), "{note}");
    let note = write(&run, "main.py", &broken).await;
    assert!(note.contains("undefined_thing"), "{note}");
    let note = write(&run, "main.py", MAIN).await;
    assert!(!note.contains("introduced"), "{note}");

    // A changed signature breaks the caller in another open file.
    let changed = UTIL.replace("def greet(name: str)", "def greet(name: str, times: int)");
    let note = write(&run, "app/util.py", &changed).await;
    assert!(note.contains("main.py (another open file)"), "{note}");
    assert!(note.contains("times"), "{note}");

    // A file the run never saw diagnostics for has no baseline.
    let note = write(&run, "app/extra.py", "x: int = 'text'\n").await;
    assert!(
        note.starts_with("problems in this file after the write"),
        "{note}"
    );
    assert!(note.contains("app/extra.py:1: error"), "{note}");
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_changed_behind_the_servers_back_are_resynced() {
    let Some((dir, run)) = python_project() else {
        return;
    };
    let before = lsp(&run, json!({"action": "symbols", "file": "main.py"})).await;
    assert!(!before.contains("fresh_function"), "{before}");
    // As a shell or an editor would: not through Gantry.
    std::fs::write(
        dir.path().join("main.py"),
        format!("{MAIN}\ndef fresh_function() -> int:\n    return 2\n"),
    )
    .unwrap();
    let after = lsp(&run, json!({"action": "symbols", "file": "main.py"})).await;
    assert!(after.contains("function fresh_function"), "{after}");
    // A file that is not open changes too: the server hears of it.
    std::fs::write(
        dir.path().join("app/util.py"),
        UTIL.replace("def greet", "def welcome"),
    )
    .unwrap();
    let hover = lsp(
        &run,
        json!({"action": "hover", "file": "main.py", "line": 8, "symbol": "fresh_function"}),
    )
    .await;
    assert!(hover.contains("fresh_function() -> int"), "{hover}");
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_reported_and_restarted_and_shutdown_leaves_nothing() {
    let Some((_dir, run)) = python_project() else {
        return;
    };
    let hover = lsp(
        &run,
        json!({"action": "hover", "file": "main.py", "line": 5, "symbol": "greet"}),
    )
    .await;
    assert!(hover.contains("def greet"), "{hover}");
    let pids = server_pids(&run).await;
    assert_eq!(pids.len(), 1, "{pids:?}");
    kill(pids[0]);
    let mut seen = String::new();
    let crashed = within(Duration::from_secs(10), async || {
        let status = lsp(&run, json!({"action": "status"})).await;
        seen.push_str(&status);
        status.contains("crashed")
    })
    .await;
    assert!(crashed);
    let again = lsp(
        &run,
        json!({"action": "hover", "file": "main.py", "line": 5, "symbol": "greet"}),
    )
    .await;
    assert!(again.contains("def greet"), "{again}");
    let status = lsp(&run, json!({"action": "status"})).await;
    assert!(status.contains("1 restart(s) after crashes"), "{status}");
    // The crash notice rode on a result once.
    let all = format!("{seen}{again}{status}");
    assert!(
        all.contains(
            "[run notice] the language server basedpyright for . crashed: was killed by signal 9"
        ),
        "{all}"
    );
    let new_pids = server_pids(&run).await;
    assert_eq!(new_pids.len(), 1);
    assert_ne!(new_pids, pids);
    assert!(
        group_alive(pids[0]).is_empty(),
        "the crashed server's helpers were killed"
    );

    run.shutdown().await;
    let gone = within(Duration::from_secs(5), async || {
        group_alive(new_pids[0]).is_empty()
    })
    .await;
    assert!(gone, "still alive: {:?}", group_alive(new_pids[0]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_restarts_and_project_diagnostics_run_the_checker() {
    let Some((_dir, run)) = python_project() else {
        return;
    };
    write(&run, "app/bad.py", "y: int = 'nope'\n").await;
    let reload = lsp(&run, json!({"action": "reload", "file": "main.py"})).await;
    assert!(
        reload.contains("basedpyright for .: restarted (pid"),
        "{reload}"
    );
    let all = lsp(&run, json!({"action": "diagnostics", "file": "*"})).await;
    assert!(all.contains("app/bad.py"), "{all}");
    assert!(all.contains("error"), "{all}");
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_write_after_a_read_reports_only_what_it_introduced() {
    if !need(&["basedpyright-langserver"]) {
        return;
    }
    let old = format!("{MAIN}old_problem()\n");
    let (_dir, run) = project(
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"demo\"\nversion = \"0\"\n",
            ),
            ("app/__init__.py", ""),
            ("app/util.py", UTIL),
            ("main.py", &old),
        ],
        json!({}),
    );
    // As read_file does: the server starts, opens the file and fetches its
    // diagnostics in the background (basedpyright only answers pulls).
    let path = run.workspace().resolve("main.py").unwrap();
    gantry_lsp::touch(&run, &path);
    let diagnostics = gantry_lsp::Diagnostics::of(&run).unwrap();
    assert!(
        within(Duration::from_secs(60), async || diagnostics
            .has_baseline(&path))
        .await,
        "no baseline"
    );
    let note = write(&run, "main.py", &format!("{old}undefined_thing()\n")).await;
    assert!(
        note.starts_with("the write succeeded; it introduced these problems:"),
        "{note}"
    );
    assert!(note.contains("undefined_thing"), "{note}");
    assert!(!note.contains("old_problem"), "{note}");
    run.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_signature_reaches_a_caller_never_opened() {
    let Some((_dir, run)) = python_project() else {
        return;
    };
    let util = run.workspace().resolve("app/util.py").unwrap();
    gantry_lsp::touch(&run, &util);
    let changed = UTIL.replace("def greet(name: str)", "def greet(name: str, times: int)");
    let note = write(&run, "app/util.py", &changed).await;
    assert!(
        note.starts_with("the write succeeded; it introduced these problems:"),
        "{note}"
    );
    assert!(
        note.contains("main.py (uses what the write changed)") && note.contains("times"),
        "{note}"
    );
    assert!(!note.contains("no earlier diagnostics"), "{note}");
    run.shutdown().await;
}
