//! What a log keeps of a call's arguments and results: secrets out, long
//! values cut. Cutting happens on the call's path (it bounds what is
//! copied); scrubbing secrets out of text happens on the log's thread.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// The longest string argument kept.
pub const ARG_CAP: usize = 2 * 1024;
/// The longest result text kept.
pub const TEXT_CAP: usize = 4 * 1024;
/// The largest image kept (an `eval` figure is tens of kilobytes).
pub const IMAGE_CAP: usize = 512 * 1024;
/// What stands where a secret was.
pub const SECRET: &str = "[secret]";

/// `text` cut to at most `cap` bytes on a character boundary, saying how
/// much was cut.
pub fn cut(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes cut]", &text[..end], text.len() - end)
}

/// Whether an argument's or header's name says its value is a secret.
pub fn is_secret_name(name: &str) -> bool {
    static NAME: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)(secret|token|passw(or)?d|passphrase|api[_-]?key|apikey|auth(orization)?$|credential|private[_-]?key|cookie|session[_-]?id)",
        )
        .expect("a valid pattern")
    });
    NAME.is_match(name)
}

/// A copy of `value` fit for the log: strings cut to [`ARG_CAP`], the
/// values of secret-named keys replaced, arrays and objects kept to their
/// first 100 members. Only what is kept is copied.
pub fn loggable(value: &Value) -> Value {
    const MEMBERS: usize = 100;
    match value {
        Value::String(text) => Value::String(cut(text, ARG_CAP)),
        Value::Array(items) => items.iter().take(MEMBERS).map(loggable).collect(),
        Value::Object(map) => map
            .iter()
            .take(MEMBERS)
            .map(|(key, value)| {
                let kept = if is_secret_name(key) && !value.is_null() {
                    Value::String(SECRET.into())
                } else {
                    loggable(value)
                };
                (key.clone(), kept)
            })
            .collect(),
        other => other.clone(),
    }
}

/// Secrets that look like secrets wherever they appear: provider keys and
/// tokens by their prefixes, private keys, bearer credentials, and the
/// values of this process's secret-named environment variables.
pub struct Scrubber {
    patterns: Regex,
    /// `password=…`, `"api_key": "…"`: the name kept, the value not.
    assignments: Regex,
    values: Vec<String>,
}

impl Scrubber {
    /// The patterns, and the secret values of this process's environment.
    pub fn from_env() -> Self {
        let values = std::env::vars()
            .filter(|(name, value)| is_secret_name(name) && value.len() >= 8)
            .map(|(_, value)| value)
            .collect();
        Scrubber::with_values(values)
    }

    fn with_values(values: Vec<String>) -> Self {
        let patterns = Regex::new(concat!(
            r"(sk-[A-Za-z0-9_-]{16,}",
            r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}",
            r"|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,}",
            r"|(?i:bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{16,}",
            r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
            r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$))",
        ))
        .expect("a valid pattern");
        // An ASCII word boundary: a Unicode one cannot run in the lazy DFA
        // over text that is not ASCII, and the backtracker it falls back
        // to took a sixth of the server's CPU in bench/load.sh (the names
        // matched are ASCII; a non-ASCII letter before one only makes more
        // text count as a secret).
        let assignments = Regex::new(
            r#"(?i)(?-u:\b)((?:[a-z0-9]+[_-])*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key)["']?\s*[:=]\s*["']?)[^\s"',;&]{4,}"#,
        )
        .expect("a valid pattern");
        Scrubber {
            patterns,
            assignments,
            values,
        }
    }

    /// `text` with every secret replaced by [`SECRET`].
    pub fn text(&self, text: &str) -> String {
        let text = self.patterns.replace_all(text, SECRET);
        let mut text = self
            .assignments
            .replace_all(&text, format!("${{1}}{SECRET}").as_str())
            .into_owned();
        for value in &self.values {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), SECRET);
            }
        }
        text
    }

    /// Every string in `value` scrubbed, in place.
    pub fn value(&self, value: &mut Value) {
        match value {
            Value::String(text) => *text = self.text(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.value(item)),
            Value::Object(map) => map.values_mut().for_each(|item| self.value(item)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_names_are_replaced_and_long_strings_cut() {
        let long = "x".repeat(ARG_CAP + 10);
        let kept = loggable(
            &json!({"path": "a.txt", "apiKey": "abc", "headers": {"Authorization": "Bearer q"}, "content": long}),
        );
        assert_eq!(kept["path"], "a.txt");
        assert_eq!(kept["apiKey"], SECRET);
        assert_eq!(kept["headers"]["Authorization"], SECRET);
        let content = kept["content"].as_str().unwrap();
        assert!(content.ends_with("… [10 bytes cut]"), "{content}");
    }

    #[test]
    fn secrets_in_text_are_scrubbed_by_shape_and_by_value() {
        let scrubber = Scrubber::with_values(vec!["hunter2-but-longer".into()]);
        let text = scrubber.text(
            "key sk-abcdefghijklmnopqrstuv and ghp_abcdefghijklmnopqrstuvwxyz012345 \
             Authorization: Bearer abcdefghijklmnopqrstuvwx value=hunter2-but-longer\n\
             -----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\nafter",
        );
        for secret in [
            "sk-abc",
            "ghp_",
            "abcdefghijklmnopqrstuvwx",
            "hunter2",
            "AAAA",
        ] {
            assert!(!text.contains(secret), "{secret} left in {text}");
        }
        assert!(text.starts_with("key [secret] and [secret]"), "{text}");
        assert!(text.ends_with("\nafter"), "{text}");
        let assigned =
            scrubber.text(r#"DB_PASSWORD=swordfish "api_key": "k-123456" token: abcd1234"#);
        assert_eq!(
            assigned,
            r#"DB_PASSWORD=[secret] "api_key": "[secret]" token: [secret]"#
        );
    }

    #[test]
    fn cut_keeps_whole_characters() {
        assert_eq!(cut("ééé", 3), "é… [4 bytes cut]");
        assert_eq!(cut("short", 10), "short");
    }
}
