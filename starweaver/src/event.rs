//! Run events: every run records an ordered stream of them, and can hand
//! them out live.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use crate::hitl::{PendingApproval, PendingDeferred};
use crate::message::{Message, ToolReturnRecord};
use crate::model::{FinishReason, ModelDelta, ToolCallDelta, Usage};

/// One thing that happened in a run, numbered within the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// Position in the run's stream, from 0; continues across a resume.
    pub seq: u64,
    /// The run.
    pub run_id: Arc<str>,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Read back from the JSON it serialises to. A pending item carries its `run_id` as the
/// event does, so the event's own fields are read without taking them from its kind.
impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Head {
            seq: u64,
            run_id: Arc<str>,
        }
        let json = Value::deserialize(deserializer)?;
        let Head { seq, run_id } = Head::deserialize(&json).map_err(serde::de::Error::custom)?;
        let kind = EventKind::deserialize(json).map_err(serde::de::Error::custom)?;
        Ok(Self { seq, run_id, kind })
    }
}

/// What an [`Event`] reports. Serialised with a `type` tag in snake case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventKind {
    /// A run started from a prompt.
    RunStart {
        /// The user's prompt.
        prompt: String,
    },
    /// A waiting run resumed with decisions.
    RunResumed {
        /// Approval decisions received.
        approvals: usize,
        /// Deferred results received.
        deferred_results: usize,
    },
    /// The model is about to be asked.
    ModelRequest {
        /// Model request number within the run, from 1.
        step: u32,
        /// Messages in the history sent.
        messages: usize,
    },
    /// More of a streamed answer's text (streamed runs of models that stream only).
    TextDelta {
        /// Model request number within the run.
        step: u32,
        /// The new text.
        text: String,
    },
    /// More of a streamed answer's tool call: its id and name when they first arrive,
    /// then pieces of its JSON arguments (streamed runs of models that stream only).
    ToolCallDelta {
        /// Model request number within the run.
        step: u32,
        /// The piece, as the model sent it.
        #[serde(flatten)]
        delta: ToolCallDelta,
    },
    /// The model answered.
    ModelResponse {
        /// Model request number within the run.
        step: u32,
        /// What it answered (the message as the history holds it).
        message: Arc<Message>,
        /// Tokens the request used, when the model reports them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// Why the answer ended, when the model says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<FinishReason>,
    },
    /// A toolset left a tool out of the tools of `step` (an MCP server's tool with an
    /// invalid name or schema, say); its other tools are offered.
    ToolRefused {
        /// The step whose tools were listed.
        step: u32,
        /// The toolset.
        toolset: String,
        /// The tool's name, as its source gave it.
        tool: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A tool call starts. Its arguments are in the `model_response` event (or the
    /// pending approval) before it; only an approved override is repeated here.
    ToolCall {
        /// The model's call id.
        tool_call_id: Arc<str>,
        /// The tool.
        name: Arc<str>,
        /// The arguments an approval replaced the model's with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        override_arguments: Option<Value>,
    },
    /// An attempt failed with an `Execution` error and will be tried again.
    ToolRetry {
        /// The model's call id.
        tool_call_id: Arc<str>,
        /// The tool.
        name: Arc<str>,
        /// The attempt that failed, from 1.
        attempt: u32,
        /// Why it failed.
        error: String,
    },
    /// A call ended; host-only fields included.
    ToolReturn(ToolReturnRecord),
    /// A call waits for approval.
    ApprovalRequested(Box<PendingApproval>),
    /// A call waits for an outside result.
    DeferredRequested(Box<PendingDeferred>),
    /// The run suspended, waiting for decisions.
    Waiting {
        /// Pending approvals.
        approvals: usize,
        /// Pending deferred calls.
        deferred: usize,
    },
    /// The run finished with an answer.
    RunComplete {
        /// The answer.
        output: String,
    },
    /// The run failed.
    RunFailed {
        /// Why.
        error: String,
    },
    /// The run was cancelled.
    RunCancelled,
}

/// Collects a run's events in order and forwards each to a live listener, if any.
pub(crate) struct EventLog {
    run_id: Arc<str>,
    inner: Mutex<(u64, Vec<Event>)>,
    live: Option<UnboundedSender<Event>>,
}

impl EventLog {
    pub(crate) fn new(run_id: Arc<str>, next_seq: u64, live: Option<UnboundedSender<Event>>) -> Self {
        Self { run_id, inner: Mutex::new((next_seq, Vec::new())), live }
    }

    /// Emits `kinds` in order.
    pub(crate) fn emit_all(&self, kinds: impl IntoIterator<Item = EventKind>) {
        for kind in kinds {
            self.emit(kind);
        }
    }

    pub(crate) fn emit(&self, kind: EventKind) {
        let mut inner = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let event = Event { seq: inner.0, run_id: self.run_id.clone(), kind };
        inner.0 += 1;
        if let Some(live) = &self.live {
            // A listener that went away only stops listening; the run goes on.
            let _ = live.send(event.clone());
        }
        inner.1.push(event);
    }

    /// Whether someone is listening live (a streamed run): only then do models stream.
    pub(crate) fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// A streamed delta of step `step`'s answer, as an event.
    pub(crate) fn delta(&self, step: u32, delta: ModelDelta) {
        self.emit(match delta {
            ModelDelta::Text { text } => EventKind::TextDelta { step, text },
            ModelDelta::ToolCall(delta) => EventKind::ToolCallDelta { step, delta },
        });
    }

    /// The events so far and the next sequence number.
    /// The events so far.
    pub(crate) fn snapshot(&self) -> Vec<Event> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner).1.clone()
    }

    pub(crate) fn finish(self) -> (Vec<Event>, u64) {
        let (next, events) = self.inner.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        (events, next)
    }
}
