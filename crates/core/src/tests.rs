//! Pipeline tests: a few small tools run through the real pipeline.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::*;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoParams {
    /// Text to echo.
    text: String,
    /// Times to repeat.
    #[schemars(range(min = 1))]
    times: Option<u32>,
}

/// A tool of a chosen tier that echoes, counting executions.
struct Echo {
    name: &'static str,
    tier: Tier,
    runs: Arc<AtomicUsize>,
}

#[async_trait]
impl Tool for Echo {
    type Params = EchoParams;
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(self.name, "Echo", self.tier, "Echoes text.")
    }
    fn validate(&self, params: &EchoParams, _: &Run) -> Result<(), String> {
        if params.text.contains('\0') {
            return Err("text: must not contain NUL".into());
        }
        Ok(())
    }
    fn describe(&self, params: &EchoParams) -> String {
        format!("echo {:?}", params.text)
    }
    async fn execute(&self, params: EchoParams, _: ToolContext) -> Result<ToolResult, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(ToolResult::text(
            params.text.repeat(params.times.unwrap_or(1) as usize),
        ))
    }
}

#[derive(Deserialize, JsonSchema)]
struct NoParams {}

/// Waits until cancelled, or for `hold` when exclusive, tracking overlap.
struct Slow {
    active: Arc<AtomicUsize>,
    max_active: Arc<AtomicUsize>,
    exclusive: bool,
}

#[async_trait]
impl Tool for Slow {
    type Params = NoParams;
    fn spec(&self) -> ToolSpec {
        let spec = ToolSpec::new("slow", "Slow", Tier::Read, "Takes its time.");
        if self.exclusive {
            spec.exclusive()
        } else {
            spec
        }
    }
    fn describe(&self, _: &NoParams) -> String {
        "wait".into()
    }
    async fn execute(&self, _: NoParams, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_active.fetch_max(now, Ordering::SeqCst);
        if self.exclusive {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        } else {
            ctx.cancel.cancelled().await;
        }
        self.active.fetch_sub(1, Ordering::SeqCst);
        Ok(ToolResult::text("done"))
    }
}

/// A bug: panics inside its call, holding its exclusive lock.
struct Panics;

#[async_trait]
impl Tool for Panics {
    type Params = NoParams;
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("panics", "Panics", Tier::Read, "Has a bug.").exclusive()
    }
    fn describe(&self, _: &NoParams) -> String {
        "panic".into()
    }
    async fn execute(&self, _: NoParams, _: ToolContext) -> Result<ToolResult, ToolError> {
        let empty: Vec<u8> = Vec::new();
        let index = empty.len() + 3;
        Ok(ToolResult::text(empty[index].to_string()))
    }
}

/// A person who always answers the same.
struct Always(bool, Arc<AtomicUsize>);

#[async_trait]
impl Human for Always {
    async fn confirm(&self, _: &str, confirmation: &Confirmation) -> Result<bool, HumanError> {
        assert!(confirmation.summary.starts_with("echo"));
        self.1.fetch_add(1, Ordering::SeqCst);
        Ok(self.0)
    }
    async fn ask(&self, _: &Question) -> Result<Answer, HumanError> {
        Ok(Answer::Skipped)
    }
}

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    (dir, ws)
}

fn echo(name: &'static str, tier: Tier, runs: &Arc<AtomicUsize>) -> Echo {
    Echo {
        name,
        tier,
        runs: runs.clone(),
    }
}

fn three_tier_run(
    surface: Surface,
    human: Option<Arc<dyn Human>>,
) -> (tempfile::TempDir, Run, Arc<AtomicUsize>) {
    let (dir, ws) = workspace();
    let runs = Arc::new(AtomicUsize::new(0));
    let mut builder = Run::builder(ws)
        .surface(surface)
        .tool(echo("look", Tier::Read, &runs))
        .tool(echo("change", Tier::Write, &runs))
        .tool(echo("launch", Tier::Exec, &runs));
    if let Some(human) = human {
        builder = builder.human(human);
    }
    (dir, builder.build(), runs)
}

#[tokio::test]
async fn tier_cap_hides_and_refuses_by_name() {
    let (_dir, run, runs) = three_tier_run(Surface::new(Tier::Read, ApprovalMode::Client), None);
    let names: Vec<_> = run.tools().into_iter().map(|l| l.name).collect();
    assert_eq!(names, ["look"]);
    let err = run.call("change", json!({"text": "x"})).await.unwrap_err();
    assert_eq!(err.kind, CallErrorKind::AboveCap);
    assert!(
        err.message
            .contains("is a write tool and this surface is limited to read tools"),
        "{}",
        err.message
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let (_dir, run, _) = three_tier_run(Surface::new(Tier::Exec, ApprovalMode::Plan), None);
    assert_eq!(run.tools().len(), 1, "plan mode caps at read");
    let err = run.call("launch", json!({"text": "x"})).await.unwrap_err();
    assert!(err.message.contains("(plan mode)"));
}

#[tokio::test]
async fn validation_names_the_parameter_and_never_executes() {
    let (_dir, run, runs) = three_tier_run(Surface::default(), None);
    let err = run
        .call("look", json!({"text": "a", "times": "abc"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind, CallErrorKind::InvalidParams);
    assert_eq!(
        err.message,
        r#"invalid parameters for `look`: times: expected integer >= 1, got "abc""#
    );
    let err = run.call("look", json!({"text": "a\0"})).await.unwrap_err();
    assert!(err.message.ends_with("text: must not contain NUL"));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let ok = run
        .call("look", json!({"text": "ab", "times": 2}))
        .await
        .unwrap();
    assert_eq!(ok.text_content(), "abab");
}

#[tokio::test]
async fn unknown_tools_get_a_suggestion_and_withheld_tools_a_reason() {
    let (_dir, ws) = workspace();
    let runs = Arc::new(AtomicUsize::new(0));
    let run = Run::builder(ws)
        .tool(echo("read_file", Tier::Read, &runs))
        .withhold(
            "ask_user",
            "no person is wired (the client did not declare elicitation)",
        )
        .build();
    let err = run.call("readfile", json!({})).await.unwrap_err();
    assert_eq!(err.kind, CallErrorKind::UnknownTool);
    assert!(
        err.message.contains("Did you mean `read_file`?"),
        "{}",
        err.message
    );
    let err = run.call("ask_user", json!({})).await.unwrap_err();
    assert_eq!(err.kind, CallErrorKind::Unavailable);
    assert!(err.message.contains("did not declare elicitation"));
}

#[tokio::test]
async fn approval_modes_confirm_or_fail_closed() {
    // default: write confirmed by the person.
    let asked = Arc::new(AtomicUsize::new(0));
    let yes: Arc<dyn Human> = Arc::new(Always(true, asked.clone()));
    let (_dir, run, runs) =
        three_tier_run(Surface::new(Tier::Exec, ApprovalMode::Default), Some(yes));
    run.call("look", json!({"text": "r"})).await.unwrap();
    assert_eq!(
        asked.load(Ordering::SeqCst),
        0,
        "read tools are never confirmed"
    );
    run.call("change", json!({"text": "w"})).await.unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // default with a refusing person: not executed.
    let no: Arc<dyn Human> = Arc::new(Always(false, asked.clone()));
    let (_dir, run, runs) =
        three_tier_run(Surface::new(Tier::Exec, ApprovalMode::Default), Some(no));
    let err = run.call("launch", json!({"text": "x"})).await.unwrap_err();
    assert_eq!(err.kind, CallErrorKind::Refused);
    assert!(err.message.contains("declined"));
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // default with nobody wired: fail closed.
    let (_dir, run, runs) = three_tier_run(Surface::new(Tier::Exec, ApprovalMode::Default), None);
    let err = run.call("change", json!({"text": "x"})).await.unwrap_err();
    assert_eq!(err.kind, CallErrorKind::Refused);
    assert!(
        err.message.contains("no person is wired"),
        "{}",
        err.message
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // auto-edit: write runs unasked, exec still needs a person.
    let (_dir, run, runs) = three_tier_run(Surface::new(Tier::Exec, ApprovalMode::AutoEdit), None);
    run.call("change", json!({"text": "x"})).await.unwrap();
    assert!(run.call("launch", json!({"text": "x"})).await.is_err());
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // yolo and client never ask.
    for mode in [ApprovalMode::Yolo, ApprovalMode::Client] {
        let (_dir, run, runs) = three_tier_run(Surface::new(Tier::Exec, mode), None);
        run.call("launch", json!({"text": "x"})).await.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn notices_are_appended_once_to_the_next_result() {
    let (_dir, run, _) = three_tier_run(Surface::default(), None);
    run.notify("rust-analyzer crashed and will restart on next use");
    let first = run.call("look", json!({"text": "a"})).await.unwrap();
    assert!(
        first
            .text_content()
            .contains("[run notice] rust-analyzer crashed")
    );
    let second = run.call("look", json!({"text": "a"})).await.unwrap();
    assert_eq!(second.text_content(), "a");
    // A watcher holding only the queue reports without holding the run.
    let (_dir2, ws) = workspace();
    let builder = Run::builder(ws).tool(echo("look", Tier::Read, &Arc::new(AtomicUsize::new(0))));
    let queue = builder.notices();
    let other = builder.build();
    queue.push("server exited");
    let text = other
        .call("look", json!({"text": "a"}))
        .await
        .unwrap()
        .text_content();
    assert!(text.ends_with("[run notice] server exited"), "{text}");
    // Errors carry them too.
    run.notify("late diagnostics");
    let err = run.call("look", json!({})).await.unwrap_err();
    assert!(err.message.contains("[run notice] late diagnostics"));
}

#[tokio::test]
async fn cancellation_reaches_the_tool() {
    let (_dir, ws) = workspace();
    let active = Arc::new(AtomicUsize::new(0));
    let run = Run::builder(ws)
        .tool(Slow {
            active: active.clone(),
            max_active: Arc::new(AtomicUsize::new(0)),
            exclusive: false,
        })
        .build();
    let cancel = CancellationToken::new();
    let call = run.call_with(
        "slow",
        json!({}),
        CallOptions {
            cancel: cancel.clone(),
            ..Default::default()
        },
    );
    let canceller = async {
        while active.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        cancel.cancel();
    };
    let (outcome, ()) = tokio::join!(call, canceller);
    assert_eq!(outcome.unwrap_err().kind, CallErrorKind::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusive_tools_never_overlap() {
    let (_dir, ws) = workspace();
    let max_active = Arc::new(AtomicUsize::new(0));
    let run = Run::builder(ws)
        .tool(Slow {
            active: Arc::new(AtomicUsize::new(0)),
            max_active: max_active.clone(),
            exclusive: true,
        })
        .build();
    let calls = (0..4).map(|_| {
        let run = run.clone();
        tokio::spawn(async move { run.call("slow", json!({})).await })
    });
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert_eq!(max_active.load(Ordering::SeqCst), 1);
}

/// Owns a real child process, as a language server would.
struct ChildProcess {
    child: std::sync::Mutex<Option<tokio::process::Child>>,
    pid: u32,
}

#[async_trait]
impl Resource for ChildProcess {
    fn name(&self) -> String {
        format!("sleeper {}", self.pid)
    }
    async fn shutdown(&self) {
        let child = self.child.lock().unwrap().take();
        if let Some(mut child) = child {
            let _ = child.kill().await;
        }
    }
    fn kill_now(&self) {
        if let Some(child) = self.child.lock().unwrap().as_mut() {
            let _ = child.start_kill();
        }
    }
}

fn spawn_sleeper() -> Arc<ChildProcess> {
    let child = tokio::process::Command::new("sleep")
        .arg("300")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    Arc::new(ChildProcess {
        child: std::sync::Mutex::new(Some(child)),
        pid,
    })
}

fn alive(pid: u32) -> bool {
    // A zombie is dead for our purposes: its state letter is Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.split_whitespace().nth(2).is_none_or(|s| s != "Z"))
        .unwrap_or(false)
}

/// A resource whose graceful end never comes; counts the kills it gets.
struct Stuck(AtomicUsize);

#[async_trait]
impl Resource for Stuck {
    fn name(&self) -> String {
        "stuck".into()
    }
    async fn shutdown(&self) {
        std::future::pending::<()>().await;
    }
    fn kill_now(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_shutdown_cut_short_kills_what_it_had_not_ended() {
    let (_dir, ws) = workspace();
    let sleeper = spawn_sleeper();
    let stuck = Arc::new(Stuck(AtomicUsize::new(0)));
    // Resources end last-wired first: the stuck one holds the sleeper up.
    let run = Run::builder(ws)
        .resource(sleeper.clone())
        .resource(stuck.clone())
        .build();
    let cut = tokio::time::timeout(Duration::from_millis(50), run.shutdown()).await;
    assert!(cut.is_err(), "the stuck resource cannot end gracefully");
    assert_eq!(stuck.0.load(Ordering::SeqCst), 1, "the stuck one is killed");
    assert!(
        crate::testing::exited(sleeper.pid as i32, Duration::from_secs(10)).await,
        "a resource the cut-short shutdown never reached outlived it"
    );
    drop(run);
    assert_eq!(stuck.0.load(Ordering::SeqCst), 1, "killed once, not again");
}

#[tokio::test]
async fn ending_a_run_ends_its_processes() {
    let (_dir, ws) = workspace();
    let early = spawn_sleeper();
    let run = Run::builder(ws).resource(early.clone()).build();
    let late = spawn_sleeper();
    run.own(late.clone());
    assert!(alive(early.pid) && alive(late.pid));
    assert!(run.resource::<ChildProcess>().is_some());
    run.shutdown().await;
    assert!(
        !alive(early.pid),
        "resource from the builder outlived the run"
    );
    assert!(!alive(late.pid), "resource owned later outlived the run");

    // Dropped without shutdown: killed anyway.
    let (_dir, ws) = workspace();
    let dropped = spawn_sleeper();
    let pid = dropped.pid;
    let run = Run::builder(ws).resource(dropped).build();
    drop(run);
    assert!(
        crate::testing::exited(pid as i32, Duration::from_secs(10)).await,
        "a dropped run left its process behind"
    );
}

/// Records when it was ended, in a log shared with the others.
struct Logged(&'static str, Arc<std::sync::Mutex<Vec<String>>>);

#[async_trait]
impl Resource for Logged {
    fn name(&self) -> String {
        self.0.into()
    }

    async fn shutdown(&self) {
        self.1.lock().unwrap().push(format!("shutdown {}", self.0));
    }

    fn kill_now(&self) {
        self.1.lock().unwrap().push(format!("kill {}", self.0));
    }
}

#[tokio::test]
async fn resources_end_last_wired_first_however_the_run_ends() {
    let (_dir, ws) = workspace();
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let wired = |log: &Arc<std::sync::Mutex<Vec<String>>>| {
        Run::builder(ws.clone())
            .resource(Arc::new(Logged("first", log.clone())))
            .resource(Arc::new(Logged("second", log.clone())))
            .build()
    };
    wired(&log).shutdown().await;
    drop(wired(&log));
    assert_eq!(
        *log.lock().unwrap(),
        [
            "shutdown second",
            "shutdown first",
            "kill second",
            "kill first"
        ]
    );
}

#[tokio::test]
async fn a_tool_that_panics_fails_its_call_and_the_run_goes_on() {
    let (_dir, ws) = workspace();
    let runs = Arc::new(AtomicUsize::new(0));
    let run = Run::builder(ws)
        .tool(Panics)
        .tool(echo("look", Tier::Read, &runs))
        .build();
    // Twice: the first panic released the tool's exclusive lock.
    for _ in 0..2 {
        let error = tokio::time::timeout(Duration::from_secs(10), run.call("panics", json!({})))
            .await
            .expect("a panicking call ends")
            .unwrap_err();
        assert_eq!(error.kind, CallErrorKind::Failed);
        assert!(
            error.message.contains("index out of bounds"),
            "{}",
            error.message
        );
        assert!(error.message.contains("a bug"), "{}", error.message);
    }
    let served = run
        .call("look", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(served.text_content(), "still here");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_call_whose_caller_goes_away_ends_in_the_run_log() {
    let (_dir, ws) = workspace();
    let logs = tempfile::tempdir().unwrap();
    let log = crate::runlog::RunLog::open_in(logs.path(), Default::default(), Vec::new());
    let id = log.id().unwrap().to_string();
    let run = Run::builder(ws)
        .log(log.clone(), Default::default())
        .tool(Slow {
            active: Arc::default(),
            max_active: Arc::default(),
            exclusive: false,
        })
        .build();
    // The client disappears: the call's future is dropped, never cancelled.
    let call = run.call("slow", json!({}));
    assert!(
        tokio::time::timeout(Duration::from_millis(50), call)
            .await
            .is_err()
    );
    log.close();
    let path = crate::runlog::read::path_of(logs.path(), &id).unwrap();
    let (records, _) = crate::runlog::read::records_from(&path, 0).unwrap();
    let kinds: Vec<&str> = records.iter().map(crate::runlog::read::kind).collect();
    assert_eq!(kinds, ["run.start", "call.start", "call.end"]);
    assert_eq!(records[2]["outcome"], "abandoned");
    assert_eq!(records[2]["call"], records[1]["call"]);
}
