//! The streamable HTTP front end as a client that writes raw requests sees
//! it, on a real loopback socket: who may call (bearer tokens, browser
//! origins), a session opened and a tool called, and broken bodies
//! answered with JSON-RPC errors.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use gantry_mcp::{Access, HttpOptions};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "a-token-of-this-test";

/// Gantry serving MCP over HTTP on a loopback port, until dropped.
struct Served {
    addr: SocketAddr,
    cancel: CancellationToken,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
    _workspace: tempfile::TempDir,
}

impl Served {
    async fn start() -> Served {
        let workspace = gantry_core::testing::workspace_with::<&str>(&[]);
        // A port the kernel chose, freed for the server to bind.
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let cancel = CancellationToken::new();
        let options = HttpOptions {
            addr,
            access: Access::Tokens(vec![TOKEN.into()]),
            allowed_origins: Vec::new(),
            idle: Duration::from_secs(60),
            cancel: cancel.clone(),
        };
        let server = tokio::spawn(gantry_mcp::serve_http(
            common::factory(workspace.path().to_path_buf()),
            options,
        ));
        // Bounded: the server binds at once or has failed.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            assert!(
                !server.is_finished(),
                "the server stopped before it listened"
            );
            assert!(
                tokio::time::Instant::now() < deadline,
                "not listening within 10 s"
            );
            tokio::task::yield_now().await;
        }
        Served {
            addr,
            cancel,
            server,
            _workspace: workspace,
        }
    }

    /// POSTs `body` to `/mcp` with `headers` (and the content negotiation
    /// every client sends); the status and the whole response.
    async fn post(&self, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n\
             Content-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        let mut stream = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response))
            .await
            .expect("a whole response within 10 s")
            .unwrap();
        let response = String::from_utf8_lossy(&response).into_owned();
        let status = response
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {response}"));
        (status, response)
    }

    async fn stop(self) {
        self.cancel.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.server)
            .await
            .expect("the server stops when cancelled")
            .unwrap()
            .unwrap();
    }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The value of header `name` in a raw response.
fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    response.split("\r\n\r\n").next()?.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

#[tokio::test]
async fn a_request_without_the_token_is_refused_and_says_how_to_send_it() {
    let served = Served::start().await;
    let initialize = common::initialize(1).to_string();
    for headers in [vec![], vec![("Authorization", bearer("guessed"))]] {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, response) = served.post(&headers, &initialize).await;
        assert_eq!(status, 401, "{response}");
        assert_eq!(
            header(&response, "WWW-Authenticate"),
            Some("Bearer"),
            "{response}"
        );
        assert!(response.contains("Authorization: Bearer"), "{response}");
    }
    served.stop().await;
}

#[tokio::test]
async fn a_page_of_another_origin_is_refused_even_with_the_token() {
    let served = Served::start().await;
    let token = bearer(TOKEN);
    let (status, response) = served
        .post(
            &[("Authorization", &token), ("Origin", "http://example.org")],
            &common::initialize(1).to_string(),
        )
        .await;
    assert_eq!(status, 403, "{response}");
    served.stop().await;
}

#[tokio::test]
async fn a_session_opens_and_a_tool_is_called_with_the_token() {
    let served = Served::start().await;
    let token = bearer(TOKEN);
    let auth = [("Authorization", token.as_str())];
    let (status, response) = served.post(&auth, &common::initialize(1).to_string()).await;
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("serverInfo"), "{response}");
    let session = header(&response, "Mcp-Session-Id")
        .expect("a session id")
        .to_string();
    let in_session = [
        ("Authorization", token.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let (status, response) = served
        .post(&in_session, &common::initialized().to_string())
        .await;
    assert_eq!(status, 202, "{response}");
    let (status, response) = served
        .post(
            &in_session,
            &common::call(2, "echo", json!({"text": "over http"})).to_string(),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    assert!(response.contains(r#""text":"over http""#), "{response}");
    served.stop().await;
}

#[tokio::test]
async fn a_body_that_is_not_json_rpc_gets_a_json_rpc_error() {
    let served = Served::start().await;
    let token = bearer(TOKEN);
    let auth = [("Authorization", token.as_str())];
    let (status, response) = served.post(&auth, r#"{"jsonrpc": "2.0", "id": 4,"#).await;
    assert_eq!(status, 400, "{response}");
    assert!(response.contains("-32700"), "{response}");
    assert!(response.contains(r#""id":4"#), "{response}");
    let (status, response) = served.post(&auth, "[]").await;
    assert_eq!(status, 400, "{response}");
    assert!(response.contains("-32600"), "{response}");
    served.stop().await;
}
