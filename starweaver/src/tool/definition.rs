//! The one `ToolDefinition` shared by Rust and Python tools.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::concurrency::ConcurrencyLimit;
use crate::error::{DefinitionError, DefinitionErrorKind};
use crate::schema;

/// The retry budget a tool gets when it sets none: an `Execution` failure is tried at
/// most `DEFAULT_MAX_RETRIES + 1` times before the model sees it.
pub const DEFAULT_MAX_RETRIES: u32 = 3;

/// Everything a model and the runtime need to know about one tool.
///
/// Rust `#[tool]` functions, closure-built tools and Python `@tool` callables all produce
/// this struct, so a tool's schema and policy do not depend on the language it is written in.
///
/// ```
/// use starweaver::ToolDefinition;
/// use serde_json::json;
///
/// let def = ToolDefinition::new("add", json!({
///     "type": "object",
///     "properties": {"left": {"type": "integer"}, "right": {"type": "integer"}},
///     "required": ["left", "right"],
/// }))
/// .with_description("Add two integers.")
/// .with_max_retries(1);
/// def.validate().unwrap();
/// assert_eq!(def.effective_max_retries(), 1);
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDefinition {
    /// Unique per agent; `[A-Za-z0-9_-]{1,64}`.
    pub name: String,
    /// What the tool does, for the model. Required when `strict` is `Some(true)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments; the top level is `type: object`.
    pub parameters: Value,
    /// `None` leaves the choice to the provider renderer; `Some(true)` asks for a strict
    /// definition; `Some(false)` forbids one.
    #[serde(default)]
    pub strict: Option<bool>,
    /// A sequential call is a barrier: earlier calls finish first, later calls start after it.
    #[serde(default)]
    pub sequential: bool,
    /// Not sent to the model until a tool search finds it (or the model calls it by
    /// name); while any tool is deferred, the model is offered `search_tools`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defer_loading: bool,
    /// Each attempt is cancelled after this many milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The most characters of model-facing content a return may have; longer content is
    /// cut, with a marker saying how much was cut, and the whole value stays host-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_return_chars: Option<u32>,
    /// Retries after the first attempt; [`DEFAULT_MAX_RETRIES`] when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// How many times one run may call the tool; later calls get a `limit_reached` error
    /// return instead of running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
    /// How many of its calls may run at once, across every run in the process: a limit of
    /// its own (a number) or a shared [`ConcurrencyLimit`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<ConcurrencyLimit>,
    /// Model-facing metadata; a JSON object (`null` reads as none).
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// JSON Schema of the value the tool returns, when its return type declares one. Never
    /// sent to models; served over MCP as `outputSchema`, with the value checked against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_schema: Option<Value>,
}

// Compared every step a model callback is offered the tools (to hand it the last step's
// list when nothing changed): schemas are compared in order first, without hashing their
// keys. Destructured whole, so a new field cannot be left out of the comparison.
impl PartialEq for ToolDefinition {
    fn eq(&self, other: &Self) -> bool {
        let Self {
            name,
            description,
            parameters,
            strict,
            sequential,
            defer_loading,
            timeout_ms,
            max_return_chars,
            max_retries,
            max_uses,
            max_concurrency,
            metadata,
            return_schema,
        } = self;
        *name == other.name
            && *description == other.description
            && *strict == other.strict
            && *sequential == other.sequential
            && *defer_loading == other.defer_loading
            && *timeout_ms == other.timeout_ms
            && *max_return_chars == other.max_return_chars
            && *max_retries == other.max_retries
            && *max_uses == other.max_uses
            && *max_concurrency == other.max_concurrency
            && crate::json::equal(parameters, &other.parameters)
            && crate::json::maps_equal(metadata, &other.metadata)
            && match (return_schema, &other.return_schema) {
                (Some(a), Some(b)) => crate::json::equal(a, b),
                (a, b) => a.is_none() && b.is_none(),
            }
    }
}

impl ToolDefinition {
    /// A definition with the given name and parameter schema and every policy at its default.
    pub fn new(name: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: None,
            parameters,
            strict: None,
            sequential: false,
            defer_loading: false,
            timeout_ms: None,
            max_return_chars: None,
            max_retries: None,
            max_uses: None,
            max_concurrency: None,
            metadata: Map::new(),
            return_schema: None,
        }
    }

    /// Declares the schema of the value the tool returns (any JSON type at the root).
    ///
    /// ```
    /// use serde_json::json;
    /// use starweaver::ToolDefinition;
    ///
    /// let def = ToolDefinition::new("count", json!({"type": "object"})).with_return_schema(json!({"type": "integer"}));
    /// def.validate().unwrap();
    /// assert_eq!(serde_json::to_value(&def).unwrap()["return_schema"], json!({"type": "integer"}));
    /// ```
    #[must_use]
    pub fn with_return_schema(mut self, schema: Value) -> Self {
        self.return_schema = Some(schema);
        self
    }

    /// The retry budget in force: the tool's own, or [`DEFAULT_MAX_RETRIES`].
    pub fn effective_max_retries(&self) -> u32 {
        self.max_retries.unwrap_or(DEFAULT_MAX_RETRIES)
    }

    /// The description, if it has text (a blank one is none: registration and the
    /// renderers treat it so).
    pub(crate) fn description_text(&self) -> Option<&str> {
        self.description.as_deref().filter(|d| !d.trim().is_empty())
    }

    /// Checks every registration rule.
    ///
    /// # Errors
    /// The first rule broken, naming the tool and, for schemas, the JSON path.
    pub fn validate(&self) -> Result<(), DefinitionError> {
        let fail = |kind| Err(DefinitionError::new(&self.name, kind));
        if !is_valid_name(&self.name) {
            return fail(DefinitionErrorKind::InvalidName);
        }
        if self.strict == Some(true) && self.description_text().is_none() {
            return fail(DefinitionErrorKind::StrictWithoutDescription);
        }
        if self.timeout_ms == Some(0) {
            return fail(DefinitionErrorKind::ZeroTimeout);
        }
        if self.max_return_chars == Some(0) {
            return fail(DefinitionErrorKind::ZeroMaxReturnChars);
        }
        if self.max_uses == Some(0) {
            return fail(DefinitionErrorKind::ZeroMaxUses);
        }
        if self.max_concurrency.as_ref().is_some_and(ConcurrencyLimit::is_zero) {
            return fail(DefinitionErrorKind::ZeroMaxConcurrency);
        }
        schema::validate_parameters(&self.parameters)
            .map_err(|err| DefinitionError::new(&self.name, DefinitionErrorKind::Schema(err)))?;
        if let Some(returns) = &self.return_schema {
            schema::validate_return_schema(returns)
                .map_err(|err| DefinitionError::new(&self.name, DefinitionErrorKind::ReturnSchema(err)))?;
        }
        if self.strict == Some(true) {
            schema::to_strict(&self.parameters)
                .map_err(|err| DefinitionError::new(&self.name, DefinitionErrorKind::NotStrict(err)))?;
        }
        Ok(())
    }

    /// The names of parameters with no description. A property described only through the
    /// definition its `$ref` names counts as described.
    pub fn undescribed_parameters(&self) -> Vec<String> {
        let Some(Value::Object(properties)) = self.parameters.get("properties") else { return Vec::new() };
        let described = |schema: &Value| {
            let target =
                schema.get("$ref").and_then(Value::as_str).and_then(|r| schema::resolve_ref(&self.parameters, r));
            [Some(schema), target]
                .into_iter()
                .flatten()
                .any(|s| s.get("description").and_then(Value::as_str).is_some_and(|d| !d.trim().is_empty()))
        };
        properties.iter().filter(|(_, schema)| !described(schema)).map(|(name, _)| name.clone()).collect()
    }
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Map<String, Value>, D::Error> {
    Ok(Option::deserialize(deserializer)?.unwrap_or_default())
}

/// `[A-Za-z0-9_-]{1,64}`: the intersection of what OpenAI, Anthropic and Gemini accept.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object() -> Value {
        json!({"type": "object", "properties": {}})
    }

    #[test]
    fn names_outside_the_provider_alphabet_are_rejected() {
        for bad in ["", "has space", "dot.ted", "ünïcode", &"x".repeat(65)] {
            let err = ToolDefinition::new(bad, object()).validate().unwrap_err();
            assert!(matches!(err.kind, DefinitionErrorKind::InvalidName), "{bad:?}");
            assert!(err.to_string().contains("[A-Za-z0-9_-]{1,64}"), "{err}");
        }
        for good in ["a", "add_2-numbers", &"x".repeat(64)] {
            ToolDefinition::new(good, object()).validate().unwrap();
        }
    }

    #[test]
    fn definitions_are_equal_whatever_their_schemas_key_order_and_differ_in_any_field() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}});
        let reordered = json!({"properties": {"b": {"type": "string"}, "a": {"type": "integer"}}, "type": "object"});
        let Value::Object(metadata) = json!({"x": 1, "y": 2}) else { unreachable!("an object literal") };
        let reordered_metadata: Map<String, Value> = metadata.clone().into_iter().rev().collect();
        let base = ToolDefinition { metadata, ..ToolDefinition::new("t", schema.clone()) };
        let same = ToolDefinition { metadata: reordered_metadata, ..ToolDefinition::new("t", reordered) };
        assert_eq!(base, same);
        assert_eq!(base.clone().with_return_schema(schema.clone()), base.clone().with_return_schema(schema.clone()));
        let edits: [fn(&mut ToolDefinition); 13] = [
            |d| d.name.push('x'),
            |d| d.description = Some("d".into()),
            |d| d.parameters["properties"]["a"]["type"] = json!("number"),
            |d| d.strict = Some(true),
            |d| d.sequential = true,
            |d| d.defer_loading = true,
            |d| d.timeout_ms = Some(1),
            |d| d.max_return_chars = Some(1),
            |d| d.max_retries = Some(1),
            |d| d.max_uses = Some(1),
            |d| d.max_concurrency = Some(ConcurrencyLimit::from(1_u32)),
            |d| drop(d.metadata.insert("z".into(), json!(3))),
            |d| d.return_schema = Some(json!({"type": "integer"})),
        ];
        for (i, edit) in edits.iter().enumerate() {
            let mut edited = base.clone();
            edit(&mut edited);
            assert_ne!(base, edited, "edit {i}");
            assert_ne!(edited, same, "edit {i}");
        }
    }

    #[test]
    fn strict_without_description_is_rejected() {
        let err = ToolDefinition::new("deploy", object()).with_strict(true).validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid tool `deploy`: strict tools need a description (a doc comment, a docstring or `description`)"
        );
        ToolDefinition::new("deploy", object()).with_strict(true).with_description("Deploy.").validate().unwrap();
    }

    #[test]
    fn zero_timeout_is_rejected() {
        let err = ToolDefinition::new("t", object()).with_timeout_ms(0).validate().unwrap_err();
        assert!(err.to_string().contains("timeout_ms"), "{err}");
    }

    #[test]
    fn a_malformed_return_schema_is_rejected_naming_the_path() {
        let bad = ToolDefinition::new("t", object()).with_return_schema(json!({"type": "array", "items": 3}));
        assert_eq!(
            bad.validate().unwrap_err().to_string(),
            "invalid tool `t`: return schema at `/items`: must be a schema (an object or a bool), got a number"
        );
        let root = ToolDefinition::new("t", object()).with_return_schema(json!("integer"));
        assert_eq!(
            root.validate().unwrap_err().to_string(),
            "invalid tool `t`: return schema at `/`: must be a JSON object schema, got a string"
        );
    }

    #[test]
    fn definition_round_trips_through_json_and_refuses_unknown_fields() {
        let def = ToolDefinition::new("t", object()).with_description("d").with_timeout_ms(5);
        let json = serde_json::to_value(&def).unwrap();
        assert!(json.get("return_schema").is_none(), "absent, so existing definitions keep their JSON");
        let typed = def.clone().with_return_schema(json!({"type": "string"}));
        assert_eq!(serde_json::from_value::<ToolDefinition>(serde_json::to_value(&typed).unwrap()).unwrap(), typed);
        assert_eq!(serde_json::from_value::<ToolDefinition>(json).unwrap(), def);
        let err = serde_json::from_value::<ToolDefinition>(json!({
            "name": "t", "parameters": object(), "timeout": 5
        }))
        .unwrap_err();
        assert!(err.to_string().contains("unknown field `timeout`"), "{err}");
    }
}
