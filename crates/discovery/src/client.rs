//! Gantry as an MCP client of the servers it bridges (rmcp's client): what
//! it offers them (the workspace root, elicitation passed to the person of
//! the open call), how it lists their tools, and the HTTP transport with
//! the configured headers. [`crate::server`] keeps each one running.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use gantry_core::{Answer, Choice, Human, Question, lock};
use gantry_process::expand_env;
// Roots are deprecated by SEP-2577 (protocol 2026-07-28), yet the servers
// of the 2025 revisions still ask for them, and SPEC §4 offers them.
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation,
};
#[allow(deprecated)]
use rmcp::model::{ListRootsResult, Root};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ErrorData};
use serde_json::{Map, Value};

use crate::config::ServerSettings;
use crate::server::Server;

/// The people behind calls open on a server right now, so an elicitation
/// the server sends during a call can be put to the person of that call.
#[derive(Default)]
pub(crate) struct OpenCalls {
    next: AtomicU64,
    open: Mutex<Vec<(u64, Arc<dyn Human>)>>,
}

impl OpenCalls {
    /// Records a call whose person is `human`, until the guard drops.
    pub(crate) fn enter(self: &Arc<Self>, human: Option<Arc<dyn Human>>) -> OpenCall {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Some(human) = human {
            lock(&self.open).push((id, human));
        }
        OpenCall {
            calls: self.clone(),
            id,
        }
    }

    /// The person of the most recent open call that has one.
    fn person(&self) -> Option<Arc<dyn Human>> {
        lock(&self.open).last().map(|(_, human)| human.clone())
    }
}

/// An open call; dropping it closes it.
pub(crate) struct OpenCall {
    calls: Arc<OpenCalls>,
    id: u64,
}

impl Drop for OpenCall {
    fn drop(&mut self) {
        lock(&self.calls.open).retain(|(id, _)| *id != self.id);
    }
}

/// The tools of `service` that `settings` admit.
pub(crate) async fn list_tools(
    service: &RunningService<RoleClient, Handler>,
    settings: &ServerSettings,
) -> Result<Vec<rmcp::model::Tool>, String> {
    let tools = tokio::time::timeout(settings.request_timeout(), service.list_all_tools())
        .await
        .map_err(|_| "gave no tool list in time".to_string())?
        .map_err(|e| format!("cannot list its tools: {e}"))?;
    Ok(tools
        .into_iter()
        .filter(|tool| settings.admits(&tool.name))
        .collect())
}

/// The streamable HTTP transport of `url`, with the configured headers.
pub(crate) fn http_transport(
    url: &str,
    settings: &ServerSettings,
) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, String> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut headers = std::collections::HashMap::new();
    for (name, value) in &settings.headers {
        let value = expand_env(value).map_err(|e| format!("`headers.{name}`: {e}"))?;
        let name = http::HeaderName::try_from(name.as_str())
            .map_err(|e| format!("`headers.{name}`: {e}"))?;
        let value = http::HeaderValue::try_from(value.to_string_lossy().as_ref())
            .map_err(|e| format!("`headers.{name}`: {e}"))?;
        headers.insert(name, value);
    }
    let client = gantry_http::builder()?
        // rmcp's own default: no idle pool (stalls on delayed ACKs) and
        // no redirect that could replay the headers elsewhere.
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    Ok(rmcp::transport::StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers),
    ))
}

/// Gantry as the client of a bridged server: it offers the workspace root
/// as its one root, hears of tool-list changes, and passes elicitations to
/// the person of the open call (declining when there is none).
pub struct Handler {
    pub(crate) server: Weak<Server>,
    pub(crate) root: PathBuf,
    pub(crate) open_calls: Arc<OpenCalls>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.roots = Some(Default::default());
        capabilities.elicitation = Some(Default::default());
        ClientConfig::new(
            capabilities,
            Implementation::new("gantry", env!("CARGO_PKG_VERSION")),
        )
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let uri = format!("file://{}", self.root.display());
        let name = self
            .root
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| "workspace".into());
        Ok(ListRootsResult::new(vec![Root::new(uri).with_name(name)]))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(server) = self.server.upgrade() {
            // Not here: the service loop would wait for its own answer.
            tokio::spawn(server.refresh());
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let decline = Ok(ElicitResult::new(ElicitationAction::Decline));
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return decline;
        };
        let Some(human) = self.open_calls.person() else {
            return decline;
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        let form = Form::of(&schema);
        let question = form.question(&message);
        match human.ask(&question).await {
            Ok(Answer::Given { chosen, text }) => match form.content(&chosen, text.as_deref()) {
                Some(content) => {
                    Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
                }
                None => decline,
            },
            Ok(Answer::Skipped) => decline,
            // Input required (a client that answers only through a retried
            // call), unreachable, broken: the server sees a decline.
            Err(_) => decline,
        }
    }
}

/// A server's elicitation form as one question a person can answer.
enum Form {
    /// One field: the answer is its value.
    Single { name: String, kind: FieldKind },
    /// Several fields: the answer is a JSON object of them.
    Object(Vec<String>),
}

enum FieldKind {
    Text,
    Number,
    Boolean,
    Choice(Vec<String>),
}

impl Form {
    fn of(schema: &Value) -> Form {
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_else(Map::new);
        if properties.len() != 1 {
            return Form::Object(properties.keys().cloned().collect());
        }
        let (name, field) = properties.into_iter().next().expect("one property");
        let choices = field.get("enum").and_then(Value::as_array).map(|values| {
            values
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        });
        let kind = match (choices, field.get("type").and_then(Value::as_str)) {
            (Some(choices), _) => FieldKind::Choice(choices),
            (None, Some("boolean")) => FieldKind::Boolean,
            (None, Some("number" | "integer")) => FieldKind::Number,
            _ => FieldKind::Text,
        };
        Form::Single { name, kind }
    }

    fn question(&self, message: &str) -> Question {
        let (options, allow_free_text, context) = match self {
            Form::Single {
                kind: FieldKind::Choice(choices),
                ..
            } => (choices.clone(), false, None),
            Form::Single {
                kind: FieldKind::Boolean,
                ..
            } => (vec!["yes".into(), "no".into()], false, None),
            Form::Single { name, .. } => (Vec::new(), true, Some(format!("answer: {name}"))),
            Form::Object(names) => (
                Vec::new(),
                true,
                Some(format!(
                    "answer as a JSON object with the fields {}",
                    names.join(", ")
                )),
            ),
        };
        Question {
            question: message.to_string(),
            context,
            options: options
                .into_iter()
                .map(|label| Choice {
                    label,
                    description: None,
                })
                .collect(),
            allow_free_text,
            multi_select: false,
        }
    }

    /// The form's content from the person's answer, or `None` when the
    /// answer does not fit (the server then sees a decline).
    fn content(&self, chosen: &[String], text: Option<&str>) -> Option<Value> {
        match self {
            Form::Single { name, kind } => {
                let value = match kind {
                    FieldKind::Choice(_) => Value::String(chosen.first()?.clone()),
                    FieldKind::Boolean => Value::Bool(chosen.first()? == "yes"),
                    FieldKind::Number => serde_json::from_str(text?.trim()).ok()?,
                    FieldKind::Text => Value::String(text?.to_string()),
                };
                Some(serde_json::json!({ name: value }))
            }
            Form::Object(_) => serde_json::from_str::<Value>(text?)
                .ok()
                .filter(Value::is_object),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn forms_become_questions_and_answers_become_content() {
        let choice = Form::of(
            &json!({"properties": {"color": {"type": "string", "enum": ["red", "blue"]}}}),
        );
        let question = choice.question("Pick one");
        assert_eq!(question.options.len(), 2);
        assert!(!question.allow_free_text);
        assert_eq!(
            choice.content(&["blue".into()], None),
            Some(json!({"color": "blue"}))
        );

        let flag = Form::of(&json!({"properties": {"ok": {"type": "boolean"}}}));
        assert_eq!(
            flag.content(&["no".into()], None),
            Some(json!({"ok": false}))
        );

        let number = Form::of(&json!({"properties": {"n": {"type": "integer"}}}));
        assert_eq!(number.content(&[], Some(" 42 ")), Some(json!({"n": 42})));
        assert_eq!(number.content(&[], Some("many")), None);

        let object = Form::of(&json!({"properties": {"a": {}, "b": {}}}));
        assert!(object.question("Fill").context.unwrap().contains("a, b"));
        assert_eq!(
            object.content(&[], Some(r#"{"a": 1, "b": 2}"#)),
            Some(json!({"a": 1, "b": 2}))
        );
        assert_eq!(object.content(&[], Some("[1]")), None);
    }
}
