//! A run's typed output, for Python: [`PyOutputSpec`] (what the Python layer's
//! `OutputSpec` hands the native agent or one run), the Python layer's check (decoding
//! the output into its type, then the output validators, sync or async) as the core's
//! [`OutputValidator`], and its decoder, which turns a finished run's output JSON into the
//! value `RunResult.output` gives.

use std::sync::Arc;

use futures::future::BoxFuture;
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use serde_json::Value;
use starweaver::output::{Output, OutputMode};
use starweaver::{EndStrategy, OutputValidator, ToolContext, ToolError};

use crate::bridge::{PyAwait, is_awaitable};
use crate::convert;
use crate::errors;
use crate::tool::{PyNativeTool, PyToolContext};

/// What an agent's runs (or one run) answer with, as the Python layer's `OutputSpec` built
/// it: its members (output functions as native tools; types as their output tool's name,
/// description, parameters and a sync `decode(arguments)` that validates them with
/// pydantic), whether text ends a run, how the model is asked, and the check and decoder
/// that give the output its type.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeOutputSpec", frozen)]
pub struct PyOutputSpec {
    pub(crate) output: Output,
    pub(crate) decoder: Option<Decoder>,
}

#[gen_stub_pymethods]
#[pymethods]
impl PyOutputSpec {
    /// Raises `ValueError` for a `mode` or `end_strategy` it does not know.
    #[new]
    #[pyo3(signature = (members, *, text=false, mode=None, retries=None, end_strategy=None, check=None, validators=None, decoder=None))]
    #[allow(clippy::too_many_arguments)] // the keywords of the Python constructor
    fn new(
        #[gen_stub(override_type(
            type_repr = "list[NativeTool | tuple[builtins.str, builtins.str | None, dict[builtins.str, typing.Any], typing.Callable[[dict[builtins.str, typing.Any]], typing.Any]]]",
            imports = ("builtins", "typing")
        ))]
        members: Vec<Bound<'_, PyAny>>,
        text: bool,
        #[gen_stub(override_type(type_repr = "typing.Literal['tool', 'native', 'prompted'] | None", imports = ("typing",)))]
        mode: Option<&str>,
        retries: Option<u32>,
        #[gen_stub(override_type(type_repr = "typing.Literal['early', 'exhaustive'] | None", imports = ("typing",)))]
        end_strategy: Option<&str>,
        #[gen_stub(override_type(
            type_repr = "typing.Callable[[ToolContext, typing.Any], typing.Any] | None",
            imports = ("typing",)
        ))]
        check: Option<Py<PyAny>>,
        #[gen_stub(override_type(type_repr = "list[typing.Any] | None", imports = ("typing",)))] validators: Option<
            Py<PyList>,
        >,
        #[gen_stub(override_type(type_repr = "typing.Callable[[str, typing.Any], typing.Any] | None", imports = ("typing",)))]
        decoder: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let mut output = Output::new();
        for member in members {
            output = match member.extract::<PyRef<'_, PyNativeTool>>() {
                Ok(tool) => output.shared_function(tool.tool.clone()),
                Err(_) => {
                    let (name, description, parameters, decode): (String, Option<String>, Bound<'_, PyAny>, Py<PyAny>) =
                        member.extract()?;
                    output.typed_by(name, description, convert::to_json(&parameters)?, PyDecode(decode).into_fn())
                }
            };
        }
        if text {
            output = output.or_text();
        }
        output = output.mode(match mode {
            None | Some("tool") => OutputMode::Tool,
            Some("native") => OutputMode::Native,
            Some("prompted") => OutputMode::Prompted,
            Some(other) => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "`output_mode` must be \"tool\", \"native\" or \"prompted\", got {other:?}"
                )));
            }
        });
        if let Some(retries) = retries {
            output = output.retries(retries);
        }
        output = output.end_strategy(match end_strategy {
            None | Some("early") => EndStrategy::Early,
            Some("exhaustive") => EndStrategy::Exhaustive,
            Some(other) => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "`end_strategy` must be \"early\" or \"exhaustive\", got {other:?}"
                )));
            }
        });
        if let Some(check) = check {
            output = output.validator(PyOutputCheck { check, validators });
        }
        Ok(Self { output, decoder: decoder.map(|decoder| Decoder(Arc::new(decoder))) })
    }
}

/// A member type's `decode(arguments)`: the output's JSON, or a Python exception that is
/// the output call's error (`InvalidArguments` naming the field).
struct PyDecode(Py<PyAny>);

impl PyDecode {
    fn into_fn(self) -> impl Fn(&Value) -> Result<Value, ToolError> + Send + Sync + 'static {
        move |args| {
            Python::attach(|py| {
                let decoded = convert::to_py(py, args)
                    .and_then(|args| self.0.bind(py).call1((args,)))
                    .and_then(|value| Ok(convert::to_json(&value)?));
                decoded.map_err(|err| errors::tool_error(py, &err))
            })
        }
    }
}

/// The Python layer's `check(ctx, value)`: the output's JSON (as the output tool gave it)
/// in, the validated output's JSON (or an awaitable of it) out; its exceptions are the
/// output call's errors (`ModelRetry` asks the model again).
struct PyOutputCheck {
    check: Py<PyAny>,
    /// The live list of validators the check runs (`@agent.output_validator` adds to it
    /// after the agent is built): while it is empty the check would hand the value back
    /// unchanged, so it is not called, which saves the output's two conversions.
    validators: Option<Py<PyList>>,
}

impl OutputValidator for PyOutputCheck {
    fn validate(&self, ctx: ToolContext, output: Value) -> BoxFuture<'static, Result<Value, ToolError>> {
        let started = Python::attach(|py| -> PyResult<Result<Value, PyAwait>> {
            if self.validators.as_ref().is_some_and(|validators| validators.bind(py).is_empty()) {
                return Ok(Ok(output));
            }
            let returned = self.check.bind(py).call1((PyToolContext(ctx), convert::to_py(py, &output)?))?;
            if is_awaitable(&returned)? {
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
pub(crate) struct Decoder(Arc<Py<PyAny>>);

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
