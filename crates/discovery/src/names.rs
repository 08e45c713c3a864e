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

/// How many `$ref`s one schema may have inlined: each may copy a whole
/// definition, and definitions that use one another several times grow
/// the schema exponentially (ten self-references nested eight deep are
/// 10^8 copies). Past this, a `$ref` becomes `{}` (anything).
const MAX_INLINED_REFS: usize = 256;

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
    let mut inliner = Inliner {
        root: schema,
        open: Vec::new(),
        refs_left: MAX_INLINED_REFS,
    };
    let mut out = inliner.inline(schema);
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

/// Resolves the `$ref`s of one schema against its root.
struct Inliner<'a> {
    root: &'a Value,
    /// The `$ref`s being inlined, outermost first: one met again inside
    /// itself is a recursive type, cut to `{}` rather than followed.
    open: Vec<&'a str>,
    /// See [`MAX_INLINED_REFS`].
    refs_left: usize,
}

impl<'a> Inliner<'a> {
    /// `value` with its `$ref`s resolved.
    fn inline(&mut self, value: &'a Value) -> Value {
        match value {
            Value::Object(object) => {
                if let Some(Value::String(reference)) = object.get("$ref") {
                    let mut resolved = self.resolve(reference);
                    // Siblings of `$ref` (a description) refine the target.
                    for (key, sibling) in object {
                        if key != "$ref" {
                            resolved.insert(key.clone(), self.inline(sibling));
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
                        // `properties` maps names to schemas: a property may
                        // be called `type` or `$ref`.
                        ("properties", Value::Object(properties)) => Value::Object(
                            properties
                                .iter()
                                .map(|(name, schema)| (name.clone(), self.inline(schema)))
                                .collect(),
                        ),
                        _ => self.inline(inner),
                    };
                    out.insert(key.clone(), inner);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|i| self.inline(i)).collect()),
            other => other.clone(),
        }
    }

    /// The definition `reference` names, inlined; empty (anything) when
    /// it is not a local one, is recursive, or the budget is spent.
    fn resolve(&mut self, reference: &'a str) -> Map<String, Value> {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| self.root.pointer(pointer));
        let Some(target) = target else {
            return Map::new();
        };
        if self.open.contains(&reference) || self.refs_left == 0 {
            return Map::new();
        }
        self.refs_left -= 1;
        self.open.push(reference);
        let resolved = self.inline(target);
        self.open.pop();
        match resolved {
            Value::Object(resolved) => resolved,
            _ => Map::new(),
        }
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

    #[test]
    fn definitions_that_use_each_other_many_times_stay_small() {
        // Ten self-references per level: followed eight deep, 10^8 copies.
        let fields: Map<String, Value> = (0..10)
            .map(|i| (format!("f{i}"), json!({"$ref": "#/$defs/Node"})))
            .collect();
        let tree = json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": fields}}
        });
        let clean = clean_schema(&tree);
        // The recursion is cut at its first repeat, to anything.
        let node = &clean["properties"]["node"];
        assert_eq!(node["type"], "object", "{clean}");
        assert_eq!(node["properties"]["f9"], json!({}), "{clean}");
        jsonschema::validator_for(&clean).expect("a valid schema");

        // A chain of definitions each using the next twice: 2^30 copies.
        let mut defs = Map::new();
        for level in 0..30 {
            defs.insert(
                format!("L{level}"),
                json!({"type": "object", "properties": {
                    "a": {"$ref": format!("#/$defs/L{}", level + 1)},
                    "b": {"$ref": format!("#/$defs/L{}", level + 1)}
                }}),
            );
        }
        defs.insert("L30".into(), json!({"type": "string"}));
        let chain = json!({
            "type": "object",
            "properties": {"chain": {"$ref": "#/$defs/L0"}},
            "$defs": defs
        });
        let clean = clean_schema(&chain);
        let size = clean.to_string().len();
        assert!(size < 100_000, "the cleaned schema is {size} bytes");
        // What fits in the budget is inlined; the rest is anything.
        assert_eq!(
            clean["properties"]["chain"]["properties"]["a"]["type"],
            "object"
        );
        jsonschema::validator_for(&clean).expect("a valid schema");
    }
}
