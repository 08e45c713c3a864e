//! Nested calls (a tool calling tools on its caller's behalf) and typed
//! per-run resources, through the real pipeline.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::*;

/// Which tool to call, with which arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Relay {
    /// The tool.
    tool: String,
    /// Its arguments.
    args: Option<Value>,
}

/// Calls another tool through its caller handle and returns what it said
/// (or the error, as text), recording the nested calls it saw start and
/// end.
struct Relayer {
    name: &'static str,
    exclusive: bool,
    seen: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Tool for Relayer {
    type Params = Relay;
    fn spec(&self) -> ToolSpec {
        let spec = ToolSpec::new(self.name, "Relay", Tier::Read, "Calls a tool.");
        if self.exclusive {
            spec.exclusive()
        } else {
            spec
        }
    }
    fn describe(&self, params: &Relay) -> String {
        format!("call {}", params.tool)
    }
    async fn execute(&self, params: Relay, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let seen = self.seen.clone();
        let caller = ctx.caller().observe(Arc::new(move |event| {
            seen.lock().unwrap().push(format!("{event:?}"));
        }));
        let args = params.args.unwrap_or(json!({}));
        Ok(match caller.call(&params.tool, args).await {
            Ok(result) => ToolResult::text(format!("ok: {}", result.text_content())),
            Err(error) => ToolResult::text(format!("err {:?}: {}", error.kind, error.message)),
        })
    }
}

/// No parameters.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Nothing {}

/// A write-tier tool counting its runs.
struct Writer(Arc<AtomicUsize>);

#[async_trait]
impl Tool for Writer {
    type Params = Nothing;
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("writer", "Writer", Tier::Write, "Writes.")
    }
    fn describe(&self, _: &Nothing) -> String {
        "write".into()
    }
    async fn execute(&self, _: Nothing, _: ToolContext) -> Result<ToolResult, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ToolResult::text("written"))
    }
}

/// A person reachable only through an input-required round trip.
struct OnlyByRetry;

#[async_trait]
impl Human for OnlyByRetry {
    async fn confirm(&self, _: &str, _: &Confirmation) -> Result<bool, HumanError> {
        Err(HumanError::InputRequired)
    }
    async fn ask(&self, _: &Question) -> Result<Answer, HumanError> {
        Err(HumanError::InputRequired)
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    run: Run,
    writes: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<String>>>,
}

fn fixture(surface: Surface, human: Option<Arc<dyn Human>>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let writes = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut builder = Run::builder(Workspace::new(dir.path()).unwrap())
        .surface(surface)
        .tool(Writer(writes.clone()))
        .tool(Relayer {
            name: "relay",
            exclusive: false,
            seen: seen.clone(),
        })
        .tool(Relayer {
            name: "kernel",
            exclusive: true,
            seen: seen.clone(),
        });
    if let Some(human) = human {
        builder = builder.human(human);
    }
    Fixture {
        _dir: dir,
        run: builder.build(),
        writes,
        seen,
    }
}

async fn relay(run: &Run, relayer: &str, tool: &str, options: CallOptions) -> String {
    run.call_with(relayer, json!({"tool": tool}), options)
        .await
        .unwrap()
        .text_content()
}

#[tokio::test]
async fn a_nested_call_runs_under_the_callers_surface_and_is_observed() {
    let fx = fixture(Surface::new(Tier::Exec, ApprovalMode::Yolo), None);
    let text = relay(&fx.run, "relay", "writer", CallOptions::default()).await;
    assert_eq!(text, "ok: written");
    assert_eq!(fx.writes.load(Ordering::SeqCst), 1);
    assert_eq!(
        *fx.seen.lock().unwrap(),
        ["Started(\"writer\")", "Ended(\"writer\")"]
    );

    // The outer call was made under a read cap: the nested write is above it.
    let read_only = CallOptions {
        surface: Some(Surface::new(Tier::Read, ApprovalMode::Yolo)),
        ..CallOptions::default()
    };
    let text = relay(&fx.run, "relay", "writer", read_only).await;
    assert!(text.starts_with("err AboveCap"), "{text}");
    assert_eq!(fx.writes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_caller_can_narrow_but_never_widen() {
    let fx = fixture(Surface::new(Tier::Read, ApprovalMode::Yolo), None);
    let ctx_surface = Surface::new(Tier::Read, ApprovalMode::Yolo);
    let widened = ctx_surface.within(Surface::new(Tier::Exec, ApprovalMode::Yolo));
    assert_eq!(widened.cap, Tier::Read);
    let stricter = Surface::new(Tier::Exec, ApprovalMode::Yolo)
        .within(Surface::new(Tier::Exec, ApprovalMode::Default));
    assert_eq!(stricter.approval, ApprovalMode::Default);
    let plan = Surface::new(Tier::Exec, ApprovalMode::Default)
        .within(Surface::new(Tier::Exec, ApprovalMode::Plan));
    assert_eq!((plan.cap, plan.approval), (Tier::Read, ApprovalMode::Plan));
    // An explicit wider surface asked of the run is narrowed to it.
    let asked = CallOptions {
        surface: Some(Surface::new(Tier::Exec, ApprovalMode::Yolo)),
        ..CallOptions::default()
    };
    let error = fx
        .run
        .call_with("writer", json!({}), asked)
        .await
        .unwrap_err();
    assert_eq!(error.kind, CallErrorKind::AboveCap);
}

#[tokio::test]
async fn a_nested_confirmation_that_needs_a_retry_fails_closed() {
    let fx = fixture(
        Surface::new(Tier::Exec, ApprovalMode::Default),
        Some(Arc::new(OnlyByRetry)),
    );
    // Called directly, the write suspends for the person...
    let direct = fx.run.call("writer", json!({})).await.unwrap_err();
    assert_eq!(direct.kind, CallErrorKind::InputRequired);
    // ...but from inside another call it cannot: refused, and the outer
    // call does not become input-required.
    let text = relay(&fx.run, "relay", "writer", CallOptions::default()).await;
    assert!(text.starts_with("err Refused"), "{text}");
    assert!(text.contains("call `writer` directly"), "{text}");
    assert_eq!(fx.writes.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn re_entering_an_exclusive_tool_fails_at_once() {
    let fx = fixture(Surface::new(Tier::Exec, ApprovalMode::Yolo), None);
    let call = fx.run.call(
        "kernel",
        json!({"tool": "kernel", "args": {"tool": "writer"}}),
    );
    let text = tokio::time::timeout(std::time::Duration::from_secs(5), call)
        .await
        .expect("re-entry waited for itself")
        .unwrap()
        .text_content();
    assert!(text.starts_with("err Refused"), "{text}");
    assert!(text.contains("would wait for itself"), "{text}");
    // Through another tool in between, too.
    let deep = fx
        .run
        .call(
            "kernel",
            json!({"tool": "relay", "args": {"tool": "kernel", "args": {"tool": "writer"}}}),
        )
        .await
        .unwrap()
        .text_content();
    assert!(deep.contains("would wait for itself"), "{deep}");
}

/// A resource that counts how often it was started.
#[derive(Debug)]
struct Counted(usize);

#[async_trait]
impl Resource for Counted {
    fn name(&self) -> String {
        format!("counted {}", self.0)
    }
    async fn shutdown(&self) {}
    fn kill_now(&self) {}
}

#[tokio::test]
async fn one_per_run_resources_start_once_and_again_after_release() {
    let fx = fixture(Surface::default(), None);
    let starts = Arc::new(AtomicUsize::new(0));
    let start = || {
        let starts = starts.clone();
        async move {
            tokio::task::yield_now().await;
            let n = starts.fetch_add(1, Ordering::SeqCst) + 1;
            Ok::<_, String>(Arc::new(Counted(n)))
        }
    };
    let (a, b) = tokio::join!(
        fx.run.resource_or_start("python", start),
        fx.run.resource_or_start("python", start)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(starts.load(Ordering::SeqCst), 1);
    let js = fx.run.resource_or_start("javascript", start).await.unwrap();
    assert_eq!(js.0, 2);
    assert_eq!(fx.run.resource_keyed::<Counted>("python").unwrap().0, 1);

    // A failed start leaves nothing; a released one is started afresh.
    let failed = fx
        .run
        .resource_or_start::<Counted, _, _>("ruby", || async { Err("no ruby".to_string()) })
        .await;
    assert_eq!(failed.unwrap_err(), "no ruby");
    assert!(fx.run.resource_keyed::<Counted>("ruby").is_none());
    assert!(fx.run.release(&a));
    let fresh = fx.run.resource_or_start("python", start).await.unwrap();
    assert_eq!(fresh.0, 3);
}

#[tokio::test]
async fn run_notices_reach_the_runs_model_not_a_nested_call() {
    let fx = fixture(Surface::new(Tier::Exec, ApprovalMode::Yolo), None);
    fx.run.notify("worker w1 finished");
    let result = fx
        .run
        .call("relay", json!({"tool": "writer"}))
        .await
        .unwrap();
    // The nested result came back bare; the notice was appended to the
    // relay's own result, as a part of its own.
    assert_eq!(
        result.llm_content,
        [
            Part::text("ok: written"),
            Part::text("[run notice] worker w1 finished")
        ]
    );
    let again = relay(&fx.run, "relay", "writer", CallOptions::default()).await;
    assert!(!again.contains("[run notice]"), "appended once: {again}");
}

#[test]
fn leads_to_is_kept_only_when_wider_than_the_tier() {
    let spec = ToolSpec::new("hand_out", "Hand out", Tier::Read, "Hands out work.");
    assert_eq!(
        spec.clone().leads_to(Tier::Write).leads_to,
        Some(Tier::Write)
    );
    assert_eq!(spec.leads_to(Tier::Read).leads_to, None);
}
