//! Traces: the timing of a run, as a tree of spans with durations.
//!
//! Every span is opened together with its `tracing` span of the same name
//! (`starweaver.run`, `starweaver.step`, `starweaver.model_request`,
//! `starweaver.tool_call`), so a subscriber (e.g. `tracing-opentelemetry`) sees the same
//! tree that [`RunResult::trace`](crate::RunResult::trace) summarises.

use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::JsonMap;
use crate::model::Usage;

/// The timing of one run (or one resume of it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trace {
    /// The run.
    pub run_id: Arc<str>,
    /// When the run (or resume) started, in microseconds since the Unix epoch.
    pub started_at_unix_us: u64,
    /// The spans, parents before children; [`TraceSpan::id`] is the index here. The first
    /// is the run.
    pub spans: Vec<TraceSpan>,
}

impl Trace {
    /// The whole run's duration.
    pub fn duration_us(&self) -> u64 {
        self.spans.first().map_or(0, |s| s.duration_us)
    }

    /// How deep `span` is in the tree (the run is 0).
    fn depth(&self, span: &TraceSpan) -> usize {
        std::iter::successors(span.parent, |p| self.spans.get(*p).and_then(|s| s.parent)).count()
    }
}

/// A summary, one line per span, indented by depth:
///
/// ```text
/// run run_5f3c… completed: 21.3 ms
///   step 1: 20.9 ms (tool_calls)
///     model_request 1: 0.1 ms (ok)
///     tool_call slow c1: 20.4 ms (ok)
/// ```
impl std::fmt::Display for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for span in &self.spans {
            let indent = "  ".repeat(self.depth(span));
            #[allow(clippy::cast_precision_loss)] // microseconds fit f64's 53 bits for 285 years
            let ms = span.duration_us as f64 / 1000.0;
            let outcome = span.outcome.unwrap_or("open");
            match span.kind {
                SpanKind::Run => writeln!(f, "{indent}run {} {outcome}: {ms:.1} ms", self.run_id)?,
                SpanKind::Step => writeln!(f, "{indent}step {}: {ms:.1} ms ({outcome})", span.step.unwrap_or(0))?,
                SpanKind::ModelRequest => {
                    writeln!(f, "{indent}model_request {}: {ms:.1} ms ({outcome})", span.step.unwrap_or(0))?;
                }
                SpanKind::ToolSearch => {
                    writeln!(f, "{indent}tool_search {}: {ms:.1} ms ({outcome})", span.step.unwrap_or(0))?;
                }
                SpanKind::ToolCall => writeln!(
                    f,
                    "{indent}tool_call {} {}: {ms:.1} ms ({outcome})",
                    span.tool.as_deref().unwrap_or("?"),
                    span.tool_call_id.as_deref().unwrap_or("?"),
                )?,
            }
        }
        Ok(())
    }
}

/// What a span measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// The run, from start (or resume) to its end.
    Run,
    /// One model request and the tool calls of its response.
    Step,
    /// Waiting for the model.
    ModelRequest,
    /// One tool call, all attempts included.
    ToolCall,
    /// The `search_tools` calls of a response, answered by the run itself; or what the
    /// provider's own search loaded while answering (native tool search).
    ToolSearch,
}

impl SpanKind {
    /// The `tracing` span name, also used when exporting.
    pub fn span_name(self) -> &'static str {
        match self {
            Self::Run => "starweaver.run",
            Self::Step => "starweaver.step",
            Self::ModelRequest => "starweaver.model_request",
            Self::ToolCall => "starweaver.tool_call",
            Self::ToolSearch => "starweaver.tool_search",
        }
    }
}

/// One timed span of a [`Trace`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceSpan {
    /// Index in [`Trace::spans`].
    pub id: usize,
    /// The enclosing span; `None` for the run.
    pub parent: Option<usize>,
    /// What it measures.
    pub kind: SpanKind,
    /// Start, in microseconds after the run's start.
    pub start_us: u64,
    /// Duration in microseconds.
    pub duration_us: u64,
    /// The step (model request number), for steps and model requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// The tool, for tool calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<Arc<str>>,
    /// The model's call id, for tool calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<Arc<str>>,
    /// How it ended: a run's status; `ok` or a tool error kind (or `approval_required`,
    /// `deferred`) for a call; `ok`, `error` or `cancelled` for a model request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<&'static str>,
    /// OpenTelemetry attributes: for model requests, the `gen_ai.*` ones (system, request
    /// and response model, token usage) that the model reported.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub attributes: JsonMap,
    /// What happened within the span: a tool call's `tool_progress` (the last only) and
    /// `tool_log` events, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<SpanEvent>,
}

/// A moment within a span (an OpenTelemetry span event).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpanEvent {
    /// `tool_progress` or `tool_log`.
    pub name: &'static str,
    /// When, in microseconds after the run's start.
    pub at_us: u64,
    /// What it says: for progress `progress`, `total` and `message`; for a log `level`,
    /// `message` and `data` (as JSON text).
    pub attributes: Map<String, Value>,
}

/// The OpenTelemetry GenAI attributes of a model request span.
pub(crate) struct GenAi(Map<String, Value>);

impl GenAi {
    /// What is known when the request starts.
    pub(crate) fn request(system: Option<&str>, model: Option<&str>) -> Self {
        let mut attributes = Map::new();
        if let Some(system) = system {
            attributes.insert("gen_ai.system".into(), system.into());
        }
        if let Some(model) = model {
            attributes.insert("gen_ai.request.model".into(), model.into());
        }
        Self(attributes)
    }

    /// What the response reported.
    pub(crate) fn response(model: Option<&str>, usage: Option<Usage>) -> Self {
        let mut attributes = Map::new();
        if let Some(model) = model {
            attributes.insert("gen_ai.response.model".into(), model.into());
        }
        if let Some(usage) = usage {
            attributes.insert("gen_ai.usage.input_tokens".into(), usage.input_tokens.into());
            attributes.insert("gen_ai.usage.output_tokens".into(), usage.output_tokens.into());
            attributes.insert("gen_ai.usage.cached_tokens".into(), usage.cached_tokens.into());
        }
        Self(attributes)
    }
}

/// The names of a call's span events: its progress, of which a span keeps the last, and
/// its log messages.
pub(crate) const PROGRESS: &str = "tool_progress";
pub(crate) const LOG: &str = "tool_log";

/// An open span: close it with [`Tracer::close`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpanId(usize);

/// What a span is about, given when it opens.
#[derive(Clone, Copy)]
pub(crate) enum SpanOf<'a> {
    Run,
    Step(u32),
    ModelRequest(u32),
    ToolCall { tool: &'a Arc<str>, tool_call_id: &'a Arc<str> },
    ToolSearch(u32),
}

/// Records a run's spans as they open and close.
pub(crate) struct Tracer {
    run_id: Arc<str>,
    origin: Instant,
    started_at_unix_us: u64,
    spans: Mutex<Vec<TraceSpan>>,
}

impl Tracer {
    pub(crate) fn new(run_id: Arc<str>) -> Self {
        let started_at_unix_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        Self { run_id, origin: Instant::now(), started_at_unix_us, spans: Mutex::new(Vec::new()) }
    }

    /// Makes room for `additional` more spans (see [`EventLog::reserve`](crate::event::EventLog::reserve)).
    pub(crate) fn reserve(&self, additional: usize) {
        self.spans().reserve(additional);
    }

    /// Opens a span under `parent`, with its `tracing` span (enter that around the work).
    pub(crate) fn open(&self, of: SpanOf<'_>, parent: Option<SpanId>) -> (SpanId, tracing::Span) {
        let (kind, step, tool, tool_call_id, span) = match of {
            SpanOf::Run => {
                (SpanKind::Run, None, None, None, tracing::info_span!("starweaver.run", run_id = %self.run_id))
            }
            SpanOf::Step(step) => {
                (SpanKind::Step, Some(step), None, None, tracing::info_span!("starweaver.step", step))
            }
            SpanOf::ModelRequest(step) => {
                (SpanKind::ModelRequest, Some(step), None, None, tracing::info_span!("starweaver.model_request", step))
            }
            SpanOf::ToolSearch(step) => {
                (SpanKind::ToolSearch, Some(step), None, None, tracing::info_span!("starweaver.tool_search", step))
            }
            SpanOf::ToolCall { tool, tool_call_id } => (
                SpanKind::ToolCall,
                None,
                Some(tool.clone()),
                Some(tool_call_id.clone()),
                tracing::info_span!("starweaver.tool_call", tool = %tool, tool_call_id = %tool_call_id),
            ),
        };
        let mut spans = self.spans();
        let id = spans.len();
        spans.push(TraceSpan {
            id,
            parent: parent.map(|p| p.0),
            kind,
            start_us: self.elapsed_us(),
            duration_us: 0,
            step,
            tool,
            tool_call_id,
            outcome: None,
            attributes: JsonMap::default(),
            events: Vec::new(),
        });
        (SpanId(id), span)
    }

    /// Adds attributes to a span.
    pub(crate) fn annotate(&self, id: SpanId, attributes: &GenAi) {
        // Writing into a span's map boxes it: a model that reports nothing leaves it empty.
        if attributes.0.is_empty() {
            return;
        }
        if let Some(span) = self.spans().get_mut(id.0) {
            span.attributes.extend(attributes.0.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }

    /// Ends a span, recording how it ended.
    pub(crate) fn close(&self, id: SpanId, outcome: &'static str) {
        let now = self.elapsed_us();
        if let Some(span) = self.spans().get_mut(id.0) {
            span.duration_us = now.saturating_sub(span.start_us);
            span.outcome = Some(outcome);
        }
    }

    /// Records `event` on the span of call `tool_call_id` if that call is still running,
    /// and says whether it was: a tool that kept its context past its call (a timed-out
    /// thread, a spawned task) must not report into the run as if it were running. Only
    /// the last `tool_progress` of a call is kept, as in the event log. Calls that report
    /// are running, so their spans are among the last opened.
    pub(crate) fn call_event(&self, tool_call_id: &str, name: &'static str, attributes: Map<String, Value>) -> bool {
        let at_us = self.elapsed_us();
        let mut spans = self.spans();
        let Some(span) = spans.iter_mut().rev().find(|span| {
            span.outcome.is_none()
                && span.kind == SpanKind::ToolCall
                && span.tool_call_id.as_deref() == Some(tool_call_id)
        }) else {
            return false;
        };
        if name == PROGRESS
            && let Some(last) = span.events.iter().rposition(|event| event.name == PROGRESS)
        {
            span.events.remove(last);
        }
        span.events.push(SpanEvent { name, at_us, attributes });
        true
    }

    /// The trace. A span still open was dropped unfinished (its run was cancelled), so it
    /// ends here as `cancelled`.
    pub(crate) fn finish(&self) -> Trace {
        let now = self.elapsed_us();
        let mut spans = std::mem::take(&mut *self.spans());
        for span in spans.iter_mut().filter(|s| s.outcome.is_none()) {
            span.duration_us = now.saturating_sub(span.start_us);
            span.outcome = Some("cancelled");
        }
        Trace { run_id: self.run_id.clone(), started_at_unix_us: self.started_at_unix_us, spans }
    }

    fn elapsed_us(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn spans(&self) -> std::sync::MutexGuard<'_, Vec<TraceSpan>> {
        self.spans.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
