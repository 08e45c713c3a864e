//! The tool bridge: a cell's `tool()` goes through the run's pipeline
//! under the calling surface (approval mode, confirmation, tier cap), its
//! errors raise, and the idle budget is paused while a call is in flight.

mod common;

use common::*;
use gantry_core::{ApprovalMode, Surface, Tier};
use serde_json::json;

#[tokio::test]
async fn a_python_cell_reads_a_file_through_the_bridge() {
    let dir = workspace(&[("notes.txt", "alpha\nbeta\n")]);
    let run = run(dir.path());
    let text = cell(
        &run,
        py("content = tool('read_file', {'path': 'notes.txt'})\n'beta' in content, type(content).__name__"),
    )
    .await;
    assert!(text.starts_with("(True, 'ToolOutput')"), "{text}");
    let error = failing(
        &run,
        py("try:\n    tool('read_file', {'path': 'missing.txt'})\nexcept ToolError as e:\n    print('raised:', e)\n    raise"),
    )
    .await;
    assert!(error.contains("raised:"), "{error}");
    assert!(error.contains("missing.txt"), "{error}");
    run.shutdown().await;
}

/// The cell that tries a write and says what became of it.
const TRY_WRITE: &str = "try:\n    tool('write_file', {'path': 'out.txt', 'content': 'x'})\n    print('written')\nexcept ToolError as e:\n    print('refused:', e)";

#[tokio::test]
async fn a_bridged_write_asks_the_person_under_approval_default_and_a_no_is_an_error() {
    let dir = workspace(&[]);
    let person = Person::new(&["eval"]);
    let run = run_with(
        dir.path(),
        json!({}),
        Surface::new(Tier::Exec, ApprovalMode::Default),
        Some(person.clone()),
    );
    let text = cell(&run, py(TRY_WRITE)).await;
    assert!(text.contains("refused:"), "{text}");
    let asked = person.asked.lock().unwrap().clone();
    assert_eq!(
        asked.len(),
        2,
        "the cell, then the bridged write: {asked:?}"
    );
    assert!(asked[1].starts_with("write_file"), "{asked:?}");
    assert!(
        !dir.path().join("out.txt").exists(),
        "declined, yet written"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn a_bridged_call_runs_under_the_cells_surface_not_the_runs() {
    let dir = workspace(&[]);
    // The run would write unasked; the cell's caller asks (approval default).
    let run = run_with_settings(dir.path(), json!({}));
    let person = Person::new(&["eval"]);
    let options = gantry_core::CallOptions {
        surface: Some(Surface::new(Tier::Exec, ApprovalMode::Default)),
        human: Some(person.clone()),
        ..Default::default()
    };
    let text = run
        .call_with("eval", py(TRY_WRITE), options)
        .await
        .expect("the cell runs")
        .text_content();
    assert!(text.contains("refused:"), "{text}");
    assert!(
        !dir.path().join("out.txt").exists(),
        "declined, yet written"
    );
    // Under the run's own surface the same cell writes.
    let text = cell(&run, py(TRY_WRITE)).await;
    assert!(text.starts_with("written"), "{text}");
    run.shutdown().await;
}

#[tokio::test]
async fn the_idle_budget_is_paused_during_a_slow_bridged_call() {
    let dir = workspace(&[]);
    let run = run_with_settings(dir.path(), json!({"eval": {"idleTimeout": 1}}));
    let text = cell(
        &run,
        py("out = tool('shell', {'command': 'sleep 2; echo slept'})\n'slept' in out"),
    )
    .await;
    assert!(text.starts_with("True"), "{text}");
    run.shutdown().await;
}

#[tokio::test]
async fn a_cell_makes_at_most_200_bridged_calls() {
    let dir = workspace(&[("a.txt", "a")]);
    let run = run(dir.path());
    let text = cell(
        &run,
        py("done = 0\ntry:\n    for _ in range(201):\n        tool('read_file', {'path': 'a.txt'})\n        done += 1\nexcept ToolError as e:\n    print(done, e)"),
    )
    .await;
    assert!(
        text.starts_with("200 a cell may make at most 200 tool calls"),
        "{text}"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn cancelling_the_cell_cancels_the_bridged_call_in_flight() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    cell(&run, py("kept = 'yes'")).await;
    // Named by its arguments: in its own PID namespace, `$$` means
    // nothing out here.
    let command = "exec sleep 60.2718".to_string();
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = gantry_core::CallOptions {
        cancel: cancel.clone(),
        ..Default::default()
    };
    let code = format!("tool('shell', {{'command': {command:?}}})");
    let call = tokio::spawn({
        let run = run.clone();
        async move { run.call_with("eval", py(&code), options).await }
    });
    // Cancel once the bridged command runs.
    let pid = loop {
        if let Some(pid) = gantry_core::testing::process_with("60.2718") {
            break pid;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    cancel.cancel();
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(10), call)
        .await
        .expect("the cancel ends the call")
        .unwrap();
    assert!(outcome.is_err());
    assert!(
        gantry_core::testing::exited(pid, std::time::Duration::from_secs(5)).await,
        "the bridged command outlived the cancelled cell"
    );
    assert!(cell(&run, py("kept")).await.starts_with("'yes'"));
    run.shutdown().await;
}

/// The pipes process `pid` holds open, by inode (`pipe:[123]`), beyond
/// its stdio.
fn pipes(pid: i32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().parse::<i32>().unwrap() > 2)
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .map(|target| target.display().to_string())
        .filter(|target| target.starts_with("pipe:"))
        .collect()
}

/// The first line of a cell's text as a number (a pid the cell printed).
fn first_number(text: &str) -> i32 {
    text.lines()
        .next()
        .unwrap()
        .trim_matches('\'')
        .parse()
        .unwrap()
}

#[tokio::test]
async fn processes_a_cell_starts_never_get_the_protocol_pipes() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    // Pipes this test process holds too (cargo's jobserver) are inherited
    // by everything; any other pipe beyond a child's stdio came from the
    // kernel (its protocol pipes, or its stdout).
    let ours = pipes(std::process::id() as i32);
    for (language, start_child) in [
        // close_fds=False: the child gets whatever is inheritable.
        (
            "python",
            py("import subprocess\nsubprocess.Popen(['sleep', '30'], close_fds=False).pid"),
        ),
        (
            "javascript",
            js("require('child_process').spawn('sleep', ['30'], {stdio: 'ignore'}).pid"),
        ),
    ] {
        let child = first_number(&cell(&run, start_child).await);
        let leaked: Vec<String> = pipes(child)
            .into_iter()
            .filter(|pipe| !ours.contains(pipe))
            .collect();
        assert!(leaked.is_empty(), "{language}: a child got {leaked:?}");
    }
    run.shutdown().await;
}
