//! `ask_user` (SPEC §10): the only way a run asks its operator anything.
//!
//! The tool shows numbered options (and/or takes free text) through the
//! run's [`Human`](gantry_core::Human) port and blocks until someone answers,
//! skips, or the time runs out. It is registered only where a person is
//! wired; elsewhere [`register`] withholds it with the reason, so a call by
//! name fails at once instead of blocking forever.
//!
//! ```no_run
//! # fn wire(builder: gantry_core::RunBuilder) -> gantry_core::RunBuilder {
//! gantry_ask::register(builder)
//! # }
//! ```

use std::time::Duration;

use gantry_core::{
    Answer, Choice, Question, RunBuilder, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec,
    async_trait,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// The instruction an agent gets when nobody answered: it must not stall,
/// and must not nag.
const GO_ON: &str = "Go on under a reasonable assumption, state that assumption in your next message, and do not ask this question again.";

/// The settings key this family reads.
pub const SETTINGS_SECTION: &str = "askUser";

/// Settings section `askUser`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AskSettings {
    /// How long a question waits for an answer.
    pub timeout_seconds: u64,
}

impl Default for AskSettings {
    fn default() -> Self {
        AskSettings {
            timeout_seconds: 600,
        }
    }
}

/// The family as the run assembly wires it.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("ask", register)
    .settings(&[SETTINGS_SECTION], |settings| {
        gantry_core::check_section::<AskSettings>(settings, SETTINGS_SECTION)
    });

/// Adds `ask_user` when the builder has a person wired, otherwise records
/// why it is missing.
pub fn register(builder: RunBuilder) -> RunBuilder {
    if !builder.has_human() {
        return builder.withhold(
            "ask_user",
            "no person is wired to this run (over MCP the client did not declare elicitation; on the command line stdin or stderr is not a terminal)",
        );
    }
    let settings: AskSettings = builder
        .current_settings()
        .section(SETTINGS_SECTION)
        .unwrap_or_else(|error| {
            tracing::warn!("{error}; using the default askUser settings");
            AskSettings::default()
        });
    builder.tool(AskUser {
        timeout: Duration::from_secs(settings.timeout_seconds.max(1)),
    })
}

/// The `ask_user` tool.
pub struct AskUser {
    timeout: Duration,
}

/// One option offered to the user.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptionParam {
    /// Short label, shown numbered; returned verbatim when chosen.
    #[schemars(length(min = 1))]
    pub label: String,
    /// What choosing this option means.
    pub description: Option<String>,
}

/// Parameters of `ask_user`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUserParams {
    /// The question, one sentence the user can answer without reading the
    /// conversation.
    #[schemars(length(min = 1))]
    pub question: String,
    /// Why you ask and what depends on the answer.
    pub context: Option<String>,
    /// Options the user picks from (shown numbered). Leave out for a purely
    /// free-text question.
    pub options: Option<Vec<OptionParam>>,
    /// Whether the user may type their own answer. Default: true when there
    /// are no options, false otherwise.
    pub allow_free_text: Option<bool>,
    /// Whether several options may be chosen. Default false.
    pub multi_select: Option<bool>,
}

impl AskUserParams {
    fn into_question(self) -> Question {
        let options: Vec<Choice> = self
            .options
            .unwrap_or_default()
            .into_iter()
            .map(|o| Choice {
                label: o.label,
                description: o.description,
            })
            .collect();
        Question {
            allow_free_text: self.allow_free_text.unwrap_or(options.is_empty()),
            multi_select: self.multi_select.unwrap_or(false),
            question: self.question,
            context: self.context,
            options,
        }
    }
}

#[async_trait]
impl Tool for AskUser {
    type Params = AskUserParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "ask_user",
            "Ask User",
            Tier::Read,
            "Ask the user a question and wait for the answer. Use it only when a decision truly \
             needs the user (ambiguous requirements, a choice with consequences); offer numbered \
             options where you can. If the user skips, go on under a stated assumption and do not \
             ask again.",
        )
        .asks_person()
    }

    fn validate(&self, params: &AskUserParams, _: &gantry_core::Run) -> Result<(), String> {
        let options = params.options.as_deref().unwrap_or_default();
        let mut seen = std::collections::HashSet::new();
        for (index, option) in options.iter().enumerate() {
            if option.label.trim().is_empty() {
                return Err(format!("options.{index}.label: expected a non-empty label"));
            }
            if !seen.insert(option.label.as_str()) {
                return Err(format!(
                    "options.{index}.label: `{}` appears twice; labels must be distinct",
                    option.label
                ));
            }
        }
        if options.is_empty() && params.allow_free_text == Some(false) {
            return Err(
                "allow_free_text: is false and no options were given, so the user could not answer; give options or allow free text".into(),
            );
        }
        if options.is_empty() && params.multi_select == Some(true) {
            return Err("multi_select: needs options to select from".into());
        }
        Ok(())
    }

    fn describe(&self, params: &AskUserParams) -> String {
        format!("ask the user: {}", params.question)
    }

    async fn execute(
        &self,
        params: AskUserParams,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let Some(human) = ctx.human() else {
            return Err(ToolError::failed(format!(
                "no person is wired to this run, so nobody can answer. {GO_ON}"
            )));
        };
        let question = params.into_question();
        let answer = tokio::time::timeout(self.timeout, human.ask(&question)).await;
        match answer {
            Err(_) => Err(ToolError::failed(format!(
                "the user did not answer within {} s. {GO_ON}",
                self.timeout.as_secs()
            ))),
            Ok(Err(gantry_core::HumanError::InputRequired)) => Err(ToolError::InputRequired),
            Ok(Err(error)) => Err(ToolError::failed(format!("{error}. {GO_ON}"))),
            Ok(Ok(Answer::Skipped)) => Ok(ToolResult::text(format!(
                "The user skipped the question \"{}\". {GO_ON}",
                question.question
            ))),
            Ok(Ok(Answer::Given { chosen, text })) => Ok(ToolResult::text(describe_answer(
                &question,
                &chosen,
                text.as_deref(),
            ))),
        }
    }
}

/// The answer as the model reads it: chosen options with their numbers, and
/// any typed text.
fn describe_answer(question: &Question, chosen: &[String], text: Option<&str>) -> String {
    let mut lines = Vec::new();
    for label in chosen {
        match question.options.iter().position(|o| &o.label == label) {
            Some(index) => lines.push(format!("{}. {label}", index + 1)),
            None => lines.push(label.clone()),
        }
    }
    let mut out = String::new();
    if !lines.is_empty() {
        let noun = if lines.len() == 1 {
            "option"
        } else {
            "options"
        };
        out.push_str(&format!("The user chose {noun}:\n{}", lines.join("\n")));
    }
    if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&format!("The user wrote: {text}"));
    }
    if out.is_empty() {
        out = format!("The user answered without choosing anything. {GO_ON}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(multi: bool, free: bool) -> Question {
        Question {
            question: "Which database?".into(),
            context: Some("the schema depends on it".into()),
            options: vec![
                Choice {
                    label: "Postgres".into(),
                    description: Some("relational".into()),
                },
                Choice {
                    label: "SQLite".into(),
                    description: None,
                },
            ],
            allow_free_text: free,
            multi_select: multi,
        }
    }

    #[test]
    fn replies_are_parsed_against_the_question() {
        let single = question(false, false);
        assert_eq!(
            single.read_reply("2").unwrap(),
            Answer::Given {
                chosen: vec!["SQLite".into()],
                text: None
            }
        );
        assert_eq!(single.read_reply("  ").unwrap(), Answer::Skipped);
        assert!(single.read_reply("1,2").unwrap_err().contains("one option"));
        assert!(single.read_reply("3").unwrap_err().contains("1 to 2"));
        assert!(single.read_reply("mongo").is_err());
        let multi = question(true, true);
        assert_eq!(
            multi.read_reply("2, 1 2").unwrap(),
            Answer::Given {
                chosen: vec!["SQLite".into(), "Postgres".into()],
                text: None
            }
        );
        assert_eq!(
            multi.read_reply("use mongo").unwrap(),
            Answer::Given {
                chosen: vec![],
                text: Some("use mongo".into())
            }
        );
    }

    #[test]
    fn answers_and_questions_render_numbered() {
        let q = question(true, true);
        assert_eq!(
            q.render(),
            "Which database?\n(the schema depends on it)\n  1. Postgres - relational\n  2. SQLite"
        );
        let text = describe_answer(&q, &["SQLite".into()], Some("with WAL"));
        assert_eq!(
            text,
            "The user chose option:\n2. SQLite\n\nThe user wrote: with WAL"
        );
    }
}
