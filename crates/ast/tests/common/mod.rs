//! Shared helpers: a workspace of real files in a temp dir, a run with the
//! ast family registered, and calls through the real pipeline.

#![allow(dead_code)]

use gantry_core::testing::ok;
use gantry_core::{Run, Workspace};

/// A temp workspace holding `files`, and a run over it.
pub fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, Run) {
    let dir = gantry_core::testing::workspace_with(files);
    let run = gantry_ast::register(Run::builder(Workspace::new(dir.path()).unwrap())).build();
    (dir, run)
}

/// `path:line:col` locations of an ast_grep result, in order.
pub fn locations(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let (location, _) = line.split_once(": ")?;
            (location.matches(':').count() == 2 && !location.contains(' '))
                .then(|| location.to_string())
        })
        .collect()
}

/// Stages an `ast_edit` of `pattern` into `rewrite` over the whole
/// workspace, as most edit tests start; the staged text.
pub async fn stage(run: &Run, pattern: &str, rewrite: &str) -> String {
    ok(
        run,
        "ast_edit",
        serde_json::json!({"pattern": pattern, "rewrite": rewrite}),
    )
    .await
}

/// The edit id of an ast_edit result.
pub fn edit_id(text: &str) -> String {
    let start = text.find("edit_id \"").expect("an edit id") + "edit_id \"".len();
    let end = text[start..].find('"').unwrap() + start;
    text[start..end].to_string()
}

/// Accepts the edit an `ast_edit` result staged (its text is `staged`),
/// as most edit tests do right after staging; the resolve text.
pub async fn accept(run: &Run, staged: &str) -> String {
    ok(
        run,
        "resolve",
        serde_json::json!({"edit_id": edit_id(staged), "action": "accept"}),
    )
    .await
}
