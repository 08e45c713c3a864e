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
        // The params struct's own doc ("Parameters of `ReadFile`") says
        // nothing the tool's description does not.
        object.remove("description");
    }
    simplify(&mut schema);
    schema
}

/// The `format`s JSON Schema 2020-12 defines; schemars adds others
/// (`uint64`, `int32`, `double`) that strict validators warn about on
/// every call. Ranges are said with `minimum` / `maximum` instead.
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

/// Rustdoc's link syntax (`` [`Name`] ``, `` [`Name`](path) ``, `[text](path)`
/// to an item) turned into plain code spans and text, for descriptions a
/// model reads.
fn unrustdoc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let inner = &after[..close];
        let tail = &after[close + 1..];
        // `[inner](target)`: drop the target when it is an item path, keep
        // real URLs.
        let (tail, url) = match tail.strip_prefix('(').and_then(|t| Some((t, t.find(')')?))) {
            Some((t, end)) if !t[..end].contains("://") => (&t[end + 1..], None),
            Some((t, end)) => (&t[end + 1..], Some(&t[..end])),
            None => (tail, None),
        };
        match url {
            Some(url) => out.push_str(&format!("{inner} ({url})")),
            None => out.push_str(inner),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// A `oneOf` whose branches are all constants (how schemars writes a
/// fieldless enum with documented variants) as the `type` + `enum` that
/// every client reads, the variants' docs folded into the description.
fn constants_as_enum(object: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = object.get("oneOf") else {
        return;
    };
    let Some(values) = branches
        .iter()
        .map(|branch| branch.get("const").cloned())
        .collect::<Option<Vec<Value>>>()
    else {
        return;
    };
    let notes: Vec<String> = branches
        .iter()
        .filter_map(|branch| {
            let value = branch.get("const")?.as_str()?;
            let doc = branch.get("description")?.as_str()?;
            Some(format!("`{value}`: {}", doc.trim_end_matches('.')))
        })
        .collect();
    object.remove("oneOf");
    if let Some(kind) = json_type(&values) {
        object.insert("type".into(), Value::String(kind.into()));
    }
    object.insert("enum".into(), Value::Array(values));
    if !notes.is_empty() {
        let mut description = object
            .get("description")
            .and_then(Value::as_str)
            .map(|d| format!("{} ", d.trim_end()))
            .unwrap_or_default();
        description.push_str(&format!("{}.", notes.join("; ")));
        object.insert("description".into(), Value::String(description));
    }
}

/// The one JSON type of `values`, if they share one.
fn json_type(values: &[Value]) -> Option<&'static str> {
    let kind = |v: &Value| match v {
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        _ => "null",
    };
    let first = kind(values.first()?);
    values.iter().all(|v| kind(v) == first).then_some(first)
}

/// Turns `"type": ["integer", "null"]` into `"type": "integer"`, drops
/// `null` from `anyOf`, non-standard `format`s and rustdoc link syntax,
/// and writes constant choices as `enum`, everywhere in the schema.
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
            if object
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|format| !STANDARD_FORMATS.contains(&format))
            {
                object.remove("format");
            }
            constants_as_enum(object);
            if let Some(Value::String(description)) = object.get_mut("description") {
                *description = unrustdoc(description);
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

    /// Normalises `args` (absent → `{}`, top-level `null` values dropped,
    /// unknown parameters that are no near miss of a real one set aside)
    /// and checks it; the error names each bad parameter and what was
    /// expected.
    ///
    /// Clients add parameters of their own to every tool (Gemini CLI's
    /// `wait_for_previous`) and forward what the model sets, so a name
    /// that resembles no parameter is ignored and reported in
    /// [`Checked::ignored`]; one within two edits of a real name, or one
    /// that a real name begins (or that begins a real name), is a typo
    /// the model should hear about, and stays an error with "did you mean".
    pub fn check(&self, args: Value) -> Result<Checked, String> {
        let mut ignored = Vec::new();
        let args = match args {
            Value::Null => Value::Object(Map::new()),
            Value::Object(mut object) => {
                object.retain(|_, value| !value.is_null());
                ignored = self.set_aside_unknown(&mut object);
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
            Ok(Checked { args, ignored })
        } else {
            Err(messages.join("; "))
        }
    }

    /// Removes the top-level parameters the schema does not know and that
    /// are no near miss of one it does; returns their names, sorted.
    fn set_aside_unknown(&self, object: &mut Map<String, Value>) -> Vec<String> {
        if self.schema.get("additionalProperties") != Some(&Value::Bool(false)) {
            return Vec::new();
        }
        let Some(known) = self.schema.get("properties").and_then(Value::as_object) else {
            return Vec::new();
        };
        let unknown: Vec<String> = object
            .keys()
            .filter(|name| !known.contains_key(*name))
            .filter(|name| !known.keys().any(|real| near_miss(name, real)))
            .cloned()
            .collect();
        for name in &unknown {
            object.remove(name);
        }
        unknown
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

/// Arguments that passed a schema check.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The normalised arguments the tool gets.
    pub args: Value,
    /// Unknown parameters that were ignored, to be named in the result.
    pub ignored: Vec<String>,
}

/// Whether `given` looks like a slip for the real parameter `real`: within
/// two edits of it, one a prefix of the other (`expected` for
/// `expected_replacements`, `path_name` for `path`), or the real name as
/// the last word of it (`file_path` for `path`).
fn near_miss(given: &str, real: &str) -> bool {
    let (given, real) = (given.to_lowercase(), real.to_lowercase());
    strsim::levenshtein(&given, &real) <= 2
        || (real.len() >= 3 && given.starts_with(&real))
        || (given.len() >= 3 && real.starts_with(&given))
        || given.ends_with(&format!("_{real}"))
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
    fn parameters_a_client_adds_are_ignored_and_near_misses_are_not() {
        // Gemini CLI adds `wait_for_previous` to every tool and forwards it.
        let ok = compiled()
            .check(json!({"path": "a", "wait_for_previous": true}))
            .unwrap();
        assert_eq!(ok.args, json!({"path": "a"}));
        assert_eq!(ok.ignored, ["wait_for_previous"]);
        for slip in ["pth", "offst", "ignores", "offset_lines", "file_path"] {
            let err = compiled().check(json!({"path": "a", slip: 1})).unwrap_err();
            assert!(err.contains("did you mean"), "{slip}: {err}");
        }
    }

    #[test]
    fn schemas_use_standard_formats_enums_and_plain_descriptions() {
        /// A choice.
        #[derive(serde::Deserialize, JsonSchema)]
        #[serde(rename_all = "lowercase")]
        #[allow(dead_code)]
        enum Action {
            /// Goes left.
            Left,
            /// Goes right.
            Right,
        }
        /// Parameters of [`Strict`].
        #[derive(serde::Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Strict {
            /// How many; see [`Action`] and [the docs](https://example.com).
            count: u64,
            /// Which way.
            action: Action,
        }
        let schema = schema_for::<Strict>();
        assert!(schema.get("description").is_none(), "{schema}");
        let count = &schema["properties"]["count"];
        assert!(count.get("format").is_none(), "{count}");
        assert_eq!(count["minimum"], 0);
        assert_eq!(
            count["description"],
            "How many; see `Action` and the docs (https://example.com)."
        );
        let action = &schema["properties"]["action"];
        assert_eq!(action["type"], "string");
        assert_eq!(action["enum"], json!(["left", "right"]));
        assert_eq!(
            action["description"],
            "Which way. `left`: Goes left; `right`: Goes right."
        );
        jsonschema::draft202012::meta::validate(&schema).unwrap();
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
        assert_eq!(ok.args, json!({"path": "a"}));
        let err = schema.check(json!(["a"])).unwrap_err();
        assert!(err.starts_with("arguments: expected an object"), "{err}");
    }
}
