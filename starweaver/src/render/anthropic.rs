//! Anthropic Messages tool format.

use serde_json::{Map, Value};

use crate::tool::ToolDefinition;

/// `{"name", "description", "input_schema"}`. A strict definition sends the strict schema
/// (every property required, `additionalProperties: false`), which Anthropic accepts as
/// plain JSON Schema; the `strict` flag itself is not sent, as Anthropic takes it only
/// behind a beta header.
pub(super) fn tool(definition: &ToolDefinition, strict_parameters: Option<Value>) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), Value::String(definition.name.clone()));
    if let Some(text) = definition.description_text() {
        tool.insert("description".into(), Value::String(text.to_owned()));
    }
    tool.insert("input_schema".into(), strict_parameters.unwrap_or_else(|| definition.parameters.clone()));
    Value::Object(tool)
}
