//! The strict transform: a parameter schema as OpenAI's strict mode (and every provider
//! that follows it) accepts it, or an error naming the construct that cannot be.
//!
//! Every object gets `additionalProperties: false` and lists every property in `required`;
//! a property that was optional becomes nullable, and its `default` moves into the
//! description (strict mode refuses the keyword), so the model knows what `null` means and
//! the runtime puts the default back before the call (see [`fill_null_defaults`](super::fill_null_defaults)).

use serde_json::{Map, Value, json};

use super::error::{SchemaError, err};
use super::walk::try_for_each_child_mut;
use super::walk::{escape, merge_lone_all_of, with_segment};

/// String formats strict mode accepts; any other format moves into the description.
pub const STRICT_STRING_FORMATS: &[&str] =
    &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];

/// Keywords strict mode refuses but that only narrow what is valid: they move into the
/// description, where the model still reads them, and the runtime still validates them.
pub const MOVED_TO_DESCRIPTION: &[&str] = &[
    "minLength",
    "maxLength",
    "patternProperties",
    "unevaluatedProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
];

/// Keywords that change what is valid in ways strict mode cannot express.
const UNSUPPORTED: &[&str] = &["not", "if", "then", "else", "dependentSchemas", "dependentRequired", "prefixItems"];

/// `schema` made strict-compatible (see the module docs).
///
/// # Errors
/// The first construct that cannot be made strict, with its JSON Pointer: a map
/// (`additionalProperties` with a schema), a free-form object or value, `allOf` with several
/// schemas, or `not` / `if` / `prefixItems` and the like.
///
/// ```
/// use serde_json::json;
///
/// let strict = starweaver::schema::to_strict(&json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 3}},
///     "required": ["city"],
/// }))
/// .unwrap();
/// assert_eq!(strict["required"], json!(["city", "days"]));
/// assert_eq!(strict["properties"]["days"], json!({"type": ["integer", "null"], "description": "default: 3"}));
/// assert_eq!(strict["additionalProperties"], json!(false));
/// ```
pub fn to_strict(schema: &Value) -> Result<Value, SchemaError> {
    let mut out = schema.clone();
    strict_node(&mut out, &mut String::new())?;
    Ok(out)
}

fn strict_node(node: &mut Value, path: &mut String) -> Result<(), SchemaError> {
    let Value::Object(map) = node else {
        return Err(err(path, "`true`/`false` schemas (any value, no value) cannot be strict".into()));
    };
    for key in UNSUPPORTED {
        if map.contains_key(*key) {
            return Err(err(&format!("{path}/{key}"), format!("`{key}` cannot be expressed in strict mode")));
        }
    }
    if let Some(one_of) = map.remove("oneOf") {
        // Strict mode has no `oneOf`; for the schemas models produce, `anyOf` is equivalent.
        if map.contains_key("anyOf") {
            return Err(err(&format!("{path}/oneOf"), "`oneOf` beside `anyOf` cannot be strict".into()));
        }
        map.insert("anyOf".into(), one_of);
    }
    if !merge_lone_all_of(map) {
        return Err(err(&format!("{path}/allOf"), "`allOf` with several schemas cannot be strict".into()));
    }
    if map.contains_key("$ref") && map.len() > 1 {
        // Strict mode refuses siblings beside `$ref` but allows them beside `anyOf`.
        let reference = map.remove("$ref").expect("checked above");
        map.insert("anyOf".into(), json!([{ "$ref": reference }]));
    }
    // Annotations strict mode refuses: an OpenAPI hint for code generators (`anyOf` over
    // tagged models says the same) and titles (the property names say it).
    map.remove("discriminator");
    map.remove("title");
    move_to_description(map);
    let is_object = map.get("type").is_some_and(|t| t == "object") || map.contains_key("properties");
    if is_object {
        strict_object(map, path)?;
    } else if !(map.contains_key("type")
        || map.contains_key("anyOf")
        || map.contains_key("$ref")
        || map.contains_key("enum")
        || map.contains_key("const"))
    {
        return Err(err(path, "a schema without a type (any JSON value) cannot be strict".into()));
    }
    // What is left below: `items`, `anyOf` branches and definitions (the rest were refused
    // or moved into the description above).
    try_for_each_child_mut(map, |keyword, segment, child| match keyword {
        "properties" | "additionalProperties" => Ok(()), // `strict_object` made these
        _ => with_segment(path, segment, |p| strict_node(child, p)),
    })
}

fn strict_object(map: &mut Map<String, Value>, path: &mut String) -> Result<(), SchemaError> {
    match map.get("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        Some(_) if !map.contains_key("properties") => {
            return Err(err(
                &format!("{path}/additionalProperties"),
                "a map (an object with `additionalProperties`) cannot be strict: strict mode needs `additionalProperties: false`"
                    .into(),
            ));
        }
        Some(_) => {
            return Err(err(
                &format!("{path}/additionalProperties"),
                "extra properties cannot be allowed in strict mode (it needs `additionalProperties: false`)".into(),
            ));
        }
    }
    if !map.get("properties").is_some_and(Value::is_object) {
        return Err(err(path, "an object without declared `properties` (any keys) cannot be strict".into()));
    }
    let required: Vec<String> = match map.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    };
    let Some(Value::Object(properties)) = map.get_mut("properties") else { unreachable!("checked above") };
    for (name, prop) in properties.iter_mut() {
        with_segment(path, &format!("properties/{}", escape(name)), |p| strict_node(prop, p))?;
        if !required.contains(name) {
            make_nullable(prop);
        }
    }
    let all: Vec<Value> = properties.keys().map(|k| Value::String(k.clone())).collect();
    map.insert("required".into(), Value::Array(all));
    map.insert("additionalProperties".into(), Value::Bool(false));
    Ok(())
}

/// Lets `null` through as well: in `type`, in `enum`, or as an `anyOf` branch.
fn make_nullable(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if let Some(value) = map.remove("const") {
        map.insert("enum".into(), json!([value]));
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match map.get_mut("type") {
        Some(Value::String(t)) if t == "null" => {}
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push(Value::String("null".into()));
            }
        }
        _ => {
            if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
                if !branches.iter().any(|b| b.get("type").is_some_and(|t| t == "null")) {
                    branches.push(json!({"type": "null"}));
                }
                return;
            }
            // A bare `$ref` or `enum`: wrap it, keeping the description outside.
            let mut inner = std::mem::take(map);
            let mut outer = Map::new();
            if let Some(description) = inner.remove("description") {
                outer.insert("description".into(), description);
            }
            outer.insert("anyOf".into(), json!([Value::Object(inner), {"type": "null"}]));
            *map = outer;
        }
    }
}

/// Moves the keywords in [`MOVED_TO_DESCRIPTION`], unsupported string formats and the
/// `default` into the description, e.g. `"The name (minLength: 1, format: uri)"`. Strict
/// mode refuses `default`; the model reads it here, and the runtime applies it for a
/// `null` from the definition's own schema.
fn move_to_description(map: &mut Map<String, Value>) {
    let mut notes = Vec::new();
    if let Some(value) = map.remove("default") {
        notes.push(format!("default: {value}"));
    }
    for key in MOVED_TO_DESCRIPTION {
        if let Some(value) = map.remove(*key) {
            notes.push(format!("{key}: {value}"));
        }
    }
    if let Some(Value::String(format)) = map.get("format")
        && !STRICT_STRING_FORMATS.contains(&format.as_str())
    {
        notes.push(format!("format: {format}"));
        map.remove("format");
    }
    append_notes(map, &notes);
}

/// Adds `notes` to a schema's description.
pub(crate) fn append_notes(map: &mut Map<String, Value>, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    let notes = notes.join(", ");
    let description = match map.get("description").and_then(Value::as_str) {
        Some(text) if !text.is_empty() => format!("{text} ({notes})"),
        _ => notes,
    };
    map.insert("description".into(), Value::String(description));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::needless_pass_by_value)] // takes `json!` literals, for terser tests
    fn strict(schema: Value) -> Value {
        to_strict(&schema).unwrap()
    }

    #[allow(clippy::needless_pass_by_value)] // takes `json!` literals, for terser tests
    fn refused(schema: Value) -> SchemaError {
        to_strict(&schema).unwrap_err()
    }

    #[test]
    fn optional_properties_become_required_and_nullable_at_every_depth() {
        let out = strict(json!({"type": "object", "properties": {
            "a": {"type": "string"},
            "inner": {"type": "object", "properties": {"b": {"type": "integer", "enum": [1, 2]}}},
        }, "required": ["a"]}));
        assert_eq!(out["required"], json!(["a", "inner"]));
        assert_eq!(out["properties"]["a"], json!({"type": "string"}));
        assert_eq!(out["properties"]["inner"]["type"], json!(["object", "null"]));
        assert_eq!(out["properties"]["inner"]["additionalProperties"], json!(false));
        assert_eq!(
            out["properties"]["inner"]["properties"]["b"],
            json!({"type": ["integer", "null"], "enum": [1, 2, null]})
        );
    }

    #[test]
    fn refs_with_siblings_and_one_of_are_rewritten() {
        let out = strict(json!({"type": "object", "properties": {
            "pet": {"$ref": "#/$defs/Pet", "description": "The pet."},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "bare": {"$ref": "#/$defs/Pet"},
        }, "required": ["pet", "either"], "$defs": {"Pet": {"type": "object", "properties": {}}}}));
        assert_eq!(out["properties"]["pet"], json!({"anyOf": [{"$ref": "#/$defs/Pet"}], "description": "The pet."}));
        assert_eq!(out["properties"]["either"], json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}));
        assert_eq!(out["properties"]["bare"], json!({"anyOf": [{"$ref": "#/$defs/Pet"}, {"type": "null"}]}));
        assert_eq!(out["$defs"]["Pet"]["additionalProperties"], json!(false));
    }

    #[test]
    fn unsupported_keywords_and_formats_move_into_the_description() {
        let out = strict(json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "Who.", "minLength": 1, "format": "uri"},
            "at": {"type": "string", "format": "date-time"},
        }, "required": ["name", "at"]}));
        assert_eq!(
            out["properties"]["name"],
            json!({"type": "string", "description": "Who. (minLength: 1, format: uri)"})
        );
        assert_eq!(out["properties"]["at"]["format"], "date-time");
    }

    #[test]
    fn constructs_that_cannot_be_strict_are_named_by_path() {
        let map = refused(json!({"type": "object", "properties": {
            "tags": {"type": "object", "additionalProperties": {"type": "integer"}}
        }}));
        assert_eq!(map.path, "/properties/tags/additionalProperties");
        assert!(map.message.starts_with("a map"), "{map}");
        assert_eq!(refused(json!({"type": "object", "properties": {"x": {}}})).path, "/properties/x");
        assert_eq!(refused(json!({"type": "object"})).path, "");
        let all_of =
            refused(json!({"type": "object", "properties": {"x": {"allOf": [{"type": "string"}, {"minLength": 1}]}}}));
        assert_eq!(all_of.path, "/properties/x/allOf");
        assert_eq!(
            refused(json!({"type": "object", "properties": {"x": {"not": {"type": "string"}}}})).path,
            "/properties/x/not"
        );
    }
}
