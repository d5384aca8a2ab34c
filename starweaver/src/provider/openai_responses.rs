//! OpenAI Responses (`POST {base}/responses`), stateless (`store: false`): the whole
//! history is sent as input items each time.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::arguments::arguments;
use super::body::{
    data_url, deferred_tools, insert_toolset_instructions, native_output, refused, return_parts, text_of, tools,
};
use super::openai_chat::{OpenAIUsage, sampling, tool_choice_value};
use super::protocol::{Protocol, StreamState};
use super::settings::Settings;
use super::sse::SseEvent;
use super::wire::{self, invalid};
use crate::content::{Document, Image, Part, Source};
use crate::message::{Message, ProviderItem, RequestPart, ResponsePart, ToolCallPart, ToolReturnPart, provider_items};
use crate::model::{
    FinishReason, LoadedTools, ModelDelta, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ToolCallDelta,
    Usage,
};
use crate::render::Provider;

/// The Responses protocol; use it as [`OpenAIResponsesModel`](super::OpenAIResponsesModel).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAIResponses;

impl Protocol for OpenAIResponses {
    const PROVIDER: &'static str = "openai";
    const NAME: &'static str = "OpenAI Responses";
    const SYSTEM: &'static str = "openai";
    const FORMAT: Provider = Provider::OpenAiResponses;
    const NATIVE_TOOL_SEARCH: bool = true;
    const KEY_ENV: &'static str = "OPENAI_API_KEY";
    const BASE_URL_ENV: Option<&'static str> = Some("OPENAI_BASE_URL");
    const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";
    const REQUEST_ID_HEADER: &'static str = "x-request-id";
    const NATIVE_OUTPUT: bool = true;
    type Body = ApiResponse;
    type Stream = ResponsesStream;

    fn url(&self, base: &str, _model: &str, _stream: bool) -> String {
        format!("{base}/responses")
    }

    fn auth(&self, key: &str) -> (&'static str, String) {
        ("authorization", format!("Bearer {key}"))
    }

    fn body(
        &self,
        model: &str,
        request: &ModelRequest<'_>,
        settings: &Settings,
        stream: bool,
    ) -> Result<Value, ModelError> {
        let mut body = Map::new();
        body.insert("model".into(), model.into());
        body.insert("input".into(), Value::Array(input(request)?));
        body.insert("store".into(), false.into());
        let mut tools = tools(request, Self::FORMAT)?;
        // Hosted tool search: the server runs it and loads what it finds.
        tools.extend(deferred_tools(request, Self::FORMAT, json!({"type": "tool_search"}))?);
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
            if let Some(choice) = &settings.tool_choice {
                body.insert(
                    "tool_choice".into(),
                    tool_choice_value(choice, |name| json!({"type": "function", "name": name})),
                );
            }
            if let Some(parallel) = settings.parallel_tool_calls {
                body.insert("parallel_tool_calls".into(), parallel.into());
            }
        }
        if let Some(output) = native_output(request, Self::FORMAT)? {
            let mut format = output.json_schema;
            format.insert("type".into(), "json_schema".into());
            body.insert("text".into(), json!({ "format": format }));
        }
        sampling(&mut body, settings, "max_output_tokens");
        // The Responses API takes no seed.
        body.remove("seed");
        if stream {
            body.insert("stream".into(), true.into());
        }
        Ok(Value::Object(body))
    }

    fn parse(&self, body: ApiResponse, _step: u32) -> Result<ModelResponse, ModelError> {
        let cut_off = match body.status.as_deref() {
            None | Some("completed") => false,
            Some("incomplete") => {
                let reason = body.incomplete_details.and_then(|details| details.reason).unwrap_or_default();
                if reason == "content_filter" {
                    return Err(ModelError::of(
                        ModelErrorKind::ContentFilter,
                        "the provider's content filter stopped the answer",
                    ));
                }
                if reason != "max_output_tokens" {
                    return Err(ModelError::of(
                        ModelErrorKind::UnknownFinishReason,
                        format!("the response is incomplete for an unknown reason `{reason}`"),
                    ));
                }
                true
            }
            Some("failed") => {
                return Err(invalid(format!("the response failed: {}", body.error.unwrap_or(Value::Null))));
            }
            Some(other) => {
                return Err(ModelError::of(ModelErrorKind::UnknownFinishReason, format!("unknown status `{other}`")));
            }
        };
        // Required of every answer, but only once its status says it is one: a failed
        // response is named for its error, not for the output it lacks.
        let output =
            body.output.ok_or_else(|| wire::unfit(Self::NAME, "the response", ".", "missing field `output`"))?;
        let mut parts = Vec::new();
        for item in output {
            match item {
                Item::Message { content } => {
                    for content in content.into_iter().flatten() {
                        match content {
                            Content::OutputText { text } => parts.push(ResponsePart::Text { text }),
                            Content::Refusal { refusal } => {
                                return Err(ModelError::of(
                                    ModelErrorKind::Refusal,
                                    format!("the model refused: {refusal}"),
                                ));
                            }
                            Content::Other => {}
                        }
                    }
                }
                Item::FunctionCall { call_id, name, arguments: text } => {
                    parts.push(ResponsePart::ToolCall(ToolCallPart::new(call_id, name, arguments(&text))));
                }
                Item::ToolSearchCall { item } => parts.push(provider_item("tool_search_call", item)),
                Item::ToolSearchOutput { item } => parts.push(provider_item("tool_search_output", item)),
                // Reasoning summaries and other items do not enter the conversation.
                Item::Other => {}
            }
        }
        Ok(ModelResponse {
            finish_reason: Some(FinishReason::of(&parts, cut_off)),
            loaded: loaded(&parts),
            parts,
            usage: body.usage.map(Usage::from),
            model_name: body.model,
        })
    }

    fn stream(&self, _step: u32) -> ResponsesStream {
        ResponsesStream::default()
    }
}

fn input(request: &ModelRequest<'_>) -> Result<Vec<Value>, ModelError> {
    let mut out = Vec::new();
    for message in request.messages.iter() {
        match &**message {
            Message::Request { parts } => {
                for part in parts {
                    out.push(match part {
                        RequestPart::SystemPrompt { text } => json!({"role": "system", "content": text}),
                        RequestPart::UserPrompt { text } => json!({"role": "user", "content": text}),
                        RequestPart::ToolReturn(ret) => json!({
                            "type": "function_call_output",
                            "call_id": &*ret.tool_call_id,
                            "output": output(ret)?,
                        }),
                    });
                }
            }
            Message::Response { parts } => {
                for part in parts {
                    out.push(match part {
                        ResponsePart::Text { text } => json!({"role": "assistant", "content": text}),
                        ResponsePart::ToolCall(call) => json!({
                            "type": "function_call",
                            "call_id": &*call.id,
                            "name": &*call.name,
                            "arguments": text_of(&call.arguments),
                        }),
                        // A tool search's call and output go back as they came: they are
                        // what loaded the deferred tools called later.
                        ResponsePart::ProviderItem(item) => match item.replayed_to(OpenAIResponses::FORMAT) {
                            Some(item) => item.clone(),
                            None => continue,
                        },
                    });
                }
            }
        }
    }
    insert_toolset_instructions(&mut out, request);
    Ok(out)
}

/// An output item of the tool search as a provider item, its `type` put back.
fn provider_item(kind: &str, mut item: Map<String, Value>) -> ResponsePart {
    item.insert("type".into(), kind.into());
    ResponsePart::ProviderItem(ProviderItem::new(OpenAIResponses::FORMAT, Value::Object(item)))
}

/// What the hosted tool search loaded in an answer: each `tool_search_output`'s tools
/// (a namespace's by their own names), with the query of the `tool_search_call` it
/// answers (the call with its `call_id`, or the one just before it when the server gives
/// none). A query is the call's `query` argument, or its arguments as JSON (`paths`).
fn loaded(parts: &[ResponsePart]) -> Vec<LoadedTools> {
    let mut loaded = Vec::new();
    let mut calls: Vec<&Value> = Vec::new();
    for item in provider_items(parts, OpenAIResponses::FORMAT) {
        match item.get("type").and_then(Value::as_str) {
            Some("tool_search_call") => calls.push(item),
            Some("tool_search_output") => {
                let id = item.get("call_id").filter(|id| !id.is_null());
                let call = match id {
                    Some(id) => calls.iter().rev().find(|call| call.get("call_id") == Some(id)),
                    None => calls.last(),
                };
                let query = call.and_then(|call| call.get("arguments")).map(|arguments| match arguments {
                    Value::Object(fields) => match fields.get("query") {
                        Some(Value::String(query)) => query.clone(),
                        _ => arguments.to_string(),
                    },
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                });
                let names = tool_names(item.get("tools"));
                if !names.is_empty() {
                    loaded.push(LoadedTools { names, query });
                }
            }
            _ => {}
        }
    }
    loaded
}

/// The function names in a list of tool definitions, a namespace's functions included.
fn tool_names(tools: Option<&Value>) -> Vec<String> {
    let tools = tools.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    tools
        .iter()
        .flat_map(|tool| match tool.get("type").and_then(Value::as_str) {
            Some("namespace") => tool_names(tool.get("tools")),
            _ => tool.get("name").and_then(Value::as_str).map(str::to_owned).into_iter().collect(),
        })
        .collect()
}

/// A call's output: text, or for content parts a list of `input_text`, `input_image`
/// (a URL or a data URL) and `input_file` (a data URL with a file name, or a URL).
fn output(ret: &ToolReturnPart) -> Result<Value, ModelError> {
    let Some(parts) = return_parts(ret) else { return Ok(text_of(&ret.content).into()) };
    let item = |part: &Part| -> Result<Value, ModelError> {
        Ok(match part {
            Part::Text(text) => json!({"type": "input_text", "text": text.text}),
            Part::Image(Image { source: Source::Data { data, media_type } }) => {
                json!({"type": "input_image", "image_url": data_url(media_type, data)})
            }
            Part::Image(Image { source: Source::Url { url, .. } }) => json!({"type": "input_image", "image_url": url}),
            Part::Document(Document { source: Source::Data { data, media_type }, filename, title }) => {
                let filename = filename.as_ref().or(title.as_ref()).map_or("document", String::as_str);
                json!({"type": "input_file", "filename": filename, "file_data": data_url(media_type, data)})
            }
            Part::Document(Document { source: Source::Url { url, .. }, .. }) => {
                json!({"type": "input_file", "file_url": url})
            }
            Part::Audio(_) | Part::ResourceLink(_) | Part::Resource(_) => {
                return Err(refused(OpenAIResponses::NAME, ret, part, "a call output holds text, images and files"));
            }
        })
    };
    parts.iter().map(item).collect()
}

/// A response object, as much of it as becomes a [`ModelResponse`].
#[derive(Debug, Deserialize)]
pub struct ApiResponse {
    status: Option<String>,
    incomplete_details: Option<IncompleteDetails>,
    error: Option<Value>,
    output: Option<Vec<Item>>,
    usage: Option<OpenAIUsage>,
    model: Option<String>,
}

#[derive(Debug, Deserialize)]
struct IncompleteDetails {
    reason: Option<String>,
}

/// An output item; reasoning and the items of built-in tools are `Other`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item {
    Message {
        content: Option<Vec<Content>>,
    },
    FunctionCall {
        call_id: String,
        name: String,
        #[serde(default)]
        arguments: String,
    },
    /// The hosted tool search's call, kept whole for the next request.
    ToolSearchCall {
        #[serde(flatten)]
        item: Map<String, Value>,
    },
    /// What the hosted tool search loaded (the definitions), kept whole.
    ToolSearchOutput {
        #[serde(flatten)]
        item: Map<String, Value>,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content {
    OutputText {
        text: String,
    },
    Refusal {
        refusal: String,
    },
    #[serde(other)]
    Other,
}

/// The stream events that carry the answer; every other one (`response.created`,
/// `response.output_text.done`, the events of new features) is `Other`.
#[derive(Deserialize)]
#[serde(tag = "type")]
enum StreamEvent {
    #[serde(rename = "response.output_text.delta")]
    TextDelta { delta: String },
    #[serde(rename = "response.output_item.added")]
    ItemAdded { output_index: u64, item: Item },
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta { output_index: u64, delta: String },
    #[serde(rename = "response.completed", alias = "response.incomplete", alias = "response.failed")]
    Done { response: ApiResponse },
    #[serde(rename = "error")]
    Error,
    #[serde(other)]
    Other,
}

/// A streamed response: deltas from the delta events, the final message from
/// `response.completed`'s full response, so it equals the unstreamed one exactly.
#[derive(Debug, Default)]
pub struct ResponsesStream {
    /// Output indexes of function calls, in the order they were announced.
    calls: Vec<u64>,
    last: Option<ApiResponse>,
}

impl StreamState for ResponsesStream {
    fn event(&mut self, event: &SseEvent) -> Result<Vec<ModelDelta>, ModelError> {
        Ok(match wire::event(OpenAIResponses::NAME, event)? {
            StreamEvent::TextDelta { delta } => vec![ModelDelta::Text { text: delta }],
            StreamEvent::ItemAdded { output_index, item: Item::FunctionCall { call_id, name, .. } } => {
                self.calls.push(output_index);
                vec![ModelDelta::ToolCall(ToolCallDelta {
                    index: self.calls.len() - 1,
                    tool_call_id: Some(call_id),
                    name: Some(name),
                    arguments: String::new(),
                })]
            }
            StreamEvent::ArgumentsDelta { output_index, delta } => {
                let index = self.calls.iter().position(|i| *i == output_index).unwrap_or(self.calls.len());
                vec![ModelDelta::ToolCall(ToolCallDelta::arguments(index, delta))]
            }
            StreamEvent::Done { response } => {
                self.last = Some(response);
                Vec::new()
            }
            StreamEvent::Error => return Err(invalid(format!("the stream reported an error: {}", event.data))),
            StreamEvent::ItemAdded { .. } | StreamEvent::Other => Vec::new(),
        })
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        let Some(response) = self.last else {
            return Err(ModelError::of(
                ModelErrorKind::StreamInterrupted,
                "the stream ended before `response.completed`",
            ));
        };
        OpenAIResponses.parse(response, 0)
    }
}
