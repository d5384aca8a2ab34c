//! `RunResult.trace` for Python: the run's spans with durations.

use pyo3::prelude::*;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use starweaver::{Trace, TraceSpan};

use crate::convert;

/// The timing of one run (or one resume): a span for the run, each step, each model
/// request and each tool call. `str(trace)` is a readable summary;
/// `starweaver.otel.export_trace(trace)` sends it to OpenTelemetry.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "Trace", frozen)]
pub struct PyTrace(pub(crate) Trace);

#[gen_stub_pymethods]
#[pymethods]
impl PyTrace {
    /// The run.
    #[getter]
    fn run_id(&self) -> &str {
        &self.0.run_id
    }

    /// When the run (or resume) started, in microseconds since the Unix epoch.
    #[getter]
    fn started_at_unix_us(&self) -> u64 {
        self.0.started_at_unix_us
    }

    /// The whole run's duration in milliseconds.
    #[getter]
    fn duration_ms(&self) -> f64 {
        micros_to_ms(self.0.duration_us())
    }

    /// The spans, parents before children; the first is the run.
    #[getter]
    fn spans(&self) -> Vec<PyTraceSpan> {
        self.0.spans.iter().cloned().map(PyTraceSpan).collect()
    }

    /// The trace as a JSON-ready dict: `run_id`, `started_at_unix_us` and `spans`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::serialize_to_py(py, &self.0)
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "Trace(run_id={:?}, spans={}, duration_ms={:.3})",
            &*self.0.run_id,
            self.0.spans.len(),
            self.duration_ms()
        )
    }
}

/// One timed span of a `Trace`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "TraceSpan", frozen)]
pub struct PyTraceSpan(TraceSpan);

#[gen_stub_pymethods]
#[pymethods]
impl PyTraceSpan {
    /// Index in `Trace.spans`.
    #[getter]
    fn id(&self) -> usize {
        self.0.id
    }

    /// The enclosing span's id; `None` for the run.
    #[getter]
    fn parent(&self) -> Option<usize> {
        self.0.parent
    }

    /// `"run"`, `"step"`, `"model_request"`, `"tool_call"` or `"tool_search"`.
    #[getter]
    fn kind(&self) -> &'static str {
        match self.0.kind {
            starweaver::SpanKind::Run => "run",
            starweaver::SpanKind::Step => "step",
            starweaver::SpanKind::ModelRequest => "model_request",
            starweaver::SpanKind::ToolCall => "tool_call",
            starweaver::SpanKind::ToolSearch => "tool_search",
        }
    }

    /// The span name, as the Rust `tracing` span has it (`starweaver.tool_call`, ...).
    #[getter]
    fn name(&self) -> &'static str {
        self.0.kind.span_name()
    }

    /// Start, in microseconds after the run's start.
    #[getter]
    fn start_us(&self) -> u64 {
        self.0.start_us
    }

    /// Duration in microseconds.
    #[getter]
    fn duration_us(&self) -> u64 {
        self.0.duration_us
    }

    /// Duration in milliseconds.
    #[getter]
    fn duration_ms(&self) -> f64 {
        micros_to_ms(self.0.duration_us)
    }

    /// The model request number, for steps and model requests.
    #[getter]
    fn step(&self) -> Option<u32> {
        self.0.step
    }

    /// The tool, for tool calls.
    #[getter]
    fn tool(&self) -> Option<&str> {
        self.0.tool.as_deref()
    }

    /// The model's call id, for tool calls.
    #[getter]
    fn tool_call_id(&self) -> Option<&str> {
        self.0.tool_call_id.as_deref()
    }

    /// How it ended: a run's status; `"ok"` or the error kind for a tool call (or
    /// `"approval_required"`, `"deferred"`); `"ok"`, `"error"` or `"cancelled"` for a model
    /// request; `"tool_calls"` or how the run ended for a step.
    #[getter]
    fn outcome(&self) -> Option<&'static str> {
        self.0.outcome
    }

    /// OpenTelemetry attributes: for model requests, `gen_ai.system`, `gen_ai.request.model`,
    /// `gen_ai.response.model` and `gen_ai.usage.*`, as far as the model reported them.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "dict[str, str | int]", imports = ()))]
    fn attributes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::convert::to_py(py, &serde_json::Value::Object(self.0.attributes.clone().into_map()))
    }

    /// What happened within it, in order: a tool call's last `tool_progress` and its
    /// `tool_log` messages, each `{"name", "at_us", "attributes"}`.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "list[types.SpanEvent]", imports = ("starweaver.types",)))]
    fn events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::convert::serialize_to_py(py, &self.0.events)
    }

    fn __repr__(&self) -> String {
        format!("TraceSpan(name={:?}, duration_us={}, outcome={:?})", self.name(), self.0.duration_us, self.0.outcome)
    }
}

#[allow(clippy::cast_precision_loss)] // microseconds fit f64's 53 bits for 285 years
fn micros_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}
