//! The environment of a child run on the model's behalf.
//!
//! Gantry's own environment holds its secrets (the HTTP bearer tokens, the
//! web search keys) and usually the user's (cloud credentials, API keys).
//! A command the model runs must not see them: `env` would print them into
//! the conversation. An [`EnvPolicy`], in the shape of Codex's
//! `shell_environment_policy` and read from the `shellEnvironmentPolicy`
//! settings key ([`SETTINGS_KEY`]), decides what a child inherits:
//!
//! 1. `inherit`: `all` of Gantry's variables, the `core` set ([`CORE_VARS`],
//!    and `LC_*`) or `none`;
//! 2. minus the names matching `exclude`, and [`DEFAULT_EXCLUDES`] unless
//!    `ignoreDefaultExcludes`;
//! 3. minus the names that do not match `includeOnly`, when given;
//! 4. minus Gantry's own secrets ([`ALWAYS_REMOVED`]), whatever the
//!    policy says;
//! 5. plus `set`, which wins over anything inherited.
//!
//! Globs are case-insensitive. A workspace's settings come with its
//! checkout, so [`EnvPolicy::layered`] honours them only where they
//! tighten the user's policy, unless the user trusts the folder.
//!
//! Servers and commands the user configures (`mcpServers`,
//! `toolDiscoveryCommand`) get Gantry's environment as Gemini CLI and Qwen
//! Code pass it, since they may need the user's credentials, but never
//! Gantry's own secrets ([`EnvPolicy::all_but_gantrys_secrets`]); a
//! server's `env` comes on top, with `$VAR` taken from Gantry's unfiltered
//! environment by [`expand`].

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;

/// The settings key of the policy.
pub const SETTINGS_KEY: &str = "shellEnvironmentPolicy";

/// Gantry's own secrets, removed from every child's environment whatever
/// the policy says: the bearer tokens of `gantry mcp --http` and the API
/// keys of the web search providers (the variables its documentation
/// names).
pub const ALWAYS_REMOVED: &[&str] = &["GANTRY_HTTP_TOKEN", "BRAVE_API_KEY", "TAVILY_API_KEY"];

/// Names excluded unless `ignoreDefaultExcludes` (case-insensitive): where
/// credentials usually live.
pub const DEFAULT_EXCLUDES: &[&str] =
    &["*TOKEN*", "*SECRET*", "*KEY*", "*PASSWORD*", "*CREDENTIAL*"];

/// What `inherit: core` keeps (with every `LC_*`): enough for a program to
/// find its tools, its home, a temporary directory and the user's locale.
pub const CORE_VARS: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP", "LANG", "TERM",
];

/// Which of Gantry's variables a child starts from, narrowest first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Inherit {
    /// Nothing: only `set`.
    None,
    /// [`CORE_VARS`] and `LC_*`.
    Core,
    /// Everything (the default), before the excludes.
    #[default]
    All,
}

impl fmt::Display for Inherit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Inherit::None => "none",
            Inherit::Core => "core",
            Inherit::All => "all",
        })
    }
}

/// The `shellEnvironmentPolicy` settings section of one file, as written.
/// Every field is optional so that a workspace's section can be told apart
/// from the user's field by field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnvPolicySettings {
    /// `all` (default), `core` or `none`.
    pub inherit: Option<Inherit>,
    /// Drop [`DEFAULT_EXCLUDES`] (default false).
    pub ignore_default_excludes: Option<bool>,
    /// Globs of names to remove.
    pub exclude: Option<Vec<String>>,
    /// Globs of names to keep, all others removed (empty: no filter).
    pub include_only: Option<Vec<String>>,
    /// Variables to set, winning over inherited ones.
    pub set: Option<BTreeMap<String, String>>,
}

/// A glob in the policy that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {source}")]
pub struct BadGlob {
    /// `exclude` or `includeOnly`.
    pub field: &'static str,
    /// What globset said (it names the glob).
    #[source]
    pub source: globset::Error,
}

/// Compiled globs, with their text for messages.
#[derive(Debug, Clone)]
struct Globs {
    patterns: Vec<String>,
    set: GlobSet,
}

impl Globs {
    fn new(field: &'static str, patterns: Vec<String>) -> Result<Globs, BadGlob> {
        let mut builder = GlobSetBuilder::new();
        for pattern in &patterns {
            let glob = GlobBuilder::new(pattern)
                .case_insensitive(true)
                .build()
                .map_err(|source| BadGlob { field, source })?;
            builder.add(glob);
        }
        let set = builder
            .build()
            .map_err(|source| BadGlob { field, source })?;
        Ok(Globs { patterns, set })
    }

    fn matches(&self, name: &OsStr) -> bool {
        self.set.is_match(Path::new(name))
    }
}

/// What a child run on the model's behalf inherits: see the
/// [module](self). The default inherits everything but the
/// [`DEFAULT_EXCLUDES`] and [`ALWAYS_REMOVED`].
#[derive(Debug, Clone)]
pub struct EnvPolicy {
    inherit: Inherit,
    exclude: Globs,
    /// Each list must match (a workspace's list narrows the user's).
    include_only: Vec<Globs>,
    set: BTreeMap<String, String>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        EnvPolicy::new(EnvPolicySettings::default()).expect("the default excludes are valid globs")
    }
}

/// A policy from two levels of settings, and what of the workspace's was
/// not honoured.
#[derive(Debug, Clone)]
pub struct Layered {
    /// The policy in force.
    pub policy: EnvPolicy,
    /// Each workspace field that would have loosened the policy and was
    /// ignored, as `field: value (why)`.
    pub ignored: Vec<String>,
}

impl EnvPolicy {
    /// Everything but Gantry's own secrets ([`ALWAYS_REMOVED`]): for what
    /// the user configured to run (an MCP server, a discovery command),
    /// which may need the user's own credentials but never Gantry's.
    pub fn all_but_gantrys_secrets() -> EnvPolicy {
        EnvPolicy::new(EnvPolicySettings {
            inherit: Some(Inherit::All),
            ignore_default_excludes: Some(true),
            ..EnvPolicySettings::default()
        })
        .expect("no glob to compile")
    }

    /// The policy one section describes on its own.
    pub fn new(settings: EnvPolicySettings) -> Result<EnvPolicy, BadGlob> {
        Self::build(
            settings.inherit.unwrap_or_default(),
            settings.ignore_default_excludes.unwrap_or(false),
            settings.exclude.unwrap_or_default(),
            settings.include_only.into_iter().collect(),
            settings.set.unwrap_or_default(),
        )
    }

    /// The policy a run's settings give (the user's section overlaid with
    /// the workspace's, see [`EnvPolicy::layered`]); an error names the
    /// section and the files, for a family to refuse to start a child
    /// rather than guess what the user meant to hide.
    pub fn of_settings(settings: &gantry_core::Settings) -> Result<Layered, String> {
        let user = settings
            .user_section::<EnvPolicySettings>(SETTINGS_KEY)
            .map_err(|e| e.to_string())?;
        let workspace = settings
            .workspace_section::<EnvPolicySettings>(SETTINGS_KEY)
            .map_err(|e| e.to_string())?;
        EnvPolicy::layered(user, workspace, settings.workspace_trusted()).map_err(|e| {
            let files: Vec<String> = settings
                .files()
                .iter()
                .map(|file| file.display().to_string())
                .collect();
            format!("settings `{SETTINGS_KEY}` ({}): {e}", files.join(", "))
        })
    }

    /// The policy of the user's section overlaid with the workspace's.
    /// When the user trusts the workspace it wins field by field (`set`
    /// variable by variable), as every other setting does. Otherwise it may
    /// only tighten: a narrower `inherit`, `ignoreDefaultExcludes: false`,
    /// more `exclude` globs and an `includeOnly` that narrows the user's
    /// are honoured; a wider `inherit`, `ignoreDefaultExcludes: true` and
    /// any `set` are ignored and listed in [`Layered::ignored`].
    pub fn layered(
        user: Option<EnvPolicySettings>,
        workspace: Option<EnvPolicySettings>,
        workspace_trusted: bool,
    ) -> Result<Layered, BadGlob> {
        let user = user.unwrap_or_default();
        let mut inherit = user.inherit.unwrap_or_default();
        let mut ignore_defaults = user.ignore_default_excludes.unwrap_or(false);
        let mut exclude = user.exclude.unwrap_or_default();
        let mut include_only: Vec<Vec<String>> = user.include_only.into_iter().collect();
        let mut set = user.set.unwrap_or_default();
        let mut ignored = Vec::new();
        if let Some(workspace) = workspace {
            if workspace_trusted {
                inherit = workspace.inherit.unwrap_or(inherit);
                ignore_defaults = workspace.ignore_default_excludes.unwrap_or(ignore_defaults);
                exclude = workspace.exclude.unwrap_or(exclude);
                if let Some(list) = workspace.include_only {
                    include_only = vec![list];
                }
                set.extend(workspace.set.unwrap_or_default());
            } else {
                match workspace.inherit {
                    Some(wider) if wider > inherit => ignored.push(format!(
                        "inherit: {wider} (wider than the user's `{inherit}`)"
                    )),
                    Some(narrower) => inherit = narrower,
                    None => {}
                }
                match workspace.ignore_default_excludes {
                    Some(true) if !ignore_defaults => ignored.push(
                        "ignoreDefaultExcludes: true (the user's settings keep them)".to_string(),
                    ),
                    Some(value) => ignore_defaults = value,
                    None => {}
                }
                exclude.extend(workspace.exclude.unwrap_or_default());
                include_only.extend(workspace.include_only);
                let names: Vec<String> = workspace.set.unwrap_or_default().into_keys().collect();
                if !names.is_empty() {
                    ignored.push(format!(
                        "set: {} (only the user's settings add variables)",
                        names.join(", ")
                    ));
                }
            }
        }
        let policy = Self::build(inherit, ignore_defaults, exclude, include_only, set)?;
        Ok(Layered { policy, ignored })
    }

    fn build(
        inherit: Inherit,
        ignore_defaults: bool,
        mut exclude: Vec<String>,
        include_only: Vec<Vec<String>>,
        set: BTreeMap<String, String>,
    ) -> Result<EnvPolicy, BadGlob> {
        if !ignore_defaults {
            let defaults = DEFAULT_EXCLUDES.iter().map(|glob| glob.to_string());
            exclude.splice(0..0, defaults);
        }
        Ok(EnvPolicy {
            inherit,
            exclude: Globs::new("exclude", exclude)?,
            include_only: include_only
                .into_iter()
                // An empty list filters nothing, as in Codex.
                .filter(|list| !list.is_empty())
                .map(|list| Globs::new("includeOnly", list))
                .collect::<Result<_, _>>()?,
            set,
        })
    }

    /// Whether an inherited variable named `name` reaches the child.
    pub fn keeps(&self, name: &OsStr) -> bool {
        let always_removed = ALWAYS_REMOVED
            .iter()
            .any(|secret| name.eq_ignore_ascii_case(secret));
        let inherited = match self.inherit {
            Inherit::All => true,
            Inherit::Core => is_core(name),
            Inherit::None => false,
        };
        inherited
            && !always_removed
            && !self.exclude.matches(name)
            && self.include_only.iter().all(|globs| globs.matches(name))
    }

    /// The child's whole environment from `base` (Gantry's own, usually
    /// [`std::env::vars_os`]): what the policy keeps, then `set`.
    pub fn apply(
        &self,
        base: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = base
            .into_iter()
            .filter(|(name, _)| !self.set.contains_key(&*name.to_string_lossy()))
            .filter(|(name, _)| self.keeps(name))
            .collect();
        env.extend(
            self.set
                .iter()
                .map(|(name, value)| (OsString::from(name), OsString::from(value))),
        );
        env
    }

    /// The child's whole environment from Gantry's own.
    pub fn environment(&self) -> Vec<(OsString, OsString)> {
        self.apply(std::env::vars_os())
    }

    /// The policy in one line, for `gantry status`.
    pub fn describe(&self) -> String {
        let mut line = format!("inherit {}", self.inherit);
        if self.inherit != Inherit::None {
            if !self.exclude.patterns.is_empty() {
                line.push_str(&format!("; excluding {}", self.exclude.patterns.join(", ")));
            }
            for list in &self.include_only {
                line.push_str(&format!("; only {}", list.patterns.join(", ")));
            }
        }
        if !self.set.is_empty() {
            let names: Vec<&str> = self.set.keys().map(String::as_str).collect();
            line.push_str(&format!("; setting {}", names.join(", ")));
        }
        line.push_str(&format!("; never {}", ALWAYS_REMOVED.join(", ")));
        line
    }
}

/// Whether `name` is in the `core` set.
fn is_core(name: &OsStr) -> bool {
    let name = name.as_encoded_bytes();
    name.starts_with(b"LC_") || CORE_VARS.iter().any(|core| name == core.as_bytes())
}

/// A `$VAR` that could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// The variable is not set and no default was given.
    #[error("${0} is not set")]
    Unset(String),
    /// A `${` without its `}`.
    #[error("`${{` without a closing `}}`")]
    Unclosed,
}

/// `value` with `$VAR`, `${VAR}` and `${VAR:-default}` replaced by what
/// `lookup` gives (the default, taken as written, when it gives nothing),
/// and `$$` by `$`. A `$` before anything else stays as it is. For the
/// environments of servers and workers the user configures, which name
/// their variables exactly and take their values from Gantry's unfiltered
/// environment ([`expand_env`]).
pub fn expand(
    value: &str,
    lookup: impl Fn(&str) -> Option<OsString>,
) -> Result<OsString, ExpandError> {
    let mut out = OsString::new();
    let mut rest = value;
    while let Some(dollar) = rest.find('$') {
        out.push(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        if let Some(after) = after.strip_prefix('$') {
            out.push("$");
            rest = after;
        } else if let Some(inner) = after.strip_prefix('{') {
            let close = inner.find('}').ok_or(ExpandError::Unclosed)?;
            let (name, default) = match inner[..close].split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (&inner[..close], None),
            };
            match (lookup(name), default) {
                (Some(found), _) => out.push(found),
                (None, Some(default)) => out.push(default),
                (None, None) => return Err(ExpandError::Unset(name.to_string())),
            }
            rest = &inner[close + 1..];
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                out.push("$");
                rest = after;
            } else {
                out.push(lookup(name).ok_or_else(|| ExpandError::Unset(name.to_string()))?);
                rest = &after[end..];
            }
        }
    }
    out.push(rest);
    Ok(out)
}

/// [`expand`] from Gantry's own, unfiltered environment.
pub fn expand_env(value: &str) -> Result<OsString, ExpandError> {
    expand(value, |name| std::env::var_os(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(names: &[&str]) -> Vec<(OsString, OsString)> {
        names
            .iter()
            .map(|name| {
                (
                    OsString::from(name),
                    OsString::from(format!("{name}-value")),
                )
            })
            .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter()
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect()
    }

    fn settings(json: serde_json::Value) -> EnvPolicySettings {
        serde_json::from_value(json).unwrap()
    }

    fn policy(json: serde_json::Value) -> EnvPolicy {
        EnvPolicy::new(settings(json)).unwrap()
    }

    const ALL: &[&str] = &[
        "PATH",
        "HOME",
        "LC_ALL",
        "GANTRY_HTTP_TOKEN",
        "BRAVE_API_KEY",
        "MY_API_KEY",
        "db_secret_x",
        "AWS_SESSION_TOKEN",
        "Some_Password",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "CARGO_HOME",
        "RUST_LOG",
    ];

    #[test]
    fn by_default_everything_but_secrets_is_inherited() {
        let env = EnvPolicy::default().apply(base(ALL));
        assert_eq!(
            names(&env),
            ["PATH", "HOME", "LC_ALL", "CARGO_HOME", "RUST_LOG"]
        );
        assert_eq!(env[0].1, "PATH-value");
    }

    #[test]
    fn gantry_secrets_go_even_with_every_exclude_dropped() {
        let policy = policy(serde_json::json!({
            "inherit": "all", "ignoreDefaultExcludes": true, "exclude": [],
        }));
        let env = names(&policy.apply(base(ALL)));
        assert!(env.contains(&"MY_API_KEY".to_string()), "{env:?}");
        assert!(!env.contains(&"GANTRY_HTTP_TOKEN".to_string()), "{env:?}");
        assert!(!env.contains(&"BRAVE_API_KEY".to_string()), "{env:?}");
    }

    #[test]
    fn core_and_none_keep_what_they_say_and_set_is_added() {
        let core = policy(serde_json::json!({"inherit": "core", "set": {"CI": "1"}}));
        assert_eq!(
            names(&core.apply(base(ALL))),
            ["PATH", "HOME", "LC_ALL", "CI"]
        );
        let none = policy(serde_json::json!({"inherit": "none", "set": {"CI": "1"}}));
        assert_eq!(names(&none.apply(base(ALL))), ["CI"]);
    }

    #[test]
    fn globs_are_case_insensitive_and_set_wins() {
        let policy = policy(serde_json::json!({
            "exclude": ["cargo_*"],
            "includeOnly": ["*home", "path", "rust_*"],
            "set": {"RUST_LOG": "debug", "PATH": "/bin"},
        }));
        let env = policy.apply(base(ALL));
        assert_eq!(names(&env), ["HOME", "PATH", "RUST_LOG"]);
        assert_eq!(env[1].1, "/bin");
        assert_eq!(env[2].1, "debug");
        let err = EnvPolicy::new(settings(serde_json::json!({"exclude": ["a[b"]})))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("exclude: ") && err.contains("a[b"), "{err}");
    }

    #[test]
    fn an_untrusted_workspace_only_tightens() {
        let user = settings(serde_json::json!({"inherit": "core", "includeOnly": ["*"]}));
        let workspace = settings(serde_json::json!({
            "inherit": "all",
            "ignoreDefaultExcludes": true,
            "exclude": ["lc_*"],
            "includeOnly": ["PATH", "LC_*"],
            "set": {"PATH": "/evil"},
        }));
        let layered =
            EnvPolicy::layered(Some(user.clone()), Some(workspace.clone()), false).unwrap();
        assert_eq!(
            layered.ignored,
            [
                "inherit: all (wider than the user's `core`)",
                "ignoreDefaultExcludes: true (the user's settings keep them)",
                "set: PATH (only the user's settings add variables)",
            ]
        );
        let env = layered.policy.apply(base(ALL));
        assert_eq!(env, base(&["PATH"]));

        // Trusted, it wins field by field.
        let trusted = EnvPolicy::layered(Some(user), Some(workspace), true).unwrap();
        assert!(trusted.ignored.is_empty());
        let env = names(&trusted.policy.apply(base(ALL)));
        assert_eq!(env, ["PATH"]);
        assert_eq!(trusted.policy.apply(base(ALL))[0].1, "/evil");

        // Narrowing is honoured untrusted.
        let narrower = EnvPolicy::layered(
            None,
            Some(settings(serde_json::json!({"inherit": "none"}))),
            false,
        )
        .unwrap();
        assert!(narrower.ignored.is_empty());
        assert!(narrower.policy.apply(base(ALL)).is_empty());
    }

    #[test]
    fn variables_expand_from_the_lookup() {
        let lookup = |name: &str| (name == "HOME").then(|| OsString::from("/home/u"));
        let cases = [
            ("$HOME/bin", "/home/u/bin"),
            ("${HOME}x", "/home/ux"),
            ("${NOPE:-fallback}", "fallback"),
            ("${HOME:-fallback}", "/home/u"),
            ("$$HOME costs $5 $", "$HOME costs $5 $"),
            ("plain", "plain"),
        ];
        for (value, expected) in cases {
            assert_eq!(expand(value, lookup).unwrap(), expected, "{value}");
        }
        assert_eq!(
            expand("a $NOPE b", lookup),
            Err(ExpandError::Unset("NOPE".into()))
        );
        assert_eq!(
            expand("${NOPE}", lookup),
            Err(ExpandError::Unset("NOPE".into()))
        );
        assert_eq!(expand("${HOME", lookup), Err(ExpandError::Unclosed));
        assert_eq!(ExpandError::Unset("X".into()).to_string(), "$X is not set");
    }
}
