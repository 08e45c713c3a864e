//! The JavaScript kernel with a real node: REPL semantics (let/const
//! declared again, top-level await, the completion value echoed), state
//! across calls, errors, the interrupt, the bridge, crash recovery.

mod common;

use common::*;
use serde_json::json;

#[tokio::test]
async fn prints_displays_and_the_result_keep_their_order() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    // Printed text travels on stdout, displays and the result as frames:
    // the two pipes are put back in the order the cell made them.
    let text = cell(
        &run,
        js("console.log('one'); display('two'); console.error('three'); require('child_process').execSync('echo four', {stdio: 'inherit'}); display('five'); console.log('six'); 'seven'"),
    )
    .await;
    let order: Vec<&str> = text.lines().collect();
    assert_eq!(
        &order[..7],
        ["one", "two", "three", "four", "five", "six", "'seven'"],
        "{text}"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn javascript_has_repl_semantics_and_keeps_state() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let first = cell(
        &run,
        js("let x = 1; const name = 'a'; console.log('printed'); x + 41"),
    )
    .await;
    assert!(first.starts_with("printed\n42\n"), "{first}");
    // Declared again in a later cell, as in a REPL.
    cell(&run, js("let x = 2; const name = 'b'")).await;
    assert!(cell(&run, js("`${name}${x}`")).await.starts_with("'b2'"));
    let awaited = cell(
        &run,
        js("const v = await new Promise(r => setTimeout(() => r(5), 10)); v * 2"),
    )
    .await;
    assert!(awaited.starts_with("10"), "{awaited}");
    assert!(
        cell(&run, js("({a: [1, 2]})"))
            .await
            .starts_with("{ a: [ 1, 2 ] }")
    );
    run.shutdown().await;
}

#[tokio::test]
async fn a_javascript_error_fails_the_call_and_keeps_the_state() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    cell(&run, js("var kept = 'yes'")).await;
    let error = failing(
        &run,
        js("function f() { throw new TypeError('bad thing'); }\nf()"),
    )
    .await;
    assert!(error.contains("TypeError: bad thing"), "{error}");
    assert!(
        !error.contains("node:inspector"),
        "no driver frames: {error}"
    );
    let syntax = failing(&run, js("let = = 3")).await;
    assert!(syntax.contains("SyntaxError"), "{syntax}");
    assert!(cell(&run, js("kept")).await.starts_with("'yes'"));
    run.shutdown().await;
}

#[tokio::test]
async fn an_interrupt_stops_a_busy_loop_and_a_pending_await_and_keeps_the_state() {
    let dir = workspace(&[]);
    let run = run_with_settings(dir.path(), json!({"eval": {"idleTimeout": 1}}));
    cell(&run, js("let counter = 7")).await;
    let error = failing(&run, js("while (true) {}")).await;
    assert!(error.contains("Interrupted"), "{error}");
    assert!(error.contains("variables survive"), "{error}");
    let error = failing(&run, js("await new Promise(r => setTimeout(r, 60000))")).await;
    assert!(error.contains("variables survive"), "{error}");
    assert!(cell(&run, js("counter")).await.starts_with('7'));
    run.shutdown().await;
}

#[tokio::test]
async fn javascript_reads_a_file_through_the_bridge_and_concurrent_calls_queue() {
    let dir = workspace(&[("a.txt", "first file\n"), ("b.txt", "second file\n")]);
    let run = run(dir.path());
    let text = cell(
        &run,
        js("const [a, b] = await Promise.all([tool('read_file', {path: 'a.txt'}), tool('read_file', {path: 'b.txt'})]);\n`${a.text.includes('first')} ${b.text.includes('second')} ${String(a).includes('first')}`"),
    )
    .await;
    assert!(text.starts_with("'true true true'"), "{text}");
    let text = cell(
        &run,
        js("try { await tool('read_file', {path: 'nope.txt'}); 'no' } catch (e) { `${e.name}: ${e.message.includes('nope.txt')}` }"),
    )
    .await;
    assert!(text.starts_with("'ToolError: true'"), "{text}");
    run.shutdown().await;
}

#[tokio::test]
async fn a_javascript_crash_is_reported_and_the_next_call_starts_fresh() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    cell(&run, js("let data = [1, 2, 3]")).await;
    let error = failing(&run, js("process.exit(4)")).await;
    assert!(error.contains("exited with code 4"), "{error}");
    assert!(error.contains("variables data"), "{error}");
    assert!(
        cell(&run, js("typeof data"))
            .await
            .starts_with("'undefined'")
    );
    run.shutdown().await;
}

#[tokio::test]
async fn dynamic_import_and_require_work_in_a_cell() {
    let dir = workspace(&[("lib.mjs", "export const answer = 42;\n")]);
    let run = run(dir.path());
    let text = cell(
        &run,
        js("const path = require('path'); const { answer } = await import(path.resolve('lib.mjs')); const os = await import('node:os'); `${answer} ${typeof os.cpus}`"),
    )
    .await;
    assert!(text.starts_with("'42 function'"), "{text}");
    run.shutdown().await;
}

#[tokio::test]
async fn an_error_no_one_catches_is_said_and_the_kernel_stays() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    cell(&run, js("let kept = 'here'")).await;
    let text = cell(
        &run,
        js("setTimeout(() => { throw new Error('from a timer'); }, 0);\nPromise.reject(new Error('nobody waits'));\nawait new Promise(r => setTimeout(r, 50));\n'alive'"),
    )
    .await;
    assert!(text.contains("Uncaught Error: from a timer"), "{text}");
    assert!(
        text.contains("Unhandled rejection: Error: nobody waits"),
        "{text}"
    );
    assert!(text.contains("'alive'"), "{text}");
    assert!(cell(&run, js("kept")).await.starts_with("'here'"));
    run.shutdown().await;
}
