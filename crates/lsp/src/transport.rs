//! The JSON-RPC transport to one server: framing on its pipes, a map from
//! request id to the waiting caller, notifications out to a channel, and
//! the server's own requests answered at once.
//!
//! Knows nothing of LSP beyond three facts of its base protocol: requests
//! other than `initialize` wait until the handshake is done, a request that
//! is given up on is cancelled with `$/cancelRequest`, and `-32801`
//! (content modified) means "ask again".

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_core::lock;
use gantry_process::framing::{read_message, write_message};
use gantry_process::pending::{Closed, Pending};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::{mpsc, watch};

/// The error code servers use when the document changed under a request.
pub const CONTENT_MODIFIED: i64 = -32801;
/// The error code of a request the client cancelled.
pub const REQUEST_CANCELLED: i64 = -32800;
const METHOD_NOT_FOUND: i64 = -32601;

/// An error object of a JSON-RPC response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// The server's message.
    pub message: String,
}

impl RpcError {
    /// A method the client does not implement.
    pub fn method_not_found(method: &str) -> Self {
        RpcError {
            code: METHOD_NOT_FOUND,
            message: format!("{method} is not handled by this client"),
        }
    }
}

/// Why a request has no result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RequestError {
    /// The server did not answer within the deadline; the request was
    /// cancelled.
    #[error("{method} got no answer within {}", seconds(*.after))]
    Timeout {
        /// The request.
        method: String,
        /// How long it waited.
        after: Duration,
    },
    /// The connection is gone (the server exited or broke the stream).
    #[error("the server is gone: {0}")]
    Closed(String),
    /// The server answered with an error.
    #[error("{method} failed: {} (code {})", .error.message, .error.code)]
    Server {
        /// The request.
        method: String,
        /// What the server said.
        error: RpcError,
    },
}

impl RequestError {
    /// Whether the server said the document changed under the request.
    pub fn is_content_modified(&self) -> bool {
        matches!(self, RequestError::Server { error, .. } if error.code == CONTENT_MODIFIED)
    }
}

fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

/// A message the server sent that is not an answer to a request: a
/// notification, or a request of its own (already answered by the
/// handler, passed on so the client can learn from it).
#[derive(Debug, Clone)]
pub struct Incoming {
    /// The method.
    pub method: String,
    /// Its parameters (`Null` when absent).
    pub params: Value,
}

/// Answers the server's requests (`workspace/configuration`,
/// `client/registerCapability`, ...). Called on the reader task, so it must
/// not block.
pub type RequestHandler = Arc<dyn Fn(&str, &Value) -> Result<Value, RpcError> + Send + Sync>;

/// Sees every message the server sends that is not an answer, on the
/// reader task and before any answer that follows it is handed out, so
/// what a caller reads after an answer (progress, say) is never older
/// than the answer. Must not block.
pub type Observer = Arc<dyn Fn(&Incoming) + Send + Sync>;

/// The requests waiting for the server's answer.
type Waiting = Arc<Pending<Result<Value, RpcError>>>;

/// Messages held back until the handshake is done, and whether it is.
#[derive(Default)]
struct Gate {
    open: bool,
    held: Vec<Vec<u8>>,
}

/// One connection to a server. Cheap to share behind an `Arc`.
pub struct Transport {
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: Waiting,
    next_id: AtomicI64,
    gate: Mutex<Gate>,
    initialized: watch::Sender<bool>,
    closed: watch::Receiver<Option<String>>,
    sent: Mutex<BTreeMap<String, u64>>,
    /// Whether a request other than `initialize` was ever answered: a
    /// server that has is working, whatever killed it since.
    answered: AtomicBool,
}

impl Transport {
    /// Starts the reader and writer tasks on a server's stdout and stdin.
    /// Returns the transport and the channel of notifications (and, for
    /// the record, the requests the handler answered).
    pub fn start<R, W>(
        reader: R,
        writer: W,
        handler: RequestHandler,
    ) -> (Arc<Transport>, mpsc::UnboundedReceiver<Incoming>)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Transport::start_observed(reader, writer, handler, None)
    }

    /// [`Transport::start`] with an [`Observer`] called on the reader task
    /// for every notification and server request, before it goes to the
    /// channel.
    pub fn start_observed<R, W>(
        reader: R,
        writer: W,
        handler: RequestHandler,
        observer: Option<Observer>,
    ) -> (Arc<Transport>, mpsc::UnboundedReceiver<Incoming>)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, out_rx) = mpsc::unbounded_channel();
        let (incoming_tx, incoming_rx) = mpsc::unbounded_channel();
        let (closed_tx, closed) = watch::channel(None);
        let pending: Waiting = Arc::default();
        let transport = Arc::new(Transport {
            out: out.clone(),
            pending: pending.clone(),
            next_id: AtomicI64::new(1),
            gate: Mutex::new(Gate::default()),
            initialized: watch::channel(false).0,
            closed,
            sent: Mutex::default(),
            answered: AtomicBool::new(false),
        });
        let closed = Arc::new(Closer {
            reason: closed_tx,
            pending,
        });
        tokio::spawn(write_loop(writer, out_rx, closed.clone()));
        tokio::spawn(read_loop(
            reader,
            out,
            incoming_tx,
            handler,
            observer,
            closed,
        ));
        (transport, incoming_rx)
    }

    /// Sends a request and waits for its answer at most `timeout`. Until
    /// [`Transport::mark_initialized`], only `initialize` goes out; other
    /// requests wait for the handshake within the same deadline.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RequestError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let timed_out = || RequestError::Timeout {
            method: method.to_string(),
            after: timeout,
        };
        if method != "initialize" {
            let mut initialized = self.initialized.subscribe();
            let mut closed = self.closed.clone();
            tokio::select! {
                ready = tokio::time::timeout_at(deadline, initialized.wait_for(|open| *open)) => {
                    if ready.is_err() {
                        return Err(timed_out());
                    }
                }
                _ = closed.wait_for(Option::is_some) => {}
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let reply = self
            .pending
            .register(id)
            .map_err(|Closed(reason)| RequestError::Closed(reason))?;
        let mut guard = CancelOnDrop {
            transport: self,
            id,
            armed: true,
        };
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        *lock(&self.sent).entry(method.to_string()).or_default() += 1;
        self.send_now(&body);
        let answer = tokio::time::timeout_at(deadline, reply).await;
        match answer {
            Err(_) => Err(timed_out()),
            Ok(Err(Closed(reason))) => {
                guard.armed = false;
                Err(RequestError::Closed(reason))
            }
            Ok(Ok(result)) => {
                guard.armed = false;
                if method != "initialize" {
                    self.answered.store(true, Ordering::Relaxed);
                }
                result.map_err(|error| RequestError::Server {
                    method: method.to_string(),
                    error,
                })
            }
        }
    }

    /// Sends a notification; held back until the handshake is done unless
    /// it is part of the handshake or the goodbye.
    pub fn notify(&self, method: &str, params: Value) {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let mut gate = lock(&self.gate);
        if gate.open || matches!(method, "initialized" | "exit") {
            let _ = self.out.send(bytes);
        } else {
            gate.held.push(bytes);
        }
    }

    /// Ends the handshake: sends `initialized`, then everything held back,
    /// then lets waiting requests go.
    pub fn mark_initialized(&self) {
        let mut gate = lock(&self.gate);
        let initialized = json!({"jsonrpc": "2.0", "method": "initialized", "params": {}});
        let _ = self
            .out
            .send(serde_json::to_vec(&initialized).unwrap_or_default());
        for held in std::mem::take(&mut gate.held) {
            let _ = self.out.send(held);
        }
        gate.open = true;
        drop(gate);
        self.initialized.send_replace(true);
    }

    /// How many requests went out, by method: what a step cost the server,
    /// for tests and benches (an edit inside a function body must cost no
    /// `textDocument/references`).
    pub fn requests_sent(&self) -> BTreeMap<String, u64> {
        lock(&self.sent).clone()
    }

    /// Whether the server ever answered a request other than `initialize`:
    /// what tells a server that worked and was killed from one that
    /// crashes as it starts.
    pub fn has_answered(&self) -> bool {
        self.answered.load(Ordering::Relaxed)
    }

    /// Why the connection ended, once it has.
    pub fn closed_reason(&self) -> Option<String> {
        self.closed.borrow().clone()
    }

    /// Resolves when the connection ends.
    pub async fn wait_closed(&self) -> String {
        let mut closed = self.closed.clone();
        match closed.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or_default(),
            Err(_) => "connection closed".into(),
        }
    }

    fn send_now(&self, body: &Value) {
        let _ = self.out.send(serde_json::to_vec(body).unwrap_or_default());
    }
}

/// Cancels a request whose caller stopped waiting (timeout, or the future
/// dropped by a cancelled tool call).
struct CancelOnDrop<'a> {
    transport: &'a Transport,
    id: i64,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed && self.transport.pending.forget(self.id) {
            self.transport
                .notify("$/cancelRequest", json!({"id": self.id}));
        }
    }
}

/// Ends the connection once, for the first reason: waiting requests fail
/// with it at once, and so does every later one.
struct Closer {
    reason: watch::Sender<Option<String>>,
    pending: Waiting,
}

impl Closer {
    fn close(&self, reason: String) {
        self.pending.close(reason.clone());
        self.reason.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(reason);
                true
            } else {
                false
            }
        });
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut out: mpsc::UnboundedReceiver<Vec<u8>>,
    closed: Arc<Closer>,
) {
    while let Some(body) = out.recv().await {
        if let Err(e) = write_message(&mut writer, &body).await {
            closed.close(format!("writing to the server failed: {e}"));
            return;
        }
    }
}

async fn read_loop<R: AsyncBufRead + Unpin>(
    mut reader: R,
    out: mpsc::UnboundedSender<Vec<u8>>,
    incoming: mpsc::UnboundedSender<Incoming>,
    handler: RequestHandler,
    observer: Option<Observer>,
    closed: Arc<Closer>,
) {
    let pass_on = |message: Incoming| {
        if let Some(observer) = &observer {
            observer(&message);
        }
        let _ = incoming.send(message);
    };
    let reason = loop {
        let body = match read_message(&mut reader).await {
            Ok(Some(body)) => body,
            Ok(None) => break "the server closed its output".to_string(),
            Err(e) => break format!("broken message stream: {e}"),
        };
        let message: Value = match serde_json::from_slice(&body) {
            Ok(message) => message,
            Err(e) => {
                tracing::warn!("language server sent invalid JSON ({e}); message skipped");
                continue;
            }
        };
        let method = message.get("method").and_then(Value::as_str);
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match (method, message.get("id")) {
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { continue };
                let result = match message.get("error") {
                    Some(error) => Err(serde_json::from_value(error.clone()).unwrap_or(RpcError {
                        code: 0,
                        message: error.to_string(),
                    })),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                closed.pending.resolve(id, result);
            }
            (Some(method), Some(id)) => {
                let answer = match handler(method, &params) {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
                };
                let _ = out.send(serde_json::to_vec(&answer).unwrap_or_default());
                pass_on(Incoming {
                    method: method.to_string(),
                    params,
                });
            }
            (Some(method), None) => {
                pass_on(Incoming {
                    method: method.to_string(),
                    params,
                });
            }
            (None, None) => {
                tracing::warn!("language server sent a message with neither id nor method")
            }
        }
    };
    closed.close(reason);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncWriteExt, BufReader, duplex};

    /// A scripted peer on the other end of an in-memory pipe.
    struct Peer {
        reader: BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
        writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    }

    impl Peer {
        async fn recv(&mut self) -> Value {
            let body = read_message(&mut self.reader).await.unwrap().unwrap();
            serde_json::from_slice(&body).unwrap()
        }
        async fn send(&mut self, value: Value) {
            write_message(&mut self.writer, &serde_json::to_vec(&value).unwrap())
                .await
                .unwrap();
        }
    }

    fn pair() -> (Arc<Transport>, mpsc::UnboundedReceiver<Incoming>, Peer) {
        let (ours, theirs) = duplex(1 << 16);
        let (our_read, our_write) = tokio::io::split(ours);
        let (their_read, their_write) = tokio::io::split(theirs);
        let handler: RequestHandler = Arc::new(|method, _| match method {
            "workspace/configuration" => Ok(json!([null])),
            other => Err(RpcError::method_not_found(other)),
        });
        let (transport, incoming) = Transport::start(BufReader::new(our_read), our_write, handler);
        (
            transport,
            incoming,
            Peer {
                reader: BufReader::new(their_read),
                writer: their_write,
            },
        )
    }

    #[tokio::test]
    async fn requests_wait_for_the_handshake_and_notifications_are_held() {
        let (transport, _incoming, mut peer) = pair();
        transport.notify("textDocument/didOpen", json!({"n": 1}));
        let t = transport.clone();
        let early = tokio::spawn(async move {
            t.request("textDocument/hover", json!({}), Duration::from_secs(5))
                .await
        });
        let t = transport.clone();
        let init = tokio::spawn(async move {
            t.request("initialize", json!({}), Duration::from_secs(5))
                .await
        });
        let first = peer.recv().await;
        assert_eq!(first["method"], "initialize");
        peer.send(json!({"jsonrpc": "2.0", "id": first["id"], "result": {"capabilities": {}}}))
            .await;
        assert!(init.await.unwrap().is_ok());
        transport.mark_initialized();
        assert_eq!(peer.recv().await["method"], "initialized");
        assert_eq!(peer.recv().await["method"], "textDocument/didOpen");
        let hover = peer.recv().await;
        assert_eq!(hover["method"], "textDocument/hover");
        peer.send(json!({"jsonrpc": "2.0", "id": hover["id"], "result": "ok"}))
            .await;
        assert_eq!(early.await.unwrap().unwrap(), json!("ok"));
    }

    #[tokio::test]
    async fn timeout_cancels_and_server_requests_are_answered() {
        let (transport, mut incoming, mut peer) = pair();
        transport.mark_initialized();
        assert_eq!(peer.recv().await["method"], "initialized");
        let error = transport
            .request("slow", json!({}), Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(matches!(error, RequestError::Timeout { .. }), "{error}");
        let sent = peer.recv().await;
        let cancel = peer.recv().await;
        assert_eq!(cancel["method"], "$/cancelRequest");
        assert_eq!(cancel["params"]["id"], sent["id"]);

        peer.send(json!({"jsonrpc": "2.0", "id": 7, "method": "workspace/configuration", "params": {"items": [{}]}}))
            .await;
        let answer = peer.recv().await;
        assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 7, "result": [null]}));
        peer.send(json!({"jsonrpc": "2.0", "id": "x", "method": "unknown/thing"}))
            .await;
        assert_eq!(peer.recv().await["error"]["code"], METHOD_NOT_FOUND);
        peer.send(json!({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": 1}}))
            .await;
        let mut methods = Vec::new();
        for _ in 0..3 {
            methods.push(incoming.recv().await.unwrap().method);
        }
        assert_eq!(
            methods,
            ["workspace/configuration", "unknown/thing", "$/progress"]
        );
    }

    #[tokio::test]
    async fn errors_and_a_broken_stream_reach_the_waiters() {
        let (transport, _incoming, mut peer) = pair();
        transport.mark_initialized();
        peer.recv().await;
        let t = transport.clone();
        let call = tokio::spawn(async move {
            t.request("textDocument/hover", json!({}), Duration::from_secs(5))
                .await
        });
        let sent = peer.recv().await;
        peer.send(json!({"jsonrpc": "2.0", "id": sent["id"], "error": {"code": CONTENT_MODIFIED, "message": "modified"}}))
            .await;
        assert!(call.await.unwrap().unwrap_err().is_content_modified());

        let t = transport.clone();
        let call = tokio::spawn(async move {
            t.request("textDocument/hover", json!({}), Duration::from_secs(5))
                .await
        });
        peer.recv().await;
        peer.writer
            .write_all(b"Content-Length: nope\r\n\r\n")
            .await
            .unwrap();
        let error = call.await.unwrap().unwrap_err();
        assert!(
            error.to_string().contains("broken message stream"),
            "{error}"
        );
        assert!(transport.closed_reason().is_some());
        let after = transport
            .request("x", json!({}), Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(matches!(after, RequestError::Closed(_)));
    }
}
