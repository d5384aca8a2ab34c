//! Parameter and return schemas: derived from Rust types with schemars, and checked when given
//! explicitly; the strict transform, `$defs` inlining, and putting
//! defaults back for `null` arguments.

mod check;
mod defaults;
mod error;
mod inline;
mod strict;
mod walk;

use crate::json::kind_of;
use schemars::JsonSchema;
use serde_json::{Map, Value};

pub use error::SchemaError;
use error::err;
pub(crate) use walk::{Holds, children, escape, merge_lone_all_of, merge_missing, resolve_ref, with_segment};

pub use check::{Mismatch, check};
pub use defaults::{fill_null_defaults, has_defaults};
pub use inline::{DEFAULT_INLINE_LIMIT, inline_defs};
pub(crate) use strict::append_notes;
pub use strict::{MOVED_TO_DESCRIPTION, STRICT_STRING_FORMATS, to_strict};

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
    let schema = generate::<T>(schemars::generate::SchemaSettings::draft2020_12());
    validate_parameters(&schema)?;
    Ok(schema)
}

/// The JSON Schema of a tool's return type `T`, ready to be its `return_schema`: made as
/// [`schema_for`] makes parameters, but for what `T` serialises to, and any JSON type may
/// stand at the root. `None` when
/// the schema says nothing about the value: `()` (only `null`) and `serde_json::Value`
/// (anything), as Python's `None` and `Any` annotations give none.
///
/// # Errors
/// When the schema breaks a shape rule of [`validate_return_schema`].
///
/// ```
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Forecast { city: String, celsius: f64 }
///
/// let schema = starweaver::return_schema_for::<Forecast>().unwrap().unwrap();
/// assert_eq!(schema["required"], serde_json::json!(["city", "celsius"]));
/// assert_eq!(starweaver::return_schema_for::<i64>().unwrap().unwrap()["type"], "integer");
/// assert_eq!(starweaver::return_schema_for::<serde_json::Value>().unwrap(), None);
/// ```
pub fn return_schema_for<T: JsonSchema>() -> Result<Option<Value>, SchemaError> {
    // What `Serialize` writes, which is what the tool returns: a `#[serde(default)]` field
    // is always there, so it is required.
    let schema = generate::<T>(schemars::generate::SchemaSettings::draft2020_12().for_serialize());
    let says_nothing = match &schema {
        Value::Object(map) => map.is_empty() || (map.len() == 1 && map.get("type") == Some(&Value::from("null"))),
        _ => true,
    };
    if says_nothing {
        return Ok(None);
    }
    validate_return_schema(&schema)?;
    Ok(Some(schema))
}

/// The JSON Schema of a run's output type `T` (what the model's output call decodes
/// into): made as [`schema_for`] makes parameters, but any JSON type may stand at the
/// root, as for a return schema.
///
/// # Errors
/// When the schema breaks a shape rule of [`validate_return_schema`].
pub(crate) fn output_schema_for<T: JsonSchema>() -> Result<Value, SchemaError> {
    let schema = generate::<T>(schemars::generate::SchemaSettings::draft2020_12());
    validate_return_schema(&schema)?;
    Ok(schema)
}

/// What `#[tool]` hands its builder to make a return schema: `return_schema_for::<T>`.
#[doc(hidden)]
pub type DeriveReturn = fn() -> Result<Option<Value>, SchemaError>;

fn generate<T: JsonSchema>(settings: schemars::generate::SchemaSettings) -> Value {
    let settings = settings.with(|s| s.meta_schema = None);
    let mut schema = settings.into_generator().into_root_schema_for::<T>().to_value();
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
    }
    schema
}

/// Checks a return schema: a JSON object schema of any type (MCP wraps a non-object one
/// when it serves it), held below the root to the shape rules of [`validate_parameters`].
///
/// # Errors
/// The first broken rule, with its JSON Pointer.
///
/// ```
/// use serde_json::json;
///
/// starweaver::validate_return_schema(&json!({"type": "array", "items": {"type": "string"}})).unwrap();
/// let err = starweaver::validate_return_schema(&json!({"type": "array", "items": 3})).unwrap_err();
/// assert_eq!(err.path, "/items");
/// ```
pub fn validate_return_schema(schema: &Value) -> Result<(), SchemaError> {
    if !schema.is_object() {
        return Err(err("", format!("must be a JSON object schema, got {}", kind_of(schema))));
    }
    validate_node(schema, &mut String::new())
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

/// One schema's own rules, then (through the keyword table) every schema below it.
fn validate_node(node: &Value, path: &mut String) -> Result<(), SchemaError> {
    let Value::Object(map) = node else {
        // `true`/`false` are valid JSON Schemas everywhere below the root.
        return match node {
            Value::Bool(_) => Ok(()),
            other => Err(err(path, format!("must be a schema (an object or a bool), got {}", kind_of(other)))),
        };
    };
    check_shapes(map, path)?;
    check_required(map, path)?;
    for child in walk::children(map) {
        if let (Some(name), "properties", false) = (child.name, child.keyword, child.schema.is_object()) {
            return Err(err(
                &format!("{path}/{}", child.segment),
                format!("property `{name}` must be a schema object, got {}", kind_of(child.schema)),
            ));
        }
        with_segment(path, &child.segment, |p| validate_node(child.schema, p))?;
    }
    Ok(())
}

/// Each subschema keyword holds what the table says: a list, an object of schemas, or a
/// schema (for `additionalProperties`, a bool or a schema object).
fn check_shapes(map: &Map<String, Value>, path: &str) -> Result<(), SchemaError> {
    for (keyword, value) in map {
        let expected = match walk::holds(keyword) {
            Some(Holds::List) if !value.is_array() => "a list of schemas",
            Some(Holds::Map) if !value.is_object() => "an object of schemas",
            _ => continue,
        };
        return Err(err(&format!("{path}/{keyword}"), format!("must be {expected}, got {}", kind_of(value))));
    }
    if let Some(additional) = map.get("additionalProperties")
        && !matches!(additional, Value::Bool(_) | Value::Object(_))
    {
        let at = format!("{path}/additionalProperties");
        return Err(err(&at, format!("must be a bool or a schema object, got {}", kind_of(additional))));
    }
    Ok(())
}

/// `required` is a list of strings, each naming a declared property.
fn check_required(map: &Map<String, Value>, path: &str) -> Result<(), SchemaError> {
    let Some(required) = map.get("required") else { return Ok(()) };
    let at = format!("{path}/required");
    let Value::Array(items) = required else {
        return Err(err(&at, format!("must be a list of property names, got {}", kind_of(required))));
    };
    let properties = map.get("properties").and_then(Value::as_object);
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[allow(clippy::needless_pass_by_value)] // takes `json!` literals, for terser tests
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
    fn return_schemas_take_any_root_type_but_say_something() {
        assert_eq!(return_schema_for::<Vec<u8>>().unwrap().unwrap()["type"], "array");
        assert_eq!(return_schema_for::<()>().unwrap(), None);
        assert_eq!(return_schema_for::<Value>().unwrap(), None);
        let e = validate_return_schema(&json!(true)).unwrap_err();
        assert_eq!(e.message, "must be a JSON object schema, got a bool");
        assert_eq!(validate_return_schema(&json!({"anyOf": [{}, 7]})).unwrap_err().path, "/anyOf/1");
    }

    #[test]
    fn non_object_types_cannot_be_argument_schemas() {
        assert_eq!(schema_for::<Vec<u8>>().unwrap_err().path, "/type");
    }
}
