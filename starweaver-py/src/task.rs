//! The I/O a durable run asks for, done with an agent's model and tools: a model task and
//! a call task, from and to JSON-ready dicts. `NativeAgent.request_model` and `run_call`
//! run these; the run itself (`NativeDurableRun`) is in `durable.rs`, above the agent.

use futures::FutureExt;
use pyo3::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::json;
use std::sync::Arc;

use starweaver::durable::{CallTask, ListTask, ModelTask, OutputTask};
use starweaver::tool::{CallChannel, LogMessage, Progress};
use starweaver::{Agent, EventKind, ToolContext};
use tokio_util::sync::CancellationToken;

use crate::bridge::RustFuture;
use crate::convert;
use crate::errors::{self, IntoPyResult};

/// A value sent over as JSON into a core type; a `FormatError` naming `what` otherwise.
pub(crate) fn from_py<T: DeserializeOwned>(py: Python<'_>, value: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let json = convert::to_json(value).map_err(|e| e.within(what))?;
    serde_json::from_value(json).map_err(|e| format_error(py, what, &e))
}

/// A `FormatError` naming `what`.
pub(crate) fn format_error(py: Python<'_>, what: &str, error: &dyn std::fmt::Display) -> PyErr {
    errors::raise(errors::format_error(py), format!("{what}: {error}"))
}

/// Lists one step's tools; a toolset that cannot list raises (so an engine may retry).
pub(crate) fn list_tools(py: Python<'_>, agent: &Agent, task: &Bound<'_, PyAny>) -> PyResult<RustFuture> {
    let task: ListTask = from_py(py, task, "list task")?;
    let agent = agent.clone();
    let listing = async move {
        let listing = agent.list_tools(&task).await;
        Python::attach(|py| Ok(convert::serialize_to_py(py, &listing.into_py_result(py)?)?.unbind()))
    };
    Ok(RustFuture::new(listing.boxed(), None))
}

/// Makes one model request with this agent's model and the task's tools.
pub(crate) fn request_model(py: Python<'_>, agent: &Agent, task: &Bound<'_, PyAny>) -> PyResult<RustFuture> {
    let task: ModelTask = from_py(py, task, "model task")?;
    let agent = agent.clone();
    let request = async move {
        let answer = match agent.request_model(&task).await {
            Ok(response) => json!({"response": response}),
            Err(error) => json!({"error": error}),
        };
        Python::attach(|py| Ok(convert::to_py(py, &answer)?.unbind()))
    };
    Ok(RustFuture::new(request.boxed(), None))
}

/// Checks a text answer as the run's output: `{"output": ...}` or `{"refused": message}`.
pub(crate) fn check_output(py: Python<'_>, agent: &Agent, task: &Bound<'_, PyAny>) -> PyResult<RustFuture> {
    let task: OutputTask = from_py(py, task, "output task")?;
    let agent = agent.clone();
    let check = async move {
        let checked = agent.check_output(&task).await;
        Python::attach(|py| Ok(convert::serialize_to_py(py, &checked)?.unbind()))
    };
    Ok(RustFuture::new(check.boxed(), None))
}

/// Runs one call task; cancelling the awaiting task cancels the call as a run would.
/// `on_event` is called with each `tool_progress` and `tool_log` event as it happens.
pub(crate) fn run_call(
    py: Python<'_>,
    agent: &Agent,
    run_id: String,
    task: &Bound<'_, PyAny>,
    on_event: Option<Py<PyAny>>,
) -> PyResult<RustFuture> {
    let task: CallTask = from_py(py, task, "call task")?;
    let agent = agent.clone();
    let cancellation = CancellationToken::new();
    let token = cancellation.clone();
    let listener = on_event.map(|callback| Arc::new(Listener(callback)) as Arc<dyn CallChannel>);
    let call = async move {
        let result = agent.run_call(&run_id, &task, token, listener).await;
        Python::attach(|py| Ok(convert::serialize_to_py(py, &result)?.unbind()))
    };
    Ok(RustFuture::new(call.boxed(), Some(cancellation)))
}

/// A call's progress and log messages, each handed as its event's dict to a Python
/// callable (a durable engine's heartbeat, say). A callable that raises is reported as
/// unraisable and the call goes on: listening must not break the tool.
struct Listener(Py<PyAny>);

impl Listener {
    fn tell(&self, event: &EventKind) {
        Python::attach(|py| {
            let told = convert::serialize_to_py(py, event).and_then(|event| self.0.bind(py).call1((event,)));
            if let Err(error) = told {
                error.write_unraisable(py, Some(self.0.bind(py)));
            }
        });
    }
}

impl CallChannel for Listener {
    fn progress(&self, call: &ToolContext, progress: &Progress) {
        self.tell(&EventKind::progress(call, progress));
    }

    fn log(&self, call: &ToolContext, log: &LogMessage) {
        self.tell(&EventKind::log(call, log));
    }
}
