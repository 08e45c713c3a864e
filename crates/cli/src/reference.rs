//! The tool reference: `gantry tools --markdown`, the source of
//! `docs/tools.md`. It is rendered from the live listings (names, tiers,
//! descriptions, JSON schemas), so the document cannot drift from what a
//! client is sent; a test compares the file with this output.

use std::fmt::Write as _;

use gantry_core::{Listing, Tier};
use serde_json::Value;

/// What the reference shows of one tool.
pub struct ToolDoc<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its tier.
    pub tier: Tier,
    /// Its description for the model.
    pub description: &'a str,
    /// The JSON Schema of its parameters.
    pub schema: &'a Value,
}

impl<'a> From<&'a Listing> for ToolDoc<'a> {
    fn from(listing: &'a Listing) -> Self {
        ToolDoc {
            name: &listing.name,
            tier: listing.tier,
            description: &listing.description,
            schema: &listing.input_schema,
        }
    }
}

/// The command that regenerates `docs/tools.md`, said in the document and
/// by the test that finds it stale.
pub const REGENERATE: &str = "cargo run -p gantry -- tools --markdown > docs/tools.md";

/// How deep nested objects of a parameter are expanded into rows of their
/// own (`options[].label`).
const MAX_DEPTH: usize = 3;

/// Abbreviations whose full stop does not end a sentence.
const ABBREVIATIONS: &[&str] = &["e.g", "i.e", "vs", "cf"];

/// The text up to the end of its first sentence, for one-line listings.
/// A sentence ends at a full stop followed by white space and then any
/// other character (a capital, but also `` ` ``, `$` or a lowercase tool
/// name), except after an abbreviation ("e.g. `x`") or inside an ellipsis;
/// a full stop inside a word ("1.2", "main.rs") is no end at all.
pub fn first_sentence(text: &str) -> &str {
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices('.') {
        let mut next = i + 1;
        if !bytes.get(next).is_some_and(u8::is_ascii_whitespace) {
            continue;
        }
        while bytes.get(next).is_some_and(u8::is_ascii_whitespace) {
            next += 1;
        }
        if next == bytes.len() {
            break;
        }
        let before = &text[..i];
        if before.ends_with('.') {
            continue;
        }
        let word = before
            .rsplit(|c: char| c.is_whitespace() || c == '(')
            .next()
            .unwrap_or("");
        if ABBREVIATIONS.iter().any(|a| word.eq_ignore_ascii_case(a)) {
            continue;
        }
        return before;
    }
    text.trim_end().trim_end_matches('.')
}

/// The whole reference as Markdown: an index, then one section per tool
/// with its description and a table of its parameters.
pub fn markdown(tools: &[ToolDoc<'_>]) -> String {
    let mut out = String::new();
    out.push_str("# Tool reference\n\n");
    let _ = writeln!(
        out,
        "Every tool Gantry has, with its tier and its parameters, generated from the\n\
         schemas the tools send to clients (`gantry tools --markdown`). Do not edit\n\
         it by hand; regenerate it with `{REGENERATE}`.\n\n\
         A surface shows the tools up to its tier cap (`--tier`): `read` tools have\n\
         no side effects, `write` tools change files, `exec` tools run processes.\n\
         A tool that asks a person is listed only where a person can answer.\n\n\
         Parameters: a call is checked against the schema and a bad value is an\n\
         error naming the parameter and what was expected. An unknown parameter\n\
         that is a near miss of a real one (within two edits, a real name as its\n\
         prefix or last word: `limt`, `file_path`) is an error with \"did you\n\
         mean\"; any other unknown parameter (one a client adds to every tool,\n\
         such as Gemini CLI's `wait_for_previous`) is ignored and named in one\n\
         line at the end of the result.\n"
    );
    out.push_str("| tool | tier | what it does |\n|---|---|---|\n");
    for tool in tools {
        let _ = writeln!(
            out,
            "| [`{name}`](#{name}) | {tier} | {summary} |",
            name = tool.name,
            tier = tool.tier,
            summary = cell(first_sentence(tool.description))
        );
    }
    for tool in tools {
        let _ = write!(
            out,
            "\n## {name}\n\nTier: `{tier}`\n\n{description}\n\n",
            name = tool.name,
            tier = tool.tier,
            description = description(tool.description)
        );
        let mut rows = Vec::new();
        parameter_rows(tool.schema, tool.schema, "", 0, &mut rows);
        if rows.is_empty() {
            out.push_str("No parameters.\n");
            continue;
        }
        out.push_str("| parameter | type | required | description |\n|---|---|---|---|\n");
        for row in rows {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                row.name,
                cell(&row.kind),
                if row.required { "yes" } else { "no" },
                cell(&row.description)
            );
        }
    }
    out
}

/// A tool's description as Markdown: its prose as it is, and its runs of
/// preformatted lines (a line starting with anything but a letter, digit
/// or backtick, such as the patch format of `apply_patch`) fenced, so that
/// `*** Begin Patch` or `-line` shows as written, not as emphasis or a
/// list.
fn description(text: &str) -> String {
    let mut blocks: Vec<(bool, Vec<&str>)> = Vec::new();
    for line in text.trim().lines() {
        let preformatted = !line
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '`');
        match blocks.last_mut() {
            Some((kind, lines)) if *kind == preformatted => lines.push(line),
            _ => blocks.push((preformatted, vec![line])),
        }
    }
    blocks
        .into_iter()
        .map(|(preformatted, lines)| {
            let text = lines.join("\n");
            if preformatted {
                format!("```text\n{text}\n```")
            } else {
                text
            }
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// One line of a parameter table.
struct Row {
    name: String,
    kind: String,
    required: bool,
    description: String,
}

/// The rows of an object schema's properties: required ones first, in the
/// schema's order, then the optional ones by name; nested objects (and
/// arrays of objects) follow their parent as `parent.child` or
/// `parent[].child`.
fn parameter_rows(schema: &Value, root: &Value, prefix: &str, depth: usize, rows: &mut Vec<Row>) {
    let schema = resolve(schema, root);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut names: Vec<&str> = required
        .iter()
        .copied()
        .filter(|name| properties.contains_key(*name))
        .collect();
    let mut optional: Vec<&str> = properties
        .keys()
        .map(String::as_str)
        .filter(|name| !required.contains(name))
        .collect();
    optional.sort_unstable();
    names.extend(optional);
    for name in names {
        let property = resolve(&properties[name], root);
        let mut description = property
            .get("description")
            .and_then(Value::as_str)
            .map(prose)
            .unwrap_or_default();
        // Said unless the description already says it in words.
        if let Some(default) = property
            .get("default")
            .filter(|_| !description.to_ascii_lowercase().contains("default"))
        {
            if !description.is_empty() {
                description.push(' ');
            }
            let _ = write!(description, "Default: `{}`.", plain(default));
        }
        let full = format!("{prefix}{name}");
        rows.push(Row {
            name: full.clone(),
            kind: type_of(property, root),
            required: required.contains(&name),
            description,
        });
        if depth + 1 < MAX_DEPTH {
            parameter_rows(property, root, &format!("{full}."), depth + 1, rows);
            if let Some(items) = property.get("items") {
                parameter_rows(items, root, &format!("{full}[]."), depth + 1, rows);
            }
        }
    }
}

/// A schema's type in words: `string`, `integer (≥ 1)`, `array of
/// string`, `one of `a`, `b``, `string or null`.
fn type_of(schema: &Value, root: &Value) -> String {
    let schema = resolve(schema, root);
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values.iter().map(|v| format!("`{}`", plain(v))).collect();
        return format!("one of {}", values.join(", "));
    }
    if let Some(value) = schema.get("const") {
        return format!("`{}`", plain(value));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let options: Vec<String> = options.iter().map(|o| type_of(o, root)).collect();
            return options.join(" or ");
        }
    }
    let kinds: Vec<&str> = match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if kinds.is_empty() {
        return "any".into();
    }
    let notes = constraints(schema);
    let kinds: Vec<String> = kinds
        .into_iter()
        .map(|kind| {
            let noted = if notes.is_empty() || kind == "null" {
                kind.to_string()
            } else {
                format!("{kind} ({})", notes.join(", "))
            };
            match (kind, schema.get("items")) {
                ("array", Some(items)) => format!("{noted} of {}", type_of(items, root)),
                _ => noted,
            }
        })
        .collect();
    kinds.join(" or ")
}

/// A schema's bounds and format in words.
fn constraints(schema: &Value) -> Vec<String> {
    let number = |key: &str| schema.get(key).filter(|v| v.is_number());
    let count = |key: &str| schema.get(key).and_then(Value::as_u64);
    let mut notes = Vec::new();
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        notes.push(format.to_string());
    }
    if let Some(min) = number("minimum") {
        notes.push(format!("≥ {min}"));
    }
    if let Some(min) = number("exclusiveMinimum") {
        notes.push(format!("> {min}"));
    }
    if let Some(max) = number("maximum") {
        notes.push(format!("≤ {max}"));
    }
    if let Some(max) = number("exclusiveMaximum") {
        notes.push(format!("< {max}"));
    }
    for (min, max, unit) in [
        ("minLength", "maxLength", "characters"),
        ("minItems", "maxItems", "items"),
    ] {
        match (count(min), count(max)) {
            (Some(1), None) => notes.push("non-empty".into()),
            (Some(low), None) if low > 1 => notes.push(format!("at least {low} {unit}")),
            (low, Some(high)) => notes.push(format!("{}–{high} {unit}", low.unwrap_or(0))),
            _ => {}
        }
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        notes.push(format!("matching `{pattern}`"));
    }
    notes
}

/// The schema a `$ref` points at (`#/$defs/Name`), or the schema itself.
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let Some(pointer) = schema.get("$ref").and_then(Value::as_str) else {
        return schema;
    };
    pointer
        .strip_prefix('#')
        .and_then(|pointer| root.pointer(pointer))
        .unwrap_or(schema)
}

/// A JSON value as a reader would write it: strings without quotes.
fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Doc-comment text as one paragraph per paragraph: the line breaks of a
/// wrapped comment become spaces, blank lines stay breaks.
fn prose(text: &str) -> String {
    text.trim()
        .split("\n\n")
        .map(|paragraph| paragraph.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Text that fits in one table cell: pipes escaped, breaks as `<br>`.
fn cell(text: &str) -> String {
    prose(text)
        .replace('|', "\\|")
        .replace("\n\n", "<br><br>")
        .replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_sentence_ends_before_any_next_sentence() {
        let cut = |text| first_sentence(text);
        assert_eq!(cut("Reads a file. Then more."), "Reads a file");
        // The next sentence starts with code, a metavariable or a tool name.
        assert_eq!(
            cut("Find code by shape. `$X` matches one node."),
            "Find code by shape"
        );
        assert_eq!(cut("Stage it. $X is a node."), "Stage it");
        assert_eq!(
            cut("Accept or discard an edit staged by ast_edit. accept writes it."),
            "Accept or discard an edit staged by ast_edit"
        );
        assert_eq!(cut("One line.\nAnother."), "One line");
        // Not ends: abbreviations, ellipses, dots inside words, a last stop.
        assert_eq!(
            cut("Finds files (e.g. `**/*.rs`, i.e. globs) in 1.2 s. More."),
            "Finds files (e.g. `**/*.rs`, i.e. globs) in 1.2 s"
        );
        assert_eq!(
            cut("Lists a, b, ... and more. Next."),
            "Lists a, b, ... and more"
        );
        assert_eq!(cut("Only one sentence."), "Only one sentence");
        assert_eq!(cut("Trailing space. "), "Trailing space");
        assert_eq!(cut("No stop at all"), "No stop at all");
    }

    fn doc<'a>(name: &'a str, description: &'a str, schema: &'a Value) -> ToolDoc<'a> {
        ToolDoc {
            name,
            tier: Tier::Write,
            description,
            schema,
        }
    }

    #[test]
    fn preformatted_lines_of_a_description_are_fenced() {
        assert_eq!(
            description(
                "Applies a patch. Format:\n*** Begin Patch\n+line\n context\n*** End Patch\nA diff works too."
            ),
            "Applies a patch. Format:\n\n```text\n*** Begin Patch\n+line\n context\n*** End Patch\n```\n\nA diff works too."
        );
        assert_eq!(
            description("Plain prose.\n`code` first.\n"),
            "Plain prose.\n`code` first."
        );
    }

    #[test]
    fn parameters_are_tabled_from_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "zeta": {"type": "string", "description": "Last of the optional."},
                "alpha": {"type": "integer", "minimum": 1, "default": 1,
                          "description": "A count,\nwrapped."},
                "path": {"type": "string", "minLength": 1, "description": "Where."},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "options": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/Option"}},
                "url": {"type": ["string", "null"], "format": "uri"}
            },
            "required": ["path", "options"],
            "$defs": {"Option": {"type": "object", "properties": {
                "label": {"type": "string", "description": "Shown."}
            }, "required": ["label"]}}
        });
        let bare = json!({"type": "object"});
        let text = markdown(&[
            doc("demo", "Does demo | or not. In detail.", &schema),
            doc("bare", "Does bare | or not. In detail.", &bare),
        ]);
        assert!(
            text.contains("| [`demo`](#demo) | write | Does demo \\| or not |"),
            "{text}"
        );
        let table = "| parameter | type | required | description |\n|---|---|---|---|\n\
            | `path` | string (non-empty) | yes | Where. |\n\
            | `options` | array (non-empty) of object | yes |  |\n\
            | `options[].label` | string | yes | Shown. |\n\
            | `alpha` | integer (≥ 1) | no | A count, wrapped. Default: `1`. |\n\
            | `mode` | one of `fast`, `slow` | no |  |\n\
            | `url` | string (uri) or null | no |  |\n\
            | `zeta` | string | no | Last of the optional. |\n";
        assert!(text.contains(table), "{text}");
        assert!(
            text.contains(
                "## bare\n\nTier: `write`\n\nDoes bare | or not. In detail.\n\nNo parameters.\n"
            ),
            "{text}"
        );
    }
}
