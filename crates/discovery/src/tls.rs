//! TLS for bridged servers over HTTPS. reqwest is built with
//! `rustls-no-provider` across the workspace, so a client must be handed
//! a configuration; this is the same one `gantry-web` builds (*ring* and
//! the platform's verifier), repeated because families do not depend on
//! each other.

use std::sync::{Arc, OnceLock};

use rustls_platform_verifier::BuilderVerifierExt;

/// The TLS configuration, built once per process (loading the platform's
/// roots is the expensive part).
pub fn config() -> Result<rustls::ClientConfig, String> {
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
