//! The entry point of the `stdio` fuzz target (`fuzz/`): what a client
//! writes on Gantry's stdin, through the line reader and the judgement of
//! each message. Not an API: hidden from the docs, kept only for the
//! target.

use rmcp::transport::Transport;
use tokio::io::AsyncReadExt;

use crate::stdio::StdioTransport;

/// Reads `input` as a client's stdin to its end: each message is handed
/// on or answered, and every answer Gantry writes is one line holding a
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
        while transport.receive().await.is_some() {}
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
