//! OpenAI's two tool formats: Chat Completions and Responses.

use serde_json::{Map, Value};

use crate::tool::ToolDefinition;

/// The fields both formats share: name, description, parameters, and `strict` when strict.
fn function(
    definition: &ToolDefinition,
    strict_parameters: Option<Value>,
    always_say_strict: bool,
) -> Map<String, Value> {
    let mut function = Map::new();
    function.insert("name".into(), Value::String(definition.name.clone()));
    if let Some(text) = definition.description_text() {
        function.insert("description".into(), Value::String(text.to_owned()));
    }
    let strict = strict_parameters.is_some();
    function.insert("parameters".into(), strict_parameters.unwrap_or_else(|| definition.parameters.clone()));
    if strict || always_say_strict {
        function.insert("strict".into(), Value::Bool(strict));
    }
    function
}

/// `{"type": "function", "function": {"name", "description", "parameters", "strict"?}}`.
pub(super) fn chat(definition: &ToolDefinition, strict_parameters: Option<Value>) -> Value {
    let mut tool = Map::new();
    tool.insert("type".into(), Value::String("function".into()));
    tool.insert("function".into(), Value::Object(function(definition, strict_parameters, false)));
    Value::Object(tool)
}

/// `{"type": "function", "name", "description", "parameters", "strict"}`. The Responses API
/// defaults `strict` to true, so it is always spelt out.
pub(super) fn responses(definition: &ToolDefinition, strict_parameters: Option<Value>) -> Value {
    let mut tool = Map::new();
    tool.insert("type".into(), Value::String("function".into()));
    tool.extend(function(definition, strict_parameters, true));
    Value::Object(tool)
}
