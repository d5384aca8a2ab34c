//! Where a call's progress and log messages go when the runtime runs it: the run's
//! events, the call's span in the trace, and whatever else the caller listens with (an
//! MCP client's notifications, an engine's heartbeats), while the call runs; and who
//! answers what it asks.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::event::{EventKind, EventLog};
use crate::tool::{
    CallChannel, ElicitAnswer, Elicitation, LogMessage, Progress, Sampled, Sampling, ToolContext, ToolError,
};
use crate::trace::{LOG, PROGRESS, Tracer};

/// One run's channel, shared by all its calls.
pub(crate) struct RunChannel {
    pub events: Arc<EventLog>,
    pub trace: Arc<Tracer>,
    /// Told every report too, after the run has recorded it.
    pub also: Option<Arc<dyn CallChannel>>,
    /// Answers what the calls ask (the user, a model).
    pub answers: Arc<dyn CallChannel>,
}

impl CallChannel for RunChannel {
    fn progress(&self, call: &ToolContext, progress: &Progress) {
        let mut attributes = Map::new();
        attributes.insert("progress".into(), progress.progress.into());
        if let Some(total) = progress.total {
            attributes.insert("total".into(), total.into());
        }
        if let Some(message) = &progress.message {
            attributes.insert("message".into(), message.as_str().into());
        }
        if !self.trace.call_event(&call.tool_call_id, PROGRESS, attributes) {
            return;
        }
        self.events.emit(EventKind::progress(call, progress));
        if let Some(also) = &self.also {
            also.progress(call, progress);
        }
    }

    fn log(&self, call: &ToolContext, log: &LogMessage) {
        let mut attributes = Map::new();
        attributes.insert("level".into(), log.level.as_str().into());
        attributes.insert("message".into(), log.message.as_str().into());
        if let Some(data) = &log.data {
            // OpenTelemetry attributes are scalars: the data goes as JSON text.
            attributes.insert("data".into(), Value::String(data.to_string()));
        }
        if !self.trace.call_event(&call.tool_call_id, LOG, attributes) {
            return;
        }
        self.events.emit(EventKind::log(call, log));
        if let Some(also) = &self.also {
            also.log(call, log);
        }
    }

    fn elicit<'a>(
        &'a self,
        call: &'a ToolContext,
        request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitAnswer, ToolError>> {
        self.answers.elicit(call, request)
    }

    fn sample<'a>(&'a self, call: &'a ToolContext, request: &'a Sampling) -> BoxFuture<'a, Result<Sampled, ToolError>> {
        self.answers.sample(call, request)
    }
}
