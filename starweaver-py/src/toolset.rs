//! Toolsets for Python: the core's static and dynamic toolsets and their combinators; the
//! typed classes in `starweaver.toolsets` build them.

use std::sync::Arc;

use futures::FutureExt;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use starweaver::mcp::{McpHandle, McpServer, McpService};
use starweaver::{DynamicToolset, StaticToolset, Tool, Toolset, ToolsetContext, ToolsetError};

use crate::bridge::RustFuture;
use crate::bridge::{PyAwait, is_awaitable};
use crate::convert;
use crate::errors::{self, IntoPyResult};
use crate::hooks::{PyNativeHooks, hook_list};
use crate::limits::MaxConcurrency;
use crate::mcp::{PyMcpPrompt, PyMcpResource, PyMcpResourceTemplate};
use crate::tool::{PyNativeTool, PyToolDefinition, py_deps};

/// A named group of tools with an id. Use `starweaver.toolsets`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeToolset", frozen)]
#[derive(Clone)]
pub struct PyToolset(pub(crate) Arc<dyn Toolset>);

/// The tools a Python `list_tools` gave, as the core's tools.
fn native_tools(listed: &Bound<'_, PyAny>) -> PyResult<Vec<Arc<dyn Tool>>> {
    listed.try_iter()?.map(|item| Ok(item?.cast::<PyNativeTool>()?.get().tool.clone() as Arc<dyn Tool>)).collect()
}

#[gen_stub_pymethods]
#[pymethods]
impl PyToolset {
    /// A toolset of these tools, fixed.
    #[staticmethod]
    #[pyo3(signature = (name, tools, *, id=None))]
    fn of_tools(name: String, tools: Vec<PyRef<'_, PyNativeTool>>, id: Option<String>) -> Self {
        let mut toolset = StaticToolset::new(name);
        if let Some(id) = id {
            toolset = toolset.with_id(id);
        }
        for tool in tools {
            toolset = toolset.shared_tool(tool.tool.clone());
        }
        Self(Arc::new(toolset))
    }

    /// A toolset whose tools `list_tools({"run_id", "step"})` gives at every step (a list
    /// of `NativeTool`, or an awaitable of one).
    #[staticmethod]
    #[pyo3(signature = (name, list_tools, *, id=None))]
    fn dynamic(name: String, list_tools: Py<PyAny>, id: Option<String>) -> Self {
        let list_tools = Arc::new(list_tools);
        let toolset_name = name.clone();
        let mut toolset = DynamicToolset::new(name, move |ctx: &ToolsetContext| {
            let list_tools = list_tools.clone();
            let name = toolset_name.clone();
            let started = Python::attach(|py| -> PyResult<Result<Vec<Arc<dyn Tool>>, PyAwait>> {
                let info = PyDict::new(py);
                info.set_item(intern!(py, "run_id"), &*ctx.run_id)?;
                info.set_item(intern!(py, "step"), ctx.step)?;
                let listed = list_tools.bind(py).call1((info,))?;
                if is_awaitable(&listed)? { Ok(Err(PyAwait::new(listed)?)) } else { native_tools(&listed).map(Ok) }
            });
            let failed = move |err: PyErr| {
                Python::attach(|py| ToolsetError::new(format!("`{name}`'s list_tools raised {}", err.value(py))))
            };
            async move {
                match started {
                    Ok(Ok(tools)) => Ok(tools),
                    Ok(Err(awaiting)) => {
                        let listed = awaiting.await.map_err(&failed)?;
                        Python::attach(|py| native_tools(listed.bind(py))).map_err(failed)
                    }
                    Err(err) => Err(failed(err)),
                }
            }
            .boxed()
        });
        if let Some(id) = id {
            toolset = toolset.with_id(id);
        }
        Self(Arc::new(toolset))
    }

    /// The same tools, each name with `prefix` in front.
    fn prefixed(&self, prefix: String) -> Self {
        Self(Arc::new(self.0.clone().prefixed(prefix)))
    }

    /// Only the tools `keep(definition)` accepts.
    fn filtered(&self, keep: Py<PyAny>) -> Self {
        Self(Arc::new(self.0.clone().filtered(move |definition| {
            Python::attach(|py| {
                keep.bind(py)
                    .call1((PyToolDefinition(definition.clone()),))
                    .and_then(|kept| kept.is_truthy())
                    .unwrap_or(false)
            })
        })))
    }

    /// The same tools, renamed by `names` (old name → new name).
    fn renamed(&self, names: std::collections::HashMap<String, String>) -> Self {
        Self(Arc::new(self.0.clone().renamed(names)))
    }

    /// The same tools, deferred: not sent to the model until `search_tools` finds them.
    fn deferred(&self) -> Self {
        Self(Arc::new(self.0.clone().deferred()))
    }

    /// The same tools, each call needing a human decision first.
    fn approval_required(&self) -> Self {
        Self(Arc::new(self.0.clone().approval_required()))
    }

    /// The same tools, each call running through `hooks` too (after the run's and the
    /// agent's, and after hooks this toolset has already).
    fn with_hooks(&self, hooks: Vec<PyRef<'_, PyNativeHooks>>) -> Self {
        Self(Arc::new(self.0.clone().with_hooks(hook_list(Some(hooks)))))
    }

    /// The same tools, at most `limit` of their calls running at once (together): a number
    /// (a limit of this toolset's own) or a shared `ConcurrencyLimit`; raises `ValueError`
    /// for a number below 1, as `with_max_return_chars` does for 0.
    fn with_max_concurrency(
        &self,
        #[gen_stub(override_type(type_repr = "builtins.int | ConcurrencyLimit", imports = ("builtins",)))]
        limit: MaxConcurrency,
    ) -> PyResult<Self> {
        if limit.0.max_running() == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err("`max_concurrency` must be at least 1"));
        }
        Ok(Self(Arc::new(self.0.clone().with_max_concurrency(limit.0))))
    }

    /// The same tools, with `instructions` sent to the model with the agent's while any
    /// of them is offered (in place of the toolset's own, such as an MCP server's).
    fn with_instructions(&self, instructions: String) -> Self {
        Self(Arc::new(self.0.clone().with_instructions(instructions)))
    }

    /// The same tools, each return's model-facing content cut to `max_return_chars`
    /// characters unless the tool sets its own; raises `ValueError` for 0.
    fn with_max_return_chars(&self, max_return_chars: u32) -> PyResult<Self> {
        if max_return_chars == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err("`max_return_chars` must be at least 1"));
        }
        Ok(Self(Arc::new(self.0.clone().with_max_return_chars(max_return_chars))))
    }

    /// The instructions sent with the agent's while its tools are offered (an MCP
    /// server's are known once it has started).
    #[getter]
    fn instructions(&self) -> Option<String> {
        self.0.instructions().map(|text| text.to_string())
    }

    /// The return-size limit of its tools that set none of their own.
    #[getter]
    fn max_return_chars(&self) -> Option<u32> {
        self.0.max_return_chars()
    }

    /// The toolset's name.
    #[getter]
    fn name(&self) -> &str {
        self.0.name()
    }

    /// The toolset's id.
    #[getter]
    fn id(&self) -> &str {
        self.0.id()
    }

    /// The definitions of a static toolset's tools (`None` for a dynamic one).
    #[getter]
    fn definitions(&self) -> Option<Vec<PyToolDefinition>> {
        self.0.static_tools().map(|tools| tools.iter().map(|t| PyToolDefinition(t.definition().clone())).collect())
    }

    fn __repr__(&self) -> String {
        format!("Toolset(name={:?}, id={:?})", self.0.name(), self.0.id())
    }
}

/// What both transports take alike: how the session opens (`"initialize"`, `"discover"`
/// or `"auto"`; a `ValueError` names anything else), a timeout and handlers (the layer's
/// coroutine functions).
fn configured(
    server: McpServer,
    protocol: &str,
    timeout_ms: Option<u64>,
    handlers: [Option<Py<PyAny>>; 2],
    use_instructions: bool,
) -> PyResult<McpServer> {
    let protocol = protocol.parse().map_err(pyo3::exceptions::PyValueError::new_err)?;
    let mut server = server.protocol(protocol).use_instructions(use_instructions);
    let [elicitation, sampling] = handlers;
    if let Some(ms) = timeout_ms {
        server = server.timeout_ms(ms);
    }
    if let Some(handler) = elicitation {
        server = server.elicitation_handler(crate::tool::PyElicitationHandler(handler));
    }
    if let Some(handler) = sampling {
        server = server.sampling_handler(crate::tool::PySamplingHandler(handler));
    }
    Ok(server)
}

/// An MCP server started as a child process, speaking MCP over stdio. Use
/// `starweaver.mcp.MCPServerStdio`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeMcpServer", frozen)]
pub struct PyMcpServer(McpServer);

#[gen_stub_pymethods]
#[pymethods]
impl PyMcpServer {
    /// `command` with `args`, `env` and `cwd`; `name` names it in errors and approval rules;
    /// `protocol` says how the session opens (`"initialize"`, `"discover"` for the
    /// stateless 2026-07-28 revision, or `"auto"`: discover, else initialize);
    /// `timeout_ms` bounds each request to it (calls, the handshake, listings);
    /// `elicitation_handler` and `sampling_handler` (in the runtime's form: coroutine
    /// functions `(ctx, message, schema) -> {"action", "content"}` and `(ctx, request) ->
    /// {"text", "model", "stop_reason"}`) answer the server's requests first;
    /// `use_instructions=False` keeps the `instructions` of its handshake from the model.
    #[new]
    #[pyo3(signature = (
        name, command, *, args=None, env=None, cwd=None, protocol="initialize", timeout_ms=None, elicitation_handler=None,
        sampling_handler=None, use_instructions=true
    ))]
    #[allow(clippy::too_many_arguments)] // the keywords of the Python constructor
    fn new(
        name: String,
        command: String,
        args: Option<Vec<String>>,
        env: Option<std::collections::HashMap<String, String>>,
        #[gen_stub(override_type(type_repr = "str | os.PathLike[str] | None", imports = ("os",)))] cwd: Option<
            std::path::PathBuf,
        >,
        protocol: &str,
        timeout_ms: Option<u64>,
        elicitation_handler: Option<Py<PyAny>>,
        sampling_handler: Option<Py<PyAny>>,
        use_instructions: bool,
    ) -> PyResult<Self> {
        let handlers = [elicitation_handler, sampling_handler];
        let stdio = McpServer::stdio(name, command);
        let mut server =
            configured(stdio, protocol, timeout_ms, handlers, use_instructions)?.args(args.unwrap_or_default());
        for (key, value) in env.unwrap_or_default() {
            server = server.env(key, value);
        }
        if let Some(dir) = cwd {
            server = server.cwd(dir);
        }
        Ok(Self(server))
    }

    /// A server reached over MCP's streamable HTTP at `url`, with `headers` on every request
    /// and OAuth when `auth` is given.
    #[staticmethod]
    #[pyo3(signature = (
        name, url, *, headers=None, protocol="initialize", timeout_ms=None, auth=None, elicitation_handler=None,
        sampling_handler=None, use_instructions=true
    ))]
    #[allow(clippy::too_many_arguments)] // the keywords of the Python constructor
    fn http(
        name: String,
        url: String,
        headers: Option<std::collections::HashMap<String, String>>,
        protocol: &str,
        timeout_ms: Option<u64>,
        auth: Option<PyRef<'_, crate::oauth::PyOAuth>>,
        elicitation_handler: Option<Py<PyAny>>,
        sampling_handler: Option<Py<PyAny>>,
        use_instructions: bool,
    ) -> PyResult<Self> {
        let handlers = [elicitation_handler, sampling_handler];
        let mut server = configured(McpServer::http(name, url), protocol, timeout_ms, handlers, use_instructions)?;
        if let Some(auth) = auth {
            server = server.auth(auth.oauth.clone());
        }
        for (key, value) in headers.unwrap_or_default() {
            server = server.header(key, value);
        }
        Ok(Self(server))
    }

    /// The server as a toolset.
    fn toolset(&self) -> PyToolset {
        PyToolset(Arc::new(self.0.clone()))
    }

    /// Starts the server now (it also starts on first use); raises `ToolsetError` naming
    /// it, with the tail of its stderr, when it cannot.
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[None]", imports = ("typing",)))]
    fn connect(&self) -> RustFuture {
        let server = self.0.clone();
        let connect = async move {
            let outcome = server.connect().await;
            Python::attach(|py| match outcome {
                Ok(()) => Ok(py.None()),
                Err(message) => Err(errors::raise(errors::toolset_error(py), message)),
            })
        };
        RustFuture::new(connect.boxed(), None)
    }

    /// Calls one of the server's tools directly, outside any agent run, and gives its
    /// value; raises `ToolsetError` for an `isError` result, a failed server or a timeout.
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[typing.Any]", imports = ("typing",)))]
    #[pyo3(signature = (name, arguments=None))]
    fn call_tool(
        &self,
        name: String,
        #[gen_stub(override_type(type_repr = "dict[str, typing.Any] | None", imports = ("typing",)))] arguments: Option<
            Bound<'_, PyDict>,
        >,
    ) -> PyResult<RustFuture> {
        let arguments = match arguments {
            Some(arguments) => convert::to_json(arguments.as_any()).map_err(|e| e.within("arguments"))?,
            None => serde_json::Value::Object(serde_json::Map::new()),
        };
        let server = self.0.clone();
        let call = async move {
            let outcome = server.call_tool(&name, arguments).await;
            Python::attach(|py| match outcome {
                Ok(value) => Ok(convert::to_py(py, &value)?.unbind()),
                Err(error) => Err(errors::raise(errors::toolset_error(py), error.message())),
            })
        };
        Ok(RustFuture::new(call.boxed(), None))
    }

    /// Stops the server; the next use starts it again.
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[None]", imports = ("typing",)))]
    fn close(&self) -> RustFuture {
        let server = self.0.clone();
        let close = async move {
            server.close().await;
            // Not `Python::None`, clippy's suggestion: that is not general over the lifetime.
            #[allow(clippy::redundant_closure_for_method_calls)]
            let none = Python::attach(|py| py.None());
            Ok(none)
        };
        RustFuture::new(close.boxed(), None)
    }
}

/// Tools, resources and prompts served to MCP clients over stdio or streamable HTTP; each
/// `tools/call` runs through the scheduler, with Python functions stepped on the loop that
/// awaits the serving. Use `python -m starweaver serve-mcp`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeMcpService", frozen)]
pub struct PyMcpService {
    service: std::sync::Mutex<Option<McpService>>,
    handle: McpHandle,
}

#[gen_stub_pymethods]
#[pymethods]
impl PyMcpService {
    /// Raises `RegistrationError` for an invalid tool or two tools of one name, two
    /// resources of one URI, two templates alike or two prompts of one name. The tools get
    /// `deps` as `ctx.deps`, as in an agent.
    #[new]
    #[pyo3(signature = (
        name, tools, *, toolsets=None, approval_required_tools=None, deps=None,
        resources=None, resource_templates=None, prompts=None, hooks=None,
    ))]
    #[allow(clippy::too_many_arguments)] // the keywords of the Python constructor
    fn new(
        py: Python<'_>,
        name: String,
        tools: Vec<PyRef<'_, PyNativeTool>>,
        toolsets: Option<Vec<PyRef<'_, PyToolset>>>,
        approval_required_tools: Option<Vec<String>>,
        #[gen_stub(override_type(type_repr = "object", imports = ()))] deps: Option<Py<PyAny>>,
        resources: Option<Vec<PyRef<'_, PyMcpResource>>>,
        resource_templates: Option<Vec<PyRef<'_, PyMcpResourceTemplate>>>,
        prompts: Option<Vec<PyRef<'_, PyMcpPrompt>>>,
        hooks: Option<Vec<PyRef<'_, PyNativeHooks>>>,
    ) -> PyResult<Self> {
        let mut builder = McpService::builder(name).hooks(hook_list(hooks));
        if let Some(deps) = deps {
            builder = builder.dependencies(py_deps(deps));
        }
        for tool in tools {
            builder = builder.shared_tool(tool.tool.clone());
        }
        for toolset in toolsets.unwrap_or_default() {
            builder = builder.shared_toolset(toolset.0.clone());
        }
        for resource in resources.unwrap_or_default() {
            builder = builder.resource(resource.0.clone());
        }
        for template in resource_templates.unwrap_or_default() {
            builder = builder.resource_template(template.0.clone());
        }
        for prompt in prompts.unwrap_or_default() {
            builder = builder.prompt(prompt.0.clone());
        }
        let rules = approval_required_tools.unwrap_or_default();
        builder = builder.approval_required_tools(rules.iter().map(String::as_str));
        let service = builder.build().into_py_result(py)?;
        let handle = service.handle();
        Ok(Self { service: std::sync::Mutex::new(Some(service)), handle })
    }

    /// Tells the client sessions subscribed to `uri` that the resource changed
    /// (`notifications/resources/updated`), while this service serves; from any thread.
    fn resource_updated(&self, uri: String) {
        self.handle.resource_updated(uri);
    }

    /// Serves over stdin and stdout until the client disconnects. On Unix the protocol is
    /// read from and written to copies of stdin and stdout (fds 0 and 1) taken by this
    /// call, so the caller may point fds 0 and 1 elsewhere before awaiting, keeping tools'
    /// prints and reads out of the protocol stream.
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[None]", imports = ("typing",)))]
    fn serve_stdio(&self) -> PyResult<RustFuture> {
        #[cfg(unix)]
        let serve = {
            let (input, output) = starweaver::mcp::stdio_copies()?;
            let service = self.take()?;
            async move { service.serve_fds(input, output).await }
        };
        // Where fds cannot be copied, the protocol is served on stdio itself.
        #[cfg(not(unix))]
        let serve = self.take()?.serve_stdio();
        Ok(Self::serving(serve.boxed()))
    }

    /// Serves MCP's streamable HTTP at `http://ADDRESS/mcp` until cancelled. The address
    /// (`HOST:PORT`; port 0 picks a free one) is bound at once, raising `OSError` if it
    /// cannot be, and `ready` is called with the URL clients should use.
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[None]", imports = ("typing",)))]
    #[pyo3(signature = (address, ready=None))]
    fn serve_http(&self, address: &str, ready: Option<Bound<'_, PyAny>>) -> PyResult<RustFuture> {
        let listener = std::net::TcpListener::bind(address)?;
        listener.set_nonblocking(true)?;
        let url = format!("http://{}/mcp", listener.local_addr()?);
        let service = self.take()?;
        if let Some(ready) = ready {
            ready.call1((url,))?;
        }
        let serve = async move {
            let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
            service.serve_http(listener).await
        };
        Ok(Self::serving(serve.boxed()))
    }
}

impl PyMcpService {
    /// The service, which serves once.
    fn take(&self) -> PyResult<McpService> {
        let service = self.service.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        service.ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("this service is already serving"))
    }

    /// Serving as an awaitable: `None` when the client goes, `ToolsetError` on failure.
    fn serving(serve: futures::future::BoxFuture<'static, Result<(), String>>) -> RustFuture {
        let serve = async move {
            let outcome = serve.await;
            Python::attach(|py| match outcome {
                Ok(()) => Ok(py.None()),
                Err(message) => Err(errors::raise(errors::toolset_error(py), message)),
            })
        };
        RustFuture::new(serve.boxed(), None)
    }
}
