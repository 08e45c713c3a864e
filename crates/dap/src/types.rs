//! The DAP bodies Gantry reads, as serde types of its own: only the fields
//! used, every one defaulted and unknown fields ignored, so any adapter's
//! extras and omissions pass (`source` is optional, `type` often absent).

use serde::Deserialize;

/// One thread (`threads`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Thread {
    /// Its id, for `threadId`.
    pub id: i64,
    /// Its name.
    pub name: String,
}

/// The answer to `threads`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Threads {
    /// Every thread.
    pub threads: Vec<Thread>,
}

/// Where a frame's code is.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Source {
    /// A short name, when there is no file (generated code).
    pub name: Option<String>,
    /// The file.
    pub path: Option<String>,
}

/// One frame of a stack.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StackFrame {
    /// Its id, for `frameId`.
    pub id: i64,
    /// The function.
    pub name: String,
    /// Its source, when known.
    pub source: Option<Source>,
    /// The line (1-based), 0 when unknown.
    pub line: u64,
}

impl StackFrame {
    /// The file of the frame, when it has one.
    pub fn path(&self) -> Option<&str> {
        self.source
            .as_ref()
            .and_then(|s| s.path.as_deref())
            .filter(|p| !p.is_empty())
    }
}

/// The answer to `stackTrace`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StackTrace {
    /// The frames asked for.
    pub stack_frames: Vec<StackFrame>,
    /// How many frames the thread has, when the adapter says.
    pub total_frames: Option<u64>,
}

/// One scope of a frame.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Scope {
    /// `Locals`, `Globals`, `Registers`...
    pub name: String,
    /// Where its variables are.
    pub variables_reference: i64,
    /// How many, when the adapter says.
    pub named_variables: Option<u64>,
    /// Costly to fetch (globals, registers): not shown with a stop.
    pub expensive: bool,
}

/// The answer to `scopes`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Scopes {
    /// The frame's scopes.
    pub scopes: Vec<Scope>,
}

/// One variable.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Its value as the adapter shows it.
    pub value: String,
    /// Its type, when the adapter says.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Above 0 when it has children.
    pub variables_reference: i64,
}

/// The answer to `variables`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Variables {
    /// The children.
    pub variables: Vec<Variable>,
}

/// The answer to `evaluate`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Evaluated {
    /// The value.
    pub result: String,
    /// Its type, when the adapter says.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Above 0 when it has children.
    pub variables_reference: i64,
}

/// The answer to `exceptionInfo`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExceptionInfo {
    /// The exception's type.
    pub exception_id: String,
    /// Its message.
    pub description: Option<String>,
}

/// The body of a `stopped` event.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Stopped {
    /// `breakpoint`, `step`, `exception`, `pause`... (any string: adapters
    /// add their own).
    pub reason: String,
    /// The thread that stopped.
    pub thread_id: Option<i64>,
    /// The adapter's words for the stop.
    pub description: Option<String>,
    /// More words (an exception's message).
    pub text: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_and_missing_ones_pass() {
        let trace: StackTrace = serde_json::from_value(json!({
            "stackFrames": [
                {"id": 0, "name": "main", "line": 3, "column": 1, "source": {"path": "/p/a.py", "sourceReference": 0}, "presentationHint": "new-kind"},
                {"id": 1, "name": "_start", "instructionPointerReference": "0x1"}
            ],
            "extra": true
        }))
        .unwrap();
        assert_eq!(trace.stack_frames[0].id, 0);
        assert_eq!(trace.stack_frames[0].path(), Some("/p/a.py"));
        assert_eq!(trace.stack_frames[1].path(), None);
        assert_eq!(trace.total_frames, None);
        let variable: Variable = serde_json::from_value(
            json!({"name": "x", "value": "1", "type": "int", "evaluateName": "x"}),
        )
        .unwrap();
        assert_eq!(variable.kind.as_deref(), Some("int"));
        assert_eq!(variable.variables_reference, 0);
    }
}
