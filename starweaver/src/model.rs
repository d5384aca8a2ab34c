//! The `Model` trait: whatever answers a request with text or tool calls.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, JsonInput, Result};
use crate::message::{Messages, ResponsePart, ToolCallPart};
use crate::render::Provider;
use crate::tool::ToolDefinition;

/// What a model is asked: the model-facing history and the tool definitions.
#[derive(Clone, Copy)]
pub struct ModelRequest<'a> {
    /// The conversation so far (no host-only fields: the types cannot hold them). Clone
    /// it to keep it: that copies a pointer, not the conversation.
    pub messages: &'a Messages,
    /// The tools the model may call.
    pub tools: &'a [ToolDefinition],
    /// The deferred tools the provider's own search may load, when the agent asks for
    /// native tool search ([`ToolSearch::Native`](crate::search::ToolSearch::Native)): sent
    /// after `tools`, marked deferred, with the provider's search tool. Empty otherwise, and
    /// always for a model without [`Model::native_tool_search`].
    pub deferred: &'a [ToolDefinition],
    /// The output's definition when the run asks for native output: the provider's
    /// JSON-schema response format with its `parameters` as the schema (see
    /// [`Model::native_output`]).
    pub output: Option<&'a ToolDefinition>,
    /// The instructions of the toolsets whose tools this request offers, each once: a
    /// provider sends them with the agent's instructions (the system prompt). They are not
    /// part of the history, since the tools offered may change from step to step.
    pub toolset_instructions: &'a [Arc<str>],
    /// The run asking.
    pub run_id: &'a str,
    /// Model request number within the run, from 1.
    pub step: u32,
    /// Set when the run is streamed (`run_stream`): a model that can stream sends its text
    /// and tool-call argument deltas here as they arrive. The response it returns is still
    /// the whole message, exactly what the same answer gives unstreamed.
    pub deltas: Option<&'a (dyn Fn(ModelDelta) + Send + Sync)>,
}

impl fmt::Debug for ModelRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelRequest")
            .field("messages", &self.messages.len())
            .field("tools", &self.tools.len())
            .field("deferred", &self.deferred.len())
            .field("toolset_instructions", &self.toolset_instructions.len())
            .field("run_id", &self.run_id)
            .field("step", &self.step)
            .field("streamed", &self.deltas.is_some())
            .finish()
    }
}

/// A piece of a streamed answer, as it arrives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelDelta {
    /// More text.
    Text {
        /// The new text.
        text: String,
    },
    /// More of a tool call.
    ToolCall(ToolCallDelta),
}

/// A piece of a streamed tool call: its id and name when they first arrive, then pieces
/// of its JSON argument text. Models send it; run events carry it as it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallDelta {
    /// The call's position among the response's calls, from 0.
    pub index: usize,
    /// The model's id for the call, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The tool, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// More of the JSON argument text.
    pub arguments: String,
}

impl ToolCallDelta {
    /// More argument text for call `index`.
    pub fn arguments(index: usize, arguments: impl Into<String>) -> Self {
        Self { index, tool_call_id: None, name: None, arguments: arguments.into() }
    }
}

/// Tokens one model request (or a whole run) used; a count left out of its JSON is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Model requests counted.
    pub requests: u64,
    /// Tokens sent (cached ones included).
    pub input_tokens: u64,
    /// Tokens generated.
    pub output_tokens: u64,
    /// Input tokens served from the provider's cache.
    pub cached_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.requests += other.requests;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_tokens += other.cached_tokens;
    }
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelResponse {
    /// Text and tool calls, in the model's order.
    pub parts: Vec<ResponsePart>,
    /// Tokens the request used, when the model reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The model that answered, as the provider names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// Why the answer ended, when the model says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
    /// What the provider's own tool search loaded while answering (native tool search),
    /// one entry per search that found tools; the search itself is among `parts` as
    /// [`ResponsePart::ProviderItem`]s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded: Vec<LoadedTools>,
}

/// The tools one search of the provider's own loaded (native tool search).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LoadedTools {
    /// The tools' names, as the provider gave them.
    pub names: Vec<String>,
    /// What the model searched for, when the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

/// Why a model's answer ended: each provider's reasons, read the same way.
///
/// ```
/// use starweaver::{FinishReason, ModelResponse};
///
/// let answer = ModelResponse::text("2 + 3 =");
/// assert_eq!(FinishReason::of(&answer.parts, true), FinishReason::Length);
/// assert_eq!(FinishReason::of(&answer.parts, false), FinishReason::Stop);
/// assert_eq!(serde_json::to_value(FinishReason::ToolCalls).unwrap(), "tool_calls");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The answer is complete.
    Stop,
    /// The model stopped to have tools called.
    ToolCalls,
    /// The answer reached the token limit (`max_tokens`) and may be cut off. A tool call
    /// being written then is answered with an `invalid_arguments` return instead of run.
    Length,
}

impl FinishReason {
    /// How an answer of `parts` ended, given whether the token limit cut it.
    pub fn of(parts: &[ResponsePart], cut_off: bool) -> Self {
        if cut_off {
            Self::Length
        } else if parts.iter().any(|part| matches!(part, ResponsePart::ToolCall(_))) {
            Self::ToolCalls
        } else {
            Self::Stop
        }
    }

    /// As canonical JSON names it (`"stop"`, `"tool_calls"`, `"length"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::ToolCalls => "tool_calls",
            Self::Length => "length",
        }
    }
}

impl ModelResponse {
    /// A final text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self::from_parts(vec![ResponsePart::Text { text: text.into() }])
    }

    /// A response that calls tools.
    pub fn tool_calls(calls: impl IntoIterator<Item = ToolCallPart>) -> Self {
        Self::from_parts(calls.into_iter().map(ResponsePart::ToolCall).collect())
    }

    /// A response of these parts, with no usage reported.
    pub fn from_parts(parts: Vec<ResponsePart>) -> Self {
        Self { parts, usage: None, model_name: None, finish_reason: None, loaded: Vec::new() }
    }

    /// Reads one scripted response: `{"text": ...}`, `{"tool_calls": [{"id", "name",
    /// "arguments"}]}`, or canonical `{"parts": [...]}` (with an optional `"kind": "response"`),
    /// each with an optional `"finish_reason"` (`"stop"`, `"tool_calls"` or `"length"`) and
    /// `"usage"` (`{"requests", "input_tokens", "output_tokens", "cached_tokens"}`, each
    /// optional), as a provider would report them.
    ///
    /// Taken by value: each call's arguments are moved into the response, not copied.
    ///
    /// # Errors
    /// `InvalidJson` saying what shape was expected and what came.
    pub fn from_json(mut json: Value) -> Result<Self> {
        let invalid = |message: String| Error::InvalidJson { what: JsonInput::ModelResponse, message };
        // Moved out only when nothing else could be wrong with the shape, so an error below
        // still shows the response as it came.
        let moved = json
            .as_object_mut()
            .filter(|obj| obj.keys().all(|k| k == "tool_calls" || ANNOTATIONS.contains(&k.as_str())))
            .and_then(|obj| obj.get_mut("tool_calls"))
            .and_then(moved_calls);
        let Some(obj) = json.as_object() else {
            return Err(invalid(format!("expected an object, got {json}")));
        };
        let finish_reason = obj
            .get("finish_reason")
            .map(|reason| serde_json::from_value::<FinishReason>(reason.clone()))
            .transpose()
            .map_err(|e| invalid(format!("`finish_reason`: {e}")))?;
        let usage = obj
            .get("usage")
            .map(|usage| serde_json::from_value::<Usage>(usage.clone()))
            .transpose()
            .map_err(|e| invalid(format!("`usage`: {e}")))?;
        let keys: Vec<&str> = obj.keys().map(String::as_str).filter(|k| !ANNOTATIONS.contains(k)).collect();
        let response = match keys.as_slice() {
            ["text"] => match &obj["text"] {
                Value::String(text) => Ok(Self::text(text.clone())),
                other => Err(invalid(format!("`text` must be a string, got {other}"))),
            },
            ["tool_calls"] => match moved {
                Some(calls) => Ok(Self::tool_calls(calls)),
                None => crate::json::decode::<Vec<ToolCallPart>>(&obj["tool_calls"])
                    .map(Self::tool_calls)
                    .map_err(|e| invalid(format!("`tool_calls` at `{}`: {}", e.path(), e.inner()))),
            },
            ["parts"] => crate::json::decode(&obj["parts"])
                .map(Self::from_parts)
                .map_err(|e| invalid(format!("`parts` at `{}`: {}", e.path(), e.inner()))),
            _ => Err(invalid(format!(
                "expected {{\"text\": ...}}, {{\"tool_calls\": [...]}} or {{\"parts\": [...]}}, got {json}"
            ))),
        };
        response.map(|response| Self { usage, finish_reason, ..response })
    }
}

/// The keys a scripted response may carry beside its `text`, `tool_calls` or `parts`.
const ANNOTATIONS: [&str; 3] = ["kind", "finish_reason", "usage"];

/// The calls of a `tool_calls` list, each moved out of its object, when every one is
/// exactly `{"id": <string>, "name": <string>, "arguments": ...}`; else `None` and the list
/// is left as it was, for the decoder to say what is wrong. Decoding a call from a
/// borrowed value would copy its arguments, key by key.
fn moved_calls(calls: &mut Value) -> Option<Vec<ToolCallPart>> {
    let calls = calls.as_array_mut()?;
    let names = calls
        .iter()
        .map(|call| {
            let call = call.as_object().filter(|call| call.len() == 3 && call.contains_key("arguments"))?;
            Some((Arc::from(call.get("id")?.as_str()?), Arc::from(call.get("name")?.as_str()?)))
        })
        .collect::<Option<Vec<(Arc<str>, Arc<str>)>>>()?;
    let moved = calls.iter_mut().zip(names).map(|(call, (id, name))| ToolCallPart {
        id,
        name,
        arguments: call.get_mut("arguments").map(Value::take).unwrap_or_default(),
    });
    Some(moved.collect())
}

/// A model failed to answer: a provider error, a script that ran out, a callback that
/// raised. Provider failures say which provider, the HTTP status, the provider's request
/// id and an excerpt of the body (never a credential).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelError {
    /// What went wrong.
    pub kind: ModelErrorKind,
    /// A sentence saying so.
    pub message: String,
    /// The provider (`openai`, `anthropic`, `gemini`, ...), for provider failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The HTTP status, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The provider's id for the request, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The start of the response body, when it helps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// The kinds of [`ModelError`]; each is its own exception class in Python.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// Anything else: a script that ran out, a callback that raised.
    Other,
    /// The API key is not set (the message names the environment variable).
    MissingApiKey,
    /// No connection (refused, reset, DNS), after any retries.
    Connection,
    /// A connect, read or total timeout, after any retries.
    Timeout,
    /// An HTTP error status: not retryable (400, 401, 403, 404, ...) or retries exhausted.
    Http,
    /// A 429 for an exhausted quota or billing limit: never retried.
    QuotaExhausted,
    /// The model refused to answer.
    Refusal,
    /// The provider's content filter stopped the answer.
    ContentFilter,
    /// The answer ended for a reason this client does not know.
    UnknownFinishReason,
    /// The body is not what the protocol says it is.
    InvalidResponse,
    /// A stream ended early after some of it was already given to the run.
    StreamInterrupted,
}

impl ModelError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self::of(ModelErrorKind::Other, message)
    }

    /// A failure of `kind` with this message.
    pub fn of(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), provider: None, status: None, request_id: None, body: None }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(provider) = &self.provider {
            write!(f, "{provider}: ")?;
        }
        f.write_str(&self.message)?;
        let mut context = Vec::new();
        if let Some(status) = self.status {
            context.push(format!("status {status}"));
        }
        if let Some(id) = &self.request_id {
            context.push(format!("request id {id}"));
        }
        if !context.is_empty() {
            write!(f, " ({})", context.join(", "))?;
        }
        if let Some(body) = &self.body {
            write!(f, ": {body}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ModelError {}

/// Something that answers model requests: a provider client, [`crate::testing::TestModel`],
/// or [`crate::testing::FunctionModel`].
pub trait Model: Send + Sync + 'static {
    /// Answers one request.
    fn request<'a>(&'a self, request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelResponse, ModelError>>;

    /// The provider, as OpenTelemetry's `gen_ai.system` names it (`openai`, `anthropic`,
    /// `gcp.gemini`), for models that call one.
    fn system(&self) -> Option<&str> {
        None
    }

    /// Whether the model takes [`ModelRequest::output`]: a JSON-schema response format its
    /// answer's text then follows.
    fn native_output(&self) -> bool {
        false
    }

    /// Whether the model's provider searches deferred tools itself: it takes
    /// [`ModelRequest::deferred`], replays its search's [`ResponsePart::ProviderItem`]s, and
    /// reports what the search loaded in [`ModelResponse::loaded`].
    fn native_tool_search(&self) -> bool {
        false
    }

    /// The wire protocol the model speaks, for models that call a provider.
    fn protocol(&self) -> Option<Provider> {
        None
    }

    /// The model asked for (`gen_ai.request.model`), for models that name one.
    fn model_name(&self) -> Option<&str> {
        None
    }
}

impl<M: Model + ?Sized> Model for Arc<M> {
    fn request<'a>(&'a self, request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        (**self).request(request)
    }

    fn system(&self) -> Option<&str> {
        (**self).system()
    }

    fn native_output(&self) -> bool {
        (**self).native_output()
    }

    fn native_tool_search(&self) -> bool {
        (**self).native_tool_search()
    }

    fn protocol(&self) -> Option<Provider> {
        (**self).protocol()
    }

    fn model_name(&self) -> Option<&str> {
        (**self).model_name()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn scripted_tool_calls_read_the_same_whether_moved_or_decoded() {
        let calls = json!([{"id": "c1", "name": "add", "arguments": {"a": 1, "b": [2, {"c": null}]}},
                           {"id": "c2", "name": "add", "arguments": "{\"a\": 1}"}]);
        let moved = ModelResponse::from_json(json!({"tool_calls": calls, "finish_reason": "tool_calls"})).unwrap();
        let decoded = crate::json::decode::<Vec<ToolCallPart>>(&calls).unwrap();
        assert_eq!(moved.parts, decoded.into_iter().map(ResponsePart::ToolCall).collect::<Vec<_>>());
        assert_eq!(moved.finish_reason, Some(FinishReason::ToolCalls));
    }

    #[test]
    fn a_call_that_is_not_plain_is_named_by_the_decoder_and_shown_as_it_came() {
        let extra = ModelResponse::from_json(json!({"tool_calls": [
            {"id": "c1", "name": "add", "arguments": {}},
            {"id": "c2", "name": "add", "arguments": {}, "extra": 1},
        ]}))
        .unwrap_err()
        .to_string();
        assert!(extra.contains("`tool_calls` at `[1].extra`: unknown field `extra`"), "{extra}");
        let numeric_id = ModelResponse::from_json(json!({"tool_calls": [{"id": 7, "name": "add", "arguments": {}}]}))
            .unwrap_err()
            .to_string();
        assert!(numeric_id.contains("`tool_calls` at `[0].id`"), "{numeric_id}");
        let mixed = ModelResponse::from_json(
            json!({"text": "hi", "tool_calls": [{"id": "c1", "name": "add", "arguments": {}}]}),
        )
        .unwrap_err()
        .to_string();
        assert!(mixed.contains("\"id\":\"c1\""), "the response as it came: {mixed}");
    }
}
