//! Every tool's parameter schema, as `gantry tools --json` gives it to
//! clients, is valid Draft 2020-12 and passes the strict profile that the
//! pickiest clients apply (Gemini CLI warns on every call otherwise): only
//! standard formats, `type` + `enum` for closed choices, every property
//! described, no rustdoc link syntax, no `$ref`.

use std::process::Command;

use serde_json::Value;

/// The formats JSON Schema 2020-12 defines. Written out from the spec
/// here on purpose, not taken from gantry-core's list of the same: a format
/// core wrongly let through would pass a test that shared its list.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

fn tools() -> Vec<Value> {
    let ws = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_gantry"))
        .args(["tools", "--json"])
        .current_dir(ws.path())
        .env("GANTRY_HOME", ws.path().join(".home"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Every problem of the strict profile in `schema`, with where it is.
fn strict_problems(schema: &Value, at: &str, problems: &mut Vec<String>) {
    let Some(object) = schema.as_object() else {
        return;
    };
    if object.contains_key("$ref") || object.contains_key("$defs") {
        problems.push(format!("{at}: uses $ref/$defs"));
    }
    if let Some(format) = object.get("format").and_then(Value::as_str)
        && !STANDARD_FORMATS.contains(&format)
    {
        problems.push(format!("{at}: non-standard format {format:?}"));
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = object.get(key)
            && branches.iter().all(|b| b.get("const").is_some())
        {
            problems.push(format!(
                "{at}: a closed choice as {key} of consts; use type + enum"
            ));
        }
    }
    if object.contains_key("enum") && !object.contains_key("type") {
        problems.push(format!("{at}: enum without a type"));
    }
    if let Some(description) = object.get("description").and_then(Value::as_str)
        && (description.contains("[`") || description.contains("]("))
    {
        problems.push(format!("{at}: rustdoc link syntax in {description:?}"));
    }
    if let Some(Value::Object(properties)) = object.get("properties") {
        for (name, property) in properties {
            let here = format!("{at}.{name}");
            let described = property
                .get("description")
                .and_then(Value::as_str)
                .is_some_and(|d| !d.trim().is_empty());
            if !described {
                problems.push(format!("{here}: no description"));
            }
            strict_problems(property, &here, problems);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(inner) = object.get(key) {
            strict_problems(inner, &format!("{at}.{key}"), problems);
        }
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(Value::Array(branches)) = object.get(key) {
            for (i, branch) in branches.iter().enumerate() {
                strict_problems(branch, &format!("{at}.{key}[{i}]"), problems);
            }
        }
    }
}

#[test]
fn every_schema_is_valid_2020_12_and_strict() {
    let tools = tools();
    assert!(tools.len() >= 15, "only {} tools listed", tools.len());
    let mut problems = Vec::new();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let schema = &tool["input_schema"];
        if let Err(error) = jsonschema::draft202012::meta::validate(schema) {
            problems.push(format!("{name}: not valid Draft 2020-12: {error}"));
        }
        assert_eq!(schema["type"], "object", "{name}");
        strict_problems(schema, name, &mut problems);
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
