//! The `Model` trait: whatever answers a request with text or tool calls.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::message::{Messages, ResponsePart, ToolCallPart};
use crate::tool::ToolDefinition;

/// What a model is asked: the model-facing history and the tool definitions.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// The conversation so far (no host-only fields: the types cannot hold them). Clone
    /// it to keep it: that copies a pointer, not the conversation.
    pub messages: &'a Messages,
    /// The tools the model may call.
    pub tools: &'a [ToolDefinition],
    /// The run asking.
    pub run_id: &'a str,
    /// Model request number within the run, from 1.
    pub step: u32,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelResponse {
    /// Text and tool calls, in the model's order.
    pub parts: Vec<ResponsePart>,
}

impl ModelResponse {
    /// A final text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self { parts: vec![ResponsePart::Text { text: text.into() }] }
    }

    /// A response that calls tools.
    pub fn tool_calls(calls: impl IntoIterator<Item = ToolCallPart>) -> Self {
        Self { parts: calls.into_iter().map(ResponsePart::ToolCall).collect() }
    }

    /// Reads one scripted response: `{"text": ...}`, `{"tool_calls": [{"id", "name",
    /// "arguments"}]}`, or canonical `{"parts": [...]}` (with an optional `"kind": "response"`).
    ///
    /// # Errors
    /// `InvalidJson` saying what shape was expected and what came.
    pub fn from_json(json: &Value) -> Result<Self> {
        let invalid = |message: String| Error::InvalidJson { what: "model response", message };
        let Some(obj) = json.as_object() else {
            return Err(invalid(format!("expected an object, got {json}")));
        };
        let keys: Vec<&str> = obj.keys().map(String::as_str).filter(|k| *k != "kind").collect();
        match keys.as_slice() {
            ["text"] => match &obj["text"] {
                Value::String(text) => Ok(Self::text(text.clone())),
                other => Err(invalid(format!("`text` must be a string, got {other}"))),
            },
            ["tool_calls"] => {
                let calls: Vec<ToolCallPart> = serde_path_to_error::deserialize(&obj["tool_calls"])
                    .map_err(|e| invalid(format!("`tool_calls` at `{}`: {}", e.path(), e.inner())))?;
                Ok(Self::tool_calls(calls))
            }
            ["parts"] => serde_path_to_error::deserialize(&obj["parts"])
                .map(|parts| Self { parts })
                .map_err(|e| invalid(format!("`parts` at `{}`: {}", e.path(), e.inner()))),
            _ => Err(invalid(format!(
                "expected {{\"text\": ...}}, {{\"tool_calls\": [...]}} or {{\"parts\": [...]}}, got {json}"
            ))),
        }
    }
}

/// A model failed to answer (a provider error, a script that ran out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    message: String,
}

impl ModelError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ModelError {}

/// Something that answers model requests: a provider client, [`crate::testing::TestModel`],
/// or [`crate::testing::FunctionModel`].
pub trait Model: Send + Sync + 'static {
    /// Answers one request.
    fn request<'a>(&'a self, request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelResponse, ModelError>>;
}

impl<M: Model + ?Sized> Model for Arc<M> {
    fn request<'a>(&'a self, request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        (**self).request(request)
    }
}
