//! `gantry mcp --http ADDR`: streamable HTTP, one run per MCP session.
//!
//! Bound to loopback unless told otherwise. The `Host` and `Origin` headers
//! are checked against DNS rebinding (a web page must not drive the tools of
//! a local server), and a bearer token is required on loopback too: the
//! commands Gantry runs for the model can reach loopback, and a server that
//! answers them without a token would let them call `shell` with
//! `sandbox: false` and approve it themselves. With no token given, one is
//! made at start and printed on stderr (as Jupyter does).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::model::{ClientRequest, ProtocolVersion};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{
    INVALID_PARAMS, INVALID_REQUEST, MAX_MESSAGE_BYTES, Verdict, error_message, invalid_params,
    judge,
};
use crate::server::{CallerGone, Credential, GantryServer, RunFactory, Shared, StatelessRuns};

/// How the HTTP front end is exposed.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// Who may call.
    pub access: Access,
    /// Browser origins allowed besides the loopback ones.
    pub allowed_origins: Vec<String>,
    /// A session with no request for this long ends, and its run with it.
    pub idle: Duration,
    /// Stops the server.
    pub cancel: CancellationToken,
}

/// Who may call the HTTP front end.
#[derive(Debug, Clone)]
pub enum Access {
    /// Requests with `Authorization: Bearer <one of these>`. On protocol
    /// 2026-07-28, which has no sessions, each token gets a run of its own.
    /// None given is the same as [`Access::Generated`].
    Tokens(Vec<String>),
    /// Requests with a token made at start from the OS's random source and
    /// printed on stderr with a client configuration that uses it: it is
    /// in no argv, no environment and no file, only in this process.
    /// Loopback only: an address reachable beyond this machine needs a
    /// token chosen on purpose.
    Generated,
    /// Every request (`--no-token`): loopback only, with a warning, since
    /// any local process can then call the tools.
    Open,
}

/// Serves MCP over streamable HTTP at `options.addr` until cancelled.
pub async fn serve_http(factory: RunFactory, options: HttpOptions) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    serve_listener(listener, factory, options).await
}

/// [`serve_http`] on a listener already bound (`options.addr` is not used).
pub(crate) async fn serve_listener(
    listener: tokio::net::TcpListener,
    factory: RunFactory,
    options: HttpOptions,
) -> anyhow::Result<()> {
    let addr = listener.local_addr()?;
    let loopback = addr.ip().is_loopback();
    let (tokens, generated) = match options.access {
        Access::Tokens(tokens) if !tokens.is_empty() => (tokens, None),
        Access::Open if !loopback => anyhow::bail!(
            "--no-token is allowed on loopback only: {addr} is reachable beyond this machine"
        ),
        _ if !loopback => anyhow::bail!(
            "{addr} is reachable beyond this machine: give a bearer token with --tokens-file FILE \
             or GANTRY_HTTP_TOKEN, or bind to 127.0.0.1"
        ),
        Access::Open => (Vec::new(), None),
        Access::Tokens(_) | Access::Generated => {
            let token = new_token()?;
            (vec![token.clone()], Some(token))
        }
    };
    let stateless = StatelessRuns::new(options.idle);
    let shared = Arc::new(Shared::new(factory, "mcp http").with_stateless_runs(stateless.clone()));
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(options.cancel.clone())
        .with_allowed_origins(
            [
                "http://localhost:*",
                "http://127.0.0.1:*",
                "http://[::1]:*",
                "https://localhost:*",
            ]
            .into_iter()
            .map(String::from)
            .chain(options.allowed_origins.iter().cloned()),
        );
    if !loopback {
        config = config.disable_allowed_hosts();
    }
    let mut sessions = LocalSessionManager::default();
    let mut session_config = SessionConfig::default();
    session_config.keep_alive = Some(options.idle);
    sessions.session_config = session_config;
    let service = StreamableHttpService::new(
        move || Ok(GantryServer::new(shared.clone())),
        Arc::new(sessions),
        config,
    );
    let open = tokens.is_empty();
    let tokens = Arc::new(tokens);
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn(guard))
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            let tokens = tokens.clone();
            async move { check_bearer(&tokens, request, next).await }
        }));
    // No confined command is let through to this port, whatever
    // `sandbox.network.hostPorts` lists.
    gantry_process::network::proxy::reserve_port(listener.local_addr()?.port());
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tracing::info!(%url, "serving MCP over streamable HTTP");
    match generated {
        Some(token) => eprintln!("{}", generated_token_notice(&url, &token)),
        None if open => eprintln!(
            "gantry: warning: --no-token: any process of this machine that can reach {url}, \
             the commands Gantry runs for the model included, can call every tool of this \
             server and answer its confirmations"
        ),
        None => {}
    }
    // Last: whoever waits for this line has everything above it.
    eprintln!("gantry: serving MCP at {url}");
    // No Nagle: an answer goes out in several small writes (headers, then
    // each event of its stream), and a client that delays its ACK would
    // hold each later one back 40 ms (every call of a kept-alive
    // connection took 44 ms instead of 1).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { options.cancel.cancelled().await })
        .await?;
    stateless.shutdown().await;
    Ok(())
}

/// A fresh bearer token: 32 bytes of the OS's random source, in hex.
fn new_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|error| {
        anyhow::anyhow!("cannot make a bearer token: the OS random source failed: {error}")
    })?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// What stderr says of a token made at start: the header a client sends,
/// and MCP settings to paste that send it.
fn generated_token_notice(url: &str, token: &str) -> String {
    let settings = serde_json::json!({
        "mcpServers": {"gantry": {
            "type": "http",
            "url": url,
            "headers": {"Authorization": format!("Bearer {token}")},
        }}
    });
    format!(
        "gantry: no bearer token was given, so one was made for this server. It lives only \
         in this process, and a new one is made at each start (for one that lasts, put it in \
         a file only you can read and give --tokens-file FILE, or set GANTRY_HTTP_TOKEN).\n\
         A client sends it as the header\n  \
         Authorization: Bearer {token}\n\
         e.g. with these MCP settings (Claude Code's .mcp.json; Qwen Code and Gemini CLI \
         spell \"url\" as \"httpUrl\"):\n  {settings}"
    )
}

/// The JSON-RPC face of the HTTP front end, for every request: a POST
/// whose body is not a message rmcp would take is answered here, as stdio
/// answers it ([`judge`]: rmcp itself answers wrong-type `params` with
/// `415` in plain text, and an `initialize` without params by asking for
/// a session id); a refusal rmcp writes in plain text (wrong content type,
/// `Accept`, method, an unknown session) gets a JSON-RPC error body; and
/// an event stream to a client of a revision before 2025-11-25 loses
/// rmcp's resumability priming events ([`without_priming`]).
async fn guard(mut request: Request, next: Next) -> Response {
    // Cancelled if this exchange is dropped before its answer was read to
    // the end: the client went away, and the call it left is cancelled.
    let gone = CancellationToken::new();
    request.extensions_mut().insert(CallerGone(gone.clone()));
    let armed = gone.drop_guard();
    let mut revision = header_revision(request.headers());
    let (request, id) = if request.method() == axum::http::Method::POST {
        let (parts, body) = request.into_parts();
        let bytes = match axum::body::to_bytes(body, MAX_MESSAGE_BYTES).await {
            Ok(bytes) => bytes,
            Err(_) => {
                return rpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    serde_json::Value::Null,
                    INVALID_REQUEST,
                    &format!(
                        "message over the {} MiB limit",
                        MAX_MESSAGE_BYTES / (1024 * 1024)
                    ),
                );
            }
        };
        let request = match judge(&bytes) {
            Verdict::Deliver(message) => match *message {
                rmcp::model::JsonRpcMessage::Request(request) => {
                    match &request.request {
                        ClientRequest::InitializeRequest(initialize) => {
                            revision = initialize.params.protocol_version.to_string();
                        }
                        ClientRequest::CustomRequest(custom) if custom.method == "initialize" => {
                            return rpc_error(
                                StatusCode::BAD_REQUEST,
                                serde_json::to_value(&request.id).unwrap_or_default(),
                                INVALID_PARAMS,
                                &invalid_params("initialize").unwrap_or_default(),
                            );
                        }
                        _ => {}
                    }
                    (Some(request.id), bytes)
                }
                _ => (None, bytes),
            },
            Verdict::Refuse { id, code, message } => {
                tracing::debug!(code, %message, "answering a malformed message");
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    id.unwrap_or_default(),
                    code,
                    &message,
                );
            }
        };
        let (id, bytes) = request;
        (Request::from_parts(parts, bytes.into()), id)
    } else {
        (request, None)
    };
    let response = next.run(request).await;
    let id = id
        .and_then(|id| serde_json::to_value(id).ok())
        .unwrap_or_default();
    let response = as_json_rpc_error(response, id).await;
    let response = if revision.as_str() < ProtocolVersion::V_2025_11_25.as_str() {
        without_priming(response)
    } else {
        response
    };
    cancel_unless_read(response, armed)
}

/// `response` whose body, dropped before its end, fires `armed`; read to
/// its end, it disarms it.
fn cancel_unless_read(response: Response, armed: tokio_util::sync::DropGuard) -> Response {
    // A body whose length is known is whole already: its call is over.
    if response
        .headers()
        .contains_key(axum::http::header::CONTENT_LENGTH)
        || axum::body::HttpBody::size_hint(response.body())
            .exact()
            .is_some()
    {
        armed.disarm();
        return response;
    }
    let (parts, body) = response.into_parts();
    let watched = UntilRead {
        inner: body.into_data_stream(),
        armed: Some(armed),
    };
    Response::from_parts(parts, axum::body::Body::from_stream(watched))
}

/// A body stream holding a [`tokio_util::sync::DropGuard`] until its end.
struct UntilRead<S> {
    inner: S,
    armed: Option<tokio_util::sync::DropGuard>,
}

impl<S: futures_util::Stream + Unpin> futures_util::Stream for UntilRead<S> {
    type Item = S::Item;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<S::Item>> {
        let next = std::pin::Pin::new(&mut self.inner).poll_next(cx);
        if let std::task::Poll::Ready(None) = next
            && let Some(armed) = self.armed.take()
        {
            armed.disarm();
        }
        next
    }
}

/// The revision a request after the handshake speaks: its
/// `MCP-Protocol-Version` header, absent meaning 2025-03-26 (as the
/// 2025-06-18 revision says a server must assume).
fn header_revision(headers: &axum::http::HeaderMap) -> String {
    headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .unwrap_or(ProtocolVersion::V_2025_03_26.as_str())
        .to_string()
}

/// A refusal rmcp answered in plain text, as a JSON-RPC error (`-32600`,
/// with rmcp's words and the request's id when there was one), so that a
/// client's JSON-RPC layer can read every answer it gets.
async fn as_json_rpc_error(response: Response, id: serde_json::Value) -> Response {
    let status = response.status();
    let json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_string())
        .unwrap_or_default();
    let text = if text.is_empty() {
        status.canonical_reason().unwrap_or("refused").to_string()
    } else {
        text
    };
    let mut refusal = rpc_error(status, id, INVALID_REQUEST, &text);
    for (name, value) in &parts.headers {
        if name != axum::http::header::CONTENT_TYPE && name != axum::http::header::CONTENT_LENGTH {
            refusal.headers_mut().insert(name, value.clone());
        }
    }
    refusal
}

/// An event stream without the events whose data is empty: the priming
/// events of protocol 2025-11-25's resumability (SEP-1699), which rmcp's
/// server sends on every stream whatever revision was negotiated. A client
/// of an earlier revision may parse every event's data as JSON (Gemini
/// CLI's MCP library does, and then drops the server as disconnected).
/// rmcp writes each event as one frame ending in a blank line; events are
/// cut at blank lines here all the same, so a frame boundary anywhere
/// keeps every other event whole. Keep-alive comments pass.
fn without_priming(response: Response) -> Response {
    use futures_util::StreamExt;
    let event_stream = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !event_stream {
        return response;
    }
    let (parts, body) = response.into_parts();
    let mut pending = Vec::new();
    let events = body
        .into_data_stream()
        .map(move |chunk| {
            chunk.map(|bytes| {
                pending.extend_from_slice(&bytes);
                let mut kept = Vec::new();
                while let Some(end) = memchr::memmem::find(&pending, b"\n\n") {
                    let event: Vec<u8> = pending.drain(..end + 2).collect();
                    if !is_priming(&event) {
                        kept.extend_from_slice(&event);
                    }
                }
                axum::body::Bytes::from(kept)
            })
        })
        .filter(|chunk| std::future::ready(chunk.as_ref().map_or(true, |b| !b.is_empty())));
    Response::from_parts(parts, axum::body::Body::from_stream(events))
}

/// Whether one server-sent event carries `data` fields that are all empty.
fn is_priming(event: &[u8]) -> bool {
    let mut data = event
        .split(|b| *b == b'\n')
        .filter_map(|line| line.strip_prefix(b"data:"))
        .peekable();
    data.peek().is_some() && data.all(|value| value.trim_ascii().is_empty())
}

/// A JSON-RPC error as an HTTP response.
fn rpc_error(status: StatusCode, id: serde_json::Value, code: i64, message: &str) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        error_message(id, code, message).to_string(),
    )
        .into_response()
}

/// Lets a request through only with one of `tokens` (any request when
/// there are none, which is `--no-token`), marking it with its
/// [`Credential`]; any other gets `401` with a JSON-RPC error.
async fn check_bearer(tokens: &[String], mut request: Request, next: Next) -> Response {
    let credential = if tokens.is_empty() {
        Some(Credential(0))
    } else {
        let given = request
            .headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token)
            .unwrap_or_default();
        // Every token is compared, so the time taken says nothing about
        // which one matched.
        tokens.iter().enumerate().fold(None, |found, (i, token)| {
            let equal = constant_time_eq(given.as_bytes(), token.as_bytes());
            found.or(equal.then_some(Credential(i)))
        })
    };
    let Some(credential) = credential else {
        let mut refusal = rpc_error(
            StatusCode::UNAUTHORIZED,
            serde_json::Value::Null,
            INVALID_REQUEST,
            "missing or wrong bearer token: send the header `Authorization: Bearer <token>` \
             with a token this server was given, or the one it printed at start",
        );
        refusal.headers_mut().insert(
            axum::http::header::WWW_AUTHENTICATE,
            axum::http::HeaderValue::from_static("Bearer"),
        );
        return refusal;
    };
    request.extensions_mut().insert(credential);
    next.run(request).await
}

/// The token of an `Authorization` header value of the Bearer scheme,
/// which RFC 7235 makes case-insensitive (`bearer`, `BEARER`), followed by
/// one or more spaces; `None` for another scheme or no token.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim_start_matches(' ');
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Compares without an early exit, so the time taken says nothing about how
/// much of a guessed token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::{bearer_token, constant_time_eq};

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for value in ["Bearer t0k", "bearer t0k", "BEARER t0k", "bEaReR   t0k"] {
            assert_eq!(bearer_token(value), Some("t0k"), "{value}");
        }
        for value in ["Basic t0k", "Bearer", "Bearer ", "Bearert0k", "t0k", ""] {
            assert_eq!(bearer_token(value), None, "{value}");
        }
    }

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
    }
}
