//! Agents, sessions and run results for Python. Runs are awaited on the caller's event
//! loop through [`RustFuture`].

use std::sync::Arc;

use futures::FutureExt;
use pyo3::prelude::*;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use starweaver::search::ToolSearch;
use starweaver::{Agent, ApprovalRule, CancellationToken, HitlDecisions, Model, RunOptions, Session};

use crate::bridge::RustFuture;
use crate::convert;
use crate::errors::{self, IntoPyResult};
use crate::hitl::{self, PyHitl};
use crate::hooks::{PyNativeHooks, hook_list};
use crate::limits::{MaxConcurrency, PyUsageLimits};
use crate::model::{PyFunctionModel, PyTestModel};
use crate::output::{Decoder, PyOutputSpec};
use crate::provider::PyProviderModel;
use crate::result::result_to_py;
use crate::store::{PyMemorySessionStore, PySessionStore};
use crate::stream::PyRunStream;
use crate::tool::{PyNativeTool, PyToolDefinition, py_deps};
use crate::toolset::PyToolset;

/// An agent: a model, tools, instructions and an approval policy.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeAgent", frozen)]
pub struct PyAgent {
    agent: Agent,
    /// Decodes a run's output into its Python type, when the agent has output types.
    decoder: Option<Decoder>,
    /// The store as the caller passed it (or the default), so `session_store` returns
    /// that object with its own class.
    store: Py<PySessionStore>,
}

impl PyAgent {
    pub(crate) fn agent(&self) -> &Agent {
        &self.agent
    }
}

#[gen_stub_pymethods]
#[pymethods]
impl PyAgent {
    /// Lists a durable run's tools for a step (a `list_tools` step's task), to hand to
    /// `NativeDurableRun.tools_listed`; raises `ToolsetError` when a toolset cannot list.
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[dict[str, typing.Any]]", imports = ("typing",)))]
    fn list_tools(&self, py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<RustFuture> {
        crate::task::list_tools(py, &self.agent, task)
    }

    /// Makes a durable run's model request (a `request_model` step's task): `{"response":
    /// ...}` or `{"error": ...}`, to hand to `NativeDurableRun.model_answered`.
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[dict[str, typing.Any]]", imports = ("typing",)))]
    fn request_model(&self, py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<RustFuture> {
        crate::task::request_model(py, &self.agent, task)
    }

    /// Checks a durable run's text answer as its output (a `check_output` step's task):
    /// `{"output": ...}`, `{"member": {"tool": ..., "output": ...}}` (a native or prompted
    /// union's member) or `{"refused": message}`, to hand to `NativeDurableRun.output_checked`.
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[dict[str, typing.Any]]", imports = ("typing",)))]
    fn check_output(&self, py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<RustFuture> {
        crate::task::check_output(py, &self.agent, task)
    }

    /// Runs one of a durable run's call tasks through the scheduler's call path; the
    /// result goes to `NativeDurableRun.call_finished`. `on_event` is called with each
    /// `tool_progress` and `tool_log` event of the call as it happens.
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[dict[str, typing.Any]]", imports = ("typing",)))]
    #[pyo3(signature = (run_id, task, on_event = None))]
    fn run_call(
        &self,
        py: Python<'_>,
        run_id: String,
        task: &Bound<'_, PyAny>,
        #[gen_stub(override_type(
            type_repr = "typing.Callable[[types.Event], object] | None",
            imports = ("typing", "starweaver.types")
        ))]
        on_event: Option<Py<PyAny>>,
    ) -> PyResult<RustFuture> {
        crate::task::run_call(py, &self.agent, run_id, task, on_event)
    }

    /// Validates every tool and option; raises `RegistrationError` naming what is wrong.
    #[new]
    #[pyo3(signature = (model, tools, *, toolsets=None, instructions=None, approval_required_tools=None, max_concurrency=None, max_steps=None, deps=None, session_store=None, require_parameter_descriptions=false, elicitation_handler=None, usage_limits=None, hooks=None, max_return_chars=None, output=None, tool_search=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        model: &Bound<'_, PyAny>,
        tools: Vec<PyRef<'_, PyNativeTool>>,
        toolsets: Option<Vec<PyRef<'_, PyToolset>>>,
        instructions: Option<String>,
        approval_required_tools: Option<Vec<Bound<'_, PyAny>>>,
        #[gen_stub(override_type(type_repr = "builtins.int | ConcurrencyLimit | None", imports = ("builtins",)))]
        max_concurrency: Option<MaxConcurrency>,
        max_steps: Option<u32>,
        #[gen_stub(override_type(type_repr = "object", imports = ()))] deps: Option<Py<PyAny>>,
        session_store: Option<Bound<'_, PySessionStore>>,
        require_parameter_descriptions: bool,
        #[gen_stub(override_type(
            type_repr = "typing.Callable[[ToolContext, str, dict[str, typing.Any]], typing.Awaitable[dict[str, typing.Any]]] | None",
            imports = ("typing",)
        ))]
        elicitation_handler: Option<Py<PyAny>>,
        usage_limits: Option<PyRef<'_, PyUsageLimits>>,
        hooks: Option<Vec<PyRef<'_, PyNativeHooks>>>,
        max_return_chars: Option<u32>,
        output: Option<PyRef<'_, PyOutputSpec>>,
        #[gen_stub(override_type(type_repr = "typing.Literal['local', 'native'] | None", imports = ("typing",)))]
        tool_search: Option<&str>,
    ) -> PyResult<Self> {
        let model: Arc<dyn Model> = if let Ok(m) = model.cast::<PyTestModel>() {
            m.get().0.clone()
        } else if let Ok(m) = model.cast::<PyFunctionModel>() {
            m.get().0.clone()
        } else if let Ok(m) = model.cast::<PyProviderModel>() {
            m.get().model.clone()
        } else {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "`model` must be a starweaver model (a `starweaver.models` class, a \"provider:name\" string, TestModel, FunctionModel), got {}",
                model.get_type().name()?
            )));
        };
        let mut builder = Agent::builder(model).require_parameter_descriptions(require_parameter_descriptions);
        for tool in tools {
            builder = builder.shared_tool(tool.tool.clone());
        }
        for toolset in toolsets.unwrap_or_default() {
            builder = builder.shared_toolset(toolset.0.clone());
        }
        if let Some(instructions) = instructions {
            builder = builder.instructions(instructions);
        }
        let mut rules = Vec::new();
        for rule in approval_required_tools.unwrap_or_default() {
            rules.push(ApprovalRule::from_json(&convert::to_json(&rule)?).into_py_result(py)?);
        }
        builder = builder.approval_required_tools(rules);
        if let Some(MaxConcurrency(limit)) = max_concurrency {
            builder = builder.max_concurrency(limit);
        }
        if let Some(steps) = max_steps {
            builder = builder.max_steps(steps);
        }
        if let Some(limits) = usage_limits {
            builder = builder.usage_limits(limits.0);
        }
        if let Some(max) = max_return_chars {
            builder = builder.max_return_chars(max);
        }
        builder = builder.hooks(hook_list(hooks));
        let decoder = output.as_ref().and_then(|spec| spec.decoder.clone());
        if let Some(spec) = output {
            builder = builder.output(spec.output.clone());
        }
        builder = match tool_search {
            None | Some("local") => builder,
            Some("native") => builder.tool_search(ToolSearch::Native),
            Some(other) => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "`tool_search` must be \"local\" or \"native\", got {other:?}"
                )));
            }
        };
        if let Some(deps) = deps {
            builder = builder.dependencies(py_deps(deps));
        }
        if let Some(handler) = elicitation_handler {
            builder = builder.elicitation_handler(crate::tool::PyElicitationHandler(handler));
        }
        let store = match session_store {
            Some(store) => store.unbind(),
            None => Bound::new(py, PyMemorySessionStore::new())?.into_super().unbind(),
        };
        builder = builder.session_store(store.get().0.clone());
        Ok(Self { agent: builder.build().into_py_result(py)?, decoder, store })
    }

    /// Runs `prompt` in a fresh session; await the result. `deps` replace the agent's for
    /// this run, and `tools` and `toolsets` are added for this run only.
    #[pyo3(signature = (prompt, *, deps=None, tools=None, toolsets=None, usage_limits=None, hooks=None, output=None))]
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[RunResult]", imports = ("typing",)))]
    #[allow(clippy::too_many_arguments)] // the keywords of the Python method
    fn run(
        &self,
        prompt: String,
        #[gen_stub(override_type(type_repr = "object", imports = ()))] deps: Option<Py<PyAny>>,
        tools: Option<Vec<PyRef<'_, PyNativeTool>>>,
        toolsets: Option<Vec<PyRef<'_, PyToolset>>>,
        usage_limits: Option<PyRef<'_, PyUsageLimits>>,
        hooks: Option<Vec<PyRef<'_, PyNativeHooks>>>,
        output: Option<PyRef<'_, PyOutputSpec>>,
    ) -> RustFuture {
        let agent = self.agent.clone();
        let PyRun { options, cancellation, decoder } =
            run_options(deps, tools, toolsets, usage_limits, hooks, output, self.decoder.as_ref());
        let run = async move { result_to_py(agent.run_with(prompt, options).await, decoder.as_ref()) };
        RustFuture::new(run.boxed(), Some(cancellation))
    }

    /// Runs `prompt` in a fresh session, yielding its events as they happen; `deps`
    /// replace the agent's for this run, and `tools` and `toolsets` are added for this run
    /// only.
    #[pyo3(signature = (prompt, *, deps=None, tools=None, toolsets=None, usage_limits=None, hooks=None, output=None))]
    #[allow(clippy::too_many_arguments)] // the keywords of the Python method
    fn run_stream(
        &self,
        prompt: String,
        #[gen_stub(override_type(type_repr = "object", imports = ()))] deps: Option<Py<PyAny>>,
        tools: Option<Vec<PyRef<'_, PyNativeTool>>>,
        toolsets: Option<Vec<PyRef<'_, PyToolset>>>,
        usage_limits: Option<PyRef<'_, PyUsageLimits>>,
        hooks: Option<Vec<PyRef<'_, PyNativeHooks>>>,
        output: Option<PyRef<'_, PyOutputSpec>>,
    ) -> PyRunStream {
        let run = run_options(deps, tools, toolsets, usage_limits, hooks, output, self.decoder.as_ref());
        PyRunStream::new(self.agent.run_stream_with(prompt, run.options), run.decoder)
    }

    /// A new conversation; one restored from `NativeSession.export_state()` (a dict); or,
    /// with `session_id`, the one kept under that id in the agent's session store (new if
    /// none is), written back each time a run or resume returns.
    #[pyo3(signature = (state=None, *, session_id=None))]
    fn session(
        &self,
        py: Python<'_>,
        state: Option<&Bound<'_, PyAny>>,
        session_id: Option<String>,
    ) -> PyResult<PySession> {
        let session = match (state, session_id) {
            (None, None) => self.agent.session(),
            (Some(state), None) => self.agent.restore_session(&convert::to_json(state)?).into_py_result(py)?,
            (None, Some(id)) => py.detach(|| self.agent.open_session(id)).into_py_result(py)?,
            (Some(_), Some(_)) => {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "give `state` or `session_id`, not both: a stored session already has its state",
                ));
            }
        };
        Ok(PySession { session: Arc::new(tokio::sync::Mutex::new(session)), decoder: self.decoder.clone() })
    }

    /// Where `session(session_id=...)` keeps sessions.
    #[getter]
    fn session_store(&self, py: Python<'_>) -> Py<PySessionStore> {
        self.store.clone_ref(py)
    }

    /// The tool definitions models are sent.
    #[getter]
    fn definitions(&self) -> Vec<PyToolDefinition> {
        self.agent.definitions().iter().cloned().map(PyToolDefinition).collect()
    }
}

/// A conversation that keeps its history across runs and can wait for human decisions.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeSession", frozen)]
pub struct PySession {
    session: Arc<tokio::sync::Mutex<Session>>,
    decoder: Option<Decoder>,
}

/// A run's options from Python, a cancellation the awaiting Task triggers, and what
/// decodes the run's output.
struct PyRun {
    options: RunOptions,
    cancellation: CancellationToken,
    decoder: Option<Decoder>,
}

/// A run's own deps, tools, toolsets, limits, hooks and output; its output is decoded by
/// its own output's decoder, or the agent's (`decoder`).
fn run_options(
    deps: Option<Py<PyAny>>,
    tools: Option<Vec<PyRef<'_, PyNativeTool>>>,
    toolsets: Option<Vec<PyRef<'_, PyToolset>>>,
    usage_limits: Option<PyRef<'_, PyUsageLimits>>,
    hooks: Option<Vec<PyRef<'_, PyNativeHooks>>>,
    output: Option<PyRef<'_, PyOutputSpec>>,
    decoder: Option<&Decoder>,
) -> PyRun {
    let cancellation = CancellationToken::new();
    let decoder = match &output {
        Some(spec) => spec.decoder.clone(),
        None => decoder.cloned(),
    };
    let options = RunOptions {
        cancellation: Some(cancellation.clone()),
        dependencies: deps.map(py_deps),
        tools: tools.unwrap_or_default().iter().map(|t| t.tool.clone() as Arc<dyn starweaver::Tool>).collect(),
        toolsets: toolsets.unwrap_or_default().iter().map(|t| t.0.clone()).collect(),
        usage_limits: usage_limits.map(|limits| limits.0),
        hooks: hook_list(hooks),
        output: output.map(|spec| spec.output.clone()),
    };
    PyRun { options, cancellation, decoder }
}

/// What a session call does once it holds the session.
enum Action {
    Run(String),
    Resume(HitlDecisions),
}

impl PySession {
    /// Takes the session for one run (a second concurrent run is refused, not queued) and
    /// returns the awaitable that performs it.
    fn start(&self, py: Python<'_>, action: Action, run: PyRun) -> PyResult<RustFuture> {
        let mut session = self.session.clone().try_lock_owned().map_err(|_| busy(py))?;
        let PyRun { options, cancellation, decoder } = run;
        let run = async move {
            let result = match action {
                Action::Run(prompt) => session.run_with(prompt, options).await,
                Action::Resume(decisions) => session.resume_with(decisions, options).await,
            };
            result_to_py(result, decoder.as_ref())
        };
        Ok(RustFuture::new(run.boxed(), Some(cancellation)))
    }
}

#[gen_stub_pymethods]
#[pymethods]
impl PySession {
    /// Runs `prompt`, continuing the conversation; await the result. `deps` replace the
    /// agent's for this run, and `tools` and `toolsets` are added for this run only.
    #[pyo3(signature = (prompt, *, deps=None, tools=None, toolsets=None, usage_limits=None, hooks=None, output=None))]
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[RunResult]", imports = ("typing",)))]
    #[allow(clippy::too_many_arguments)] // the keywords of the Python method
    fn run(
        &self,
        py: Python<'_>,
        prompt: String,
        #[gen_stub(override_type(type_repr = "object", imports = ()))] deps: Option<Py<PyAny>>,
        tools: Option<Vec<PyRef<'_, PyNativeTool>>>,
        toolsets: Option<Vec<PyRef<'_, PyToolset>>>,
        usage_limits: Option<PyRef<'_, PyUsageLimits>>,
        hooks: Option<Vec<PyRef<'_, PyNativeHooks>>>,
        output: Option<PyRef<'_, PyOutputSpec>>,
    ) -> PyResult<RustFuture> {
        let run = run_options(deps, tools, toolsets, usage_limits, hooks, output, self.decoder.as_ref());
        self.start(py, Action::Run(prompt), run)
    }

    /// Runs `prompt`, yielding its events as they happen; `deps` replace the agent's for
    /// this run, and `tools` and `toolsets` are added for this run only.
    #[pyo3(signature = (prompt, *, deps=None, tools=None, toolsets=None, usage_limits=None, hooks=None, output=None))]
    #[allow(clippy::too_many_arguments)] // the keywords of the Python method
    fn run_stream(
        &self,
        py: Python<'_>,
        prompt: String,
        #[gen_stub(override_type(type_repr = "object", imports = ()))] deps: Option<Py<PyAny>>,
        tools: Option<Vec<PyRef<'_, PyNativeTool>>>,
        toolsets: Option<Vec<PyRef<'_, PyToolset>>>,
        usage_limits: Option<PyRef<'_, PyUsageLimits>>,
        hooks: Option<Vec<PyRef<'_, PyNativeHooks>>>,
        output: Option<PyRef<'_, PyOutputSpec>>,
    ) -> PyResult<PyRunStream> {
        let session = self.session.clone().try_lock_owned().map_err(|_| busy(py))?;
        let run = run_options(deps, tools, toolsets, usage_limits, hooks, output, self.decoder.as_ref());
        Ok(PyRunStream::new(Session::run_stream_owned(session, prompt, run.options), run.decoder))
    }

    /// Continues the waiting run: one decision (object or canonical dict) per pending item.
    /// `deps`, `tools`, `toolsets`, `usage_limits` and `hooks` are the resumed run's own, as a
    /// run's are (give the ones it was started with, so its calls meet the same tools and hooks).
    #[pyo3(signature = (*, approvals=None, deferred_results=None, elicitations=None, deps=None, tools=None, toolsets=None, usage_limits=None, hooks=None, output=None))]
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[RunResult]", imports = ("typing",)))]
    #[allow(clippy::too_many_arguments)]
    fn resume(
        &self,
        py: Python<'_>,
        approvals: Option<Vec<Bound<'_, PyAny>>>,
        deferred_results: Option<Vec<Bound<'_, PyAny>>>,
        elicitations: Option<Vec<Bound<'_, PyAny>>>,
        #[gen_stub(override_type(type_repr = "object", imports = ()))] deps: Option<Py<PyAny>>,
        tools: Option<Vec<PyRef<'_, PyNativeTool>>>,
        toolsets: Option<Vec<PyRef<'_, PyToolset>>>,
        usage_limits: Option<PyRef<'_, PyUsageLimits>>,
        hooks: Option<Vec<PyRef<'_, PyNativeHooks>>>,
        output: Option<PyRef<'_, PyOutputSpec>>,
    ) -> PyResult<RustFuture> {
        let decisions = hitl::decisions(py, approvals, deferred_results, elicitations)?;
        let run = run_options(deps, tools, toolsets, usage_limits, hooks, output, self.decoder.as_ref());
        self.start(py, Action::Resume(decisions), run)
    }

    /// What the waiting run needs, or `None` when no run waits.
    #[getter]
    fn pending(&self, py: Python<'_>) -> PyResult<Option<PyHitl>> {
        let session = self.session.try_lock().map_err(|_| busy(py))?;
        Ok(session.pending().map(PyHitl::from))
    }

    /// The conversation so far as canonical message dicts, host-only fields included.
    #[getter]
    #[gen_stub(override_return_type(type_repr = "list[types.Message]", imports = ("starweaver.types",)))]
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.try_lock().map_err(|_| busy(py))?;
        convert::to_py(py, &session.history().to_json())
    }

    /// The id the session is stored under, or `None` for a session not opened by id.
    #[getter]
    fn session_id(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let session = self.session.try_lock().map_err(|_| busy(py))?;
        Ok(session.id().map(str::to_owned))
    }

    /// The session as canonical JSON (a dict): history, applied decisions, and a waiting
    /// run's state. `agent.session(state=...)` restores it, in this process or another.
    #[gen_stub(override_return_type(type_repr = "types.SessionState", imports = ("starweaver.types",)))]
    fn export_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.try_lock().map_err(|_| busy(py))?;
        convert::to_py(py, &session.export_state())
    }
}

/// The session is in the middle of a run (only one runs at a time; calls are not queued).
fn busy(py: Python<'_>) -> PyErr {
    errors::raise(errors::session_state_error(py), "this session is running; await its current run first")
}
