//! What a run returns, for Python: `RunResult` and its `Usage`.

use pyo3::prelude::*;
use pyo3::types::PyType;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use starweaver::{Event, History, RunResult};

use crate::convert;
use crate::errors::{self, IntoPyResult};
use crate::hitl::PyHitl;
use crate::output::Decoder;
use crate::trace::PyTrace;

/// A run's result (or its error, raised) as a `RunResult`, its output decoded by `decoder`.
pub(crate) fn result_to_py(result: starweaver::Result<RunResult>, decoder: Option<&Decoder>) -> PyResult<Py<PyAny>> {
    Python::attach(|py| {
        let result = result.into_py_result(py)?;
        Ok(Py::new(py, PyRunResult::new(py, result, decoder)?)?.into_any())
    })
}

/// How a run ended, with its history and events.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "RunResult", frozen)]
pub struct PyRunResult {
    /// The run's id.
    #[pyo3(get)]
    run_id: String,
    status: &'static str,
    finish_reason: Option<&'static str>,
    output: Py<PyAny>,
    /// The output tool whose call gave `output` (`"final_result"`, say); `None` for text.
    #[pyo3(get)]
    output_tool: Option<String>,
    /// Why the run failed, as the exception named for it; `error` and `exception` give it.
    error: Option<Py<PyAny>>,
    /// Tokens this run's model requests used.
    #[pyo3(get)]
    usage: Py<PyUsage>,
    /// What a waiting run needs.
    #[pyo3(get)]
    hitl: Py<PyHitl>,
    history: History,
    events: Vec<Event>,
    /// The run's spans with durations.
    #[pyo3(get)]
    trace: Py<PyTrace>,
}

impl PyRunResult {
    pub(crate) fn new(py: Python<'_>, result: RunResult, decoder: Option<&Decoder>) -> PyResult<Self> {
        let output = Decoder::decode(decoder, py, result.output.as_ref(), result.output_tool.as_deref())?;
        Ok(Self {
            run_id: result.run_id,
            status: result.status.as_str(),
            finish_reason: result.finish_reason.map(starweaver::FinishReason::as_str),
            output,
            output_tool: result.output_tool,
            error: result.error.as_ref().map(|e| errors::run_error(py, e)).transpose()?,
            usage: Py::new(py, PyUsage(result.usage))?,
            hitl: Py::new(py, PyHitl::from(result.hitl))?,
            history: result.messages,
            events: result.events,
            trace: Py::new(py, PyTrace(result.trace))?,
        })
    }
}

#[gen_stub_pymethods]
#[pymethods]
impl PyRunResult {
    /// The final answer, when completed: the text, or a value of the agent's output type
    /// (`create_agent(output_type=...)`); `None` otherwise.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.OutputT | None", imports = ("starweaver.types",)))]
    fn output(&self, py: Python<'_>) -> Py<PyAny> {
        self.output.clone_ref(py)
    }

    /// How it ended: `"completed"`, `"waiting"`, `"failed"` or `"cancelled"`.
    #[getter]
    #[gen_stub(override_return_type(
        type_repr = "typing.Literal['completed', 'waiting', 'failed', 'cancelled']",
        imports = ("typing",)
    ))]
    fn status(&self) -> &'static str {
        self.status
    }

    /// Why the run's last answer ended, when the model said: `"length"` means it reached
    /// the token limit and may be cut off, though the run completed.
    #[getter]
    #[gen_stub(override_return_type(
        type_repr = "typing.Literal['stop', 'tool_calls', 'length'] | None",
        imports = ("typing",)
    ))]
    fn finish_reason(&self) -> Option<&'static str> {
        self.finish_reason
    }

    /// The session's full history as canonical message dicts, host-only fields included.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "list[types.Message]", imports = ("starweaver.types",)))]
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.history.to_json())
    }

    /// This run's events, in order, as dicts with `seq`, `run_id` and `type`.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "list[types.Event]", imports = ("starweaver.types",)))]
    fn events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::serialize_to_py(py, &self.events)
    }

    /// Why the run failed, when failed: the exception named for it (not raised), a
    /// `ModelError` subclass for a model failure, else `RunFailedError`; `str()` gives the
    /// message.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "exceptions.RunFailedError | None", imports = ("starweaver.exceptions",)))]
    fn error(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.error.as_ref().map(|e| e.clone_ref(py))
    }

    /// The same object as `error`.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "exceptions.RunFailedError | None", imports = ("starweaver.exceptions",)))]
    fn exception(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.error(py)
    }

    /// Raises `error` when the run failed (a `ModelError` subclass for a model failure,
    /// else `RunFailedError`); does nothing otherwise.
    fn raise_for_status(&self, py: Python<'_>) -> PyResult<()> {
        match &self.error {
            Some(exception) => Err(PyErr::from_value(exception.bind(py).clone())),
            None => Ok(()),
        }
    }

    /// `RunResult[str]` at runtime; the stub's `typing.Generic` says what it means to type
    /// checkers.
    #[classmethod]
    #[gen_stub(skip)]
    fn __class_getitem__<'py>(cls: &Bound<'py, PyType>, item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        convert::generic_alias(cls, item)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("RunResult(status={:?}, output={})", self.status, self.output.bind(py).repr()?))
    }
}

/// Tokens model requests used: per request in `model_response` events, per run in
/// `RunResult.usage`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "Usage", frozen, eq)]
#[derive(PartialEq)]
pub struct PyUsage(starweaver::Usage);

#[gen_stub_pymethods]
#[pymethods]
impl PyUsage {
    /// Model requests counted: every answer, whether or not it reported tokens.
    #[getter]
    fn requests(&self) -> u64 {
        self.0.requests
    }

    /// Tokens sent (cached ones included).
    #[getter]
    fn input_tokens(&self) -> u64 {
        self.0.input_tokens
    }

    /// Tokens generated.
    #[getter]
    fn output_tokens(&self) -> u64 {
        self.0.output_tokens
    }

    /// Input tokens served from the provider's cache.
    #[getter]
    fn cached_tokens(&self) -> u64 {
        self.0.cached_tokens
    }

    fn __repr__(&self) -> String {
        let u = &self.0;
        format!(
            "Usage(requests={}, input_tokens={}, output_tokens={}, cached_tokens={})",
            u.requests, u.input_tokens, u.output_tokens, u.cached_tokens
        )
    }
}
