//! The stdio transport: newline-delimited JSON-RPC on a pair of pipes, with
//! an answer for every message a client sends, however broken.
//!
//! Written here rather than taken from rmcp's `AsyncRwTransport` because
//! that one drops an oversized or unparsable line with a log line and no
//! reply, and a client then waits until its own timeout for an answer that
//! never comes. Here a line over the limit, invalid JSON (nesting too deep
//! included), a batch, or a message of the wrong shape each get a JSON-RPC
//! error (with the request's id when it can be recovered, else `null`), and
//! the server keeps serving. Notifications, which must never be answered,
//! are dropped quietly as rmcp does.

use std::sync::Arc;

use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The largest message read, as rmcp's own transports: past it a line is
/// skipped to its end and answered with an error, never buffered.
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How much of an oversized line is kept to find its id in.
const KEPT_PREFIX: usize = 4096;

/// JSON-RPC's error codes.
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// A line being read: its bytes so far, or, past the limit, its length
/// and the first bytes kept.
#[derive(Default)]
struct Line {
    bytes: Vec<u8>,
    oversized: Option<usize>,
}

/// Newline-delimited JSON-RPC over `reader` and `writer`.
pub(crate) struct StdioTransport<R, W> {
    reader: BufReader<R>,
    line: Line,
    writer: Arc<Mutex<W>>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StdioTransport<R, W> {
    pub(crate) fn new(reader: R, writer: W) -> Self {
        StdioTransport {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Line::default(),
            writer: Arc::new(Mutex::new(writer)),
        }
    }

    /// Reads to the end of the next line; `None` at the end of the input.
    /// Cancel-safe: what was read stays in `self.line` for the next call,
    /// since the service polls `receive` in a `select!`.
    async fn next_line(&mut self) -> Option<std::io::Result<Line>> {
        loop {
            let chunk = match self.reader.fill_buf().await {
                Ok(chunk) => chunk,
                Err(error) => return Some(Err(error)),
            };
            if chunk.is_empty() {
                return None;
            }
            let (part, ended) = match memchr::memchr(b'\n', chunk) {
                Some(at) => (&chunk[..at], true),
                None => (chunk, false),
            };
            let taken = part.len() + usize::from(ended);
            match &mut self.line.oversized {
                Some(total) => *total += part.len(),
                None if self.line.bytes.len() + part.len() > MAX_MESSAGE_BYTES => {
                    let keep = KEPT_PREFIX.saturating_sub(self.line.bytes.len());
                    let total = self.line.bytes.len() + part.len();
                    self.line
                        .bytes
                        .extend_from_slice(&part[..keep.min(part.len())]);
                    self.line.bytes.truncate(KEPT_PREFIX);
                    self.line.oversized = Some(total);
                }
                None => self.line.bytes.extend_from_slice(part),
            }
            self.reader.consume(taken);
            if ended {
                return Some(Ok(std::mem::take(&mut self.line)));
            }
        }
    }

    /// Writes one message and a newline, whole, under the writer's lock.
    async fn write(writer: &Mutex<W>, mut bytes: Vec<u8>) -> std::io::Result<()> {
        bytes.push(b'\n');
        let mut writer = writer.lock().await;
        writer.write_all(&bytes).await?;
        writer.flush().await
    }

    /// Answers a message that never reached the service.
    async fn answer(
        writer: &Mutex<W>,
        id: Value,
        code: i64,
        message: String,
    ) -> std::io::Result<()> {
        tracing::debug!(code, %message, "answering a malformed message");
        let reply = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": code, "message": message},
        });
        Self::write(writer, reply.to_string().into_bytes()).await
    }
}

impl<R, W> Transport<RoleServer> for StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        async move {
            let bytes = serde_json::to_vec(&item)?;
            Self::write(&writer, bytes).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let line = match self.next_line().await? {
                Ok(line) => line,
                Err(error) => {
                    tracing::error!("cannot read stdin: {error}");
                    return None;
                }
            };
            let verdict = match line.oversized {
                Some(total) => Verdict::Answer(
                    recover_id(&line.bytes),
                    INVALID_REQUEST,
                    format!(
                        "message of {total} bytes is over the {} MiB limit; nothing of it was read",
                        MAX_MESSAGE_BYTES / (1024 * 1024)
                    ),
                ),
                None => judge(&line.bytes),
            };
            match verdict {
                Verdict::Deliver(message) => return Some(*message),
                Verdict::Skip => continue,
                Verdict::Answer(id, code, message) => {
                    let writer = self.writer.clone();
                    if Self::answer(&writer, id, code, message).await.is_err() {
                        return None;
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.shutdown().await
    }
}

/// What to do with one line.
enum Verdict {
    /// A message for the service.
    Deliver(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing to do (a blank line, a notification we do not know).
    Skip,
    /// Reply with this id, error code and message.
    Answer(Value, i64, String),
}

/// Parses one line, and when it is not a message the service takes, says
/// which error answers it.
fn judge(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    let typed_error = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => return Verdict::Deliver(Box::new(message)),
        Err(error) => error,
    };
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(error) => {
            return Verdict::Answer(
                recover_id(line),
                PARSE_ERROR,
                format!("parse error: {error}"),
            );
        }
    };
    let Value::Object(object) = &value else {
        return Verdict::Answer(
            Value::Null,
            INVALID_REQUEST,
            if value.is_array() {
                "batches are not supported: send one JSON-RPC message per line".to_string()
            } else {
                "a JSON-RPC message must be a JSON object".to_string()
            },
        );
    };
    let id = object.get("id").cloned();
    let method = object.get("method").and_then(Value::as_str);
    match (method, id) {
        // A notification is never answered, whatever is wrong with it.
        (Some(_), None) => Verdict::Skip,
        // A response of the client's we could not read: nothing to answer.
        (None, _) if object.contains_key("result") || object.contains_key("error") => {
            tracing::warn!("ignoring a malformed response from the client: {typed_error}");
            Verdict::Skip
        }
        (None, id) => Verdict::Answer(
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            "invalid request: a request needs a string `method`".to_string(),
        ),
        (Some(method), Some(id)) => Verdict::Answer(
            id,
            INVALID_PARAMS,
            format!("invalid params for `{method}`: {typed_error}"),
        ),
    }
}

/// The `id` of a top-level JSON object in `bytes` (which may be cut short
/// or too deep to parse), found by a scan that tracks strings and depth:
/// a number or string value, else `null`.
pub(crate) fn recover_id(bytes: &[u8]) -> Value {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(bytes, i);
                if depth == 1 && &bytes[i..end] == b"\"id\"" {
                    let rest = &bytes[end..];
                    let rest = rest.trim_ascii_start();
                    if let Some(value) = rest.strip_prefix(b":") {
                        return id_value(value.trim_ascii_start());
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Value::Null
}

/// The index just past the string starting at `start` (a `"`).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// A JSON number or string at the start of `bytes`, as an id.
fn id_value(bytes: &[u8]) -> Value {
    let token_end = match bytes.first() {
        Some(b'"') => string_end(bytes, 0),
        _ => bytes
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'-'))
            .unwrap_or(bytes.len()),
    };
    match serde_json::from_slice::<Value>(&bytes[..token_end]) {
        Ok(value @ (Value::Number(_) | Value::String(_))) => value,
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_recovered_from_broken_messages() {
        assert_eq!(
            recover_id(br#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"#),
            7
        );
        assert_eq!(recover_id(br#"{"params":{"id":1},"id":"a\"b"}"#), "a\"b");
        assert_eq!(
            recover_id(br#"{"method":"x","params":[[[[["id":3]]]]]}"#),
            Value::Null
        );
        assert_eq!(recover_id(b"not json"), Value::Null);
    }

    #[test]
    fn every_broken_request_gets_an_answer() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let cases: [(&[u8], Value, i64); 5] = [
            (b"{not json", Value::Null, PARSE_ERROR),
            (deep.as_bytes(), json!(9), PARSE_ERROR),
            (
                br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                Value::Null,
                INVALID_REQUEST,
            ),
            (br#"{"jsonrpc":"2.0","id":2}"#, json!(2), INVALID_REQUEST),
            (
                br#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":"x"}"#,
                json!(3),
                INVALID_PARAMS,
            ),
        ];
        for (line, id, code) in cases {
            match judge(line) {
                Verdict::Answer(got_id, got_code, _) => {
                    assert_eq!(
                        (got_id, got_code),
                        (id, code),
                        "{}",
                        String::from_utf8_lossy(line)
                    );
                }
                _ => panic!("no answer for {}", String::from_utf8_lossy(line)),
            }
        }
        assert!(matches!(
            judge(br#"{"jsonrpc":"2.0","method":"notifications/bogus","params":5}"#),
            Verdict::Skip
        ));
        assert!(matches!(
            judge(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Verdict::Deliver(_)
        ));
    }
}
