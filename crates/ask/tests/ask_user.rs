//! `ask_user` through the real pipeline, with a scripted person.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_core::testing::refuses;
use gantry_core::{
    Answer, CallErrorKind, Confirmation, Human, HumanError, Question, Run, Settings, Workspace,
    async_trait,
};
use serde_json::json;

/// A person whose answers are scripted, recording what they were asked.
struct Scripted {
    answer: Option<Answer>,
    asked: Mutex<Vec<Question>>,
}

#[async_trait]
impl Human for Scripted {
    async fn confirm(&self, _: &str, _: &Confirmation) -> Result<bool, HumanError> {
        Ok(true)
    }
    async fn ask(&self, question: &Question) -> Result<Answer, HumanError> {
        self.asked.lock().unwrap().push(question.clone());
        match &self.answer {
            Some(answer) => Ok(answer.clone()),
            None => std::future::pending().await,
        }
    }
}

fn run_with(
    answer: Option<Answer>,
    settings: serde_json::Value,
) -> (tempfile::TempDir, Run, Arc<Scripted>) {
    let dir = tempfile::tempdir().unwrap();
    let human = Arc::new(Scripted {
        answer,
        asked: Mutex::new(Vec::new()),
    });
    let builder = Run::builder(Workspace::new(dir.path()).unwrap())
        .settings(Settings::from_value(settings).unwrap())
        .human(human.clone());
    (dir, gantry_ask::register(builder).build(), human)
}

#[tokio::test]
async fn chosen_options_come_back_numbered() {
    let answer = Answer::Given {
        chosen: vec!["SQLite".into(), "Postgres".into()],
        text: None,
    };
    let (_dir, run, human) = run_with(Some(answer), json!({}));
    let result = run
        .call(
            "ask_user",
            json!({
                "question": "Which databases?",
                "options": [{"label": "Postgres"}, {"label": "SQLite", "description": "embedded"}],
                "multi_select": true
            }),
        )
        .await
        .unwrap();
    assert_eq!(
        result.text_content(),
        "The user chose options:\n2. SQLite\n1. Postgres"
    );
    let asked = human.asked.lock().unwrap();
    assert!(asked[0].multi_select && !asked[0].allow_free_text);
}

#[tokio::test]
async fn skip_is_success_with_instruction() {
    let (_dir, run, _) = run_with(Some(Answer::Skipped), json!({}));
    let result = run
        .call("ask_user", json!({"question": "Tabs or spaces?"}))
        .await
        .unwrap();
    let text = result.text_content();
    assert!(text.contains("skipped"), "{text}");
    assert!(text.contains("do not ask this question again"), "{text}");
}

#[tokio::test]
async fn timeout_is_error_with_instruction() {
    let (_dir, run, _) = run_with(None, json!({"askUser": {"timeoutSeconds": 1}}));
    tokio::time::pause();
    let err = run
        .call("ask_user", json!({"question": "Anyone?"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind, CallErrorKind::Failed);
    assert!(
        err.message.contains("did not answer within 1 s"),
        "{}",
        err.message
    );
    assert!(err.message.contains("do not ask this question again"));
}

#[tokio::test]
async fn bad_questions_are_refused_before_asking() {
    let (_dir, run, human) = run_with(Some(Answer::Skipped), json!({}));
    let cases = [
        (
            json!({"question": ""}),
            "question: expected non-empty string",
        ),
        (
            json!({"question": "q", "options": [{"label": "a"}, {"label": "a"}]}),
            "appears twice",
        ),
        (
            json!({"question": "q", "allow_free_text": false}),
            "allow_free_text",
        ),
        (
            json!({"question": "q", "multi_select": true}),
            "multi_select: needs options",
        ),
    ];
    refuses(&run, "ask_user", cases).await;
    assert!(human.asked.lock().unwrap().is_empty());
}

#[tokio::test]
async fn without_a_person_it_is_withheld_and_fails_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let run = gantry_ask::register(Run::builder(Workspace::new(dir.path()).unwrap())).build();
    assert!(run.tools().iter().all(|t| t.name != "ask_user"));
    let err = tokio::time::timeout(
        Duration::from_secs(5),
        run.call("ask_user", json!({"question": "q"})),
    )
    .await
    .expect("must not block")
    .unwrap_err();
    assert_eq!(err.kind, CallErrorKind::Unavailable);
    assert!(err.message.contains("no person is wired"));
}
