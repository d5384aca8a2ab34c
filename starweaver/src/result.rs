//! What a run returns.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

use crate::event::Event;
use crate::hitl::Hitl;
use crate::message::History;
use crate::model::{FinishReason, ModelError, Usage};
use crate::trace::Trace;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model gave a final answer.
    Completed,
    /// The run waits for approvals or deferred results; resume it through its session.
    Waiting,
    /// The run failed; see [`RunResult::error`].
    Failed,
    /// The run was cancelled.
    Cancelled,
}

impl RunStatus {
    /// `"completed"`, `"waiting"`, `"failed"` or `"cancelled"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Waiting => "waiting",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// The outcome of a run (or of a resume).
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The run's id.
    pub run_id: String,
    /// How it ended.
    pub status: RunStatus,
    /// The final answer, when completed: the text as a JSON string, or the value an output
    /// tool's call gave (see [`output_as`](Self::output_as)).
    pub output: Option<Value>,
    /// The output tool whose call gave `output` (`final_result`, say); `None` for text.
    pub output_tool: Option<String>,
    /// Why it failed, when failed.
    pub error: Option<RunError>,
    /// What it waits for, when waiting.
    pub hitl: Hitl,
    /// The session's full history, host-only fields included.
    pub messages: History,
    /// This run's events (since its start or its resume), in order.
    pub events: Vec<Event>,
    /// This run's spans (since its start or its resume), with durations.
    pub trace: Trace,
    /// Tokens this run's model requests used (since its start or its resume).
    pub usage: Usage,
    /// Why the run's last answer ended, when the model said: `Length` means the answer
    /// reached the token limit and may be cut off, though the run completed.
    pub finish_reason: Option<FinishReason>,
}

impl RunResult {
    /// The answer's text, when the run completed with text.
    pub fn text(&self) -> Option<&str> {
        self.output.as_ref().and_then(Value::as_str)
    }

    /// The output as the type the agent asked for
    /// ([`AgentBuilder::output_type`](crate::AgentBuilder::output_type)).
    ///
    /// # Errors
    /// `InvalidJson` when the run has no output (it did not complete) or the output is
    /// not a `T`.
    pub fn output_as<T: DeserializeOwned>(&self) -> crate::Result<T> {
        let invalid = |message: String| crate::Error::InvalidJson { what: crate::JsonInput::Output, message };
        let output = self
            .output
            .as_ref()
            .ok_or_else(|| invalid(format!("the run is {}, with no output", self.status.as_str())))?;
        T::deserialize(output).map_err(|error| invalid(error.to_string()))
    }
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunError {
    /// The model could not answer.
    #[error("model request failed: {message}")]
    Model {
        /// The model's error, as a sentence.
        message: String,
        /// What went wrong, with the provider, status and request id when there were any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<Box<ModelError>>,
    },
    /// A tool spent its model-retry budget.
    #[error("tool `{tool}` exceeded its retry budget of {max_retries}; last error: {message}")]
    RetriesExhausted {
        /// The tool.
        tool: String,
        /// Its budget.
        max_retries: u32,
        /// The last error the model was shown.
        message: String,
    },
    /// The run made more model requests than the agent allows.
    #[error("the run reached its limit of {max_steps} model requests without a final answer")]
    StepLimit {
        /// The limit.
        max_steps: u32,
    },
    /// A step's tools could not be put together: a dynamic toolset failed to list them, or
    /// gave a name another source has.
    #[error("{message}")]
    Tools {
        /// What went wrong, naming the toolsets.
        message: String,
    },
    /// The model's output failed validation more often than the output's retries allow.
    #[error("the output was still invalid after {max_retries} correction(s); last error: {message}")]
    OutputValidation {
        /// The output's retries.
        max_retries: u32,
        /// The last error the model was shown.
        message: String,
    },
    /// The model answered with neither text nor tool calls.
    #[error("the model returned an empty response (no text and no tool calls)")]
    EmptyResponse,
    /// Going on would pass one of the run's usage limits ([`UsageLimits`](crate::UsageLimits)):
    /// nothing past it started.
    #[error("the run reached its usage limit of {max} {limit} ({count} used); nothing past it started")]
    UsageLimitExceeded {
        /// Which limit: `requests`, `tool_calls`, `input_tokens`, `output_tokens` or
        /// `total_tokens`.
        limit: String,
        /// The limit.
        max: u64,
        /// What the run had used when it stopped.
        count: u64,
    },
}

impl RunError {
    /// A failed model request.
    pub fn model(error: ModelError) -> Self {
        Self::Model { message: error.to_string(), error: Some(Box::new(error)) }
    }
}
