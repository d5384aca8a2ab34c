//! Pieces of a request body that several protocols build alike.

use serde_json::{Map, Value};

use crate::content::{self, Audio, Document, Image, Part, Resource, ResourceContents, Text};
use crate::message::ToolReturnPart;
use crate::model::{ModelError, ModelErrorKind, ModelRequest};
use crate::tool::ToolDefinition;

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
    rendered(request.tools, provider)
}

fn rendered(definitions: &[ToolDefinition], provider: crate::render::Provider) -> Result<Vec<Value>, ModelError> {
    crate::render::render_all(definitions, provider, None)
        .map_err(|e| ModelError::of(ModelErrorKind::Other, e.to_string()))
}

/// What a request hands to the provider's own tool search (native tool search), sent
/// after its other tools: the provider's `search_tool`, then each deferred definition as
/// `provider` renders a tool, marked `"defer_loading": true`. Nothing when none is
/// deferred. The list is the same for every request of a run, so the rendered tools stay
/// a byte-identical prefix whatever the search loads.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) fn deferred_tools(
    request: &ModelRequest<'_>,
    provider: crate::render::Provider,
    search_tool: Value,
) -> Result<Vec<Value>, ModelError> {
    if request.deferred.is_empty() {
        return Ok(Vec::new());
    }
    let mut deferred = rendered(request.deferred, provider)?;
    for tool in &mut deferred {
        if let Value::Object(fields) = tool {
            fields.insert("defer_loading".into(), true.into());
        }
    }
    Ok(std::iter::once(search_tool).chain(deferred).collect())
}

/// A native output's response format: the output's definition, its schema as `provider`
/// renders a tool's parameters (through the same strict transform).
pub(crate) struct NativeFormat {
    pub schema: Value,
    /// OpenAI's `json_schema` object: `name`, `schema`, `strict` and any `description`.
    pub json_schema: Map<String, Value>,
}

/// The native output's response format, when the request asks for native output.
pub(crate) fn native_output(
    request: &ModelRequest<'_>,
    provider: crate::render::Provider,
) -> Result<Option<NativeFormat>, ModelError> {
    let Some(definition) = request.output else { return Ok(None) };
    let rendered = crate::render::render(definition, provider, None)
        .map_err(|e| ModelError::of(ModelErrorKind::Other, e.to_string()))?;
    // OpenAI Chat nests a tool under `function`; the others do not.
    let tool = rendered.get("function").unwrap_or(&rendered);
    let schema = tool.get("parameters").cloned().unwrap_or_default();
    let mut json_schema = Map::new();
    json_schema.insert("name".into(), definition.name.clone().into());
    if let Some(description) = &definition.description {
        json_schema.insert("description".into(), description.clone().into());
    }
    json_schema.insert("schema".into(), schema.clone());
    json_schema.insert("strict".into(), tool.get("strict").cloned().unwrap_or(Value::Bool(false)));
    Ok(Some(NativeFormat { schema, json_schema }))
}

/// The text of the system prompts, then the toolset instructions, joined (for providers
/// that take it apart from the messages).
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
        .chain(request.toolset_instructions.iter().map(|text| &**text))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

/// Puts the request's toolset instructions among OpenAI `messages` (or Responses input
/// items) as one system message, right after the leading system messages (the agent's
/// instructions), so they are read with them.
#[cfg(feature = "openai")]
pub(crate) fn insert_toolset_instructions(messages: &mut Vec<Value>, request: &ModelRequest<'_>) {
    if request.toolset_instructions.is_empty() {
        return;
    }
    let text = request.toolset_instructions.join("\n\n");
    let at = messages.iter().take_while(|m| m.get("role").is_some_and(|role| role == "system")).count();
    messages.insert(at, serde_json::json!({"role": "system", "content": text}));
}

/// The content parts of a tool return, if its content is parts, with each embedded
/// resource as what it holds (its text, or its bytes as an image, audio or a document by
/// media type): providers take media, not resources.
pub(crate) fn return_parts(ret: &ToolReturnPart) -> Option<Vec<Part>> {
    Part::list_from(&ret.content).map(|parts| parts.into_iter().map(embedded_as_media).collect())
}

fn embedded_as_media(part: Part) -> Part {
    let Part::Resource(Resource { uri, media_type, contents }) = part else { return part };
    match (contents, media_type) {
        (ResourceContents::Text(text), _) => Text::new(text).into(),
        (ResourceContents::Blob(data), Some(media_type)) if media_type.starts_with("image/") => {
            Image::data(data, media_type).into()
        }
        (ResourceContents::Blob(data), Some(media_type)) if media_type.starts_with("audio/") => {
            Audio::new(data, media_type).into()
        }
        (ResourceContents::Blob(data), media_type) => {
            let filename = uri.rsplit('/').next().filter(|name| !name.is_empty()).unwrap_or(&uri).to_owned();
            let media_type = media_type.unwrap_or_else(|| "application/octet-stream".to_owned());
            Document::data(data, media_type).with_filename(filename).into()
        }
    }
}

/// The text parts of a tool return, joined (what providers that take only text in a tool
/// result get there).
#[cfg(any(feature = "openai", feature = "gemini"))]
pub(crate) fn texts_of(parts: &[Part]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// `data:` URL of some bytes.
#[cfg(feature = "openai")]
pub(crate) fn data_url(media_type: &str, data: &[u8]) -> String {
    format!("data:{media_type};base64,{}", content::base64(data))
}

/// A part a provider cannot take in a tool result: an error when the request is built,
/// naming the provider, the call and the part, so nothing is dropped silently.
pub(crate) fn refused(provider: &str, ret: &ToolReturnPart, part: &Part, why: &str) -> ModelError {
    let media_type = match part {
        Part::Image(Image { source }) | Part::Document(Document { source, .. }) => source.media_type(),
        Part::Audio(audio) => Some(audio.media_type.as_str()),
        _ => None,
    };
    let kind = match media_type {
        Some(media_type) => format!("the `{}` part ({media_type})", part.kind()),
        None => format!("the `{}` part", part.kind()),
    };
    ModelError::of(
        ModelErrorKind::Other,
        format!(
            "{provider} cannot take {kind} in the result of tool call `{}` (`{}`): {why}",
            ret.tool_call_id, ret.name
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    #[test]
    fn embedded_resources_reach_providers_as_the_media_they_hold() {
        let ret = ToolReturnPart {
            tool_call_id: Arc::from("c1"),
            name: Arc::from("fetch"),
            content: json!([
                {"kind": "resource", "uri": "file:///notes.txt", "text": "bee"},
                {"kind": "resource", "uri": "file:///a.png", "media_type": "image/png", "blob": "iVBORw=="},
                {"kind": "resource", "uri": "file:///a.wav", "media_type": "audio/wav", "blob": "UklGRg=="},
                {"kind": "resource", "uri": "file:///docs/r.pdf", "media_type": "application/pdf", "blob": "JVBERi0="},
                {"kind": "resource", "uri": "blob", "blob": "AAE="},
            ]),
            is_error: false,
            metadata: crate::JsonMap::default(),
        };
        let parts = return_parts(&ret).unwrap();
        assert_eq!(
            parts,
            [
                Text::new("bee").into(),
                Image::data(*b"\x89PNG", "image/png").into(),
                Audio::new(*b"RIFF", "audio/wav").into(),
                Document::data(*b"%PDF-", "application/pdf").with_filename("r.pdf").into(),
                Document::data([0u8, 1], "application/octet-stream").with_filename("blob").into(),
            ]
        );
        let plain = ToolReturnPart { content: json!({"kind": "report", "rows": 2}), ..ret };
        assert!(return_parts(&plain).is_none(), "a value that is not parts stays a value");
    }
}
