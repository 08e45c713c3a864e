//! One judgement of a client's message for both transports, so stdio and
//! HTTP refuse the same malformed message with the same JSON-RPC error:
//! `-32700` for what is not JSON, `-32600` for what is not a request (a
//! batch, no `method`, not an object), `-32602` for a request whose
//! `params` do not fit its method (a string, an array, a number).

use rmcp::service::{RoleServer, RxJsonRpcMessage};
use serde_json::Value;

/// The largest message read, as rmcp's own transports: past it a message
/// is refused with an error, never buffered.
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// JSON-RPC's error codes.
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// What to do with one message.
pub(crate) enum Verdict {
    /// A message for the service.
    Deliver(Box<RxJsonRpcMessage<RoleServer>>),
    /// Not one the service takes. `id: None` is a message that must never
    /// be answered (a notification, a response of the client's): stdio
    /// drops it; HTTP, which answers every POST, refuses it with id `null`.
    Refuse {
        id: Option<Value>,
        code: i64,
        message: String,
    },
}

impl Verdict {
    fn refuse(id: Value, code: i64, message: String) -> Verdict {
        Verdict::Refuse {
            id: Some(id),
            code,
            message,
        }
    }
}

/// Parses one message, and when it is not one the service takes, says
/// which error answers it.
pub(crate) fn judge(bytes: &[u8]) -> Verdict {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let typed_error = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(bytes) {
        Ok(message) => return Verdict::Deliver(Box::new(message)),
        Err(error) => error,
    };
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(error) => {
            return Verdict::refuse(
                recover_id(bytes),
                PARSE_ERROR,
                format!("parse error: {error}"),
            );
        }
    };
    let Value::Object(object) = &value else {
        return Verdict::refuse(
            Value::Null,
            INVALID_REQUEST,
            if value.is_array() {
                "batches are not supported: send one JSON-RPC message at a time".to_string()
            } else {
                "a JSON-RPC message must be a JSON object".to_string()
            },
        );
    };
    let id = object.get("id").cloned();
    let method = object.get("method").and_then(Value::as_str);
    match (method, id) {
        // A notification is never answered, whatever is wrong with it.
        (Some(method), None) => Verdict::Refuse {
            id: None,
            code: INVALID_PARAMS,
            message: format!("invalid params for notification `{method}`: {typed_error}"),
        },
        // A response of the client's we could not read: nothing to answer.
        (None, _) if object.contains_key("result") || object.contains_key("error") => {
            Verdict::Refuse {
                id: None,
                code: INVALID_REQUEST,
                message: format!("malformed response from the client: {typed_error}"),
            }
        }
        (None, id) => Verdict::refuse(
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            "invalid request: a request needs a string `method`".to_string(),
        ),
        (Some(method), Some(id)) => Verdict::refuse(
            id,
            INVALID_PARAMS,
            invalid_params(method)
                .unwrap_or_else(|| format!("invalid params for `{method}`: {typed_error}")),
        ),
    }
}

/// What a request of a standard `method` whose params did not fit should
/// be told (`None`: not a method whose params Gantry knows).
pub(crate) fn invalid_params(method: &str) -> Option<String> {
    let expected = match method {
        "tools/call" => {
            "an object with `name` (the tool, a string) and `arguments` (an object of its parameters)"
        }
        "initialize" => "an object with `protocolVersion`, `capabilities` and `clientInfo`",
        "tools/list" | "ping" => "an object, or no params",
        _ => return None,
    };
    Some(format!(
        "invalid params for `{method}`: expected {expected}"
    ))
}

/// A JSON-RPC error message.
pub(crate) fn error_message(id: Value, code: i64, message: &str) -> Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    })
}

/// The `id` of a top-level JSON object in `bytes` (which may be cut short
/// or too deep to parse), found by a scan that tracks strings and depth:
/// a number or string value, else `null`.
pub(crate) fn recover_id(bytes: &[u8]) -> Value {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(bytes, i);
                if depth == 1 && &bytes[i..end] == b"\"id\"" {
                    let rest = &bytes[end..];
                    let rest = rest.trim_ascii_start();
                    if let Some(value) = rest.strip_prefix(b":") {
                        return id_value(value.trim_ascii_start());
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Value::Null
}

/// The index just past the string starting at `start` (a `"`).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// A JSON number or string at the start of `bytes`, as an id.
fn id_value(bytes: &[u8]) -> Value {
    let token_end = match bytes.first() {
        Some(b'"') => string_end(bytes, 0),
        _ => bytes
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'-'))
            .unwrap_or(bytes.len()),
    };
    match serde_json::from_slice::<Value>(&bytes[..token_end]) {
        Ok(value @ (Value::Number(_) | Value::String(_))) => value,
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_recovered_from_broken_messages() {
        assert_eq!(
            recover_id(br#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"#),
            7
        );
        assert_eq!(recover_id(br#"{"params":{"id":1},"id":"a\"b"}"#), "a\"b");
        assert_eq!(
            recover_id(br#"{"method":"x","params":[[[[["id":3]]]]]}"#),
            Value::Null
        );
        assert_eq!(recover_id(b"not json"), Value::Null);
    }

    #[test]
    fn every_broken_request_gets_an_answer() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let cases: Vec<(&[u8], Value, i64)> = vec![
            (b"{not json", Value::Null, PARSE_ERROR),
            (b"", Value::Null, PARSE_ERROR),
            (deep.as_bytes(), json!(9), PARSE_ERROR),
            (
                br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                Value::Null,
                INVALID_REQUEST,
            ),
            (br#"{"jsonrpc":"2.0","id":2}"#, json!(2), INVALID_REQUEST),
            (
                br#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":"x"}"#,
                json!(3),
                INVALID_PARAMS,
            ),
            (
                br#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[1]}"#,
                json!(4),
                INVALID_PARAMS,
            ),
            (
                br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":5}"#,
                json!(5),
                INVALID_PARAMS,
            ),
        ];
        for (line, id, code) in cases {
            match judge(line) {
                Verdict::Refuse {
                    id: Some(got_id),
                    code: got_code,
                    ..
                } => {
                    assert_eq!(
                        (got_id, got_code),
                        (id, code),
                        "{}",
                        String::from_utf8_lossy(line)
                    );
                }
                _ => panic!("no answer for {}", String::from_utf8_lossy(line)),
            }
        }
        assert!(matches!(
            judge(br#"{"jsonrpc":"2.0","method":"notifications/bogus","params":5}"#),
            Verdict::Refuse { id: None, .. }
        ));
        assert!(matches!(
            judge(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Verdict::Deliver(_)
        ));
    }
}
