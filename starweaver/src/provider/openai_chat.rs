//! OpenAI Chat Completions (`POST {base}/chat/completions`), which every
//! OpenAI-compatible server speaks: vLLM, llama.cpp's server, Ollama, LM Studio,
//! OpenRouter, Azure OpenAI.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::arguments::arguments;
use super::body::{
    data_url, insert_toolset_instructions, native_output, refused, return_parts, text_of, texts_of, tools,
};
use super::protocol::{Protocol, StreamState};
use super::settings::{Settings, ToolChoice};
use super::sse::SseEvent;
use super::wire::{self, invalid};
use crate::content::{self, Audio, Document, Image, Part, Source};
use crate::message::{Message, RequestPart, ResponsePart, ToolCallPart, ToolReturnPart};
use crate::model::{
    FinishReason, ModelDelta, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ToolCallDelta, Usage,
};
use crate::render::Provider;

/// The Chat Completions protocol; use it as [`OpenAIChatModel`](super::OpenAIChatModel).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAIChat;

impl Protocol for OpenAIChat {
    const PROVIDER: &'static str = "openai";
    const NAME: &'static str = "OpenAI Chat Completions";
    const SYSTEM: &'static str = "openai";
    const FORMAT: Provider = Provider::OpenAiChat;
    const KEY_ENV: &'static str = "OPENAI_API_KEY";
    const BASE_URL_ENV: Option<&'static str> = Some("OPENAI_BASE_URL");
    const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";
    const REQUEST_ID_HEADER: &'static str = "x-request-id";
    const NATIVE_OUTPUT: bool = true;
    type Body = ChatCompletion;
    type Stream = ChatStream;

    fn url(&self, base: &str, _model: &str, _stream: bool) -> String {
        format!("{base}/chat/completions")
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
        body.insert("messages".into(), Value::Array(messages(request)?));
        let tools = tools(request, Self::FORMAT)?;
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
            if let Some(choice) = &settings.tool_choice {
                body.insert("tool_choice".into(), tool_choice(choice));
            }
            if let Some(parallel) = settings.parallel_tool_calls {
                body.insert("parallel_tool_calls".into(), parallel.into());
            }
        }
        if let Some(output) = native_output(request, Self::FORMAT)? {
            body.insert("response_format".into(), json!({"type": "json_schema", "json_schema": output.json_schema}));
        }
        sampling(&mut body, settings, "max_tokens");
        if stream {
            body.insert("stream".into(), true.into());
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Ok(Value::Object(body))
    }

    fn parse(&self, body: ChatCompletion, _step: u32) -> Result<ModelResponse, ModelError> {
        let choice = body.choices.into_iter().next().ok_or_else(|| invalid("the response has no `choices`"))?;
        let message = choice.message;
        if let Some(refusal) = message.refusal {
            return Err(ModelError::of(ModelErrorKind::Refusal, format!("the model refused: {refusal}")));
        }
        let mut parts = Vec::new();
        if let Some(text) = message.content.filter(|t| !t.is_empty()) {
            parts.push(ResponsePart::Text { text });
        }
        for call in message.tool_calls.into_iter().flatten() {
            let ToolCall { id, function: Function { name, arguments: text } } = call;
            parts.push(ResponsePart::ToolCall(ToolCallPart::new(id, name, arguments(&text))));
        }
        let cut_off = check_finish(choice.finish_reason.as_deref())?;
        Ok(ModelResponse {
            finish_reason: Some(FinishReason::of(&parts, cut_off)),
            parts,
            usage: body.usage.map(Usage::from),
            model_name: body.model,
            loaded: Vec::new(),
        })
    }

    fn stream(&self, _step: u32) -> ChatStream {
        ChatStream::default()
    }
}

/// The canonical history as Chat Completions messages. A tool message takes only text,
/// so the media of content parts go in one user message after the request's tool
/// messages (none may come between a call's message and its tool messages).
fn messages(request: &ModelRequest<'_>) -> Result<Vec<Value>, ModelError> {
    let mut out = Vec::new();
    for message in request.messages.iter() {
        match &**message {
            Message::Request { parts } => {
                let mut media = Vec::new();
                for part in parts {
                    if !matches!(part, RequestPart::ToolReturn(_)) && !media.is_empty() {
                        out.push(json!({"role": "user", "content": std::mem::take(&mut media)}));
                    }
                    out.push(match part {
                        RequestPart::SystemPrompt { text } => json!({"role": "system", "content": text}),
                        RequestPart::UserPrompt { text } => json!({"role": "user", "content": text}),
                        RequestPart::ToolReturn(ret) => {
                            let content = tool_content(ret, &mut media)?;
                            json!({"role": "tool", "tool_call_id": &*ret.tool_call_id, "content": content})
                        }
                    });
                }
                if !media.is_empty() {
                    out.push(json!({"role": "user", "content": media}));
                }
            }
            Message::Response { .. } => {
                let mut assistant = Map::new();
                assistant.insert("role".into(), "assistant".into());
                assistant.insert("content".into(), message.text().map_or(Value::Null, Value::String));
                let calls: Vec<Value> = message
                    .tool_calls()
                    .map(|call| {
                        json!({"id": &*call.id, "type": "function",
                            "function": {"name": &*call.name, "arguments": text_of(&call.arguments)}})
                    })
                    .collect();
                if !calls.is_empty() {
                    assistant.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(assistant));
            }
        }
    }
    insert_toolset_instructions(&mut out, request);
    Ok(out)
}

/// A tool message's text; the media of content parts are added to `media`, after a line
/// saying which call they answer: `image_url` (a URL or a data URL), `input_audio` (WAV
/// and MP3) and `file` (a data URL with a file name).
fn tool_content(ret: &ToolReturnPart, media: &mut Vec<Value>) -> Result<String, ModelError> {
    let Some(parts) = return_parts(ret) else { return Ok(text_of(&ret.content)) };
    let mut added = Vec::new();
    for part in &parts {
        let refuse = |why: &str| refused(OpenAIChat::NAME, ret, part, why);
        added.push(match part {
            Part::Text(_) => continue,
            Part::Image(Image { source: Source::Data { data, media_type } }) => {
                json!({"type": "image_url", "image_url": {"url": data_url(media_type, data)}})
            }
            Part::Image(Image { source: Source::Url { url, .. } }) => {
                json!({"type": "image_url", "image_url": {"url": url}})
            }
            Part::Audio(Audio { data, media_type }) => {
                let format = match media_type.as_str() {
                    "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
                    "audio/mpeg" | "audio/mp3" => "mp3",
                    _ => return Err(refuse("audio is WAV or MP3")),
                };
                json!({"type": "input_audio", "input_audio": {"data": content::base64(data), "format": format}})
            }
            Part::Document(Document { source: Source::Data { data, media_type }, filename, title }) => {
                let filename = filename.as_ref().or(title.as_ref()).map_or("document", String::as_str);
                json!({"type": "file", "file": {"filename": filename, "file_data": data_url(media_type, data)}})
            }
            Part::Document(Document { source: Source::Url { .. }, .. }) => {
                return Err(refuse("a file goes by its bytes, not a URL"));
            }
            Part::ResourceLink(_) | Part::Resource(_) => return Err(refuse("a resource link has no message form")),
        });
    }
    let text = texts_of(&parts);
    if added.is_empty() {
        return Ok(text);
    }
    let which = format!("The content returned by tool call `{}` (`{}`):", ret.tool_call_id, ret.name);
    media.push(json!({"type": "text", "text": which}));
    media.extend(added);
    Ok(if text.is_empty() { "The content is in the next user message.".to_owned() } else { text })
}

/// `tool_choice` as both OpenAI protocols spell it; `function` wraps the named tool.
pub(crate) fn tool_choice_value(choice: &ToolChoice, named: impl Fn(&str) -> Value) -> Value {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Tool(name) => named(name),
    }
}

fn tool_choice(choice: &ToolChoice) -> Value {
    tool_choice_value(choice, |name| json!({"type": "function", "function": {"name": name}}))
}

/// Temperature, `top_p`, seed and the token limit under the protocol's name for it.
pub(crate) fn sampling(body: &mut Map<String, Value>, settings: &Settings, max_tokens_key: &str) {
    if let Some(t) = settings.temperature {
        body.insert("temperature".into(), t.into());
    }
    if let Some(p) = settings.top_p {
        body.insert("top_p".into(), p.into());
    }
    if let Some(n) = settings.max_tokens {
        body.insert(max_tokens_key.into(), n.into());
    }
    if let Some(seed) = settings.seed {
        body.insert("seed".into(), seed.into());
    }
}

/// `stop`, `tool_calls`, `length` and the legacy `function_call` end an answer normally;
/// whether the token limit cut it.
fn check_finish(reason: Option<&str>) -> Result<bool, ModelError> {
    match reason {
        None | Some("stop" | "tool_calls" | "function_call") => Ok(false),
        Some("length") => Ok(true),
        Some("content_filter") => {
            Err(ModelError::of(ModelErrorKind::ContentFilter, "the provider's content filter stopped the answer"))
        }
        Some(other) => {
            Err(ModelError::of(ModelErrorKind::UnknownFinishReason, format!("unknown finish reason `{other}`")))
        }
    }
}

/// A chat completion, as much of it as becomes a [`ModelResponse`].
#[derive(Debug, Deserialize)]
pub struct ChatCompletion {
    choices: Vec<Choice>,
    usage: Option<OpenAIUsage>,
    model: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: ChatMessage,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChatMessage {
    content: Option<String>,
    refusal: Option<String>,
    tool_calls: Option<Vec<ToolCall>>,
}

#[derive(Debug, Deserialize)]
struct ToolCall {
    id: String,
    function: Function,
}

#[derive(Debug, Deserialize)]
struct Function {
    name: String,
    #[serde(default)]
    arguments: String,
}

/// Token counts as both OpenAI protocols report them: Chat Completions names them
/// `prompt`/`completion`, the Responses API `input`/`output`. Each name is its own field,
/// so a server that sends both spellings is read, not refused as a duplicate.
#[derive(Debug, Deserialize)]
pub(crate) struct OpenAIUsage {
    prompt_tokens: Option<u64>,
    input_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    output_tokens: Option<u64>,
    prompt_tokens_details: Option<TokensDetails>,
    input_tokens_details: Option<TokensDetails>,
}

#[derive(Debug, Deserialize)]
struct TokensDetails {
    cached_tokens: Option<u64>,
}

impl From<OpenAIUsage> for Usage {
    fn from(usage: OpenAIUsage) -> Self {
        let details = usage.prompt_tokens_details.or(usage.input_tokens_details);
        Usage {
            requests: 1,
            input_tokens: usage.prompt_tokens.or(usage.input_tokens).unwrap_or(0),
            output_tokens: usage.completion_tokens.or(usage.output_tokens).unwrap_or(0),
            cached_tokens: details.and_then(|details| details.cached_tokens).unwrap_or(0),
        }
    }
}

/// One streamed chunk. Every field of a call's delta is optional: a call's id and name
/// come once, in its first delta, and are checked when the stream ends.
#[derive(Deserialize)]
struct ChatCompletionChunk {
    error: Option<Value>,
    model: Option<String>,
    usage: Option<OpenAIUsage>,
    choices: Option<Vec<ChunkChoice>>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    delta: Option<ChunkDelta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChunkDelta {
    content: Option<String>,
    refusal: Option<String>,
    tool_calls: Option<Vec<ToolCallChunk>>,
}

#[derive(Deserialize)]
struct ToolCallChunk {
    index: Option<u64>,
    id: Option<String>,
    function: Option<FunctionChunk>,
}

#[derive(Deserialize)]
struct FunctionChunk {
    name: Option<String>,
    arguments: Option<String>,
}

/// A streamed answer being put together.
#[derive(Debug, Default)]
pub struct ChatStream {
    text: String,
    refusal: String,
    calls: Vec<PartialCall>,
    finish: Option<String>,
    usage: Option<Usage>,
    model: Option<String>,
    done: bool,
}

#[derive(Debug, Default)]
struct PartialCall {
    /// The index the server gave this call, if it gave one.
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

impl ChatStream {
    /// Which call a tool-call delta continues, surviving the quirks of real servers: no
    /// `index` (a new id starts a call, no id continues the last), a first index of 1,
    /// and index 0 reused with a new id for the next call.
    fn slot(&mut self, index: Option<u64>, id: Option<&str>) -> usize {
        let id = id.filter(|id| !id.is_empty());
        let found = match index {
            Some(index) => self.calls.iter().rposition(|c| c.index == Some(index)),
            None => self.calls.len().checked_sub(1),
        };
        match found {
            Some(slot) if self.calls.get(slot).is_some_and(|c| id.is_none_or(|id| c.id.is_empty() || c.id == id)) => {
                slot
            }
            _ => {
                self.calls.push(PartialCall { index, ..PartialCall::default() });
                self.calls.len() - 1
            }
        }
    }
}

impl StreamState for ChatStream {
    fn event(&mut self, event: &SseEvent) -> Result<Vec<ModelDelta>, ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let chunk: ChatCompletionChunk = wire::decode(OpenAIChat::NAME, "a stream chunk", data)?;
        if let Some(error) = chunk.error {
            return Err(invalid(format!("the stream reported an error: {error}")));
        }
        if let Some(model) = chunk.model {
            self.model = Some(model);
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        let mut deltas = Vec::new();
        let Some(choice) = chunk.choices.into_iter().flatten().next() else { return Ok(deltas) };
        if let Some(reason) = choice.finish_reason {
            self.finish = Some(reason);
        }
        let Some(delta) = choice.delta else { return Ok(deltas) };
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            self.text.push_str(&text);
            deltas.push(ModelDelta::Text { text });
        }
        if let Some(refusal) = delta.refusal {
            self.refusal.push_str(&refusal);
        }
        for call in delta.tool_calls.into_iter().flatten() {
            let slot = self.slot(call.index, call.id.as_deref());
            #[allow(clippy::indexing_slicing)] // `slot` gives an index of `calls`: one it found, or the one it added
            let partial = &mut self.calls[slot];
            let (name, args) = call.function.map_or((None, None), |f| (f.name, f.arguments));
            let name = name.filter(|n| !n.is_empty());
            let args = args.unwrap_or_default();
            let new_id = call.id.filter(|id| !id.is_empty() && partial.id.is_empty());
            if let Some(id) = &new_id {
                partial.id.clone_from(id);
            }
            if let Some(name) = &name {
                partial.name.push_str(name);
            }
            partial.arguments.push_str(&args);
            if new_id.is_some() || name.is_some() || !args.is_empty() {
                deltas.push(ModelDelta::ToolCall(ToolCallDelta {
                    index: slot,
                    tool_call_id: new_id,
                    name,
                    arguments: args,
                }));
            }
        }
        Ok(deltas)
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        if !self.refusal.is_empty() {
            return Err(ModelError::of(ModelErrorKind::Refusal, format!("the model refused: {}", self.refusal)));
        }
        if !self.done && self.finish.is_none() {
            return Err(ModelError::of(ModelErrorKind::StreamInterrupted, "the stream ended before its last chunk"));
        }
        let cut_off = check_finish(self.finish.as_deref())?;
        for (index, call) in self.calls.iter().enumerate() {
            for (field, value) in [("id", &call.id), ("name", &call.name)] {
                if value.is_empty() {
                    let problem = format!("tool call {index} never gave its `{field}`");
                    return Err(wire::unfit(OpenAIChat::NAME, "the stream", "choices[0].delta.tool_calls", problem));
                }
            }
        }
        let mut parts = Vec::new();
        if !self.text.is_empty() {
            parts.push(ResponsePart::Text { text: self.text });
        }
        for call in self.calls {
            parts.push(ResponsePart::ToolCall(ToolCallPart::new(call.id, call.name, arguments(&call.arguments))));
        }
        Ok(ModelResponse {
            finish_reason: Some(FinishReason::of(&parts, cut_off)),
            parts,
            usage: self.usage,
            model_name: self.model,
            loaded: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(chunks: &[Value]) -> ModelResponse {
        let mut stream = ChatStream::default();
        for chunk in chunks {
            stream.event(&SseEvent { event: "message".into(), data: chunk.to_string() }).unwrap();
        }
        stream.event(&SseEvent { event: "message".into(), data: "[DONE]".into() }).unwrap();
        stream.finish().unwrap()
    }

    fn call_delta(index: Option<u64>, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
        let mut call = json!({"function": {"arguments": args}});
        if let Some(index) = index {
            call["index"] = index.into();
        }
        if let Some(id) = id {
            call["id"] = id.into();
        }
        if let Some(name) = name {
            call["function"]["name"] = name.into();
        }
        json!({"choices": [{"delta": {"tool_calls": [call]}}]})
    }

    fn calls(response: &ModelResponse) -> Vec<(String, String, Value)> {
        response
            .parts
            .iter()
            .filter_map(|p| match p {
                ResponsePart::ToolCall(c) => Some((c.id.to_string(), c.name.to_string(), c.arguments.clone())),
                ResponsePart::Text { .. } | ResponsePart::ProviderItem(_) => None,
            })
            .collect()
    }

    #[test]
    fn tool_call_deltas_survive_every_known_index_quirk() {
        let expected = vec![
            ("a".to_owned(), "one".to_owned(), json!({"x": 1})),
            ("b".to_owned(), "two".to_owned(), json!({"y": 2})),
        ];
        let quirks = [
            // Well-formed.
            vec![
                call_delta(Some(0), Some("a"), Some("one"), ""),
                call_delta(Some(0), None, None, "{\"x\": 1}"),
                call_delta(Some(1), Some("b"), Some("two"), "{\"y\""),
                call_delta(Some(1), None, None, ": 2}"),
            ],
            // No index at all.
            vec![
                call_delta(None, Some("a"), Some("one"), "{\"x\""),
                call_delta(None, None, None, ": 1}"),
                call_delta(None, Some("b"), Some("two"), "{\"y\": 2}"),
            ],
            // The first index is 1.
            vec![
                call_delta(Some(1), Some("a"), Some("one"), "{\"x\": 1}"),
                call_delta(Some(2), Some("b"), Some("two"), "{\"y\": 2}"),
            ],
            // Index 0 reused with a new id.
            vec![
                call_delta(Some(0), Some("a"), Some("one"), "{\"x\": 1}"),
                call_delta(Some(0), Some("b"), Some("two"), "{\"y\":"),
                call_delta(Some(0), None, None, " 2}"),
            ],
        ];
        for chunks in quirks {
            assert_eq!(calls(&feed(&chunks)), expected, "{chunks:?}");
        }
    }

    #[test]
    fn a_stream_without_its_end_is_interrupted() {
        let mut stream = ChatStream::default();
        let chunk = json!({"choices": [{"delta": {"content": "hel"}}]});
        stream.event(&SseEvent { event: "message".into(), data: chunk.to_string() }).unwrap();
        assert_eq!(stream.finish().unwrap_err().kind, ModelErrorKind::StreamInterrupted);
    }
}
