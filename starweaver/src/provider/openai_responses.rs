//! OpenAI Responses (`POST {base}/responses`), stateless (`store: false`): the whole
//! history is sent as input items each time.

use serde_json::{Map, Value, json};

use super::arguments::arguments;
use super::body::{text_of, tools};
use super::openai_chat::{sampling, tool_choice_value};
use super::protocol::{Protocol, StreamState};
use super::settings::Settings;
use super::sse::SseEvent;
use super::wire::invalid;
use crate::message::{Message, RequestPart, ResponsePart, ToolCallPart};
use crate::model::{
    FinishReason, ModelDelta, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ToolCallDelta, Usage,
};
use crate::render::Provider;

/// The Responses protocol; use it as [`OpenAIResponsesModel`](super::OpenAIResponsesModel).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAIResponses;

impl Protocol for OpenAIResponses {
    const PROVIDER: &'static str = "openai";
    const SYSTEM: &'static str = "openai";
    const KEY_ENV: &'static str = "OPENAI_API_KEY";
    const BASE_URL_ENV: Option<&'static str> = Some("OPENAI_BASE_URL");
    const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";
    const REQUEST_ID_HEADER: &'static str = "x-request-id";
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
        body.insert("input".into(), Value::Array(input(request)));
        body.insert("store".into(), false.into());
        let tools = tools(request, Provider::OpenAiResponses)?;
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
        sampling(&mut body, settings, "max_output_tokens");
        // The Responses API takes no seed.
        body.remove("seed");
        if stream {
            body.insert("stream".into(), true.into());
        }
        Ok(Value::Object(body))
    }

    fn parse(&self, body: Value, _step: u32) -> Result<ModelResponse, ModelError> {
        let cut_off = match body.get("status").and_then(Value::as_str) {
            None | Some("completed") => false,
            Some("incomplete") => {
                let reason = body.pointer("/incomplete_details/reason").and_then(Value::as_str).unwrap_or_default();
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
                return Err(invalid(format!("the response failed: {}", body.get("error").unwrap_or(&Value::Null))));
            }
            Some(other) => {
                return Err(ModelError::of(ModelErrorKind::UnknownFinishReason, format!("unknown status `{other}`")));
            }
        };
        let output = body.get("output").and_then(Value::as_array).ok_or_else(|| invalid("no `output`"))?;
        let mut parts = Vec::new();
        for item in output {
            match item.get("type").and_then(Value::as_str) {
                Some("message") => {
                    for content in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                        let text = |key: &str| content.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
                        match content.get("type").and_then(Value::as_str) {
                            Some("output_text") => parts.push(ResponsePart::Text { text: text("text") }),
                            Some("refusal") => {
                                return Err(ModelError::of(
                                    ModelErrorKind::Refusal,
                                    format!("the model refused: {}", text("refusal")),
                                ));
                            }
                            _ => {}
                        }
                    }
                }
                Some("function_call") => {
                    let field = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
                    parts.push(ResponsePart::ToolCall(ToolCallPart::new(
                        field("call_id"),
                        field("name"),
                        arguments(field("arguments")),
                    )));
                }
                // Reasoning summaries and other items do not enter the conversation.
                _ => {}
            }
        }
        Ok(ModelResponse {
            finish_reason: Some(FinishReason::of(&parts, cut_off)),
            parts,
            usage: body.get("usage").map(usage),
            model_name: body.get("model").and_then(Value::as_str).map(str::to_owned),
        })
    }

    fn stream(&self, _step: u32) -> ResponsesStream {
        ResponsesStream::default()
    }
}

fn input(request: &ModelRequest<'_>) -> Vec<Value> {
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
                            "output": text_of(&ret.content),
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
                    });
                }
            }
        }
    }
    out
}

fn usage(usage: &Value) -> Usage {
    let n = |path: &str| usage.pointer(path).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        requests: 1,
        input_tokens: n("/input_tokens"),
        output_tokens: n("/output_tokens"),
        cached_tokens: n("/input_tokens_details/cached_tokens"),
    }
}

/// A streamed response: deltas from the delta events, the final message from
/// `response.completed`'s full response, so it equals the unstreamed one exactly.
#[derive(Debug, Default)]
pub struct ResponsesStream {
    /// Output indexes of function calls, in the order they were announced.
    calls: Vec<u64>,
    last: Option<Value>,
}

impl StreamState for ResponsesStream {
    fn event(&mut self, event: &SseEvent) -> Result<Vec<ModelDelta>, ModelError> {
        let data = crate::json::parse(&event.data).map_err(|e| invalid(format!("a stream event is not JSON: {e}")))?;
        let kind = data.get("type").and_then(Value::as_str).unwrap_or(event.event.as_str());
        let text = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let output_index = data.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        Ok(match kind {
            "response.output_text.delta" => vec![ModelDelta::Text { text: text("delta") }],
            "response.output_item.added"
                if data.pointer("/item/type").and_then(Value::as_str) == Some("function_call") =>
            {
                self.calls.push(output_index);
                let item = |key: &str| data.pointer(&format!("/item/{key}")).and_then(Value::as_str).map(str::to_owned);
                vec![ModelDelta::ToolCall(ToolCallDelta {
                    index: self.calls.len() - 1,
                    tool_call_id: item("call_id"),
                    name: item("name"),
                    arguments: String::new(),
                })]
            }
            "response.function_call_arguments.delta" => {
                let index = self.calls.iter().position(|i| *i == output_index).unwrap_or(self.calls.len());
                vec![ModelDelta::ToolCall(ToolCallDelta::arguments(index, text("delta")))]
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.last = data.get("response").cloned();
                Vec::new()
            }
            "error" => return Err(invalid(format!("the stream reported an error: {}", event.data))),
            _ => Vec::new(),
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
