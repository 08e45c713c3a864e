//! The OTLP trace messages Gantry sends, as `opentelemetry-proto` defines
//! them (collector/trace/v1, trace/v1, common/v1, resource/v1): only the
//! fields Gantry fills, with their numbers from the `.proto` files.

/// `ExportTraceServiceRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportTraceServiceRequest {
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

/// `ResourceSpans`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceSpans {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
}

/// `Resource`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// `ScopeSpans`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeSpans {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<Span>,
}

/// `InstrumentationScope`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `Span`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Span {
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    #[prost(string, tag = "5")]
    pub name: String,
    /// `SPAN_KIND_INTERNAL` is 1.
    #[prost(int32, tag = "6")]
    pub kind: i32,
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
}

/// `Status`: code 0 unset, 1 ok, 2 error.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(int32, tag = "3")]
    pub code: i32,
}

/// `KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `AnyValue`, of the kinds Gantry sends.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    #[prost(oneof = "Value", tags = "1, 3, 4")]
    pub value: Option<Value>,
}

/// `AnyValue.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Value {
    #[prost(string, tag = "1")]
    Text(String),
    #[prost(int64, tag = "3")]
    Int(i64),
    #[prost(double, tag = "4")]
    Double(f64),
}

impl KeyValue {
    /// A string attribute.
    pub fn text(key: &str, value: impl Into<String>) -> Self {
        KeyValue::of(key, Value::Text(value.into()))
    }

    /// An attribute of any kind Gantry sends.
    pub fn of(key: &str, value: Value) -> Self {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(value) }),
        }
    }
}

/// OTLP/JSON: the same message in the protobuf JSON mapping OTLP asks for
/// (ids as hex, 64-bit integers as strings, enums as numbers).
pub fn to_json(request: &ExportTraceServiceRequest) -> serde_json::Value {
    use serde_json::json;
    let attributes = |attributes: &[KeyValue]| -> serde_json::Value {
        attributes
            .iter()
            .map(|kv| {
                let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                    Some(Value::Text(s)) => json!({ "stringValue": s }),
                    Some(Value::Int(i)) => json!({ "intValue": i.to_string() }),
                    Some(Value::Double(d)) => json!({ "doubleValue": d }),
                    None => json!({}),
                };
                json!({ "key": kv.key, "value": value })
            })
            .collect()
    };
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let resource_spans: Vec<serde_json::Value> = request
        .resource_spans
        .iter()
        .map(|rs| {
            let scope_spans: Vec<serde_json::Value> = rs
                .scope_spans
                .iter()
                .map(|ss| {
                    let spans: Vec<serde_json::Value> = ss
                        .spans
                        .iter()
                        .map(|span| {
                            let status = span
                                .status
                                .as_ref()
                                .map(|s| json!({ "message": s.message, "code": s.code }));
                            json!({
                                "traceId": hex(&span.trace_id),
                                "spanId": hex(&span.span_id),
                                "parentSpanId": hex(&span.parent_span_id),
                                "name": span.name,
                                "kind": span.kind,
                                "startTimeUnixNano": span.start_time_unix_nano.to_string(),
                                "endTimeUnixNano": span.end_time_unix_nano.to_string(),
                                "attributes": attributes(&span.attributes),
                                "status": status,
                            })
                        })
                        .collect();
                    let scope = ss
                        .scope
                        .as_ref()
                        .map(|s| json!({ "name": s.name, "version": s.version }));
                    json!({ "scope": scope, "spans": spans })
                })
                .collect();
            let resource = rs
                .resource
                .as_ref()
                .map(|r| json!({ "attributes": attributes(&r.attributes) }));
            json!({ "resource": resource, "scopeSpans": scope_spans })
        })
        .collect();
    json!({ "resourceSpans": resource_spans })
}
