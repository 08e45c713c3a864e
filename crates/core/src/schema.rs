//! Parameter schemas: generated from typed structs, checked with `jsonschema`,
//! and failures said the way a model can act on them.
//!
//! A schema is generated once per tool with every `$ref` inlined (several
//! clients cannot follow references) and optional fields given their plain
//! type (`null` is accepted by dropping it before validation, so the schema
//! stays simple for clients that reject type unions).

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// The JSON Schema of `T`, inlined and simplified for clients.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
        object.remove("$defs");
    }
    simplify(&mut schema);
    schema
}

/// Turns `"type": ["integer", "null"]` into `"type": "integer"` and drops
/// `null` from `anyOf`, everywhere in the schema.
fn simplify(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::Array(types)) = object.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.pop().unwrap_or(Value::Null);
                    object.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(options)) = object.get_mut("enum") {
                options.retain(|v| !v.is_null());
            }
            if let Some(Value::Array(any)) = object.get_mut("anyOf") {
                any.retain(|s| s.get("type").is_none_or(|t| t != "null"));
                if any.len() == 1 {
                    let only = any.pop().unwrap_or(Value::Null);
                    object.remove("anyOf");
                    if let Value::Object(inner) = only {
                        for (key, value) in inner {
                            object.entry(key).or_insert(value);
                        }
                    }
                }
            }
            if object.get("default").is_some_and(Value::is_null) {
                object.remove("default");
            }
            object.values_mut().for_each(simplify);
        }
        Value::Array(items) => items.iter_mut().for_each(simplify),
        _ => {}
    }
}

/// A compiled parameter schema.
pub struct ParamSchema {
    schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for ParamSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamSchema")
            .field("schema", &self.schema)
            .finish()
    }
}

impl ParamSchema {
    /// Compiles `schema`; a tool with a broken schema is a programming error
    /// reported at registration.
    pub fn compile(schema: Value) -> Result<Self, String> {
        let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
        Ok(ParamSchema { schema, validator })
    }

    /// The schema as sent to clients.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Normalises `args` (absent → `{}`, top-level `null` values dropped)
    /// and checks it; the error names each bad parameter and what was
    /// expected.
    pub fn check(&self, args: Value) -> Result<Value, String> {
        let args = match args {
            Value::Null => Value::Object(Map::new()),
            Value::Object(mut object) => {
                object.retain(|_, value| !value.is_null());
                Value::Object(object)
            }
            other => {
                return Err(format!(
                    "arguments: expected an object of named parameters, got {}",
                    preview(&other)
                ));
            }
        };
        let mut messages: Vec<String> = Vec::new();
        for error in self.validator.iter_errors(&args) {
            let path: Vec<String> = error
                .instance_path()
                .iter()
                .map(|segment| match segment {
                    LocationSegment::Property(name) => name.to_string(),
                    LocationSegment::Index(index) => index.to_string(),
                })
                .collect();
            let message = self.explain(&path, error.kind(), error.instance());
            if !messages.contains(&message) {
                messages.push(message);
            }
        }
        if messages.is_empty() {
            Ok(args)
        } else {
            Err(messages.join("; "))
        }
    }

    fn explain(&self, path: &[String], kind: &ValidationErrorKind, instance: &Value) -> String {
        let here = subschema(&self.schema, path);
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{}.", path.join("."))
        };
        match kind {
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                let expected = here
                    .and_then(|s| s.get("properties")?.get(name))
                    .map(describe)
                    .unwrap_or_else(|| "a value".into());
                format!("{prefix}{name}: missing required parameter (expected {expected})")
            }
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let accepted: Vec<&str> = here
                    .and_then(|s| s.get("properties")?.as_object())
                    .map(|props| props.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                unexpected
                    .iter()
                    .map(|name| {
                        let hint = crate::suggest::closest(name, accepted.iter().copied())
                            .map(|s| format!(" (did you mean `{s}`?)"))
                            .unwrap_or_default();
                        format!(
                            "{prefix}{name}: unknown parameter{hint}; accepted: {}",
                            accepted.join(", ")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            }
            _ => {
                let name = if path.is_empty() {
                    "arguments".to_string()
                } else {
                    path.join(".")
                };
                let expected = here.map(describe).unwrap_or_else(|| kind_hint(kind));
                format!("{name}: expected {expected}, got {}", preview(instance))
            }
        }
    }
}

/// The schema that governs the value at `path`, following `properties` and
/// `items`.
fn subschema<'a>(schema: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(schema, |schema, segment| {
        schema
            .get("properties")
            .and_then(|props| props.get(segment))
            .or_else(|| schema.get("items"))
            .or_else(|| schema.get("additionalProperties").filter(|v| v.is_object()))
    })
}

/// A short human description of what a schema accepts: `integer >= 1`,
/// `one of "user", "workspace"`, `array of string`.
pub fn describe(schema: &Value) -> String {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        let list: Vec<String> = options.iter().map(Value::to_string).collect();
        return format!("one of {}", list.join(", "));
    }
    if let Some(constant) = schema.get("const") {
        return format!("exactly {constant}");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            // Documented enum variants come as one `const` per variant.
            let constants: Option<Vec<String>> = options
                .iter()
                .map(|o| o.get("const").map(Value::to_string))
                .collect();
            if let Some(constants) = constants {
                return format!("one of {}", constants.join(", "));
            }
            let list: Vec<String> = options.iter().map(describe).collect();
            return list.join(" or ");
        }
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "a value".into(),
    };
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    let mut bounds = Vec::new();
    match (number("minimum"), number("maximum")) {
        (Some(min), Some(max)) => bounds.push(format!("between {min} and {max}")),
        (Some(min), None) => bounds.push(format!(">= {min}")),
        (None, Some(max)) => bounds.push(format!("<= {max}")),
        (None, None) => {}
    }
    if let Some(min) = number("exclusiveMinimum") {
        bounds.push(format!("> {min}"));
    }
    if let Some(min) = number("minLength") {
        if min == 1.0 {
            return format!("non-empty {kind}");
        }
        bounds.push(format!("of at least {min} characters"));
    }
    if let Some(items) = schema.get("items").filter(|_| kind == "array") {
        return format!("array of {}", describe(items));
    }
    if bounds.is_empty() {
        kind
    } else {
        format!("{kind} {}", bounds.join(" "))
    }
}

fn kind_hint(kind: &ValidationErrorKind) -> String {
    format!("{kind:?}")
}

/// A JSON value shortened for an error message.
fn preview(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}...")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// Parameters of a made-up reader.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Params {
        /// File to read.
        path: String,
        /// First line, 1-based.
        #[schemars(range(min = 1))]
        offset: Option<u64>,
        /// Where the fact goes.
        scope: Option<Scope>,
        /// Extra globs.
        ignore: Option<Vec<String>>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Scope {
        User,
        Workspace,
    }

    fn compiled() -> ParamSchema {
        ParamSchema::compile(schema_for::<Params>()).unwrap()
    }

    #[test]
    fn schema_is_inlined_and_simple() {
        let schema = schema_for::<Params>();
        let text = schema.to_string();
        assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
        assert_eq!(schema["properties"]["offset"]["type"], "integer");
        assert_eq!(schema["properties"]["path"]["description"], "File to read.");
        assert_eq!(schema["required"], json!(["path"]));
        assert_eq!(schema["additionalProperties"], false);
    }

    #[test]
    fn wrong_type_names_parameter_and_expectation() {
        let err = compiled()
            .check(json!({"path": "a", "offset": "abc"}))
            .unwrap_err();
        assert_eq!(err, r#"offset: expected integer >= 1, got "abc""#);
    }

    #[test]
    fn missing_and_unknown_parameters_are_explained() {
        let err = compiled().check(json!({"file_path": "a"})).unwrap_err();
        assert!(
            err.contains("path: missing required parameter (expected string)"),
            "{err}"
        );
        assert!(
            err.contains("file_path: unknown parameter (did you mean `path`?)"),
            "{err}"
        );
    }

    #[test]
    fn enums_arrays_and_nulls() {
        let schema = compiled();
        let err = schema
            .check(json!({"path": "a", "scope": "team"}))
            .unwrap_err();
        assert_eq!(
            err,
            r#"scope: expected one of "user", "workspace", got "team""#
        );
        let err = schema
            .check(json!({"path": "a", "ignore": [1]}))
            .unwrap_err();
        assert_eq!(err, "ignore.0: expected string, got 1");
        let ok = schema.check(json!({"path": "a", "offset": null})).unwrap();
        assert_eq!(ok, json!({"path": "a"}));
        let err = schema.check(json!(["a"])).unwrap_err();
        assert!(err.starts_with("arguments: expected an object"), "{err}");
    }
}
