//! The I/O a durable run asks for, done with an agent's model and tools: a model task and
//! a call task, from and to JSON-ready dicts. `NativeAgent.request_model` and `run_call`
//! run these; the run itself (`NativeDurableRun`) is in `durable.rs`, above the agent.

use futures::FutureExt;
use pyo3::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::json;
use starweaver::Agent;
use starweaver::durable::{CallTask, ModelTask};
use tokio_util::sync::CancellationToken;

use crate::bridge::RustFuture;
use crate::convert;
use crate::errors;

/// A value sent over as JSON into a core type; a `FormatError` naming `what` otherwise.
pub(crate) fn from_py<T: DeserializeOwned>(py: Python<'_>, value: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let json = convert::to_json(value).map_err(|e| e.within(what))?;
    serde_json::from_value(json).map_err(|e| format_error(py, what, &e))
}

/// A `FormatError` naming `what`.
pub(crate) fn format_error(py: Python<'_>, what: &str, error: &dyn std::fmt::Display) -> PyErr {
    errors::raise(errors::format_error(py), format!("{what}: {error}"))
}

/// The I/O a durable run asks for, with this agent's model and tools.
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

/// Runs one call task; cancelling the awaiting task cancels the call as a run would.
pub(crate) fn run_call(py: Python<'_>, agent: &Agent, run_id: String, task: &Bound<'_, PyAny>) -> PyResult<RustFuture> {
    let task: CallTask = from_py(py, task, "call task")?;
    let agent = agent.clone();
    let cancellation = CancellationToken::new();
    let token = cancellation.clone();
    let call = async move {
        let result = agent.run_call(&run_id, &task, token).await;
        Python::attach(|py| Ok(convert::serialize_to_py(py, &result)?.unbind()))
    };
    Ok(RustFuture::new(call.boxed(), Some(cancellation)))
}
