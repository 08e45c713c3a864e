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
//!
//! A client that stops reading its answers is stopped being read: at most
//! [`MAX_IN_FLIGHT`] requests are being answered at once, the requests
//! read beyond them wait (at most [`MAX_PARKED`], then stdin is not read
//! until an answer goes out), so the server's memory is bounded whatever
//! the client does. Answers and notifications from the client (an
//! elicitation's answer, a cancellation) are read meanwhile, until the
//! parked requests are full.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, Notify};

use crate::jsonrpc::{
    INVALID_REQUEST, MAX_MESSAGE_BYTES, Verdict, error_message, judge, recover_id,
};

/// How much of an oversized line is kept to find its id in.
const KEPT_PREFIX: usize = 4096;

/// Requests being answered at once on one connection.
pub(crate) const MAX_IN_FLIGHT: usize = 256;

/// Requests read while [`MAX_IN_FLIGHT`] are being answered, waiting
/// their turn; past these, stdin is not read until an answer goes out.
const MAX_PARKED: usize = 1024;

/// The requests a connection has delivered and not yet answered, and a
/// signal each time one is answered.
#[derive(Default)]
struct InFlight {
    requests: std::sync::Mutex<HashSet<RequestId>>,
    answered: Notify,
}

impl InFlight {
    fn requests(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.requests.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `id` needs no answer any more (answered, or cancelled by the client).
    fn settle(&self, id: &RequestId) {
        if self.requests().remove(id) {
            self.answered.notify_one();
        }
    }
}

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
    in_flight: Arc<InFlight>,
    parked: VecDeque<RxJsonRpcMessage<RoleServer>>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StdioTransport<R, W> {
    pub(crate) fn new(reader: R, writer: W) -> Self {
        StdioTransport {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Line::default(),
            writer: Arc::new(Mutex::new(writer)),
            in_flight: Arc::default(),
            parked: VecDeque::new(),
        }
    }

    /// The next message for the service, in the order read, minding
    /// [`MAX_IN_FLIGHT`]: a request past it is parked, and delivered once
    /// an answer goes out.
    fn deliver(
        &mut self,
        message: RxJsonRpcMessage<RoleServer>,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        match &message {
            JsonRpcMessage::Request(request) => {
                let mut requests = self.in_flight.requests();
                if requests.len() >= MAX_IN_FLIGHT || !self.parked.is_empty() {
                    drop(requests);
                    self.parked.push_back(message);
                    return None;
                }
                requests.insert(request.id.clone());
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    // A parked request the client gave up on is dropped
                    // unanswered, as a cancelled one is.
                    self.parked.retain(
                        |parked| !matches!(parked, JsonRpcMessage::Request(r) if &r.id == id),
                    );
                    self.in_flight.settle(id);
                }
            }
            _ => {}
        }
        Some(message)
    }

    /// The oldest parked request, if there is room for it now.
    fn unpark(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut requests = self.in_flight.requests();
        if requests.len() >= MAX_IN_FLIGHT {
            return None;
        }
        let message = self.parked.pop_front()?;
        if let JsonRpcMessage::Request(request) = &message {
            requests.insert(request.id.clone());
        }
        Some(message)
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
        let reply = error_message(id, code, &message);
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
        let in_flight = self.in_flight.clone();
        async move {
            let answered = match &item {
                JsonRpcMessage::Response(response) => Some(response.id.clone()),
                JsonRpcMessage::Error(error) => error.id.clone(),
                _ => None,
            };
            let bytes = serde_json::to_vec(&item)?;
            drop(item);
            let written = Self::write(&writer, bytes).await;
            if let Some(id) = answered {
                in_flight.settle(&id);
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(request) = self.unpark() {
                return Some(request);
            }
            let answered = self.in_flight.clone();
            let next = if self.parked.len() >= MAX_PARKED {
                answered.answered.notified().await;
                continue;
            } else if self.parked.is_empty() {
                self.next_line().await
            } else {
                tokio::select! {
                    next = self.next_line() => next,
                    () = answered.answered.notified() => continue,
                }
            };
            let line = match next? {
                Ok(line) => line,
                Err(error) => {
                    tracing::error!("cannot read stdin: {error}");
                    return None;
                }
            };
            let line_bytes = line.bytes.strip_suffix(b"\r").unwrap_or(&line.bytes);
            let verdict = match line.oversized {
                Some(total) => Verdict::Refuse {
                    id: Some(recover_id(&line.bytes)),
                    code: INVALID_REQUEST,
                    message: format!(
                        "message of {total} bytes is over the {} MiB limit; nothing of it was read",
                        MAX_MESSAGE_BYTES / (1024 * 1024)
                    ),
                },
                None if line_bytes.iter().all(u8::is_ascii_whitespace) => continue,
                None => judge(line_bytes),
            };
            match verdict {
                Verdict::Deliver(message) => {
                    if let Some(message) = self.deliver(*message) {
                        return Some(message);
                    }
                }
                Verdict::Refuse {
                    id: None, message, ..
                } => {
                    tracing::debug!(%message, "ignoring a malformed message that takes no answer");
                }
                Verdict::Refuse {
                    id: Some(id),
                    code,
                    message,
                } => {
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
