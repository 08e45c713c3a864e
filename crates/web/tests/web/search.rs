//! `web_search` against loopback servers speaking each provider's real JSON.

use gantry_core::testing::refuses;
use gantry_core::{CallErrorKind, Run};
use serde_json::json;

use crate::server::{Reply, Server, run};

/// A SearXNG answer as `/search?format=json` gives it.
const SEARXNG_ANSWER: &str = r#"{
  "query": "rust async runtime",
  "number_of_results": 0,
  "results": [
    {"url": "https://tokio.rs/", "title": "Tokio - An asynchronous Rust runtime",
     "content": "Tokio is an asynchronous runtime for the Rust programming language.",
     "engine": "duckduckgo", "parsed_url": ["https", "tokio.rs", "/", "", "", ""],
     "template": "default.html", "engines": ["duckduckgo", "brave"], "positions": [1, 2],
     "score": 4.0, "category": "general", "publishedDate": null, "thumbnail": null},
    {"url": "https://async.rs/", "title": "async-std",
     "content": "Async version of the Rust standard library",
     "engine": "brave", "parsed_url": ["https", "async.rs", "/", "", "", ""],
     "template": "default.html", "engines": ["brave"], "positions": [2],
     "score": 1.0, "category": "general"},
    {"url": "https://smol.rs/", "title": "smol", "content": "A small and fast async runtime.",
     "engine": "brave", "engines": ["brave"], "positions": [3], "score": 0.5, "category": "general"}
  ],
  "answers": [], "corrections": [], "infoboxes": [],
  "suggestions": ["rust async book"],
  "unresponsive_engines": [["google", "timeout"]]
}"#;

/// A Brave Search answer from `/res/v1/web/search`.
const BRAVE_ANSWER: &str = r#"{
  "query": {"original": "rust async", "show_strict_warning": false, "is_navigational": false,
            "is_news_breaking": false, "spellcheck_off": true, "country": "us",
            "bad_results": false, "should_fallback": false, "postal_code": "", "city": "",
            "header_country": "", "more_results_available": true, "state": ""},
  "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}], "top": [], "side": []},
  "type": "search",
  "web": {
    "type": "search",
    "results": [
      {"title": "Asynchronous Programming in <strong>Rust</strong>",
       "url": "https://rust-lang.github.io/async-book/",
       "is_source_local": false, "is_source_both": false,
       "description": "Getting started with <strong>async</strong> programming &amp; futures in Rust.",
       "profile": {"name": "GitHub", "url": "https://rust-lang.github.io/async-book/",
                   "long_name": "rust-lang.github.io", "img": "https://imgs.search.brave.com/x"},
       "language": "en", "family_friendly": true, "type": "search_result", "subtype": "generic",
       "meta_url": {"scheme": "https", "netloc": "rust-lang.github.io", "hostname": "rust-lang.github.io",
                    "favicon": "https://imgs.search.brave.com/y", "path": "› async-book"}}
    ],
    "family_friendly": true
  }
}"#;

/// Brave's answer to a wrong subscription token.
const BRAVE_401: &str = r#"{"type": "ErrorResponse", "error": {"id": "4c7f9d0e", "status": 401,
  "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid.",
  "meta": {"component": "authentication"}}, "time": 1717000000}"#;

/// A Tavily answer from `POST /search`.
const TAVILY_ANSWER: &str = r#"{"query": "gantry agent runtime", "follow_up_questions": null,
  "answer": null, "images": [],
  "results": [{"title": "Gantry", "url": "https://example.org/gantry",
               "content": "An agent tool runtime.", "score": 0.98, "raw_content": null}],
  "response_time": 1.02}"#;

async fn search(run: &Run, args: serde_json::Value) -> Result<String, String> {
    run.call("web_search", args)
        .await
        .map(|r| r.text_content())
        .map_err(|e| e.message)
}

#[tokio::test]
async fn searxng_results_come_back_numbered() {
    let mut server = Server::start("127.0.0.1", |_, request| match request.path() {
        "/searx/search" => Reply::ok("application/json", SEARXNG_ANSWER),
        _ => Reply::new(404, "text/plain", ""),
    })
    .await;
    // Loopback is fine here: the provider is the user's own choice.
    let (_dir, run) = run(json!({"search": {"provider": "searxng", "url": server.url("/searx/")}}));
    let text = search(
        &run,
        json!({"query": "rust async runtime", "max_results": 2}),
    )
    .await
    .unwrap();
    assert_eq!(
        text,
        "Results for \"rust async runtime\" from SearXNG:\n\n\
         1. Tokio - An asynchronous Rust runtime\n   https://tokio.rs/\n   \
         Tokio is an asynchronous runtime for the Rust programming language.\n\n\
         2. async-std\n   https://async.rs/\n   Async version of the Rust standard library\n\n\
         (engines that did not answer: google (timeout))"
    );
    let request = server.next_request().await;
    assert_eq!(request.query("q").as_deref(), Some("rust async runtime"));
    assert_eq!(request.query("format").as_deref(), Some("json"));
}

#[tokio::test]
async fn searxng_without_json_output_gets_a_hint() {
    let server = Server::start("127.0.0.1", |_, _| {
        Reply::new(403, "text/html", "<html><body>403 Forbidden</body></html>")
    })
    .await;
    let (_dir, run) = run(json!({"search": {"provider": "searxng", "url": server.base}}));
    let error = search(&run, json!({"query": "x"})).await.unwrap_err();
    assert!(
        error.starts_with("SearXNG refused the request (HTTP 403 Forbidden)"),
        "{error}"
    );
    assert!(error.contains("add `json` to `search.formats`"), "{error}");
}

#[tokio::test]
async fn brave_sends_the_token_and_strips_highlighting() {
    let mut server = Server::start("127.0.0.1", |_, request| {
        match request.header("x-subscription-token") {
            Some("brave-key") => Reply::ok("application/json", BRAVE_ANSWER),
            _ => Reply::new(401, "application/json", BRAVE_401),
        }
    })
    .await;
    let (_dir, run) =
        run(json!({"search": {"provider": "brave", "apiKey": "brave-key", "url": server.base}}));
    let text = search(&run, json!({"query": "rust async"})).await.unwrap();
    assert_eq!(
        text,
        "Results for \"rust async\" from Brave Search:\n\n\
         1. Asynchronous Programming in Rust\n   https://rust-lang.github.io/async-book/\n   \
         Getting started with async programming & futures in Rust."
    );
    let request = server.next_request().await;
    assert_eq!(request.path(), "/res/v1/web/search");
    assert_eq!(request.query("q").as_deref(), Some("rust async"));
    assert_eq!(request.query("count").as_deref(), Some("8"));
    assert_eq!(request.header("accept"), Some("application/json"));
}

#[tokio::test]
async fn brave_rejecting_the_key_is_reported() {
    let server = Server::start("127.0.0.1", |_, _| {
        Reply::new(401, "application/json", BRAVE_401)
    })
    .await;
    let (_dir, run) =
        run(json!({"search": {"provider": "brave", "apiKey": "wrong", "url": server.base}}));
    let error = search(&run, json!({"query": "rust"})).await.unwrap_err();
    assert!(
        error.starts_with("Brave Search refused the request (HTTP 401 Unauthorized): "),
        "{error}"
    );
    assert!(error.contains("SUBSCRIPTION_TOKEN_INVALID"), "{error}");
    assert!(
        error.ends_with(
            "check the API key in web.search (apiKey, or the variable named by apiKeyEnv)"
        ),
        "{error}"
    );
}

#[tokio::test]
async fn rate_limiting_is_reported_with_the_wait() {
    let server = Server::start("127.0.0.1", |_, _| {
        Reply::new(
            429,
            "application/json",
            r#"{"type": "ErrorResponse", "error": {"status": 429, "code": "RATE_LIMITED", "detail": "Request rate limit exceeded for plan."}}"#,
        )
        .with_header("Retry-After", "2")
    })
    .await;
    let (_dir, run) =
        run(json!({"search": {"provider": "brave", "apiKey": "k", "url": server.base}}));
    let error = search(&run, json!({"query": "rust"})).await.unwrap_err();
    assert!(
        error.starts_with(
            "Brave Search is rate limiting these requests (HTTP 429 Too Many Requests, retry after 2 s): "
        ),
        "{error}"
    );
    assert!(error.contains("RATE_LIMITED"), "{error}");
}

#[tokio::test]
async fn tavily_posts_the_query_with_a_bearer_key() {
    let mut server = Server::start("127.0.0.1", |_, _| {
        Reply::ok("application/json", TAVILY_ANSWER)
    })
    .await;
    let (_dir, run) =
        run(json!({"search": {"provider": "tavily", "apiKey": "tvly-key", "url": server.base}}));
    let text = search(
        &run,
        json!({"query": "gantry agent runtime", "max_results": 3}),
    )
    .await
    .unwrap();
    assert_eq!(
        text,
        "Results for \"gantry agent runtime\" from Tavily:\n\n\
         1. Gantry\n   https://example.org/gantry\n   An agent tool runtime."
    );
    let request = server.next_request().await;
    assert_eq!(
        (request.method.as_str(), request.path()),
        ("POST", "/search")
    );
    assert_eq!(request.header("authorization"), Some("Bearer tvly-key"));
    let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(
        body,
        json!({"query": "gantry agent runtime", "max_results": 3})
    );
}

#[tokio::test]
async fn no_results_is_an_answer_not_an_error() {
    let server = Server::start("127.0.0.1", |_, _| {
        Reply::ok(
            "application/json",
            r#"{"query": {"original": "zzzz"}, "type": "search"}"#,
        )
    })
    .await;
    let (_dir, run) =
        run(json!({"search": {"provider": "brave", "apiKey": "k", "url": server.base}}));
    let text = search(&run, json!({"query": "zzzz"})).await.unwrap();
    assert_eq!(text, "No results for \"zzzz\" from Brave Search.");
}

#[tokio::test]
async fn unconfigured_search_is_listed_and_says_how_to_configure() {
    let (_dir, run) = run(json!({}));
    assert!(run.tools().iter().any(|t| t.name == "web_search"));
    let error = run
        .call("web_search", json!({"query": "rust"}))
        .await
        .unwrap_err();
    assert_eq!(error.kind, CallErrorKind::Failed);
    assert!(
        error
            .message
            .starts_with("web_search has no search provider configured."),
        "{}",
        error.message
    );
    assert!(
        error.message.contains(
            r#"{"web": {"search": {"provider": "searxng", "url": "http://localhost:8888"}}}"#
        ),
        "{}",
        error.message
    );
    assert!(
        error
            .message
            .contains(r#""provider": "brave", "apiKeyEnv": "BRAVE_API_KEY""#)
    );
}

#[tokio::test]
async fn misconfiguration_is_named() {
    let (_dir, run_unknown) = run(json!({"search": {"provider": "bing"}}));
    let error = search(&run_unknown, json!({"query": "x"}))
        .await
        .unwrap_err();
    assert!(
        error.starts_with("web_search cannot run: settings `web`"),
        "{error}"
    );
    assert!(
        error.contains("unknown variant `bing`, expected one of `searxng`, `brave`, `tavily`"),
        "{error}"
    );

    let (_dir, run_keyless) = run(json!({"search": {"provider": "brave"}}));
    let error = search(&run_keyless, json!({"query": "x"}))
        .await
        .unwrap_err();
    assert!(
        error.starts_with("web_search is misconfigured: Brave Search needs an API key"),
        "{error}"
    );

    let (_dir, run_unset) =
        run(json!({"search": {"provider": "tavily", "apiKeyEnv": "GANTRY_TEST_UNSET_VARIABLE"}}));
    let error = search(&run_unset, json!({"query": "x"})).await.unwrap_err();
    assert!(
        error.contains("GANTRY_TEST_UNSET_VARIABLE, which is not set"),
        "{error}"
    );

    // A mistake in the search settings leaves web_fetch working.
    let error = run_unknown
        .call(
            "web_fetch",
            json!({"url": "http://127.0.0.1:9/", "prompt": "x"}),
        )
        .await
        .unwrap_err();
    assert!(
        error
            .message
            .starts_with("refused: 127.0.0.1 is a loopback address"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn parameters_are_validated_by_name() {
    let (_dir, run) = run(json!({}));
    let cases = [
        (json!({}), "query"),
        (
            json!({"query": "  "}),
            "query: expected the words to search for",
        ),
        (json!({"query": "x", "max_results": 50}), "max_results"),
        (json!({"query": "x", "max_results": 0}), "max_results"),
    ];
    refuses(&run, "web_search", cases).await;
}

#[tokio::test]
async fn an_endless_answer_is_not_read_whole() {
    let server = Server::start("127.0.0.1", |_, _| {
        Reply::ok("application/json", vec![b' '; 3 * 1024 * 1024])
    })
    .await;
    let (_dir, run) = run(json!({"search": {"provider": "searxng", "url": server.base}}));
    let error = search(&run, json!({"query": "x"})).await.unwrap_err();
    assert!(
        error.starts_with("SearXNG answered with more than 2097152 bytes"),
        "{error}"
    );
}

/// A cloned repository's `.gantry/settings.json` may not choose where
/// searches go nor which variable holds their key (it could send the
/// user's `AWS_SECRET_ACCESS_KEY` to its own server on the first search),
/// nor open private addresses to `web_fetch`; the user's own settings do.
#[tokio::test]
async fn an_untrusted_workspace_cannot_aim_the_web_tools() {
    let mut server = Server::start("127.0.0.1", |_, _| {
        Reply::ok("application/json", BRAVE_ANSWER)
    })
    .await;
    let dir = gantry_core::testing::workspace_with(&[(
        ".gantry/settings.json",
        &json!({"web": {
            "allowPrivateAddresses": true,
            "search": {"provider": "brave", "apiKeyEnv": "PATH", "url": server.base}
        }})
        .to_string(),
    )]);
    let home = tempfile::tempdir().unwrap();
    let user_file = home.path().join("settings.json");
    let run_with = |user: serde_json::Value| {
        std::fs::write(&user_file, user.to_string()).unwrap();
        // The file as it is, approved (`gantry trust`); the folder's listing decides.
        gantry_core::trust::Approvals::beside(&user_file)
            .approve(dir.path())
            .unwrap();
        let settings = gantry_core::Settings::load_from(&user_file, dir.path()).unwrap();
        let warnings = gantry_core::Family::check_settings(&gantry_web::FAMILY, &settings);
        let builder =
            Run::builder(gantry_core::Workspace::new(dir.path()).unwrap()).settings(settings);
        (gantry_web::register(builder).build(), warnings.join("\n"))
    };

    let (untrusted, warnings) = run_with(json!({}));
    let unconfigured = search(&untrusted, json!({"query": "rust async"})).await;
    assert!(unconfigured.is_err(), "{unconfigured:?}");
    let refused = untrusted
        .call(
            "web_fetch",
            json!({"url": server.url("/"), "prompt": "the page"}),
        )
        .await
        .unwrap_err();
    assert!(
        refused.message.starts_with("refused: 127.0.0.1"),
        "{}",
        refused.message
    );
    assert!(
        server.requests().is_empty(),
        "an untrusted setting reached the server"
    );
    assert!(
        warnings.contains("`web.allowPrivateAddresses`") && warnings.contains("`web.search`"),
        "{warnings}"
    );

    let (trusted, warnings) = run_with(json!({"trustedFolders": [dir.path()]}));
    let found = search(&trusted, json!({"query": "rust async"}))
        .await
        .unwrap();
    assert!(found.contains("from Brave Search"), "{found}");
    assert!(!warnings.contains("ignored"), "{warnings}");
}
