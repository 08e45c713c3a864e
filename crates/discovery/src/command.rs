//! Command discovery (SPEC §4): `toolDiscoveryCommand` prints function
//! declarations, each becomes a tool, and a call runs `toolCallCommand
//! <name>` with the arguments as JSON on stdin.
//!
//! Commands are split into words as a shell would, without a shell, as
//! Gemini CLI does: a setting names a program, not a script.

use std::path::Path;
use std::time::Duration;

use gantry_core::{DynTool, Prepared, Run, Tier, ToolContext, ToolError, ToolResult, ToolSpec};
use gantry_process::{Capped, Child, Command, EnvPolicy, Sandbox, Stderr, Stdout, describe_exit};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::names::{clean_schema, model_name};

/// How long the discovery command may run.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of declarations read at most (Gemini CLI reads 10 MB).
const DISCOVERY_OUTPUT: usize = 10 << 20;
/// How long one call of a discovered tool may run.
const CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// Bytes of a call's output kept from its start, as `shell` keeps.
const HEAD_BYTES: usize = 8 * 1024;
/// Bytes of a call's output kept from its end, as `shell` keeps.
const TAIL_BYTES: usize = 24 * 1024;
/// How long output may still arrive once the command exited (a process
/// it left behind may hold the pipe).
const OUTPUT_AFTER_EXIT: Duration = Duration::from_millis(300);

/// One function declaration the discovery command printed.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    /// The name the call command is given.
    pub name: String,
    /// For the model.
    pub description: String,
    /// The parameters' JSON Schema, cleaned for models.
    pub parameters: Value,
}

/// `command` split into words like a shell does (quotes, escapes), without
/// running a shell; an error says what is wrong with it.
pub fn words(key: &str, command: &str) -> Result<Vec<String>, String> {
    match shlex::split(command) {
        Some(words) if !words.is_empty() => Ok(words),
        Some(_) => Err(format!("`{key}` is empty")),
        None => Err(format!(
            "`{key}` cannot be split into words (an unclosed quote?): {command}"
        )),
    }
}

/// Runs the discovery command at `root`, bounded in time and output, and
/// reads its declarations.
pub async fn discover(
    command: &str,
    root: &Path,
    sandbox: &Sandbox,
) -> Result<Vec<Declaration>, String> {
    let words = words(crate::config::DISCOVERY_COMMAND, command)?;
    let child = Command::new(&words[0], sandbox)
        .args(&words[1..])
        .current_dir(root)
        .inherit(EnvPolicy::all_but_gantrys_secrets())
        .stdout(Stdout::Capture {
            head: DISCOVERY_OUTPUT,
            tail: 0,
        })
        .spawn()
        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
    let Ok(status) = tokio::time::timeout(DISCOVERY_TIMEOUT, child.wait()).await else {
        return Err(format!(
            "`{command}` did not finish within {} s and was stopped",
            DISCOVERY_TIMEOUT.as_secs()
        ));
    };
    let status = status.map_err(|e| format!("`{command}`: {e}"))?;
    let (output, errors) = collected(&child).await;
    if !status.success() {
        return Err(format!(
            "`{command}` {}: {}",
            describe_exit(status),
            gantry_process::explain(&errors.text())
        ));
    }
    if output.cut() > 0 {
        return Err(format!(
            "`{command}` printed more than {} MB of declarations",
            DISCOVERY_OUTPUT >> 20
        ));
    }
    parse(&output.text()).map_err(|e| format!("`{command}`: {e}"))
}

/// What a finished child wrote to stdout and stderr, waiting a moment for
/// the last bytes.
async fn collected(child: &Child) -> (Capped, Capped) {
    let output = child.output().expect("stdout is captured");
    let errors = child.stderr().expect("stderr is captured");
    let _ = tokio::time::timeout(OUTPUT_AFTER_EXIT, async {
        output.finished().await;
        errors.finished().await;
    })
    .await;
    let output = output.lock().clone();
    let errors = errors.lock().clone();
    (output, errors)
}

/// Reads declarations in the shapes Gemini CLI accepts: a JSON array of
/// declarations, or of objects holding `functionDeclarations` (or
/// `function_declarations`), or one such object.
pub fn parse(text: &str) -> Result<Vec<Declaration>, String> {
    let value: Value = serde_json::from_str(text.trim()).map_err(|e| {
        format!("its output is not JSON ({e}); expected an array of function declarations")
    })?;
    let items = match value {
        Value::Array(items) => items,
        object @ Value::Object(_) => vec![object],
        _ => return Err("expected an array of function declarations".into()),
    };
    let mut declarations = Vec::new();
    for item in items {
        let nested = item
            .get("functionDeclarations")
            .or_else(|| item.get("function_declarations"));
        match nested {
            Some(Value::Array(inner)) => {
                for declaration in inner {
                    declarations.push(declaration_of(declaration)?);
                }
            }
            _ => declarations.push(declaration_of(&item)?),
        }
    }
    Ok(declarations)
}

fn declaration_of(value: &Value) -> Result<Declaration, String> {
    let name = value
        .get("name")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .ok_or_else(|| format!("a declaration has no `name`: {value}"))?;
    let parameters = value
        .get("parametersJsonSchema")
        .or_else(|| value.get("parameters"))
        .cloned()
        .unwrap_or(Value::Null);
    Ok(Declaration {
        name: name.to_string(),
        description: value
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        parameters: clean_schema(&parameters),
    })
}

/// A tool a discovery command declared, run by the call command.
pub struct DiscoveredTool {
    /// The name the model calls (the declared one, made safe for models).
    pub name: String,
    /// The declared name, given to the call command.
    declared: String,
    description: String,
    schema: Value,
    /// The call command's words, or why there is none.
    call: Result<Vec<String>, String>,
}

impl DiscoveredTool {
    /// The tool of `declaration`, run by `call` (the call command's words).
    pub fn new(declaration: Declaration, call: Result<Vec<String>, String>) -> Self {
        DiscoveredTool {
            name: model_name(&declaration.name),
            declared: declaration.name,
            description: declaration.description,
            schema: declaration.parameters,
            call,
        }
    }
}

#[gantry_core::async_trait]
impl DynTool for DiscoveredTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            &self.name,
            &self.declared,
            Tier::Exec,
            format!(
                "{}\n\n(Discovered by the user's `toolDiscoveryCommand`; runs their `toolCallCommand`.)",
                self.description
            ),
        )
    }

    fn schema(&self) -> Value {
        self.schema.clone()
    }

    fn validate(&self, _args: &Value, _run: &Run) -> Result<(), String> {
        Ok(())
    }

    fn describe(&self, args: &Value) -> String {
        match &self.call {
            Ok(words) => format!("run `{} {}` with {args}", words.join(" "), self.declared),
            Err(_) => format!("run discovered tool `{}`", self.declared),
        }
    }

    async fn confirmation(&self, _: &Value, _: &Run) -> Result<Option<Prepared>, ToolError> {
        Ok(None)
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let words = self
            .call
            .as_ref()
            .map_err(|e| ToolError::failed(e.clone()))?;
        let shown = format!("{} {}", words.join(" "), self.declared);
        let sandbox = Sandbox::of(&ctx.run).await;
        let mut child = Command::new(&words[0], &sandbox)
            .args(&words[1..])
            .arg(&self.declared)
            .current_dir(ctx.run.workspace().root())
            .inherit(EnvPolicy::all_but_gantrys_secrets())
            .stdin_piped()
            .stdout(Stdout::Capture {
                head: HEAD_BYTES,
                tail: TAIL_BYTES,
            })
            .stderr(Stderr::Capture {
                head: HEAD_BYTES,
                tail: TAIL_BYTES,
            })
            .spawn()
            .map_err(|e| ToolError::failed(format!("cannot start `{shown}`: {e}")))?;
        if let Some(mut stdin) = child.stdin.take() {
            // A command that does not read its input may close it first.
            let _ = stdin.write_all(args.to_string().as_bytes()).await;
            drop(stdin);
        }
        // Dropping `child` (the call cancelled) kills what it started.
        let Ok(status) = tokio::time::timeout(CALL_TIMEOUT, child.wait()).await else {
            return Err(ToolError::failed(format!(
                "`{shown}` did not finish within {} s and was killed",
                CALL_TIMEOUT.as_secs()
            )));
        };
        let status = status?;
        let (output, errors) = collected(&child).await;
        if status.success() {
            return Ok(ToolResult::text(output.shown()));
        }
        let mut report = format!("`{shown}` {}", describe_exit(status));
        if let Some(code) = status.code() {
            report.push_str(&format!("\nexit code: {code}"));
        }
        if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
            report.push_str(&format!("\nsignal: {signal}"));
        }
        report.push_str(&format!(
            "\nstdout:\n{}\nstderr:\n{}",
            output.shown(),
            errors.shown()
        ));
        Err(ToolError::Failed(report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn declarations_in_every_shape_gemini_accepts() {
        let flat = r#"[{"name": "a", "description": "A", "parameters": {"type": "OBJECT", "properties": {"x": {"type": "STRING"}}}}]"#;
        let parsed = parse(flat).unwrap();
        assert_eq!(parsed[0].name, "a");
        assert_eq!(parsed[0].parameters["properties"]["x"]["type"], "string");
        let nested = json!([{"functionDeclarations": [{"name": "b"}, {"name": "c"}]}, {"function_declarations": [{"name": "d"}]}]);
        let names: Vec<String> = parse(&nested.to_string())
            .unwrap()
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["b", "c", "d"]);
        let object = json!({"functionDeclarations": [{"name": "e", "parametersJsonSchema": {"type": "object"}}]});
        assert_eq!(parse(&object.to_string()).unwrap()[0].name, "e");
        assert!(parse("not json").unwrap_err().contains("not JSON"));
        assert!(
            parse("[{\"description\": \"x\"}]")
                .unwrap_err()
                .contains("no `name`")
        );
        assert!(parse("3").unwrap_err().contains("array"));
    }

    #[test]
    fn commands_split_like_a_shell_without_one() {
        assert_eq!(
            words("k", r#"python3 "my tools.py" --flag='a b' $HOME"#).unwrap(),
            ["python3", "my tools.py", "--flag=a b", "$HOME"]
        );
        assert!(
            words("k", "echo 'open")
                .unwrap_err()
                .contains("unclosed quote")
        );
        assert!(words("k", "  ").unwrap_err().contains("empty"));
    }
}
