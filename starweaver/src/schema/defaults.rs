//! Putting defaults back: in strict mode an optional parameter is required and nullable,
//! so a model that wants the default sends `null`; the runtime turns that `null` back into
//! the schema's `default` before the tool sees the arguments.

use serde_json::Value;

/// How deep `$ref`s are followed while filling, so a malformed self-reference cannot loop.
const MAX_REF_DEPTH: usize = 32;

/// Whether any schema in `schema` declares a `default` (the only case where
/// [`fill_null_defaults`] can change anything).
pub fn has_defaults(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.contains_key("default") || map.values().any(has_defaults),
        Value::Array(items) => items.iter().any(has_defaults),
        _ => false,
    }
}

/// Replaces each `null` argument whose property has a `default` and does not itself allow
/// `null` with that default, at every depth the schema describes. Returns whether anything
/// changed.
///
/// ```
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {
///     "days": {"type": "integer", "default": 3},
///     "note": {"type": ["string", "null"], "default": "hi"},
/// }});
/// let mut args = json!({"days": null, "note": null});
/// assert!(starweaver::schema::fill_null_defaults(&schema, &mut args));
/// assert_eq!(args, json!({"days": 3, "note": null})); // `note` allows null: kept
/// ```
pub fn fill_null_defaults(schema: &Value, args: &mut Value) -> bool {
    fill(schema, schema, args, 0)
}

fn fill(root: &Value, schema: &Value, value: &mut Value, depth: usize) -> bool {
    let Some(schema) = resolve(root, schema, depth) else { return false };
    match value {
        Value::Object(args) => match schema.get("properties") {
            Some(Value::Object(props)) => {
                let mut changed = false;
                for (name, arg) in args.iter_mut() {
                    if let Some(prop) = props.get(name) {
                        changed |= fill_argument(root, prop, arg, depth);
                    }
                }
                changed
            }
            _ => fill_branches(root, schema, value, depth),
        },
        Value::Array(items) => schema.get("items").is_some_and(|item_schema| {
            items.iter_mut().fold(false, |changed, item| fill(root, item_schema, item, depth) | changed)
        }),
        _ => false,
    }
}

/// One argument under its property's schema: a `null` the property does not allow becomes
/// the default (the property's own, or its `$ref` target's); anything else is filled inside.
fn fill_argument(root: &Value, prop: &Value, arg: &mut Value, depth: usize) -> bool {
    if !arg.is_null() {
        return fill(root, prop, arg, depth);
    }
    let target = resolve(root, prop, depth).unwrap_or(prop);
    match target.get("default").or_else(|| prop.get("default")) {
        Some(default) if !accepts_null(root, target, depth) => {
            *arg = default.clone();
            true
        }
        _ => false,
    }
}

/// An object value under `anyOf`/`oneOf`: fill it by the first branch that declares properties.
fn fill_branches(root: &Value, schema: &Value, value: &mut Value, depth: usize) -> bool {
    let branches = schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array);
    let Some(branch) =
        branches.into_iter().flatten().find(|b| resolve(root, b, depth).is_some_and(|b| b.get("properties").is_some()))
    else {
        return false;
    };
    fill(root, branch, value, depth)
}

/// `schema`, or what its `$ref` names (followed up to [`MAX_REF_DEPTH`] times).
fn resolve<'a>(root: &'a Value, schema: &'a Value, depth: usize) -> Option<&'a Value> {
    let Some(reference) = schema.get("$ref").and_then(Value::as_str) else { return Some(schema) };
    if depth >= MAX_REF_DEPTH {
        return None;
    }
    resolve(root, super::resolve_ref(root, reference)?, depth + 1)
}

fn accepts_null(root: &Value, schema: &Value, depth: usize) -> bool {
    let Some(schema) = resolve(root, schema, depth) else { return false };
    let in_type = match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => false,
    };
    in_type
        || schema.get("enum").and_then(Value::as_array).is_some_and(|e| e.contains(&Value::Null))
        || schema.get("const").is_some_and(Value::is_null)
        || ["anyOf", "oneOf"].iter().any(|key| {
            schema
                .get(*key)
                .and_then(Value::as_array)
                .is_some_and(|bs| bs.iter().any(|b| accepts_null(root, b, depth + 1)))
        })
}
