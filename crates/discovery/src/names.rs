//! What a tool from elsewhere is called here, and the schema the model
//! gets for it.
//!
//! Model APIs accept tool names of `[A-Za-z0-9_-]`, at most 64 characters,
//! and several clients cannot follow a `$ref`; servers and discovery
//! commands promise neither. Both are hand-written here because no crate
//! does either in the shape model APIs want (Gemini CLI does the same in
//! its own code).

use serde_json::{Map, Value};

/// The longest tool name model APIs accept.
pub const MAX_NAME: usize = 64;

/// How deep `$ref`s are followed before a recursive schema is cut to `{}`
/// (anything), so a self-referencing tree cannot grow without end.
const MAX_REF_DEPTH: usize = 8;

/// The name of server `alias`'s tool `tool`: always `<alias>__<tool>`, so
/// allowlists stay stable; see [`model_name`].
pub fn bridged_name(alias: &str, tool: &str) -> String {
    model_name(&format!("{alias}__{tool}"))
}

/// `name` as model APIs accept it: each character outside
/// `[A-Za-z0-9_-]` becomes `_`, and a name longer than [`MAX_NAME`] keeps
/// its start and its end around `___`, so two long names that differ at
/// either end stay apart.
pub fn model_name(name: &str) -> String {
    let clean: Vec<char> = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_NAME {
        return clean.into_iter().collect();
    }
    let marker = "___";
    let head = (MAX_NAME - marker.len()) / 2;
    let tail = MAX_NAME - marker.len() - head;
    let mut out: String = clean[..head].iter().collect();
    out.push_str(marker);
    out.extend(&clean[clean.len() - tail..]);
    out
}

/// `schema` as a model can use it: every local `$ref` (`#/$defs/..`,
/// `#/definitions/..`) inlined and the definitions dropped, Gemini's
/// upper-case type names (`STRING`) lower-cased, `$schema` dropped, and an
/// object schema at the top however the server wrote it.
pub fn clean_schema(schema: &Value) -> Value {
    let mut out = inline(schema, schema, 0);
    if let Value::Object(object) = &mut out {
        object.remove("$schema");
        object.remove("$defs");
        object.remove("definitions");
        object.remove("$id");
        if !object.contains_key("type") {
            object.insert("type".into(), "object".into());
        }
    } else {
        out = serde_json::json!({"type": "object"});
    }
    out
}

/// `value` with its `$ref`s resolved against `root`.
fn inline(value: &Value, root: &Value, depth: usize) -> Value {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get("$ref") {
                let target = reference
                    .strip_prefix('#')
                    .and_then(|pointer| root.pointer(pointer));
                let mut resolved = match target {
                    Some(target) if depth < MAX_REF_DEPTH => {
                        match inline(target, root, depth + 1) {
                            Value::Object(resolved) => resolved,
                            _ => Map::new(),
                        }
                    }
                    _ => Map::new(),
                };
                // Siblings of `$ref` (a description) refine the target.
                for (key, sibling) in object {
                    if key != "$ref" {
                        resolved.insert(key.clone(), inline(sibling, root, depth));
                    }
                }
                return Value::Object(resolved);
            }
            let mut out = Map::new();
            for (key, inner) in object {
                if key == "$defs" || key == "definitions" {
                    continue;
                }
                let inner = match (key.as_str(), inner) {
                    ("type", Value::String(kind)) => Value::String(kind.to_ascii_lowercase()),
                    // `properties` maps names to schemas: a property may be
                    // called `type` or `$ref`.
                    ("properties", Value::Object(properties)) => Value::Object(
                        properties
                            .iter()
                            .map(|(name, schema)| (name.clone(), inline(schema, root, depth)))
                            .collect(),
                    ),
                    _ => inline(inner, root, depth),
                };
                out.insert(key.clone(), inner);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|i| inline(i, root, depth)).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn allowed(name: &str) -> bool {
        name.len() <= MAX_NAME
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_are_alias_double_underscore_tool_and_safe() {
        assert_eq!(bridged_name("fs", "read_file"), "fs__read_file");
        assert_eq!(
            bridged_name("my.server", "get data/v2"),
            "my_server__get_data_v2"
        );
        let long = bridged_name("a-very-long-server-alias-indeed", &"x".repeat(50));
        assert!(allowed(&long), "{long}");
        assert_eq!(long.len(), MAX_NAME);
        assert!(long.starts_with("a-very-long-server-alias-indee") && long.contains("___"));
        assert!(long.ends_with(&"x".repeat(20)));
        // Two long names differing only at the end stay apart.
        let one = bridged_name("srv", &format!("{}_one", "y".repeat(80)));
        let two = bridged_name("srv", &format!("{}_two", "y".repeat(80)));
        assert_ne!(one, two);
        for name in ["ünïcödé", "a b c", "$$$", &"é".repeat(100)] {
            assert!(allowed(&bridged_name("s", name)), "{name}");
        }
    }

    #[test]
    fn refs_are_inlined_and_definitions_dropped() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "point": {"$ref": "#/$defs/Point", "description": "where"},
                "type": {"type": "STRING"},
                "tree": {"$ref": "#/definitions/Tree"}
            },
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
            "definitions": {"Tree": {"type": "object", "properties": {"child": {"$ref": "#/definitions/Tree"}}}}
        });
        let clean = clean_schema(&schema);
        let text = clean.to_string();
        assert!(
            !text.contains("$ref") && !text.contains("$defs") && !text.contains("$schema"),
            "{text}"
        );
        assert_eq!(
            clean["properties"]["point"]["properties"]["x"]["type"],
            "number"
        );
        assert_eq!(clean["properties"]["point"]["description"], "where");
        assert_eq!(clean["properties"]["type"]["type"], "string");
        // Recursion is cut, not followed forever.
        assert!(clean["properties"]["tree"]["properties"]["child"].is_object());
        jsonschema::validator_for(&clean).expect("a valid schema");
    }

    #[test]
    fn a_missing_or_odd_schema_becomes_an_object() {
        assert_eq!(clean_schema(&json!(null)), json!({"type": "object"}));
        assert_eq!(
            clean_schema(&json!({"properties": {}})),
            json!({"type": "object", "properties": {}})
        );
    }
}
