//! The HTTP client both tools build on: gantry-http's (rustls with the
//! *ring* provider and the platform's trust store, Gantry's User-Agent),
//! with no proxies, bounded redirects and connect time.

use std::error::Error as _;
use std::time::Duration;

use reqwest::redirect::Policy;
use reqwest::{Client, ClientBuilder};

/// No single connection attempt waits longer than this, whatever the total
/// budget.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of an error body is quoted back.
const SNIPPET_CHARS: usize = 500;

/// A client builder with everything both tools share. Proxies from the
/// environment are ignored: `web_fetch` must connect to the address it
/// checked, and `web_search` talks to one configured endpoint.
pub(crate) fn builder(total: Duration) -> Result<ClientBuilder, String> {
    Ok(gantry_http::builder()?
        .no_proxy()
        .connect_timeout(CONNECT_TIMEOUT.min(total)))
}

/// A client for a configured API endpoint (the search providers).
pub(crate) fn api_client(total: Duration) -> Result<Client, String> {
    builder(total)?
        .redirect(Policy::limited(5))
        .timeout(total)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", chain(e)))
}

/// Reads at most `cap` bytes of a body; `true` when it was longer. The
/// rest is never downloaded.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok((bytes, true));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((bytes, false))
}

/// An error with its causes, which is where reqwest keeps the useful part
/// ("connection refused", "certificate expired").
pub(crate) fn chain(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The start of a body, on one line, for an error message.
pub(crate) fn snippet(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(SNIPPET_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_flattens_and_cuts() {
        assert_eq!(snippet("  a\n\n b\tc "), "a b c");
        let long = "é".repeat(SNIPPET_CHARS + 10);
        let cut = snippet(&long);
        assert_eq!(cut.chars().count(), SNIPPET_CHARS + 1);
        assert!(cut.ends_with('…'));
    }
}
