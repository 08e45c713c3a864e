//! The `workers` settings section (SPEC §11): which endpoint serves each
//! tier, the workers' own surface, and the pool's bounds.
//!
//! The section names an endpoint and the variable holding its key, so it
//! is honoured only from the user's file or from a workspace the user's
//! `trustedFolders` lists (SPEC §3); a cloned repository cannot point
//! Gantry's workers at a server of its choosing.

use std::fmt;

use gantry_core::settings::Settings;
use gantry_core::{ApprovalMode, Surface, Tier};
use serde::Deserialize;

/// The top-level settings key.
pub const SETTINGS_KEY: &str = "workers";

/// How many workers may run at once unless `maxRunning` says otherwise.
const DEFAULT_MAX_RUNNING: usize = 8;
/// Model turns a worker gets per brief or message unless `maxTurns` says
/// otherwise.
const DEFAULT_MAX_TURNS: u32 = 50;

/// The section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkersSection {
    /// The tier for mechanical work with a clear spec.
    pub fast: Option<TierSection>,
    /// The tier for design, judgement and review.
    pub good: Option<TierSection>,
    /// The highest tier of tools a worker sees (default `write`).
    pub max_tier: Option<Tier>,
    /// When a worker's tool calls are confirmed (default `auto-edit`).
    pub approval: Option<ApprovalMode>,
    /// Workers running at once (default 8).
    pub max_running: Option<usize>,
    /// Model turns per brief or message (default 50).
    pub max_turns: Option<u32>,
}

/// One tier as written: an OpenAI-compatible endpoint, or (later) an
/// external agent command.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TierSection {
    /// The API base, up to and including `/v1`.
    pub base_url: Option<String>,
    /// The model id sent with every request.
    pub model: Option<String>,
    /// The environment variable holding the API key, if the endpoint
    /// needs one.
    pub api_key_env: Option<String>,
    /// Whether to ask for a streamed answer (default true).
    pub stream: Option<bool>,
    /// An external agent command: accepted, not yet supported.
    pub command: Option<serde_json::Value>,
}

/// Which tier a worker runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TierName {
    /// Mechanical work with a clear spec.
    Fast,
    /// Design, judgement, or reviewing a fast worker's output.
    Good,
}

impl TierName {
    /// The name as written in settings and calls.
    pub fn as_str(self) -> &'static str {
        match self {
            TierName::Fast => "fast",
            TierName::Good => "good",
        }
    }
}

impl fmt::Display for TierName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An endpoint a tier resolves to, ready for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The API base, without a trailing slash.
    pub base_url: String,
    /// The model id.
    pub model: String,
    /// The variable holding the key (read when a worker starts, so a key
    /// set later is picked up and never kept in settings).
    pub api_key_env: Option<String>,
    /// Whether to ask for a streamed answer.
    pub stream: bool,
}

/// The honoured settings of worker mode.
#[derive(Debug, Clone)]
pub struct WorkersConfig {
    /// Each configured tier: its endpoint, or why it cannot serve.
    pub tiers: Vec<(TierName, Result<Endpoint, String>)>,
    /// The workers' surface, before it is narrowed to the director's.
    pub surface: Surface,
    /// Workers running at once.
    pub max_running: usize,
    /// Model turns per brief or message.
    pub max_turns: u32,
}

impl WorkersConfig {
    /// The tier a spawn without `tier` gets: `fast` when configured.
    pub fn default_tier(&self) -> TierName {
        self.tiers
            .first()
            .map(|(name, _)| *name)
            .unwrap_or(TierName::Fast)
    }

    /// The endpoint of `tier`, or what is wrong with it.
    pub fn endpoint(&self, tier: TierName) -> Result<&Endpoint, String> {
        match self.tiers.iter().find(|(name, _)| *name == tier) {
            Some((_, endpoint)) => endpoint.as_ref().map_err(Clone::clone),
            None => Err(format!(
                "tier: `{tier}` is not configured; configured: {}",
                self.tier_names()
            )),
        }
    }

    /// The configured tiers, for messages.
    pub fn tier_names(&self) -> String {
        self.tiers
            .iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What the settings say about worker mode.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The honoured configuration; `None` when worker mode is off.
    pub config: Option<WorkersConfig>,
    /// Problems for the person: a malformed section, a workspace section
    /// ignored because the folder is not trusted.
    pub warnings: Vec<String>,
}

/// Reads the honoured `workers` section: the user's, or the merged one
/// when the workspace is trusted. Never fails: a bad section turns worker
/// mode off and says why.
pub fn resolve(settings: &Settings) -> Resolved {
    let mut warnings = Vec::new();
    let in_workspace = settings.workspace_section::<serde_json::Value>(SETTINGS_KEY);
    let trusted = settings.workspace_trusted();
    if matches!(in_workspace, Ok(Some(_))) && !trusted {
        let file = settings.workspace_file_shown();
        warnings.push(format!(
            "ignored from {file}: `{SETTINGS_KEY}` names endpoints and keys, so it is honoured only \
             from ~/.gantry/settings.json or a folder its `trustedFolders` lists"
        ));
    }
    let section = if trusted {
        settings.section::<Option<WorkersSection>>(SETTINGS_KEY)
    } else {
        settings.user_section::<WorkersSection>(SETTINGS_KEY)
    };
    let section = match section {
        Ok(Some(section)) => section,
        Ok(None) => {
            return Resolved {
                config: None,
                warnings,
            };
        }
        Err(error) => {
            warnings.push(format!("{error}; worker mode is off"));
            return Resolved {
                config: None,
                warnings,
            };
        }
    };
    let tiers: Vec<(TierName, Result<Endpoint, String>)> = [
        (TierName::Fast, section.fast),
        (TierName::Good, section.good),
    ]
    .into_iter()
    .filter_map(|(name, tier)| tier.map(|tier| (name, endpoint(name, tier))))
    .collect();
    if tiers.is_empty() {
        warnings.push(format!(
            "`{SETTINGS_KEY}` has no tier (`fast` or `good`); worker mode is off"
        ));
        return Resolved {
            config: None,
            warnings,
        };
    }
    for (_, endpoint) in &tiers {
        if let Err(problem) = endpoint {
            warnings.push(problem.clone());
        }
    }
    let surface = Surface::new(
        section.max_tier.unwrap_or(Tier::Write),
        section.approval.unwrap_or(ApprovalMode::AutoEdit),
    );
    Resolved {
        config: Some(WorkersConfig {
            tiers,
            surface,
            max_running: section.max_running.unwrap_or(DEFAULT_MAX_RUNNING).max(1),
            max_turns: section.max_turns.unwrap_or(DEFAULT_MAX_TURNS).max(1),
        }),
        warnings,
    }
}

/// A tier's endpoint, or why it cannot serve a worker.
fn endpoint(name: TierName, tier: TierSection) -> Result<Endpoint, String> {
    let key = format!("{SETTINGS_KEY}.{name}");
    if tier.command.is_some() {
        return Err(format!(
            "`{key}.command`: an external agent command is not yet supported; give `baseUrl` and \
             `model` of an OpenAI-compatible endpoint instead"
        ));
    }
    let base_url = tier
        .base_url
        .ok_or_else(|| format!("`{key}.baseUrl`: missing; e.g. \"http://127.0.0.1:8080/v1\""))?;
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(format!(
            "`{key}.baseUrl`: expected an http:// or https:// URL, got `{base_url}`"
        ));
    }
    let model = tier
        .model
        .filter(|model| !model.is_empty())
        .ok_or_else(|| format!("`{key}.model`: missing; the model id the endpoint serves"))?;
    Ok(Endpoint {
        base_url: base_url.trim_end_matches('/').to_string(),
        model,
        api_key_env: tier.api_key_env,
        stream: tier.stream.unwrap_or(true),
    })
}

/// How to turn worker mode on, for `gantry status` and errors.
pub const HOW_TO_CONFIGURE: &str = "worker mode is off: add a `workers` section with a tier to \
    ~/.gantry/settings.json, e.g. {\"workers\": {\"fast\": {\"baseUrl\": \
    \"http://127.0.0.1:8080/v1\", \"model\": \"qwen3-coder-30b\", \"apiKeyEnv\": \"FAST_KEY\"}}}";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resolved(value: serde_json::Value) -> Resolved {
        resolve(&Settings::from_value(value).unwrap())
    }

    #[test]
    fn no_section_is_worker_mode_off() {
        let out = resolved(json!({}));
        assert!(out.config.is_none());
        assert!(out.warnings.is_empty());
    }

    #[test]
    fn tiers_resolve_with_defaults() {
        let out = resolved(json!({"workers": {
            "good": {"baseUrl": "http://h/v1/", "model": "big"},
            "fast": {"baseUrl": "http://h/v1", "model": "small", "apiKeyEnv": "K", "stream": false}
        }}));
        let config = out.config.unwrap();
        assert_eq!(config.default_tier(), TierName::Fast);
        assert_eq!(
            config.endpoint(TierName::Good).unwrap().base_url,
            "http://h/v1"
        );
        assert_eq!(config.endpoint(TierName::Good).unwrap().model, "big");
        assert!(!config.endpoint(TierName::Fast).unwrap().stream);
        assert_eq!(
            config.surface,
            Surface::new(Tier::Write, ApprovalMode::AutoEdit)
        );
        assert_eq!((config.max_running, config.max_turns), (8, 50));
    }

    #[test]
    fn a_command_tier_is_accepted_and_refused_with_not_yet_supported() {
        let out = resolved(json!({"workers": {"good": {"command": ["qwen", "-p"]}}}));
        let config = out.config.unwrap();
        let error = config.endpoint(TierName::Good).unwrap_err();
        assert!(error.contains("not yet supported"), "{error}");
        assert!(out.warnings[0].contains("not yet supported"));
        let missing = config.endpoint(TierName::Fast).unwrap_err();
        assert!(
            missing.contains("`fast` is not configured; configured: good"),
            "{missing}"
        );
    }

    #[test]
    fn a_malformed_section_is_a_warning_and_worker_mode_off() {
        let out = resolved(json!({"workers": {"fast": {"baseUrl": "x", "modle": "m"}}}));
        assert!(out.config.is_none());
        assert!(out.warnings[0].contains("modle"), "{:?}", out.warnings);
        let out = resolved(json!({"workers": {"maxTier": "exec"}}));
        assert!(out.config.is_none());
        assert!(out.warnings[0].contains("no tier"));
    }
}
