//! Models for tests: a scripted [`TestModel`] and a closure-driven [`FunctionModel`].

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, JsonInput, Result};
use crate::message::{Messages, ToolCallPart};
use crate::model::{Model, ModelError, ModelRequest, ModelResponse};
use crate::tool::ToolDefinition;

/// A request as a provider would have received it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedRequest {
    /// The model-facing history.
    pub messages: Messages,
    /// The tool definitions.
    pub tools: Vec<ToolDefinition>,
    /// The instructions of the toolsets whose tools the request offers (sent with the
    /// agent's); left out of the JSON when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub toolset_instructions: Vec<Arc<str>>,
    /// The native output's definition, when the run asks for native output; left out of
    /// the JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<ToolDefinition>,
}

/// A model that plays back a script and records every request.
///
/// ```
/// use starweaver::testing::TestModel;
/// use starweaver::{ModelResponse, ToolCallPart};
/// use serde_json::json;
///
/// let model = TestModel::new([
///     TestModel::tool_call_response([ToolCallPart::new("call_add", "add", json!({"left": 2, "right": 3}))]),
///     ModelResponse::text("done"),
/// ]);
/// assert!(model.requests().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct TestModel {
    script: Vec<ModelResponse>,
    requests: Mutex<Vec<RecordedRequest>>,
}

impl TestModel {
    /// A model that answers with `responses`, one per request, in order.
    pub fn new(responses: impl IntoIterator<Item = ModelResponse>) -> Self {
        Self { script: responses.into_iter().collect(), requests: Mutex::default() }
    }

    /// A script from JSON: a list of items in any form [`ModelResponse::from_json`] reads.
    ///
    /// # Errors
    /// `InvalidJson` naming the item that does not fit.
    pub fn from_json(script: &Value) -> Result<Self> {
        let Value::Array(items) = script else {
            return Err(Error::InvalidJson {
                what: JsonInput::TestModelScript,
                message: format!("expected a list, got {script}"),
            });
        };
        let responses = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                ModelResponse::from_json(item.clone()).map_err(|e| Error::InvalidJson {
                    what: JsonInput::TestModelScript,
                    message: format!("response {i}: {e}"),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self::new(responses))
    }

    /// A response that calls the given tools.
    pub fn tool_call_response(calls: impl IntoIterator<Item = ToolCallPart>) -> ModelResponse {
        ModelResponse::tool_calls(calls)
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<RecordedRequest>> {
        self.requests.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Model for TestModel {
    /// Records the native output's definition with each request.
    fn native_output(&self) -> bool {
        true
    }

    fn request<'a>(&'a self, request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let mut requests = self.lock();
        let index = requests.len();
        requests.push(RecordedRequest {
            messages: request.messages.clone(),
            tools: request.tools.to_vec(),
            toolset_instructions: request.toolset_instructions.to_vec(),
            output: request.output.cloned(),
        });
        let answer = self.script.get(index).cloned().ok_or_else(|| {
            ModelError::new(format!(
                "TestModel script exhausted: request {} has no scripted response (the script has {})",
                index + 1,
                self.script.len()
            ))
        });
        futures::future::ready(answer).boxed()
    }
}

/// A model whose answers come from a closure (for tests and custom providers).
///
/// ```
/// use starweaver::testing::FunctionModel;
/// use starweaver::{ModelResponse, Message};
///
/// let model = FunctionModel::new(|request| {
///     Ok(ModelResponse::text(format!("{} messages", request.messages.len())))
/// });
/// # let _ = model;
/// ```
pub struct FunctionModel<F> {
    f: F,
}

impl<F> FunctionModel<F>
where
    F: Fn(ModelRequest<'_>) -> Result<ModelResponse, ModelError> + Send + Sync + 'static,
{
    /// A model that calls `f` for each request.
    pub fn new(f: F) -> Self {
        Self { f }
    }
}

impl<F> Model for FunctionModel<F>
where
    F: Fn(ModelRequest<'_>) -> Result<ModelResponse, ModelError> + Send + Sync + 'static,
{
    fn request<'a>(&'a self, request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        futures::future::ready((self.f)(request)).boxed()
    }

    /// The function sees the native output's definition in its request.
    fn native_output(&self) -> bool {
        true
    }
}
