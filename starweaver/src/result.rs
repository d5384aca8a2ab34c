//! What a run returns.

use serde::{Deserialize, Serialize};

pub use crate::error::RunError;
use crate::event::Event;
use crate::hitl::Hitl;
use crate::message::History;
use crate::model::{FinishReason, Usage};
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
    /// The final answer, when completed.
    pub output: Option<String>,
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
