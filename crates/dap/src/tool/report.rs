//! What a call that waited for a stop says: the stop with its reason,
//! thread, place, source line and the top frame's locals; a panic's
//! message; or that the program still runs or has ended, with the last of
//! its output.

use std::time::Duration;

use gantry_core::Run;
use serde_json::json;

use crate::session::{Outcome, Session, Stop};
use crate::types::{ExceptionInfo, Scopes, StackFrame, Variables};

use super::inspect::{cut, place_of, render_variables, source_line, top_frame};
use super::{Debug, OUTPUT_LINES, STOP_LOCALS_CAP, VALUE_CAP};

impl Debug {
    pub(super) async fn render_outcome(
        &self,
        session: &Session,
        outcome: Outcome,
        wait: Duration,
        run: &Run,
    ) -> String {
        match outcome {
            Outcome::Stopped(stop) => self.report_stop(session, &stop, run).await,
            Outcome::StillRunning => format!(
                "still running after {:.1} s (no stop yet): `continue` to wait again, `pause` to \
                 stop it where it is, `output` to see what it printed",
                wait.as_secs_f64()
            ),
            Outcome::Over(why) => {
                let tail = last_lines(&session.output().0, OUTPUT_LINES);
                if tail.is_empty() {
                    format!("{why}; it printed nothing")
                } else {
                    format!("{why}; the end of its output:\n{tail}")
                }
            }
        }
    }

    /// Reason, thread, `file:line`, the source line and the top frame's
    /// locals: what an agent needs at every stop.
    pub(super) async fn report_stop(&self, session: &Session, stop: &Stop, run: &Run) -> String {
        let mut lines = vec![match stop.thread_id {
            Some(thread) => format!("stopped: {} in thread {thread}", stop.reason),
            None => format!("stopped: {}", stop.reason),
        }];
        let said: Vec<&str> = [stop.description.as_deref(), stop.text.as_deref()]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect();
        // A breakpoint's or a step's own words ("breakpoint 1.1") say
        // nothing more than the reason.
        if !said.is_empty() && !routine(&stop.reason) {
            lines.push(format!("  {}", said.join(": ")));
        }
        if stop.reason == "exception"
            && session.capability("supportsExceptionInfoRequest")
            && let Some(thread) = stop.thread_id
            && let Ok(info) = session
                .ask::<ExceptionInfo>("exceptionInfo", json!({"threadId": thread}))
                .await
        {
            let description = info.description.unwrap_or_default();
            if !said.iter().any(|s| s.contains(description.as_str())) {
                lines.push(format!(
                    "  exception {}: {}",
                    info.exception_id,
                    cut(&description, VALUE_CAP)
                ));
            }
        }
        if !routine(&stop.reason) {
            let tail = last_lines(&session.output().0, 5);
            if !tail.is_empty() {
                lines.push(format!("the end of its output:\n{tail}"));
            }
        }
        let frame = match top_frame(session, stop).await {
            Ok(frame) => frame,
            Err(e) => {
                lines.push(format!("(no frame: {e})"));
                return lines.join("\n");
            }
        };
        // Under lldb a Rust panic stops at the `rust_panic` breakpoint
        // set at launch, after the panic printed its message.
        if frame.name.ends_with("rust_panic") {
            lines[0] = lines[0].replacen(&stop.reason, "panic (Rust)", 1);
            let output = &session.output().0;
            lines.push(match panic_message(output) {
                Some(message) => format!("{message}\n`stack` shows where it panicked"),
                None => format!(
                    "the end of its output:\n{}\n`stack` shows where it panicked",
                    last_lines(output, 5)
                ),
            });
        }
        lines.push(format!(
            "at {} in {} (frame {})",
            place_of(&frame, run),
            frame.name,
            frame.id
        ));
        if let Some(source) = source_line(&frame) {
            lines.push(format!("  {} | {source}", frame.line));
        }
        if let Some(locals) = self.locals(session, &frame).await {
            lines.push(locals);
        }
        lines.join("\n")
    }

    pub(super) async fn locals(&self, session: &Session, frame: &StackFrame) -> Option<String> {
        let Scopes { scopes } = session
            .ask("scopes", json!({"frameId": frame.id}))
            .await
            .ok()?;
        let scope = scopes.into_iter().find(|s| !s.expensive)?;
        let reference = scope.variables_reference;
        let Variables { variables } = session
            .ask("variables", json!({"variablesReference": reference}))
            .await
            .ok()?;
        Some(render_variables(
            &variables,
            reference,
            0,
            STOP_LOCALS_CAP,
            &format!("{} (reference {reference})", scope.name),
        ))
    }
}

/// A stop that is the program's normal course under the debugger, not
/// an error it ran into.
pub(super) fn routine(reason: &str) -> bool {
    matches!(reason, "breakpoint" | "step" | "pause" | "entry" | "goto")
}

/// A Rust panic's own words in a program's output: the last `panicked at`
/// line and its message, without the backtrace that `RUST_BACKTRACE`
/// prints after it (and that would push the message out of a tail).
pub(super) fn panic_message(output: &str) -> Option<String> {
    let lines: Vec<&str> = output.lines().collect();
    let start = lines
        .iter()
        .rposition(|line| line.contains("panicked at"))?;
    let message: Vec<&str> = lines[start..]
        .iter()
        .take(6)
        .take_while(|line| !line.starts_with("stack backtrace:") && !line.starts_with("note: "))
        .copied()
        .collect();
    Some(message.join("\n"))
}

pub(super) fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_message_is_found_before_its_backtrace() {
        let output = "starting\nthread 'main' panicked at src/main.rs:4:9:\nbad input: 42\nstack \
                      backtrace:\n   0: std::panicking::begin_panic\n   1: main::main\nnote: Some \
                      details are omitted";
        assert_eq!(
            panic_message(output).unwrap(),
            "thread 'main' panicked at src/main.rs:4:9:\nbad input: 42"
        );
        assert_eq!(panic_message("no panic here"), None);
    }
}
