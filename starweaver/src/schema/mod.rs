//! Parameter schemas: derived from Rust types with schemars, and checked when given
//! explicitly (DESIGN.md §4); the strict transform, `$defs` inlining, and putting
//! defaults back for `null` arguments.

mod defaults;
mod inline;
mod strict;

use std::fmt;

use crate::json::kind_of;
use schemars::JsonSchema;
use serde_json::Value;

pub use defaults::{fill_null_defaults, has_defaults};
pub use inline::{DEFAULT_INLINE_LIMIT, inline_defs};
pub(crate) use strict::append_notes;
pub use strict::{MOVED_TO_DESCRIPTION, STRICT_STRING_FORMATS, to_strict};

/// A parameter schema broke a rule; `path` is the JSON Pointer of the offending value
/// inside `parameters` (`""` is the root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// JSON Pointer into the schema, e.g. `/properties/age/type`.
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() { "/" } else { &self.path };
        write!(f, "parameters schema at `{path}`: {}", self.message)
    }
}

impl std::error::Error for SchemaError {}

/// The JSON Schema of `T`, ready to be a tool's `parameters`: draft 2020-12, properties in
/// declaration order, root `$schema` and `title` removed.
///
/// # Errors
/// When `T` does not describe a JSON object (a tool's arguments always are one).
///
/// ```
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Args { left: i64, right: Option<i64> }
///
/// let schema = starweaver::schema_for::<Args>().unwrap();
/// assert_eq!(schema["required"], serde_json::json!(["left"]));
/// ```
pub fn schema_for<T: JsonSchema>() -> Result<Value, SchemaError> {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| s.meta_schema = None);
    let mut schema = settings.into_generator().into_root_schema_for::<T>().to_value();
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
    }
    validate_parameters(&schema)?;
    Ok(schema)
}

/// Checks the rules every parameter schema must meet, explicit or derived: the root is a
/// `type: object` schema; `properties` is an object of schemas; `required` is a list of
/// strings naming properties; `additionalProperties` is a bool or a schema. Nested schemas
/// (properties, items, combinators, `$defs`) are held to the same shape rules.
///
/// # Errors
/// The first broken rule, with its JSON Pointer.
pub fn validate_parameters(schema: &Value) -> Result<(), SchemaError> {
    let Some(root) = schema.as_object() else {
        return Err(err("", format!("must be a JSON object schema, got {}", kind_of(schema))));
    };
    match root.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => return Err(err("/type", format!("the top level must be `\"object\"`, got {other}"))),
        None => return Err(err("/type", "the top level must declare `\"type\": \"object\"`".into())),
    }
    validate_node(schema, &mut String::new())
}

fn validate_node(node: &Value, path: &mut String) -> Result<(), SchemaError> {
    let Value::Object(map) = node else {
        // `true`/`false` are valid JSON Schemas everywhere below the root.
        return match node {
            Value::Bool(_) => Ok(()),
            other => Err(err(path, format!("must be a schema (an object or a bool), got {}", kind_of(other)))),
        };
    };
    let properties = match map.get("properties") {
        None => None,
        Some(Value::Object(props)) => {
            for (name, prop) in props {
                if !prop.is_object() {
                    let at = format!("{path}/properties/{}", escape(name));
                    return Err(err(&at, format!("property `{name}` must be a schema object, got {}", kind_of(prop))));
                }
                with_segment(path, &format!("properties/{}", escape(name)), |p| validate_node(prop, p))?;
            }
            Some(props)
        }
        Some(other) => {
            return Err(err(
                &format!("{path}/properties"),
                format!("must be an object of schemas, got {}", kind_of(other)),
            ));
        }
    };
    if let Some(required) = map.get("required") {
        let at = format!("{path}/required");
        let Value::Array(items) = required else {
            return Err(err(&at, format!("must be a list of property names, got {}", kind_of(required))));
        };
        for (i, item) in items.iter().enumerate() {
            let Value::String(name) = item else {
                return Err(err(
                    &format!("{at}/{i}"),
                    format!("must be a property name (a string), got {}", kind_of(item)),
                ));
            };
            if !properties.is_some_and(|p| p.contains_key(name)) {
                return Err(err(&format!("{at}/{i}"), format!("names `{name}`, which is not in `properties`")));
            }
        }
    }
    if let Some(additional) = map.get("additionalProperties") {
        if !matches!(additional, Value::Bool(_) | Value::Object(_)) {
            let at = format!("{path}/additionalProperties");
            return Err(err(&at, format!("must be a bool or a schema object, got {}", kind_of(additional))));
        }
        with_segment(path, "additionalProperties", |p| validate_node(additional, p))?;
    }
    for key in ["items", "not", "if", "then", "else", "contains"] {
        if let Some(sub) = map.get(key) {
            with_segment(path, key, |p| validate_node(sub, p))?;
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(list) = map.get(key) {
            let Value::Array(subs) = list else {
                return Err(err(&format!("{path}/{key}"), format!("must be a list of schemas, got {}", kind_of(list))));
            };
            for (i, sub) in subs.iter().enumerate() {
                with_segment(path, &format!("{key}/{i}"), |p| validate_node(sub, p))?;
            }
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(defs) = map.get(key) {
            let Value::Object(defs) = defs else {
                return Err(err(
                    &format!("{path}/{key}"),
                    format!("must be an object of schemas, got {}", kind_of(defs)),
                ));
            };
            for (name, sub) in defs {
                with_segment(path, &format!("{key}/{}", escape(name)), |p| validate_node(sub, p))?;
            }
        }
    }
    Ok(())
}

pub(crate) fn with_segment<R>(path: &mut String, segment: &str, f: impl FnOnce(&mut String) -> R) -> R {
    let len = path.len();
    path.push('/');
    path.push_str(segment);
    let out = f(path);
    path.truncate(len);
    out
}

/// What a local `$ref` (`#`, or `#` and a JSON Pointer) names inside `root`.
pub(crate) fn local_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    root.pointer(reference.strip_prefix('#')?)
}

/// RFC 6901 escaping, so a property called `a/b` still yields an unambiguous pointer.
pub(crate) fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

fn err(path: &str, message: String) -> SchemaError {
    SchemaError { path: path.to_owned(), message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rejected(schema: Value) -> SchemaError {
        validate_parameters(&schema).unwrap_err()
    }

    #[test]
    fn top_level_must_be_an_object_schema() {
        assert_eq!(
            rejected(json!([])).to_string(),
            "parameters schema at `/`: must be a JSON object schema, got an array"
        );
        assert_eq!(rejected(json!({"type": "string"})).path, "/type");
        assert_eq!(rejected(json!({"properties": {}})).path, "/type");
    }

    #[test]
    fn malformed_properties_are_named_by_path() {
        assert_eq!(rejected(json!({"type": "object", "properties": []})).path, "/properties");
        let e = rejected(json!({"type": "object", "properties": {"age": "integer"}}));
        assert_eq!(e.path, "/properties/age");
        assert!(e.message.contains("`age`"), "{e}");
        let nested = rejected(json!({"type": "object", "properties": {
            "a/b": {"type": "object", "properties": {"inner": 3}}
        }}));
        assert_eq!(nested.path, "/properties/a~1b/properties/inner");
    }

    #[test]
    fn malformed_required_lists_are_rejected() {
        assert_eq!(rejected(json!({"type": "object", "required": "x"})).path, "/required");
        assert_eq!(
            rejected(json!({"type": "object", "properties": {"x": {}}, "required": ["x", 1]})).path,
            "/required/1"
        );
        let e = rejected(json!({"type": "object", "properties": {"x": {}}, "required": ["y"]}));
        assert_eq!(e.to_string(), "parameters schema at `/required/0`: names `y`, which is not in `properties`");
    }

    #[test]
    fn additional_properties_must_be_bool_or_schema() {
        assert_eq!(rejected(json!({"type": "object", "additionalProperties": "yes"})).path, "/additionalProperties");
        validate_parameters(&json!({"type": "object", "additionalProperties": true})).unwrap();
        validate_parameters(&json!({"type": "object", "additionalProperties": {"type": "string"}})).unwrap();
    }

    #[test]
    fn combinators_and_items_are_checked_too() {
        let e = rejected(json!({"type": "object", "properties": {
            "xs": {"type": "array", "items": {"type": "object", "required": [1]}}
        }}));
        assert_eq!(e.path, "/properties/xs/items/required/0");
        assert_eq!(
            rejected(json!({"type": "object", "properties": {"u": {"anyOf": [{}, 7]}}})).path,
            "/properties/u/anyOf/1"
        );
    }

    #[test]
    fn derived_schemas_keep_declaration_order_and_drop_title() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Args {
            zeta: String,
            alpha: Option<u8>,
        }
        let schema = schema_for::<Args>().unwrap();
        let keys: Vec<_> = schema["properties"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["zeta", "alpha"]);
        assert!(schema.get("title").is_none() && schema.get("$schema").is_none());
    }

    #[test]
    fn non_object_types_cannot_be_argument_schemas() {
        assert_eq!(schema_for::<Vec<u8>>().unwrap_err().path, "/type");
    }
}
