//! Anthropic Messages (`POST {base}/v1/messages`).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::arguments::arguments;
use super::body::{deferred_tools, instructions, refused, return_parts, text_of, tools};
use super::protocol::{Protocol, StreamState};
use super::settings::{Settings, ToolChoice};
use super::sse::SseEvent;
use super::wire::{self, invalid};
use crate::content::{self, Document, Image, Part, Source};
use crate::message::{Message, ProviderItem, RequestPart, ResponsePart, ToolCallPart, ToolReturnPart, provider_items};
use crate::model::{
    FinishReason, LoadedTools, ModelDelta, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ToolCallDelta,
    Usage,
};
use crate::render::Provider;

/// Anthropic requires a token limit; this one applies unless `max_tokens` is set.
const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The tool search tool (BM25 over the deferred tools' names, descriptions and
/// parameters, natural-language queries), sent with the deferred tools.
const SEARCH_TOOL_TYPE: &str = "tool_search_tool_bm25_20251119";
const SEARCH_TOOL_NAME: &str = "tool_search_tool_bm25";
/// The beta the tool search tool and `defer_loading` are under.
const SEARCH_BETA: (&str, &str) = ("anthropic-beta", "advanced-tool-use-2025-11-20");
/// The names the tool search tool's variants (BM25, regex) are called by.
const SEARCH_TOOL_PREFIX: &str = "tool_search_tool_";

/// The Messages protocol; use it as [`AnthropicModel`](super::AnthropicModel).
#[derive(Debug, Clone, Copy, Default)]
pub struct Anthropic;

impl Protocol for Anthropic {
    const PROVIDER: &'static str = "anthropic";
    const NAME: &'static str = "Anthropic Messages";
    const SYSTEM: &'static str = "anthropic";
    const FORMAT: Provider = Provider::Anthropic;
    const NATIVE_TOOL_SEARCH: bool = true;
    const KEY_ENV: &'static str = "ANTHROPIC_API_KEY";
    const BASE_URL_ENV: Option<&'static str> = Some("ANTHROPIC_BASE_URL");
    const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";
    const REQUEST_ID_HEADER: &'static str = "request-id";
    type Body = ApiMessage;
    type Stream = MessagesStream;

    fn url(&self, base: &str, _model: &str, _stream: bool) -> String {
        format!("{base}/v1/messages")
    }

    fn auth(&self, key: &str) -> (&'static str, String) {
        ("x-api-key", key.to_owned())
    }

    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("anthropic-version", "2023-06-01")]
    }

    fn request_headers(&self, request: &ModelRequest<'_>) -> &'static [(&'static str, &'static str)] {
        if request.deferred.is_empty() { &[] } else { &[SEARCH_BETA] }
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
        body.insert("max_tokens".into(), settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).into());
        if let Some(system) = instructions(request) {
            body.insert("system".into(), system.into());
        }
        body.insert("messages".into(), Value::Array(messages(request)?));
        let mut tools = tools(request, Self::FORMAT)?;
        tools.extend(deferred_tools(
            request,
            Self::FORMAT,
            json!({"type": SEARCH_TOOL_TYPE, "name": SEARCH_TOOL_NAME}),
        )?);
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
            let mut choice = match &settings.tool_choice {
                None | Some(ToolChoice::Auto) => json!({"type": "auto"}),
                Some(ToolChoice::Required) => json!({"type": "any"}),
                Some(ToolChoice::None) => json!({"type": "none"}),
                Some(ToolChoice::Tool(name)) => json!({"type": "tool", "name": name}),
            };
            if settings.parallel_tool_calls == Some(false)
                && let Value::Object(choice) = &mut choice
            {
                choice.insert("disable_parallel_tool_use".into(), true.into());
            }
            if settings.tool_choice.is_some() || settings.parallel_tool_calls.is_some() {
                body.insert("tool_choice".into(), choice);
            }
        }
        if let Some(t) = settings.temperature {
            body.insert("temperature".into(), t.into());
        }
        if let Some(p) = settings.top_p {
            body.insert("top_p".into(), p.into());
        }
        if stream {
            body.insert("stream".into(), true.into());
        }
        Ok(Value::Object(body))
    }

    fn parse(&self, body: ApiMessage, _step: u32) -> Result<ModelResponse, ModelError> {
        let parts: Vec<ResponsePart> = body.content.into_iter().filter_map(ContentBlock::into_part).collect();
        let cut_off = check_stop(body.stop_reason.as_deref())?;
        Ok(ModelResponse {
            finish_reason: Some(FinishReason::of(&parts, cut_off)),
            loaded: loaded(&parts),
            parts,
            usage: body.usage.map(|u| usage(&u, None)),
            model_name: body.model,
        })
    }

    fn stream(&self, _step: u32) -> MessagesStream {
        MessagesStream::default()
    }

    fn raw_arguments(&self, body: &str) -> Vec<Box<RawValue>> {
        #[derive(Deserialize)]
        struct Body {
            content: Vec<Block>,
        }
        #[derive(Deserialize)]
        struct Block {
            #[serde(rename = "type")]
            kind: String,
            input: Option<Box<RawValue>>,
        }
        let blocks = serde_json::from_str::<Body>(body).map(|b| b.content).unwrap_or_default();
        blocks.into_iter().filter(|b| b.kind == "tool_use").filter_map(|b| b.input).collect()
    }
}

fn messages(request: &ModelRequest<'_>) -> Result<Vec<Value>, ModelError> {
    let mut out = Vec::new();
    for message in request.messages.iter() {
        let (role, blocks): (&str, Vec<Value>) = match &**message {
            Message::Request { parts } => (
                "user",
                parts
                    .iter()
                    .filter_map(|part| match part {
                        RequestPart::SystemPrompt { .. } => None,
                        RequestPart::UserPrompt { text } => Some(Ok(json!({"type": "text", "text": text}))),
                        RequestPart::ToolReturn(ret) => Some(tool_result_content(ret).map(|content| {
                            json!({
                                "type": "tool_result",
                                "tool_use_id": &*ret.tool_call_id,
                                "content": content,
                                "is_error": ret.is_error,
                            })
                        })),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Message::Response { parts } => (
                "assistant",
                parts
                    .iter()
                    .filter_map(|part| match part {
                        ResponsePart::Text { text } => Some(json!({"type": "text", "text": text})),
                        ResponsePart::ToolCall(call) => {
                            // Anthropic takes objects only; anything else was already
                            // answered as invalid arguments.
                            let input = call.arguments.as_object().cloned().unwrap_or_default();
                            Some(json!({"type": "tool_use", "id": &*call.id, "name": &*call.name, "input": input}))
                        }
                        // The tool search's blocks go back as they came: the API needs them
                        // to know which deferred tools are loaded.
                        ResponsePart::ProviderItem(item) => item.replayed_to(Anthropic::FORMAT).cloned(),
                    })
                    .collect(),
            ),
        };
        if !blocks.is_empty() {
            out.push(json!({"role": role, "content": blocks}));
        }
    }
    Ok(out)
}

/// A tool result's `content`: text, or for content parts a list of text, image and
/// document blocks (PDFs and plain text; images and PDFs also by URL).
fn tool_result_content(ret: &ToolReturnPart) -> Result<Value, ModelError> {
    let Some(parts) = return_parts(ret) else { return Ok(text_of(&ret.content).into()) };
    let block = |part: &Part| -> Result<Value, ModelError> {
        let refuse = |why: &str| refused(Anthropic::NAME, ret, part, why);
        Ok(match part {
            Part::Text(text) => json!({"type": "text", "text": text.text}),
            Part::Image(Image { source: Source::Data { data, media_type } }) => {
                let source = json!({"type": "base64", "media_type": media_type, "data": content::base64(data)});
                json!({"type": "image", "source": source})
            }
            Part::Image(Image { source: Source::Url { url, .. } }) => {
                json!({"type": "image", "source": {"type": "url", "url": url}})
            }
            Part::Document(Document { source, title, .. }) => {
                let source = match source {
                    Source::Data { data, media_type } if media_type == "application/pdf" => {
                        json!({"type": "base64", "media_type": media_type, "data": content::base64(data)})
                    }
                    Source::Data { data, media_type } if media_type == "text/plain" => {
                        let text = std::str::from_utf8(data).map_err(|_| refuse("the text is not UTF-8"))?;
                        json!({"type": "text", "media_type": media_type, "data": text})
                    }
                    Source::Data { .. } => return Err(refuse("documents are PDFs or plain text")),
                    Source::Url { url, .. } => json!({"type": "url", "url": url}),
                };
                let mut document = json!({"type": "document", "source": source});
                if let (Some(title), Value::Object(fields)) = (title, &mut document) {
                    fields.insert("title".into(), title.as_str().into());
                }
                document
            }
            Part::Audio(_) => return Err(refuse("a tool result holds text, images and documents")),
            Part::ResourceLink(_) | Part::Resource(_) => return Err(refuse("a resource link has no tool-result form")),
        })
    };
    parts.iter().map(block).collect()
}

/// What the tool search tool loaded in an answer: each search result's tool references,
/// with the query of the `server_tool_use` block it answers. An error result loads
/// nothing.
fn loaded(parts: &[ResponsePart]) -> Vec<LoadedTools> {
    let blocks: Vec<&Value> = provider_items(parts, Anthropic::FORMAT).collect();
    let of_type = |block: &&Value, kind: &str| block.get("type").and_then(Value::as_str) == Some(kind);
    blocks
        .iter()
        .filter(|block| of_type(block, "tool_search_tool_result"))
        .filter_map(|result| {
            let references = result.pointer("/content/tool_references")?.as_array()?;
            let names: Vec<String> = references
                .iter()
                .filter_map(|reference| reference.get("tool_name")?.as_str().map(str::to_owned))
                .collect();
            let id = result.get("tool_use_id");
            let call = blocks.iter().find(|block| of_type(block, "server_tool_use") && block.get("id") == id);
            // BM25 searches with a `query`, the regex variant with a `pattern`.
            let input = call.and_then(|call| call.get("input"));
            let query = input.and_then(|input| input.get("query").or_else(|| input.get("pattern")));
            (!names.is_empty()).then(|| LoadedTools { names, query: query.and_then(Value::as_str).map(str::to_owned) })
        })
        .collect()
}

/// Whether the token limit cut the answer, or why it is no answer at all.
fn check_stop(reason: Option<&str>) -> Result<bool, ModelError> {
    match reason {
        None | Some("end_turn" | "tool_use" | "stop_sequence" | "pause_turn") => Ok(false),
        Some("max_tokens") => Ok(true),
        Some("refusal") => Err(ModelError::of(ModelErrorKind::Refusal, "the model refused to answer")),
        Some(other) => {
            Err(ModelError::of(ModelErrorKind::UnknownFinishReason, format!("unknown stop reason `{other}`")))
        }
    }
}

/// Anthropic counts cached input apart; `input_tokens` here includes it.
fn usage(usage: &ApiUsage, output: Option<u64>) -> Usage {
    let cached = usage.cache_read_input_tokens.unwrap_or(0);
    Usage {
        requests: 1,
        input_tokens: usage.input_tokens.unwrap_or(0) + cached + usage.cache_creation_input_tokens.unwrap_or(0),
        output_tokens: output.or(usage.output_tokens).unwrap_or(0),
        cached_tokens: cached,
    }
}

/// A message object, as much of it as becomes a [`ModelResponse`].
#[derive(Debug, Deserialize)]
pub struct ApiMessage {
    content: Vec<ContentBlock>,
    stop_reason: Option<String>,
    usage: Option<ApiUsage>,
    model: Option<String>,
}

/// A content block; thinking, other server tools' blocks and those of new features are
/// `Other`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Option<Value>,
    },
    /// A server tool's call: kept whole when it is the tool search tool's.
    ServerToolUse {
        #[serde(flatten)]
        block: Map<String, Value>,
    },
    /// The tool search tool's result (its tool references, or an error), kept whole.
    ToolSearchToolResult {
        #[serde(flatten)]
        block: Map<String, Value>,
    },
    #[serde(other)]
    Other,
}

impl ContentBlock {
    fn into_part(self) -> Option<ResponsePart> {
        match self {
            Self::Text { text } => Some(ResponsePart::Text { text }),
            Self::ToolUse { id, name, input } => Some(ResponsePart::ToolCall(ToolCallPart::new(
                id,
                name,
                input.unwrap_or_else(|| Value::Object(Map::new())),
            ))),
            Self::ServerToolUse { .. } | Self::ToolSearchToolResult { .. } => {
                self.search_block().map(|block| item(block, None))
            }
            Self::Other => None,
        }
    }

    /// The whole block, its `type` put back, if it is the tool search tool's: a call of
    /// another server tool is left out, as its result is.
    fn search_block(self) -> Option<Map<String, Value>> {
        let (kind, mut block) = match self {
            Self::ServerToolUse { block } => {
                let name = block.get("name").and_then(Value::as_str).unwrap_or_default();
                if !name.starts_with(SEARCH_TOOL_PREFIX) {
                    return None;
                }
                ("server_tool_use", block)
            }
            Self::ToolSearchToolResult { block } => ("tool_search_tool_result", block),
            Self::Text { .. } | Self::ToolUse { .. } | Self::Other => return None,
        };
        block.insert("type".into(), kind.into());
        Some(block)
    }
}

/// A tool search block as a provider item; `input`, when its JSON was streamed, is put in.
fn item(mut block: Map<String, Value>, input: Option<&str>) -> ResponsePart {
    if let Some(json) = input.filter(|json| !json.trim().is_empty()) {
        block.insert("input".into(), arguments(json));
    }
    ResponsePart::ProviderItem(ProviderItem::new(Anthropic::FORMAT, Value::Object(block)))
}

/// Token counts; `message_delta` repeats them as they stand.
#[derive(Debug, Deserialize)]
struct ApiUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

/// The stream events that carry the answer; `ping`, `content_block_stop` and events of new
/// features are `Other`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartedMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: BlockDelta,
    },
    MessageDelta {
        delta: StopDelta,
        usage: Option<ApiUsage>,
    },
    MessageStop,
    Error,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct StartedMessage {
    model: Option<String>,
    usage: Option<ApiUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct StopDelta {
    stop_reason: Option<String>,
}

/// A streamed message being put together, block by block.
#[derive(Debug, Default)]
pub struct MessagesStream {
    /// Each block with the index the server gave it. The index only names a block: it
    /// never sizes anything, so `2^62` costs what `0` does.
    blocks: Vec<(u64, Block)>,
    start_usage: Option<ApiUsage>,
    output_tokens: Option<u64>,
    stop: Option<String>,
    model: Option<String>,
    stopped: bool,
}

#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        call: usize,
        id: String,
        name: String,
        json: String,
    },
    /// A tool search block; a call's input may arrive as JSON deltas, as a tool use's does.
    Search {
        block: Map<String, Value>,
        json: String,
    },
    Other,
}

impl MessagesStream {
    /// The block the server numbered `index`: the latest, should it reuse a number.
    fn block(&mut self, index: u64) -> Option<&mut Block> {
        self.blocks.iter_mut().rev().find(|(at, _)| *at == index).map(|(_, block)| block)
    }
}

impl StreamState for MessagesStream {
    fn event(&mut self, event: &SseEvent) -> Result<Vec<ModelDelta>, ModelError> {
        if event.event == "ping" {
            return Ok(Vec::new());
        }
        match wire::event(Anthropic::NAME, event)? {
            StreamEvent::MessageStart { message } => {
                self.model = message.model;
                self.start_usage = message.usage;
            }
            StreamEvent::ContentBlockStart { index, content_block } => {
                let calls = self.blocks.iter().filter(|(_, b)| matches!(b, Block::ToolUse { .. })).count();
                let (new, delta) = match content_block {
                    ContentBlock::Text { text } => {
                        let delta = (!text.is_empty()).then(|| ModelDelta::Text { text: text.clone() });
                        (Block::Text(text), delta)
                    }
                    ContentBlock::ToolUse { id, name, .. } => {
                        let delta = ModelDelta::ToolCall(ToolCallDelta {
                            index: calls,
                            tool_call_id: Some(id.clone()),
                            name: Some(name.clone()),
                            arguments: String::new(),
                        });
                        (Block::ToolUse { call: calls, id, name, json: String::new() }, Some(delta))
                    }
                    block @ (ContentBlock::ServerToolUse { .. } | ContentBlock::ToolSearchToolResult { .. }) => {
                        let new = match block.search_block() {
                            Some(block) => Block::Search { block, json: String::new() },
                            None => Block::Other,
                        };
                        (new, None)
                    }
                    ContentBlock::Other => (Block::Other, None),
                };
                match self.block(index) {
                    Some(slot) => *slot = new,
                    None => self.blocks.push((index, new)),
                }
                return Ok(delta.into_iter().collect());
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                return Ok(match (self.block(index), delta) {
                    (Some(Block::Text(text)), BlockDelta::TextDelta { text: more }) => {
                        text.push_str(&more);
                        vec![ModelDelta::Text { text: more }]
                    }
                    (Some(Block::ToolUse { call, json, .. }), BlockDelta::InputJsonDelta { partial_json }) => {
                        json.push_str(&partial_json);
                        vec![ModelDelta::ToolCall(ToolCallDelta::arguments(*call, partial_json))]
                    }
                    (Some(Block::Search { json, .. }), BlockDelta::InputJsonDelta { partial_json }) => {
                        json.push_str(&partial_json);
                        Vec::new()
                    }
                    _ => Vec::new(),
                });
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop = Some(reason);
                }
                self.output_tokens = usage.and_then(|u| u.output_tokens).or(self.output_tokens);
            }
            StreamEvent::MessageStop => self.stopped = true,
            StreamEvent::Error => return Err(invalid(format!("the stream reported an error: {}", event.data))),
            StreamEvent::Other => {}
        }
        Ok(Vec::new())
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        if !self.stopped {
            return Err(ModelError::of(ModelErrorKind::StreamInterrupted, "the stream ended before `message_stop`"));
        }
        let cut_off = check_stop(self.stop.as_deref())?;
        let parts: Vec<ResponsePart> = self
            .blocks
            .into_iter()
            .filter_map(|(_, block)| match block {
                Block::Text(text) => Some(ResponsePart::Text { text }),
                Block::ToolUse { id, name, json, .. } => {
                    Some(ResponsePart::ToolCall(ToolCallPart::new(id, name, arguments(&json))))
                }
                Block::Search { block, json } => Some(item(block, Some(&json))),
                Block::Other => None,
            })
            .collect();
        Ok(ModelResponse {
            finish_reason: Some(FinishReason::of(&parts, cut_off)),
            loaded: loaded(&parts),
            parts,
            usage: self.start_usage.as_ref().map(|u| usage(u, self.output_tokens)),
            model_name: self.model,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(content: &Value) -> ModelResponse {
        let body = json!({"content": content, "stop_reason": "end_turn"});
        Anthropic.parse(serde_json::from_value(body).unwrap(), 1).unwrap()
    }

    #[test]
    fn a_failed_search_is_kept_for_the_next_request_and_loads_nothing() {
        let call = json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_regex",
                          "input": {"pattern": "weather"}});
        let error = json!({"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1",
                           "content": {"type": "tool_search_tool_result_error", "error_code": "unavailable"}});
        let response = answer(&json!([call, error]));
        let items: Vec<&Value> = provider_items(&response.parts, Anthropic::FORMAT).collect();
        assert_eq!(items, [&call, &error]);
        assert!(response.loaded.is_empty());
    }

    #[test]
    fn another_server_tools_blocks_are_left_out_and_a_regex_search_reports_its_pattern() {
        let web = json!({"type": "server_tool_use", "id": "srvtoolu_w", "name": "web_search", "input": {"query": "x"}});
        let call = json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_regex",
                          "input": {"pattern": "weather|forecast"}});
        let found = json!({"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1",
                           "content": {"type": "tool_search_tool_search_result",
                                       "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}]}});
        let response = answer(&json!([web, call, found]));
        assert_eq!(response.parts.len(), 2, "{:?}", response.parts);
        let loaded = LoadedTools { names: vec!["get_weather".into()], query: Some("weather|forecast".into()) };
        assert_eq!(response.loaded, [loaded]);
    }
}
