//! Staged structural edits: computed by `ast_edit`, held by the run, and
//! applied or dropped by `resolve`.

use std::collections::HashMap;
use std::path::PathBuf;

/// One file of a staged edit: the content it was computed from (what
/// `resolve accept` plans against) and the new content.
#[derive(Debug, Clone)]
pub struct StagedFile {
    /// Absolute path.
    pub path: PathBuf,
    /// Workspace-relative, for output.
    pub display: String,
    /// The content captured when the edit was staged.
    pub before: String,
    /// The content after the rewrite.
    pub after: String,
    /// Replacements in this file.
    pub count: usize,
}

/// An edit waiting for `resolve`.
#[derive(Debug, Clone)]
pub struct StagedEdit {
    /// `edit_1`, `edit_2`, ... within the run.
    pub id: String,
    /// The files it changes, in path order.
    pub files: Vec<StagedFile>,
    /// The unified diff shown when it was staged.
    pub diff: String,
}

impl StagedEdit {
    /// Replacements over all files.
    pub fn count(&self) -> usize {
        self.files.iter().map(|f| f.count).sum()
    }
}

/// What became of an edit that is no longer staged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Applied.
    Accepted,
    /// Dropped on request.
    Discarded,
    /// Accept was refused (a file moved, the write failed); dropped.
    Rejected,
}

impl Resolution {
    fn word(self) -> &'static str {
        match self {
            Resolution::Accepted => "accepted",
            Resolution::Discarded => "discarded",
            Resolution::Rejected => "rejected when accepted (files had changed) and dropped",
        }
    }
}

/// The staged edits of one run. Ids are never reused, so a stale id is
/// always recognised as such.
#[derive(Debug, Default)]
pub struct Staged {
    next: u64,
    pending: HashMap<String, StagedEdit>,
    resolved: HashMap<String, Resolution>,
}

impl Staged {
    /// Stages `files` with their diff; returns the new id.
    pub fn stage(&mut self, files: Vec<StagedFile>, diff: String) -> String {
        self.next += 1;
        let id = format!("edit_{}", self.next);
        self.pending.insert(
            id.clone(),
            StagedEdit {
                id: id.clone(),
                files,
                diff,
            },
        );
        id
    }

    /// The pending edit `id`, or why there is none (a message for the
    /// model).
    pub fn get(&self, id: &str) -> Result<&StagedEdit, String> {
        if let Some(edit) = self.pending.get(id) {
            return Ok(edit);
        }
        if let Some(resolution) = self.resolved.get(id) {
            return Err(format!(
                "edit_id: `{id}` was already {}; nothing to do. Run ast_edit again to stage a new edit.",
                resolution.word()
            ));
        }
        let mut pending: Vec<&str> = self.pending.keys().map(String::as_str).collect();
        pending.sort();
        Err(format!(
            "edit_id: no staged edit `{id}` in this run; {}",
            if pending.is_empty() {
                "none is pending (staged edits end with the run). Stage one with ast_edit."
                    .to_string()
            } else {
                format!("pending: {}", pending.join(", "))
            }
        ))
    }

    /// Removes the pending edit `id`, recording what became of it.
    pub fn take(&mut self, id: &str, resolution: Resolution) -> Result<StagedEdit, String> {
        self.get(id)?;
        let edit = self
            .pending
            .remove(id)
            .ok_or_else(|| format!("edit_id: `{id}` vanished"))?;
        self.resolved.insert(id.to_string(), resolution);
        Ok(edit)
    }

    /// Marks an edit taken for accepting as rejected instead.
    pub fn reject(&mut self, id: &str) {
        self.resolved.insert(id.to_string(), Resolution::Rejected);
    }

    /// Edits waiting for `resolve`.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Drops every pending edit (the run ended).
    pub fn clear(&mut self) {
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fresh_and_resolved_ids_say_what_happened() {
        let mut staged = Staged::default();
        let first = staged.stage(Vec::new(), String::new());
        let second = staged.stage(Vec::new(), String::new());
        assert_eq!((first.as_str(), second.as_str()), ("edit_1", "edit_2"));
        staged.take(&first, Resolution::Discarded).unwrap();
        assert!(
            staged
                .get(&first)
                .unwrap_err()
                .contains("already discarded")
        );
        assert!(
            staged
                .get("edit_9")
                .unwrap_err()
                .contains("pending: edit_2")
        );
        staged.take(&second, Resolution::Accepted).unwrap();
        staged.reject(&second);
        assert!(staged.get(&second).unwrap_err().contains("rejected"));
        assert!(
            staged
                .get("edit_3")
                .unwrap_err()
                .contains("none is pending")
        );
    }
}
