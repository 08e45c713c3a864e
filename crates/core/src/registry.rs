//! The registry: the tools of one run, with their compiled schemas, and the
//! tools that were withheld because their backing resource is not wired.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::schema::ParamSchema;
use crate::tier::Tier;
use crate::tool::{DynTool, ToolSpec};

/// One registered tool.
pub struct Entry {
    /// The tool.
    pub tool: Arc<dyn DynTool>,
    /// Its spec, read once.
    pub spec: ToolSpec,
    /// Its compiled parameter schema.
    pub schema: ParamSchema,
    /// Held while an exclusive tool runs.
    pub(crate) exclusive: Option<tokio::sync::Mutex<()>>,
}

/// A tool as listed to a surface.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Listing {
    /// Unique name.
    pub name: String,
    /// Name for people.
    pub display_name: String,
    /// For the model.
    pub description: String,
    /// What it can do.
    pub tier: Tier,
    /// Whether calls are serialised.
    pub exclusive: bool,
    /// Whether it asks a person, so only callers that can reach one see it.
    pub needs_person: bool,
    /// What a call can lead to, when wider than `tier` (see
    /// [`ToolSpec::leads_to`]); front ends annotate with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leads_to: Option<Tier>,
    /// JSON Schema of the parameters.
    pub input_schema: Value,
}

/// The tools of a run. A run reads a snapshot of it per call; a change
/// (a family adding or removing tools at run time) makes a new snapshot,
/// so a call in flight keeps the entry it looked up.
#[derive(Default, Clone)]
pub struct Registry {
    entries: BTreeMap<String, Arc<Entry>>,
    withheld: BTreeMap<String, String>,
}

impl Registry {
    /// Adds a tool; a duplicate name or a schema that does not compile is a
    /// programming error of the wiring and is reported as such.
    pub fn register(&mut self, tool: Arc<dyn DynTool>) -> Result<(), String> {
        let spec = tool.spec();
        if self.entries.contains_key(&spec.name) {
            return Err(format!("tool `{}` registered twice", spec.name));
        }
        let schema = ParamSchema::compile(tool.schema())
            .map_err(|e| format!("tool `{}` has an invalid schema: {e}", spec.name))?;
        self.withheld.remove(&spec.name);
        let exclusive = spec.exclusive.then(|| tokio::sync::Mutex::new(()));
        self.entries.insert(
            spec.name.clone(),
            Arc::new(Entry {
                tool,
                spec,
                schema,
                exclusive,
            }),
        );
        Ok(())
    }

    /// Removes a tool, recording why it is gone (a call by name then says
    /// so); whether it was there.
    pub fn unregister(&mut self, name: &str, reason: impl Into<String>) -> bool {
        let removed = self.entries.remove(name).is_some();
        self.withheld.insert(name.to_string(), reason.into());
        removed
    }

    /// Records that `name` exists in Gantry but is not wired for this run,
    /// so a call by name fails at once with `reason`.
    pub fn withhold(&mut self, name: impl Into<String>, reason: impl Into<String>) {
        let name = name.into();
        if !self.entries.contains_key(&name) {
            self.withheld.insert(name, reason.into());
        }
    }

    /// Looks a tool up by name.
    pub fn get(&self, name: &str) -> Option<&Arc<Entry>> {
        self.entries.get(name)
    }

    /// Why a known-but-unwired tool is missing.
    pub fn withheld_reason(&self, name: &str) -> Option<&str> {
        self.withheld.get(name).map(String::as_str)
    }

    /// The tools a surface capped at `cap` sees, sorted by name.
    pub fn list(&self, cap: Tier) -> Vec<Listing> {
        self.entries
            .values()
            .filter(|entry| entry.spec.tier <= cap)
            .map(|entry| Listing {
                name: entry.spec.name.clone(),
                display_name: entry.spec.display_name.clone(),
                description: entry.spec.description.clone(),
                tier: entry.spec.tier,
                needs_person: entry.spec.needs_person,
                exclusive: entry.spec.exclusive,
                leads_to: entry.spec.leads_to,
                input_schema: entry.schema.schema().clone(),
            })
            .collect()
    }

    /// Tools that are not wired, with the reason.
    pub fn withheld(&self) -> impl Iterator<Item = (&str, &str)> {
        self.withheld.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}
