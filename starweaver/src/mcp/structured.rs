//! Return schemas over MCP. MCP's `outputSchema` must be an object schema and its
//! `structuredContent` an object, so a tool whose value is not one (a string, a list) is
//! served as the official Python SDK serves it: wrapped as `{"result": value}`, its schema
//! as the one property `result` (with the `$defs` at the root, where its `$ref`s point).

use serde_json::{Map, Value};

use crate::schema::Mismatch;

/// The key a non-object value is wrapped under.
const RESULT: &str = "result";

/// Whether values of `schema` are served wrapped.
fn wraps(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) != Some("object")
}

/// A return schema as an MCP `outputSchema`.
pub(super) fn output_schema(schema: &Value) -> Map<String, Value> {
    let mut inner = schema.as_object().cloned().unwrap_or_default();
    if !wraps(schema) {
        return inner;
    }
    let defs = inner.remove("$defs");
    let mut outer = Map::new();
    outer.insert("type".into(), "object".into());
    outer.insert("properties".into(), Value::Object(Map::from_iter([(RESULT.to_owned(), Value::Object(inner))])));
    outer.insert("required".into(), Value::Array(vec![RESULT.into()]));
    if let Some(defs) = defs {
        outer.insert("$defs".into(), defs);
    }
    outer
}

/// A returned value as `structuredContent`, after checking it against the return schema.
///
/// # Errors
/// The message for the client when the value does not match, naming the JSON path of the
/// first mismatch inside the value (or when the schema cannot be compiled).
pub(super) fn structured_content(schema: &Value, value: &Value) -> Result<Value, String> {
    crate::schema::check(schema, value).map_err(|err| match err {
        Mismatch::Unusable(err) => format!("the tool's return schema cannot be used: {err}"),
        mismatch @ Mismatch::Value { .. } => {
            format!("the tool's return value does not match its return schema {mismatch}")
        }
    })?;
    Ok(if wraps(schema) { Value::Object(Map::from_iter([(RESULT.to_owned(), value.clone())])) } else { value.clone() })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn object_schemas_are_served_as_they_are_and_others_wrapped_with_their_defs_at_the_root() {
        let object = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        assert_eq!(Value::Object(output_schema(&object)), object);
        let list = json!({"type": "array", "items": {"$ref": "#/$defs/P"}, "$defs": {"P": {"type": "string"}}});
        assert_eq!(
            Value::Object(output_schema(&list)),
            json!({
                "type": "object",
                "properties": {"result": {"type": "array", "items": {"$ref": "#/$defs/P"}}},
                "required": ["result"],
                "$defs": {"P": {"type": "string"}},
            })
        );
        assert_eq!(structured_content(&list, &json!(["x"])).unwrap(), json!({"result": ["x"]}));
    }

    #[test]
    fn a_value_that_does_not_match_names_the_path() {
        let schema = json!({"type": "object", "properties": {"rows": {"type": "array", "items": {"type": "integer"}}}});
        let err = structured_content(&schema, &json!({"rows": [1, "two"]})).unwrap_err();
        assert!(err.starts_with("the tool's return value does not match its return schema at `/rows/1`: "), "{err}");
        let err = structured_content(&json!({"type": "integer"}), &json!("x")).unwrap_err();
        assert!(err.contains("at `/`"), "{err}");
    }
}
