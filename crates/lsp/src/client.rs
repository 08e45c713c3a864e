//! Typed LSP on top of the transport: the handshake with the capabilities
//! Gantry declares, and requests and notifications by their `lsp-types`
//! type, each with a deadline and one retry on `ContentModified`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use lsp_types::notification::Notification;
use lsp_types::request::Request;
use lsp_types::{InitializeResult, ServerCapabilities};
use serde_json::{Value, json};

use crate::convert::{Encoding, path_to_uri};
use crate::transport::{RequestError, RpcError, Transport};

/// A connection to one initialized server.
pub struct Client {
    transport: Arc<Transport>,
    capabilities: ServerCapabilities,
    encoding: Encoding,
    name: String,
}

/// What Gantry tells servers it can do. Pull diagnostics and UTF-8
/// positions are offered so that servers which have them use them;
/// work-done progress so that indexing is visible; watched files with
/// dynamic registration so that a server can say which files it wants to
/// hear about.
fn client_capabilities() -> Value {
    json!({
        "general": {"positionEncodings": ["utf-8", "utf-16"]},
        "window": {"workDoneProgress": true, "showMessage": {}},
        "workspace": {
            "configuration": true,
            "workspaceFolders": true,
            "didChangeWatchedFiles": {"dynamicRegistration": true, "relativePatternSupport": true},
            "symbol": {"dynamicRegistration": false},
            "workspaceEdit": {
                "documentChanges": true,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "abort"
            },
            "diagnostics": {"refreshSupport": false}
        },
        "textDocument": {
            "synchronization": {"dynamicRegistration": false, "didSave": true, "willSave": false},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "definition": {"linkSupport": true},
            "typeDefinition": {"linkSupport": true},
            "implementation": {"linkSupport": true},
            "references": {},
            "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
            "codeAction": {
                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                    "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                    "refactor.rewrite", "source", "source.organizeImports", "source.fixAll"
                ]}},
                "isPreferredSupport": true
            },
            "rename": {"prepareSupport": false},
            "publishDiagnostics": {
                "versionSupport": true,
                "tagSupport": {"valueSet": [1, 2]},
                "codeDescriptionSupport": false
            },
            "diagnostic": {"dynamicRegistration": true, "relatedDocumentSupport": true}
        },
        "experimental": {"serverStatusNotification": true}
    })
}

impl Client {
    /// Runs the handshake within `timeout`: `initialize`, then
    /// `initialized` and whatever was queued meanwhile.
    pub async fn initialize(
        transport: Arc<Transport>,
        root: &Path,
        options: &Value,
        timeout: Duration,
    ) -> Result<Client, RequestError> {
        let uri = path_to_uri(root);
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".into());
        // No process id: a server runs in a PID namespace of its own,
        // where Gantry's pid names no process (or another one), and
        // servers built on vscode-languageserver poll the pid given here
        // every 3 s and exit when it is gone. Gantry ends its servers
        // itself (their group, their namespace's init), and a server
        // exits when its input closes.
        let params = json!({
            "processId": null,
            "clientInfo": {"name": "gantry", "version": env!("CARGO_PKG_VERSION")},
            "rootPath": root,
            "rootUri": uri,
            "workspaceFolders": [{"uri": uri, "name": name}],
            "capabilities": client_capabilities(),
            "initializationOptions": options,
            "trace": "off"
        });
        let answer = transport.request("initialize", params, timeout).await?;
        let result: InitializeResult =
            serde_json::from_value(answer).map_err(|e| unexpected("initialize", e))?;
        transport.mark_initialized();
        Ok(Client {
            transport,
            encoding: Encoding::negotiated(result.capabilities.position_encoding.as_ref()),
            capabilities: result.capabilities,
            name: result
                .server_info
                .map(|info| match info.version {
                    Some(version) => format!("{} {version}", info.name),
                    None => info.name,
                })
                .unwrap_or_default(),
        })
    }

    /// What the server said it can do.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.capabilities
    }

    /// How the server counts columns.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The server's own name and version, when it gave them.
    pub fn server_name(&self) -> &str {
        &self.name
    }

    /// The transport, for its closed state.
    pub fn transport(&self) -> &Arc<Transport> {
        &self.transport
    }

    /// Sends `R` and decodes its answer, asking once more when the server
    /// says the content was modified under it.
    pub async fn request<R: Request>(
        &self,
        params: &R::Params,
        timeout: Duration,
    ) -> Result<R::Result, RequestError> {
        let params = serde_json::to_value(params).map_err(|e| unexpected(R::METHOD, e))?;
        let mut answer = self
            .transport
            .request(R::METHOD, params.clone(), timeout)
            .await;
        if matches!(&answer, Err(e) if e.is_content_modified()) {
            answer = self.transport.request(R::METHOD, params, timeout).await;
        }
        serde_json::from_value(answer?).map_err(|e| unexpected(R::METHOD, e))
    }

    /// Sends notification `N`.
    pub fn notify<N: Notification>(&self, params: &N::Params) {
        match serde_json::to_value(params) {
            Ok(params) => self.transport.notify(N::METHOD, params),
            Err(e) => tracing::warn!("cannot encode {}: {e}", N::METHOD),
        }
    }

    /// `shutdown` then `exit`, the polite way out.
    pub async fn shutdown(&self, timeout: Duration) {
        let _ = self
            .transport
            .request("shutdown", Value::Null, timeout)
            .await;
        self.transport.notify("exit", Value::Null);
    }
}

fn unexpected(method: &str, error: serde_json::Error) -> RequestError {
    RequestError::Server {
        method: method.to_string(),
        error: RpcError {
            code: 0,
            message: format!("unexpected answer: {error}"),
        },
    }
}
