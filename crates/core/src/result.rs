//! What a tool call gives back: content for the model, a display for the person.

use base64::Engine;
use serde::{Deserialize, Serialize};

/// One piece of what goes back to the model. A call may return several, so a
/// single read can carry text and an image together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Part {
    /// Plain text.
    Text {
        /// The text itself.
        text: String,
    },
    /// An image, carried as raw bytes and serialised as base64.
    Image {
        /// e.g. `image/png`.
        mime_type: String,
        /// The encoded image file.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
    },
    /// Structured data a client may render or feed to code.
    Json {
        /// The value.
        value: serde_json::Value,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text { text: text.into() }
    }
}

/// What a person sees of a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Display {
    /// Markdown text.
    Markdown {
        /// The Markdown source.
        markdown: String,
    },
    /// A change to one file, as a unified diff.
    FileDiff {
        /// Workspace-relative path.
        path: String,
        /// Unified diff text.
        diff: String,
    },
}

impl Display {
    /// The display as text for a terminal.
    pub fn to_text(&self) -> String {
        match self {
            Display::Markdown { markdown } => markdown.clone(),
            Display::FileDiff { path, diff } => format!("{path}\n{diff}"),
        }
    }
}

/// The outcome of a successful call (SPEC §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// What goes back to the model.
    pub llm_content: Vec<Part>,
    /// What a person sees.
    pub return_display: Display,
    /// The job the call left running, when it started one in the
    /// background.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<Background>,
}

/// A job a call left running, reached again by calling the same tool
/// with `{"handle": handle}` (and `"kill": true` to stop it). Typed, so
/// that a caller that must stop what it started (a worker, at its end)
/// need not read it out of the text meant for a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Background {
    /// The job's handle (`bg_1`).
    pub handle: String,
}

impl ToolResult {
    /// The common case: the same text for the model and the person.
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        ToolResult::new(
            vec![Part::text(text.clone())],
            Display::Markdown { markdown: text },
        )
    }

    /// Content for the model with a separate display.
    pub fn new(llm_content: Vec<Part>, return_display: Display) -> Self {
        ToolResult {
            llm_content,
            return_display,
            background: None,
        }
    }

    /// This result, saying that the call left the job `handle` running.
    pub fn in_background(mut self, handle: impl Into<String>) -> Self {
        self.background = Some(Background {
            handle: handle.into(),
        });
        self
    }

    /// Appends text for the model and the person alike (run notices,
    /// diagnostics after a write).
    pub fn append_text(&mut self, text: &str) {
        self.llm_content.push(Part::text(text));
        match &mut self.return_display {
            Display::Markdown { markdown } => {
                markdown.push_str("\n\n");
                markdown.push_str(text);
            }
            Display::FileDiff { diff, .. } => {
                diff.push_str("\n\n");
                diff.push_str(text);
            }
        }
    }

    /// The result cut to what a model and a person can take: the text
    /// parts to [`MODEL_BUDGET`] bytes in all and the display to
    /// [`DISPLAY_BUDGET`], each cut said where it happens. The pipeline
    /// applies it to every result, so no tool can flood a context or a
    /// client (a one-line 50 MB file's diff, say), whatever it returns.
    pub fn within_budget(mut self) -> Self {
        let mut left = MODEL_BUDGET;
        for part in &mut self.llm_content {
            if let Part::Text { text } = part {
                if text.len() > left {
                    cut_to(text, left, "the result");
                }
                left = left.saturating_sub(text.len());
            }
        }
        match &mut self.return_display {
            Display::Markdown { markdown: text } | Display::FileDiff { diff: text, .. } => {
                if text.len() > DISPLAY_BUDGET {
                    cut_to(text, DISPLAY_BUDGET, "the display");
                }
            }
        }
        self
    }

    /// All text parts joined, for callers that only speak text.
    pub fn text_content(&self) -> String {
        self.llm_content
            .iter()
            .filter_map(|part| match part {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Bytes of text a model gets from one call at most.
pub const MODEL_BUDGET: usize = 256 * 1024;
/// Bytes of display a person (a client) gets from one call at most.
pub const DISPLAY_BUDGET: usize = 1024 * 1024;

/// Cuts `text` to at most `budget` bytes (on a character boundary), the
/// note saying how much was left out included in the budget.
pub fn cut_to(text: &mut String, budget: usize, what: &str) {
    if text.len() <= budget {
        return;
    }
    let total = text.len();
    let note =
        format!("\n[{what} was cut here: {total} bytes in all, over the {budget}-byte limit]");
    let mut end = budget.saturating_sub(note.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&note);
}

mod base64_bytes {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_parts_serialise_as_base64_and_back() {
        let part = Part::Image {
            mime_type: "image/png".into(),
            data: vec![0x89, b'P', b'N', b'G'],
        };
        let json = serde_json::to_value(&part).unwrap();
        assert_eq!(json["type"], "image");
        assert_eq!(json["data"], "iVBORw==");
        assert_eq!(serde_json::from_value::<Part>(json).unwrap(), part);
    }

    #[test]
    fn appended_text_reaches_model_and_person() {
        let mut result = ToolResult::text("done");
        result.append_text("[notice] server restarted");
        assert_eq!(result.text_content(), "done\n[notice] server restarted");
        assert!(
            result
                .return_display
                .to_text()
                .ends_with("server restarted")
        );
    }
}
