//! The confirmation flow: what the person sees is the plan that runs, and
//! a file changed while they looked makes the call fail instead of
//! writing something else.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use common::*;
use gantry_core::testing::{fails, ok_result};
use gantry_core::{
    Answer, ApprovalMode, CallErrorKind, Confirmation, Human, HumanError, Question, Surface, Tier,
    async_trait,
};
use serde_json::json;

/// A person who answers `approve`, remembers what they were shown, and,
/// when told to, changes a file on disk while deciding (as an editor would).
struct Scripted {
    approve: bool,
    meddle: Option<(PathBuf, &'static str)>,
    shown: Mutex<Vec<Confirmation>>,
}

impl Scripted {
    fn new(approve: bool, meddle: Option<(PathBuf, &'static str)>) -> Arc<Self> {
        Arc::new(Scripted {
            approve,
            meddle,
            shown: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl Human for Scripted {
    async fn confirm(&self, _tool: &str, confirmation: &Confirmation) -> Result<bool, HumanError> {
        self.shown.lock().unwrap().push(confirmation.clone());
        if let Some((path, content)) = &self.meddle {
            std::fs::write(path, content).unwrap();
        }
        Ok(self.approve)
    }

    async fn ask(&self, _: &Question) -> Result<Answer, HumanError> {
        Ok(Answer::Skipped)
    }
}

fn confirming_run(dir: &tempfile::TempDir, human: Arc<Scripted>) -> gantry_core::Run {
    builder(dir)
        .surface(Surface::new(Tier::Exec, ApprovalMode::Default))
        .human(human)
        .build()
}

#[tokio::test]
async fn the_person_sees_the_diff_and_exactly_that_is_written() {
    let dir = workspace(&[("a.txt", b"old line\n")]);
    let human = Scripted::new(true, None);
    let run = confirming_run(&dir, human.clone());
    ok_result(
        &run,
        "edit",
        json!({"path": "a.txt", "old_string": "old", "new_string": "new"}),
    )
    .await;
    let shown = human.shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].summary, "Edit M a.txt (+1 -1)");
    let details = shown[0].details.as_deref().unwrap();
    assert!(details.contains("-old line\n+new line\n"), "{details}");
    assert_eq!(read_text(&dir, "a.txt"), "new line\n");
}

#[tokio::test]
async fn a_file_changed_during_the_confirmation_fails_the_call_and_writes_nothing() {
    let calls = [
        (
            "edit",
            json!({"path": "a.txt", "old_string": "planned", "new_string": "edited"}),
        ),
        (
            "write_file",
            json!({"path": "a.txt", "content": "overwritten\n"}),
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: a.txt\n-planned against this\n+patched\n*** Add File: b.txt\n+b\n*** End Patch"}),
        ),
    ];
    for (tool, args) in calls {
        let dir = workspace(&[("a.txt", b"planned against this\n")]);
        let path = dir.path().join("a.txt");
        let run = confirming_run(
            &dir,
            Scripted::new(true, Some((path, "changed by the user\n"))),
        );
        let error = fails(&run, tool, args, CallErrorKind::Failed).await;
        assert_eq!(
            error.message,
            "nothing was written: a file changed since the change was planned (a.txt); read it again and redo the change",
            "{tool}"
        );
        assert_eq!(read_text(&dir, "a.txt"), "changed by the user\n", "{tool}");
        assert!(!dir.path().join("b.txt").exists(), "{tool}");
        assert_eq!(snapshot(&dir).len(), 1, "{tool} left something behind");
    }
}

#[tokio::test]
async fn a_declined_change_is_not_written() {
    let dir = workspace(&[("a.txt", b"keep\n")]);
    let run = confirming_run(&dir, Scripted::new(false, None));
    let error = fails(
        &run,
        "write_file",
        json!({"path": "a.txt", "content": "lose\n"}),
        CallErrorKind::Refused,
    )
    .await;
    assert!(error.message.contains("declined"), "{}", error.message);
    assert_eq!(read_text(&dir, "a.txt"), "keep\n");
}
