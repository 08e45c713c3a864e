//! What the family's tests share: the peers' paths, a run with the family
//! wired (beside a stand-in built-in tool to clash with), a person who
//! answers, and waits on the run's tool list.

// Each test binary uses its own part of these.
#![allow(dead_code)]
// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_core::{
    Answer, Confirmation, Family, Human, HumanError, Question, Run, Settings, Surface, Tier, Tool,
    ToolContext, ToolError, ToolResult, ToolSpec, Workspace, async_trait,
};
use gantry_discovery::FAMILY;
use serde_json::Value;

pub fn peer(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(name)
        .display()
        .to_string()
}

/// A stand-in for one of Gantry's own tools, to clash with.
pub struct BuiltIn;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct NoParams {}

#[async_trait]
impl Tool for BuiltIn {
    type Params = NoParams;
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("read_file", "Read", Tier::Read, "The built-in.")
    }
    fn describe(&self, _: &NoParams) -> String {
        "read".into()
    }
    async fn execute(&self, _: NoParams, _: ToolContext) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text("the built-in ran"))
    }
}

/// The person behind a test's surface: answers every question with
/// `reply` and records what it was asked.
pub struct Person {
    pub reply: Answer,
    pub asked: Mutex<Vec<String>>,
}

#[async_trait]
impl Human for Person {
    async fn confirm(&self, tool: &str, _: &Confirmation) -> Result<bool, HumanError> {
        self.asked.lock().unwrap().push(format!("confirm {tool}"));
        Ok(false)
    }
    async fn ask(&self, question: &Question) -> Result<Answer, HumanError> {
        self.asked.lock().unwrap().push(question.render());
        Ok(self.reply.clone())
    }
}

/// The run as a front end first lists it: wired, and its servers' starts
/// waited for.
pub async fn run_with(
    root: &Path,
    settings: Value,
    surface: Surface,
    human: Option<Arc<dyn Human>>,
) -> Run {
    let run = wired(root, settings, surface, human).await;
    run.arrived().await;
    run
}

/// The run as soon as it is wired, its servers maybe still starting.
pub async fn wired(
    root: &Path,
    settings: Value,
    surface: Surface,
    human: Option<Arc<dyn Human>>,
) -> Run {
    let mut builder = Run::builder(Workspace::new(root).unwrap())
        .settings(Settings::from_value(settings).unwrap())
        .surface(surface)
        .tool(BuiltIn);
    if let Some(human) = human {
        builder = builder.human(human);
    }
    FAMILY.wire(builder).await.unwrap().build()
}

pub async fn run_of(root: &Path, settings: Value) -> Run {
    run_with(root, settings, Surface::default(), None).await
}

pub fn names(run: &Run) -> Vec<String> {
    run.tools().into_iter().map(|tool| tool.name).collect()
}

pub async fn status(run: &Run) -> String {
    FAMILY.status(run).await.join("\n")
}

/// Every file of the workspace with its content, to show nothing was
/// written there.
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path.clone());
                files.insert(path, Vec::new());
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// Waits (bounded) for the run's tool list to satisfy `test`.
pub async fn tools_until(run: &Run, bound: Duration, test: impl Fn(&[String]) -> bool) -> bool {
    let mut changed = run.tools_changed();
    tokio::time::timeout(bound, async {
        loop {
            if test(&names(run)) {
                return;
            }
            changed.changed().await.unwrap();
        }
    })
    .await
    .is_ok()
}
