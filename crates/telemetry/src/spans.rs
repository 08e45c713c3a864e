//! Records of the run log into spans: the run is a trace with one root
//! span; each call is a span under the call it was made from, or the root.

use std::collections::HashMap;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::proto::{KeyValue, Span, Status, Value as Attr};

/// `SPAN_KIND_INTERNAL`.
const INTERNAL: i32 = 1;

/// A call begun and not yet ended.
struct Open {
    start: u64,
    tool: String,
    tier: Option<String>,
    by: String,
    parent: Option<u64>,
    args: Option<String>,
}

/// Turns a run's records into finished spans.
pub(crate) struct Spans {
    /// Whether a span carries the call's arguments.
    with_arguments: bool,
    run: Option<(String, u64)>,
    open: HashMap<u64, Open>,
}

impl Spans {
    pub(crate) fn new(with_arguments: bool) -> Self {
        Spans {
            with_arguments,
            run: None,
            open: HashMap::new(),
        }
    }

    /// The span a record finishes, if any.
    pub(crate) fn record(&mut self, record: &Map<String, Value>) -> Option<Span> {
        let text = |key: &str| record.get(key).and_then(Value::as_str).unwrap_or("");
        let at = nanos(text("time"));
        match text("kind") {
            "run.start" => {
                self.run = Some((text("run").to_string(), at));
                None
            }
            "call.start" => {
                let call = record.get("call")?.as_u64()?;
                let args = self
                    .with_arguments
                    .then(|| record.get("args").map(Value::to_string))
                    .flatten();
                self.open.insert(
                    call,
                    Open {
                        start: at,
                        tool: text("tool").into(),
                        tier: record
                            .get("tier")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        by: text("by").into(),
                        parent: record.get("parent").and_then(Value::as_u64),
                        args,
                    },
                );
                None
            }
            "call.end" => {
                let call = record.get("call")?.as_u64()?;
                let open = self.open.remove(&call)?;
                let run = &self.run.as_ref()?.0;
                let outcome = text("outcome");
                let mut attributes = vec![
                    KeyValue::text("gen_ai.operation.name", "execute_tool"),
                    KeyValue::text("gen_ai.tool.name", open.tool.as_str()),
                    KeyValue::text("gantry.run", run.as_str()),
                    KeyValue::of("gantry.call", Attr::Int(call as i64)),
                    KeyValue::text("gantry.by", open.by),
                    KeyValue::text("gantry.outcome", outcome),
                ];
                if let Some(ms) = record.get("ms").and_then(Value::as_f64) {
                    attributes.push(KeyValue::of("gantry.duration_ms", Attr::Double(ms)));
                }
                if let Some(tier) = open.tier {
                    attributes.push(KeyValue::text("gantry.tier", tier));
                }
                if let Some(args) = open.args {
                    attributes.push(KeyValue::text("gen_ai.tool.call.arguments", args));
                }
                let status = if outcome == "ok" {
                    Status {
                        message: String::new(),
                        code: 1,
                    }
                } else {
                    Status {
                        message: outcome.to_string(),
                        code: 2,
                    }
                };
                let parent = match open.parent {
                    Some(parent) => id(run, &format!("call {parent}"), 8),
                    None => id(run, "run", 8),
                };
                Some(Span {
                    trace_id: id(run, "trace", 16),
                    span_id: id(run, &format!("call {call}"), 8),
                    parent_span_id: parent,
                    name: format!("execute_tool {}", open.tool),
                    kind: INTERNAL,
                    start_time_unix_nano: open.start,
                    end_time_unix_nano: at.max(open.start),
                    attributes,
                    status: Some(status),
                })
            }
            "run.end" => {
                let (run, start) = self.run.take()?;
                Some(Span {
                    trace_id: id(&run, "trace", 16),
                    span_id: id(&run, "run", 8),
                    parent_span_id: Vec::new(),
                    name: "gantry run".into(),
                    kind: INTERNAL,
                    start_time_unix_nano: start,
                    end_time_unix_nano: at.max(start),
                    attributes: vec![
                        KeyValue::text("gantry.run", run.as_str()),
                        KeyValue::of(
                            "gantry.calls",
                            Attr::Int(record.get("calls").and_then(Value::as_i64).unwrap_or(0)),
                        ),
                    ],
                    status: None,
                })
            }
            _ => None,
        }
    }
}

/// A stable id of `len` bytes for `what` in `run`: the same run gives the
/// same trace, whoever computes it.
fn id(run: &str, what: &str, len: usize) -> Vec<u8> {
    let digest = Sha256::new()
        .chain_update(run.as_bytes())
        .chain_update([0])
        .chain_update(what.as_bytes())
        .finalize();
    digest[..len].to_vec()
}

/// Nanoseconds since the epoch of a record's time (`2026-12-02T07:31:02.123Z`).
fn nanos(time: &str) -> u64 {
    gantry_core::runlog::parse_time(time)
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_nested_call_is_a_child_of_its_caller_in_the_run_trace() {
        let mut spans = Spans::new(false);
        let run = "20261202T000000Z-1-1";
        assert!(
            spans
                .record(&record(
                    json!({"kind": "run.start", "run": run, "time": "2026-12-02T00:00:00.000Z"})
                ))
                .is_none()
        );
        spans.record(&record(json!({"kind": "call.start", "call": 1, "tool": "eval", "by": "client", "time": "2026-12-02T00:00:01.000Z", "args": {"code": "1"}})));
        spans.record(&record(json!({"kind": "call.start", "call": 2, "tool": "read_file", "by": "cell", "parent": 1, "time": "2026-12-02T00:00:01.100Z"})));
        let inner = spans.record(&record(json!({"kind": "call.end", "call": 2, "tool": "read_file", "outcome": "failed", "ms": 5.0, "time": "2026-12-02T00:00:01.105Z"}))).unwrap();
        let outer = spans.record(&record(json!({"kind": "call.end", "call": 1, "tool": "eval", "outcome": "ok", "time": "2026-12-02T00:00:02.000Z"}))).unwrap();
        let root = spans
            .record(&record(
                json!({"kind": "run.end", "calls": 2, "time": "2026-12-02T00:00:03.000Z"}),
            ))
            .unwrap();
        assert_eq!(inner.parent_span_id, outer.span_id);
        assert_eq!(outer.parent_span_id, root.span_id);
        assert_eq!(inner.trace_id, root.trace_id);
        assert_eq!(inner.status.unwrap().code, 2);
        assert_eq!(
            outer.end_time_unix_nano - outer.start_time_unix_nano,
            1_000_000_000
        );
        assert!(
            !outer
                .attributes
                .iter()
                .any(|kv| kv.key == "gen_ai.tool.call.arguments")
        );
    }

    #[test]
    fn arguments_are_sent_only_when_asked() {
        let mut spans = Spans::new(true);
        spans.record(&record(
            json!({"kind": "run.start", "run": "r", "time": "2026-12-02T00:00:00.000Z"}),
        ));
        spans.record(&record(json!({"kind": "call.start", "call": 1, "tool": "read_file", "by": "client", "time": "2026-12-02T00:00:01.000Z", "args": {"path": "a.txt"}})));
        let span = spans.record(&record(json!({"kind": "call.end", "call": 1, "outcome": "ok", "time": "2026-12-02T00:00:01.001Z"}))).unwrap();
        let arguments = span
            .attributes
            .iter()
            .find(|kv| kv.key == "gen_ai.tool.call.arguments")
            .unwrap();
        assert_eq!(
            arguments.value.as_ref().unwrap().value,
            Some(Attr::Text(r#"{"path":"a.txt"}"#.into()))
        );
    }
}
