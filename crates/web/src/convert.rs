//! Turning a response body into text a model can read: HTML to Markdown,
//! JSON pretty-printed, text as it is, binaries described instead of dumped.

use std::sync::{Arc, Mutex};

use encoding_rs::{Encoding, UTF_8};
use htmd::element_handler::{HandlerResult, Handlers};
use htmd::{Element, HtmlToMarkdown};
use url::Url;

/// Elements that carry no reading matter: code, styling, navigation
/// chrome, embedded frames and drawings.
const NOISE: &[&str] = &[
    "script", "style", "noscript", "template", "nav", "iframe", "svg", "canvas", "button",
    "select", "dialog",
];

/// How a body will be shown, decided from its Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Html,
    Json,
    Text,
    /// Not text; described, never read.
    Binary,
    /// No Content-Type: read, then sniffed.
    Unknown,
}

/// The media type without parameters, lowercased, and the charset if given.
pub(crate) fn media_type(content_type: &str) -> (String, Option<String>) {
    let mut parts = content_type.split(';');
    let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let charset = parts.find_map(|p| {
        let (key, value) = p.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"').to_string())
    });
    (media, charset)
}

pub(crate) fn shape(media: &str) -> Shape {
    let (kind, sub) = media.split_once('/').unwrap_or((media, ""));
    if media.is_empty() {
        Shape::Unknown
    } else if media == "text/html" || media == "application/xhtml+xml" {
        Shape::Html
    } else if sub == "json" || sub.ends_with("+json") {
        Shape::Json
    } else if kind == "text"
        || sub == "xml"
        || sub.ends_with("+xml")
        || matches!(
            sub,
            "javascript"
                | "ecmascript"
                | "x-javascript"
                | "yaml"
                | "x-yaml"
                | "toml"
                | "x-sh"
                | "sql"
                | "graphql"
                | "x-ndjson"
                | "x-www-form-urlencoded"
        )
    {
        Shape::Text
    } else {
        Shape::Binary
    }
}

/// What an untyped body is, from its first bytes.
pub(crate) fn sniff(bytes: &[u8]) -> Shape {
    let head = &bytes[..bytes.len().min(1024)];
    if head.contains(&0) {
        return Shape::Binary;
    }
    let start = String::from_utf8_lossy(head)
        .trim_start()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Shape::Html
    } else if start.starts_with('{') || start.starts_with('[') {
        Shape::Json
    } else if std::str::from_utf8(head).is_ok()
        || std::str::from_utf8(head).is_err_and(|e| e.error_len().is_none())
    {
        // Valid UTF-8, or valid up to a character cut by the 1 KiB window.
        Shape::Text
    } else {
        Shape::Binary
    }
}

/// Decodes a body: a byte-order mark wins, then the declared charset, then
/// for HTML a `<meta charset>` near the top, then UTF-8. Undecodable bytes
/// become U+FFFD rather than failing the fetch.
pub(crate) fn decode(bytes: &[u8], charset: Option<&str>, shape: Shape) -> String {
    let declared = charset
        .and_then(|c| Encoding::for_label(c.as_bytes()))
        .or_else(|| {
            (shape == Shape::Html)
                .then(|| meta_charset(bytes))
                .flatten()
        })
        .unwrap_or(UTF_8);
    let (text, _, _) = declared.decode(bytes);
    text.into_owned()
}

/// The encoding named by `<meta charset=…>` or `<meta http-equiv
/// content="…; charset=…">` in the first KiB.
fn meta_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(1024)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let label: String = head[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        .collect();
    Encoding::for_label(label.as_bytes())
}

/// A page's title and its content as Markdown, without the noise elements.
/// Links and images point at absolute URLs (resolved against `base`, the
/// page's address), so a link can be fetched next as it stands.
pub(crate) fn html_to_markdown(html: &str, base: &Url) -> (Option<String>, String) {
    let title = Arc::new(Mutex::new(None::<String>));
    let seen = title.clone();
    let (link_base, image_base) = (base.clone(), base.clone());
    let converter = HtmlToMarkdown::builder()
        .skip_tags(NOISE.to_vec())
        .add_handler(
            vec!["title"],
            move |handlers: &dyn Handlers, element: Element| -> Option<HandlerResult> {
                let text = handlers.walk_children(element.node).content;
                let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
                seen.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(text);
                None
            },
        )
        .add_handler(
            vec!["a"],
            move |handlers: &dyn Handlers, element: Element| -> Option<HandlerResult> {
                let text = handlers.walk_children(element.node).content;
                let text = text.trim();
                match absolute(&link_base, &element, "href") {
                    Some(url) if !text.is_empty() => Some(format!("[{text}]({url})").into()),
                    _ => Some(text.into()),
                }
            },
        )
        .add_handler(
            vec!["img"],
            move |_: &dyn Handlers, element: Element| -> Option<HandlerResult> {
                let url = absolute(&image_base, &element, "src")?;
                let alt = attribute(&element, "alt").unwrap_or_default();
                let alt = alt.split_whitespace().collect::<Vec<_>>().join(" ");
                Some(format!("![{alt}]({url})").into())
            },
        )
        .build();
    // html5ever recovers from any input, so the conversion cannot fail; the
    // io::Result is the crate's general signature.
    let markdown = converter.convert(html).unwrap_or_default();
    let title = title
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .filter(|t| !t.is_empty());
    (title, tidy(&markdown))
}

fn attribute(element: &Element, name: &str) -> Option<String> {
    element
        .attrs
        .iter()
        .find(|a| &*a.name.local == name)
        .map(|a| a.value.to_string())
}

/// An http(s) attribute URL made absolute, written so a Markdown reader
/// takes it whole; `None` for `javascript:`, `#fragment`-only and the like.
fn absolute(base: &Url, element: &Element, name: &str) -> Option<String> {
    let value = attribute(element, name)?;
    if value.trim().starts_with('#') {
        return None;
    }
    let url = base.join(value.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let url = url.to_string();
    Some(if url.contains(['(', ')']) {
        format!("<{url}>")
    } else {
        url
    })
}

/// Collapses the runs of blank lines that removed elements leave behind.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_string()
}

/// JSON pretty-printed, or the text as it came when it is not valid JSON
/// (JSON Lines, a truncated body). Re-indented token by token rather than
/// parsed into a map, so keys keep the order the server sent.
pub(crate) fn pretty_json(text: &str) -> String {
    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let mut chars = text.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push('"');
                while let Some(c) = chars.next() {
                    out.push(c);
                    match c {
                        '\\' => out.extend(chars.next()),
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '{' | '[' => {
                out.push(c);
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if chars.peek().is_some_and(|&next| next == '}' || next == ']') {
                    out.extend(chars.next());
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_and_shapes() {
        assert_eq!(
            media_type("Text/HTML; Charset=\"ISO-8859-1\""),
            ("text/html".into(), Some("ISO-8859-1".into()))
        );
        assert_eq!(
            media_type("application/json"),
            ("application/json".into(), None)
        );
        for (media, expected) in [
            ("text/html", Shape::Html),
            ("application/xhtml+xml", Shape::Html),
            ("application/json", Shape::Json),
            ("application/ld+json", Shape::Json),
            ("text/plain", Shape::Text),
            ("text/markdown", Shape::Text),
            ("application/xml", Shape::Text),
            ("image/svg+xml", Shape::Text),
            ("application/javascript", Shape::Text),
            ("image/png", Shape::Binary),
            ("application/pdf", Shape::Binary),
            ("application/octet-stream", Shape::Binary),
            ("", Shape::Unknown),
        ] {
            assert_eq!(shape(media), expected, "{media}");
        }
    }

    #[test]
    fn sniffing_untyped_bodies() {
        assert_eq!(sniff(b"  <!DOCTYPE html><p>x"), Shape::Html);
        assert_eq!(sniff(b"{\"a\": 1}"), Shape::Json);
        assert_eq!(sniff(b"hello"), Shape::Text);
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0"), Shape::Binary);
        assert_eq!(sniff(b"\xff\xfe\xfd garbage"), Shape::Binary);
        let mut cut = "x".repeat(1023).into_bytes();
        cut.extend("é".as_bytes());
        assert_eq!(sniff(&cut), Shape::Text);
    }

    #[test]
    fn decoding_follows_bom_header_and_meta() {
        assert_eq!(decode(b"caf\xe9", Some("iso-8859-1"), Shape::Text), "café");
        let html = b"<html><head><meta charset=\"windows-1252\"></head><p>caf\xe9</p>";
        assert!(decode(html, None, Shape::Html).contains("café"));
        let meta =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-1\"><p>\xe9";
        assert!(decode(meta, None, Shape::Html).ends_with('é'));
        assert_eq!(decode("café".as_bytes(), None, Shape::Text), "café");
        assert_eq!(
            decode(b"\xef\xbb\xbfbom", Some("latin1"), Shape::Text),
            "bom"
        );
        assert_eq!(decode(b"a\xffb", None, Shape::Text), "a\u{fffd}b");
    }

    #[test]
    fn html_loses_noise_and_keeps_structure() {
        let base = Url::parse("https://example.com/docs/page").unwrap();
        let (title, markdown) = html_to_markdown(
            "<html><head><title> The  Title </title><style>p{}</style><script>var x = 1;</script></head>\
             <body><nav><a href=\"/\">Home</a></nav><h1>Heading</h1><p>Some <b>bold</b> and a \
             <a href=\"https://example.com/x\">link</a>.</p><ul><li>one</li><li>two</li></ul>\
             <noscript>enable js</noscript><pre><code>let a = 1;</code></pre>\
             <p><a href=\"next\">Next</a> <a href=\"#top\">Top</a> <a href=\"javascript:go()\">Go</a> \
             <a href=\"/wiki/A_(b)\">paren</a> <img src=\"/logo.png\" alt=\"The\n logo\"></p></body></html>",
            &base,
        );
        assert_eq!(title.as_deref(), Some("The Title"));
        assert!(markdown.starts_with("# Heading"), "{markdown}");
        assert!(markdown.contains("Some **bold** and a [link](https://example.com/x)."));
        assert!(markdown.contains("*   one"), "{markdown}");
        assert!(markdown.contains("```\nlet a = 1;\n```"), "{markdown}");
        assert!(
            markdown.ends_with(
                "[Next](https://example.com/docs/next) Top Go \
                 [paren](<https://example.com/wiki/A_(b)>) ![The logo](https://example.com/logo.png)"
            ),
            "{markdown}"
        );
        for noise in ["var x", "p{}", "Home", "enable js", "The Title"] {
            assert!(!markdown.contains(noise), "{noise} in {markdown}");
        }
        assert!(!markdown.contains("\n\n\n"));
    }

    #[test]
    fn json_is_pretty_printed_unless_invalid() {
        assert_eq!(
            pretty_json(r#"{"b":[1, 2],"a":{},"c":[ ]}"#),
            "{\n  \"b\": [\n    1,\n    2\n  ],\n  \"a\": {},\n  \"c\": []\n}"
        );
        assert_eq!(
            pretty_json(r#"{"s":"a, b: {c} \"q\" \\"}"#),
            r#"{
  "s": "a, b: {c} \"q\" \\"
}"#
        );
        assert_eq!(pretty_json(" 42 "), "42");
        assert_eq!(pretty_json("{\"a\":1}\n{\"a\":2}"), "{\"a\":1}\n{\"a\":2}");
    }
}
