//! The `lsp` tool (read): every action of SPEC §6.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gantry_core::{Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec, async_trait};
use lsp_types::request::{
    CodeActionRequest, DocumentSymbolRequest, GotoDefinition, GotoImplementation,
    GotoTypeDefinition, HoverRequest, References, WorkspaceSymbolRequest,
};
use lsp_types::{
    CodeActionContext, CodeActionOrCommand, CodeActionParams, DocumentSymbolParams,
    GotoDefinitionParams, HoverParams, OneOf, PartialResultParams, Range, ReferenceContext,
    ReferenceParams, TextDocumentIdentifier, TextDocumentPositionParams, WorkDoneProgressParams,
    WorkspaceSymbolParams, WorkspaceSymbolResponse,
};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::time::Instant;

use crate::convert::{LineIndex, path_to_uri, uri_to_path};
use crate::diagnostics::{self, Diagnostics, relevant, render_file};
use crate::locate::{Located, is_ident, locate};
use crate::render::{self, Sources, Spot};
use crate::server::{Coverage, Server};
use crate::supervisor::{Supervisor, Unavailable};
use crate::transport::RequestError;

/// What to ask the language server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Errors and warnings of `file`, or of the whole project with `file: "*"`.
    Diagnostics,
    /// Where the symbol is declared.
    Definition,
    /// Where the symbol's type is declared.
    TypeDefinition,
    /// Concrete implementations of an interface, trait or abstract method.
    Implementation,
    /// Every use of the symbol (at most 50 shown).
    References,
    /// Signature and doc comment of the symbol.
    Hover,
    /// Workspace symbols matching `query` (at most 100), or the outline of `file` (at most 200).
    Symbols,
    /// Quick fixes and refactorings the server offers at the symbol (listed, not applied).
    CodeActions,
    /// Which servers run, for which roots, and why others do not.
    Status,
    /// Restart the server serving `file`, or every server without `file`.
    Reload,
}

impl Action {
    fn navigates(self) -> bool {
        matches!(
            self,
            Action::Definition
                | Action::TypeDefinition
                | Action::Implementation
                | Action::References
                | Action::Hover
                | Action::CodeActions
        )
    }

    fn name(self) -> &'static str {
        match self {
            Action::Diagnostics => "diagnostics",
            Action::Definition => "definition",
            Action::TypeDefinition => "type_definition",
            Action::Implementation => "implementation",
            Action::References => "references",
            Action::Hover => "hover",
            Action::Symbols => "symbols",
            Action::CodeActions => "code_actions",
            Action::Status => "status",
            Action::Reload => "reload",
        }
    }
}

/// Parameters of `lsp`. A position is a 1-based `line` plus a `symbol`
/// that appears on that line, never a column.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspParams {
    /// What to ask: diagnostics, definition, type_definition, implementation,
    /// references, hover, symbols, code_actions, status or reload.
    pub action: Action,
    /// The file, workspace-relative (`src/app.py`) or absolute inside the
    /// workspace. For diagnostics, `"*"` means the whole project.
    pub file: Option<String>,
    /// 1-based line number of the symbol, as in read_file's numbered output.
    #[schemars(range(min = 1))]
    pub line: Option<u32>,
    /// The symbol as written on that line (e.g. `parse_config`, or `x` in
    /// `self.x`). Required for definition, type_definition, implementation,
    /// references, hover and code_actions.
    pub symbol: Option<String>,
    /// Which occurrence of `symbol` on the line, 1-based (default 1).
    #[schemars(range(min = 1))]
    pub occurrence: Option<u32>,
    /// For symbols: a name or part of one to search the whole workspace for.
    pub query: Option<String>,
}

/// The `lsp` tool.
pub struct Lsp {
    pub(crate) supervisor: Supervisor,
    /// Where asked diagnostics go, as the baseline of the next write.
    pub(crate) diagnostics: Arc<Diagnostics>,
}

impl Lsp {
    /// The answer about `path` of one `server`: its diagnostics, outline
    /// or a navigation at the symbol `p` points at.
    async fn ask_file(
        &self,
        p: &LspParams,
        server: &Arc<Server>,
        path: &Path,
    ) -> Result<String, ToolError> {
        let sup = &self.supervisor;
        server.refresh().await;
        let text = server.open(path).await?;
        if p.action != Action::Diagnostics {
            sup.opened(server, path, &text);
        }
        let shown = sup.display(path);
        match p.action {
            Action::Diagnostics => Ok(file_diagnostics(sup, &self.diagnostics, server, path).await),
            Action::Symbols => document_symbols(server, path, &shown).await,
            _ => {
                let at = locate(
                    &text,
                    &shown,
                    p.line.unwrap_or(1),
                    p.symbol.as_deref().unwrap_or(""),
                    p.occurrence.unwrap_or(1),
                )
                .map_err(ToolError::Failed)?;
                let ask = Ask {
                    sup,
                    server,
                    path,
                    text: &text,
                    at: &at,
                    symbol: p.symbol.as_deref().unwrap_or(""),
                    shown: &shown,
                };
                ask.navigate(p.action).await
            }
        }
    }
}

#[async_trait]
impl Tool for Lsp {
    type Params = LspParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "lsp",
            "Language server",
            Tier::Read,
            "Ask the project's language server (rust-analyzer, basedpyright, \
             typescript-language-server, clangd, gopls, dart) about code: diagnostics, definition, \
             type_definition, implementation, references, hover, symbols, code_actions; status \
             and reload manage the servers. Point at a symbol with its 1-based `line` and the \
             `symbol` text as it appears on that line (plus `occurrence` if it appears more than \
             once); never guess columns. Results give workspace-relative `path:line` with the \
             source line.",
        )
    }

    fn validate(&self, p: &LspParams, _: &Run) -> Result<(), String> {
        let action = p.action.name();
        if p.action.navigates() {
            if p.file.is_none() {
                return Err(format!("file: required for {action}"));
            }
            if p.line.is_none() {
                return Err(format!(
                    "line: required for {action}; give the 1-based line the symbol is on"
                ));
            }
            if p.symbol.as_deref().is_none_or(str::is_empty) {
                return Err(format!(
                    "symbol: required for {action}; give the symbol's text as it appears on line {} (positions are never guessed)",
                    p.line.unwrap_or(1)
                ));
            }
        }
        match p.action {
            Action::Diagnostics if p.file.is_none() => Err(
                "file: required for diagnostics; give a file, or \"*\" for the whole project"
                    .into(),
            ),
            Action::Symbols if p.file.is_none() && p.query.is_none() => Err(
                "query: symbols needs a `query` (workspace search) or a `file` (its outline)"
                    .into(),
            ),
            _ => Ok(()),
        }
    }

    fn describe(&self, p: &LspParams) -> String {
        let mut line = format!("lsp {}", p.action.name());
        if let Some(file) = &p.file {
            line.push_str(&format!(" {file}"));
            if let Some(n) = p.line {
                line.push_str(&format!(":{n}"));
            }
        }
        if let Some(symbol) = &p.symbol {
            line.push_str(&format!(" `{symbol}`"));
        }
        if let Some(query) = &p.query {
            line.push_str(&format!(" query `{query}`"));
        }
        line
    }

    async fn execute(&self, p: LspParams, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let run = &ctx.run;
        let sup = &self.supervisor;
        let text = match p.action {
            Action::Status => sup.status().await,
            Action::Reload => {
                let file = p
                    .file
                    .as_deref()
                    .map(|f| run.workspace().resolve(f))
                    .transpose()?;
                sup.reload(file.as_deref()).await.map_err(unavailable)?
            }
            Action::Diagnostics if p.file.as_deref() == Some("*") => {
                crate::checker::project_diagnostics(sup, run).await
            }
            Action::Symbols if p.query.is_some() && p.file.is_none() => {
                workspace_symbols(sup, p.query.as_deref().unwrap_or("")).await?
            }
            _ => {
                let given = p.file.clone().unwrap_or_default();
                let path = run.workspace().resolve(&given)?;
                if !path.is_file() {
                    return Err(ToolError::failed(format!(
                        "file: `{given}` is not a file in the workspace"
                    )));
                }
                let server = match sup.server_for(&path).await {
                    Ok(server) => server,
                    Err(Unavailable::NoServer(why)) => return Ok(ToolResult::text(why)),
                    Err(down) => return Err(unavailable(down)),
                };
                match self.ask_file(&p, &server, &path).await {
                    // Killed before it answered: the question goes once to
                    // the server started in its place (the run was told of
                    // the crash), which a read may ask again safely.
                    Err(_) if server.gone().is_some() => {
                        let restarted = sup.server_for(&path).await.map_err(unavailable)?;
                        self.ask_file(&p, &restarted, &path).await?
                    }
                    answer => answer?,
                }
            }
        };
        Ok(ToolResult::text(text))
    }
}

fn unavailable(reason: Unavailable) -> ToolError {
    ToolError::Failed(reason.to_string())
}

fn failed(error: RequestError) -> ToolError {
    ToolError::Failed(format!("the language server could not answer: {error}"))
}

/// One navigation request at a located symbol.
struct Ask<'a> {
    sup: &'a Supervisor,
    server: &'a Arc<Server>,
    path: &'a Path,
    text: &'a str,
    at: &'a Located,
    symbol: &'a str,
    shown: &'a str,
}

impl Ask<'_> {
    fn position(&self) -> TextDocumentPositionParams {
        let index = LineIndex::new(self.text);
        TextDocumentPositionParams {
            text_document: TextDocumentIdentifier::new(path_to_uri(self.path)),
            position: index.position(self.at.line, self.at.byte, self.server.client().encoding()),
        }
    }

    fn here(&self) -> String {
        format!("{}:{}", self.shown, self.at.line + 1)
    }

    async fn navigate(&self, action: Action) -> Result<String, ToolError> {
        let timeout = self.server.request_timeout();
        let deadline = Instant::now() + timeout;
        // Asked once; if the answer is empty while the server is still
        // indexing, asked again when it is done (within the deadline).
        let mut retried = false;
        loop {
            let answer = self.ask(action, timeout).await?;
            if let Some(text) = answer {
                return Ok(self.with_caveat(action, text).await);
            }
            if retried || self.server.observed().indexing().is_none() {
                break;
            }
            retried = true;
            self.server.wait_idle(deadline).await;
        }
        Ok(self.empty(action).await)
    }

    /// A references or implementations answer, with why it may be
    /// incomplete when the server's index does not cover the project
    /// (still indexing, or clangd knowing only the open files).
    async fn with_caveat(&self, action: Action, text: String) -> String {
        if !matches!(action, Action::References | Action::Implementation) {
            return text;
        }
        match self.server.coverage().await.caveat() {
            Some(why) => format!("{text}\nnote: this answer may be incomplete: {why}."),
            None => text,
        }
    }

    /// `None` when the server's answer is empty.
    async fn ask(
        &self,
        action: Action,
        timeout: std::time::Duration,
    ) -> Result<Option<String>, ToolError> {
        let client = self.server.client();
        let position = self.position();
        let display = |p: &Path| self.sup.display(p);
        let mut sources = Sources::new(&display);
        let goto = GotoDefinitionParams {
            text_document_position_params: position.clone(),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        };
        let symbol = self.symbol;
        let spots: Vec<Spot> = match action {
            Action::Definition => render::definition_spots(
                client
                    .request::<GotoDefinition>(&goto, timeout)
                    .await
                    .map_err(failed)?,
            ),
            Action::TypeDefinition => render::definition_spots(
                client
                    .request::<GotoTypeDefinition>(&goto, timeout)
                    .await
                    .map_err(failed)?,
            ),
            Action::Implementation => render::definition_spots(
                client
                    .request::<GotoImplementation>(&goto, timeout)
                    .await
                    .map_err(failed)?,
            ),
            Action::References => {
                let params = ReferenceParams {
                    text_document_position: position,
                    work_done_progress_params: WorkDoneProgressParams::default(),
                    partial_result_params: PartialResultParams::default(),
                    context: ReferenceContext {
                        include_declaration: true,
                    },
                };
                render::location_spots(
                    client
                        .request::<References>(&params, timeout)
                        .await
                        .map_err(failed)?
                        .unwrap_or_default(),
                )
            }
            Action::Hover => {
                let params = HoverParams {
                    text_document_position_params: position,
                    work_done_progress_params: WorkDoneProgressParams::default(),
                };
                let hover = client
                    .request::<HoverRequest>(&params, timeout)
                    .await
                    .map_err(failed)?;
                let text = hover.map(|h| render::hover(h.contents)).unwrap_or_default();
                return Ok((!text.is_empty())
                    .then(|| format!("hover of `{symbol}` at {}:\n{text}", self.here())));
            }
            Action::CodeActions => return self.code_actions(timeout).await,
            _ => Vec::new(),
        };
        if spots.is_empty() {
            return Ok(None);
        }
        let (title, noun, cap) = match action {
            Action::Definition => (
                format!("definition of `{symbol}` ({})", self.here()),
                "definition",
                usize::MAX,
            ),
            Action::TypeDefinition => (
                format!("type of `{symbol}` ({}) is declared at", self.here()),
                "declaration",
                usize::MAX,
            ),
            Action::Implementation => (
                format!("implementations of `{symbol}` ({})", self.here()),
                "implementation",
                usize::MAX,
            ),
            _ => (
                format!("references to `{symbol}` ({})", self.here()),
                "reference",
                render::REFERENCES_CAP,
            ),
        };
        Ok(Some(render::spots(&mut sources, &title, noun, spots, cap)))
    }

    async fn code_actions(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Option<String>, ToolError> {
        let index = LineIndex::new(self.text);
        let encoding = self.server.client().encoding();
        let range = Range::new(
            index.position(self.at.line, self.at.byte, encoding),
            index.position(self.at.line, self.at.end, encoding),
        );
        let line = self.at.line as u32;
        let on_line = self
            .server
            .observed()
            .published(self.path)
            .map(|p| p.items)
            .unwrap_or_default()
            .into_iter()
            .filter(|d| d.range.start.line <= line && d.range.end.line >= line)
            .collect();
        let params = CodeActionParams {
            text_document: TextDocumentIdentifier::new(path_to_uri(self.path)),
            range,
            context: CodeActionContext {
                diagnostics: on_line,
                only: None,
                trigger_kind: None,
            },
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        };
        let actions = self
            .server
            .client()
            .request::<CodeActionRequest>(&params, timeout)
            .await
            .map_err(failed)?
            .unwrap_or_default();
        if actions.is_empty() {
            return Ok(None);
        }
        let mut out = format!(
            "code actions at `{}` ({}); listed, not applied (make the change with an editing tool):\n",
            self.symbol,
            self.here()
        );
        for (n, action) in actions.iter().enumerate() {
            let line = match action {
                CodeActionOrCommand::Command(command) => format!("{} (command)", command.title),
                CodeActionOrCommand::CodeAction(action) => {
                    let kind = action
                        .kind
                        .as_ref()
                        .map(|k| format!("[{}] ", k.as_str()))
                        .unwrap_or_default();
                    let preferred = if action.is_preferred == Some(true) {
                        " (preferred)"
                    } else {
                        ""
                    };
                    let files = action
                        .edit
                        .as_ref()
                        .and_then(|e| e.changes.as_ref())
                        .map(|c| {
                            let names: Vec<String> = c
                                .keys()
                                .filter_map(uri_to_path)
                                .map(|p| self.sup.display(&p))
                                .collect();
                            format!(" — edits {}", names.join(", "))
                        })
                        .unwrap_or_default();
                    format!("{kind}{}{preferred}{files}", action.title)
                }
            };
            out.push_str(&format!("{}. {line}\n", n + 1));
        }
        Ok(Some(out.trim_end().to_string()))
    }

    /// Says why an answer is empty: still indexing, not on an identifier,
    /// or none found (in the files the server knows, when that is not the
    /// whole project).
    async fn empty(&self, action: Action) -> String {
        let what = match action {
            Action::Definition => "definition",
            Action::TypeDefinition => "type definition",
            Action::Implementation => "implementations",
            Action::References => "references",
            Action::Hover => "hover information",
            _ => "code actions",
        };
        let coverage = self.server.coverage().await;
        if let Coverage::Busy(why) = &coverage {
            return format!("no {what} yet: {why}; ask again in a moment");
        }
        let on_ident = self.at.text[self.at.byte..]
            .chars()
            .next()
            .is_some_and(is_ident);
        if !on_ident {
            return format!(
                "no {what}: `{}` on line {} is not on an identifier; give the name itself as `symbol`. Line {}: `{}`",
                self.symbol,
                self.at.line + 1,
                self.at.line + 1,
                self.at.text.trim()
            );
        }
        let found = format!(
            "none found: the server has no {what} for `{}` at {}",
            self.symbol,
            self.here()
        );
        match coverage {
            Coverage::OpenFiles(why)
                if matches!(action, Action::References | Action::Implementation) =>
            {
                format!("{found}\nnote: this answer may be incomplete: {why}.")
            }
            _ => found,
        }
    }
}

async fn file_diagnostics(
    sup: &Supervisor,
    state: &Diagnostics,
    server: &Server,
    path: &Path,
) -> String {
    let deadline = Instant::now() + server.request_timeout();
    let shown = sup.display(path);
    let Some(items) = diagnostics::current(server, path, deadline).await else {
        return match server.observed().indexing() {
            Some(task) => {
                format!("no diagnostics for {shown} yet: the server is still indexing ({task})")
            }
            None => format!(
                "the server sent no diagnostics for {shown} within {} s",
                server.request_timeout().as_secs()
            ),
        };
    };
    state.record(path, &items);
    let problems: Vec<_> = items.into_iter().filter(relevant).collect();
    if problems.is_empty() {
        return format!("none found: no errors or warnings in {shown}");
    }
    format!(
        "{} problem(s) in {shown}:\n{}",
        problems.len(),
        render_file(sup, path, "", &problems).trim_end()
    )
}

async fn document_symbols(server: &Server, path: &Path, shown: &str) -> Result<String, ToolError> {
    let params = DocumentSymbolParams {
        text_document: TextDocumentIdentifier::new(path_to_uri(path)),
        work_done_progress_params: WorkDoneProgressParams::default(),
        partial_result_params: PartialResultParams::default(),
    };
    let answer = server
        .client()
        .request::<DocumentSymbolRequest>(&params, server.request_timeout())
        .await
        .map_err(failed)?;
    let symbols = crate::convert::symbol_tree(answer);
    if symbols.is_empty() {
        return Ok(match server.observed().indexing() {
            Some(task) => {
                format!("no symbols for {shown} yet: the server is still indexing ({task})")
            }
            None => format!("none found: the server lists no symbols in {shown}"),
        });
    }
    Ok(render::document_symbols(shown, &symbols))
}

async fn workspace_symbols(sup: &Supervisor, query: &str) -> Result<String, ToolError> {
    let mut servers = sup.running();
    if servers.is_empty() {
        return Ok(
            "no server for this language is running yet: workspace symbol search needs a running server; \
             touch a file of the language first (e.g. lsp symbols with `file`), then search again"
                .into(),
        );
    }
    servers.sort_by_key(|s| s.spec.id.clone());
    let mut spots: Vec<(PathBuf, u32, String)> = Vec::new();
    let mut caveats = Vec::new();
    for server in servers {
        server.refresh().await;
        let params = WorkspaceSymbolParams {
            query: query.to_string(),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        };
        let answer = server
            .client()
            .request::<WorkspaceSymbolRequest>(&params, server.request_timeout())
            .await
            .map_err(failed)?;
        match answer {
            Some(WorkspaceSymbolResponse::Flat(items)) => {
                for s in items {
                    if let Some(path) = uri_to_path(&s.location.uri) {
                        spots.push((
                            path,
                            s.location.range.start.line,
                            format!("{} {}", render::kind(s.kind), s.name),
                        ));
                    }
                }
            }
            Some(WorkspaceSymbolResponse::Nested(items)) => {
                for s in items {
                    let (uri, line) = match s.location {
                        OneOf::Left(location) => (location.uri, location.range.start.line),
                        OneOf::Right(location) => (location.uri, 0),
                    };
                    if let Some(path) = uri_to_path(&uri) {
                        spots.push((path, line, format!("{} {}", render::kind(s.kind), s.name)));
                    }
                }
            }
            None => {}
        }
        if let Some(why) = server.coverage().await.caveat() {
            caveats.push(why.to_string());
        }
    }
    let caveat = if caveats.is_empty() {
        String::new()
    } else {
        format!(
            "\nnote: this answer may be incomplete: {}.",
            caveats.join("; ")
        )
    };
    if spots.is_empty() {
        return Ok(format!(
            "none found: no workspace symbol matches `{query}`{caveat}"
        ));
    }
    let total = spots.len();
    let cap = render::WORKSPACE_SYMBOLS_CAP;
    spots.truncate(cap);
    let count = if total > cap {
        format!("{cap} of {total} shown; the cap is {cap}")
    } else {
        format!("{total}")
    };
    let mut out =
        format!("workspace symbols matching `{query}` ({count}), as path:line: kind name\n");
    for (path, line, what) in spots {
        out.push_str(&format!("{}:{}: {what}\n", sup.display(&path), line + 1));
    }
    Ok(format!("{}{caveat}", out.trim_end()))
}
