//! The native half of `starweaver.temporal`: a run driven step by step from Python (a
//! Temporal workflow), its steps as small classes to `match` on, and the model requests
//! and tool calls it asks for, as JSON-ready dicts.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use serde::Serialize;
use serde_json::Value;
use starweaver::durable::{CallResult, DurableRun, Step, ToolListing};
use starweaver::{ModelError, ModelErrorKind};

use crate::agent::PyAgent;
use crate::convert;
use crate::errors::IntoPyResult;
use crate::hitl::{self, PyHitl};
use crate::result::PyRunResult;
use crate::task::{format_error, from_py};

/// A run of an agent driven one step at a time, doing no I/O of its own: `next_step()`
/// says what to do (`ListTools`, `RequestModel`, `StartCalls`, `AwaitCalls`, or `Done`),
/// and the outcomes come back through `tools_listed`, `tools_lost`, `model_answered`,
/// `model_lost`, `call_finished` and `call_lost`.
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

/// A step of a `NativeDurableRun` that carries one task (a JSON-ready dict): the class
/// for one kind of step, with its `task` and `match` support.
macro_rules! task_step {
    ($rust:ident, $name:literal, $doc:literal, $task_doc:literal) => {
        #[doc = $doc]
        #[gen_stub_pyclass]
        #[pyclass(module = "starweaver._native", name = $name, frozen)]
        pub struct $rust {
            task: Py<PyAny>,
        }

        #[gen_stub_pymethods]
        #[pymethods]
        impl $rust {
            #[classattr]
            #[gen_stub(override_return_type(type_repr = "tuple[typing.Literal['task']]", imports = ("typing",)))]
            fn __match_args__() -> (&'static str,) {
                ("task",)
            }

            #[doc = $task_doc]
            #[getter]
            #[gen_stub(override_return_type(type_repr = "dict[str, typing.Any]", imports = ("typing",)))]
            fn task(&self, py: Python<'_>) -> Py<PyAny> {
                self.task.clone_ref(py)
            }

            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                Ok(format!(concat!($name, "(task={})"), self.task.bind(py).repr()?))
            }
        }
    };
}

task_step!(
    PyListTools,
    "ListTools",
    "A step of a `NativeDurableRun`, for an agent with dynamic toolsets (an MCP server's): list the step's tools (`NativeAgent.list_tools`) and hand the listing to `tools_listed`.",
    "The listing, as a JSON-ready dict (`run_id`, `step`)."
);

task_step!(
    PyRequestModel,
    "RequestModel",
    "A step of a `NativeDurableRun`: make this model request (`NativeAgent.request_model`) and hand the answer to `model_answered`.",
    "The request, as a JSON-ready dict."
);

task_step!(
    PyCheckOutput,
    "CheckOutput",
    "A step of a `NativeDurableRun`: check the model's text answer as the run's output (`NativeAgent.check_output`) and hand the outcome to `output_checked`.",
    "The answer to check, as a JSON-ready dict (`run_id`, `step`, `text`)."
);

/// A step of a `NativeDurableRun`: start these calls (`NativeAgent.run_call`, side by
/// side) and hand each result to `call_finished` with the task's `index`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "StartCalls", frozen)]
pub struct PyStartCalls {
    tasks: Py<PyAny>,
}

#[gen_stub_pymethods]
#[pymethods]
impl PyStartCalls {
    #[classattr]
    #[gen_stub(override_return_type(type_repr = "tuple[typing.Literal['tasks']]", imports = ("typing",)))]
    fn __match_args__() -> (&'static str,) {
        ("tasks",)
    }

    /// The calls, as JSON-ready dicts, in model order.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "list[dict[str, typing.Any]]", imports = ("typing",)))]
    fn tasks(&self, py: Python<'_>) -> Py<PyAny> {
        self.tasks.clone_ref(py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("StartCalls(tasks={})", self.tasks.bind(py).repr()?))
    }
}

/// A step of a `NativeDurableRun`: nothing new may start until a running call is
/// reported.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "AwaitCalls", frozen)]
pub struct PyAwaitCalls;

#[gen_stub_pymethods]
#[pymethods]
impl PyAwaitCalls {
    #[classattr]
    #[gen_stub(override_return_type(type_repr = "tuple[()]"))]
    fn __match_args__(py: Python<'_>) -> Bound<'_, pyo3::types::PyTuple> {
        pyo3::types::PyTuple::empty(py)
    }

    #[allow(clippy::unused_self)] // Python calls `__repr__` on an instance
    fn __repr__(&self) -> &'static str {
        "AwaitCalls()"
    }
}

/// A step of a `NativeDurableRun`: the run ended (completed, failed or cancelled) or
/// waits for decisions (`resume`).
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "Done", frozen)]
pub struct PyDone {
    result: Py<PyRunResult>,
}

#[gen_stub_pymethods]
#[pymethods]
impl PyDone {
    #[classattr]
    #[gen_stub(override_return_type(type_repr = "tuple[typing.Literal['result']]", imports = ("typing",)))]
    fn __match_args__() -> (&'static str,) {
        ("result",)
    }

    /// How the run ended, or what it waits for.
    #[getter]
    fn result(&self, py: Python<'_>) -> Py<PyRunResult> {
        self.result.clone_ref(py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("Done(result={})", self.result.bind(py).repr()?))
    }
}

#[gen_stub_pymethods]
#[pymethods]
impl PyDurableRun {
    /// A run of `prompt` in a new session under `run_id`.
    #[staticmethod]
    #[allow(clippy::needless_pass_by_value)] // pyo3 extracts the borrowed `Agent` as a `PyRef`
    fn start(py: Python<'_>, agent: PyRef<'_, PyAgent>, prompt: String, run_id: String) -> PyResult<Self> {
        Ok(Self(Mutex::new(DurableRun::start(agent.agent(), prompt, run_id).into_py_result(py)?)))
    }

    /// A run that ended or waits, from `export_state()`.
    #[staticmethod]
    #[allow(clippy::needless_pass_by_value)] // pyo3 extracts the borrowed `Agent` as a `PyRef`
    fn restore(py: Python<'_>, agent: PyRef<'_, PyAgent>, state: &Bound<'_, PyAny>, run_id: String) -> PyResult<Self> {
        let state = convert::to_json(state)?;
        Ok(Self(Mutex::new(DurableRun::restore(agent.agent(), &state, run_id).into_py_result(py)?)))
    }

    /// What to do next: `ListTools(task)`, `RequestModel(task)`, `StartCalls(tasks)`,
    /// `AwaitCalls()` or `Done(result)`, for `match`.
    #[gen_stub(override_return_type(
        type_repr = "ListTools | RequestModel | StartCalls | AwaitCalls | CheckOutput | Done"
    ))]
    fn next_step(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let step = self.run().next_step();
        Ok(match step {
            Step::ListTools(task) => Py::new(py, PyListTools { task: to_py(py, &task)?.unbind() })?.into_any(),
            Step::RequestModel(task) => Py::new(py, PyRequestModel { task: to_py(py, &task)?.unbind() })?.into_any(),
            Step::StartCalls(tasks) => Py::new(py, PyStartCalls { tasks: to_py(py, &tasks)?.unbind() })?.into_any(),
            Step::AwaitCalls => Py::new(py, PyAwaitCalls)?.into_any(),
            Step::CheckOutput(task) => Py::new(py, PyCheckOutput { task: to_py(py, &task)?.unbind() })?.into_any(),
            Step::Done(result) => {
                Py::new(py, PyDone { result: Py::new(py, PyRunResult::new(py, result, None)?)? })?.into_any()
            }
        })
    }

    /// The tools of a `ListTools` step, as `NativeAgent.list_tools` listed them.
    fn tools_listed(&self, py: Python<'_>, listing: &Bound<'_, PyAny>) -> PyResult<()> {
        let listing: ToolListing = from_py(py, listing, "tool listing")?;
        self.run().tools_listed(listing);
        Ok(())
    }

    /// The tools of a `ListTools` step could not be listed (its activity failed for good):
    /// the run fails, or a resume waiting for them is undone and the run waits again.
    fn tools_lost(&self, message: &str) {
        self.run().tools_lost(message);
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

    /// How a `CheckOutput` step's check ended (`{"output": ...}`, `{"member": {"tool": ...,
    /// "output": ...}}` or `{"refused": message}` from `NativeAgent.check_output`).
    fn output_checked(&self, py: Python<'_>, checked: &Bound<'_, PyAny>) -> PyResult<()> {
        let checked = from_py(py, checked, "output check")?;
        self.run().output_checked(checked);
        Ok(())
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
    #[pyo3(signature = (*, approvals=None, deferred_results=None, elicitations=None, check_only=false))]
    fn resume(
        &self,
        py: Python<'_>,
        approvals: Option<Vec<Bound<'_, PyAny>>>,
        deferred_results: Option<Vec<Bound<'_, PyAny>>>,
        elicitations: Option<Vec<Bound<'_, PyAny>>>,
        check_only: bool,
    ) -> PyResult<()> {
        let decisions = hitl::decisions(py, approvals, deferred_results, elicitations)?;
        let mut run = self.run();
        if check_only { run.check(decisions) } else { run.resume(decisions) }.into_py_result(py)
    }

    /// The session as `export_state()` gives it once the run ended or waits, else `None`.
    #[gen_stub(override_return_type(type_repr = "types.SessionState | None", imports = ("starweaver.types",)))]
    fn export_state<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.run().export_state().map(|state| convert::to_py(py, &state)).transpose()
    }
}
