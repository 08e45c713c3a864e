//! `web_fetch` against real loopback servers.

use std::io::Write;

use gantry_core::testing::refuses;
use gantry_core::{CallError, CallErrorKind, Run, ToolResult};
use serde_json::{Value, json};

use crate::server::{Reply, Server, run};

const PAGE: &str = "<!doctype html><html><head><title>Gantry docs</title>\
    <style>body { color: red }</style><script>track('visit')</script></head>\
    <body><nav><a href=\"/\">Home</a> <a href=\"/about\">About</a></nav>\
    <main><h1>Install</h1><p>Run <code>cargo install gantry</code>, then read \
    <a href=\"/guide\">the guide</a>.</p><h2>Tools</h2><ul><li>web_fetch</li><li>web_search</li></ul></main>\
    </body></html>";

async fn fetch(run: &Run, url: &str) -> Result<ToolResult, CallError> {
    run.call("web_fetch", json!({"url": url, "prompt": "how to install"}))
        .await
}

fn allow_all() -> Value {
    json!({"allowPrivateAddresses": true})
}

fn page_server() -> impl Fn(&str, &crate::server::Request) -> Reply {
    |_, request| match request.path() {
        "/" => Reply::ok("text/html; charset=utf-8", PAGE),
        _ => Reply::new(404, "text/plain", "no such page"),
    }
}

#[tokio::test]
async fn html_becomes_markdown_when_private_addresses_are_allowed() {
    let mut server = Server::start("127.0.0.1", page_server()).await;
    let (_dir, run) = run(allow_all());
    let result = fetch(&run, &server.url("/")).await.unwrap();
    let text = result.text_content();
    let expected_head = format!(
        "Looking for: how to install\nURL: {}/\nContent-Type: text/html\nTitle: Gantry docs\n\n# Install\n\n",
        server.base
    );
    assert!(text.starts_with(&expected_head), "{text}");
    assert!(
        text.contains(&format!(
            "Run `cargo install gantry`, then read [the guide]({}/guide).",
            server.base
        )),
        "{text}"
    );
    // htmd escapes Markdown's special characters in text.
    assert!(
        text.contains(
            r"## Tools

*   web\_fetch
*   web\_search"
        ),
        "{text}"
    );
    for noise in ["track(", "color: red", "Home", "About"] {
        assert!(!text.contains(noise), "{noise} left in {text}");
    }
    assert!(
        result
            .return_display
            .to_text()
            .starts_with(&format!("Fetched {}/ (text/html", server.base))
    );

    let request = server.next_request().await;
    assert_eq!(request.method, "GET");
    assert_eq!(
        request.header("user-agent"),
        Some(format!("gantry/{}", env!("CARGO_PKG_VERSION")).as_str())
    );
    assert!(
        request
            .header("accept")
            .unwrap()
            .starts_with("text/markdown")
    );
}

#[tokio::test]
async fn loopback_is_refused_by_default_before_any_connection() {
    let mut server = Server::start("127.0.0.1", page_server()).await;
    let (_dir, run) = run(json!({}));
    let error = fetch(&run, &server.url("/")).await.unwrap_err();
    assert_eq!(error.kind, CallErrorKind::Failed);
    assert!(
        error.message.starts_with(
            "refused: 127.0.0.1 is a loopback address; set web.allowPrivateAddresses in settings to allow"
        ),
        "{}",
        error.message
    );

    // A name is judged by what it resolves to.
    let by_name = format!("http://localhost:{}/", server.addr.port());
    let error = fetch(&run, &by_name).await.unwrap_err();
    assert!(
        error.message.starts_with("refused: localhost resolves to "),
        "{}",
        error.message
    );
    assert!(
        error.message.contains(", a loopback address"),
        "{}",
        error.message
    );
    assert!(
        server.requests().is_empty(),
        "a refused fetch reached the server"
    );
}

#[tokio::test]
async fn an_allowed_range_lets_only_that_range_through() {
    let server = Server::start("127.0.0.1", page_server()).await;
    let (_dir, run) = run(json!({"allowPrivateAddresses": ["127.0.0.0/8"]}));
    fetch(&run, &server.url("/")).await.unwrap();
    let error = fetch(&run, "http://[::1]:9/").await.unwrap_err();
    assert!(
        error.message.starts_with(
            "refused: ::1 is a loopback address; it is outside web.allowPrivateAddresses (127.0.0.0/8)"
        ),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn redirect_chains_are_followed() {
    let server = Server::start("127.0.0.1", |base, request| match request.path() {
        "/start" => Reply::redirect(301, "/middle"),
        "/middle" => Reply::redirect(302, &format!("{base}/end?x=1")),
        "/end" => Reply::ok("text/plain", "arrived"),
        _ => Reply::new(404, "text/plain", ""),
    })
    .await;
    let (_dir, run) = run(allow_all());
    let text = fetch(&run, &server.url("/start"))
        .await
        .unwrap()
        .text_content();
    assert!(
        text.contains(&format!(
            "URL: {0}/end?x=1 (reached from {0}/start after 2 redirects)",
            server.base
        )),
        "{text}"
    );
    assert!(text.ends_with("\n\narrived"), "{text}");
}

#[tokio::test]
async fn redirects_stop_after_five() {
    let mut server = Server::start("127.0.0.1", |_, request| {
        let n: usize = request.path().trim_start_matches("/hop/").parse().unwrap();
        Reply::redirect(302, &format!("/hop/{}", n + 1))
    })
    .await;
    let (_dir, run) = run(allow_all());
    let error = fetch(&run, &server.url("/hop/0")).await.unwrap_err();
    assert!(
        error
            .message
            .starts_with("stopped after 5 redirects without reaching a page: "),
        "{}",
        error.message
    );
    assert!(
        error.message.ends_with(&format!(
            "{} → {}",
            server.url("/hop/5"),
            server.url("/hop/6")
        )),
        "{}",
        error.message
    );
    let paths: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.path().to_string())
        .collect();
    assert_eq!(
        paths,
        ["/hop/0", "/hop/1", "/hop/2", "/hop/3", "/hop/4", "/hop/5"]
    );
}

/// The issue's "public name that redirects to 127.0.0.1": a host the
/// settings allow (127.0.0.2 stands for the public one) redirects to one
/// they do not; the redirect is refused and the target never contacted.
#[tokio::test]
async fn redirects_to_private_addresses_are_refused() {
    let mut target = Server::start("127.0.0.1", page_server()).await;
    let target_url = target.url("/");
    let entry = Server::start("127.0.0.2", move |_, request| match request.path() {
        "/to-loopback" => Reply::redirect(302, &target_url),
        "/to-private" => Reply::redirect(307, "http://10.0.0.5/admin"),
        "/to-metadata" => Reply::redirect(302, "http://169.254.169.254/latest/meta-data/"),
        "/to-file" => Reply::redirect(302, "file:///etc/passwd"),
        _ => Reply::new(404, "text/plain", ""),
    })
    .await;
    let (_dir, run) = run(json!({"allowPrivateAddresses": ["127.0.0.2"]}));
    let cases = [
        (
            "/to-loopback",
            format!(
                "refused: redirect 1 from {}/to-loopback leads to {}, and 127.0.0.1 is a loopback address; \
                 it is outside web.allowPrivateAddresses (127.0.0.2/32)",
                entry.base,
                target.url("/")
            ),
        ),
        (
            "/to-private",
            format!(
                "refused: redirect 1 from {}/to-private leads to http://10.0.0.5/admin, and 10.0.0.5 is a private address",
                entry.base
            ),
        ),
        (
            "/to-metadata",
            "and 169.254.169.254 is a link-local address (where cloud metadata services answer)"
                .into(),
        ),
        (
            "/to-file",
            "leads to file:///etc/passwd, and only http and https URLs can be fetched".into(),
        ),
    ];
    for (path, expected) in cases {
        let error = fetch(&run, &entry.url(path)).await.unwrap_err();
        assert!(
            error.message.contains(&expected),
            "{path}: {}",
            error.message
        );
    }
    assert!(
        target.requests().is_empty(),
        "the loopback target was contacted"
    );
}

#[tokio::test]
async fn bodies_are_cut_at_five_megabytes_and_output_at_100k_characters() {
    let server = Server::start("127.0.0.1", |_, _| {
        Reply::ok("text/plain", vec![b'a'; 6 * 1024 * 1024])
    })
    .await;
    let (_dir, run) = run(allow_all());
    let text = fetch(&run, &server.url("/big"))
        .await
        .unwrap()
        .text_content();
    assert!(
        text.ends_with(
            "[the body is larger than 5 MB; only its first 5242880 bytes were read]\n\n\
             [output cut: the first 100000 of 5242880 characters are shown]"
        ),
        "{}",
        &text[text.len() - 300..]
    );
    assert!(text.contains(&format!("\n\n{}\n\n[", "a".repeat(100_000))));
}

#[tokio::test]
async fn compressed_bodies_are_capped_after_decompression() {
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(&b"gantry ".repeat(1024 * 1024)).unwrap();
    let compressed = gzip.finish().unwrap();
    let mut server = Server::start("127.0.0.1", move |_, _| {
        Reply::ok("text/plain", compressed.clone()).with_header("Content-Encoding", "gzip")
    })
    .await;
    let (_dir, run) = run(allow_all());
    let text = fetch(&run, &server.url("/")).await.unwrap().text_content();
    assert!(
        text.contains("\n\ngantry gantry gantry "),
        "{}",
        &text[..300]
    );
    assert!(text.contains("only its first 5242880 bytes were read"));
    let request = server.next_request().await;
    assert!(request.header("accept-encoding").unwrap().contains("gzip"));
}

#[tokio::test]
async fn a_body_that_never_finishes_times_out() {
    let mut server = Server::start("127.0.0.1", |_, _| Reply::Stall {
        content_type: "text/html".into(),
        length: 100_000,
        first: b"<html><body><p>the start".to_vec(),
    })
    .await;
    let (_dir, run) = run(json!({"allowPrivateAddresses": true, "timeoutSeconds": 1}));
    let error = fetch(&run, &server.url("/slow")).await.unwrap_err();
    assert_eq!(
        error.message,
        format!(
            "timed out after 1 s fetching {}: the page did not arrive in time (the limit is web.timeoutSeconds in settings)",
            server.url("/slow")
        )
    );
    // The server had answered the headers: the time ran out reading the body.
    let seen: Vec<String> = server.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(seen, ["/slow"]);
}

#[tokio::test]
async fn json_is_pretty_printed_in_the_order_sent() {
    let server = Server::start("127.0.0.1", |_, _| {
        Reply::ok(
            "application/json",
            r#"{"name":"gantry","tools":["web_fetch","web_search"],"a":{}}"#,
        )
    })
    .await;
    let (_dir, run) = run(allow_all());
    let text = fetch(&run, &server.url("/api"))
        .await
        .unwrap()
        .text_content();
    assert!(
        text.ends_with(
            "Content-Type: application/json\n\n{\n  \"name\": \"gantry\",\n  \"tools\": [\n    \"web_fetch\",\n    \"web_search\"\n  ],\n  \"a\": {}\n}"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn binaries_are_described_not_dumped() {
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-binary-bytes".to_vec();
    let length = png.len();
    let server = Server::start("127.0.0.1", move |_, _| Reply::ok("image/png", png.clone())).await;
    let (_dir, run) = run(allow_all());
    let text = fetch(&run, &server.url("/logo.png"))
        .await
        .unwrap()
        .text_content();
    assert!(
        text.ends_with(&format!(
            "This is binary content (image/png, {length} bytes) and was not downloaded: \
             web_fetch returns HTML, text and JSON only."
        )),
        "{text}"
    );
    assert!(!text.contains("IHDR"));
}

#[tokio::test]
async fn legacy_charsets_are_decoded() {
    let server = Server::start("127.0.0.1", |_, _| {
        Reply::ok(
            "text/html; charset=ISO-8859-1",
            b"<p>caf\xe9 cr\xe8me</p>".to_vec(),
        )
    })
    .await;
    let (_dir, run) = run(allow_all());
    let text = fetch(&run, &server.url("/")).await.unwrap().text_content();
    assert!(text.ends_with("\n\ncafé crème"), "{text}");
}

#[tokio::test]
async fn http_errors_carry_status_and_a_snippet() {
    let server = Server::start("127.0.0.1", |_, _| {
        Reply::new(
            404,
            "text/html",
            "<html><body><h1>Nothing here</h1><p>The page   moved.</p></body></html>",
        )
    })
    .await;
    let (_dir, run) = run(allow_all());
    let error = fetch(&run, &server.url("/gone")).await.unwrap_err();
    assert_eq!(
        error.message,
        format!(
            "HTTP 404 Not Found from {}: # Nothing here The page moved.",
            server.url("/gone")
        )
    );
}

#[tokio::test]
async fn https_goes_through_rustls() {
    // A plain TCP server: the client's first bytes must be a TLS handshake.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let first_byte = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut byte = [0u8; 1];
        tokio::io::AsyncReadExt::read_exact(&mut socket, &mut byte)
            .await
            .unwrap();
        byte[0]
    });
    let (_dir, run) = run(allow_all());
    let error = fetch(&run, &format!("https://127.0.0.1:{port}/"))
        .await
        .unwrap_err();
    assert!(
        error
            .message
            .starts_with(&format!("cannot fetch https://127.0.0.1:{port}/: ")),
        "{}",
        error.message
    );
    assert_eq!(
        first_byte.await.unwrap(),
        0x16,
        "not a TLS handshake record"
    );
}

#[tokio::test]
async fn parameters_are_validated_by_name() {
    let (_dir, run) = run(json!({}));
    let cases = [
        (json!({"prompt": "x"}), "url"),
        (json!({"url": "https://example.com"}), "prompt"),
        (
            json!({"url": "not a url", "prompt": "x"}),
            "url: `not a url` is not a valid URL",
        ),
        (
            json!({"url": "file:///etc/passwd", "prompt": "x"}),
            "url: only http and https URLs can be fetched; `file:///etc/passwd` has the scheme `file`",
        ),
        (
            json!({"url": "ftp://example.com/x", "prompt": "x"}),
            "url: only http and https URLs can be fetched",
        ),
        (
            json!({"url": "https://example.com", "prompt": "  "}),
            "prompt: expected a short note of what you are looking for",
        ),
    ];
    refuses(&run, "web_fetch", cases).await;
}

#[tokio::test]
async fn malformed_settings_are_reported_on_every_call() {
    let (_dir, run) = run(json!({"allowPrivateAddresses": "yes"}));
    let error = fetch(&run, "https://example.com/").await.unwrap_err();
    assert!(
        error.message.starts_with(
            "web_fetch cannot run: web.allowPrivateAddresses must be true, false or a list of ranges"
        ),
        "{}",
        error.message
    );
}
