//! Google Gemini function declarations: `{"name", "description", "parameters"}`, where
//! `parameters` is Gemini's OpenAPI subset: no `$ref`, one `type` per schema with
//! `nullable`, `enum` for strings only, a short list of formats and keywords.

use serde_json::{Map, Value, json};

use crate::schema::{self, DEFAULT_INLINE_LIMIT, SchemaError, append_notes};
use crate::tool::ToolDefinition;

/// The keywords a Gemini schema may hold; anything else moves into the description.
pub const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// Keywords dropped without a note: annotations that say nothing to the model.
const DROPPED: &[&str] =
    &["title", "$schema", "examples", "$comment", "readOnly", "writeOnly", "deprecated", "discriminator"];

/// The formats Gemini accepts, per type.
pub fn gemini_format_allowed(ty: &str, format: &str) -> bool {
    matches!(
        (ty, format),
        ("string", "date-time" | "enum") | ("integer", "int32" | "int64") | ("number", "float" | "double")
    )
}

/// Gemini's function names: `[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}`.
pub(super) fn is_gemini_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c))
}

/// The declaration, or why Gemini cannot take it.
pub(super) fn declaration(definition: &ToolDefinition) -> Result<Value, String> {
    let name = &definition.name;
    if !is_gemini_name(name) {
        // Registration already held the name to `[A-Za-z0-9_-]{1,64}`: only its first
        // character can be what Gemini refuses.
        return Err("Gemini function names must start with a letter or `_`".into());
    }
    let inlined = schema::inline_defs(&definition.parameters, DEFAULT_INLINE_LIMIT).map_err(|e| e.to_string())?;
    let parameters = convert(inlined, &mut String::new()).map_err(|e| e.to_string())?;
    let mut out = Map::new();
    out.insert("name".into(), Value::String(name.clone()));
    if let Some(text) = definition.description_text() {
        out.insert("description".into(), Value::String(text.to_owned()));
    }
    // Gemini wants no `parameters` at all for a function without any.
    if parameters.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty()) {
        out.insert("parameters".into(), parameters);
    }
    Ok(Value::Object(out))
}

/// One schema in Gemini's subset: combinators and `null` folded into `anyOf` and
/// `nullable`, enums kept only for strings, then only Gemini's keywords kept (the rest
/// become notes in the description).
fn convert(node: Value, path: &mut String) -> Result<Value, SchemaError> {
    let Value::Object(mut map) = node else { return Err(any_value(path)) };
    if let Some(one_of) = map.remove("oneOf") {
        map.entry("anyOf").or_insert(one_of);
    }
    if !schema::merge_lone_all_of(&mut map) {
        return Err(SchemaError {
            path: format!("{path}/allOf"),
            message: "Gemini cannot take `allOf` with several schemas".into(),
        });
    }
    if let Some(value) = map.remove("const") {
        map.insert("enum".into(), json!([value]));
    }
    let mut nullable = take_null_type(&mut map);
    if let Some(Value::Array(branches)) = map.remove("anyOf") {
        let (rest, had_null) = without_null_branches(branches);
        nullable |= had_null;
        if let [_] = rest.as_slice() {
            // One branch left: it is the schema. It may itself be nullable or a list of
            // types, so it is converted again, merged.
            schema::merge_missing(&mut map, rest.into_iter().next().expect("one branch"));
            let Value::Object(mut merged) = convert(Value::Object(map), path)? else {
                unreachable!("convert keeps objects")
            };
            if nullable {
                merged.insert("nullable".into(), Value::Bool(true));
            }
            return Ok(Value::Object(merged));
        }
        let mut converted = Vec::with_capacity(rest.len());
        for (i, branch) in rest.into_iter().enumerate() {
            converted.push(schema::with_segment(path, &format!("anyOf/{i}"), |p| convert(branch, p))?);
        }
        if !converted.is_empty() {
            map.insert("anyOf".into(), Value::Array(converted));
        }
    }
    nullable |= string_enum(&mut map);
    if !["type", "anyOf", "enum", "properties", "items"].iter().any(|k| map.contains_key(*k)) {
        return Err(SchemaError {
            path: path.to_owned(),
            message: if nullable {
                "accepts only null, which Gemini's schema subset cannot express (it has no null type)".into()
            } else {
                "accepts any JSON value, which Gemini's schema subset cannot express".into()
            },
        });
    }
    let mut out = gemini_keywords(map, path)?;
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    Ok(Value::Object(out))
}

/// Gemini has one `type` per schema and no `null` type: a list of types becomes the one
/// type (or `anyOf` over several), and `null` among them becomes `nullable`. Returns
/// whether it did.
fn take_null_type(map: &mut Map<String, Value>) -> bool {
    match map.remove("type") {
        Some(Value::Array(types)) => {
            let mut others: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
            match others.len() {
                0 => {}
                1 => {
                    map.insert("type".into(), others.remove(0));
                }
                _ => {
                    let branches: Vec<Value> = others.into_iter().map(|t| json!({ "type": t })).collect();
                    map.insert("anyOf".into(), Value::Array(branches));
                }
            }
            true
        }
        Some(Value::String(t)) if t == "null" => true,
        Some(t) => {
            map.insert("type".into(), t);
            false
        }
        None => false,
    }
}

/// The `anyOf` branches that are not `{"type": "null"}`, and whether any was.
fn without_null_branches(branches: Vec<Value>) -> (Vec<Value>, bool) {
    let before = branches.len();
    let rest: Vec<Value> = branches.into_iter().filter(|b| b.get("type").is_none_or(|t| t != "null")).collect();
    let had_null = rest.len() < before;
    (rest, had_null)
}

/// Gemini takes `enum` only over strings: `null` in it becomes `nullable` (returned), other
/// values turn the enum into a note; a string enum without a type gets `type: string`.
fn string_enum(map: &mut Map<String, Value>) -> bool {
    let Some(Value::Array(values)) = map.get_mut("enum") else { return false };
    let nullable = values.contains(&Value::Null);
    values.retain(|v| !v.is_null());
    if !values.iter().all(Value::is_string) {
        let listed = values.iter().map(Value::to_string).collect::<Vec<_>>().join(", ");
        map.remove("enum");
        append_notes(map, &[format!("one of: {listed}")]);
    } else if !map.contains_key("type") {
        map.insert("type".into(), Value::String("string".into()));
    }
    nullable
}

/// Gemini's keywords kept (properties and items converted), dropped annotations dropped,
/// and everything else (a format Gemini refuses included) noted in the description.
fn gemini_keywords(mut map: Map<String, Value>, path: &mut String) -> Result<Map<String, Value>, SchemaError> {
    let ty = map.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
    if let Some(Value::String(format)) = map.get("format")
        && !gemini_format_allowed(&ty, format)
    {
        let note = format!("format: {format}");
        map.remove("format");
        append_notes(&mut map, &[note]);
    }
    let mut notes = Vec::new();
    let mut out = Map::with_capacity(map.len());
    for (key, value) in map {
        match key.as_str() {
            "properties" => {
                let Value::Object(props) = value else { continue };
                let mut converted = Map::with_capacity(props.len());
                for (name, prop) in props {
                    let at = format!("properties/{}", schema::escape(&name));
                    converted.insert(name, schema::with_segment(path, &at, |p| convert(prop, p))?);
                }
                out.insert(key, Value::Object(converted));
            }
            "items" => {
                out.insert(key, schema::with_segment(path, "items", |p| convert(value, p))?);
            }
            _ if GEMINI_KEYWORDS.contains(&key.as_str()) => {
                out.insert(key, value);
            }
            _ if DROPPED.contains(&key.as_str()) => {}
            // Gemini objects never take extra keys: `false` is what they are anyway.
            "additionalProperties" if value.is_boolean() => {}
            _ => notes.push(format!("{key}: {value}")),
        }
    }
    append_notes(&mut out, &notes);
    Ok(out)
}

fn any_value(path: &str) -> SchemaError {
    SchemaError {
        path: path.to_owned(),
        message: "accepts any JSON value, which Gemini's schema subset cannot express".into(),
    }
}
