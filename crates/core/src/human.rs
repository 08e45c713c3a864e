//! The port to a person: confirmations before a tool runs, and `ask_user`.
//!
//! The core only knows this trait; front ends implement it (MCP elicitation,
//! a terminal prompt, a library caller's own UI). A run without a port has
//! no human wired, and anything that needs one fails closed.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What to show a person before a tool runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// One line: what this call will do.
    pub summary: String,
    /// More to look at, such as the diff of an edit.
    pub details: Option<String>,
}

/// One choice of a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// Short label, shown numbered.
    pub label: String,
    /// What choosing it means.
    pub description: Option<String>,
}

/// A question for the operator (SPEC §10).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// What to ask.
    pub question: String,
    /// Why, and what depends on the answer.
    pub context: Option<String>,
    /// Numbered options.
    pub options: Vec<Choice>,
    /// Whether a typed answer is accepted.
    pub allow_free_text: bool,
    /// Whether several options may be chosen.
    pub multi_select: bool,
}

impl Question {
    /// Reads a typed reply against a question: numbers pick options (several,
    /// separated by commas or spaces, when multi-select), anything else is free
    /// text where allowed. An empty reply is a skip.
    pub fn read_reply(&self, reply: &str) -> Result<Answer, String> {
        let question = self;
        let reply = reply.trim();
        if reply.is_empty() {
            return Ok(Answer::Skipped);
        }
        let tokens: Vec<&str> = reply
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
            .collect();
        let numbers: Option<Vec<usize>> = tokens.iter().map(|t| t.parse().ok()).collect();
        if let Some(numbers) = numbers.filter(|_| !question.options.is_empty()) {
            if numbers.len() > 1 && !question.multi_select {
                return Err("choose one option".into());
            }
            let mut chosen = Vec::new();
            for number in numbers {
                let option = number
                    .checked_sub(1)
                    .and_then(|i| question.options.get(i))
                    .ok_or_else(|| {
                        format!("choose a number from 1 to {}", question.options.len())
                    })?;
                if !chosen.contains(&option.label) {
                    chosen.push(option.label.clone());
                }
            }
            return Ok(Answer::Given { chosen, text: None });
        }
        if question.allow_free_text {
            return Ok(Answer::Given {
                chosen: Vec::new(),
                text: Some(reply.to_string()),
            });
        }
        Err(format!(
            "answer with an option number from 1 to {}",
            question.options.len()
        ))
    }

    /// The question as numbered text, the same on a terminal and in a
    /// client's dialog.
    pub fn render(&self) -> String {
        let mut out = self.question.clone();
        if let Some(context) = &self.context {
            out.push_str(&format!("\n({context})"));
        }
        for (index, option) in self.options.iter().enumerate() {
            out.push_str(&format!("\n  {}. {}", index + 1, option.label));
            if let Some(description) = &option.description {
                out.push_str(&format!(" - {description}"));
            }
        }
        out
    }
}

/// What the person answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Answer {
    /// Options chosen (labels) and/or text typed.
    Given {
        /// Labels of the chosen options, in the order offered.
        chosen: Vec<String>,
        /// Free text, when allowed and typed.
        text: Option<String>,
    },
    /// The person declined or cancelled.
    Skipped,
}

/// Why a person could not be reached.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HumanError {
    /// No person is reachable this way (no terminal, client cannot elicit).
    #[error("no person can be asked: {0}")]
    Unavailable(String),
    /// The front end must hand the question to its client and be called
    /// again with the answer (MCP's input-required result). The call is
    /// suspended, not failed; nothing has run yet.
    #[error("input required from the client")]
    InputRequired,
    /// The channel to the person broke.
    #[error("asking failed: {0}")]
    Failed(String),
}

/// A way to reach the person behind a surface.
#[async_trait]
pub trait Human: Send + Sync {
    /// Asks whether the call may proceed. `Ok(false)` is a refusal
    /// (declined or cancelled).
    async fn confirm(&self, tool: &str, confirmation: &Confirmation) -> Result<bool, HumanError>;

    /// Asks a question and waits for the answer.
    async fn ask(&self, question: &Question) -> Result<Answer, HumanError>;
}
