//! The DAP transport to one adapter: `Content-Length` framing (from
//! gantry-process) on a pipe or a socket, requests numbered by `seq` and
//! answered through the pending map by `request_seq`, events handed to an
//! observer on the reader task, and the adapter's own requests (reverse
//! requests such as `runInTerminal`) answered with an error at once.
//!
//! Knows nothing of debugging beyond the base protocol: what an event
//! means is the session's business.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use gantry_process::framing::{read_message, write_message};
use gantry_process::pending::{Closed, Pending, Reply};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::{mpsc, watch};

/// An adapter's answer to one request. Unknown fields are ignored, so any
/// adapter's extras pass.
#[derive(Debug, Clone, Deserialize)]
pub struct Response {
    /// The `seq` of the request answered.
    pub request_seq: i64,
    /// Whether the request succeeded.
    pub success: bool,
    /// The request's command.
    #[serde(default)]
    pub command: String,
    /// Why it failed, in the adapter's short words (`cancelled`, or text).
    #[serde(default)]
    pub message: Option<String>,
    /// The result, or on failure `{error: {format}}` with the long words.
    #[serde(default)]
    pub body: Value,
}

impl Response {
    /// The adapter's explanation of a failure: the long form when it gave
    /// one (debugpy, delve), else the short message.
    pub fn failure(&self) -> String {
        let long = self
            .body
            .pointer("/error/format")
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty());
        long.or(self.message.as_deref())
            .unwrap_or("no reason given")
            .to_string()
    }
}

/// An event the adapter sent.
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    /// Its name (`stopped`, `output`, ...).
    pub event: String,
    /// Its body (`Null` when absent).
    #[serde(default)]
    pub body: Value,
}

/// Why a request has no result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DapError {
    /// No answer within the deadline.
    #[error("the debug adapter did not answer `{command}` within {:.1} s", .after.as_secs_f64())]
    Timeout {
        /// The request.
        command: String,
        /// How long it waited.
        after: Duration,
    },
    /// The adapter is gone.
    #[error("the debug adapter is gone: {0}")]
    Closed(String),
    /// The adapter refused the request.
    #[error("`{command}` failed: {message}")]
    Failed {
        /// The request.
        command: String,
        /// The adapter's explanation.
        message: String,
    },
}

/// Sees every event on the reader task, in the order sent, before any
/// response that follows it is handed out: a `stopped` event is recorded
/// before the answer of the request that caused it. Must not block.
pub type Observer = Box<dyn Fn(Event) + Send + Sync>;

/// One connection to an adapter. Cheap to share behind an `Arc`.
pub struct Transport {
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: Arc<Pending<Response>>,
    seq: Arc<AtomicI64>,
    closed: watch::Receiver<Option<String>>,
}

impl Transport {
    /// Starts the reader and writer tasks on the adapter's output and input
    /// (stdout and stdin, or the two halves of a socket).
    pub fn start<R, W>(reader: R, writer: W, observer: Observer) -> Arc<Transport>
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, out_rx) = mpsc::unbounded_channel();
        let (closed_tx, closed) = watch::channel(None);
        let transport = Arc::new(Transport {
            out,
            pending: Arc::default(),
            seq: Arc::new(AtomicI64::new(1)),
            closed,
        });
        let closer = Closer {
            reason: Arc::new(closed_tx),
            pending: transport.pending.clone(),
        };
        tokio::spawn(write_loop(writer, out_rx, closer.clone()));
        tokio::spawn(read_loop(
            reader,
            transport.out.clone(),
            transport.seq.clone(),
            observer,
            closer,
        ));
        transport
    }

    /// Sends a request and returns its reply without waiting for it: the
    /// launch request, whose answer some adapters give only after
    /// `configurationDone`.
    pub fn send(&self, command: &str, arguments: Value) -> Result<Reply<Response>, DapError> {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let reply = self
            .pending
            .register(seq)
            .map_err(|Closed(reason)| DapError::Closed(reason))?;
        let body =
            json!({"seq": seq, "type": "request", "command": command, "arguments": arguments});
        let _ = self.out.send(serde_json::to_vec(&body).unwrap_or_default());
        Ok(reply)
    }

    /// Sends a request and waits for its successful answer's body at most
    /// `timeout`.
    pub async fn request(
        &self,
        command: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, DapError> {
        let reply = self.send(command, arguments)?;
        Transport::answer(command, reply, timeout).await
    }

    /// Waits at most `timeout` for the answer of a request sent with
    /// [`Transport::send`].
    pub async fn answer(
        command: &str,
        reply: Reply<Response>,
        timeout: Duration,
    ) -> Result<Value, DapError> {
        match tokio::time::timeout(timeout, reply).await {
            Err(_) => Err(DapError::Timeout {
                command: command.to_string(),
                after: timeout,
            }),
            Ok(Err(Closed(reason))) => Err(DapError::Closed(reason)),
            Ok(Ok(response)) if response.success => Ok(response.body),
            Ok(Ok(response)) => Err(DapError::Failed {
                command: command.to_string(),
                message: response.failure(),
            }),
        }
    }

    /// Why the connection is gone, once it is.
    pub fn closed(&self) -> Option<String> {
        self.closed.borrow().clone()
    }

    /// Resolves once the connection is gone, with the reason.
    pub async fn wait_closed(&self) -> String {
        let mut closed = self.closed.clone();
        match closed.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or_default(),
            Err(_) => "the transport was dropped".into(),
        }
    }
}

/// Marks the connection gone once: every waiter learns why.
#[derive(Clone)]
struct Closer {
    reason: Arc<watch::Sender<Option<String>>>,
    pending: Arc<Pending<Response>>,
}

impl Closer {
    fn close(&self, reason: String) {
        self.pending.close(reason.clone());
        self.reason.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(reason);
            true
        });
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut messages: mpsc::UnboundedReceiver<Vec<u8>>,
    closer: Closer,
) {
    while let Some(message) = messages.recv().await {
        if let Err(e) = write_message(&mut writer, &message).await {
            closer.close(format!("writing to the debug adapter failed: {e}"));
            return;
        }
    }
}

async fn read_loop<R: AsyncBufRead + Unpin>(
    mut reader: R,
    out: mpsc::UnboundedSender<Vec<u8>>,
    seq: Arc<AtomicI64>,
    observer: Observer,
    closer: Closer,
) {
    let reason = loop {
        let body = match read_message(&mut reader).await {
            Ok(Some(body)) => body,
            Ok(None) => break "the debug adapter closed its output".to_string(),
            Err(e) => break format!("the debug adapter broke the stream: {e}"),
        };
        let Ok(message) = serde_json::from_slice::<Value>(&body) else {
            tracing::warn!(
                "debug adapter sent malformed JSON: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            );
            continue;
        };
        match message.get("type").and_then(Value::as_str) {
            Some("response") => match serde_json::from_value::<Response>(message) {
                Ok(response) => {
                    closer.pending.resolve(response.request_seq, response);
                }
                Err(e) => tracing::warn!("debug adapter sent a malformed response: {e}"),
            },
            Some("event") => match serde_json::from_value::<Event>(message) {
                Ok(event) => observer(event),
                Err(e) => tracing::warn!("debug adapter sent a malformed event: {e}"),
            },
            Some("request") => {
                // Gantry has no terminal to lend (runInTerminal) and starts
                // no sub-sessions (startDebugging): refuse, so the adapter
                // falls back or fails with a reason instead of waiting.
                let command = message.get("command").and_then(Value::as_str).unwrap_or("");
                let answer = json!({
                    "seq": seq.fetch_add(1, Ordering::Relaxed),
                    "type": "response",
                    "request_seq": message.get("seq").cloned().unwrap_or(Value::Null),
                    "success": false,
                    "command": command,
                    "message": format!("Gantry does not support the reverse request `{command}`"),
                });
                let _ = out.send(serde_json::to_vec(&answer).unwrap_or_default());
            }
            _ => tracing::warn!("debug adapter sent a message of unknown type"),
        }
    };
    closer.close(reason);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn frame(value: Value) -> Vec<u8> {
        let body = serde_json::to_vec(&value).unwrap();
        let mut framed = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        framed.extend(body);
        framed
    }

    /// A peer on an in-memory duplex: events before a response reach the
    /// observer first, a reverse request is refused, unknown fields pass,
    /// and the end of the stream fails what still waits.
    #[tokio::test]
    async fn routes_responses_events_and_refuses_reverse_requests() {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (our_read, our_write) = tokio::io::split(ours);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let transport = Transport::start(
            tokio::io::BufReader::new(our_read),
            our_write,
            Box::new(move |event| log.lock().unwrap().push(event.event)),
        );
        let first = transport.send("threads", json!({})).unwrap();
        let second = transport.send("evaluate", json!({"frameId": 0})).unwrap();
        let (their_read, mut their_write) = tokio::io::split(theirs);
        let mut their_read = tokio::io::BufReader::new(their_read);
        let sent: Value =
            serde_json::from_slice(&read_message(&mut their_read).await.unwrap().unwrap()).unwrap();
        assert_eq!(sent["command"], "threads");
        let sent: Value =
            serde_json::from_slice(&read_message(&mut their_read).await.unwrap().unwrap()).unwrap();
        assert_eq!(sent["arguments"]["frameId"], 0, "frame id 0 is sent");
        use tokio::io::AsyncWriteExt;
        let script = [
            frame(json!({"seq": 1, "type": "request", "command": "runInTerminal", "arguments": {}})),
            frame(json!({"seq": 2, "type": "event", "event": "stopped", "body": {"reason": "step", "novel": 1}})),
            frame(json!({"seq": 3, "type": "response", "request_seq": 2, "success": false, "command": "evaluate", "message": "x", "body": {"error": {"format": "name 'y' is not defined"}}})),
            frame(json!({"seq": 4, "type": "response", "request_seq": 1, "success": true, "command": "threads", "body": {"threads": []}, "extra": true})),
        ]
        .concat();
        their_write.write_all(&script).await.unwrap();
        let refusal: Value =
            serde_json::from_slice(&read_message(&mut their_read).await.unwrap().unwrap()).unwrap();
        assert_eq!(refusal["request_seq"], 1);
        assert_eq!(refusal["success"], false);
        let error = Transport::answer("evaluate", second, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("name 'y' is not defined"),
            "{error}"
        );
        assert_eq!(seen.lock().unwrap().as_slice(), ["stopped"]);
        let threads = Transport::answer("threads", first, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(threads, json!({"threads": []}));
        let waiting = transport.send("continue", json!({})).unwrap();
        drop(their_write);
        drop(their_read);
        let gone = Transport::answer("continue", waiting, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(gone, DapError::Closed(_)), "{gone}");
        assert!(transport.closed().is_some());
    }
}
