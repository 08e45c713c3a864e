//! `web_search`: a query sent to the search provider the user configured.
//!
//! The provider's URL comes from the user's own settings, so the private
//! address refusal of `web_fetch` does not apply to it: a self-hosted
//! SearXNG on localhost is the common case.

use std::time::Duration;

use gantry_core::{
    Display, Part, Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec, async_trait,
};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{Client, RequestBuilder, StatusCode, Url};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::http;

/// Results shown when the call does not say.
const DEFAULT_RESULTS: usize = 8;
/// Bytes of a provider's answer read at most; a page of results is a few
/// dozen KB.
const MAX_ANSWER_BYTES: usize = 2 * 1024 * 1024;
/// Characters of a result's snippet shown at most.
const SNIPPET_CHARS: usize = 400;

const BRAVE_URL: &str = "https://api.search.brave.com";
const TAVILY_URL: &str = "https://api.tavily.com";

/// How to configure a provider, shown when none is.
const HOW_TO_CONFIGURE: &str = r#"Add a provider to the "web" section of ~/.gantry/settings.json (or the workspace's .gantry/settings.json), for example a self-hosted SearXNG with JSON output enabled:
  {"web": {"search": {"provider": "searxng", "url": "http://localhost:8888"}}}
or Brave Search with an API key (read from an environment variable):
  {"web": {"search": {"provider": "brave", "apiKeyEnv": "BRAVE_API_KEY"}}}
or Tavily:
  {"web": {"search": {"provider": "tavily", "apiKeyEnv": "TAVILY_API_KEY"}}}"#;

/// `web.search` as written in the settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SearchSettings {
    provider: ProviderKind,
    url: Option<String>,
    api_key: Option<String>,
    api_key_env: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ProviderKind {
    Searxng,
    Brave,
    Tavily,
}

/// What web_search needs from the settings.
#[derive(Debug, Clone)]
pub(crate) struct SearchConfig {
    pub(crate) search: Option<SearchSettings>,
    pub(crate) timeout: Duration,
}

/// One result, as every provider's answer is reduced to.
#[derive(Debug, Clone, PartialEq)]
struct Hit {
    title: String,
    url: String,
    snippet: String,
}

/// A search backend: builds its request and reads its JSON. The HTTP
/// exchange and its error reporting are shared.
trait Provider: Send + Sync {
    /// Name for messages ("SearXNG").
    fn name(&self) -> &'static str;
    /// The request for `query`, asking for at most `max` results.
    fn request(&self, client: &Client, query: &str, max: usize) -> Result<RequestBuilder, String>;
    /// The results in the provider's JSON answer; the text is any note
    /// worth passing on (engines that did not answer).
    fn parse(&self, answer: &Value) -> Result<(Vec<Hit>, Option<String>), String>;
    /// What to check when the provider refuses the credentials.
    fn auth_hint(&self) -> &'static str {
        "check the API key in web.search (apiKey, or the variable named by apiKeyEnv)"
    }
}

struct Searxng {
    base: Url,
}

struct Brave {
    base: Url,
    key: String,
}

struct Tavily {
    base: Url,
    key: String,
}

/// `base` plus `path`, keeping any path prefix the base has (a SearXNG
/// served under /searx).
fn endpoint(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let joined = format!("{}/{path}", base.path().trim_end_matches('/'));
    url.set_path(&joined);
    url
}

impl Provider for Searxng {
    fn name(&self) -> &'static str {
        "SearXNG"
    }

    fn request(&self, client: &Client, query: &str, _max: usize) -> Result<RequestBuilder, String> {
        let mut url = endpoint(&self.base, "search");
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        Ok(client.get(url).header(ACCEPT, "application/json"))
    }

    fn parse(&self, answer: &Value) -> Result<(Vec<Hit>, Option<String>), String> {
        let hits = hits(answer.get("results"), "content")?;
        let silent: Vec<String> = answer
            .get("unresponsive_engines")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|pair| {
                let pair = pair.as_array()?;
                let engine = pair.first()?.as_str()?;
                Some(match pair.get(1).and_then(Value::as_str) {
                    Some(why) => format!("{engine} ({why})"),
                    None => engine.to_string(),
                })
            })
            .collect();
        let note = (!silent.is_empty())
            .then(|| format!("engines that did not answer: {}", silent.join(", ")));
        Ok((hits, note))
    }

    fn auth_hint(&self) -> &'static str {
        "SearXNG answers 403 when JSON output is off: add `json` to `search.formats` in its settings.yml"
    }
}

impl Provider for Brave {
    fn name(&self) -> &'static str {
        "Brave Search"
    }

    fn request(&self, client: &Client, query: &str, max: usize) -> Result<RequestBuilder, String> {
        let mut url = endpoint(&self.base, "res/v1/web/search");
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("count", &max.to_string());
        Ok(client
            .get(url)
            .header(ACCEPT, "application/json")
            .header("X-Subscription-Token", &self.key))
    }

    fn parse(&self, answer: &Value) -> Result<(Vec<Hit>, Option<String>), String> {
        // No `web` object means no web results.
        match answer.get("web") {
            None => Ok((vec![], None)),
            Some(web) => Ok((hits(web.get("results"), "description")?, None)),
        }
    }
}

impl Provider for Tavily {
    fn name(&self) -> &'static str {
        "Tavily"
    }

    fn request(&self, client: &Client, query: &str, max: usize) -> Result<RequestBuilder, String> {
        let body = serde_json::json!({"query": query, "max_results": max});
        Ok(client
            .post(endpoint(&self.base, "search"))
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/json")
            .header(AUTHORIZATION, format!("Bearer {}", self.key))
            .body(body.to_string()))
    }

    fn parse(&self, answer: &Value) -> Result<(Vec<Hit>, Option<String>), String> {
        Ok((hits(answer.get("results"), "content")?, None))
    }
}

/// Reads a `[{title, url, <snippet_key>}]` array, the shape all three
/// providers share.
fn hits(results: Option<&Value>, snippet_key: &str) -> Result<Vec<Hit>, String> {
    let Some(results) = results else {
        return Ok(vec![]);
    };
    let results = results
        .as_array()
        .ok_or("`results` is not a list".to_string())?;
    Ok(results
        .iter()
        .filter_map(|r| {
            let url = r.get("url")?.as_str()?.to_string();
            let text = |key: &str| {
                r.get(key)
                    .and_then(Value::as_str)
                    .map(plain)
                    .unwrap_or_default()
            };
            Some(Hit {
                title: text("title"),
                url,
                snippet: text(snippet_key),
            })
        })
        .collect())
}

/// Snippets come with highlighting markup (`<strong>`) and entities; the
/// model wants the words.
fn plain(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(SNIPPET_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// The API key: given inline, or read from the variable `apiKeyEnv` names
/// (so the key need not sit in a settings file that might be committed).
fn api_key(
    settings: &SearchSettings,
    provider: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    match (&settings.api_key, &settings.api_key_env) {
        (Some(_), Some(_)) => Err(format!(
            "web.search gives both apiKey and apiKeyEnv for {provider}; keep one"
        )),
        (Some(key), None) if !key.trim().is_empty() => Ok(key.trim().to_string()),
        (Some(_), None) => Err(format!("web.search.apiKey for {provider} is empty")),
        (None, Some(var)) => match env(var) {
            Some(key) if !key.trim().is_empty() => Ok(key.trim().to_string()),
            _ => Err(format!(
                "web.search.apiKeyEnv names the environment variable {var}, which is not set (or empty) in Gantry's environment"
            )),
        },
        (None, None) => Err(format!(
            "{provider} needs an API key: set web.search.apiKeyEnv to the name of an environment variable holding it (or web.search.apiKey)"
        )),
    }
}

fn base_url(
    settings: &SearchSettings,
    default: Option<&str>,
    provider: &str,
) -> Result<Url, String> {
    let text = match (settings.url.as_deref(), default) {
        (Some(url), _) => url,
        (None, Some(default)) => default,
        (None, None) => {
            return Err(format!(
                "{provider} needs the address of the instance: set web.search.url, e.g. \"http://localhost:8888\""
            ));
        }
    };
    let url = Url::parse(text.trim())
        .map_err(|e| format!("web.search.url `{text}` is not a URL: {e}"))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(format!("web.search.url must be http or https, not {other}")),
    }
}

impl SearchSettings {
    /// The provider these settings describe, or what is wrong with them.
    fn provider(&self, env: impl Fn(&str) -> Option<String>) -> Result<Box<dyn Provider>, String> {
        Ok(match self.provider {
            ProviderKind::Searxng => {
                if self.api_key.is_some() || self.api_key_env.is_some() {
                    return Err(
                        "SearXNG takes no API key; remove apiKey/apiKeyEnv from web.search".into(),
                    );
                }
                Box::new(Searxng {
                    base: base_url(self, None, "SearXNG")?,
                })
            }
            ProviderKind::Brave => Box::new(Brave {
                base: base_url(self, Some(BRAVE_URL), "Brave Search")?,
                key: api_key(self, "Brave Search", env)?,
            }),
            ProviderKind::Tavily => Box::new(Tavily {
                base: base_url(self, Some(TAVILY_URL), "Tavily")?,
                key: api_key(self, "Tavily", env)?,
            }),
        })
    }
}

/// The `web_search` tool. Listed whether or not a provider is configured,
/// so an agent that calls it learns how to get one.
pub(crate) struct WebSearch {
    pub(crate) config: Result<SearchConfig, String>,
}

/// Parameters of `web_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WebSearchParams {
    /// What to search the web for, as you would type it into a search engine.
    query: String,
    /// How many results to return (default 8, at most 20).
    // 20 is Brave's and Tavily's own limit.
    #[schemars(range(min = 1, max = 20))]
    max_results: Option<usize>,
}

#[async_trait]
impl Tool for WebSearch {
    type Params = WebSearchParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "web_search",
            "Web Search",
            Tier::Read,
            "Search the web through the search provider configured in Gantry's settings \
             (SearXNG, Brave Search or Tavily) and get a numbered list of results: title, URL \
             and snippet. Fetch a result's page with web_fetch.",
        )
    }

    fn validate(&self, params: &WebSearchParams, _: &Run) -> Result<(), String> {
        if params.query.trim().is_empty() {
            return Err("query: expected the words to search for".into());
        }
        // max_results is bounded by the schema.
        Ok(())
    }

    fn describe(&self, params: &WebSearchParams) -> String {
        format!("search the web for: {}", params.query.trim())
    }

    async fn execute(
        &self,
        params: WebSearchParams,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let config = self
            .config
            .as_ref()
            .map_err(|e| ToolError::failed(format!("web_search cannot run: {e}")))?;
        let Some(settings) = &config.search else {
            return Err(ToolError::failed(format!(
                "web_search has no search provider configured. {HOW_TO_CONFIGURE}"
            )));
        };
        let provider = settings
            .provider(|var| std::env::var(var).ok())
            .map_err(|e| ToolError::failed(format!("web_search is misconfigured: {e}")))?;
        let query = params.query.trim();
        let max = params.max_results.unwrap_or(DEFAULT_RESULTS);
        let (hits, note) = search(provider.as_ref(), query, max, config.timeout)
            .await
            .map_err(ToolError::Failed)?;
        let text = format_hits(provider.name(), query, &hits[..hits.len().min(max)], note);
        let summary = format!(
            "Searched {} for \"{query}\": {}",
            provider.name(),
            gantry_core::text::counted(hits.len().min(max) as u64, "result", "results")
        );
        Ok(ToolResult::new(
            vec![Part::text(text)],
            Display::Markdown { markdown: summary },
        ))
    }
}

/// One exchange with the provider, with each failure told apart.
async fn search(
    provider: &dyn Provider,
    query: &str,
    max: usize,
    timeout: Duration,
) -> Result<(Vec<Hit>, Option<String>), String> {
    let name = provider.name();
    let client = http::api_client(timeout)?;
    let request = provider.request(&client, query, max)?;
    let response = request.send().await.map_err(|e| {
        if e.is_timeout() {
            format!(
                "{name} did not answer within {} s (web.timeoutSeconds)",
                timeout.as_secs_f64()
            )
        } else {
            format!("cannot reach {name}: {}", http::chain(e))
        }
    })?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(|v| match v.parse::<u64>() {
            Ok(seconds) => format!(", retry after {seconds} s"),
            Err(_) => format!(", retry after {v}"),
        })
        .unwrap_or_default();
    let (body, cut) = http::read_capped(response, MAX_ANSWER_BYTES)
        .await
        .map_err(|e| {
            format!(
                "{name} answered HTTP {status} but the body could not be read: {}",
                http::chain(e)
            )
        })?;
    if cut {
        return Err(format!(
            "{name} answered with more than {MAX_ANSWER_BYTES} bytes, far more than a page of results; is web.search.url the search API?"
        ));
    }
    let body = String::from_utf8_lossy(&body);
    let said = http::snippet(&body);
    match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            return Err(format!(
                "{name} refused the request (HTTP {status}): {said}. {}",
                provider.auth_hint()
            ));
        }
        StatusCode::TOO_MANY_REQUESTS => {
            return Err(format!(
                "{name} is rate limiting these requests (HTTP {status}{retry_after}): {said}. \
                 Wait before searching again."
            ));
        }
        status if !status.is_success() => {
            return Err(format!("{name} answered HTTP {status}: {said}"));
        }
        _ => {}
    }
    let answer: Value = serde_json::from_str(&body)
        .map_err(|e| format!("{name} answered something that is not JSON ({e}): {said}"))?;
    provider
        .parse(&answer)
        .map_err(|e| format!("{name}'s answer is not in the expected shape: {e}"))
}

fn format_hits(provider: &str, query: &str, hits: &[Hit], note: Option<String>) -> String {
    let mut text = if hits.is_empty() {
        format!("No results for \"{query}\" from {provider}.")
    } else {
        format!("Results for \"{query}\" from {provider}:")
    };
    for (n, hit) in hits.iter().enumerate() {
        let title = if hit.title.is_empty() {
            "(untitled)"
        } else {
            hit.title.as_str()
        };
        text.push_str(&format!("\n\n{}. {title}\n   {}", n + 1, hit.url));
        if !hit.snippet.is_empty() {
            text.push_str(&format!("\n   {}", hit.snippet));
        }
    }
    if let Some(note) = note {
        text.push_str(&format!("\n\n({note})"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(json: Value) -> SearchSettings {
        serde_json::from_value(json).unwrap()
    }

    fn env(var: &str) -> Option<String> {
        (var == "BRAVE_API_KEY").then(|| " secret ".to_string())
    }

    #[test]
    fn keys_come_inline_or_from_the_named_variable() {
        let inline = settings(serde_json::json!({"provider": "brave", "apiKey": "k1"}));
        assert_eq!(api_key(&inline, "Brave", env).unwrap(), "k1");
        let named =
            settings(serde_json::json!({"provider": "brave", "apiKeyEnv": "BRAVE_API_KEY"}));
        assert_eq!(api_key(&named, "Brave", env).unwrap(), "secret");
        let unset = settings(serde_json::json!({"provider": "brave", "apiKeyEnv": "NOPE"}));
        assert!(
            api_key(&unset, "Brave", env)
                .unwrap_err()
                .contains("NOPE, which is not set")
        );
        let both =
            settings(serde_json::json!({"provider": "tavily", "apiKey": "a", "apiKeyEnv": "B"}));
        assert!(api_key(&both, "Tavily", env).unwrap_err().contains("both"));
        let none = settings(serde_json::json!({"provider": "brave"}));
        assert!(
            api_key(&none, "Brave", env)
                .unwrap_err()
                .contains("needs an API key")
        );
    }

    #[test]
    fn providers_need_their_pieces() {
        let searxng = settings(serde_json::json!({"provider": "searxng"}));
        assert!(
            searxng
                .provider(env)
                .err()
                .unwrap()
                .contains("set web.search.url")
        );
        let keyed =
            settings(serde_json::json!({"provider": "searxng", "url": "http://x", "apiKey": "k"}));
        assert!(
            keyed
                .provider(env)
                .err()
                .unwrap()
                .contains("takes no API key")
        );
        let ftp = settings(serde_json::json!({"provider": "searxng", "url": "ftp://x"}));
        assert!(ftp.provider(env).err().unwrap().contains("http or https"));
        let brave =
            settings(serde_json::json!({"provider": "brave", "apiKeyEnv": "BRAVE_API_KEY"}));
        assert_eq!(brave.provider(env).ok().unwrap().name(), "Brave Search");
    }

    #[test]
    fn endpoints_keep_a_path_prefix() {
        let base = Url::parse("http://host:8888/searx/").unwrap();
        assert_eq!(
            endpoint(&base, "search").as_str(),
            "http://host:8888/searx/search"
        );
        let root = Url::parse("https://api.tavily.com").unwrap();
        assert_eq!(
            endpoint(&root, "search").as_str(),
            "https://api.tavily.com/search"
        );
    }

    #[test]
    fn snippets_lose_markup() {
        assert_eq!(
            plain("The <strong>Rust</strong>  &amp; <em>Cargo</em>\n book&#39;s &lt;intro&gt;"),
            "The Rust & Cargo book's <intro>"
        );
        assert!(plain(&"word ".repeat(200)).ends_with('…'));
    }
}
