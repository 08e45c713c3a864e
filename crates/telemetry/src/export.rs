//! The exporter: configured by the standard variables, batching spans on
//! a thread of its own and POSTing them, so the run log's thread never
//! waits on a collector.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use gantry_core::runlog::Sink;
use prost::Message as _;
use serde_json::{Map, Value};

use crate::proto::{
    ExportTraceServiceRequest, InstrumentationScope, KeyValue, Resource, ResourceSpans, ScopeSpans,
    Span,
};
use crate::spans::Spans;

/// Spans sent in one request at most (the SDKs' `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
const BATCH: usize = 512;
/// How long the run's end waits for its last spans to be sent.
const CLOSE_BOUND: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Protobuf,
    Json,
}

/// Where and how spans go, from the environment.
#[derive(Debug, Clone)]
struct Config {
    url: String,
    headers: Vec<(String, String)>,
    encoding: Encoding,
    timeout: Duration,
    delay: Duration,
    resource: Vec<KeyValue>,
    with_arguments: bool,
}

impl Config {
    fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<Config> {
        let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || set("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"))
        {
            return None;
        }
        let url = match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(url) => url,
            None => format!(
                "{}/v1/traces",
                set("OTEL_EXPORTER_OTLP_ENDPOINT")?.trim_end_matches('/')
            ),
        };
        let protocol = set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .unwrap_or_else(|| "http/protobuf".into());
        let encoding = match protocol.as_str() {
            "http/protobuf" => Encoding::Protobuf,
            "http/json" => Encoding::Json,
            other => {
                tracing::warn!(
                    "OTEL_EXPORTER_OTLP_PROTOCOL={other}: Gantry exports over http/protobuf or http/json only; no spans are sent"
                );
                return None;
            }
        };
        let mut headers = pairs(set("OTEL_EXPORTER_OTLP_HEADERS").as_deref());
        headers.extend(pairs(set("OTEL_EXPORTER_OTLP_TRACES_HEADERS").as_deref()));
        let millis = |name: &str, default: u64| {
            Duration::from_millis(set(name).and_then(|v| v.parse().ok()).unwrap_or(default))
        };
        let timeout = set("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .map(|_| millis("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", 10_000))
            .unwrap_or_else(|| millis("OTEL_EXPORTER_OTLP_TIMEOUT", 10_000));
        let mut resource = vec![
            KeyValue::text(
                "service.name",
                set("OTEL_SERVICE_NAME").unwrap_or_else(|| "gantry".into()),
            ),
            KeyValue::text("service.version", env!("CARGO_PKG_VERSION")),
        ];
        for (key, value) in pairs(set("OTEL_RESOURCE_ATTRIBUTES").as_deref()) {
            if key != "service.name" || set("OTEL_SERVICE_NAME").is_none() {
                resource.retain(|kv| kv.key != key);
                resource.push(KeyValue::text(&key, value));
            }
        }
        Some(Config {
            url,
            headers,
            encoding,
            timeout,
            delay: millis("OTEL_BSP_SCHEDULE_DELAY", 5_000),
            resource,
            with_arguments: set("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        })
    }

    fn body(&self, spans: Vec<Span>) -> (Vec<u8>, &'static str) {
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: self.resource.clone(),
                }),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "gantry".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                    }),
                    spans,
                }],
            }],
        };
        match self.encoding {
            Encoding::Protobuf => (request.encode_to_vec(), "application/x-protobuf"),
            Encoding::Json => (
                crate::proto::to_json(&request).to_string().into_bytes(),
                "application/json",
            ),
        }
    }
}

/// `key=value,key2=value2`, values percent-decoded (W3C baggage form, as
/// the OTLP headers and resource variables are written).
fn pairs(text: Option<&str>) -> Vec<(String, String)> {
    text.unwrap_or_default()
        .split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            Some((
                key.trim().to_string(),
                percent_encoding::percent_decode_str(value.trim())
                    .decode_utf8_lossy()
                    .into_owned(),
            ))
        })
        .filter(|(key, _)| !key.is_empty())
        .collect()
}

enum Message {
    Span(Span),
    Flush(Sender<()>),
}

/// A run log sink that exports the run's calls as spans.
pub struct Exporter {
    spans: Spans,
    sender: Sender<Message>,
}

impl Exporter {
    /// The exporter the environment asks for, if any.
    pub fn from_env() -> Option<Exporter> {
        let config = Config::from_env(|name| std::env::var(name).ok())?;
        let spans = Spans::new(config.with_arguments);
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("gantry-otlp".into())
            .spawn(move || send_loop(config, receiver))
            .ok()?;
        Some(Exporter { spans, sender })
    }
}

impl Sink for Exporter {
    fn record(&mut self, record: &Map<String, Value>) {
        if let Some(span) = self.spans.record(record) {
            let _ = self.sender.send(Message::Span(span));
        }
    }

    fn close(&mut self) {
        let (done, sent) = std::sync::mpsc::channel();
        if self.sender.send(Message::Flush(done)).is_ok() {
            let _ = sent.recv_timeout(CLOSE_BOUND);
        }
    }
}

/// Batches spans and sends them every `delay`, at [`BATCH`] spans, and
/// when flushed.
fn send_loop(config: Config, receiver: Receiver<Message>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let client = match gantry_http::builder()
        .and_then(|b| b.timeout(config.timeout).build().map_err(|e| e.to_string()))
    {
        Ok(client) => client,
        Err(error) => {
            tracing::warn!("no OpenTelemetry export: {error}");
            return;
        }
    };
    let send = |spans: Vec<Span>| {
        if spans.is_empty() {
            return;
        }
        let (body, content_type) = config.body(spans);
        let mut request = client
            .post(&config.url)
            .header("content-type", content_type)
            .body(body);
        for (name, value) in &config.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        match runtime.block_on(async { request.send().await }) {
            Ok(response) if response.status().is_success() => {}
            Ok(response) => tracing::warn!("OTLP export to {}: {}", config.url, response.status()),
            Err(error) => tracing::warn!("OTLP export to {}: {error}", config.url),
        }
    };
    let mut batch = Vec::new();
    let mut due = Instant::now() + config.delay;
    loop {
        match receiver.recv_timeout(due.saturating_duration_since(Instant::now())) {
            Ok(Message::Span(span)) => {
                batch.push(span);
                if batch.len() >= BATCH {
                    send(std::mem::take(&mut batch));
                }
            }
            Ok(Message::Flush(done)) => {
                send(std::mem::take(&mut batch));
                let _ = done.send(());
            }
            Err(RecvTimeoutError::Timeout) => {
                send(std::mem::take(&mut batch));
                due = Instant::now() + config.delay;
            }
            Err(RecvTimeoutError::Disconnected) => {
                send(std::mem::take(&mut batch));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Option<Config> {
        Config::from_env(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn nothing_is_sent_without_an_endpoint_or_when_disabled() {
        assert!(config(&[]).is_none());
        assert!(
            config(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_SDK_DISABLED", "true")
            ])
            .is_none()
        );
        assert!(
            config(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_TRACES_EXPORTER", "none")
            ])
            .is_none()
        );
        assert!(
            config(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
            ])
            .is_none()
        );
    }

    #[test]
    fn the_standard_variables_set_url_headers_and_encoding() {
        let config = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-team=a%20b, authorization=Basic xyz",
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_SERVICE_NAME", "agents"),
        ])
        .unwrap();
        assert_eq!(config.url, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(config.headers[0], ("x-team".to_string(), "a b".to_string()));
        assert_eq!(config.encoding, Encoding::Json);
        assert!(
            config
                .resource
                .contains(&KeyValue::text("service.name", "agents"))
        );
        let traces = config_with_traces_endpoint();
        assert_eq!(traces.url, "http://127.0.0.1:9/custom");
        assert_eq!(traces.encoding, Encoding::Protobuf);
    }

    fn config_with_traces_endpoint() -> Config {
        config(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://127.0.0.1:9/custom",
        )])
        .unwrap()
    }
}
