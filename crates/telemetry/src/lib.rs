//! OpenTelemetry: with the standard `OTEL_EXPORTER_OTLP_*` variables set,
//! each call of a run is a span (tool, tier, who asked, outcome, duration;
//! its arguments only when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`
//! asks), children of one span for the run, all in the run's own trace,
//! sent over OTLP/HTTP (`http/protobuf`, the default, or `http/json`).
//! Nothing is sent when no endpoint is set.
//!
//! The exporter is a sink of the run log ([`gantry_core::runlog::Sink`]):
//! it turns the log's records into spans, so what a person reads in
//! `gantry log` and what their collector receives cannot disagree. The
//! OpenTelemetry SDK crates were not used: they bring a second HTTP client
//! and a tracing bridge for what is, here, eight protobuf messages
//! ([`proto`]) and one POST.

mod export;
mod proto;
mod spans;

pub use export::Exporter;
