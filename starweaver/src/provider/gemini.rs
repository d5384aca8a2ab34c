//! Gemini (`POST {base}/v1beta/models/{model}:generateContent`, and
//! `:streamGenerateContent?alt=sse` when streamed).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::arguments::keep_wide_arguments;
use super::body::{instructions, native_output, refused, return_parts, texts_of, tools};
use super::protocol::{Protocol, StreamState};
use super::settings::{Settings, ToolChoice};
use super::sse::SseEvent;
use super::wire::{self, invalid};
use crate::content::{self, Document, Image, Part as ContentPart, Source};
use crate::message::{Message, RequestPart, ResponsePart, ToolCallPart, ToolReturnPart};
use crate::model::{
    FinishReason, ModelDelta, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ToolCallDelta, Usage,
};
use crate::render::Provider;

/// Ids this client made up for calls Gemini sent without one; they are not sent back.
const MADE_UP_ID: &str = "gemini_call_";

/// The Gemini protocol; use it as [`GeminiModel`](super::GeminiModel).
#[derive(Debug, Clone, Copy, Default)]
pub struct Gemini;

impl Protocol for Gemini {
    const PROVIDER: &'static str = "gemini";
    const NAME: &'static str = "Gemini";
    const SYSTEM: &'static str = "gcp.gemini";
    const FORMAT: Provider = Provider::Gemini;
    const KEY_ENV: &'static str = "GEMINI_API_KEY";
    const BASE_URL_ENV: Option<&'static str> = Some("GEMINI_BASE_URL");
    const DEFAULT_BASE_URL: &'static str = "https://generativelanguage.googleapis.com";
    const REQUEST_ID_HEADER: &'static str = "x-request-id";
    const NATIVE_OUTPUT: bool = true;
    type Body = GenerateContentResponse;
    type Stream = GeminiStream;

    fn url(&self, base: &str, model: &str, stream: bool) -> String {
        if stream {
            format!("{base}/v1beta/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("{base}/v1beta/models/{model}:generateContent")
        }
    }

    fn auth(&self, key: &str) -> (&'static str, String) {
        ("x-goog-api-key", key.to_owned())
    }

    fn body(
        &self,
        _model: &str,
        request: &ModelRequest<'_>,
        settings: &Settings,
        _stream: bool,
    ) -> Result<Value, ModelError> {
        let mut body = Map::new();
        if let Some(system) = instructions(request) {
            body.insert("systemInstruction".into(), json!({"parts": [{"text": system}]}));
        }
        body.insert("contents".into(), Value::Array(contents(request)?));
        let declarations = tools(request, Self::FORMAT)?;
        if !declarations.is_empty() {
            body.insert("tools".into(), json!([{"functionDeclarations": declarations}]));
            if let Some(choice) = &settings.tool_choice {
                let config = match choice {
                    ToolChoice::Auto => json!({"mode": "AUTO"}),
                    ToolChoice::Required => json!({"mode": "ANY"}),
                    ToolChoice::None => json!({"mode": "NONE"}),
                    ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
                };
                body.insert("toolConfig".into(), json!({"functionCallingConfig": config}));
            }
        }
        let mut generation = Map::new();
        if let Some(t) = settings.temperature {
            generation.insert("temperature".into(), t.into());
        }
        if let Some(p) = settings.top_p {
            generation.insert("topP".into(), p.into());
        }
        if let Some(n) = settings.max_tokens {
            generation.insert("maxOutputTokens".into(), n.into());
        }
        if let Some(seed) = settings.seed {
            generation.insert("seed".into(), seed.into());
        }
        if let Some(output) = native_output(request, Self::FORMAT)? {
            generation.insert("responseMimeType".into(), "application/json".into());
            generation.insert("responseSchema".into(), output.schema);
        }
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Value::Object(generation));
        }
        Ok(Value::Object(body))
    }

    fn parse(&self, body: GenerateContentResponse, step: u32) -> Result<ModelResponse, ModelError> {
        let mut stream = GeminiStream { step, ..GeminiStream::default() };
        stream.chunk(body)?;
        stream.response(true)
    }

    fn stream(&self, step: u32) -> GeminiStream {
        GeminiStream { step, ..GeminiStream::default() }
    }

    fn raw_arguments(&self, body: &str) -> Vec<Box<RawValue>> {
        let chunk = serde_json::from_str::<GenerateContentResponse<Box<RawValue>>>(body).ok();
        let parts = chunk.and_then(|c| c.candidates.into_iter().flatten().next()).and_then(|c| c.content);
        parts.into_iter().flat_map(|c| c.parts.into_iter().flatten()).filter_map(|p| p.function_call?.args).collect()
    }
}

fn contents(request: &ModelRequest<'_>) -> Result<Vec<Value>, ModelError> {
    let mut out = Vec::new();
    for message in request.messages.iter() {
        let (role, parts): (&str, Vec<Value>) = match &**message {
            Message::Request { parts } => (
                "user",
                parts
                    .iter()
                    .filter_map(|part| match part {
                        RequestPart::SystemPrompt { .. } => None,
                        RequestPart::UserPrompt { text } => Some(Ok(json!({"text": text}))),
                        RequestPart::ToolReturn(ret) => {
                            Some(function_response(ret).map(|call| json!({"functionResponse": call})))
                        }
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Message::Response { parts } => (
                "model",
                parts
                    .iter()
                    .filter_map(|part| match part {
                        ResponsePart::Text { text } => Some(json!({"text": text})),
                        ResponsePart::ToolCall(call) => {
                            let args = call.arguments.as_object().cloned().unwrap_or_default();
                            let mut function = json!({"name": &*call.name, "args": args});
                            if !call.id.starts_with(MADE_UP_ID)
                                && let Value::Object(function) = &mut function
                            {
                                function.insert("id".into(), (&*call.id).into());
                            }
                            Some(json!({"functionCall": function}))
                        }
                        // Another protocol's item (its tool search): nothing Gemini reads.
                        ResponsePart::ProviderItem(_) => None,
                    })
                    .collect(),
            ),
        };
        if !parts.is_empty() {
            out.push(json!({"role": role, "parts": parts}));
        }
    }
    Ok(out)
}

/// A `functionResponse`: the value as `response` (an object as it is, anything else under
/// `result`); for content parts, their text under `result` and their media as `parts`
/// (`inlineData` for bytes, `fileData` for URLs).
fn function_response(ret: &ToolReturnPart) -> Result<Value, ModelError> {
    let mut call = Map::new();
    call.insert("name".into(), (&*ret.name).into());
    if let Some(parts) = return_parts(ret) {
        let mut media = Vec::new();
        for part in &parts {
            let refuse = |why: &str| refused(Gemini::NAME, ret, part, why);
            media.push(match part {
                ContentPart::Text(_) => continue,
                ContentPart::Image(Image { source }) | ContentPart::Document(Document { source, .. }) => match source {
                    Source::Data { data, media_type } => {
                        json!({"inlineData": {"mimeType": media_type, "data": content::base64(data)}})
                    }
                    Source::Url { url, media_type: Some(media_type) } => {
                        json!({"fileData": {"mimeType": media_type, "fileUri": url}})
                    }
                    Source::Url { media_type: None, .. } => return Err(refuse("a URL needs its media type")),
                },
                ContentPart::Audio(_) => return Err(refuse("a function response holds images and documents")),
                ContentPart::ResourceLink(_) | ContentPart::Resource(_) => {
                    return Err(refuse("a resource link has no function-response form"));
                }
            });
        }
        call.insert("response".into(), json!({"result": texts_of(&parts)}));
        if !media.is_empty() {
            call.insert("parts".into(), Value::Array(media));
        }
    } else {
        let response = match &ret.content {
            Value::Object(_) if ret.is_error => json!({"error": ret.content}),
            Value::Object(_) => ret.content.clone(),
            other => json!({"result": other}),
        };
        call.insert("response".into(), response);
    }
    if !ret.tool_call_id.starts_with(MADE_UP_ID) {
        call.insert("id".into(), (&*ret.tool_call_id).into());
    }
    Ok(Value::Object(call))
}

/// A `GenerateContentResponse`: a whole answer, or one chunk of a streamed one. `A` is
/// how a call's arguments are read: as a value, or as the text the model sent.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentResponse<A = Value> {
    error: Option<Value>,
    prompt_feedback: Option<PromptFeedback>,
    candidates: Option<Vec<Candidate<A>>>,
    usage_metadata: Option<UsageMetadata>,
    model_version: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    block_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<A> {
    content: Option<Content<A>>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Content<A> {
    parts: Option<Vec<Part<A>>>,
}

/// A part holds one of `text`, `functionCall` or a kind this client does not take.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<A> {
    text: Option<String>,
    function_call: Option<FunctionCall<A>>,
    thought: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct FunctionCall<A> {
    id: Option<String>,
    name: String,
    args: Option<A>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
}

impl From<UsageMetadata> for Usage {
    fn from(meta: UsageMetadata) -> Self {
        let n = |count: Option<u64>| count.unwrap_or(0);
        Usage {
            requests: 1,
            input_tokens: n(meta.prompt_token_count),
            output_tokens: n(meta.candidates_token_count) + n(meta.thoughts_token_count),
            cached_tokens: n(meta.cached_content_token_count),
        }
    }
}

/// A (streamed or whole) answer being put together: each chunk is a partial
/// `GenerateContentResponse`. Adjacent text is one part, so both ways give the same message.
#[derive(Debug, Default)]
pub struct GeminiStream {
    step: u32,
    parts: Vec<ResponsePart>,
    calls: usize,
    finish: Option<String>,
    usage: Option<Usage>,
    model: Option<String>,
}

impl GeminiStream {
    fn chunk(&mut self, chunk: GenerateContentResponse) -> Result<Vec<ModelDelta>, ModelError> {
        if let Some(reason) = chunk.prompt_feedback.and_then(|feedback| feedback.block_reason) {
            return Err(ModelError::of(ModelErrorKind::ContentFilter, format!("the prompt was blocked: {reason}")));
        }
        if let Some(model) = chunk.model_version {
            self.model = Some(model);
        }
        if let Some(meta) = chunk.usage_metadata {
            self.usage = Some(meta.into());
        }
        let mut deltas = Vec::new();
        let Some(candidate) = chunk.candidates.into_iter().flatten().next() else { return Ok(deltas) };
        if let Some(reason) = candidate.finish_reason {
            self.finish = Some(reason);
        }
        for part in candidate.content.and_then(|content| content.parts).into_iter().flatten() {
            if part.thought == Some(true) {
                continue;
            }
            if let Some(text) = part.text {
                deltas.push(ModelDelta::Text { text: text.clone() });
                match self.parts.last_mut() {
                    Some(ResponsePart::Text { text: last }) => last.push_str(&text),
                    _ => self.parts.push(ResponsePart::Text { text }),
                }
            } else if let Some(call) = part.function_call {
                let id = call.id.unwrap_or_else(|| format!("{MADE_UP_ID}{}_{}", self.step, self.calls));
                let args = call.args.unwrap_or_else(|| Value::Object(Map::new()));
                deltas.push(ModelDelta::ToolCall(ToolCallDelta {
                    index: self.calls,
                    tool_call_id: Some(id.clone()),
                    name: Some(call.name.clone()),
                    arguments: args.to_string(),
                }));
                self.parts.push(ResponsePart::ToolCall(ToolCallPart::new(id, call.name, args)));
                self.calls += 1;
            }
        }
        Ok(deltas)
    }

    fn response(self, whole: bool) -> Result<ModelResponse, ModelError> {
        let cut_off = match self.finish.as_deref() {
            Some("STOP") => false,
            Some("MAX_TOKENS") => true,
            None if whole => return Err(invalid("the response has no candidate")),
            None => {
                return Err(ModelError::of(
                    ModelErrorKind::StreamInterrupted,
                    "the stream ended before its finish reason",
                ));
            }
            Some(reason @ ("SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY")) => {
                return Err(ModelError::of(
                    ModelErrorKind::ContentFilter,
                    format!("the provider's content filter stopped the answer ({reason})"),
                ));
            }
            Some("MALFORMED_FUNCTION_CALL") => return Err(invalid("the model produced a malformed function call")),
            Some(other) => {
                return Err(ModelError::of(
                    ModelErrorKind::UnknownFinishReason,
                    format!("unknown finish reason `{other}`"),
                ));
            }
        };
        Ok(ModelResponse {
            finish_reason: Some(FinishReason::of(&self.parts, cut_off)),
            parts: self.parts,
            usage: self.usage,
            model_name: self.model,
            loaded: Vec::new(),
        })
    }
}

impl StreamState for GeminiStream {
    fn event(&mut self, event: &SseEvent) -> Result<Vec<ModelDelta>, ModelError> {
        let chunk: GenerateContentResponse = wire::decode(Gemini::NAME, "a stream chunk", &event.data)?;
        if let Some(error) = &chunk.error {
            return Err(invalid(format!("the stream reported an error: {error}")));
        }
        let start = self.parts.len();
        let deltas = self.chunk(chunk)?;
        let new_parts = self.parts.get_mut(start..).unwrap_or_default();
        keep_wide_arguments(new_parts, &event.data, |data| Gemini.raw_arguments(data));
        Ok(deltas)
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        self.response(false)
    }
}
