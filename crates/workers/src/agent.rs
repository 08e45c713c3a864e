//! The agent loop a worker runs: ask the model, carry out the function
//! calls it asks for as nested calls through the run's pipeline (lookup,
//! validate, confirm, execute) under the worker's own surface, give the
//! results back as function responses, until it answers without a call or
//! its turns run out.

use gantry_core::text::shorten;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_core::{CallOptions, Caller, Chain, Display, Listing, Part, Run, ToolResult, lock};
use serde_json::{Value, json};

use crate::client::{ChatClient, Reply, ToolCall, Usage};

/// What the loop tells its owner as it goes (the worker's record).
pub trait Observer: Send + Sync {
    /// A model request is about to be sent.
    fn requesting(&self) {}
    /// A tool call finished; `display` is what a person sees of it.
    fn acted(&self, _line: String) {}
    /// A turn's usage.
    fn used(&self, _usage: Usage) {}
}

/// How one run of the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The model answered without a function call: its final text.
    Answered(String),
    /// The turns ran out before it did.
    OutOfTurns(u32),
}

/// One worker's model, tools and bounds.
pub struct Agent {
    /// The model endpoint.
    pub client: ChatClient,
    /// Makes the nested calls, under the worker's surface and cancellation.
    pub caller: Caller,
    /// The function declarations offered to the model.
    pub tools: Vec<Value>,
    /// Model turns per run of the loop.
    pub max_turns: u32,
    /// The run, to stop what the worker left running in the background.
    pub run: Run,
    /// Background jobs its calls started (`is_background`), as the tool
    /// and the handle it returned, stopped when the worker is killed.
    pub background: Mutex<Vec<(String, String)>>,
    /// The worker's id in the run log (`w1`), given by the pool.
    pub worker: String,
}

/// How long stopping one background job may take.
const STOP_BACKGROUND_BOUND: Duration = Duration::from_secs(5);

/// The system prompt every worker starts with.
pub const SYSTEM_PROMPT: &str = "You are a background worker of a coding agent. Carry out the \
    brief you are given in the workspace with the tools offered, then answer with a short report \
    of what you did and anything left undone. Work only on what the brief asks.";

impl Agent {
    /// Runs the loop on `messages` (the conversation so far, ending with a
    /// user turn), appending every turn to it.
    pub async fn run(
        &self,
        messages: &mut Vec<Value>,
        observer: &Arc<dyn Observer>,
    ) -> Result<Ending, String> {
        for turn in 1..=self.max_turns {
            observer.requesting();
            let reply = self.client.complete(messages, &self.tools).await?;
            if let Some(usage) = reply.usage {
                observer.used(usage);
            }
            self.run.log().record(
                "worker.turn",
                json!({
                    "worker": self.worker,
                    "turn": turn,
                    "text": gantry_core::runlog::redact::cut(&reply.content, gantry_core::runlog::redact::TEXT_CAP),
                    "tools": reply.tool_calls.iter().map(|call| call.name.as_str()).collect::<Vec<_>>(),
                }),
            );
            messages.push(reply.message());
            if reply.tool_calls.is_empty() {
                return Ok(Ending::Answered(reply.content));
            }
            self.act(&reply, messages, observer).await;
        }
        Ok(Ending::OutOfTurns(self.max_turns))
    }

    /// Carries out the reply's function calls in order, appending each
    /// function response.
    async fn act(&self, reply: &Reply, messages: &mut Vec<Value>, observer: &Arc<dyn Observer>) {
        for call in &reply.tool_calls {
            let (content, display) = self.call(call).await;
            observer.acted(format!("{}: {}", call.name, first_line(&display)));
            messages.push(json!({"role": "tool", "tool_call_id": call.id, "content": content}));
        }
    }

    /// One function call through the pipeline: the text for the model and
    /// the line for the person.
    async fn call(&self, call: &ToolCall) -> (String, String) {
        if !self.offers(&call.name) {
            let message = format!(
                "error: `{}` is not a tool offered to you; use one of: {}",
                call.name,
                self.names().join(", ")
            );
            return (message.clone(), message);
        }
        let arguments = if call.arguments.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            match serde_json::from_str::<Value>(&call.arguments) {
                Ok(value) => value,
                Err(error) => {
                    let message = format!(
                        "error: the arguments of `{}` are not valid JSON ({error}); send a JSON object",
                        call.name
                    );
                    return (message.clone(), message);
                }
            }
        };
        match self.caller.call(&call.name, arguments).await {
            Ok(result) => {
                if let Some(started) = &result.background {
                    let mut background = lock(&self.background);
                    let job = (call.name.clone(), started.handle.clone());
                    if !background.contains(&job) {
                        background.push(job);
                    }
                }
                (model_text(&result), display_text(&result))
            }
            Err(error) => {
                let message = format!("error: {}", error.message);
                (message.clone(), message)
            }
        }
    }

    /// Stops every background job the worker's calls started (a tool's
    /// `handle` + `kill: true`, SPEC §5), on the run's own surface since
    /// the worker's calls are cancelled by now; what happened, one line
    /// each.
    pub async fn stop_background(&self) -> Vec<String> {
        let jobs = std::mem::take(&mut *lock(&self.background));
        let mut lines = Vec::new();
        for (tool, handle) in jobs {
            let options = CallOptions {
                chain: Some(Chain::default()),
                ..CallOptions::default()
            };
            let stop = self
                .run
                .call_with(&tool, json!({"handle": handle, "kill": true}), options);
            lines.push(
                match tokio::time::timeout(STOP_BACKGROUND_BOUND, stop).await {
                    Ok(Ok(_)) => format!("background job {handle} stopped"),
                    Ok(Err(error)) => {
                        format!("background job {handle} not stopped: {}", error.message)
                    }
                    Err(_) => format!(
                        "background job {handle} not stopped within {} s",
                        STOP_BACKGROUND_BOUND.as_secs()
                    ),
                },
            );
        }
        lines
    }

    fn names(&self) -> Vec<&str> {
        self.tools
            .iter()
            .filter_map(|tool| tool.pointer("/function/name").and_then(Value::as_str))
            .collect()
    }

    fn offers(&self, name: &str) -> bool {
        self.names().contains(&name)
    }
}

/// The function declarations for `listings`, those whose names a model
/// API accepts (`[A-Za-z0-9_-]{1,64}`).
pub fn declarations(listings: &[Listing]) -> Vec<Value> {
    listings
        .iter()
        .filter(|listing| valid_name(&listing.name))
        .map(|listing| {
            json!({
                "type": "function",
                "function": {
                    "name": listing.name,
                    "description": listing.description,
                    "parameters": listing.input_schema,
                }
            })
        })
        .collect()
}

/// Whether model APIs accept `name` as a function name.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A result as the text a function response carries: an image part
/// becomes a one-line description.
fn model_text(result: &ToolResult) -> String {
    result
        .llm_content
        .iter()
        .map(|part| match part {
            Part::Text { text } => text.clone(),
            Part::Image { mime_type, data } => {
                format!("[image: {mime_type}, {} bytes, not shown]", data.len())
            }
            Part::Json { value } => value.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn display_text(result: &ToolResult) -> String {
    match &result.return_display {
        Display::Markdown { markdown } => markdown.clone(),
        Display::FileDiff { path, .. } => format!("changed {path}"),
    }
}

/// The first line of `text`, cut to a readable length.
pub fn first_line(text: &str) -> String {
    shorten(text.lines().next().unwrap_or_default(), 120)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_model_apis_accept_are_offered() {
        assert!(valid_name("read_file"));
        assert!(valid_name("srv__tool-1"));
        assert!(!valid_name(""));
        assert!(!valid_name("a.b"));
        assert!(!valid_name(&"x".repeat(65)));
        assert!(valid_name(&"x".repeat(64)));
    }

    #[test]
    fn images_become_one_line() {
        let result = ToolResult::new(
            vec![
                Part::text("see"),
                Part::Image {
                    mime_type: "image/png".into(),
                    data: vec![0; 10],
                },
            ],
            Display::Markdown {
                markdown: "see".into(),
            },
        );
        assert_eq!(
            model_text(&result),
            "see\n[image: image/png, 10 bytes, not shown]"
        );
    }
}
