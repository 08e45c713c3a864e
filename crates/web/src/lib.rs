//! The web tools of SPEC §5: `web_fetch` and `web_search`, both read tier.
//!
//! **`web_fetch`** (`url`, `prompt`) gets one page and returns it as text a
//! model can read: HTML as Markdown (scripts, styles, navigation dropped),
//! JSON pretty-printed, text as it is, binaries described. Gantry runs no
//! model of its own, so `prompt` is not executed: it is echoed at the top of
//! the result ("Looking for: …") to keep the caller's reading focused.
//! Limits: 5 redirects, each hop checked; 5 MB of body; 100,000 characters
//! of output; `web.timeoutSeconds` (default 30) for the whole fetch and at
//! most 10 s per connection attempt. Each cut is said in the result.
//!
//! A model can be steered by a page it read into fetching cloud metadata
//! (169.254.169.254) or an admin page on the user's network, so loopback,
//! private (RFC 1918, CGNAT, ULA), link-local, unspecified, multicast and
//! reserved addresses are refused by default: after DNS resolution, which
//! web_fetch does itself before connecting to exactly the checked addresses,
//! and again on every redirect. Environment proxies are not used, since a
//! proxy would connect somewhere web_fetch never checked.
//!
//! **`web_search`** (`query`, `max_results`) asks the provider configured
//! in `web.search`: SearXNG's JSON API, Brave Search or Tavily. Without one
//! the tool is still listed and answers with how to configure one. The
//! provider's URL is the user's own setting, so the private-address refusal
//! does not apply to it (a self-hosted SearXNG on localhost is the common
//! case).
//!
//! The `web` settings section:
//!
//! ```json
//! {"web": {
//!   "allowPrivateAddresses": ["127.0.0.0/8"],
//!   "timeoutSeconds": 30,
//!   "search": {"provider": "brave", "apiKeyEnv": "BRAVE_API_KEY"}
//! }}
//! ```
//!
//! `allowPrivateAddresses` is `false` (default), `true` (every address), or
//! a list of address ranges to allow on top of the public ones. `search`
//! takes `provider` (`searxng`, `brave`, `tavily`), `url` (required for
//! SearXNG; overrides the API address of the others, for proxies and tests),
//! and for Brave and Tavily `apiKey` or `apiKeyEnv` (the name of an
//! environment variable holding the key).
//!
//! ```
//! use gantry_core::{Run, Settings, Workspace};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let settings = Settings::from_value(serde_json::json!({})).unwrap();
//! let builder = Run::builder(Workspace::new(".").unwrap()).settings(settings);
//! let run = gantry_web::register(builder).build();
//! let refused = run
//!     .call("web_fetch", serde_json::json!({
//!         "url": "http://169.254.169.254/latest/meta-data/",
//!         "prompt": "credentials",
//!     }))
//!     .await
//!     .unwrap_err();
//! assert!(refused.message.starts_with("refused: 169.254.169.254 is a link-local address"));
//! # });
//! ```
#![deny(missing_docs)]

mod address;
mod convert;
mod fetch;
mod http;
mod search;

use std::time::Duration;

use gantry_core::RunBuilder;
use serde::Deserialize;
use serde_json::Value;

use crate::address::{Allow, Range};
use crate::fetch::{FetchConfig, WebFetch};
use crate::search::{SearchConfig, SearchSettings, WebSearch};

/// The settings key this family reads.
pub const SETTINGS_SECTION: &str = "web";

/// The whole fetch (or search exchange) must finish within this unless the
/// settings say otherwise.
const DEFAULT_TIMEOUT_SECONDS: f64 = 30.0;

/// The keys of the `web` section web_fetch reads; the search keys are read
/// separately so a mistake in one does not disable the other tool.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct FetchSettings {
    allow_private_addresses: Option<Value>,
    timeout_seconds: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct SearchSection {
    search: Option<SearchSettings>,
    timeout_seconds: Option<f64>,
}

/// The family as the run assembly wires it.
pub const FAMILY: gantry_core::PlainFamily = gantry_core::PlainFamily::new("web", register)
    .settings(&[SETTINGS_SECTION], |settings| {
        let mut warnings = gantry_core::check_section::<FetchSettings>(settings, SETTINGS_SECTION);
        if let Ok((_, ignored)) = honoured::<Value>(settings) {
            warnings.extend(settings.ignored_untrusted(
                &ignored,
                "these open private addresses or choose where searches (and their API keys) go",
            ));
        }
        warnings
    });

/// The `web` section as honoured: an untrusted workspace's own file may
/// not open private addresses to `web_fetch` (a cloned repository could
/// aim it at a cloud's metadata service) nor choose the search provider,
/// its URL and the variable its key is read from (it could send any of
/// the user's variables to a server of its own). Also returns what was
/// ignored.
fn honoured<T: serde::de::DeserializeOwned + Default>(
    settings: &gantry_core::Settings,
) -> Result<(T, Vec<String>), gantry_core::SettingsError> {
    settings.section_honoured(SETTINGS_SECTION, |path| {
        matches!(path, ["allowPrivateAddresses"] | ["search"])
    })
}

/// Adds `web_fetch` and `web_search`. Both are always listed; a malformed
/// `web` section makes the affected tool answer every call with the
/// settings error instead of quietly running with defaults.
pub fn register(builder: RunBuilder) -> RunBuilder {
    let settings = builder.current_settings();
    let fetch = honoured::<FetchSettings>(settings)
        .map_err(|e| e.to_string())
        .and_then(|(s, _ignored)| {
            Ok(FetchConfig {
                allow: allow(s.allow_private_addresses)?,
                timeout: timeout(s.timeout_seconds)?,
            })
        });
    let search = honoured::<SearchSection>(settings)
        .map_err(|e| e.to_string())
        .and_then(|(s, _ignored)| {
            Ok(SearchConfig {
                search: s.search,
                timeout: timeout(s.timeout_seconds)?,
            })
        });
    for error in [fetch.as_ref().err(), search.as_ref().err()]
        .into_iter()
        .flatten()
    {
        tracing::warn!("{error}");
    }
    builder
        .tool(WebFetch { config: fetch })
        .tool(WebSearch { config: search })
}

/// `web.allowPrivateAddresses`: absent or `false`, `true`, or a list of
/// ranges.
fn allow(value: Option<Value>) -> Result<Allow, String> {
    match value {
        None | Some(Value::Bool(false)) | Some(Value::Null) => Ok(Allow::PublicOnly),
        Some(Value::Bool(true)) => Ok(Allow::Everything),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => Range::parse(text),
                other => Err(format!("{other} is not a string")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Allow::Ranges)
            .map_err(|e| format!("web.allowPrivateAddresses: {e}")),
        Some(other) => Err(format!(
            "web.allowPrivateAddresses must be true, false or a list of ranges such as [\"127.0.0.0/8\"], not {other}"
        )),
    }
}

/// `web.timeoutSeconds`: positive, at most ten minutes.
fn timeout(seconds: Option<f64>) -> Result<Duration, String> {
    let seconds = seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS);
    if seconds > 0.0 && seconds <= 600.0 {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(format!(
            "web.timeoutSeconds must be more than 0 and at most 600, not {seconds}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn allow_setting_forms() {
        assert_eq!(allow(None).unwrap(), Allow::PublicOnly);
        assert_eq!(allow(Some(json!(false))).unwrap(), Allow::PublicOnly);
        assert_eq!(allow(Some(json!(true))).unwrap(), Allow::Everything);
        assert_eq!(
            allow(Some(json!(["10.0.0.0/8", "::1"]))).unwrap(),
            Allow::Ranges(vec![
                Range::parse("10.0.0.0/8").unwrap(),
                Range::parse("::1").unwrap()
            ])
        );
        assert!(
            allow(Some(json!("yes")))
                .unwrap_err()
                .contains("true, false or a list")
        );
        assert!(
            allow(Some(json!(["lan"])))
                .unwrap_err()
                .contains("`lan` is not an address range")
        );
        assert!(
            allow(Some(json!([8])))
                .unwrap_err()
                .contains("8 is not a string")
        );
    }

    #[test]
    fn timeout_bounds() {
        assert_eq!(timeout(None).unwrap(), Duration::from_secs(30));
        assert_eq!(timeout(Some(0.5)).unwrap(), Duration::from_millis(500));
        assert!(timeout(Some(0.0)).unwrap_err().contains("more than 0"));
        assert!(timeout(Some(601.0)).is_err());
    }
}
