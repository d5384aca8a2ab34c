//! A run's typed output, for Python: the Python layer's check (decoding the output into
//! its type, then the agent's output validators, sync or async) as the core's
//! [`OutputValidator`], and its decoder, which turns a finished run's output JSON into the
//! value `RunResult.output` gives.

use futures::future::BoxFuture;
use pyo3::prelude::*;
use serde_json::Value;
use starweaver::{OutputValidator, ToolContext, ToolError};

use crate::bridge::PyAwait;
use crate::convert;
use crate::errors;
use crate::tool::PyToolContext;

/// The Python layer's `check(ctx, value)`: the output's JSON (as the output tool gave it)
/// in, the validated output's JSON (or an awaitable of it) out; its exceptions are the
/// output call's errors (`ModelRetry` asks the model again).
pub(crate) struct PyOutputCheck(pub(crate) Py<PyAny>);

impl OutputValidator for PyOutputCheck {
    fn validate(&self, ctx: ToolContext, output: Value) -> BoxFuture<'static, Result<Value, ToolError>> {
        let started = Python::attach(|py| -> PyResult<Result<Value, PyAwait>> {
            let returned = self.0.bind(py).call1((PyToolContext(ctx), convert::to_py(py, &output)?))?;
            if returned.hasattr(pyo3::intern!(py, "__await__"))? {
                return Ok(Err(PyAwait::new(returned)?));
            }
            Ok(Ok(convert::to_json(&returned)?))
        });
        match started {
            Ok(Ok(value)) => Box::pin(std::future::ready(Ok(value))),
            Ok(Err(awaiting)) => Box::pin(async move {
                let outcome = awaiting.await;
                Python::attach(|py| match outcome.and_then(|value| Ok(convert::to_json(value.bind(py))?)) {
                    Ok(value) => Ok(value),
                    Err(err) => Err(errors::tool_error(py, &err)),
                })
            }),
            Err(err) => Box::pin(std::future::ready(Err(Python::attach(|py| errors::tool_error(py, &err))))),
        }
    }
}

/// Turns a run's output JSON into the Python value of its type: `decode(output_tool,
/// value)`, the tool `None` for an answer in text (the type's JSON, for native or
/// prompted output).
#[derive(Clone)]
pub(crate) struct Decoder(pub(crate) std::sync::Arc<Py<PyAny>>);

impl Decoder {
    /// The Python value of `output`: text as a `str`, an output tool's value decoded.
    pub(crate) fn decode(
        decoder: Option<&Self>,
        py: Python<'_>,
        output: Option<&Value>,
        tool: Option<&str>,
    ) -> PyResult<Py<PyAny>> {
        let Some(output) = output else { return Ok(py.None()) };
        let value = convert::to_py(py, output)?;
        match decoder {
            Some(decoder) => Ok(decoder.0.bind(py).call1((tool, value))?.unbind()),
            None => Ok(value.unbind()),
        }
    }
}
