//! Pieces of a request body that several protocols build alike.

use serde_json::Value;

use crate::model::{ModelError, ModelErrorKind, ModelRequest};

/// A value as the text a provider wants where it takes text (tool-call arguments, a
/// tool return's content): a string as it is, anything else as JSON.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The rendered tools of a request.
pub(crate) fn tools(request: &ModelRequest<'_>, provider: crate::render::Provider) -> Result<Vec<Value>, ModelError> {
    crate::render::render_all(request.tools, provider, None)
        .map_err(|e| ModelError::of(ModelErrorKind::Other, e.to_string()))
}

/// The text of consecutive system prompts, joined (for providers that take it apart
/// from the messages).
#[cfg(any(feature = "anthropic", feature = "gemini"))]
pub(crate) fn instructions(request: &ModelRequest<'_>) -> Option<String> {
    let texts: Vec<&str> = request
        .messages
        .iter()
        .flat_map(|m| match &**m {
            crate::message::Message::Request { parts } => parts.as_slice(),
            crate::message::Message::Response { .. } => &[],
        })
        .filter_map(|part| match part {
            crate::message::RequestPart::SystemPrompt { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}
