//! Run events: every run records an ordered stream of them, and can hand
//! them out live.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use crate::hitl::{PendingApproval, PendingDeferred, PendingElicitation};
use crate::message::{Message, ToolReturnRecord};
use crate::model::{FinishReason, ModelDelta, ToolCallDelta, Usage};
use crate::tool::{LogLevel, LogMessage, Progress, ToolContext};

/// Counts of a new kind of pending item are left out when zero, so events of runs without
/// any keep the form they always had.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl EventKind {
    /// The `tool_progress` event of the call `call` runs.
    pub fn progress(call: &ToolContext, progress: &Progress) -> Self {
        let Progress { progress, total, message } = progress.clone();
        let (tool_call_id, name) = (call.tool_call_id.clone(), call.tool_name.clone());
        Self::ToolProgress { tool_call_id, name, progress, total, message }
    }

    /// The `tool_log` event of the call `call` runs.
    pub fn log(call: &ToolContext, log: &LogMessage) -> Self {
        let LogMessage { level, message, data } = log.clone();
        let (tool_call_id, name) = (call.tool_call_id.clone(), call.tool_name.clone());
        Self::ToolLog { tool_call_id, name, level, message, data: data.map(Box::new) }
    }
}

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
        /// Answers to elicitations received (absent when none).
        #[serde(default, skip_serializing_if = "is_zero")]
        elicitations: usize,
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
    /// Deferred tools were loaded: their definitions are sent from the next model request
    /// on, after the tools loaded before them.
    ToolsLoaded {
        /// The tools loaded, in load order.
        names: Vec<String>,
        /// The `search_tools` query that found them; `None` when the model called a
        /// deferred tool by name.
        query: Option<String>,
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
        override_arguments: Option<Box<Value>>,
        /// The arguments the call runs with, when a hook rewrote them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<Box<Value>>,
        /// The (last) hook that rewrote the arguments.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rewritten_by: Option<Arc<str>>,
        /// The hook that answered in the tool's place (the tool did not run).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answered_by: Option<Arc<str>>,
        /// The concurrency limits that were full when the call came, so it waited for a
        /// place under them before it started (a shared limit's name, or `tool:<name>`,
        /// `toolset:<name>`, `run`).
        #[serde(default, skip_serializing_if = "<[_]>::is_empty")]
        queued_for: Box<[Arc<str>]>,
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
    /// A running call reported progress (`ctx.report_progress`). Host-facing: never in a
    /// model request. The kept event log holds only the last of each call; a live stream
    /// gets every one.
    ToolProgress {
        /// The model's call id.
        tool_call_id: Arc<str>,
        /// The tool.
        name: Arc<str>,
        /// The progress so far.
        progress: f64,
        /// What it counts up to, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// What the call is doing now.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A running call logged a message (`ctx.log`). Host-facing: never in a model request.
    ToolLog {
        /// The model's call id.
        tool_call_id: Arc<str>,
        /// The tool.
        name: Arc<str>,
        /// How severe it is.
        level: LogLevel,
        /// What happened.
        message: String,
        /// Details, as JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Box<Value>>,
    },
    /// A call ended; host-only fields included.
    ToolReturn(ToolReturnRecord),
    /// A call waits for approval.
    ApprovalRequested(Box<PendingApproval>),
    /// A call waits for an outside result.
    DeferredRequested(Box<PendingDeferred>),
    /// A call waits for the user's answer to its question.
    ElicitationRequested(Box<PendingElicitation>),
    /// The run suspended, waiting for decisions.
    Waiting {
        /// Pending approvals.
        approvals: usize,
        /// Pending deferred calls.
        deferred: usize,
        /// Pending elicitations (absent when none).
        #[serde(default, skip_serializing_if = "is_zero")]
        elicitations: usize,
    },
    /// The run finished with an answer.
    RunComplete {
        /// The answer: the text, or the value an output tool's call gave.
        output: Value,
        /// The output tool whose call gave it; absent for text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_tool: Option<Arc<str>>,
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
///
/// A chatty tool cannot grow the kept log without bound: of each call's `tool_progress`
/// events only the last is kept (at its own place in the order); the live listener gets
/// every one.
pub(crate) struct EventLog {
    run_id: Arc<str>,
    live: bool,
    inner: Mutex<Kept>,
}

/// What the log holds. Once finished, it takes no more events: a tool that kept its
/// context past its call cannot write into a run that has ended, nor keep its stream open.
struct Kept {
    next_seq: u64,
    events: Vec<Event>,
    /// The last progress event of each call, by call id; merged into `events` by `seq`.
    progress: HashMap<Arc<str>, Event>,
    live: Option<UnboundedSender<Event>>,
    finished: bool,
}

impl EventLog {
    pub(crate) fn new(run_id: Arc<str>, next_seq: u64, live: Option<UnboundedSender<Event>>) -> Self {
        let is_live = live.is_some();
        let kept = Kept { next_seq, events: Vec::new(), progress: HashMap::new(), live, finished: false };
        Self { run_id, live: is_live, inner: Mutex::new(kept) }
    }

    /// Emits `kinds` in order.
    pub(crate) fn emit_all(&self, kinds: impl IntoIterator<Item = EventKind>) {
        for kind in kinds {
            self.emit(kind);
        }
    }

    /// Makes room for `additional` more events, so a batch of calls does not regrow the log
    /// (moving every event kept so far) as it runs.
    pub(crate) fn reserve(&self, additional: usize) {
        self.kept().events.reserve(additional);
    }

    pub(crate) fn emit(&self, kind: EventKind) {
        let mut kept = self.kept();
        if kept.finished {
            return;
        }
        let event = Event { seq: kept.next_seq, run_id: self.run_id.clone(), kind };
        kept.next_seq += 1;
        if let Some(live) = &kept.live {
            // A listener that went away only stops listening; the run goes on.
            let _ = live.send(event.clone());
        }
        match &event.kind {
            EventKind::ToolProgress { tool_call_id, .. } => {
                let id = tool_call_id.clone();
                kept.progress.insert(id, event);
            }
            _ => kept.events.push(event),
        }
    }

    /// Whether someone is listening live (a streamed run): only then do models stream.
    pub(crate) fn is_live(&self) -> bool {
        self.live
    }

    /// A streamed delta of step `step`'s answer, as an event.
    pub(crate) fn delta(&self, step: u32, delta: ModelDelta) {
        self.emit(match delta {
            ModelDelta::Text { text } => EventKind::TextDelta { step, text },
            ModelDelta::ToolCall(delta) => EventKind::ToolCallDelta { step, delta },
        });
    }

    /// The events so far.
    pub(crate) fn snapshot(&self) -> Vec<Event> {
        let kept = self.kept();
        in_order(kept.events.clone(), kept.progress.values().cloned())
    }

    /// The run's events and the next sequence number. The log takes no more events, and
    /// the live listener's stream ends after the last.
    pub(crate) fn finish(&self) -> (Vec<Event>, u64) {
        let mut kept = self.kept();
        kept.finished = true;
        kept.live = None;
        let events = std::mem::take(&mut kept.events);
        let progress = std::mem::take(&mut kept.progress);
        (in_order(events, progress.into_values()), kept.next_seq)
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `events` (in `seq` order) with the kept progress events put back where they belong.
fn in_order(mut events: Vec<Event>, progress: impl Iterator<Item = Event>) -> Vec<Event> {
    let before = events.len();
    events.extend(progress);
    if events.len() > before {
        events.sort_by_key(|event| event.seq);
    }
    events
}
