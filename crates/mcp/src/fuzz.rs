//! The entry point of the `stdio` fuzz target (`fuzz/`): what a client
//! writes on Gantry's stdin, through the line reader and the judgement of
//! each message. Not an API: hidden from the docs, kept only for the
//! target.

use rmcp::model::JsonRpcMessage;
use rmcp::transport::Transport;
use tokio::io::AsyncReadExt;

use crate::stdio::StdioTransport;

/// Reads `input` as a client's stdin to its end: each message is handed
/// on or answered, and every answer written (the transport's own, and
/// this target's to each request handed on) is one line holding a
/// JSON-RPC error with a code and a message, never a panic.
pub fn stdio(input: &[u8]) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let output = runtime.block_on(async {
        let (writer, mut answers) = tokio::io::duplex(1 << 20);
        let collect = tokio::spawn(async move {
            let mut out = Vec::new();
            answers.read_to_end(&mut out).await.map(|_| out)
        });
        let mut transport = StdioTransport::new(input, writer);
        // Each request is answered, as the service would: the transport
        // holds back requests past those it is answering until it does.
        while let Some(message) = transport.receive().await {
            if let JsonRpcMessage::Request(request) = message {
                let error = rmcp::ErrorData::internal_error("answered by the fuzz target", None);
                let answer = JsonRpcMessage::error(error, Some(request.id));
                transport.send(answer).await.expect("an answer is written");
            }
        }
        drop(transport);
        collect.await.expect("the reader").expect("the answers")
    });
    for line in output
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
    {
        let answer: serde_json::Value = serde_json::from_slice(line).expect("an answer is JSON");
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert!(answer["error"]["code"].is_i64(), "{answer}");
        assert!(answer["error"]["message"].is_string(), "{answer}");
    }
}

/// The bearer token of the server the `http` target talks to.
const FUZZ_TOKEN: &str = "fuzz-token";

/// The server of the `http` target, started once per process: its
/// runtime and where it listens.
static HTTP_SERVER: std::sync::OnceLock<(tokio::runtime::Runtime, std::net::SocketAddr)> =
    std::sync::OnceLock::new();

/// One HTTP exchange with `gantry mcp --http` on /mcp, built from `input`
/// so that it is always a well-framed request (hyper's own parser is not
/// what is fuzzed here; Gantry's layers and rmcp's are): the first byte
/// picks the method and whether the bearer token, the `Accept` and the
/// `Content-Type` a client sends are there; the bytes up to the first NUL
/// are header lines; the rest is the body. Every refusal must be a
/// JSON-RPC error in a JSON body, answered within a bound.
pub fn http(factory: impl FnOnce() -> crate::RunFactory, input: &[u8]) {
    use std::io::{Read, Write};
    let (runtime, addr) = HTTP_SERVER.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        let options = crate::HttpOptions {
            addr,
            access: crate::Access::Tokens(vec![FUZZ_TOKEN.into()]),
            allowed_origins: Vec::new(),
            idle: std::time::Duration::from_secs(60),
            cancel: tokio_util::sync::CancellationToken::new(),
        };
        runtime.spawn(crate::http::serve_listener(listener, factory(), options));
        (runtime, addr)
    });
    let _entered = runtime.enter();
    let Some((&flags, rest)) = input.split_first() else {
        return;
    };
    let (headers, body) = match memchr::memchr(0, rest) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let method = ["POST", "GET", "DELETE", "PUT"][usize::from(flags & 3)];
    let mut request = format!("{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if flags & 4 == 0 {
        request.push_str(&format!("Authorization: Bearer {FUZZ_TOKEN}\r\n"));
    }
    if flags & 8 == 0 {
        request.push_str("Accept: application/json, text/event-stream\r\n");
    }
    if flags & 16 == 0 {
        request.push_str("Content-Type: application/json\r\n");
    }
    // Header lines as given, but none that would break the framing.
    for line in String::from_utf8_lossy(headers).lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        let framing = ["content-length", "transfer-encoding", "host", "connection"];
        let valid = !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && value
                .bytes()
                .all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
        if valid && !framing.contains(&name.to_ascii_lowercase().as_str()) {
            request.push_str(&format!("{name}:{value}\r\n"));
        }
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut connection = std::net::TcpStream::connect(addr).expect("the server listens");
    let bound = std::time::Duration::from_secs(1);
    connection.set_read_timeout(Some(bound)).expect("a timeout");
    connection
        .write_all(request.as_bytes())
        .and_then(|()| connection.write_all(body))
        .expect("the request is sent");
    let mut answer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let started = std::time::Instant::now();
    // To the end, or (an event stream left open) until the bound.
    while started.elapsed() < bound {
        match connection.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(error) if error.kind() == std::io::ErrorKind::TimedOut => break,
            // A signal (a child of a run ending) is no answer's fault.
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => panic!("reading the answer: {error}"),
        }
    }
    check_http_answer(&answer);
}

/// An answer's promise: a status line, and for a refusal (4xx, 5xx) a JSON
/// body holding a JSON-RPC error with a code and a message.
fn check_http_answer(answer: &[u8]) {
    let Some(end) = memchr::memmem::find(answer, b"\r\n\r\n") else {
        panic!(
            "no answer head within the bound: {:?}",
            String::from_utf8_lossy(answer)
        );
    };
    let head = String::from_utf8_lossy(&answer[..end]);
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    if status < 400 {
        return;
    }
    let lower = head.to_ascii_lowercase();
    assert!(
        lower.contains("content-type: application/json"),
        "a {status} refusal not in JSON: {head}"
    );
    let body = &answer[end + 4..];
    let error: serde_json::Value = serde_json::from_slice(body).unwrap_or_else(|e| {
        panic!(
            "a {status} refusal whose body is not JSON ({e}): {:?}",
            String::from_utf8_lossy(body)
        )
    });
    assert_eq!(error["jsonrpc"], "2.0", "{error}");
    assert!(error["error"]["code"].is_i64(), "{error}");
    assert!(error["error"]["message"].is_string(), "{error}");
}
