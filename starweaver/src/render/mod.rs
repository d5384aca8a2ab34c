//! Provider renderers: one [`ToolDefinition`] as each provider's tool format, with the
//! strict transform applied where the definition is strict.
//!
//! `strict` has three states: `Some(true)` always renders strict (registration already
//! refused a schema that cannot be), `Some(false)` never, and `None` renders strict exactly
//! when the schema can be made strict-compatible.

mod anthropic;
mod checker;
mod gemini;
mod openai;
mod provider;

use serde_json::Value;

pub use checker::check;
pub use provider::Provider;

use crate::error::{Error, Result};
use crate::schema;
use crate::tool::ToolDefinition;

/// `definition` in `provider`'s tool format. `strict` overrides the definition's own
/// setting: `Some(true)` forces strict, `Some(false)` forces lax, `None` keeps it.
///
/// ```
/// use serde_json::json;
/// use starweaver::ToolDefinition;
/// use starweaver::render::{Provider, render};
///
/// let definition = ToolDefinition::new("weather", json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 3}},
///     "required": ["city"],
/// }))
/// .with_description("Forecast for a city.");
/// let chat = render(&definition, Provider::OpenAiChat, None).unwrap();
/// assert_eq!(chat["function"]["strict"], json!(true)); // strict-compatible, so strict
/// assert_eq!(chat["function"]["parameters"]["required"], json!(["city", "days"]));
/// let gemini = render(&definition, Provider::Gemini, None).unwrap();
/// assert_eq!(gemini["parameters"]["required"], json!(["city"]));
/// ```
///
/// # Errors
/// `Render` naming the tool, the provider and the construct: a schema forced strict that
/// cannot be, a schema Gemini cannot take (recursive, or too large once inlined), or a
/// name the provider refuses.
pub fn render(definition: &ToolDefinition, provider: Provider, strict: Option<bool>) -> Result<Value> {
    let fail = |message: String| Error::Render { tool: definition.name.clone(), provider: provider.as_str(), message };
    let strict_parameters = match strict.or(definition.strict) {
        Some(true) => {
            Some(schema::to_strict(&definition.parameters).map_err(|e| fail(format!("cannot be strict: {e}")))?)
        }
        Some(false) => None,
        None => schema::to_strict(&definition.parameters).ok(),
    };
    match provider {
        Provider::OpenAiChat => Ok(openai::chat(definition, strict_parameters)),
        Provider::OpenAiResponses => Ok(openai::responses(definition, strict_parameters)),
        Provider::Anthropic => Ok(anthropic::tool(definition, strict_parameters)),
        Provider::Gemini => gemini::declaration(definition).map_err(fail),
    }
}

/// [`render`] for every definition, in order (what a request's `tools` holds).
///
/// # Errors
/// The first definition that cannot be rendered.
pub fn render_all(definitions: &[ToolDefinition], provider: Provider, strict: Option<bool>) -> Result<Vec<Value>> {
    definitions.iter().map(|d| render(d, provider, strict)).collect()
}
