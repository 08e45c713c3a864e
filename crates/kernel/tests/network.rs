//! A kernel's cells get the run's network policy (SPEC §2): a cell reaches
//! a host the user allowed through the sandbox's proxy, which Python's
//! `urllib` finds in the variables the sandbox sets, and is refused
//! another, with the reason in the proxy's answer. A loopback server
//! stands in for the host, its name mapped to loopback for the proxy.
//! Needs Landlock and user namespaces (GANTRY_SKIP_SANDBOX=1 skips on
//! request).

mod common;

use common::*;
use serde_json::json;

#[tokio::test]
async fn a_cell_reaches_an_allowed_host_through_the_proxy_and_no_other() {
    let (_served, server) =
        gantry_core::testing::StandIn::with_files(&[("x.txt", "reached the stand-in\n")]);
    let port = server.port;
    // SAFETY: the binary's one test sets it before any proxy is made.
    unsafe {
        std::env::set_var(
            gantry_process::network::proxy::MAP_ENV,
            "pkg.example.org=127.0.0.1,other.example.org=127.0.0.1",
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let run = run_with_settings(
        dir.path(),
        json!({"sandbox": {"network": {"allow": [format!("pkg.example.org:{port}")], "ask": false}}}),
    );
    if !gantry_process::Sandbox::of(&run).await.own_network() {
        assert!(
            gantry_core::testing::skip_requested(
                "GANTRY_SKIP_SANDBOX",
                "the kernel's network test, which needs Landlock and user namespaces"
            ),
            "commands get no network of their own here; set GANTRY_SKIP_SANDBOX=1 to skip"
        );
        return;
    }
    let fetch = |host: &str| {
        py(&format!(
            "import urllib.request, urllib.error\n\
             try:\n\
             \x20   print(urllib.request.urlopen('http://{host}:{port}/x.txt', timeout=20).read().decode())\n\
             except urllib.error.HTTPError as e:\n\
             \x20   print('refused', e.code, e.read().decode())"
        ))
    };
    let text = cell(&run, fetch("pkg.example.org")).await;
    assert!(text.contains("reached the stand-in"), "{text}");
    let text = cell(&run, fetch("other.example.org")).await;
    assert!(
        text.contains("refused 403")
            && text.contains(&format!(
                "refused the connection to other.example.org:{port}"
            )),
        "{text}"
    );
    run.shutdown().await;
}
