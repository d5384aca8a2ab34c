//! Gemini (`POST {base}/v1beta/models/{model}:generateContent`, and
//! `:streamGenerateContent?alt=sse` when streamed).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::arguments::keep_wide_arguments;
use super::body::{instructions, tools};
use super::protocol::{Protocol, StreamState};
use super::settings::{Settings, ToolChoice};
use super::sse::SseEvent;
use super::wire::invalid;
use crate::message::{Message, RequestPart, ResponsePart, ToolCallPart};
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
    const SYSTEM: &'static str = "gcp.gemini";
    const KEY_ENV: &'static str = "GEMINI_API_KEY";
    const BASE_URL_ENV: Option<&'static str> = Some("GEMINI_BASE_URL");
    const DEFAULT_BASE_URL: &'static str = "https://generativelanguage.googleapis.com";
    const REQUEST_ID_HEADER: &'static str = "x-request-id";
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
        body.insert("contents".into(), Value::Array(contents(request)));
        let declarations = tools(request, Provider::Gemini)?;
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
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Value::Object(generation));
        }
        Ok(Value::Object(body))
    }

    fn parse(&self, body: Value, step: u32) -> Result<ModelResponse, ModelError> {
        let mut stream = GeminiStream { step, ..GeminiStream::default() };
        stream.chunk(&body)?;
        stream.response(true)
    }

    fn stream(&self, step: u32) -> GeminiStream {
        GeminiStream { step, ..GeminiStream::default() }
    }

    fn raw_arguments(&self, body: &str) -> Vec<Box<RawValue>> {
        #[derive(Deserialize)]
        struct Chunk {
            #[serde(default)]
            candidates: Vec<Candidate>,
        }
        #[derive(Deserialize)]
        struct Candidate {
            content: Option<Content>,
        }
        #[derive(Deserialize)]
        struct Content {
            #[serde(default)]
            parts: Vec<Part>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Part {
            function_call: Option<Call>,
        }
        #[derive(Deserialize)]
        struct Call {
            args: Option<Box<RawValue>>,
        }
        let chunk = serde_json::from_str::<Chunk>(body).ok();
        let parts = chunk.and_then(|c| c.candidates.into_iter().next()).and_then(|c| c.content);
        parts.into_iter().flat_map(|c| c.parts).filter_map(|p| p.function_call?.args).collect()
    }
}

fn contents(request: &ModelRequest<'_>) -> Vec<Value> {
    let mut out = Vec::new();
    for message in request.messages.iter() {
        let (role, parts): (&str, Vec<Value>) = match &**message {
            Message::Request { parts } => (
                "user",
                parts
                    .iter()
                    .filter_map(|part| match part {
                        RequestPart::SystemPrompt { .. } => None,
                        RequestPart::UserPrompt { text } => Some(json!({"text": text})),
                        RequestPart::ToolReturn(ret) => {
                            let response = match &ret.content {
                                Value::Object(_) if ret.is_error => json!({"error": ret.content}),
                                Value::Object(_) => ret.content.clone(),
                                other => json!({"result": other}),
                            };
                            let mut call = json!({"name": &*ret.name, "response": response});
                            if !ret.tool_call_id.starts_with(MADE_UP_ID) {
                                call["id"] = (&*ret.tool_call_id).into();
                            }
                            Some(json!({"functionResponse": call}))
                        }
                    })
                    .collect(),
            ),
            Message::Response { parts } => (
                "model",
                parts
                    .iter()
                    .map(|part| match part {
                        ResponsePart::Text { text } => json!({"text": text}),
                        ResponsePart::ToolCall(call) => {
                            let args = call.arguments.as_object().cloned().unwrap_or_default();
                            let mut function = json!({"name": &*call.name, "args": args});
                            if !call.id.starts_with(MADE_UP_ID) {
                                function["id"] = (&*call.id).into();
                            }
                            json!({"functionCall": function})
                        }
                    })
                    .collect(),
            ),
        };
        if !parts.is_empty() {
            out.push(json!({"role": role, "parts": parts}));
        }
    }
    out
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
    fn chunk(&mut self, chunk: &Value) -> Result<Vec<ModelDelta>, ModelError> {
        if let Some(reason) = chunk.pointer("/promptFeedback/blockReason").and_then(Value::as_str) {
            return Err(ModelError::of(ModelErrorKind::ContentFilter, format!("the prompt was blocked: {reason}")));
        }
        if let Some(model) = chunk.get("modelVersion").and_then(Value::as_str) {
            self.model = Some(model.to_owned());
        }
        if let Some(meta) = chunk.get("usageMetadata") {
            let n = |key: &str| meta.get(key).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(Usage {
                requests: 1,
                input_tokens: n("promptTokenCount"),
                output_tokens: n("candidatesTokenCount") + n("thoughtsTokenCount"),
                cached_tokens: n("cachedContentTokenCount"),
            });
        }
        let mut deltas = Vec::new();
        let Some(candidate) = chunk.pointer("/candidates/0") else { return Ok(deltas) };
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.finish = Some(reason.to_owned());
        }
        for part in candidate.pointer("/content/parts").and_then(Value::as_array).into_iter().flatten() {
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                match self.parts.last_mut() {
                    Some(ResponsePart::Text { text: last }) => last.push_str(text),
                    _ => self.parts.push(ResponsePart::Text { text: text.to_owned() }),
                }
                deltas.push(ModelDelta::Text { text: text.to_owned() });
            } else if let Some(call) = part.get("functionCall") {
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("{MADE_UP_ID}{}_{}", self.step, self.calls), str::to_owned);
                let args = call.get("args").cloned().unwrap_or_else(|| Value::Object(Map::new()));
                deltas.push(ModelDelta::ToolCall(ToolCallDelta {
                    index: self.calls,
                    tool_call_id: Some(id.clone()),
                    name: Some(name.to_owned()),
                    arguments: args.to_string(),
                }));
                self.parts.push(ResponsePart::ToolCall(ToolCallPart::new(id, name, args)));
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
        })
    }
}

impl StreamState for GeminiStream {
    fn event(&mut self, event: &SseEvent) -> Result<Vec<ModelDelta>, ModelError> {
        let chunk = crate::json::parse(&event.data).map_err(|e| invalid(format!("a stream chunk is not JSON: {e}")))?;
        if let Some(error) = chunk.get("error") {
            return Err(invalid(format!("the stream reported an error: {error}")));
        }
        let start = self.parts.len();
        let deltas = self.chunk(&chunk)?;
        let new_parts = self.parts.get_mut(start..).unwrap_or_default();
        keep_wide_arguments(new_parts, &event.data, |data| Gemini.raw_arguments(data));
        Ok(deltas)
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        self.response(false)
    }
}
