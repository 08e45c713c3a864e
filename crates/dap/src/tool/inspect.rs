//! The ops that look at a stopped program: threads, the stack, scopes,
//! variables, evaluation, and what it printed; each list capped, saying
//! how to see the rest.

use std::path::Path;

use gantry_core::Run;
use gantry_core::workspace::read_regular;
use serde_json::json;

use crate::session::{Session, State, Stop};
use crate::types::{Evaluated, Scopes, StackFrame, StackTrace, Threads, Variable, Variables};

use super::{Debug, DebugParams, EVALUATE_CAP, STACK_CAP, VALUE_CAP, VARIABLES_CAP};

impl Debug {
    pub(super) async fn threads(&self) -> Result<String, String> {
        let session = self.debugger.live().await?;
        let Threads { threads } = session.ask("threads", json!({})).await?;
        if threads.is_empty() {
            return Ok("no threads".into());
        }
        Ok(threads
            .iter()
            .map(|t| format!("thread {}: {}", t.id, t.name))
            .collect::<Vec<_>>()
            .join("\n"))
    }

    pub(super) async fn stack(&self, p: &DebugParams, run: &Run) -> Result<String, String> {
        let session = self.debugger.live().await?;
        let stop = stopped(&session, "stack")?;
        let thread = match p.thread_id.or(stop.thread_id) {
            Some(thread) => thread,
            None => first_thread(&session).await?,
        };
        let offset = p.offset.unwrap_or(0) as usize;
        let trace: StackTrace = session
            .ask(
                "stackTrace",
                json!({"threadId": thread, "startFrame": offset, "levels": STACK_CAP}),
            )
            .await?;
        let frames = &trace.stack_frames;
        let mut lines = vec![format!(
            "thread {thread}, frame ids for `scopes` and `evaluate`:"
        )];
        for frame in frames.iter().take(STACK_CAP) {
            lines.push(format!(
                "  frame {}: {} at {}",
                frame.id,
                frame.name,
                place_of(frame, run)
            ));
        }
        let shown = offset + frames.len().min(STACK_CAP);
        match trace.total_frames.map(|t| t as usize) {
            Some(total) if total > shown => lines.push(format!(
                "{} more frame(s) not shown: `stack` with offset {shown} for the next {STACK_CAP}",
                total - shown
            )),
            None if frames.len() >= STACK_CAP => lines.push(format!(
                "more frames may follow: `stack` with offset {shown} for the next {STACK_CAP}"
            )),
            _ => {}
        }
        Ok(lines.join("\n"))
    }

    pub(super) async fn scopes(&self, p: &DebugParams) -> Result<String, String> {
        let session = self.debugger.live().await?;
        let stop = stopped(&session, "scopes")?;
        let frame = match p.frame_id {
            Some(frame) => frame,
            None => top_frame(&session, &stop).await?.id,
        };
        let Scopes { scopes } = session.ask("scopes", json!({"frameId": frame})).await?;
        if scopes.is_empty() {
            return Ok(format!("frame {frame} has no scopes"));
        }
        let mut lines = vec![format!(
            "scopes of frame {frame} (`variables` with the reference):"
        )];
        for scope in scopes {
            let mut line = format!("  {}: reference {}", scope.name, scope.variables_reference);
            if let Some(count) = scope.named_variables {
                line.push_str(&format!(", {count} variables"));
            }
            if scope.expensive {
                line.push_str(" (expensive)");
            }
            lines.push(line);
        }
        Ok(lines.join("\n"))
    }

    pub(super) async fn variables(&self, p: &DebugParams) -> Result<String, String> {
        let session = self.debugger.live().await?;
        stopped(&session, "variables")?;
        let reference = p.reference.unwrap_or_default();
        let offset = p.offset.unwrap_or(0) as usize;
        let Variables { variables } = session
            .ask("variables", json!({"variablesReference": reference}))
            .await?;
        Ok(render_variables(
            &variables,
            reference,
            offset,
            VARIABLES_CAP,
            &format!("variables of reference {reference}"),
        ))
    }

    pub(super) async fn evaluate(&self, p: &DebugParams) -> Result<String, String> {
        let session = self.debugger.live().await?;
        let stop = stopped(&session, "evaluate")?;
        let frame = match p.frame_id {
            Some(frame) => frame,
            None => top_frame(&session, &stop).await?.id,
        };
        let expression = p.expression.as_deref().unwrap_or_default();
        let context = session.adapter.evaluate_context();
        let value: Evaluated = session
            .ask(
                "evaluate",
                json!({"expression": expression, "frameId": frame, "context": context}),
            )
            .await?;
        let mut text = format!("{expression} = {}", cut(&value.result, EVALUATE_CAP));
        if let Some(kind) = value.kind.filter(|k| !k.is_empty()) {
            text.push_str(&format!(" ({kind})"));
        }
        if value.variables_reference > 0 {
            text.push_str(&format!(
                " [reference {}: `variables` lists its children]",
                value.variables_reference
            ));
        }
        Ok(text)
    }

    pub(super) fn output(&self) -> String {
        let Some(session) = self.debugger.current() else {
            return "no debug session".into();
        };
        let (text, cut) = session.output();
        if text.is_empty() {
            return "the program printed nothing so far".into();
        }
        if cut > 0 {
            format!("{text}\n({cut} bytes in the middle were cut; the start and the end are kept)")
        } else {
            text
        }
    }
}

/// The stop, or an error that says what to do while the program runs.
pub(super) fn stopped(session: &Session, op: &str) -> Result<Stop, String> {
    match session.state() {
        State::Stopped(stop) => Ok(stop),
        state => Err(not_stopped(&state, op)),
    }
}

pub(super) fn not_stopped(state: &State, op: &str) -> String {
    match state {
        State::Running | State::Starting => format!(
            "{op} needs a stopped program, and it is running: `pause` it, or `continue` (with \
             wait_ms) to wait for a breakpoint"
        ),
        _ => format!("{op} needs a stopped program, and it is over: `launch` it again"),
    }
}

pub(super) async fn first_thread(session: &Session) -> Result<i64, String> {
    let Threads { threads } = session.ask("threads", json!({})).await?;
    threads
        .first()
        .map(|t| t.id)
        .ok_or_else(|| "the program has no threads".into())
}

pub(super) async fn top_frame(session: &Session, stop: &Stop) -> Result<StackFrame, String> {
    let thread = match stop.thread_id {
        Some(thread) => thread,
        None => first_thread(session).await?,
    };
    let trace: StackTrace = session
        .ask(
            "stackTrace",
            json!({"threadId": thread, "startFrame": 0, "levels": 1}),
        )
        .await?;
    trace
        .stack_frames
        .into_iter()
        .next()
        .ok_or_else(|| format!("thread {thread} has no frames"))
}

/// `file:line` of a frame, workspace-relative when inside it.
pub(super) fn place_of(frame: &StackFrame, run: &Run) -> String {
    let line = frame.line;
    match frame.path() {
        Some(path) => format!("{}:{line}", run.workspace().display(Path::new(path))),
        None => match frame.source.as_ref().and_then(|s| s.name.as_deref()) {
            Some(name) => format!("{name}:{line} (no source file)"),
            None => "an unknown place (no source)".into(),
        },
    }
}

/// The text of the frame's line, read without blocking (the file may be a
/// library's, outside the workspace).
pub(super) fn source_line(frame: &StackFrame) -> Option<String> {
    let bytes = read_regular(Path::new(frame.path()?)).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let source = text.lines().nth((frame.line as usize).checked_sub(1)?)?;
    Some(cut(source.trim_end(), VALUE_CAP))
}

pub(super) fn render_variables(
    variables: &[Variable],
    reference: i64,
    offset: usize,
    cap: usize,
    title: &str,
) -> String {
    if variables.is_empty() {
        return format!("{title}: none");
    }
    let shown: Vec<&Variable> = variables.iter().skip(offset).take(cap).collect();
    let mut lines = vec![format!(
        "{title}, {}–{} of {}:",
        (offset + 1).min(variables.len()),
        offset + shown.len(),
        variables.len()
    )];
    for variable in &shown {
        let mut line = format!("  {} = {}", variable.name, cut(&variable.value, VALUE_CAP));
        if let Some(kind) = variable.kind.as_deref().filter(|k| !k.is_empty()) {
            line.push_str(&format!(" ({kind})"));
        }
        if variable.variables_reference > 0 {
            line.push_str(&format!(" [reference {}]", variable.variables_reference));
        }
        lines.push(line);
    }
    let rest = variables.len().saturating_sub(offset + shown.len());
    if rest > 0 {
        lines.push(format!(
            "{rest} more not shown: `variables` with reference {reference} and offset {}",
            offset + shown.len()
        ));
    }
    lines.join("\n")
}

/// `text` cut at `max` characters, saying how long it was and how to read
/// the rest.
pub(super) fn cut(text: &str, max: usize) -> String {
    match gantry_core::text::char_prefix(text, max) {
        None => text.to_string(),
        Some(kept) => format!(
            "{kept}… (cut at {max} of {} characters; `evaluate` a slice of it for the rest)",
            text.chars().count()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Variable;

    #[test]
    fn values_are_cut_on_characters_and_say_so() {
        let long = "é".repeat(500);
        let shown = cut(&long, VALUE_CAP);
        assert!(shown.starts_with(&"é".repeat(400)));
        assert!(shown.contains("cut at 400 of 500 characters"), "{shown}");
        assert_eq!(cut("short", VALUE_CAP), "short");
    }

    #[test]
    fn variables_past_the_cap_say_how_to_get_them() {
        let variables: Vec<Variable> = (0..60)
            .map(|i| Variable {
                name: format!("v{i}"),
                value: i.to_string(),
                ..Variable::default()
            })
            .collect();
        let first = render_variables(&variables, 7, 0, VARIABLES_CAP, "Locals");
        assert!(first.contains("1–50 of 60"), "{first}");
        assert!(first.contains("v49 = 49") && !first.contains("v50 ="));
        assert!(first.contains("10 more not shown: `variables` with reference 7 and offset 50"));
        let rest = render_variables(&variables, 7, 50, VARIABLES_CAP, "Locals");
        assert!(
            rest.contains("51–60 of 60") && rest.contains("v59 = 59"),
            "{rest}"
        );
        assert!(!rest.contains("more not shown"));
    }
}
