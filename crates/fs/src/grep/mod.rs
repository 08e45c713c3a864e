//! `grep`: lines matching a regex across the workspace, with ripgrep's own
//! crates and ripgrep's walk, grouped by file and capped deterministically.
//!
//! The walk is parallel and its order is not; the output must not depend
//! on it, or the same call would show a model different lines each time.
//! So the result is defined as "the first `max_results` matching lines in
//! path order", and the walk keeps a *cutoff*: the path at which the lines
//! collected so far reach the cap. A file past the cutoff can never be
//! shown; it is only searched to count, and once enough has been counted
//! the walk skips everything past the cutoff (whole folders included).
//! Every file before the final cutoff is always searched, so the lines
//! shown are the same whatever order the threads ran in; only the "at
//! least" count may vary.
//!
//! Three parts, as in ripgrep: [`sink`] stores one file's lines as the
//! searcher finds them, [`walk`] searches the files in parallel and keeps
//! what may be shown, [`render`] writes the result.

mod render;
mod sink;
mod walk;

use gantry_core::{Run, Tier, Tool, ToolContext, ToolError, ToolResult, ToolSpec};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::common::{blocking, io_failure, quote};
use crate::glob::{self, Matcher};

use self::render::render;
use self::walk::search;

/// Matching lines shown when the call gives no `max_results`: enough to
/// see how a name is used across a project, few enough to leave the
/// model's context for the work.
pub const DEFAULT_MAX_RESULTS: u32 = 200;
/// The most `max_results` may ask for.
pub const MAX_RESULTS_LIMIT: u32 = 2000;
/// The most context lines before and after a match.
pub const MAX_CONTEXT: u32 = 10;
/// Characters of a line shown; longer lines (minified code, data) are
/// shortened around the match, since their full text says nothing more.
pub const MAX_LINE_CHARS: usize = 200;

/// Parameters of [`Grep`].
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepParams {
    /// The regular expression to search file contents for, in Rust regex
    /// syntax (as ripgrep), e.g. `fn \w+_test`, `TODO|FIXME`,
    /// `impl\s+Display for`. The characters `( ) [ ] { } . * + ? | ^ $ \`
    /// are special: put a backslash before one to match it as itself
    /// (`unwrap\(\)`), or set `literal` to search for plain text. A match
    /// lies within one line; `\n` cannot be matched.
    #[schemars(length(min = 1))]
    pub pattern: String,
    /// The file or folder to search: a path relative to the workspace
    /// root (e.g. `src`) or an absolute path inside the workspace. Defaults
    /// to the workspace root.
    #[serde(default = "dot")]
    pub path: String,
    /// Only search files matching this glob, e.g. `*.rs`, `*.{ts,tsx}` or
    /// `src/**/*.py`. Without `/` it matches file names at any depth; with
    /// `/` it matches the path relative to `path`, as the glob tool does.
    /// A file given as `path` is searched whatever this says.
    pub include: Option<String>,
    /// `true` ignores case, `false` matches case exactly. When omitted,
    /// smart case applies: case-insensitive if the pattern has no capital
    /// letters, case-sensitive if it has any (as `rg --smart-case`).
    pub case_insensitive: Option<bool>,
    /// Search for `pattern` as plain text rather than a regex, so every
    /// character matches itself (e.g. `map[key](x)`). Defaults to false.
    #[serde(default)]
    pub literal: bool,
    /// Lines to show before and after each matching line, 0 to 10, to see
    /// a match in its surroundings without reading the file. Defaults to 0.
    #[schemars(range(max = 10))]
    pub context: Option<u32>,
    /// The most matching lines to show, 1 to 2000; defaults to 200. When
    /// more lines match, the first ones in path order are shown and the
    /// result says how many matched at least.
    #[schemars(range(min = 1, max = 2000))]
    pub max_results: Option<u32>,
}

pub(super) fn dot() -> String {
    ".".to_string()
}

/// Searches file contents by regex. Built on ripgrep's own crates
/// (`grep-searcher`, `grep-regex`, `ignore`) so that searching a large
/// checkout costs what `rg` costs, and walking the way ripgrep walks,
/// because the files ripgrep skips (ignored, hidden, binary) are the ones
/// a person does not mean by "search the project".
#[derive(Debug, Clone, Copy, Default)]
pub struct Grep;

/// Whether a pattern has a capital letter written as itself, which makes
/// smart case match case exactly. Escapes are not letters of the text
/// (`\W`, `\S`, `\p{Lu}`, `\x4F`), nor are group names (`(?P<Name>`).
pub(super) fn has_capital(pattern: &str) -> bool {
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let digits = match chars.next() {
                    Some('p' | 'P') => 1,
                    Some('x') => 2,
                    Some('u') => 4,
                    Some('U') => 8,
                    _ => 0,
                };
                if digits > 0 && chars.peek() == Some(&'{') {
                    for c in chars.by_ref() {
                        if c == '}' {
                            break;
                        }
                    }
                } else {
                    for _ in 0..digits {
                        chars.next();
                    }
                }
            }
            '(' if chars.peek() == Some(&'?') => {
                chars.next();
                if chars.next_if_eq(&'P').is_some() || chars.peek() == Some(&'<') {
                    for c in chars.by_ref() {
                        if c == '>' {
                            break;
                        }
                    }
                }
            }
            c if c.is_uppercase() => return true,
            _ => {}
        }
    }
    false
}

/// Why a regex failed, with what to do about it in the model's terms.
pub(super) fn regex_hint(error: &str) -> &'static str {
    if error.contains("unclosed group") || error.contains("unopened group") {
        "to match `(` or `)` itself, escape it: `\\(`, `\\)`"
    } else if error.contains("unclosed character class") {
        "to match `[` itself, escape it: `\\[`"
    } else if error.contains("repetition operator missing expression") {
        "to match `*`, `+` or `?` itself, escape it: `\\*`, `\\+`, `\\?`"
    } else if error.contains("repetition") || error.contains("decimal") {
        "to match `{` itself, escape it: `\\{`"
    } else if error.contains("look-around") {
        "look-ahead and look-behind are not supported; search for the main part and narrow \
         with a second, simpler pattern"
    } else if error.contains("backreferences") {
        "backreferences are not supported; search for the first occurrence and read around it"
    } else if error.contains("not allowed") {
        "grep matches within one line, so a pattern cannot match a line break"
    } else {
        "special characters `( ) [ ] { } . * + ? | ^ $ \\` need a backslash to match themselves"
    }
}

/// How one call searches: the compiled regex and the filters.
pub(super) struct Query {
    pub(super) matcher: RegexMatcher,
    pub(super) include: Option<Matcher>,
    pub(super) insensitive: bool,
    pub(super) context: usize,
    pub(super) cap: u64,
}

impl Query {
    fn new(params: &GrepParams) -> Result<Self, String> {
        let insensitive = params
            .case_insensitive
            .unwrap_or_else(|| !has_capital(&params.pattern));
        let matcher = RegexMatcherBuilder::new()
            // Line-oriented: lets the searcher run the fast path ripgrep
            // runs (literal prefilter, then only the candidate line).
            .line_terminator(Some(b'\n'))
            .case_insensitive(insensitive)
            .fixed_strings(params.literal)
            .build(&params.pattern)
            .map_err(|e| {
                let error = e.to_string();
                let hint = regex_hint(&error);
                let literal = if params.literal {
                    ""
                } else {
                    "; or set `literal: true` to search for the text as written"
                };
                format!(
                    "pattern: {} is not a valid regex (Rust regex syntax): {}\n{hint}{literal}",
                    quote(&params.pattern),
                    error.trim()
                )
            })?;
        let include = params
            .include
            .as_deref()
            .map(|include| {
                glob::compile(include).map_err(|e| e.replacen("pattern:", "include:", 1))
            })
            .transpose()?;
        Ok(Query {
            matcher,
            include,
            insensitive,
            context: params.context.unwrap_or(0).min(MAX_CONTEXT) as usize,
            cap: u64::from(params.max_results.unwrap_or(DEFAULT_MAX_RESULTS)),
        })
    }
}

#[gantry_core::async_trait]
impl Tool for Grep {
    type Params = GrepParams;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "grep",
            "Search file contents",
            Tier::Read,
            format!(
                "Searches file contents for a regular expression (Rust regex syntax, as \
                 ripgrep) in the workspace or under `path`, optionally only in files matching \
                 the glob `include`. Returns matching lines grouped by file, files in path \
                 order, each as `path:line: text`; with `context`, the lines around a match are \
                 shown as `path-line- text` and separate groups are divided by `--`. Lines over \
                 {MAX_LINE_CHARS} characters are shortened around the match (cuts marked `…`). \
                 Case is smart by default: a pattern without capital letters ignores case, one \
                 with capitals matches it exactly; `case_insensitive` decides explicitly. \
                 Binary files, hidden files and files excluded by .gitignore or .ignore are not \
                 searched. At most {DEFAULT_MAX_RESULTS} matching lines are shown unless \
                 `max_results` says otherwise; when more match, the result says how many and \
                 how to narrow. To find files by name use glob; to read a file use read_file."
            ),
        )
    }

    fn validate(&self, params: &GrepParams, _run: &Run) -> Result<(), String> {
        Query::new(params).map(|_| ())
    }

    fn describe(&self, params: &GrepParams) -> String {
        let mut text = format!(
            "search for {} in {}",
            quote(&params.pattern),
            quote(&params.path)
        );
        if let Some(include) = &params.include {
            text.push_str(&format!(" (files matching {})", quote(include)));
        }
        text
    }

    async fn execute(&self, params: GrepParams, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let workspace = ctx.run.workspace().clone();
        let cancel = ctx.cancel.clone();
        blocking(move || {
            let base = workspace.resolve(&params.path)?;
            workspace
                .metadata(&base)
                .map_err(|e| io_failure(&workspace, &params.path, &base, e))?;
            let query = Query::new(&params).map_err(ToolError::Failed)?;
            let outcome = search(&workspace, &base, &query, &cancel)?;
            Ok(render(&workspace, &params, &base, &query, outcome))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capitals_in_escapes_and_names_do_not_count() {
        assert!(!has_capital("foo_bar"));
        assert!(has_capital("FooBar"));
        assert!(has_capital(r"fn \w+Test"));
        assert!(!has_capital(
            r"\W+\S\D\p{Lu}\pL\x4F\u00C9\u{00C9}\U0000004F"
        ));
        assert!(has_capital(r"\pLA"));
        assert!(has_capital(r"\x4FF"));
        assert!(!has_capital(r"(?P<Name>x)(?<Other>y)"));
        assert!(has_capital(r"(?i)X"));
    }

    #[test]
    fn hints_point_at_the_escape() {
        for (pattern, hint) in [
            ("foo(", "`\\(`"),
            ("a[b", "`\\[`"),
            ("*x", "`\\*`"),
            ("a{x", "`\\{`"),
        ] {
            let error = RegexMatcher::new(pattern).unwrap_err().to_string();
            assert!(regex_hint(&error).contains(hint), "{pattern}: {error}");
        }
    }
}
