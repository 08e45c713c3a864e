//! `save_memory` (SPEC §5) and the memory files every run loads.
//!
//! A fact the agent should remember across conversations is appended under
//! a `## Gantry Added Memories` heading of `~/.gantry/GANTRY.md` (scope
//! `user`) or the workspace's `GANTRY.md` (scope `workspace`). Both files
//! are read into the run's instructions ([`instructions`]), which the MCP
//! server sends to clients as its `instructions`.
//!
//! ```no_run
//! # async fn demo(run: gantry_core::Run) {
//! run.call("save_memory", serde_json::json!({"fact": "The project uses pnpm, not npm."}))
//!     .await
//!     .unwrap();
//! # }
//! ```

use std::path::{Path, PathBuf};

use gantry_core::write::{ChangeSet, apply_in_gantry_home};
use gantry_core::{
    Run, RunBuilder, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec, Workspace,
    async_trait, settings::gantry_home,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// The heading facts are appended under.
pub const HEADING: &str = "## Gantry Added Memories";
/// The memory file's name, in `~/.gantry` and at the workspace root.
pub const FILE_NAME: &str = "GANTRY.md";

/// The family as the run assembly wires it: `save_memory`, and both
/// memory files in the run's instructions.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("memory", register)
    .instructions(|builder| {
        let text = instructions(builder.workspace().root());
        (!text.is_empty()).then_some(text)
    });

/// Adds `save_memory`.
pub fn register(builder: RunBuilder) -> RunBuilder {
    builder.tool(SaveMemory)
}

/// The text of both memory files, for the run's (and the MCP server's)
/// instructions; empty when neither exists.
pub fn instructions(root: &Path) -> String {
    [
        ("user memory", gantry_home().join(FILE_NAME)),
        ("workspace memory", root.join(FILE_NAME)),
    ]
    .into_iter()
    .filter_map(|(label, path)| {
        let text = std::fs::read_to_string(&path).ok()?;
        let text = text.trim();
        (!text.is_empty()).then(|| format!("# {label} ({})\n\n{text}", path.display()))
    })
    .collect::<Vec<_>>()
    .join("\n\n")
}

/// Where a fact is kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// `~/.gantry/GANTRY.md`: the user's preferences, for every project.
    #[default]
    User,
    /// The workspace's `GANTRY.md`: facts about this project.
    Workspace,
}

/// Parameters of `save_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveMemoryParams {
    /// One self-contained fact to remember in later conversations, e.g.
    /// "The user prefers tabs" or "Integration tests need `docker compose up`
    /// first". One line; it is stored as a bullet.
    #[schemars(length(min = 1))]
    pub fact: String,
    /// `user` (default): the user's own file, for every project.
    /// `workspace`: this project's `GANTRY.md`, shared with whoever uses it.
    pub scope: Option<Scope>,
}

/// The `save_memory` tool.
pub struct SaveMemory;

/// The fact as one bullet line: whitespace runs (newlines too) collapsed, a
/// leading bullet the model added dropped.
fn bullet(fact: &str) -> String {
    let words: Vec<&str> = fact.split_whitespace().collect();
    let line = words.join(" ");
    let line = line.trim_start_matches(['-', '*']).trim_start();
    format!("- {line}")
}

/// `text` with `bullet` appended at the end of the memories section,
/// creating the section when absent.
fn append_fact(text: &str, bullet: &str) -> String {
    let Some(heading_at) = text
        .match_indices(HEADING)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || text[..i].ends_with('\n'))
    else {
        let mut out = text.trim_end().to_string();
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        return format!("{out}{HEADING}\n\n{bullet}\n");
    };
    // The section runs to the next heading of the same or a higher level.
    let body_start = heading_at + HEADING.len();
    let section_end = text[body_start..]
        .match_indices("\n#")
        .map(|(i, _)| body_start + i + 1)
        .find(|&i| {
            let line = &text[i..];
            line.starts_with("# ") || line.starts_with("## ")
        })
        .unwrap_or(text.len());
    let (before, after) = text.split_at(section_end);
    let before = before.trim_end();
    let gap = if after.is_empty() { "\n" } else { "\n\n" };
    format!("{before}\n{bullet}{gap}{after}")
}

fn target(run: &Run, scope: Scope) -> Result<(Workspace, PathBuf), ToolError> {
    match scope {
        Scope::Workspace => Ok((
            run.workspace().clone(),
            run.workspace().root().join(FILE_NAME),
        )),
        Scope::User => {
            let home = gantry_home();
            // ~/.gantry, the folder of the user's memory file; the file
            // itself is written by the write path below.
            #[allow(clippy::disallowed_methods)]
            std::fs::create_dir_all(&home)
                .map_err(|e| ToolError::failed(format!("cannot create {}: {e}", home.display())))?;
            let workspace = Workspace::new(&home)?;
            let path = workspace.root().join(FILE_NAME);
            Ok((workspace, path))
        }
    }
}

#[async_trait]
impl Tool for SaveMemory {
    type Params = SaveMemoryParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "save_memory",
            "Save Memory",
            Tier::Write,
            "Remember one fact across conversations: a user preference (scope user) or a \
             project fact (scope workspace). Use it when the user asks you to remember \
             something, or states a lasting preference. Not for notes about the current task.",
        )
    }

    fn validate(&self, params: &SaveMemoryParams, _: &Run) -> Result<(), String> {
        if params
            .fact
            .trim()
            .trim_start_matches(['-', '*'])
            .trim()
            .is_empty()
        {
            return Err("fact: expected a non-empty fact".into());
        }
        Ok(())
    }

    fn describe(&self, params: &SaveMemoryParams) -> String {
        let scope = match params.scope.unwrap_or_default() {
            Scope::User => "user",
            Scope::Workspace => "workspace",
        };
        format!("remember ({scope}): {}", params.fact.trim())
    }

    async fn execute(
        &self,
        params: SaveMemoryParams,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let scope = params.scope.unwrap_or_default();
        let (workspace, path) = target(&ctx.run, scope)?;
        let before = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => {
                return Err(ToolError::failed(format!(
                    "cannot read {}: {e}",
                    path.display()
                )));
            }
        };
        let line = bullet(&params.fact);
        if before.lines().any(|existing| existing.trim() == line) {
            return Ok(ToolResult::text(format!(
                "Already remembered in {}: {line}",
                path.display()
            )));
        }
        let after = append_fact(&before, &line);
        let mut changes = ChangeSet::new();
        changes.plan_write(&workspace, &path, after)?;
        let mut notes = match scope {
            Scope::Workspace => ctx.run.apply(changes).await?.notes,
            Scope::User => apply_in_gantry_home(&workspace, changes).await?.notes,
        };
        let mut text = format!("Remembered in {}: {line}", path.display());
        for note in notes.drain(..) {
            text.push_str("\n\n");
            text.push_str(&note);
        }
        Ok(ToolResult::text(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_become_one_bullet_line() {
        assert_eq!(bullet("  - uses\n pnpm  "), "- uses pnpm");
        assert_eq!(bullet("* tabs"), "- tabs");
    }

    #[test]
    fn appends_inside_the_section_or_creates_it() {
        assert_eq!(append_fact("", "- a"), format!("{HEADING}\n\n- a\n"));
        assert_eq!(
            append_fact("# Notes\nkeep me\n", "- a"),
            format!("# Notes\nkeep me\n\n{HEADING}\n\n- a\n")
        );
        let with_section = format!("# Top\n\n{HEADING}\n\n- a\n\n## Other\n\ntext\n");
        assert_eq!(
            append_fact(&with_section, "- b"),
            format!("# Top\n\n{HEADING}\n\n- a\n- b\n\n## Other\n\ntext\n")
        );
        // A heading-like string inside a line is not the section.
        let quoted = format!("see `{HEADING}` below\n");
        assert!(append_fact(&quoted, "- c").ends_with(&format!("\n\n{HEADING}\n\n- c\n")));
    }
}
