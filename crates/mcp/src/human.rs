//! Reaching the person through the MCP client's elicitation.
//!
//! Two protocol eras of MCP are live at once: up to
//! 2025-11-25 the server sends `elicitation/create` while the call is open
//! ([`PeerHuman`]); from 2026-07-28 server-to-client requests are forbidden
//! and the call returns an input-required result that the client answers by
//! retrying the call ([`RetryHuman`]). Both build the same forms here.

use std::collections::BTreeMap;
use std::sync::Mutex;

use gantry_core::{Answer, Confirmation, Human, HumanError, Question, async_trait};
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Value, json};

/// Key of the confirmation in an input-required round trip.
const CONFIRM_KEY: &str = "gantry_confirm";
/// Key of an `ask_user` question in an input-required round trip.
const ASK_KEY: &str = "gantry_ask";

fn confirm_form(tool: &str, confirmation: &Confirmation) -> ElicitRequestParams {
    let mut message = format!("Allow `{tool}`: {}?", confirmation.summary);
    if let Some(details) = &confirmation.details {
        message.push_str("\n\n");
        message.push_str(details);
    }
    form(
        message,
        json!({
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Run it",
                    "description": "Accept to run the tool; decline to refuse.",
                    "default": true
                }
            }
        }),
    )
}

fn ask_form(question: &Question) -> ElicitRequestParams {
    let mut properties = serde_json::Map::new();
    let labels: Vec<&str> = question.options.iter().map(|o| o.label.as_str()).collect();
    let titled: Vec<Value> = question
        .options
        .iter()
        .enumerate()
        .map(|(index, option)| {
            let title = match &option.description {
                Some(description) => format!("{}. {} - {description}", index + 1, option.label),
                None => format!("{}. {}", index + 1, option.label),
            };
            json!({"const": option.label, "title": title})
        })
        .collect();
    if !labels.is_empty() {
        let choice = if question.multi_select {
            json!({"type": "array", "title": "Choose one or more", "items": {"anyOf": titled}})
        } else {
            json!({"type": "string", "title": "Choose one", "oneOf": titled})
        };
        properties.insert("choice".into(), choice);
    }
    if question.allow_free_text {
        properties.insert(
            "answer".into(),
            json!({"type": "string", "title": "Your answer"}),
        );
    }
    form(
        question.render(),
        json!({"type": "object", "properties": properties}),
    )
}

fn form(message: String, schema: Value) -> ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": schema,
    }))
    .expect("elicitation form built from a fixed shape")
}

fn read_confirm(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result
            .content
            .as_ref()
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool)
            != Some(false)
}

fn read_answer(question: &Question, result: &ElicitResult) -> Answer {
    if result.action != ElicitationAction::Accept {
        return Answer::Skipped;
    }
    let content = result.content.clone().unwrap_or(Value::Null);
    let mut chosen: Vec<String> = match content.get("choice") {
        Some(Value::String(label)) => vec![label.clone()],
        Some(Value::Array(labels)) => labels
            .iter()
            .filter_map(|l| l.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    chosen.retain(|label| question.options.iter().any(|o| &o.label == label));
    let text = content
        .get("answer")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .map(str::to_string);
    if chosen.is_empty() && text.is_none() {
        return Answer::Skipped;
    }
    Answer::Given { chosen, text }
}

/// Elicitation as a server-to-client request (protocol up to 2025-11-25).
pub struct PeerHuman {
    peer: Peer<RoleServer>,
}

impl PeerHuman {
    /// Asks through this client connection.
    pub fn new(peer: Peer<RoleServer>) -> Self {
        PeerHuman { peer }
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, HumanError> {
        self.peer
            .create_elicitation(params)
            .await
            .map_err(|e| HumanError::Failed(e.to_string()))
    }
}

#[async_trait]
impl Human for PeerHuman {
    async fn confirm(&self, tool: &str, confirmation: &Confirmation) -> Result<bool, HumanError> {
        Ok(read_confirm(
            &self.elicit(confirm_form(tool, confirmation)).await?,
        ))
    }

    async fn ask(&self, question: &Question) -> Result<Answer, HumanError> {
        Ok(read_answer(
            question,
            &self.elicit(ask_form(question)).await?,
        ))
    }
}

/// Elicitation by input-required result and retry (protocol 2026-07-28 on).
///
/// On the first pass there is no answer: the question is recorded and the
/// call suspends with [`HumanError::InputRequired`]. The client retries the
/// call with the answers, and the same question finds its answer here.
pub struct RetryHuman {
    responses: BTreeMap<String, Value>,
    pending: Mutex<BTreeMap<String, InputRequest>>,
}

impl RetryHuman {
    /// A port answering from `responses` (empty on the first pass).
    pub fn new(responses: BTreeMap<String, Value>) -> Self {
        RetryHuman {
            responses,
            pending: Mutex::new(BTreeMap::new()),
        }
    }

    /// The questions the call is waiting for, for the input-required result.
    pub fn take_pending(&self) -> BTreeMap<String, InputRequest> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn answer_or_request(
        &self,
        key: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, HumanError> {
        if let Some(value) = self.responses.get(key) {
            return serde_json::from_value(value.clone()).map_err(|e| {
                HumanError::Failed(format!("the client's answer to `{key}` is malformed: {e}"))
            });
        }
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                key.to_string(),
                InputRequest::Elicitation(ElicitRequest::new(params)),
            );
        Err(HumanError::InputRequired)
    }
}

#[async_trait]
impl Human for RetryHuman {
    async fn confirm(&self, tool: &str, confirmation: &Confirmation) -> Result<bool, HumanError> {
        let result = self.answer_or_request(CONFIRM_KEY, confirm_form(tool, confirmation))?;
        Ok(read_confirm(&result))
    }

    async fn ask(&self, question: &Question) -> Result<Answer, HumanError> {
        let result = self.answer_or_request(ASK_KEY, ask_form(question))?;
        Ok(read_answer(question, &result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_core::Choice;

    fn question() -> Question {
        Question {
            question: "Which?".into(),
            context: None,
            options: vec![
                Choice {
                    label: "a".into(),
                    description: None,
                },
                Choice {
                    label: "b".into(),
                    description: Some("bee".into()),
                },
            ],
            allow_free_text: true,
            multi_select: true,
        }
    }

    fn result(action: &str, content: Value) -> ElicitResult {
        serde_json::from_value(json!({"action": action, "content": content})).unwrap()
    }

    #[test]
    fn forms_are_valid_elicitation_schemas() {
        let params = serde_json::to_value(ask_form(&question())).unwrap();
        let schema = &params["requestedSchema"];
        assert_eq!(schema["properties"]["choice"]["type"], "array");
        assert_eq!(
            schema["properties"]["choice"]["items"]["anyOf"][1]["title"],
            "2. b - bee"
        );
        assert_eq!(schema["properties"]["answer"]["type"], "string");
        assert!(params["message"].as_str().unwrap().contains("  1. a"));
    }

    #[test]
    fn answers_are_read_and_declines_are_skips() {
        let q = question();
        assert_eq!(
            read_answer(
                &q,
                &result("accept", json!({"choice": ["b", "zzz"], "answer": "ok"}))
            ),
            Answer::Given {
                chosen: vec!["b".into()],
                text: Some("ok".into())
            }
        );
        assert_eq!(
            read_answer(&q, &result("decline", Value::Null)),
            Answer::Skipped
        );
        assert_eq!(
            read_answer(&q, &result("cancel", Value::Null)),
            Answer::Skipped
        );
        assert!(read_confirm(&result("accept", json!({"approve": true}))));
        assert!(read_confirm(&result("accept", json!({}))));
        assert!(!read_confirm(&result("accept", json!({"approve": false}))));
        assert!(!read_confirm(&result("decline", Value::Null)));
    }

    #[tokio::test]
    async fn retry_port_suspends_then_answers() {
        let first = RetryHuman::new(BTreeMap::new());
        let confirmation = Confirmation {
            summary: "write a.txt".into(),
            details: None,
        };
        assert_eq!(
            first.confirm("write_file", &confirmation).await,
            Err(HumanError::InputRequired)
        );
        let pending = first.take_pending();
        assert!(pending.contains_key(CONFIRM_KEY));
        let answered = RetryHuman::new(BTreeMap::from([(
            CONFIRM_KEY.to_string(),
            json!({"action": "accept", "content": {"approve": true}}),
        )]));
        assert_eq!(
            answered.confirm("write_file", &confirmation).await,
            Ok(true)
        );
    }
}
