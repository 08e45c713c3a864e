//! The Python kernel with a real interpreter: state across calls, the
//! echo, output order, errors, crashes, interrupts, the idle budget,
//! reset, and the checkout left alone.

mod common;

use common::*;
use serde_json::json;

#[tokio::test]
async fn state_survives_between_cells_and_the_last_expression_is_echoed() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let first = cell(&run, py("x = 41\nprint('before')\nx + 1")).await;
    assert!(first.starts_with("before\n42\n"), "{first}");
    assert!(first.contains("started "), "the start is said: {first}");
    assert_eq!(cell(&run, py("x")).await.trim(), "41");
    // No echo for a statement, nor for a line ending in `;`.
    assert_eq!(cell(&run, py("y = x * 2")).await, "(no output)");
    assert_eq!(cell(&run, py("y;")).await, "(no output)");
    run.shutdown().await;
}

#[tokio::test]
async fn prints_displays_and_the_result_keep_their_order() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let text = cell(
        &run,
        py("print('one')\ndisplay('two')\nimport sys\nprint('three', file=sys.stderr)\nimport os\nos.system('echo four')\n'five'"),
    )
    .await;
    let order: Vec<&str> = text.lines().collect();
    assert_eq!(
        &order[..5],
        ["one", "'two'", "three", "four", "'five'"],
        "{text}"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn top_level_await_works() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let text = cell(
        &run,
        py("import asyncio\nasync def twice(n):\n    await asyncio.sleep(0.01)\n    return n * 2\nawait twice(21)"),
    )
    .await;
    assert_eq!(text.lines().next(), Some("42"), "{text}");
    run.shutdown().await;
}

#[tokio::test]
async fn an_exception_fails_the_call_with_its_traceback_and_keeps_the_state() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    cell(&run, py("kept = 'still here'")).await;
    let error = failing(
        &run,
        py("print('partial')\ndef f():\n    raise ValueError('boom')\nf()"),
    )
    .await;
    assert!(error.contains("partial"), "{error}");
    assert!(error.contains("ValueError: boom"), "{error}");
    assert!(error.contains("line 3, in f"), "the user's frames: {error}");
    assert!(
        !error.contains("_gantry_driver"),
        "no driver frames: {error}"
    );
    let syntax = failing(&run, py("def broken(:\n    pass")).await;
    assert!(syntax.contains("SyntaxError"), "{syntax}");
    assert_eq!(cell(&run, py("kept")).await.trim(), "'still here'");
    run.shutdown().await;
}

#[tokio::test]
async fn the_description_must_be_five_to_ten_words() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    gantry_core::testing::refuses(
        &run,
        "eval",
        [
            (json!({"code": "1", "description": "too short"}), "description: expected 5 to 10 words"),
            (
                json!({"code": "1", "description": "one two three four five six seven eight nine ten eleven"}),
                "got 11",
            ),
            (json!({"code": "  ", "description": "a cell with nothing in it"}), "code:"),
            (json!({"code": "1"}), "description"),
            (
                json!({"code": "1", "description": "a cell in a language unknown", "language": "ruby"}),
                "language",
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn a_crash_is_reported_with_what_was_lost_and_the_next_call_starts_fresh() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    cell(&run, py("import json\nrows = [1, 2, 3]")).await;
    let error = failing(
        &run,
        py("import os\nprint('last words', flush=True)\nos._exit(3)"),
    )
    .await;
    assert!(error.contains("last words"), "{error}");
    assert!(error.contains("exited with code 3"), "{error}");
    assert!(error.contains("variables rows"), "{error}");
    assert!(error.contains("imports json"), "{error}");
    assert!(error.contains("next call starts a fresh kernel"), "{error}");
    let fresh = cell(&run, py("'rows' in globals()")).await;
    assert!(fresh.starts_with("False"), "{fresh}");
    let segfault = failing(&run, py("import ctypes\nctypes.string_at(0)")).await;
    assert!(segfault.contains("SIGSEGV"), "{segfault}");
    assert_eq!(cell(&run, py("1 + 1")).await.lines().next(), Some("2"));
    run.shutdown().await;
}

#[tokio::test]
async fn the_idle_budget_interrupts_and_the_state_survives() {
    let dir = workspace(&[]);
    let run = run_with_settings(dir.path(), json!({"eval": {"idleTimeout": 1}}));
    cell(&run, py("z = 5")).await;
    let error = failing(&run, py("import time\nprint('sleeping')\ntime.sleep(60)")).await;
    assert!(error.contains("sleeping"), "{error}");
    assert!(error.contains("idle budget of 1 s"), "{error}");
    assert!(error.contains("KeyboardInterrupt"), "{error}");
    // The traceback ends in the cell, not in the driver's handler.
    assert!(
        error.contains("line 3, in <module>\n    time.sleep(60)\nKeyboardInterrupt"),
        "{error}"
    );
    assert!(error.contains("variables survive"), "{error}");
    assert_eq!(cell(&run, py("z")).await.trim(), "5");
    run.shutdown().await;
}

#[tokio::test]
async fn a_cell_that_ignores_the_interrupt_is_killed_and_says_what_was_lost() {
    let dir = workspace(&[]);
    let run = run_with_settings(
        dir.path(),
        json!({"eval": {"idleTimeout": 1, "interruptGrace": 0.5}}),
    );
    cell(&run, py("w = 1")).await;
    let error = failing(
        &run,
        py("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)"),
    )
    .await;
    assert!(error.contains("was killed"), "{error}");
    assert!(error.contains("variables w"), "{error}");
    let fresh = cell(&run, py("'w' in globals()")).await;
    assert!(fresh.starts_with("False"), "{fresh}");
    run.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_cell_is_interrupted_and_the_next_one_finds_the_state() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    cell(&run, py("v = 'kept'")).await;
    // The cell swallows the first SIGINT, as a bare `except:` or a
    // finaliser does; the second, halfway through the grace, stops it.
    cancel_once_started(
        &run,
        dir.path(),
        "import time\nf = open('started', 'w')\ntry:\n    f.write('x')\n    f.flush()\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    open('swallowed', 'w').close()\ntime.sleep(60)",
    )
    .await;
    let next = cell(&run, py("v")).await;
    assert_eq!(next.trim(), "'kept'", "{next}");
    assert!(
        dir.path().join("swallowed").exists(),
        "the first SIGINT reached the cell"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_cell_that_will_not_stop_is_killed_and_the_next_call_says_so() {
    let dir = workspace(&[]);
    let run = run_with_settings(dir.path(), json!({"eval": {"interruptGrace": 0.5}}));
    cell(&run, py("w = 1")).await;
    cancel_once_started(
        &run,
        dir.path(),
        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nf = open('started', 'w')\nf.write('x')\nf.flush()\ntime.sleep(60)",
    )
    .await;
    let next = cell(&run, py("'w' in globals()")).await;
    assert!(next.starts_with("False"), "{next}");
    assert!(
        next.contains("the cancelled cell before this call did not stop within 0.5 s of SIGINT, so its Python kernel was killed; lost: variables w"),
        "{next}"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn reset_throws_the_state_away() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let old = kernel_pid(&cell(&run, py(&format!("gone = 1\n{STARTED}"))).await);
    let text = cell(
        &run,
        json!({"code": "'gone' in globals()", "description": "check the state after a reset", "reset": true}),
    )
    .await;
    assert!(text.starts_with("False"), "{text}");
    assert!(
        text.contains("reset: the previous Python kernel was discarded"),
        "{text}"
    );
    assert!(
        gantry_core::testing::exited(old, std::time::Duration::from_secs(5)).await,
        "the discarded kernel {old} still runs"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn no_process_outlives_the_run() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let pid = kernel_pid(&cell(&run, py(STARTED)).await);
    run.shutdown().await;
    assert!(
        gantry_core::testing::exited(pid, std::time::Duration::from_secs(5)).await,
        "the kernel {pid} outlived its run"
    );
}

#[tokio::test]
async fn threads_of_a_cell_print_without_breaking_the_protocol() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let text = cell(
        &run,
        py("import threading\ndef talk(n):\n    for i in range(200):\n        print(f't{n} line {i}')\nthreads = [threading.Thread(target=talk, args=(n,)) for n in range(4)]\nfor t in threads: t.start()\nfor t in threads: t.join()\n'joined'"),
    )
    .await;
    assert_eq!(text.matches(" line ").count(), 800, "{text}");
    assert!(text.contains("'joined'"), "{text}");
    assert_eq!(cell(&run, py("1 + 2")).await.lines().next(), Some("3"));
    run.shutdown().await;
}

#[tokio::test]
async fn a_kernel_that_died_between_cells_is_reported_by_the_next_call() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let pid = kernel_pid(
        &cell(
            &run,
            py(&format!(
                "import os, threading\ndoomed = 1\nthreading.Timer(0.2, lambda: os._exit(9)).start()\n{STARTED}"
            )),
        )
        .await,
    );
    assert!(gantry_core::testing::exited(pid, std::time::Duration::from_secs(5)).await);
    let text = cell(&run, py("'doomed' in globals()")).await;
    assert!(text.starts_with("False"), "{text}");
    assert!(
        text.contains("the previous Python kernel exited with code 9 after the last cell; lost: variables doomed"),
        "{text}"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn a_long_cell_reports_progress() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink: gantry_core::ProgressSink = {
        let seen = seen.clone();
        std::sync::Arc::new(move |progress: gantry_core::Progress| {
            seen.lock().unwrap().push(progress.message)
        })
    };
    let options = gantry_core::CallOptions {
        progress: Some(sink),
        ..Default::default()
    };
    run.call_with("eval", py("import time\ntime.sleep(2.5)"), options)
        .await
        .expect("the cell runs");
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|message| message.starts_with("cell running for 2 s")),
        "{seen:?}"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn a_subprocess_printing_a_flood_is_read_while_the_cell_runs() {
    let dir = workspace(&[]);
    let run = run_with_settings(dir.path(), json!({"eval": {"idleTimeout": 30}}));
    // 20 MB through a pipe of 1 MiB at most: the writer finishes only if
    // the host reads while the cell runs, not just at its frames.
    let text = cell(
        &run,
        py("import subprocess\nprint('before')\nsubprocess.run('yes 0123456789 | head -c 20000000', shell=True)\nprint('after')"),
    )
    .await;
    assert!(text.starts_with("before\n0123456789\n"), "{}", &text[..200]);
    assert!(text.contains("bytes of output cut"), "{}", &text[..200]);
    // 20 MB is 1818181 lines and 9 bytes: the last line is cut short.
    assert!(
        text.contains("0123456789\n012345678after\n"),
        "{}",
        &text[text.len() - 300..]
    );
    run.shutdown().await;
}

#[tokio::test]
async fn ansi_codes_are_stripped_from_what_a_cell_prints() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let text = cell(
        &run,
        py("print('\\x1b[1;31mred\\x1b[0m')\nimport os\nos.system(\"printf '\\\\033[32mgreen\\\\033[0m\\\\n'\")"),
    )
    .await;
    assert!(text.starts_with("red\ngreen\n"), "{text:?}");
    run.shutdown().await;
}

#[tokio::test]
async fn a_negative_interrupt_grace_is_a_clear_error() {
    let dir = workspace(&[]);
    let run = run_with_settings(dir.path(), json!({"eval": {"interruptGrace": -1}}));
    let error = failing(&run, py("1")).await;
    assert!(error.contains("eval.interruptGrace"), "{error}");
}

#[tokio::test]
async fn input_raises_eof_and_the_kernel_stays() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    cell(&run, py("kept = 3")).await;
    let error = failing(&run, py("input('name? ')")).await;
    assert!(error.contains("EOFError"), "{error}");
    assert!(cell(&run, py("kept")).await.starts_with('3'));
    run.shutdown().await;
}

/// A cell's last expression: when the kernel process started, in clock
/// ticks after boot, which reads the same inside its PID namespace and
/// out here (its pid does not).
const STARTED: &str = "int(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19])";

/// The kernel's pid out here, from a cell that ended in [`STARTED`].
fn kernel_pid(text: &str) -> i32 {
    let ticks: u64 = text.lines().next().unwrap().trim().parse().unwrap();
    gantry_core::testing::process_started_at(ticks, "python").expect("the kernel runs")
}
