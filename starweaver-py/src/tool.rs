//! Tools written in Python: their definition, context and result classes, and the core
//! `Tool` implementation that calls them.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyType};
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use serde_json::{Map, Value};
use starweaver::hitl::ApprovalDecision;
use starweaver::run_ahead::{ChainLane, RunsAhead};
use starweaver::tool::{
    ElicitAnswer, Elicitation, ElicitationHandler, LogLevel, Sampled, Sampling, SamplingHandler, SamplingMessage,
};
use starweaver::{Dependencies, ToolContext, ToolDefinition, ToolError, ToolResult};

use crate::bridge::{Lane, PyAwait, RustFuture};
use crate::convert;
use crate::errors::{self, IntoPyResult};
use crate::hitl::PyApprovalDecision;
use crate::limits::PyConcurrencyLimit;

/// The definition of a tool, shared by Rust and Python tools. Read-only.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "ToolDefinition", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyToolDefinition(pub(crate) ToolDefinition);

#[gen_stub_pymethods]
#[pymethods]
impl PyToolDefinition {
    /// Builds and validates a definition; raises `RegistrationError` naming what is wrong
    /// (the option, or the JSON path in a schema). `options` are the definition's other
    /// fields (`description`, `strict`, `sequential`, `timeout_ms`, `max_return_chars`,
    /// `max_retries`, `max_uses`, `metadata`), read by the same serde rules as the
    /// definition's JSON form;
    /// `return_schema` is the JSON Schema of the value the tool returns (served over MCP as
    /// `outputSchema`, never sent to models).
    #[new]
    #[pyo3(signature = (name, parameters, *, return_schema=None, **options))]
    fn new(
        py: Python<'_>,
        #[gen_stub(override_type(type_repr = "builtins.str", imports = ("builtins",)))] name: &Bound<'_, PyAny>,
        #[gen_stub(override_type(type_repr = "dict[str, typing.Any]", imports = ("typing",)))] parameters: &Bound<
            '_,
            PyAny,
        >,
        #[gen_stub(override_type(
            type_repr = "typing.Mapping[str, typing.Any] | None",
            imports = ("typing",)
        ))]
        return_schema: Option<&Bound<'_, PyAny>>,
        #[gen_stub(override_type(
            type_repr = "typing_extensions.Unpack[types.ToolDefinitionOptions]",
            imports = ("typing_extensions", "starweaver.types")
        ))]
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let label = name.extract::<String>().unwrap_or_else(|_| name.to_string());
        let registration = |message: String| errors::raise(errors::registration_error(py), message);
        let mut fields = Map::new();
        for (key, value) in options.into_iter().flat_map(PyDictMethods::iter) {
            let key: String = key.extract()?;
            if !starweaver::TOOL_OPTIONS.contains(&key.as_str()) {
                let expected = starweaver::TOOL_OPTIONS.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>();
                return Err(registration(format!(
                    "invalid tool `{label}`: unknown tool option `{key}`; expected one of {}",
                    expected.join(", ")
                )));
            }
            // A shared limit goes by its JSON form, which names it: read back, it is the same limit.
            let json = match value.cast::<PyConcurrencyLimit>() {
                Ok(limit) => Ok(serde_json::to_value(&limit.get().0).unwrap_or(Value::Null)),
                Err(_) => convert::to_json(&value),
            }
            .map_err(|e| registration(format!("invalid tool `{label}`: option `{key}`: {e}")))?;
            fields.insert(key, json);
        }
        let parameters = convert::to_json_with(parameters, convert::Keys::StringsOnly).map_err(|e| {
            registration(format!("invalid tool `{label}`: parameters schema is not JSON-serialisable: {e}"))
        })?;
        // The schema is set after, not deserialised: it is already JSON, and the largest field.
        fields.insert("parameters".to_owned(), Value::Null);
        fields.insert("name".to_owned(), convert::to_json(name).unwrap_or(Value::Null));
        let mut definition: ToolDefinition = serde_path_to_error::deserialize(Value::Object(fields)).map_err(|e| {
            let option = e.path().to_string();
            registration(format!("invalid tool `{label}`: option `{option}`: {}", e.into_inner()))
        })?;
        definition.parameters = parameters;
        definition.return_schema = match return_schema.filter(|schema| !schema.is_none()) {
            Some(schema) => Some(convert::to_json_with(schema, convert::Keys::StringsOnly).map_err(|e| {
                registration(format!("invalid tool `{label}`: return schema is not JSON-serialisable: {e}"))
            })?),
            None => None,
        };
        definition.validate().map_err(starweaver::Error::from).into_py_result(py)?;
        Ok(Self(definition))
    }

    /// The tool's name.
    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }

    /// What the tool does, for the model.
    #[getter]
    fn description(&self) -> Option<&str> {
        self.0.description.as_deref()
    }

    /// The JSON Schema of the arguments.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonObject", imports = ("starweaver.types",)))]
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.0.parameters)
    }

    /// Whether providers get a strict definition (`None`: the renderer decides).
    #[getter]
    fn strict(&self) -> Option<bool> {
        self.0.strict
    }

    /// Whether each call is a barrier.
    #[getter]
    fn sequential(&self) -> bool {
        self.0.sequential
    }

    /// Whether the definition stays out of model requests until `search_tools` finds it.
    #[getter]
    fn defer_loading(&self) -> bool {
        self.0.defer_loading
    }

    /// Per-attempt timeout.
    #[getter]
    fn timeout_ms(&self) -> Option<u64> {
        self.0.timeout_ms
    }

    /// Retries after the first attempt (`None`: the default of 3).
    #[getter]
    fn max_retries(&self) -> Option<u32> {
        self.0.max_retries
    }

    /// The most characters of model-facing content a return may have (`None`: no limit of
    /// its own); longer content is cut, with a marker saying how much was cut.
    #[getter]
    fn max_return_chars(&self) -> Option<u32> {
        self.0.max_return_chars
    }

    /// How many times one run may call the tool (`None`: no bound); later calls get a
    /// `limit_reached` error return.
    #[getter]
    fn max_uses(&self) -> Option<u32> {
        self.0.max_uses
    }

    /// How many of its calls may run at once across the process: a number (a limit of its
    /// own) or a shared `ConcurrencyLimit`; `None`: no limit of its own.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "builtins.int | ConcurrencyLimit | None", imports = ("builtins",)))]
    fn max_concurrency<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.0
            .max_concurrency
            .as_ref()
            .map(|limit| match limit.name() {
                Some(_) => Bound::new(py, PyConcurrencyLimit(limit.clone())).map(Bound::into_any),
                None => limit.max_running().into_bound_py_any(py),
            })
            .transpose()
    }

    /// The JSON Schema of the value the tool returns, if it declares one (never sent to
    /// models; served over MCP as `outputSchema`).
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonObject | None", imports = ("starweaver.types",)))]
    fn return_schema<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.0.return_schema.as_ref().map(|schema| convert::to_py(py, schema)).transpose()
    }

    /// Model-facing metadata.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonObject", imports = ("starweaver.types",)))]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &Value::Object(self.0.metadata.clone()))
    }

    /// This definition in a provider's tool format (`"openai-chat"`, `"openai-responses"`,
    /// `"anthropic"`, `"gemini"`). `strict=None` follows the definition (`strict` unset:
    /// strict when the schema can be); `True` forces strict, `False` lax. Raises
    /// `RenderError` naming what stands in the way.
    #[pyo3(signature = (provider, *, strict=None))]
    #[gen_stub(override_return_type(type_repr = "types.JsonObject", imports = ("starweaver.types",)))]
    fn render<'py>(&self, py: Python<'py>, provider: &str, strict: Option<bool>) -> PyResult<Bound<'py, PyAny>> {
        crate::render::render_definition(py, &self.0, provider, strict)
    }

    /// `{"name", "description", "parameters", "strict", "sequential", "timeout_ms", "max_retries", "metadata"}`,
    /// and `"max_return_chars"`, `"max_uses"`, `"max_concurrency"` and `"return_schema"` when
    /// the tool has them.
    #[gen_stub(override_return_type(type_repr = "types.ToolDefinitionDict", imports = ("starweaver.types",)))]
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut json =
            serde_json::to_value(&self.0).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        if let Value::Object(map) = &mut json {
            for key in ["description", "timeout_ms", "max_retries"] {
                map.entry(key).or_insert(Value::Null);
            }
            map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        }
        convert::to_py(py, &json)
    }

    /// The definition as canonical JSON text (what snapshots store).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(&self.0).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }

    fn __repr__(&self) -> String {
        format!("ToolDefinition(name={:?}, sequential={}, strict={:?})", self.0.name, self.0.sequential, self.0.strict)
    }
}

/// A tool's result with separate surfaces for the model, the application, the user
/// interface and debugging.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "ToolResult")]
pub struct PyToolResult(pub(crate) ToolResult);

impl PyToolResult {
    /// The result `value` is, or `value` back if it is not a `ToolResult`.
    pub(crate) fn take(value: Bound<'_, PyAny>) -> Result<ToolResult, Bound<'_, PyAny>> {
        value.cast_into::<Self>().map(Self::into_result).map_err(pyo3::CastIntoError::into_inner)
    }

    /// What `result` holds. A result handed to Python and given back untouched (by a tool
    /// that made it, or a hook that let it through) is moved out when nothing else holds
    /// it, else copied.
    pub(crate) fn into_result(result: Bound<'_, Self>) -> ToolResult {
        // A free-threaded interpreter's count is not read atomically: there it is copied.
        // SAFETY: `result` holds a reference to the object, so it is alive to be read.
        let held_only_here = !cfg!(Py_GIL_DISABLED) && unsafe { pyo3::ffi::Py_REFCNT(result.as_ptr()) } == 1;
        // Held only here, the object is dropped unseen below: what it holds may move out.
        let held = if held_only_here && let Ok(mut only) = result.try_borrow_mut() {
            std::mem::take(&mut only.0)
        } else {
            result.borrow().0.clone()
        };
        drop(result);
        held
    }
}

#[gen_stub_pymethods]
#[pymethods]
impl PyToolResult {
    /// `value` is the tool's value; `model_content` (if given) is what the model sees
    /// instead; `metadata` is public; `app_value`, `user_content` and `private_metadata`
    /// stay on the host.
    #[new]
    #[pyo3(signature = (value=None, *, metadata=None, app_value=None, model_content=None, user_content=None, private_metadata=None))]
    fn new(
        value: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
        app_value: Option<&Bound<'_, PyAny>>,
        model_content: Option<&Bound<'_, PyAny>>,
        user_content: Option<&Bound<'_, PyAny>>,
        private_metadata: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let json = |v: Option<&Bound<'_, PyAny>>| v.map(convert::to_json).transpose();
        Ok(Self(ToolResult {
            value: json(value)?.unwrap_or(Value::Null),
            model_content: json(model_content)?.map(Box::new),
            app_value: json(app_value)?.map(Box::new),
            user_content: json(user_content)?.map(Box::new),
            metadata: metadata.map(|m| convert::to_json_object(m, "metadata")).transpose()?.unwrap_or_default().into(),
            private_metadata: json(private_metadata)?.map(Box::new),
        }))
    }

    /// The tool's value.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonValue", imports = ("starweaver.types",)))]
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.0.value)
    }

    /// What the model sees instead of the value, if set.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonValue", imports = ("starweaver.types",)))]
    fn model_content<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        convert::optional_to_py(py, self.0.model_content.as_deref())
    }

    /// For application code.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonValue", imports = ("starweaver.types",)))]
    fn app_value<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        convert::optional_to_py(py, self.0.app_value.as_deref())
    }

    /// For the user interface.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonValue", imports = ("starweaver.types",)))]
    fn user_content<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        convert::optional_to_py(py, self.0.user_content.as_deref())
    }

    /// Public tool-return metadata.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonObject", imports = ("starweaver.types",)))]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &Value::Object(self.0.metadata.clone().into_map()))
    }

    /// Host-only debugging data.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.JsonValue", imports = ("starweaver.types",)))]
    fn private_metadata<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        convert::optional_to_py(py, self.0.private_metadata.as_deref())
    }
}

/// The runtime state of one tool call.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "ToolContext", frozen)]
pub struct PyToolContext(pub(crate) ToolContext);

/// The application's dependencies object, as tools see it.
struct PyDependencies(Py<PyAny>);

/// `deps` (of an agent, a run or a served module) as the runtime carries them to tools.
pub(crate) fn py_deps(deps: Py<PyAny>) -> Dependencies {
    Dependencies::new().with(PyDependencies(deps))
}

#[gen_stub_pymethods]
#[pymethods]
impl PyToolContext {
    /// A context outside any run, to call a tool's function directly in a unit test:
    /// `deps` is what `ctx.deps` gives, and `approval` (an `ApprovalDecision`, `True`, or
    /// the name of who approved) what `ctx.approval` gives.
    #[staticmethod]
    #[pyo3(signature = (tool_name = "tool", *, deps = None, approval = None))]
    fn detached(tool_name: &str, deps: Option<Py<PyAny>>, approval: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut context = ToolContext::detached(tool_name);
        if let Some(deps) = deps {
            context = context.with_dependencies(py_deps(deps));
        }
        let decision = match approval {
            None => None,
            Some(given) => {
                if let Ok(decision) = given.cast::<PyApprovalDecision>() {
                    Some(decision.get().0.clone())
                } else if let Ok(approved) = given.cast::<pyo3::types::PyBool>() {
                    approved.is_true().then(|| ApprovalDecision { approved: true, ..ApprovalDecision::default() })
                } else if let Ok(name) = given.extract::<String>() {
                    Some(ApprovalDecision { approved: true, decided_by: Some(name), ..ApprovalDecision::default() })
                } else {
                    let kind = given.get_type().name().map_or_else(|_| "?".into(), |n| n.to_string());
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "`approval` must be an ApprovalDecision, a bool or who approved (a str), got {kind}"
                    )));
                }
            }
        };
        Ok(Self(match decision {
            Some(decision) => context.with_approval(decision),
            None => context,
        }))
    }

    /// The run this call belongs to.
    #[getter]
    fn run_id(&self) -> &str {
        self.0.run_id()
    }

    /// The call id as the model sent it.
    #[getter]
    fn tool_call_id(&self) -> &str {
        self.0.tool_call_id()
    }

    /// The tool's name.
    #[getter]
    fn tool_name(&self) -> &str {
        self.0.tool_name()
    }

    /// Model retries this tool has spent in the run.
    #[getter]
    fn retry(&self) -> u32 {
        self.0.retry()
    }

    /// This call's attempt number, from 1.
    #[getter]
    fn attempt(&self) -> u32 {
        self.0.attempt()
    }

    /// The tool's retry budget.
    #[getter]
    fn max_retries(&self) -> u32 {
        self.0.max_retries()
    }

    /// Whether a retryable failure now would not be retried again.
    #[getter]
    fn last_attempt(&self) -> bool {
        self.0.last_attempt()
    }

    /// The approval this call was re-invoked with, or `None`.
    #[getter]
    fn approval(&self) -> Option<PyApprovalDecision> {
        self.0.approval().cloned().map(PyApprovalDecision)
    }

    /// The dependencies object: the run's `deps`, else the agent's
    /// (`create_agent(deps=...)`), or `None`.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "types.DepsT", imports = ("starweaver.types",)))]
    fn deps(&self, py: Python<'_>) -> Py<PyAny> {
        self.0.dependency::<PyDependencies>().map_or_else(|| py.None(), |d| d.0.clone_ref(py))
    }

    /// `ToolContext[MyDeps]` at runtime (an annotation read without postponed evaluation);
    /// the stub's `typing.Generic` says what it means to type checkers.
    #[classmethod]
    #[gen_stub(skip)]
    fn __class_getitem__<'py>(cls: &Bound<'py, PyType>, item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        convert::generic_alias(cls, item)
    }

    /// Whether the runtime asked this call to stop.
    fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Completes when the runtime asks this call to stop.
    #[gen_stub(override_return_type(type_repr = "asyncio.Future[None]", imports = ("asyncio",)))]
    fn cancelled(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        crate::bridge::cancelled(py, self.0.clone())
    }

    /// Reports how far the call has got: `progress` so far, out of `total` when known,
    /// with what it is doing now. A `tool_progress` event of the run (the kept log holds
    /// the last of each call), or MCP `notifications/progress` when served. A plain call,
    /// from sync and async tools alike; raises `ValueError` for a number that is not finite.
    #[pyo3(signature = (progress, total = None, message = None))]
    fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> PyResult<()> {
        self.0
            .report_progress(progress, total, message)
            .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.message().to_owned()))
    }

    /// Asks the user for a value of type `kind` (a pydantic model, a dataclass, a
    /// `TypedDict`, or a JSON schema dict of an object of primitive properties), saying why
    /// with `message`; await it. Gives `Accepted(data)` (the answer validated into `kind`),
    /// `Declined()` or `Cancelled()` (`starweaver.elicitation`). Over MCP the client asks;
    /// in an agent run, `create_agent(elicitation_handler=...)` answers.
    #[gen_stub(override_return_type(
        type_repr = "typing.Awaitable[elicitation.Elicited[elicitation.T]]",
        imports = ("typing", "starweaver.elicitation")
    ))]
    fn elicit(
        &self,
        py: Python<'_>,
        message: String,
        #[gen_stub(override_type(
            type_repr = "type[elicitation.T] | dict[str, typing.Any]",
            imports = ("typing", "starweaver.elicitation")
        ))]
        kind: Py<PyAny>,
    ) -> PyResult<RustFuture> {
        let helpers = py.import(pyo3::intern!(py, "starweaver._asking"))?;
        let schema = helpers.call_method1(pyo3::intern!(py, "schema_of"), (&kind,))?;
        let schema = convert::to_json(&schema)
            .map_err(|e| pyo3::exceptions::PyTypeError::new_err(e.within("the schema").to_string()))?;
        let ctx = self.0.clone();
        Ok(answered(async move { ctx.elicit(message, schema).await }, "elicited", Some(kind)))
    }

    /// Asks a model for a completion of `messages` (a prompt, or a list of prompts and
    /// `{"role": "user" | "assistant", "content": str}` dicts); await a `Sampled` (`text`,
    /// `model`, `stop_reason`). Over MCP the client's model answers; in an agent run the
    /// agent's.
    #[pyo3(signature = (messages, *, max_tokens = 512, system_prompt = None, temperature = None))]
    #[gen_stub(override_return_type(
        type_repr = "typing.Awaitable[elicitation.Sampled]",
        imports = ("typing", "starweaver.elicitation")
    ))]
    fn sample(
        &self,
        py: Python<'_>,
        #[gen_stub(override_type(
            type_repr = "str | typing.Sequence[str | types.SamplingMessageDict]",
            imports = ("typing", "starweaver.types")
        ))]
        messages: &Bound<'_, PyAny>,
        max_tokens: u32,
        system_prompt: Option<String>,
        temperature: Option<f64>,
    ) -> PyResult<RustFuture> {
        let helpers = py.import(pyo3::intern!(py, "starweaver._asking"))?;
        let messages = helpers.call_method1(pyo3::intern!(py, "sampling_messages"), (messages,))?;
        let messages: Vec<SamplingMessage> = crate::task::from_py(py, &messages, "sampling messages")?;
        let request = Sampling { messages, max_tokens, system_prompt, temperature };
        let ctx = self.0.clone();
        Ok(answered(async move { ctx.sample(request).await }, "sampled", None))
    }

    /// Logs `message` at `level` (`"debug"`, `"info"`, `"notice"`, `"warning"`, `"error"`,
    /// `"critical"`, `"alert"` or `"emergency"`), with optional JSON `data`: a `tool_log`
    /// event of the run, or MCP `notifications/message` when served. Raises `ValueError`
    /// for an unknown level and `TypeError` for data that is not JSON.
    #[pyo3(signature = (level, message, data = None))]
    fn log(
        &self,
        #[gen_stub(override_type(type_repr = "types.LogLevel", imports = ("starweaver.types",)))] level: &str,
        message: String,
        data: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let level: LogLevel = level.parse().map_err(pyo3::exceptions::PyValueError::new_err)?;
        let data = data
            .map(|data| {
                convert::to_json(data).map_err(|e| pyo3::exceptions::PyTypeError::new_err(e.within("data").to_string()))
            })
            .transpose()?;
        self.0.log(level, message, data);
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!("ToolContext(tool_name={:?}, tool_call_id={:?})", self.0.tool_name(), self.0.tool_call_id())
    }
}

/// A Python tool as the runtime sees it: a definition and the layer's `invoke(ctx,
/// arguments_json)`, which validates the arguments and starts the call.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeTool", frozen)]
pub struct PyNativeTool {
    pub(crate) tool: Arc<PythonTool>,
}

pub(crate) struct PythonTool {
    definition: ToolDefinition,
    invoke: Py<PyAny>,
    /// A sync tool's `run_sync(ctx, arguments, context)`, which calls it on the current
    /// thread; with it, chains of calls to the tool run ahead (`bridge::ahead`).
    run_sync: Option<Py<PyAny>>,
}

#[gen_stub_pymethods]
#[pymethods]
impl PyNativeTool {
    /// `invoke(ctx, arguments: bytes)` returns a coroutine (async tools) or an asyncio
    /// future (sync tools in the executor), or raises `InvalidArguments`. A sync tool also
    /// gives `run_sync(ctx, arguments: bytes, context)`, which validates and calls it on the
    /// current thread inside `context` (a `contextvars.Context`).
    #[new]
    #[pyo3(signature = (definition, invoke, *, run_sync=None))]
    fn new(definition: &PyToolDefinition, invoke: Py<PyAny>, run_sync: Option<Py<PyAny>>) -> Self {
        let tool = PythonTool { definition: definition.0.clone(), invoke, run_sync };
        Self { tool: Arc::new(tool) }
    }

    /// The tool's definition.
    #[getter]
    fn definition(&self) -> PyToolDefinition {
        PyToolDefinition(self.tool.definition.clone())
    }
}

impl starweaver::Tool for PythonTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// One attempt: the layer's `invoke` starts it on the loop (a coroutine) or in the
    /// executor (a sync tool), and the bridge awaits it.
    fn call<'a>(&'a self, ctx: ToolContext, args: &'a Value) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        let started = Python::attach(|py| {
            let arguments = serde_json::to_vec(args).map_err(|e| ToolError::invalid_arguments(e.to_string()))?;
            let awaitable = self
                .invoke
                .bind(py)
                .call1((PyToolContext(ctx), PyBytes::new(py, &arguments)))
                .and_then(PyAwait::new)
                .map_err(|err| errors::tool_error(py, &err))?;
            Ok::<_, ToolError>(awaitable)
        });
        match started {
            Ok(awaitable) => awaitable.map(|outcome| Python::attach(|py| finish(py, outcome))).boxed(),
            Err(err) => futures::future::ready(Err(err)).boxed(),
        }
    }

    fn runs_ahead(&self) -> Option<&dyn RunsAhead> {
        self.run_sync.is_some().then_some(self as &dyn RunsAhead)
    }
}

impl RunsAhead for PythonTool {
    fn lane(&self, _calls: usize) -> Option<Box<dyn ChainLane>> {
        let run_sync = self.run_sync.as_ref()?;
        Lane::new(run_sync, context_to_py, finish).map(|lane| Box::new(lane) as Box<dyn ChainLane>)
    }
}

/// What a tool asked, answered: an awaitable of the answer as `starweaver._asking.<into>`
/// makes it (given the asked `kind` first, if any), or raising the exception of the
/// failure's kind.
fn answered<T: serde::Serialize>(
    asked: impl Future<Output = Result<T, ToolError>> + Send + 'static,
    into: &'static str,
    kind: Option<Py<PyAny>>,
) -> RustFuture {
    let answered = async move {
        let answer = asked.await;
        Python::attach(|py| {
            let answer = answer.map_err(|error| errors::raise_tool_error(py, &error))?;
            let answer = convert::serialize_to_py(py, &answer)?;
            let helpers = py.import(pyo3::intern!(py, "starweaver._asking"))?;
            let made = match kind {
                Some(kind) => helpers.call_method1(into, (kind, answer))?,
                None => helpers.call_method1(into, (answer,))?,
            };
            Ok(made.unbind())
        })
    };
    RustFuture::new(answered.boxed(), None)
}

/// An elicitation handler written in Python (an agent's, or an MCP server toolset's): the
/// layer's coroutine function `(ctx, message, schema) -> {"action", "content"}`, which
/// calls the application's handler, sync or async, and puts its answer in that form.
pub(crate) struct PyElicitationHandler(pub(crate) Py<PyAny>);

impl ElicitationHandler for PyElicitationHandler {
    fn elicit<'a>(
        &'a self,
        call: &'a ToolContext,
        request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitAnswer, ToolError>> {
        handled(&self.0, "elicitation", |py| {
            (PyToolContext(call.clone()), request.message.as_str(), convert::to_py(py, &request.schema)?)
                .into_pyobject(py)
        })
    }
}

/// An MCP server toolset's sampling handler written in Python: the layer's coroutine
/// function `(ctx, request) -> {"text", "model", "stop_reason"}`, the request as `Sampling`
/// serialises.
pub(crate) struct PySamplingHandler(pub(crate) Py<PyAny>);

impl SamplingHandler for PySamplingHandler {
    fn sample<'a>(&'a self, call: &'a ToolContext, request: &'a Sampling) -> BoxFuture<'a, Result<Sampled, ToolError>> {
        handled(&self.0, "sampling", |py| {
            (PyToolContext(call.clone()), convert::serialize_to_py(py, request)?).into_pyobject(py)
        })
    }
}

/// Calls a handler the Python layer made a coroutine function answering in the runtime's
/// JSON form, with the arguments `args` makes, and reads its answer; what fails is an
/// error naming the `what` handler.
fn handled<'a, T: serde::de::DeserializeOwned + 'a>(
    handler: &Py<PyAny>,
    what: &'static str,
    args: impl for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>>,
) -> BoxFuture<'a, Result<T, ToolError>> {
    let started = Python::attach(|py| PyAwait::new(handler.bind(py).call1(args(py)?)?));
    Box::pin(async move {
        let answer = match started {
            Ok(asked) => asked.await,
            Err(err) => Err(err),
        };
        Python::attach(|py| {
            let answer = answer.map_err(|err| {
                let error = errors::tool_error(py, &err);
                ToolError::new(error.kind(), format!("the {what} handler failed: {}", error.message()))
            })?;
            let answer = convert::to_json(answer.bind(py))
                .map_err(|e| ToolError::execution(format!("the {what} handler's answer is not JSON: {e}")))?;
            serde_json::from_value(answer)
                .map_err(|e| ToolError::execution(format!("the {what} handler's answer cannot be read: {e}")))
        })
    })
}

/// The context of a call run ahead, as its function is given it.
fn context_to_py(py: Python<'_>, ctx: ToolContext) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, PyToolContext(ctx))?.into_any())
}

/// A finished Python call as a tool outcome: a `ToolResult` as given, any other value as
/// JSON, an exception as its `ToolError` kind.
fn finish(py: Python<'_>, outcome: PyResult<Py<PyAny>>) -> Result<ToolResult, ToolError> {
    let value = match PyToolResult::take(outcome.map_err(|err| errors::tool_error(py, &err))?.into_bound(py)) {
        Ok(result) => return Ok(result),
        Err(value) => value,
    };
    convert::to_json(&value).map(ToolResult::new).map_err(|err| {
        // Running the tool again would repeat its side effects and fail the same way.
        ToolError::execution(format!("the tool's return value is not JSON-serialisable: {err}")).not_retryable()
    })
}
