//! `lsp_rename` (write): the server's workspace edit, text edits and file
//! operations alike, becomes one change set applied through the write
//! path, all or nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gantry_core::write::{Change, ChangeKind};
use gantry_core::{
    ChangeSet, Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec, Workspace,
    async_trait,
};
use lsp_types::request::Rename;
use lsp_types::{
    DocumentChangeOperation, DocumentChanges, OneOf, RenameParams, ResourceOp, TextDocumentEdit,
    TextDocumentIdentifier, TextDocumentPositionParams, TextEdit, WorkDoneProgressParams,
    WorkspaceEdit,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::convert::{Encoding, LineIndex, path_to_uri, uri_to_path};
use crate::locate::locate;
use crate::supervisor::Supervisor;

/// Parameters of `lsp_rename`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspRenameParams {
    /// The file holding the symbol, workspace-relative or absolute inside
    /// the workspace.
    pub file: String,
    /// 1-based line number of the symbol.
    #[schemars(range(min = 1))]
    pub line: u32,
    /// The symbol as written on that line.
    pub symbol: String,
    /// Which occurrence of `symbol` on the line, 1-based (default 1).
    #[schemars(range(min = 1))]
    pub occurrence: Option<u32>,
    /// The new name.
    pub new_name: String,
    /// Rename even when the server's index does not cover the whole
    /// project (still indexing, or clangd without a compile_commands.json
    /// or compile_flags.txt knowing only the open files): only the uses it knows change, and
    /// others are left broken. Default false: such a rename is refused,
    /// saying why.
    pub allow_incomplete: Option<bool>,
}

/// The `lsp_rename` tool.
pub struct LspRename {
    pub(crate) supervisor: Supervisor,
}

#[async_trait]
impl Tool for LspRename {
    type Params = LspRenameParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "lsp_rename",
            "Rename symbol",
            Tier::Write,
            "Rename a symbol everywhere it is used, as the language server understands the code \
             (not a text search): point at it with its 1-based `line` and the `symbol` text on \
             that line, give `new_name`. All files change together or none do; the result lists \
             them and any problems the rename introduced. Refused while the server's index does \
             not cover the project (it says why) unless `allow_incomplete` is true.",
        )
    }

    fn validate(&self, p: &LspRenameParams, _: &Run) -> Result<(), String> {
        if p.symbol.is_empty() {
            return Err("symbol: must not be empty".into());
        }
        if p.new_name.trim().is_empty() {
            return Err("new_name: must not be empty".into());
        }
        Ok(())
    }

    fn describe(&self, p: &LspRenameParams) -> String {
        format!(
            "rename `{}` ({}:{}) to `{}`",
            p.symbol, p.file, p.line, p.new_name
        )
    }

    async fn execute(&self, p: LspRenameParams, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let run = &ctx.run;
        let path = run.workspace().resolve(&p.file)?;
        let server = self
            .supervisor
            .server_for(&path)
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        server.refresh().await;
        let text = server.open(&path).await?;
        let shown = run.workspace().display(&path);
        let at = locate(&text, &shown, p.line, &p.symbol, p.occurrence.unwrap_or(1))
            .map_err(ToolError::Failed)?;
        // A rename that misses uses leaves the code broken: wait (bounded)
        // for an index that is still being built, then refuse one that does
        // not cover the project unless asked to go ahead.
        let deadline = tokio::time::Instant::now() + server.request_timeout();
        let caveat = server
            .wait_covered(deadline)
            .await
            .caveat()
            .map(String::from);
        if let Some(why) = &caveat
            && p.allow_incomplete != Some(true)
        {
            return Err(ToolError::failed(format!(
                "nothing was renamed: {why}; the rename could miss uses and leave the code broken. \
                 Retry in a moment, or pass allow_incomplete: true to rename the uses it knows \
                 (then check with lsp diagnostics \"*\" and grep for `{}`)",
                p.symbol
            )));
        }
        let encoding = server.client().encoding();
        let params = RenameParams {
            text_document_position: TextDocumentPositionParams {
                text_document: TextDocumentIdentifier::new(path_to_uri(&path)),
                position: LineIndex::new(&text).position(at.line, at.byte, encoding),
            },
            new_name: p.new_name.clone(),
            work_done_progress_params: WorkDoneProgressParams::default(),
        };
        let edit = server
            .client()
            .request::<Rename>(&params, server.request_timeout())
            .await
            .map_err(|e| ToolError::Failed(format!("the server refused the rename: {e}")))?;
        let Some(edit) = edit else {
            return Err(ToolError::failed(format!(
                "the server cannot rename `{}` at {shown}:{}: it returned no edit (not a renameable symbol?)",
                p.symbol, p.line
            )));
        };
        let changes = change_set(run.workspace(), &edit, encoding)?;
        if changes.is_empty() {
            return Ok(ToolResult::text(format!(
                "nothing to change: renaming `{}` to `{}` edits no file",
                p.symbol, p.new_name
            )));
        }
        let applied = run.apply(changes).await?;
        let mut out = format!(
            "renamed `{}` to `{}` in {} file(s):\n",
            p.symbol,
            p.new_name,
            applied.changes.len()
        );
        for change in &applied.changes {
            let line = match &change.kind {
                ChangeKind::Renamed { from } => {
                    format!("R {} -> {}", run.workspace().display(from), change.display)
                }
                kind => format!("{} {}", kind.letter(), change.display),
            };
            out.push_str(&line);
            out.push('\n');
        }
        if let Some(why) = caveat {
            out.push_str(&format!(
                "note: renamed with an incomplete index ({why}): uses in other files may still have the old name\n"
            ));
        }
        for note in &applied.notes {
            out.push('\n');
            out.push_str(note);
        }
        Ok(ToolResult::text(out.trim_end()))
    }
}

/// One file as the edit goes through it.
struct Pending {
    /// Where its content came from (differs after a rename).
    origin: PathBuf,
    /// Content on disk before, `None` for a file the edit creates.
    before: Option<Vec<u8>>,
    /// Content after the edits so far, `None` once deleted.
    after: Option<String>,
}

/// Turns a workspace edit into one change set, applying its operations in
/// order.
pub fn change_set(
    workspace: &Workspace,
    edit: &WorkspaceEdit,
    encoding: Encoding,
) -> Result<ChangeSet, ToolError> {
    let mut files: HashMap<PathBuf, Pending> = HashMap::new();
    let mut order: Vec<PathBuf> = Vec::new();
    let load = |files: &mut HashMap<PathBuf, Pending>,
                order: &mut Vec<PathBuf>,
                path: &Path|
     -> Result<(), ToolError> {
        if files.contains_key(path) {
            return Ok(());
        }
        let before = workspace.read(path).map_err(|e| {
            ToolError::failed(format!(
                "the rename edits {}, which cannot be read: {e}",
                workspace.display(path)
            ))
        })?;
        let after = String::from_utf8_lossy(&before).into_owned();
        files.insert(
            path.to_path_buf(),
            Pending {
                origin: path.to_path_buf(),
                before: Some(before),
                after: Some(after),
            },
        );
        order.push(path.to_path_buf());
        Ok(())
    };
    let path_of = |uri: &lsp_types::Url| -> Result<PathBuf, ToolError> {
        let path = uri_to_path(uri)
            .ok_or_else(|| ToolError::failed(format!("the rename edits {uri}, not a file")))?;
        let text = path.to_string_lossy().into_owned();
        workspace.resolve(&text).map_err(|_| {
            ToolError::failed(format!(
                "nothing was written: the rename would edit {text}, outside the workspace (a library or the standard library?)"
            ))
        })
    };
    let text_edit = |files: &mut HashMap<PathBuf, Pending>,
                     order: &mut Vec<PathBuf>,
                     uri: &lsp_types::Url,
                     edits: Vec<TextEdit>|
     -> Result<(), ToolError> {
        let path = path_of(uri)?;
        load(files, order, &path)?;
        let pending = files.get_mut(&path).expect("loaded above");
        let Some(after) = pending.after.as_mut() else {
            return Err(ToolError::failed(format!(
                "the server's edit changes {} after deleting it",
                workspace.display(&path)
            )));
        };
        *after = apply_edits(after, edits, encoding);
        Ok(())
    };
    if let Some(changes) = &edit.document_changes {
        let operations: Vec<DocumentChangeOperation> = match changes {
            DocumentChanges::Edits(edits) => edits
                .iter()
                .cloned()
                .map(DocumentChangeOperation::Edit)
                .collect(),
            DocumentChanges::Operations(operations) => operations.clone(),
        };
        for operation in operations {
            match operation {
                DocumentChangeOperation::Edit(TextDocumentEdit {
                    text_document,
                    edits,
                }) => {
                    let edits = edits
                        .into_iter()
                        .map(|e| match e {
                            OneOf::Left(edit) => edit,
                            OneOf::Right(annotated) => annotated.text_edit,
                        })
                        .collect();
                    text_edit(&mut files, &mut order, &text_document.uri, edits)?;
                }
                DocumentChangeOperation::Op(ResourceOp::Rename(rename)) => {
                    let from = path_of(&rename.old_uri)?;
                    let to = path_of(&rename.new_uri)?;
                    load(&mut files, &mut order, &from)?;
                    let pending = files.remove(&from).expect("loaded above");
                    order.retain(|p| *p != from);
                    files.insert(to.clone(), pending);
                    order.push(to);
                }
                DocumentChangeOperation::Op(ResourceOp::Create(create)) => {
                    let path = path_of(&create.uri)?;
                    files.insert(
                        path.clone(),
                        Pending {
                            origin: path.clone(),
                            before: None,
                            after: Some(String::new()),
                        },
                    );
                    order.push(path);
                }
                DocumentChangeOperation::Op(ResourceOp::Delete(delete)) => {
                    let path = path_of(&delete.uri)?;
                    load(&mut files, &mut order, &path)?;
                    if let Some(pending) = files.get_mut(&path) {
                        pending.after = None;
                    }
                }
            }
        }
    } else if let Some(changes) = &edit.changes {
        let mut uris: Vec<_> = changes.keys().collect();
        uris.sort();
        for uri in uris {
            text_edit(&mut files, &mut order, uri, changes[uri].clone())?;
        }
    }
    let mut set = ChangeSet::new();
    for path in order {
        let Some(pending) = files.remove(&path) else {
            continue;
        };
        let change = match (pending.before, pending.after) {
            (None, Some(after)) => Change::created(&path, after),
            (Some(before), None) => Change::deleted(&pending.origin, before),
            (Some(before), Some(after)) if pending.origin != path => {
                Change::renamed(&pending.origin, &path, before, after)
            }
            (Some(before), Some(after)) if before != after.as_bytes() => {
                Change::modified(&path, before, after)
            }
            _ => continue,
        };
        set.push(workspace, change)?;
    }
    Ok(set)
}

/// Applies one document's edits, which all refer to the text before any
/// of them: from the last to the first, so earlier offsets stay valid.
pub fn apply_edits(text: &str, edits: Vec<TextEdit>, encoding: Encoding) -> String {
    let index = LineIndex::new(text);
    let mut spans: Vec<(std::ops::Range<usize>, String)> = edits
        .into_iter()
        .map(|e| (index.range(e.range, encoding), e.new_text))
        .collect();
    spans.sort_by_key(|(range, _)| std::cmp::Reverse((range.start, range.end)));
    let mut out = text.to_string();
    for (range, new_text) in spans {
        out.replace_range(range, &new_text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position, Range};

    #[test]
    fn edits_apply_from_the_end_with_the_negotiated_encoding() {
        let text = "naïve = 1\nprint(naïve, naïve)\n";
        let edit = |line, start, end| TextEdit {
            range: Range::new(Position::new(line, start), Position::new(line, end)),
            new_text: "simple".into(),
        };
        // UTF-16: ï is one unit.
        let utf16 = apply_edits(
            text,
            vec![edit(0, 0, 5), edit(1, 6, 11), edit(1, 13, 18)],
            Encoding::Utf16,
        );
        assert_eq!(utf16, "simple = 1\nprint(simple, simple)\n");
        // UTF-8: ï is two bytes.
        let utf8 = apply_edits(
            text,
            vec![edit(1, 14, 20), edit(0, 0, 6), edit(1, 6, 12)],
            Encoding::Utf8,
        );
        assert_eq!(utf8, "simple = 1\nprint(simple, simple)\n");
    }
}
