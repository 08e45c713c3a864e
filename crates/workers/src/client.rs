//! A client of OpenAI-compatible chat completions (llama.cpp server,
//! Ollama, vLLM, OpenRouter, DashScope, ...): one request per model turn,
//! streamed or not, with tool calls and token usage.
//!
//! The wire format is small and stable, so it is written here against
//! `reqwest` rather than through an SDK crate that would bring its own
//! HTTP and TLS stack: the HTTP client is gantry-http's (rustls with *ring*
//! and the platform's roots), with no proxies.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::Client;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::settings::Endpoint;

/// No connection attempt waits longer than this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A model that sends nothing for this long is taken as hung.
const READ_TIMEOUT: Duration = Duration::from_secs(300);
/// No single model turn takes longer than this.
const TURN_TIMEOUT: Duration = Duration::from_secs(1800);
/// How much of an error body is quoted back.
const SNIPPET_BYTES: usize = 500;

/// One function call the model asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCall {
    /// The id the function response must carry.
    pub id: String,
    /// The function (tool) name.
    pub name: String,
    /// The arguments as the model wrote them (JSON text, maybe invalid).
    pub arguments: String,
}

/// Tokens one turn (or a whole worker) used, as the endpoint reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Usage {
    /// Tokens of the request.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    #[serde(default)]
    pub completion_tokens: u64,
}

impl Usage {
    /// Adds another turn's usage.
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }
}

/// One model turn's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reply {
    /// The text the model wrote.
    pub content: String,
    /// The function calls it asked for, in order.
    pub tool_calls: Vec<ToolCall>,
    /// What the turn cost, when the endpoint said.
    pub usage: Option<Usage>,
}

impl Reply {
    /// The assistant message to append to the conversation.
    pub fn message(&self) -> Value {
        let mut message = json!({"role": "assistant", "content": self.content});
        if !self.tool_calls.is_empty() {
            message["tool_calls"] = self
                .tool_calls
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    })
                })
                .collect();
        }
        message
    }
}

/// A chat-completions client bound to one endpoint and model.
#[derive(Clone)]
pub struct ChatClient {
    http: Client,
    url: String,
    model: String,
    api_key: Option<String>,
    stream: bool,
}

impl ChatClient {
    /// A client for `endpoint`, reading its key from the environment now.
    pub fn new(endpoint: &Endpoint) -> Result<Self, String> {
        let api_key = match &endpoint.api_key_env {
            None => None,
            Some(variable) => Some(std::env::var(variable).map_err(|_| {
                format!(
                    "the API key variable `{variable}` (workers' `apiKeyEnv`) is not set in \
                     Gantry's environment"
                )
            })?),
        };
        Ok(ChatClient {
            http: http_client()?,
            url: format!("{}/chat/completions", endpoint.base_url),
            model: endpoint.model.clone(),
            api_key,
            stream: endpoint.stream,
        })
    }

    /// The model id sent with every request.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Asks the model for its next turn of `messages`, offering `tools`
    /// (function declarations).
    pub async fn complete(&self, messages: &[Value], tools: &[Value]) -> Result<Reply, String> {
        let body = Request {
            model: &self.model,
            messages,
            tools: (!tools.is_empty()).then_some(tools),
            stream: self.stream,
            stream_options: self.stream.then_some(StreamOptions {
                include_usage: true,
            }),
        };
        // Serialised from borrows: the conversation grows every turn and
        // is never copied to be sent.
        let body = serde_json::to_vec(&body)
            .map_err(|e| format!("cannot encode the model request: {e}"))?;
        let mut request = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|e| format!("cannot reach the model at {}: {}", self.url, chain(&e)))?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            let snippet: String = body.chars().take(SNIPPET_BYTES).collect();
            return Err(format!(
                "the model endpoint {} answered {status}: {snippet}",
                self.url
            ));
        }
        // A server may answer a streamed request with one JSON body (and
        // the other way round): the content type decides, not what was
        // asked.
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if is_stream {
            read_stream(response).await
        } else {
            let body = response
                .bytes()
                .await
                .map_err(|e| format!("reading the model's answer failed: {}", chain(&e)))?;
            parse_whole(&body)
        }
    }
}

/// One chat-completions request, as sent.
#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    messages: &'a [Value],
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a [Value]>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

/// Asks a streamed answer to end with the turn's usage.
#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The HTTP client every worker shares, built once per process (loading
/// the platform's roots is the expensive part).
fn http_client() -> Result<Client, String> {
    static CLIENT: OnceLock<Result<Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            gantry_http::builder()?
                .no_proxy()
                .connect_timeout(CONNECT_TIMEOUT)
                .read_timeout(READ_TIMEOUT)
                .timeout(TURN_TIMEOUT)
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {}", chain(&e)))
        })
        .clone()
}

/// An error with its causes, where reqwest keeps the useful part.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A non-streamed answer.
fn parse_whole(body: &[u8]) -> Result<Reply, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the model's answer is not JSON: {e}"))?;
    if let Some(error) = value.get("error") {
        return Err(format!("the model endpoint reported an error: {error}"));
    }
    let message = value
        .pointer("/choices/0/message")
        .ok_or_else(|| format!("the model's answer has no choices[0].message: {value}"))?;
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|call| ToolCall {
                    id: text(call, "/id"),
                    name: text(call, "/function/name"),
                    arguments: match call.pointer("/function/arguments") {
                        Some(Value::String(text)) => text.clone(),
                        // Some servers send the arguments as an object.
                        Some(other) => other.to_string(),
                        None => String::new(),
                    },
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Reply {
        content: text(message, "/content"),
        tool_calls,
        usage: usage(&value),
    })
}

/// The string at `pointer`, or empty.
fn text(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn usage(value: &Value) -> Option<Usage> {
    value
        .get("usage")
        .filter(|usage| !usage.is_null())
        .and_then(|usage| Usage::deserialize(usage).ok())
}

/// Reads a server-sent-event stream of chunks into one reply.
async fn read_stream(mut response: reqwest::Response) -> Result<Reply, String> {
    let mut events = SseEvents::default();
    let mut assembler = Assembler::default();
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|e| format!("the model's stream broke off: {}", chain(&e)))?;
        let Some(chunk) = chunk else { break };
        for data in events.feed(&chunk) {
            if data == "[DONE]" {
                return Ok(assembler.finish());
            }
            let value: Value = serde_json::from_str(&data)
                .map_err(|e| format!("a chunk of the model's stream is not JSON ({e}): {data}"))?;
            assembler.add(&value)?;
        }
    }
    Ok(assembler.finish())
}

/// Splits a byte stream into the `data` of its server-sent events.
///
/// Hand-written: the chat-completions stream uses only `data:` lines and
/// blank-line separators, and these few lines avoid a dependency on a
/// stream adapter.
#[derive(Default)]
struct SseEvents {
    pending: Vec<u8>,
    data: Vec<String>,
}

impl SseEvents {
    /// Feeds bytes; returns the data of every event they completed.
    fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut complete = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    complete.push(std::mem::take(&mut self.data).join("\n"));
                }
            } else if let Some(data) = line.strip_prefix("data:") {
                self.data
                    .push(data.strip_prefix(' ').unwrap_or(data).to_string());
            }
            // Comments (`:`), `event:`, `id:` and `retry:` carry nothing
            // the chat-completions stream needs.
        }
        complete
    }
}

/// Builds one reply from streamed chunks: content appended, tool-call
/// deltas assembled by their `index`, usage from the last chunk
/// (`stream_options.include_usage`).
#[derive(Default)]
struct Assembler {
    content: String,
    calls: Vec<(u64, ToolCall)>,
    usage: Option<Usage>,
}

impl Assembler {
    fn add(&mut self, chunk: &Value) -> Result<(), String> {
        if let Some(error) = chunk.get("error") {
            return Err(format!("the model endpoint reported an error: {error}"));
        }
        if let Some(usage) = usage(chunk) {
            self.usage = Some(usage);
        }
        let Some(delta) = chunk.pointer("/choices/0/delta") else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.content.push_str(text);
        }
        for part in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = part.get("index").and_then(Value::as_u64).unwrap_or(0);
            let at = match self.calls.iter().position(|(i, _)| *i == index) {
                Some(at) => at,
                None => {
                    self.calls.push((index, ToolCall::default()));
                    self.calls.len() - 1
                }
            };
            let call = &mut self.calls[at].1;
            if let Some(id) = part.get("id").and_then(Value::as_str) {
                call.id = id.to_string();
            }
            if let Some(name) = part.pointer("/function/name").and_then(Value::as_str) {
                // The name comes whole in the first delta; a server that
                // repeats it in later ones must not double it.
                if call.name != name {
                    call.name.push_str(name);
                }
            }
            if let Some(arguments) = part.pointer("/function/arguments").and_then(Value::as_str) {
                call.arguments.push_str(arguments);
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Reply {
        self.calls.sort_by_key(|(index, _)| *index);
        Reply {
            content: self.content,
            tool_calls: self.calls.into_iter().map(|(_, call)| call).collect(),
            usage: self.usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_survive_any_split_of_the_bytes() {
        let stream = b"data: {\"a\":1}\n\n: keep-alive\n\ndata: {\"b\":2}\r\n\r\ndata: [DONE]\n\n";
        for cut in 0..stream.len() {
            let mut events = SseEvents::default();
            let mut got = events.feed(&stream[..cut]);
            got.extend(events.feed(&stream[cut..]));
            assert_eq!(got, ["{\"a\":1}", "{\"b\":2}", "[DONE]"], "cut at {cut}");
        }
    }

    #[test]
    fn tool_call_deltas_are_assembled_by_index() {
        let chunks = [
            json!({"choices": [{"delta": {"content": "Let me "}}]}),
            json!({"choices": [{"delta": {"content": "look.", "tool_calls": [
                {"index": 1, "id": "b", "function": {"name": "ls", "arguments": "{\"pa"}},
                {"index": 0, "id": "a", "function": {"name": "read_file", "arguments": ""}}
            ]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [
                {"index": 0, "function": {"arguments": "{\"path\": \"x\"}"}},
                {"index": 1, "function": {"name": "ls", "arguments": "th\": \".\"}"}}
            ]}}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5}}),
        ];
        let mut assembler = Assembler::default();
        for chunk in &chunks {
            assembler.add(chunk).unwrap();
        }
        let reply = assembler.finish();
        assert_eq!(reply.content, "Let me look.");
        assert_eq!(
            reply.tool_calls,
            [
                ToolCall {
                    id: "a".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\": \"x\"}".into()
                },
                ToolCall {
                    id: "b".into(),
                    name: "ls".into(),
                    arguments: "{\"path\": \".\"}".into()
                },
            ]
        );
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 12,
                completion_tokens: 5
            })
        );
    }

    #[test]
    fn a_whole_answer_with_object_arguments_is_read() {
        let body = json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "edit", "arguments": {"path": "a"}}}]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4}});
        let reply = parse_whole(body.to_string().as_bytes()).unwrap();
        assert_eq!(reply.content, "");
        assert_eq!(reply.tool_calls[0].arguments, "{\"path\":\"a\"}");
        assert_eq!(reply.usage.unwrap().completion_tokens, 4);
        let error = parse_whole(b"{\"error\": {\"message\": \"bad model\"}}").unwrap_err();
        assert!(error.contains("bad model"), "{error}");
    }
}
