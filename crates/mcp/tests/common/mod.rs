//! What the MCP front end's tests share: a run with one small tool, and the
//! JSON-RPC messages a client opens a session with.

#![allow(dead_code)] // each test file uses a part

use std::sync::Arc;

use gantry_core::{
    Family, PlainFamily, Run, RunBuilder, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec,
    Workspace, async_trait,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// `echo`'s parameters.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EchoParams {
    /// What to say back.
    pub text: String,
}

/// Says its text back.
pub struct Echo;

#[async_trait]
impl Tool for Echo {
    type Params = EchoParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("echo", "Echo", Tier::Read, "Says the text back.")
    }

    fn describe(&self, params: &EchoParams) -> String {
        format!("echo {:?}", params.text)
    }

    async fn execute(&self, params: EchoParams, _: ToolContext) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(params.text))
    }
}

const ECHO_FAMILY: PlainFamily = PlainFamily::new("echo", |builder: RunBuilder| builder.tool(Echo));

/// A factory of runs on `root` holding `echo`, as the front ends are given.
pub fn factory(root: std::path::PathBuf) -> gantry_mcp::RunFactory {
    Arc::new(move |_human, _origin| {
        let root = root.clone();
        Box::pin(async move {
            let builder = Run::builder(Workspace::new(&root)?);
            Ok(ECHO_FAMILY
                .wire(builder)
                .await
                .map_err(|e| anyhow::anyhow!(e))?
                .build())
        })
    })
}

/// A handshake-era `initialize` request with `id`.
pub fn initialize(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "gantry-mcp-tests", "version": "1"}
        }
    })
}

/// The notification that ends the handshake.
pub fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// A `tools/call` of `name` with `arguments`.
pub fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}
    })
}
