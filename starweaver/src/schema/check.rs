//! Whether a value matches a schema: a served tool's return against its return schema, a
//! user's answer against the schema a tool asked with.

use serde_json::Value;

/// Why a value was not found to match a schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    /// The schema itself cannot be used to check anything.
    #[error("the schema cannot be used: {0}")]
    Unusable(String),
    /// The value does not match, first at `at` (a JSON pointer into the value, `/` for
    /// the whole).
    #[error("at `{at}`: {message}")]
    Value {
        /// Where the value first fails to match.
        at: String,
        /// How.
        message: String,
    },
}

/// Checks `value` against `schema`.
///
/// # Errors
/// Where and how the value first fails to match, or why the schema cannot be used.
///
/// ```
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {"rows": {"type": "array", "items": {"type": "integer"}}}});
/// assert!(starweaver::schema::check(&schema, &json!({"rows": [1, 2]})).is_ok());
/// let err = starweaver::schema::check(&schema, &json!({"rows": [1, "two"]})).unwrap_err();
/// assert!(err.to_string().starts_with("at `/rows/1`: "), "{err}");
/// ```
pub fn check(schema: &Value, value: &Value) -> Result<(), Mismatch> {
    let validator = jsonschema::validator_for(schema).map_err(|err| Mismatch::Unusable(err.to_string()))?;
    validator.validate(value).map_err(|err| {
        let path = err.instance_path().to_string();
        let at = if path.is_empty() { "/".to_owned() } else { path };
        Mismatch::Value { at, message: err.to_string() }
    })
}
