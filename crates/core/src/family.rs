//! Tool families as a run assembly sees them.
//!
//! A family (files, edits, the shell, language servers, ...) owns a set of
//! tools and whatever live resources they need. The run assembly holds
//! one list of families and wires each into every run, so front ends and
//! library users never name a family or a tool themselves.

use std::error::Error;

use async_trait::async_trait;

use crate::run::{Run, RunBuilder};
use crate::settings::Settings;

/// Why a family could not be wired into a run.
pub type WireError = Box<dyn Error + Send + Sync>;

/// One tool family, wired into a run by the assembly.
#[async_trait]
pub trait Family: Send + Sync {
    /// A short name, for `gantry status` and logs.
    fn name(&self) -> &'static str;

    /// The top-level settings keys the family reads; any key no family
    /// names is warned about as a likely typo.
    fn settings_keys(&self) -> &'static [&'static str] {
        &[]
    }

    /// Checks the family's own sections; each problem is a warning for the
    /// person (a bad section never stops a run).
    fn check_settings(&self, _settings: &Settings) -> Vec<String> {
        Vec::new()
    }

    /// Registers the family's tools, hooks and resources. Async so a
    /// family can start a process and ask it for its tools before the run
    /// is served.
    async fn wire(&self, builder: RunBuilder) -> Result<RunBuilder, WireError>;

    /// Lines for `gantry status`: what the family can do here, and why not.
    async fn status(&self, _run: &Run) -> Vec<String> {
        Vec::new()
    }

    /// Text the family adds to the run's instructions (the client's system
    /// prompt), from what is being wired.
    fn instructions(&self, _builder: &RunBuilder) -> Option<String> {
        None
    }
}

/// A family whose wiring is a plain function, as most are: its name, its
/// settings keys and how to check them, the function that registers its
/// tools, what it adds to the instructions, and what it says in
/// `gantry status`.
pub struct PlainFamily {
    name: &'static str,
    settings_keys: &'static [&'static str],
    check: Option<fn(&Settings) -> Vec<String>>,
    register: fn(RunBuilder) -> RunBuilder,
    instructions: Option<fn(&RunBuilder) -> Option<String>>,
    status: Option<fn(&Run) -> Vec<String>>,
}

impl PlainFamily {
    /// A family named `name` wired by `register`.
    pub const fn new(name: &'static str, register: fn(RunBuilder) -> RunBuilder) -> Self {
        PlainFamily {
            name,
            settings_keys: &[],
            check: None,
            register,
            instructions: None,
            status: None,
        }
    }

    /// The settings keys it reads, and how its sections are checked.
    pub const fn settings(
        mut self,
        keys: &'static [&'static str],
        check: fn(&Settings) -> Vec<String>,
    ) -> Self {
        self.settings_keys = keys;
        self.check = Some(check);
        self
    }

    /// What it adds to the run's instructions.
    pub const fn instructions(mut self, text: fn(&RunBuilder) -> Option<String>) -> Self {
        self.instructions = Some(text);
        self
    }

    /// Its lines for `gantry status` (see [`Family::status`]).
    pub const fn status(mut self, lines: fn(&Run) -> Vec<String>) -> Self {
        self.status = Some(lines);
        self
    }
}

#[async_trait]
impl Family for PlainFamily {
    fn name(&self) -> &'static str {
        self.name
    }

    fn settings_keys(&self) -> &'static [&'static str] {
        self.settings_keys
    }

    fn check_settings(&self, settings: &Settings) -> Vec<String> {
        self.check.map(|check| check(settings)).unwrap_or_default()
    }

    async fn wire(&self, builder: RunBuilder) -> Result<RunBuilder, WireError> {
        Ok((self.register)(builder))
    }

    fn instructions(&self, builder: &RunBuilder) -> Option<String> {
        self.instructions.and_then(|text| text(builder))
    }

    async fn status(&self, run: &Run) -> Vec<String> {
        self.status.map(|lines| lines(run)).unwrap_or_default()
    }
}

/// The check of a family whose settings are one section of type `T`: a
/// section of the wrong shape is a warning that says so.
pub fn check_section<T: serde::de::DeserializeOwned>(
    settings: &Settings,
    key: &str,
) -> Vec<String> {
    match settings.section::<Option<T>>(key) {
        Ok(_) => Vec::new(),
        Err(error) => vec![error.to_string()],
    }
}
