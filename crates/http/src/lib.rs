//! The one HTTP client setup of every family that talks HTTP (`web_fetch`
//! and `web_search`, bridged MCP servers over streamable HTTP, workers'
//! model endpoints), so that all of them link one TLS stack configured one
//! way.
//!
//! reqwest is built with `rustls-no-provider` across the workspace and
//! handed [`tls`]: *ring* is the only crypto provider linked, and no
//! process-wide default provider is installed behind an embedding
//! program's back.

use std::sync::{Arc, OnceLock};

use rustls_platform_verifier::BuilderVerifierExt;

/// What Gantry says it is to the servers it talks to.
pub const USER_AGENT: &str = concat!("gantry/", env!("CARGO_PKG_VERSION"));

/// The TLS configuration, built once per process: loading the platform's
/// roots is the expensive part, and reqwest takes a copy per client.
pub fn tls() -> Result<rustls::ClientConfig, String> {
    static TLS: OnceLock<Result<rustls::ClientConfig, String>> = OnceLock::new();
    TLS.get_or_init(|| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|builder| builder.with_platform_verifier())
            .map(|builder| builder.with_no_client_auth())
            .map_err(|e| format!("cannot set up TLS: {e}"))
    })
    .clone()
}

/// A client builder with Gantry's TLS and user agent; callers add their
/// own timeouts, proxy and redirect rules.
pub fn builder() -> Result<reqwest::ClientBuilder, String> {
    Ok(reqwest::Client::builder()
        .tls_backend_preconfigured(tls()?)
        .user_agent(USER_AGENT))
}
