//! `gantry view`: every run on this machine, live, on a page served on
//! loopback.
//!
//! The page is three files embedded in the binary (`assets/`): plain HTML,
//! CSS and one JavaScript module, no framework and no build step, so a
//! reader needs nothing but the platform to change it, and nothing is
//! fetched at run time. The server reads the run logs
//! ([`gantry_core::runlog`]) and serves them as JSON, with new records
//! pushed as server-sent events. Every `/api` request needs the token
//! printed with the address, and the `Host` must be the loopback address
//! the server listens on (no DNS rebinding into the logs).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::Stream;
use gantry_core::runlog::read;
use serde_json::Value;

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
const STYLE: &str = include_str!("../assets/style.css");

/// What the page may load: only itself, and images from `data:` URLs
/// (the figures `eval` returned).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

struct Viewer {
    dir: PathBuf,
    token: String,
    /// The `Host` values a request may carry.
    hosts: Vec<String>,
}

/// Serves the page until `stop` resolves; prints its address first.
pub async fn serve(
    port: u16,
    dir: PathBuf,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    let port = listener.local_addr()?.port();
    let viewer = Arc::new(Viewer {
        dir,
        token: new_token()?,
        hosts: vec![format!("127.0.0.1:{port}"), format!("localhost:{port}")],
    });
    println!("http://127.0.0.1:{port}/#token={}", viewer.token);
    eprintln!(
        "gantry view: the runs in {}; stop with Ctrl-C",
        viewer.dir.display()
    );
    let api = Router::new()
        .route("/api/runs", get(runs))
        .route("/api/runs/{id}", get(run))
        .route("/api/events", get(events))
        .layer(axum::middleware::from_fn_with_state(
            viewer.clone(),
            authorized,
        ));
    let app = Router::new()
        .route(
            "/",
            get(|| async { asset(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/app.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/style.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
        .merge(api)
        .layer(axum::middleware::from_fn_with_state(
            viewer.clone(),
            loopback_host,
        ))
        .with_state(viewer);
    axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await?;
    Ok(())
}

fn new_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no random token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

async fn loopback_host(
    State(viewer): State<Arc<Viewer>>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !viewer.hosts.iter().any(|allowed| allowed == host) {
        return (
            StatusCode::MISDIRECTED_REQUEST,
            "this page is served to its loopback address only",
        )
            .into_response();
    }
    next.run(request).await
}

async fn authorized(State(viewer): State<Arc<Viewer>>, request: Request, next: Next) -> Response {
    let bearer = bearer(request.headers());
    let query = request.uri().query().and_then(|query| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("token="))
            .map(str::to_string)
    });
    let given = bearer.or(query).unwrap_or_default();
    if !same(given.as_bytes(), viewer.token.as_bytes()) {
        return (
            StatusCode::UNAUTHORIZED,
            "a token is needed: open the address `gantry view` printed, with its #token",
        )
            .into_response();
    }
    next.run(request).await
}

fn json(value: &Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    Some(value.strip_prefix("Bearer ")?.trim().to_string())
}

/// Compares without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn runs(State(viewer): State<Arc<Viewer>>) -> Response {
    let dir = viewer.dir.clone();
    match tokio::task::spawn_blocking(move || read::runs(&dir)).await {
        Ok(Ok(runs)) => json(&Value::Array(
            runs.iter().map(read::RunSummary::to_json).collect(),
        )),
        Ok(Err(error)) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

async fn run(State(viewer): State<Arc<Viewer>>, Path(id): Path<String>) -> Response {
    let Some(path) = read::path_of(&viewer.dir, &id).filter(|path| path.exists()) else {
        return (StatusCode::NOT_FOUND, format!("no run `{id}`")).into_response();
    };
    match tokio::task::spawn_blocking(move || read::records_from(&path, 0)).await {
        Ok(Ok((records, _))) => json(&Value::Array(
            records.into_iter().map(Value::Object).collect(),
        )),
        Ok(Err(error)) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

/// New records of every run as `record` events, and a run's outline as a
/// `run` event when it starts or ends. A thread follows the folder for
/// each page open; it ends when the page goes.
async fn events(State(viewer): State<Arc<Viewer>>) -> Response {
    let mut follow = match read::Follow::new(&viewer.dir, None) {
        Ok(follow) => follow,
        Err(error) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response();
        }
    };
    let (sender, receiver) = tokio::sync::mpsc::channel::<Event>(256);
    let dir = viewer.dir.clone();
    std::thread::spawn(move || {
        while !sender.is_closed() {
            let (new_runs, records) = follow.next(Duration::from_secs(5));
            let mut changed: Vec<String> = new_runs;
            let mut out = Vec::new();
            for record in records {
                if matches!(read::kind(&record), "run.start" | "run.end")
                    && let Some(id) = record.get("run").and_then(Value::as_str)
                    && !changed.iter().any(|c| c == id)
                {
                    changed.push(id.to_string());
                }
                out.push(
                    Event::default()
                        .event("record")
                        .data(Value::Object(record).to_string()),
                );
            }
            for id in changed {
                if let Ok(summary) = read::summary(&dir, &id) {
                    out.push(
                        Event::default()
                            .event("run")
                            .data(summary.to_json().to_string()),
                    );
                }
            }
            for event in out {
                if sender.blocking_send(event).is_err() {
                    return;
                }
            }
        }
    });
    Sse::new(stream(receiver))
        .keep_alive(KeepAlive::default())
        .into_response()
}

fn stream(
    mut receiver: tokio::sync::mpsc::Receiver<Event>,
) -> impl Stream<Item = Result<Event, std::convert::Infallible>> {
    futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx).map(|event| event.map(Ok)))
}
