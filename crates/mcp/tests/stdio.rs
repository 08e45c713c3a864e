//! The stdio transport as a client that writes raw lines sees it: every
//! request gets an answer, however broken the line, and the session goes
//! on serving after each.

mod common;

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

/// A raw client on one end of an in-process pipe; Gantry serves the other.
struct Raw {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
    _workspace: tempfile::TempDir,
}

impl Raw {
    async fn start() -> Raw {
        let workspace = gantry_core::testing::workspace_with::<&str>(&[]);
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server);
        let server = tokio::spawn(gantry_mcp::serve_streams(
            common::factory(workspace.path().to_path_buf()),
            server_read,
            server_write,
        ));
        let (reader, writer) = tokio::io::split(client);
        Raw {
            reader: BufReader::new(reader),
            writer,
            server,
            _workspace: workspace,
        }
    }

    async fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
        self.writer.flush().await.unwrap();
    }

    async fn send(&mut self, message: &Value) {
        self.send_bytes(message.to_string().as_bytes()).await;
    }

    /// The next message the server writes, within 10 s.
    async fn next(&mut self) -> Value {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(10), self.reader.read_line(&mut line))
            .await
            .expect("an answer within 10 s")
            .unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Opens the session: `initialize`, its answer, `initialized`.
    async fn open(&mut self) {
        self.send(&common::initialize(1)).await;
        let answer = self.next().await;
        assert_eq!(answer["id"], 1, "{answer}");
        assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
        self.send(&common::initialized()).await;
    }

    /// Ends the session as a client does, by closing its end, and expects
    /// the server to end cleanly.
    async fn close(self) {
        drop(self.writer);
        drop(self.reader);
        tokio::time::timeout(Duration::from_secs(10), self.server)
            .await
            .expect("the server ends when its client goes")
            .unwrap()
            .unwrap();
    }
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error: {answer}"))
}

#[tokio::test]
async fn a_line_that_is_not_json_is_answered_and_the_session_goes_on() {
    let mut raw = Raw::start().await;
    raw.send_bytes(br#"{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"#)
        .await;
    let answer = raw.next().await;
    assert_eq!(error_code(&answer), -32700, "{answer}");
    // The id is found in what could be read.
    assert_eq!(answer["id"], 7, "{answer}");
    raw.open().await;
    raw.close().await;
}

#[tokio::test]
async fn a_batch_and_a_message_of_the_wrong_shape_are_refused_by_id() {
    let mut raw = Raw::start().await;
    raw.open().await;
    raw.send(&json!([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]))
        .await;
    let answer = raw.next().await;
    assert_eq!(error_code(&answer), -32600, "{answer}");
    raw.send(&json!({"jsonrpc": "2.0", "id": 3, "method": 12}))
        .await;
    let answer = raw.next().await;
    assert_eq!(answer["id"], 3, "{answer}");
    assert!(error_code(&answer) < 0, "{answer}");
    // Still serving.
    raw.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}))
        .await;
    assert_eq!(raw.next().await["id"], 4);
    raw.close().await;
}

#[tokio::test]
async fn a_line_over_the_limit_is_answered_with_its_id_and_not_kept() {
    let mut raw = Raw::start().await;
    raw.open().await;
    let padding = "x".repeat(17 * 1024 * 1024);
    let huge = format!(
        r#"{{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {{"name": "echo", "arguments": {{"text": "{padding}"}}}}}}"#
    );
    raw.send_bytes(huge.as_bytes()).await;
    let answer = raw.next().await;
    assert_eq!(answer["id"], 5, "{answer}");
    assert!(error_code(&answer) < 0, "{answer}");
    raw.send(&common::call(6, "echo", json!({"text": "small"})))
        .await;
    let answer = raw.next().await;
    assert_eq!(answer["result"]["content"][0]["text"], "small", "{answer}");
    raw.close().await;
}

#[tokio::test]
async fn bad_arguments_are_a_tool_error_naming_the_parameter() {
    let mut raw = Raw::start().await;
    raw.open().await;
    raw.send(&common::call(8, "echo", json!({"text": 5}))).await;
    let answer = raw.next().await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("text"), "{text}");
    assert!(text.contains("string"), "{text}");
    raw.send(&common::call(9, "nope", json!({}))).await;
    let answer = raw.next().await;
    let text = answer.to_string();
    assert!(text.contains("unknown tool `nope`"), "{text}");
    raw.close().await;
}

#[tokio::test]
async fn a_notification_is_never_answered() {
    let mut raw = Raw::start().await;
    raw.open().await;
    // Unknown and malformed notifications: no answer may come for either,
    // so the next message must be the ping's.
    raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/whatever"}))
        .await;
    raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 3}))
        .await;
    raw.send(&json!({"jsonrpc": "2.0", "id": 10, "method": "ping"}))
        .await;
    assert_eq!(raw.next().await["id"], 10);
    raw.close().await;
}
