//! Models for Python: the scripted `TestModel` and the callback-driven `FunctionModel`.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use starweaver::testing::TestModel;
use starweaver::{Model, ModelError, ModelRequest, ModelResponse, ToolCallPart, ToolDefinition};

use crate::bridge::{PyAwait, is_awaitable};
use crate::convert;
use crate::errors::IntoPyResult;

/// A model that plays back scripted responses and records every request.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeTestModel", frozen)]
pub struct PyTestModel(pub(crate) Arc<TestModel>);

#[gen_stub_pymethods]
#[pymethods]
impl PyTestModel {
    /// `script`: a list of `{"text": ...}`, `{"tool_calls": [...]}` or `{"parts": [...]}`.
    #[new]
    fn new(py: Python<'_>, script: &Bound<'_, PyAny>) -> PyResult<Self> {
        let script = convert::to_json(script)?;
        TestModel::from_json(&script).into_py_result(py).map(|m| Self(Arc::new(m)))
    }

    /// Every request so far: `{"messages": [...], "tools": [...]}`, as a provider got it.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "list[types.ModelRequestRecord]", imports = ("starweaver.types",)))]
    fn requests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::serialize_to_py(py, &self.0.requests())
    }
}

/// A model whose answers come from a Python callback `(messages, info) -> response`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeFunctionModel", frozen)]
pub struct PyFunctionModel(pub(crate) Arc<CallbackModel>);

pub(crate) struct CallbackModel {
    callback: Py<PyAny>,
    /// The definitions the last request offered, shared by every request offering the
    /// same ones: a run's steps mostly offer one set, so `info["tools"]` costs a
    /// comparison, not a copy.
    offered: Mutex<Arc<[ToolDefinition]>>,
}

#[gen_stub_pymethods]
#[pymethods]
impl PyFunctionModel {
    /// `callback(messages, info)`: `messages` is a read-only sequence of canonical message
    /// dicts (converted as they are read), `info` a dict with `tools` (a read-only sequence
    /// of definition dicts, converted as they are read),
    /// `toolset_instructions` (what the toolsets whose tools are offered say, sent with the
    /// agent's instructions), `step`, `run_id`, and `output` (the output's definition) when
    /// the run asks for native output.
    /// It returns (or, if async, resolves to) a response dict.
    #[new]
    fn new(callback: Py<PyAny>) -> Self {
        Self(Arc::new(CallbackModel { callback, offered: Mutex::new(Arc::from([])) }))
    }
}

impl CallbackModel {
    /// `tools` as a shared list: the last request's, when they are the same.
    fn offered(&self, tools: &[ToolDefinition]) -> Arc<[ToolDefinition]> {
        // A poisoned lock only means a panic elsewhere; the list it holds is whole.
        let mut offered = self.offered.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if **offered != *tools {
            *offered = Arc::from(tools);
        }
        offered.clone()
    }
}

/// What the callback returned: a response now, or an awaitable of one.
enum Answer {
    Ready(Py<PyAny>),
    Awaiting(PyAwait),
}

impl Model for CallbackModel {
    /// The callback sees a native output's definition as `info["output"]`.
    fn native_output(&self) -> bool {
        true
    }

    fn request<'a>(&'a self, request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let answer = Python::attach(|py| -> PyResult<Answer> {
            let info = PyDict::new(py);
            info.set_item(intern!(py, "tools"), ToolDefinitions(self.offered(request.tools)))?;
            info.set_item(
                intern!(py, "toolset_instructions"),
                request.toolset_instructions.iter().map(|t| &**t).collect::<Vec<_>>(),
            )?;
            info.set_item(intern!(py, "step"), request.step)?;
            info.set_item(intern!(py, "run_id"), request.run_id)?;
            if let Some(output) = request.output {
                info.set_item(intern!(py, "output"), convert::serialize_to_py(py, output)?)?;
            }
            let answer = self.callback.bind(py).call1((Messages(request.messages.clone()), info))?;
            if is_awaitable(&answer)? {
                Ok(Answer::Awaiting(PyAwait::new(answer)?))
            } else {
                Ok(Answer::Ready(answer.unbind()))
            }
        });
        match answer {
            Err(err) => futures::future::ready(Err(model_error(&err))).boxed(),
            Ok(Answer::Ready(answer)) => futures::future::ready(Python::attach(|py| response(answer.bind(py)))).boxed(),
            Ok(Answer::Awaiting(awaiting)) => awaiting
                .map(|answer| Python::attach(|py| response(answer.map_err(|err| model_error(&err))?.bind(py))))
                .boxed(),
        }
    }
}

fn model_error(err: &PyErr) -> ModelError {
    ModelError::new(format!("the model callback raised {err}"))
}

fn response(answer: &Bound<'_, PyAny>) -> Result<ModelResponse, ModelError> {
    if let Some(calls) = plain_calls(answer) {
        return Ok(ModelResponse::tool_calls(calls));
    }
    let json = match convert::to_json(answer) {
        Ok(json) => json,
        Err(error) => match arguments_as_text(answer) {
            Ok(Some(kept)) => convert::to_json(&kept),
            _ => Err(error),
        }
        .map_err(|e| ModelError::new(format!("the model callback's response is not JSON: {e}")))?,
    };
    ModelResponse::from_json(json).map_err(|e| ModelError::new(e.to_string()))
}

/// The calls of an answer that is only `{"tool_calls": [...]}` of plain calls (a dict of
/// exactly `id` and `name`, both str, and `arguments` with an exact JSON value), read
/// straight from the dicts: made into JSON first, each call would be a map of its own,
/// copied into the response and dropped. `None` for anything else, which the general
/// path reads (and names what is wrong with).
fn plain_calls(answer: &Bound<'_, PyAny>) -> Option<Vec<ToolCallPart>> {
    let py = answer.py();
    let answer = answer.cast::<PyDict>().ok().filter(|answer| answer.len() == 1)?;
    let calls = answer.get_item(intern!(py, "tool_calls")).ok()??.cast_into::<PyList>().ok()?;
    // Keys are interned: a key made from a `&str` is a new Python string, hashed anew, per lookup.
    let [id_key, name_key, arguments_key] = [intern!(py, "id"), intern!(py, "name"), intern!(py, "arguments")];
    let text = |call: &Bound<'_, PyDict>, key: &Bound<'_, PyString>, same_as: Option<&Arc<str>>| -> Option<Arc<str>> {
        let text = call.get_item(key).ok()??.cast_into::<PyString>().ok()?;
        let text = text.to_str().ok()?;
        Some(same_as.filter(|same| ***same == *text).map_or_else(|| Arc::from(text), Arc::clone))
    };
    // The calls of an answer are mostly to a few tools, often one after another: a name
    // like the call's before shares its text instead of allocating its own.
    let mut last_name: Option<Arc<str>> = None;
    // Sized up front: collected into an `Option`, the calls would not know their count and
    // the response (kept for the whole run) would hold up to twice the room it needs.
    let mut parts = Vec::with_capacity(calls.len());
    for call in calls.iter() {
        let call = call.cast_into::<PyDict>().ok().filter(|call| call.len() == 3)?;
        // Three containers down (the answer, its list, the call), as in the whole answer.
        let arguments = convert::to_json_nested(&call.get_item(arguments_key).ok()??, 3).ok()?;
        let name = text(&call, name_key, last_name.as_ref())?;
        last_name = Some(name.clone());
        parts.push(ToolCallPart { id: text(&call, id_key, None)?, name, arguments });
    }
    Some(parts)
}

/// The answer with each call's arguments that have no exact JSON value (an integer wider
/// than 64 bits) given as the JSON text Python writes for them, or `None` when no call
/// has such arguments. The scheduler answers that text with an `invalid_arguments` return
/// naming the path, as it does for a provider's: a bad call is the model's to correct,
/// not the end of the run.
fn arguments_as_text<'py>(answer: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = answer.py();
    let Ok(answer) = answer.cast::<PyDict>() else { return Ok(None) };
    let dumps = py.import("json")?.getattr("dumps")?;
    let strict = PyDict::new(py);
    strict.set_item("allow_nan", false)?;
    let kept = answer.copy()?;
    let mut changed = false;
    for key in ["tool_calls", "parts"] {
        let Some(calls) = answer.get_item(key)?.and_then(|calls| calls.cast_into::<PyList>().ok()) else { continue };
        let copies = PyList::empty(py);
        for call in calls.iter() {
            let arguments = call.cast::<PyDict>().ok().map(|c| c.get_item("arguments")).transpose()?.flatten();
            let text = match arguments {
                Some(arguments) if convert::to_json(&arguments).is_err() => {
                    dumps.call((arguments,), Some(&strict)).ok()
                }
                _ => None,
            };
            match (text, call.cast::<PyDict>()) {
                (Some(text), Ok(call)) => {
                    let copy = call.copy()?;
                    copy.set_item("arguments", text)?;
                    copies.append(copy)?;
                    changed = true;
                }
                _ => copies.append(call)?,
            }
        }
        kept.set_item(key, copies)?;
    }
    Ok(changed.then(|| kept.into_any()))
}

/// The history as a model callback sees it: canonical message dicts, converted when read,
/// so a callback that looks at the last message does not pay for the whole history.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "Messages", frozen, sequence)]
pub struct Messages(starweaver::Messages);

#[gen_stub_pymethods]
#[pymethods]
impl Messages {
    fn __len__(&self) -> usize {
        self.0.len()
    }

    #[gen_stub(override_return_type(type_repr = "types.Message", imports = ("starweaver.types",)))]
    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        let message = at(self.0.len(), index).and_then(|at| self.0.get(at)).ok_or_else(|| out_of_range("message"))?;
        convert::serialize_to_py(py, &**message)
    }

    /// Every message, as a list of dicts.
    #[gen_stub(override_return_type(type_repr = "list[types.Message]", imports = ("starweaver.types",)))]
    fn to_list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.0.iter().map(|m| convert::serialize_to_py(py, &**m)).collect::<PyResult<Vec<_>>>()?)
    }
}

/// The tools a request offers, as a model callback sees them (`info["tools"]`): definition
/// dicts, converted when read, so a callback that does not look at them does not pay for
/// their schemas.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "ToolDefinitions", frozen, sequence)]
pub struct ToolDefinitions(Arc<[ToolDefinition]>);

#[gen_stub_pymethods]
#[pymethods]
impl ToolDefinitions {
    fn __len__(&self) -> usize {
        self.0.len()
    }

    #[gen_stub(override_return_type(type_repr = "types.ToolDefinitionDict", imports = ("starweaver.types",)))]
    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        let definition = at(self.0.len(), index).and_then(|at| self.0.get(at)).ok_or_else(|| out_of_range("tool"))?;
        convert::serialize_to_py(py, definition)
    }

    /// Every definition, as a list of dicts.
    #[gen_stub(override_return_type(type_repr = "list[types.ToolDefinitionDict]", imports = ("starweaver.types",)))]
    fn to_list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.0.iter().map(|d| convert::serialize_to_py(py, d)).collect::<PyResult<Vec<_>>>()?)
    }
}

/// Where `index` points in a sequence of `len`: a negative index counts from the end, as
/// in a list.
fn at(len: usize, index: isize) -> Option<usize> {
    if index < 0 { len.checked_sub(index.unsigned_abs()) } else { usize::try_from(index).ok() }
}

fn out_of_range(what: &str) -> PyErr {
    pyo3::exceptions::PyIndexError::new_err(format!("{what} index out of range"))
}
