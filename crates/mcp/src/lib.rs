//! Gantry's MCP front end: `gantry mcp` over stdio or streamable HTTP.
//!
//! One MCP session is one [`Run`](gantry_core::Run): the session's tools,
//! live resources and notices begin with it and end with it. Every
//! `tools/call` goes through the same pipeline as the CLI and the library;
//! tool failures become `isError` results, never protocol errors.
//! Confirmations and `ask_user` travel as elicitation, in whichever form the
//! negotiated protocol version allows.
//!
//! ```no_run
//! # async fn serve(factory: gantry_mcp::RunFactory) -> anyhow::Result<()> {
//! gantry_mcp::serve_stdio(factory).await
//! # }
//! ```

#[doc(hidden)]
pub mod fuzz;
mod http;
mod human;
mod jsonrpc;
mod server;
mod stdio;

use std::sync::Arc;

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

pub use http::{Access, HttpOptions, serve_http};
pub use server::{GantryServer, RunFactory, RunFuture};

/// Serves one MCP session on stdin/stdout until the client goes away, then
/// ends the run.
pub async fn serve_stdio(factory: RunFactory) -> anyhow::Result<()> {
    let (input, output) = stdio_pipes();
    serve_streams(factory, input, output).await
}

/// Serves one MCP session of newline-delimited JSON-RPC on any pair of
/// streams (a socket, an in-process pipe), as stdio does, then ends the
/// run.
pub async fn serve_streams(
    factory: RunFactory,
    input: impl AsyncRead + Send + Unpin + 'static,
    output: impl AsyncWrite + Send + Unpin + 'static,
) -> anyhow::Result<()> {
    let shared = Arc::new(server::Shared::new(factory, "mcp stdio"));
    let server = GantryServer::new(shared);
    let run = server.run_cell();
    let service = server
        .serve(stdio::StdioTransport::new(input, output))
        .await?;
    let reason = service.waiting().await;
    tracing::info!(?reason, "MCP session ended");
    if let Some(run) = run.get() {
        run.shutdown().await;
    }
    Ok(())
}

/// stdin and stdout as the transport. When they are pipes, as with every
/// client that spawns a server, they are driven by the reactor directly:
/// tokio's own stdin and stdout hand each read and write to a blocking
/// thread, and those two thread hand-offs measured as a large share of a
/// small call's time. A terminal or a file falls back to tokio's.
fn stdio_pipes() -> (
    Box<dyn AsyncRead + Send + Unpin>,
    Box<dyn AsyncWrite + Send + Unpin>,
) {
    use std::os::fd::AsFd;
    let input: Box<dyn AsyncRead + Send + Unpin> = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let output: Box<dyn AsyncWrite + Send + Unpin> = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    };
    (input, output)
}
