//! The person at the terminal: confirmations and `ask_user` on the CLI.
//!
//! Questions are written to stderr and answers read from `/dev/tty`, so
//! `gantry session` can take its JSON calls on stdin while the person
//! answers on the same terminal.

use std::io::{BufRead, BufReader, IsTerminal, Write};

use gantry_core::{Answer, Confirmation, Human, HumanError, Question, async_trait};

/// A human port on the controlling terminal.
pub struct TerminalHuman;

impl TerminalHuman {
    /// The port, when stdin and stderr are both a terminal (SPEC §10).
    pub fn if_interactive() -> Option<TerminalHuman> {
        (std::io::stdin().is_terminal() && std::io::stderr().is_terminal()).then_some(TerminalHuman)
    }
}

/// Prints `prompt` and reads one line from the terminal, off the runtime's
/// threads.
async fn prompt_line(prompt: String) -> Result<String, HumanError> {
    tokio::task::spawn_blocking(move || {
        let tty = std::fs::File::open("/dev/tty")
            .map_err(|e| HumanError::Unavailable(format!("cannot open the terminal: {e}")))?;
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "{prompt}");
        let _ = stderr.flush();
        let mut line = String::new();
        BufReader::new(tty)
            .read_line(&mut line)
            .map_err(|e| HumanError::Failed(e.to_string()))?;
        Ok(line)
    })
    .await
    .map_err(|e| HumanError::Failed(e.to_string()))?
}

#[async_trait]
impl Human for TerminalHuman {
    async fn confirm(&self, tool: &str, confirmation: &Confirmation) -> Result<bool, HumanError> {
        let mut prompt = format!("\n{tool}: {}\n", confirmation.summary);
        if let Some(details) = &confirmation.details {
            prompt.push_str(details);
            prompt.push('\n');
        }
        prompt.push_str("Run it? [y/N] ");
        let line = prompt_line(prompt).await?;
        Ok(matches!(
            line.trim().to_ascii_lowercase().as_str(),
            "y" | "yes"
        ))
    }

    async fn ask(&self, question: &Question) -> Result<Answer, HumanError> {
        let mut prompt = format!("\n{}\n", question.render());
        let hint = match (
            question.options.is_empty(),
            question.multi_select,
            question.allow_free_text,
        ) {
            (true, _, _) => "Your answer (empty to skip): ",
            (false, true, true) => {
                "Numbers separated by commas, or your own answer (empty to skip): "
            }
            (false, true, false) => "Numbers separated by commas (empty to skip): ",
            (false, false, true) => "A number, or your own answer (empty to skip): ",
            (false, false, false) => "A number (empty to skip): ",
        };
        prompt.push_str(hint);
        loop {
            let line = prompt_line(prompt.clone()).await?;
            match question.read_reply(&line) {
                Ok(answer) => return Ok(answer),
                Err(problem) => prompt = format!("{problem}. {hint}"),
            }
        }
    }
}
