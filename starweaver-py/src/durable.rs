//! `starweaver.durable`'s native half: a run driven step by step from Python (a Temporal
//! workflow), and the model requests and tool calls it asks for, as JSON-ready dicts.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use serde::Serialize;
use serde_json::Value;
use starweaver::durable::{CallResult, DurableRun, Step};
use starweaver::{ModelError, ModelErrorKind};

use crate::agent::PyAgent;
use crate::convert;
use crate::errors::IntoPyResult;
use crate::hitl::{self, PyHitl};
use crate::result::PyRunResult;
use crate::task::{format_error, from_py};

/// A run of an agent driven one step at a time, doing no I/O of its own: `next_step()`
/// says what to do (`request_model`, `start_calls`, `await_calls`, or `done`), and the
/// outcomes come back through `model_responded`, `model_failed` and `call_finished`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeDurableRun", frozen)]
pub struct PyDurableRun(Mutex<DurableRun>);

fn to_py<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    convert::serialize_to_py(py, value)
}

impl PyDurableRun {
    fn run(&self) -> std::sync::MutexGuard<'_, DurableRun> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[gen_stub_pymethods]
#[pymethods]
impl PyDurableRun {
    /// A run of `prompt` in a new session under `run_id`; raises `ToolsetError` for an
    /// agent with dynamic toolsets.
    #[staticmethod]
    fn start(py: Python<'_>, agent: PyRef<'_, PyAgent>, prompt: String, run_id: String) -> PyResult<Self> {
        Ok(Self(Mutex::new(DurableRun::start(agent.agent(), prompt, run_id).into_py_result(py)?)))
    }

    /// A run that ended or waits, from `export_state()`.
    #[staticmethod]
    fn restore(py: Python<'_>, agent: PyRef<'_, PyAgent>, state: &Bound<'_, PyAny>, run_id: String) -> PyResult<Self> {
        let state = convert::to_json(state)?;
        Ok(Self(Mutex::new(DurableRun::restore(agent.agent(), &state, run_id).into_py_result(py)?)))
    }

    /// What to do next: `{"kind": "request_model", "task": {...}}`, `{"kind":
    /// "start_calls", "tasks": [...]}`, `{"kind": "await_calls"}` or `{"kind": "done",
    /// "result": RunResult}`.
    #[gen_stub(override_return_type(type_repr = "dict[str, typing.Any]", imports = ("typing",)))]
    fn next_step<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let step = self.run().next_step();
        let dict = pyo3::types::PyDict::new(py);
        match step {
            Step::RequestModel(task) => {
                dict.set_item("kind", "request_model")?;
                dict.set_item("task", to_py(py, &task)?)?;
            }
            Step::StartCalls(tasks) => {
                dict.set_item("kind", "start_calls")?;
                dict.set_item("tasks", to_py(py, &tasks)?)?;
            }
            Step::AwaitCalls => dict.set_item("kind", "await_calls")?,
            Step::Done(result) => {
                dict.set_item("kind", "done")?;
                dict.set_item("result", Py::new(py, PyRunResult::new(py, result)?)?)?;
            }
        }
        Ok(dict.into_any())
    }

    /// The model answered (`{"response": ...}` from `NativeAgent.request_model`) or failed
    /// (`{"error": ...}`).
    fn model_answered(&self, py: Python<'_>, answer: &Bound<'_, PyAny>) -> PyResult<()> {
        let answer: Value = convert::to_json(answer).map_err(|e| e.within("answer"))?;
        match (answer.get("response"), answer.get("error")) {
            (Some(response), None) => {
                let response =
                    serde_json::from_value(response.clone()).map_err(|e| format_error(py, "response", &e))?;
                self.run().model_responded(response);
            }
            (None, Some(error)) => {
                let error = serde_json::from_value(error.clone()).map_err(|e| format_error(py, "error", &e))?;
                self.run().model_failed(error);
            }
            _ => return Err(format_error(py, "answer", &"expected exactly one of `response` and `error`")),
        }
        Ok(())
    }

    /// A call of a `start_calls` step ended, with its result from `NativeAgent.run_call`.
    fn call_finished(&self, py: Python<'_>, index: usize, result: &Bound<'_, PyAny>) -> PyResult<()> {
        let result: CallResult = from_py(py, result, "call result")?;
        self.run().call_finished(index, result);
        Ok(())
    }

    /// A call could not be run to its end (its activity failed for good): an `execution`
    /// error return carrying `message`.
    fn call_lost(&self, index: usize, message: &str) {
        self.run().call_lost(index, message);
    }

    /// The model request could not be made (its activity failed for good).
    fn model_lost(&self, message: String) {
        self.run().model_failed(ModelError::of(ModelErrorKind::Connection, message));
    }

    /// The run was cancelled: running calls end as `cancelled` returns, and the run ends.
    fn cancel(&self) {
        self.run().cancel();
    }

    /// The events since the run started or was last resumed, as dicts.
    #[gen_stub(override_return_type(type_repr = "list[types.Event]", imports = ("starweaver.types",)))]
    fn events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.run().events())
    }

    /// What a waiting run needs, or `None`.
    #[getter]
    fn pending(&self) -> Option<PyHitl> {
        self.run().pending().map(PyHitl::from)
    }

    /// Takes a waiting run up again; raises `DecisionError` for a forged, replayed, stale
    /// or incomplete decision (the run keeps waiting). With `check_only`, only checks.
    #[pyo3(signature = (*, approvals=None, deferred_results=None, check_only=false))]
    fn resume(
        &self,
        py: Python<'_>,
        approvals: Option<Vec<Bound<'_, PyAny>>>,
        deferred_results: Option<Vec<Bound<'_, PyAny>>>,
        check_only: bool,
    ) -> PyResult<()> {
        let decisions = hitl::decisions(py, &approvals.unwrap_or_default(), &deferred_results.unwrap_or_default())?;
        let mut run = self.run();
        if check_only { run.check(decisions) } else { run.resume(decisions) }.into_py_result(py)
    }

    /// The session as `export_state()` gives it once the run ended or waits, else `None`.
    #[gen_stub(override_return_type(type_repr = "types.SessionState | None", imports = ("starweaver.types",)))]
    fn export_state<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.run().export_state().map(|state| convert::to_py(py, &state)).transpose()
    }
}
