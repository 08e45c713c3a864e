//! `web_fetch`: one page, as Markdown, from an address the settings allow.
//!
//! Every hop (the first request and each redirect) is checked the same
//! way: the scheme must be http or https; an IP literal is classified as
//! it stands; a name is resolved here, each address classified, and the
//! request is then sent to exactly those checked addresses (reqwest's own
//! DNS is replaced by one that refuses everything), so a DNS answer that
//! changes between the check and the connect cannot reach anything else.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use gantry_core::{
    Display, Part, Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec, async_trait,
};
use reqwest::dns::{Name, Resolve, Resolving};
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use reqwest::redirect::Policy;
use reqwest::{Client, Response, StatusCode, Url};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::address::Allow;
use crate::convert::{self, Shape};
use crate::http;

/// Redirects followed before giving up.
const MAX_REDIRECTS: usize = 5;
/// Bytes of a body read at most; the rest is not downloaded.
const MAX_BODY_BYTES: usize = 5 * 1024 * 1024;
/// Characters of converted text returned at most.
const MAX_OUTPUT_CHARS: usize = 100_000;
/// Bytes of an error page read for its snippet.
const ERROR_BODY_BYTES: usize = 64 * 1024;

/// Asks for the forms web_fetch renders best, Markdown first for the sites
/// that serve it to agents.
const ACCEPT_VALUE: &str = "text/markdown, text/html;q=0.9, application/xhtml+xml;q=0.9, \
     text/plain;q=0.8, application/json;q=0.8, */*;q=0.5";

/// What web_fetch needs from the settings.
#[derive(Debug, Clone)]
pub(crate) struct FetchConfig {
    pub(crate) allow: Allow,
    pub(crate) timeout: Duration,
}

/// The `web_fetch` tool. A malformed `web` settings section is kept as the
/// error every call reports, rather than silently falling back to defaults
/// the user did not ask for.
pub(crate) struct WebFetch {
    pub(crate) config: Result<FetchConfig, String>,
}

/// Parameters of `web_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WebFetchParams {
    /// The http or https URL to fetch, e.g. `https://docs.rs/serde`.
    url: String,
    /// What you are looking for in the page (e.g. "the error type of
    /// from_str"). Echoed at the top of the result to focus the reading;
    /// it is not run by a model.
    prompt: String,
}

#[async_trait]
impl Tool for WebFetch {
    type Params = WebFetchParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "web_fetch",
            "Web Fetch",
            Tier::Read,
            "Fetch a web page (http or https) and get its content: HTML converted to Markdown \
             (scripts, styles and navigation dropped), JSON pretty-printed, plain text as it is; \
             binary files are described, not shown. `prompt` says what you are looking for: it \
             is echoed above the page as \"Looking for: …\" to guide your reading, and is not \
             executed (Gantry runs no model). Redirects are followed (at most 5); bodies are \
             read up to 5 MB and output cut at 100,000 characters, both said when hit. \
             Loopback, private and link-local addresses are refused unless the user's settings \
             allow them.",
        )
    }

    fn validate(&self, params: &WebFetchParams, _: &Run) -> Result<(), String> {
        let url = Url::parse(params.url.trim()).map_err(|e| {
            format!(
                "url: `{}` is not a valid URL ({e}); give a full http or https URL such as https://example.com/page",
                params.url
            )
        })?;
        check_scheme(&url).map_err(|e| format!("url: {e}"))?;
        if url.host().is_none() {
            return Err(format!("url: `{url}` names no host"));
        }
        if params.prompt.trim().is_empty() {
            return Err(
                "prompt: expected a short note of what you are looking for in the page".into(),
            );
        }
        Ok(())
    }

    fn describe(&self, params: &WebFetchParams) -> String {
        format!("fetch {}", params.url.trim())
    }

    async fn execute(
        &self,
        params: WebFetchParams,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let config = self
            .config
            .as_ref()
            .map_err(|e| ToolError::failed(format!("web_fetch cannot run: {e}")))?;
        let start = Url::parse(params.url.trim()).map_err(|e| ToolError::failed(e.to_string()))?;
        let fetched = tokio::time::timeout(config.timeout, fetch(start.clone(), config))
            .await
            .map_err(|_| {
                ToolError::failed(format!(
                    "timed out after {} fetching {start}: the page did not arrive in time \
                     (the limit is web.timeoutSeconds in settings)",
                    seconds(config.timeout)
                ))
            })?
            .map_err(ToolError::Failed)?;
        let prompt = params.prompt.trim().to_string();
        let page = tokio::task::spawn_blocking(move || render(fetched, &prompt))
            .await
            .map_err(|e| ToolError::failed(format!("converting the page failed: {e}")))?;
        Ok(ToolResult::new(
            vec![Part::text(page.text)],
            Display::Markdown {
                markdown: page.summary,
            },
        ))
    }
}

fn check_scheme(url: &Url) -> Result<(), String> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(format!(
            "only http and https URLs can be fetched; `{url}` has the scheme `{other}`"
        )),
    }
}

fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

/// A response that is not a redirect, with how it was reached and its body.
struct Fetched {
    requested: Url,
    url: Url,
    redirects: usize,
    status: StatusCode,
    media: String,
    charset: Option<String>,
    body: Body,
}

enum Body {
    /// Read, possibly cut at [`MAX_BODY_BYTES`].
    Read { bytes: Vec<u8>, cut: bool },
    /// A binary type, not downloaded.
    Skipped { length: Option<u64> },
}

/// Follows redirects by hand, checking every hop, and reads the final body.
async fn fetch(start: Url, config: &FetchConfig) -> Result<Fetched, String> {
    let mut url = start.clone();
    let mut chain = vec![];
    loop {
        let client = hop_client(&url, config)
            .await
            .map_err(|error| match error {
                Hop::Failed(why) => why,
                Hop::Refused(why) => match chain.last() {
                    None => format!("refused: {why}"),
                    Some(previous) => format!(
                        "refused: redirect {} from {previous} leads to {url}, and {why}",
                        chain.len()
                    ),
                },
            })?;
        let response = client
            .get(url.clone())
            .header(ACCEPT, ACCEPT_VALUE)
            .send()
            .await
            .map_err(|e| format!("cannot fetch {url}: {}", http::chain(e)))?;
        let status = response.status();
        if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    format!("HTTP {status} from {url} without a usable Location header")
                })?;
            let next = url
                .join(location)
                .map_err(|e| format!("{url} redirects to `{location}`, which is not a URL: {e}"))?;
            chain.push(url);
            if chain.len() > MAX_REDIRECTS {
                return Err(format!(
                    "stopped after {MAX_REDIRECTS} redirects without reaching a page: {} → {next}",
                    chain
                        .iter()
                        .map(Url::as_str)
                        .collect::<Vec<_>>()
                        .join(" → ")
                ));
            }
            url = next;
            continue;
        }
        if status.is_client_error() || status.is_server_error() {
            return Err(http_error(&url, response).await);
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let (media, charset) = convert::media_type(&content_type);
        let body = if convert::shape(&media) == Shape::Binary {
            Body::Skipped {
                length: response.content_length(),
            }
        } else {
            let (bytes, cut) = http::read_capped(response, MAX_BODY_BYTES)
                .await
                .map_err(|e| {
                    format!(
                        "the connection failed while reading {url}: {}",
                        http::chain(e)
                    )
                })?;
            Body::Read { bytes, cut }
        };
        return Ok(Fetched {
            requested: start,
            url,
            redirects: chain.len(),
            status,
            media,
            charset,
            body,
        });
    }
}

/// Why a hop cannot be made.
enum Hop {
    /// The destination is not allowed; the text says why and what to change.
    Refused(String),
    /// Something else went wrong (DNS, TLS set-up); the whole message.
    Failed(String),
}

/// Checks one hop's destination and builds a client that can only connect
/// to the addresses that passed.
async fn hop_client(url: &Url, config: &FetchConfig) -> Result<Client, Hop> {
    check_scheme(url).map_err(Hop::Refused)?;
    let builder = http::builder(config.timeout)
        .map_err(Hop::Failed)?
        .redirect(Policy::none())
        .dns_resolver(std::sync::Arc::new(NoDns));
    let literal = |ip: IpAddr| {
        config
            .allow
            .check(ip)
            .map_err(|r| Hop::Refused(format!("{} is {}; {}", r.ip, r.kind, config.allow.hint())))
    };
    let builder = match url.host() {
        None => return Err(Hop::Refused(format!("{url} names no host"))),
        Some(url::Host::Ipv4(ip)) => literal(IpAddr::V4(ip)).map(|()| builder)?,
        Some(url::Host::Ipv6(ip)) => literal(IpAddr::V6(ip)).map(|()| builder)?,
        Some(url::Host::Domain(name)) => {
            // Always known for http and https.
            let port = url.port_or_known_default().unwrap_or(80);
            let addrs = resolve(name, port, &config.allow).await?;
            builder.resolve_to_addrs(name, &addrs)
        }
    };
    builder
        .build()
        .map_err(|e| Hop::Failed(format!("cannot build the HTTP client: {}", http::chain(e))))
}

/// Resolves `name` and keeps the addresses the settings allow. Refuses
/// when none is left, naming the first address that was not allowed.
async fn resolve(name: &str, port: u16, allow: &Allow) -> Result<Vec<SocketAddr>, Hop> {
    let found: Vec<SocketAddr> = tokio::net::lookup_host((name, port))
        .await
        .map_err(|e| Hop::Failed(format!("cannot resolve {name}: {e}")))?
        .collect();
    let (allowed, refused): (Vec<_>, Vec<_>) = found
        .into_iter()
        .map(|addr| (addr, allow.check(addr.ip())))
        .partition(|(_, verdict)| verdict.is_ok());
    if !allowed.is_empty() {
        return Ok(allowed.into_iter().map(|(addr, _)| addr).collect());
    }
    let mut refusals = refused.into_iter().filter_map(|(_, verdict)| verdict.err());
    let Some(first) = refusals.next() else {
        return Err(Hop::Failed(format!("cannot resolve {name}: no addresses")));
    };
    let more = match refusals.count() {
        0 => String::new(),
        1 => " (and 1 more such address)".into(),
        n => format!(" (and {n} more such addresses)"),
    };
    Err(Hop::Refused(format!(
        "{name} resolves to {}, {}{more}; {}",
        first.ip,
        first.kind,
        allow.hint()
    )))
}

/// The resolver handed to reqwest: every name a request may use was
/// resolved and checked by [`hop_client`] and pinned with
/// `resolve_to_addrs`, so reqwest asking for any other name is refused.
struct NoDns;

impl Resolve for NoDns {
    fn resolve(&self, name: Name) -> Resolving {
        let message = format!(
            "{} was not resolved and checked by web_fetch, so it is not connected to",
            name.as_str()
        );
        Box::pin(async move { Err(message.into()) })
    }
}

/// An HTTP error with its status and the start of what the server said.
async fn http_error(url: &Url, response: Response) -> String {
    let status = response.status();
    let (media, charset) = convert::media_type(
        response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or(""),
    );
    let said = match http::read_capped(response, ERROR_BODY_BYTES).await {
        Ok((bytes, _)) => {
            let shape = convert::shape(&media);
            let text = convert::decode(&bytes, charset.as_deref(), shape);
            let text = if shape == Shape::Html {
                convert::html_to_markdown(&text, url).1
            } else {
                text
            };
            http::snippet(&text)
        }
        Err(e) => format!("(the body could not be read: {})", http::chain(e)),
    };
    if said.is_empty() {
        format!("HTTP {status} from {url} (empty body)")
    } else {
        format!("HTTP {status} from {url}: {said}")
    }
}

/// The text for the model and a short line for the person.
struct Page {
    text: String,
    summary: String,
}

fn render(fetched: Fetched, prompt: &str) -> Page {
    let mut head = format!("Looking for: {prompt}\nURL: {}", fetched.url);
    if fetched.redirects > 0 {
        head.push_str(&format!(
            " (reached from {} after {})",
            fetched.requested,
            gantry_core::text::counted(fetched.redirects as u64, "redirect", "redirects")
        ));
    }
    if fetched.status != StatusCode::OK {
        head.push_str(&format!("\nStatus: {}", fetched.status));
    }
    let shown_type = if fetched.media.is_empty() {
        "(none given)"
    } else {
        fetched.media.as_str()
    };
    head.push_str(&format!("\nContent-Type: {shown_type}"));

    let (bytes, body_cut) = match fetched.body {
        Body::Skipped { length } => {
            let size = length.map_or("of unknown size".to_string(), |n| format!("{n} bytes"));
            let text = format!(
                "{head}\n\nThis is binary content ({}, {size}) and was not downloaded: \
                 web_fetch returns HTML, text and JSON only.",
                fetched.media
            );
            return Page {
                summary: format!("{}: binary {}, not shown", fetched.url, fetched.media),
                text,
            };
        }
        Body::Read { bytes, cut } => (bytes, cut),
    };
    let shape = match convert::shape(&fetched.media) {
        Shape::Unknown => convert::sniff(&bytes),
        known => known,
    };
    let mut notes = vec![];
    if body_cut {
        notes.push(format!(
            "[the body is larger than {} MB; only its first {MAX_BODY_BYTES} bytes were read]",
            MAX_BODY_BYTES / (1024 * 1024)
        ));
    }
    let content = match shape {
        Shape::Binary => {
            let text = format!(
                "{head}\n\nThis is binary content (no usable Content-Type, {} bytes read) and is not shown: \
                 web_fetch returns HTML, text and JSON only.",
                bytes.len()
            );
            return Page {
                summary: format!("{}: binary content, not shown", fetched.url),
                text,
            };
        }
        Shape::Html => {
            let html = convert::decode(&bytes, fetched.charset.as_deref(), shape);
            let (title, markdown) = convert::html_to_markdown(&html, &fetched.url);
            if let Some(title) = title {
                head.push_str(&format!("\nTitle: {title}"));
            }
            markdown
        }
        Shape::Json => convert::pretty_json(&convert::decode(&bytes, Some("utf-8"), shape)),
        Shape::Text | Shape::Unknown => convert::decode(&bytes, fetched.charset.as_deref(), shape),
    };
    let total = content.chars().count();
    let content = match content.char_indices().nth(MAX_OUTPUT_CHARS) {
        Some((cut, _)) => {
            notes.push(format!(
                "[output cut: the first {MAX_OUTPUT_CHARS} of {total} characters are shown]"
            ));
            &content[..cut]
        }
        None => content.as_str(),
    };
    let content = if content.trim().is_empty() {
        "(the page has no text content)"
    } else {
        content
    };
    let mut text = format!("{head}\n\n{content}");
    for note in &notes {
        text.push_str("\n\n");
        text.push_str(note);
    }
    let summary = format!(
        "Fetched {} ({shown_type}, {} characters{})",
        fetched.url,
        total.min(MAX_OUTPUT_CHARS),
        if notes.is_empty() { "" } else { ", cut" }
    );
    Page { text, summary }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A client pinned to one checked address connects there for that
    /// name, and refuses any other name instead of resolving it itself.
    #[tokio::test]
    async fn pinned_client_connects_only_to_the_checked_address() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = vec![0; 4096];
            let n = socket.read(&mut request).await.unwrap();
            socket
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                .await
                .unwrap();
            String::from_utf8_lossy(&request[..n]).into_owned()
        });
        let client = http::builder(Duration::from_secs(5))
            .unwrap()
            .dns_resolver(std::sync::Arc::new(NoDns))
            .resolve_to_addrs("pinned.test", &[addr])
            .build()
            .unwrap();
        let port = addr.port();
        let body = client
            .get(format!("http://pinned.test:{port}/x"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(body, "ok");
        let request = server.await.unwrap();
        assert!(request.starts_with("GET /x HTTP/1.1"), "{request}");
        assert!(
            request
                .to_ascii_lowercase()
                .contains(&format!("host: pinned.test:{port}"))
        );

        let error = client
            .get(format!("http://other.test:{port}/"))
            .send()
            .await
            .unwrap_err();
        let message = http::chain(error);
        assert!(
            message.contains("other.test was not resolved and checked"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn names_are_resolved_then_checked() {
        let Err(Hop::Refused(refused)) = resolve("localhost", 80, &Allow::PublicOnly).await else {
            panic!("localhost was not refused");
        };
        assert!(refused.starts_with("localhost resolves to "), "{refused}");
        assert!(refused.contains("a loopback address"), "{refused}");
        let Ok(allowed) = resolve("localhost", 8080, &Allow::Everything).await else {
            panic!("localhost was refused with every address allowed");
        };
        assert!(
            allowed
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == 8080)
        );
        let only_v4 = Allow::Ranges(vec![crate::address::Range::parse("127.0.0.0/8").unwrap()]);
        let Ok(kept) = resolve("localhost", 80, &only_v4).await else {
            panic!("localhost's IPv4 address was refused");
        };
        assert!(kept.iter().all(|a| a.is_ipv4()), "{kept:?}");
    }
}
