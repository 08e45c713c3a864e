//! The entry points of the fuzz targets in `fuzz/` that reach the core:
//! settings files and tool parameters, bytes that come from outside
//! Gantry. Not an API: hidden from the docs, kept only for the targets.

use std::path::Path;

use serde_json::Value;

use crate::schema::ParamSchema;
use crate::settings::{Level, Settings, SettingsError, parse};

/// Reads `user` and `workspace` as a run's two settings files and merges
/// them: settings, or an error naming the file, line and column.
pub fn settings_files(user: &[u8], workspace: &[u8]) -> Result<Settings, SettingsError> {
    let mut settings = Settings::default();
    for (level, name, bytes) in [
        (Level::User, "settings.json", user),
        (Level::Workspace, ".gantry/settings.json", workspace),
    ] {
        let file = Path::new(name);
        let object = parse(file, bytes)?;
        settings.add_layer(level, file, object);
    }
    Ok(settings)
}

/// Checks `args` against `schema` as every call's are: checked
/// parameters, or an error that names what is wrong, never a panic.
pub fn tool_params(schema: &ParamSchema, args: Value) {
    if let Err(error) = schema.check(args) {
        assert!(!error.is_empty(), "a parameter error that says nothing");
    }
}
