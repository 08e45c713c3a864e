//! The run log's settings, and its sinks: where a run's records go besides
//! its file.

use gantry_core::Settings;
use gantry_core::runlog::{Limits, RunLog, Sink};
use serde::Deserialize;

/// The settings key: `{"log": {"enabled": true, "maxBytes": 268435456}}`.
/// Read from the user's settings only: a checkout must not be able to
/// hide what runs in it did.
pub(crate) const KEY: &str = "log";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LogSettings {
    #[serde(default = "on")]
    enabled: bool,
    max_bytes: Option<u64>,
}

fn on() -> bool {
    true
}

/// The run's log, unless the user turned it off; with the OpenTelemetry
/// exporter as a sink when the standard variables ask for one.
pub(crate) fn open(settings: &Settings) -> Option<RunLog> {
    let limits = match settings.user_section::<LogSettings>(KEY) {
        Ok(Some(LogSettings { enabled: false, .. })) => return None,
        Ok(Some(LogSettings {
            max_bytes: Some(bytes),
            ..
        })) => Limits::of_total(bytes),
        Ok(_) => Limits::default(),
        Err(error) => {
            tracing::warn!("the `log` settings are not used: {error}");
            Limits::default()
        }
    };
    let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
    if let Some(exporter) = gantry_telemetry::Exporter::from_env() {
        sinks.push(Box::new(exporter));
    }
    Some(RunLog::open(limits, sinks))
}
