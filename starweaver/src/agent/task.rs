//! A run's model requests and tool calls as data ([`ModelTask`], [`CallTask`]) and how a
//! call ended ([`CallResult`]): what the machine asks a driver that runs them elsewhere for
//! (`starweaver::durable`), and what [`Agent::request_model`](crate::Agent::request_model)
//! and [`Agent::run_call`](crate::Agent::run_call) take and give. Each call task carries
//! its call's policy (timeout, retry budget), so an engine can enforce it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::EventKind;
use crate::hitl::ApprovalDecision;
use crate::message::ToolCallPart;
use crate::scheduler::CallOutcome;
use crate::tool::Answered;

/// One model request of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelTask {
    pub run_id: String,
    pub step: u32,
    /// The history so far, as canonical JSON.
    pub messages: Value,
}

/// One tool call of a run, with what it runs under.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallTask {
    /// Its position among the response's tool calls (report it back with this).
    pub index: usize,
    pub call: ToolCallPart,
    /// The decision that approved it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalDecision>,
    /// The user's answers to what it asked before it waited, in the order it asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered: Vec<Answered>,
    /// The model retries its tool has spent in the run so far.
    pub retry: u32,
    /// The tool's timeout, for the engine's own timeout on the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The tool's retry budget, for how often the engine may start the call again after
    /// its worker was lost.
    pub max_retries: u32,
}

/// How a call ended, with the events it emitted; opaque, but it serialises.
#[derive(Serialize, Deserialize)]
pub struct CallResult {
    pub(crate) outcome: CallOutcome,
    pub(crate) events: Vec<EventKind>,
}

impl std::fmt::Debug for CallResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallResult").field("events", &self.events).finish_non_exhaustive()
    }
}
