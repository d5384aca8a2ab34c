//! The server side: any tools (Rust `#[tool]`, Python `@tool`, static toolsets) served to
//! MCP clients, each `tools/call` run through the scheduler's call path (argument checks,
//! the approval gate, retries, timeouts, cancellation) as in an agent; and the
//! application's resources (`resource.rs`), prompts (`prompt.rs`) and their completions
//! (`completion.rs`), with resource subscriptions (`subscription.rs`).
//!
//! rmcp's service answers the protocol in its own tokio tasks; calls, and the reads,
//! prompts and completions the application's functions answer, are handed to the future
//! returned by [`McpService::serve_stdio`], which runs them. Whoever polls that future runs
//! the application's code: for Python, the asyncio loop, as every Python function needs.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock as Content, GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressToken, PromptsCapability, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Reference,
    RequestId, ResourcesCapability, ServerCapabilities, ServerConfig, SubscribeRequestParams, Tool as McpTool,
    ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{ElicitationError, Peer, RequestContext, RoleServer, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Mutex, RwLock, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::completion::{self, CompletionRequest};
use super::notify::{self, LevelFilter, Notifier};
use super::prompt::{self, McpPrompt, Prompts};
use super::resource::{McpResource, McpResourceTemplate, Resources};
use super::structured;
use super::subscription::{McpHandle, SessionId, Subscriptions};
use super::wire::{self, Incoming, StdioTransport};
use crate::content::Part;
use crate::error::Result;
use crate::hitl::{ApprovalDecision, ApprovalPolicy};
use crate::hook::Hooks;
use crate::message::ToolCallPart;
use crate::registry::{RegistrationRules, Source, ToolList, ToolRegistry};
use crate::scheduler::{CallOutcome, CallRequest, Served, invoke_alone};
use crate::tool::{CallChannel, Dependencies, Tool, ToolError, ToolErrorKind};
use crate::toolset::Toolset;

/// Tools, resources and prompts served to MCP clients.
///
/// ```no_run
/// use starweaver::mcp::McpService;
/// # fn add_tool() -> starweaver::StaticToolset { starweaver::StaticToolset::new("x") }
///
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// let service = McpService::builder("calculator").toolset(add_tool()).build()?;
/// service.serve_stdio().await?;
/// # Ok(()) }
/// ```
pub struct McpService {
    name: String,
    registry: Arc<ToolRegistry>,
    dependencies: Dependencies,
    hooks: Vec<Arc<dyn Hooks>>,
    resources: Arc<Resources>,
    prompts: Arc<Prompts>,
    subscriptions: Arc<Subscriptions>,
    /// What [`McpHandle`]s send: the URIs of resources that changed.
    updates: mpsc::UnboundedSender<String>,
    updated: mpsc::UnboundedReceiver<String>,
}

/// Builds an [`McpService`]; registration rules are checked in [`build`](Self::build).
#[must_use]
pub struct McpServiceBuilder {
    name: String,
    /// The tools to serve; a dynamic toolset among them is an error at build, as its tools
    /// are not known up front.
    tools: ToolList,
    approval_rules: Vec<crate::hitl::ApprovalRule>,
    dependencies: Dependencies,
    hooks: Vec<Arc<dyn Hooks>>,
    resources: Vec<McpResource>,
    templates: Vec<McpResourceTemplate>,
    prompts: Vec<McpPrompt>,
}

impl McpService {
    /// A service named `name` (what clients see as the server's name).
    pub fn builder(name: impl Into<String>) -> McpServiceBuilder {
        McpServiceBuilder {
            name: name.into(),
            tools: ToolList::new(Source::Served),
            approval_rules: Vec::new(),
            dependencies: Dependencies::new(),
            hooks: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
        }
    }

    /// A handle to say, while it serves, that a resource changed (see [`McpHandle`]).
    pub fn handle(&self) -> McpHandle {
        McpHandle { updates: self.updates.clone() }
    }
}

impl McpServiceBuilder {
    /// Serves a tool.
    pub fn tool(self, tool: impl Tool) -> Self {
        self.shared_tool(Arc::new(tool))
    }

    /// Serves a shared tool.
    pub fn shared_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.tool(tool);
        self
    }

    /// Every served call runs through `hook` (after the hooks added before it, and before
    /// the hooks of the call's toolset).
    pub fn hook(mut self, hook: impl Hooks) -> Self {
        self.hooks.push(Arc::new(hook));
        self
    }

    /// Every served call runs through these hooks, in order.
    pub fn hooks(mut self, hooks: impl IntoIterator<Item = Arc<dyn Hooks>>) -> Self {
        self.hooks.extend(hooks);
        self
    }

    /// Serves a static toolset's tools (a dynamic one is refused at build: its tools are
    /// not known up front).
    pub fn toolset(self, toolset: impl Toolset) -> Self {
        self.shared_toolset(Arc::new(toolset))
    }

    /// Serves a shared static toolset's tools.
    pub fn shared_toolset(mut self, toolset: Arc<dyn Toolset>) -> Self {
        self.tools.toolset(toolset);
        self
    }

    /// Tools that need a human decision before every call: the client is asked by MCP
    /// elicitation when it offers it; otherwise the call is an `isError` result saying
    /// approval is required.
    pub fn approval_required_tools<R: Into<crate::hitl::ApprovalRule>>(
        mut self,
        rules: impl IntoIterator<Item = R>,
    ) -> Self {
        self.approval_rules.extend(rules.into_iter().map(Into::into));
        self
    }

    /// What the served tools get from `ctx.dependency::<T>()`, as in an agent.
    pub fn dependencies(mut self, dependencies: Dependencies) -> Self {
        self.dependencies = dependencies;
        self
    }

    /// Serves a resource at a fixed URI (`resources/list`, `resources/read`,
    /// `resources/subscribe`).
    ///
    /// ```
    /// use starweaver::content::Text;
    /// use starweaver::mcp::{McpResource, McpService};
    /// use starweaver::ToolError;
    ///
    /// let service = McpService::builder("docs")
    ///     .resource(McpResource::new("docs://readme", "readme", |_| async { Ok::<_, ToolError>([Text::new("# Docs")]) }))
    ///     .build()
    ///     .unwrap();
    /// # drop(service);
    /// ```
    pub fn resource(mut self, resource: McpResource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Serves a resource template (`resources/templates/list`; a `resources/read` of a URI
    /// it gives; `completion/complete` of its variables). Templates are tried in the order
    /// given, after the static resources.
    ///
    /// ```
    /// use starweaver::content::Text;
    /// use starweaver::mcp::{McpResourceTemplate, McpService};
    /// use starweaver::ToolError;
    ///
    /// let notes = McpResourceTemplate::new("notes://{id}", "note", |request| async move {
    ///     Ok::<_, ToolError>([Text::new(format!("note {}", request.variable("id").unwrap_or_default()))])
    /// });
    /// let service = McpService::builder("notes").resource_template(notes).build().unwrap();
    /// # drop(service);
    /// ```
    pub fn resource_template(mut self, template: McpResourceTemplate) -> Self {
        self.templates.push(template);
        self
    }

    /// Serves a prompt (`prompts/list`, `prompts/get`; `completion/complete` of its
    /// arguments).
    ///
    /// ```
    /// use starweaver::content::Text;
    /// use starweaver::mcp::{McpPrompt, McpService, PromptArgument, PromptMessage};
    /// use starweaver::ToolError;
    ///
    /// let greet = McpPrompt::new("greet", |request| async move {
    ///     let name = request.argument("name").unwrap_or("you").to_owned();
    ///     Ok::<_, ToolError>(vec![PromptMessage::user(Text::new(format!("Say hello to {name}")))])
    /// })
    /// .argument(PromptArgument::required("name"));
    /// let service = McpService::builder("greeter").prompt(greet).build().unwrap();
    /// # drop(service);
    /// ```
    pub fn prompt(mut self, prompt: McpPrompt) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Checks every tool as an agent would, and the resources and prompts.
    ///
    /// # Errors
    /// An invalid definition, two tools of one name, or a dynamic toolset; two resources of
    /// one URI, a resource template beyond RFC 6570 level 1, two prompts of one name, or a
    /// completer for an argument that is not there.
    pub fn build(self) -> Result<McpService> {
        if let Some(toolset) = self.tools.dynamic.first() {
            return Err(crate::Error::Toolset {
                toolset: toolset.name().to_owned(),
                message: "it is dynamic, and an MCP server lists its tools up front; give it a static toolset".into(),
            });
        }
        let policy = ApprovalPolicy::new(self.approval_rules);
        let registry = ToolRegistry::new(self.tools.entries, &policy, RegistrationRules::default())?;
        let (updates, changed) = mpsc::unbounded_channel();
        Ok(McpService {
            name: self.name,
            registry: Arc::new(registry),
            dependencies: self.dependencies,
            hooks: self.hooks,
            resources: Arc::new(Resources::new(self.resources, self.templates)?),
            prompts: Arc::new(Prompts::new(self.prompts)?),
            subscriptions: Arc::default(),
            updates,
            updated: changed,
        })
    }
}

/// How long a call the client cancelled may take to end by itself before it is dropped.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// One `tools/call`, handed from rmcp's task to the future that runs calls.
struct Job {
    name: String,
    arguments: Value,
    cancellation: CancellationToken,
    /// The client, asked for approvals by elicitation and told of progress and logs.
    peer: Peer<RoleServer>,
    /// The token the client asked progress of this call under, if it did.
    progress_token: Option<ProgressToken>,
    /// The least severe log message the client wants, shared with its session.
    level: Arc<LevelFilter>,
    /// The `tools/call` request, which what the call asks the client goes with.
    request_id: RequestId,
    reply: oneshot::Sender<CallToolResult>,
}

/// What the future that serves runs: a tool call, or the application's code answering
/// a read, a prompt or a completion (a future made on that future's thread, and run there).
enum Work {
    Call(Box<Job>),
    Run(BoxFuture<'static, ()>),
}

/// What arrives at the future that serves.
struct Queue {
    work: mpsc::UnboundedReceiver<Work>,
    /// URIs of resources that changed, from [`McpHandle`]s.
    updated: mpsc::UnboundedReceiver<String>,
}

/// What rmcp calls: it lists what is served and forwards the rest. One per client session.
#[derive(Clone)]
struct Handler {
    name: String,
    tools: Arc<[McpTool]>,
    resources: Arc<Resources>,
    prompts: Arc<Prompts>,
    subscriptions: Arc<Subscriptions>,
    work: mpsc::UnboundedSender<Work>,
    level: Arc<LevelFilter>,
    session: SessionId,
    /// The last session id given out, shared by every session's handler.
    sessions: Arc<AtomicU64>,
}

impl Handler {
    /// The handler of a new client session: the same tools and queue, a level and
    /// subscriptions of its own.
    fn for_session(&self) -> Self {
        let session = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        Self { level: Arc::default(), session, ..self.clone() }
    }

    /// Runs `make`'s future where the service runs its work, and gives its output.
    async fn on_loop<T: Send + 'static>(
        &self,
        make: impl FnOnce() -> BoxFuture<'static, T> + Send + 'static,
    ) -> std::result::Result<T, ErrorData> {
        let (reply, answer) = oneshot::channel();
        let run = async move { drop(reply.send(make().await)) }.boxed();
        self.work.send(Work::Run(run)).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())
    }
}

fn stopped() -> ErrorData {
    ErrorData::internal_error("the service has stopped", None)
}

/// What the application's failure is on the wire: bad arguments are invalid params, a
/// thing not found is MCP's "resource not found", anything else an internal error; each
/// with the message, prefixed by what failed.
fn failure(error: &ToolError, what: &str) -> ErrorData {
    let message = format!("{what}: {}", error.message());
    match error.kind() {
        ToolErrorKind::InvalidArguments => ErrorData::invalid_params(message, None),
        ToolErrorKind::NotFound => ErrorData::resource_not_found(message, None),
        _ => ErrorData::internal_error(message, None),
    }
}

/// A `prompts/get`'s or a completion context's arguments, which MCP makes strings.
fn string_arguments(
    arguments: Option<rmcp::model::JsonObject>,
    whose: &str,
) -> std::result::Result<HashMap<String, String>, ErrorData> {
    arguments
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| match value {
            Value::String(text) => Ok((name, text)),
            other => Err(ErrorData::invalid_params(
                format!("argument `{name}` of {whose} must be a string, got {other}"),
                None,
            )),
        })
        .collect()
}

impl rmcp::ServerHandler for Handler {
    #[allow(deprecated)] // MCP logging (SEP-2577 deprecates it; clients still use it)
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder().enable_tools().enable_logging().build();
        // Declared only when there is something to offer: a client reads each as a promise.
        if !self.resources.is_empty() {
            let mut resources = ResourcesCapability::default();
            (resources.subscribe, resources.list_changed) = (Some(true), Some(false));
            capabilities.resources = Some(resources);
        }
        if !self.prompts.is_empty() {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = Some(false);
            capabilities.prompts = Some(prompts);
        }
        if !self.prompts.is_empty() || self.resources.has_templates() {
            capabilities.completions = Some(rmcp::model::JsonObject::new());
        }
        let mut config = ServerConfig::new(capabilities);
        config.server_info = Implementation::new(self.name.clone(), env!("CARGO_PKG_VERSION"));
        config
    }

    #[allow(deprecated)] // MCP logging (SEP-2577 deprecates it; clients still use it)
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        self.level.set(notify::level_of(request.level));
        Ok(())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let (reply, answer) = oneshot::channel();
        let progress_token = context.meta.get_progress_token().or_else(|| request.meta?.get_progress_token());
        let job = Job {
            name: request.name.to_string(),
            arguments: request.arguments.map_or_else(|| Value::Object(Map::new()), Value::Object),
            cancellation: context.ct.clone(),
            peer: context.peer.clone(),
            progress_token,
            level: self.level.clone(),
            request_id: context.id.clone(),
            reply,
        };
        self.work.send(Work::Call(Box::new(job))).map_err(|_| stopped())?;
        let result = answer.await.map_err(|_| ErrorData::internal_error("the call was dropped", None))?;
        Ok(CallToolResponse::Complete(result))
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(self.resources.listed()))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(self.resources.listed_templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let Some((read, found, media_type)) = self.resources.find(&uri) else {
            return Err(not_found(&uri));
        };
        let what = format!("resource `{uri}`");
        let parts = self.on_loop(move || read(found)).await?.map_err(|e| failure(&e, &what))?;
        let contents = parts
            .into_iter()
            .map(|part| super::content::to_contents(part, &uri, media_type.as_deref()))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| ErrorData::internal_error(format!("{what}: {e}"), None))?;
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(contents)))
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        if self.resources.find(&request.uri).is_none() {
            return Err(not_found(&request.uri));
        }
        self.subscriptions.subscribe(request.uri, self.session, context.peer);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        self.subscriptions.unsubscribe(&request.uri, self.session);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(self.prompts.listed()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<GetPromptResponse, ErrorData> {
        let name = request.name;
        let Some(prompt) = self.prompts.get(&name) else {
            return Err(ErrorData::invalid_params(format!("no prompt named `{name}`"), None));
        };
        let what = format!("prompt `{name}`");
        let arguments = string_arguments(request.arguments, &what)?;
        let fill = prompt.get(arguments).map_err(|message| ErrorData::invalid_params(message, None))?;
        let description = prompt.about().map(str::to_owned);
        let messages = self.on_loop(fill).await?.map_err(|e| failure(&e, &what))?;
        let mut result = GetPromptResult::new(messages.into_iter().map(prompt::wire_message).collect());
        result.description = description;
        Ok(GetPromptResponse::Complete(result))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<CompleteResult, ErrorData> {
        let (completers, what) = match &request.r#ref {
            Reference::Prompt(reference) => match self.prompts.get(&reference.name) {
                Some(prompt) => (Some(&prompt.completers), format!("prompt `{}`", reference.name)),
                None => return Err(ErrorData::invalid_params(format!("no prompt named `{}`", reference.name), None)),
            },
            Reference::Resource(reference) => match self.resources.completers(&reference.uri) {
                Some(completers) => (Some(completers), format!("resource template `{}`", reference.uri)),
                // A static resource has no variables: nothing to complete, but nothing wrong.
                None if self.resources.is_fixed(&reference.uri) => (None, String::new()),
                None => {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "no resource template `{}` (completions are for a template's variables)",
                            reference.uri
                        ),
                        None,
                    ));
                }
            },
            // rmcp's enum is non-exhaustive: a later MCP revision may add kinds.
            _ => {
                return Err(ErrorData::invalid_params(
                    "a completion reference of a kind this version cannot read",
                    None,
                ));
            }
        };
        let argument = request.argument.name;
        let Some(complete) = completers.and_then(|c| c.get(&argument)) else {
            return Ok(CompleteResult::new(completion::info(Vec::new())));
        };
        let arguments = request.context.and_then(|c| c.arguments).unwrap_or_default();
        let asked = CompletionRequest { argument, value: request.argument.value, arguments };
        let what = format!("completing `{}` of {what}", asked.argument);
        let values = self.on_loop(move || complete(asked)).await?.map_err(|e| failure(&e, &what))?;
        Ok(CompleteResult::new(completion::info(values)))
    }
}

/// MCP's "resource not found" (-32002) for `uri`, with the URI as its data, as the
/// specification shows it.
fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(format!("no resource has the URI `{uri}`"), Some(serde_json::json!({"uri": uri})))
}

/// The answer a client gives, by elicitation, to "may this call run?".
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Approval {
    /// Whether the call may run.
    approve: bool,
}

rmcp::elicit_safe!(Approval);

impl McpService {
    /// Serves over stdin and stdout until the client disconnects; on Unix, through copies
    /// of them, as [`serve_fds`](Self::serve_fds) serves.
    ///
    /// # Errors
    /// Stdin or stdout cannot be copied or served, or the MCP handshake failed.
    ///
    /// # Panics
    /// On Unix, outside a tokio runtime with I/O enabled, as [`serve_fds`](Self::serve_fds).
    pub async fn serve_stdio(self) -> std::result::Result<(), String> {
        #[cfg(unix)]
        {
            let (input, output) = super::stdio_copies().map_err(|e| format!("cannot copy stdio: {e}"))?;
            self.serve_fds(input, output).await
        }
        #[cfg(not(unix))]
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves one client reading `input` and writing `output` (stdio's, or copies of
    /// them), until it closes. Pipes and Unix sockets, which is what a client that starts a
    /// server gives it, are read and written as the runtime's reactor finds them ready, on
    /// the thread that serves; anything else goes through tokio's blocking pool. They are
    /// in non-blocking mode while served, and back in blocking mode after.
    ///
    /// Serving copies of stdio, as `serve-mcp` does, leaves the process free to point its
    /// own fd 1 elsewhere, so nothing else it prints reaches the client:
    ///
    /// ```no_run
    /// # async fn serve(service: starweaver::mcp::McpService) -> Result<(), Box<dyn std::error::Error>> {
    /// let (input, output) = starweaver::mcp::stdio_copies()?;
    /// service.serve_fds(input, output).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// An end cannot be read or written, or the MCP handshake failed.
    ///
    /// # Panics
    /// Outside a tokio runtime with I/O enabled (`enable_io`), which the reactor needs.
    #[cfg(unix)]
    pub async fn serve_fds(
        self,
        input: std::os::fd::OwnedFd,
        output: std::os::fd::OwnedFd,
    ) -> std::result::Result<(), String> {
        let input = super::stdio::Input::new(input).map_err(|e| format!("cannot read the input: {e}"))?;
        let output = super::stdio::Output::new(output).map_err(|e| format!("cannot write the output: {e}"))?;
        self.serve_io(input, output).await
    }

    /// Serves one client over a byte stream carrying a JSON-RPC message a line (what stdio
    /// carries), until it closes. Every request is answered, a malformed one with the
    /// JSON-RPC error it calls for; a response or notification sent before `initialize` is
    /// set aside.
    ///
    /// # Errors
    /// The MCP handshake failed.
    pub async fn serve_io<R, W>(mut self, reader: R, writer: W) -> std::result::Result<(), String>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (handler, queue) = self.handler();
        let transport = StdioTransport::new(tokio::io::BufReader::new(reader), writer);
        let service = handler.serve(transport).await.map_err(|e| format!("MCP handshake failed: {e}"))?;
        tokio::select! {
            _ = service.waiting() => Ok(()),
            () = self.run_calls(queue) => Ok(()),
        }
    }

    /// Serves MCP's streamable HTTP at `/mcp` on `listener`, for any number of clients,
    /// until the returned future is dropped.
    ///
    /// Requests must name the listener (its address or `localhost`, with its port) in one
    /// `Host` header, target a path (not an absolute URL) and, from a browser, come from
    /// that same origin (`Origin`, else 403): this keeps a page on another origin from
    /// reaching a local server (DNS rebinding). A body that is not a readable JSON-RPC
    /// message is answered with a JSON-RPC error.
    ///
    /// ```no_run
    /// # async fn serve(service: starweaver::mcp::McpService) -> Result<(), Box<dyn std::error::Error>> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
    /// service.serve_http(listener).await?; // http://127.0.0.1:8000/mcp
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The listener failed.
    pub async fn serve_http(mut self, listener: tokio::net::TcpListener) -> std::result::Result<(), String> {
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

        let (handler, queue) = self.handler();
        // Only this listener's own authority, port included: another local service's port
        // is another origin, as is any page a browser serves.
        let address = listener.local_addr().map_err(|e| format!("the MCP HTTP listener has no address: {e}"))?;
        let own = match address.ip() {
            std::net::IpAddr::V4(ip) => ip.to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        };
        let hosts = ["localhost", "127.0.0.1", "[::1]", &own].map(|host| format!("{host}:{}", address.port()));
        let origins = hosts.clone().map(|host| format!("http://{host}"));
        let mut config = StreamableHttpServerConfig::default().with_allowed_hosts(hosts).with_allowed_origins(origins);
        config.max_request_body_bytes = MAX_HTTP_BODY_BYTES;
        let sessions = Arc::new(LocalSessionManager::default());
        let http = StreamableHttpService::new(move || Ok(handler.for_session()), sessions, config);
        let router = axum::Router::new().nest_service("/mcp", http).layer(axum::middleware::from_fn(check_request));
        tokio::select! {
            served = axum::serve(listener, router) => served.map_err(|e| format!("the MCP HTTP server failed: {e}")),
            () = self.run_calls(queue) => Ok(()),
        }
    }

    /// A handler for rmcp (its first session's), and the queue its work arrives on. The
    /// resource updates arrive there too: a service serves once.
    fn handler(&mut self) -> (Handler, Queue) {
        let (work, queue) = mpsc::unbounded_channel();
        // Serving takes the service, so it serves once: its receiver moves to the queue.
        let (_, none) = mpsc::unbounded_channel();
        let updated = std::mem::replace(&mut self.updated, none);
        let handler = Handler {
            name: self.name.clone(),
            tools: self.registry.definitions().iter().map(describe).collect(),
            resources: self.resources.clone(),
            prompts: self.prompts.clone(),
            subscriptions: self.subscriptions.clone(),
            work,
            level: Arc::default(),
            session: 0,
            sessions: Arc::default(),
        };
        (handler, Queue { work: queue, updated })
    }

    /// Runs work as it comes, side by side: tool calls under the agent's rules (a
    /// `sequential` tool runs alone; calls to one tool run one at a time, in arrival
    /// order), the application's reads, prompts and completions, and the notifications
    /// of resources that changed.
    async fn run_calls(&self, mut queue: Queue) {
        let barrier = RwLock::new(());
        let by_name: HashMap<String, Mutex<()>> =
            self.registry.definitions().iter().map(|d| (d.name.clone(), Mutex::new(()))).collect();
        let mut running: FuturesUnordered<BoxFuture<'_, ()>> = FuturesUnordered::new();
        loop {
            tokio::select! {
                work = queue.work.recv() => match work {
                    Some(Work::Call(job)) => running.push(self.run_call(*job, &barrier, &by_name).boxed()),
                    Some(Work::Run(run)) => running.push(run),
                    None => break,
                },
                Some(uri) = queue.updated.recv() => {
                    let subscriptions = self.subscriptions.clone();
                    running.push(async move { subscriptions.notify(&uri).await }.boxed());
                }
                Some(()) = running.next(), if !running.is_empty() => {}
            }
        }
        while running.next().await.is_some() {}
    }

    /// Runs one call. When the client cancels it, the tool sees `ctx.cancelled()` resolve;
    /// one that does not end within [`CANCEL_GRACE`] is dropped, which cancels it where it
    /// waits (a Python coroutine gets `CancelledError`). A cancelled call is not answered.
    async fn run_call(&self, job: Job, barrier: &RwLock<()>, by_name: &HashMap<String, Mutex<()>>) {
        let cancelled = job.cancellation.clone();
        let call = self.answer(job, barrier, by_name);
        tokio::pin!(call);
        tokio::select! {
            () = &mut call => return,
            () = cancelled.cancelled() => {}
        }
        drop(tokio::time::timeout(CANCEL_GRACE, call).await);
    }

    async fn answer(&self, job: Job, barrier: &RwLock<()>, by_name: &HashMap<String, Mutex<()>>) {
        let registered = self.registry.get(&job.name);
        let sequential = registered.is_some_and(|t| t.sequential);
        let returns = registered.and_then(|t| t.tool.definition().return_schema.as_ref());
        let max_chars = registered.and_then(|t| t.max_return_chars);
        let _order = match by_name.get(&job.name) {
            Some(lock) => Some(lock.lock().await),
            None => None,
        };
        let (_shared, _alone) =
            if sequential { (None, Some(barrier.write().await)) } else { (Some(barrier.read().await), None) };
        let run_id: Arc<str> = Arc::from(format!("mcp_{}", uuid::Uuid::new_v4().simple()));
        let part = ToolCallPart::new(format!("{}", uuid::Uuid::new_v4().simple()), job.name, job.arguments);
        let (notifier, notes) = Notifier::new(job.progress_token, job.level, job.peer.clone(), job.request_id);
        let listener: Arc<dyn CallChannel> = Arc::new(notifier);
        let call = |approval| {
            let request =
                CallRequest { part: &part, approval, answered: None, retry: 0, ahead: None, queued_for: Vec::new() };
            let served = Served { registry: &self.registry, hooks: &self.hooks, dependencies: &self.dependencies };
            let (run_id, cancellation) = (&run_id, &job.cancellation);
            // The client hears what the call reports, and answers what it asks.
            let (listener, answers) = (Some(listener.clone()), listener.clone());
            async move { invoke_alone(served, run_id, cancellation, request, listener, answers).await.0 }
        };
        let answer = async {
            let outcome = call(None).await;
            let CallOutcome::NeedsApproval(waits) = &outcome else {
                return result_of(outcome, returns, max_chars);
            };
            match ask_approval(&job.peer, &part, &waits.reason).await {
                Ok(approval) => result_of(call(Some(Arc::new(approval))).await, returns, max_chars),
                Err(refusal) => CallToolResult::error(vec![Content::text(refusal)]),
            }
        };
        let result = notify::alongside(answer, notes, |note| notify::send(&job.peer, note)).await;
        drop(job.reply.send(result));
    }
}

/// The largest request body the HTTP server reads (rmcp's default).
const MAX_HTTP_BODY_BYTES: usize = 4 * 1024 * 1024;

/// What rmcp's HTTP service lets through but must not: a request target in absolute form
/// (whose authority is not the one `Host` names), several `Host` headers, and a POST body
/// it cannot read, which rmcp answers with a bare 415 where JSON-RPC calls for an error.
async fn check_request(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;

    let text = |status: StatusCode, message: &'static str| (status, message).into_response();
    if request.uri().scheme().is_some() || request.uri().authority().is_some() {
        return text(StatusCode::BAD_REQUEST, "Bad Request: the request target must be a path");
    }
    if request.headers().get_all(header::HOST).iter().count() > 1 {
        return text(StatusCode::BAD_REQUEST, "Bad Request: more than one Host header");
    }
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_HTTP_BODY_BYTES).await else {
        return text(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large: the request body is too large or broken");
    };
    if let Incoming::Refused(error) = wire::read(&bytes) {
        return (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "application/json")], error).into_response();
    }
    next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await
}

/// Asks the client whether `call` may run, by elicitation. The error is what the client
/// is told when it cannot ask, or the answer is no.
async fn ask_approval(
    peer: &Peer<RoleServer>,
    call: &ToolCallPart,
    reason: &str,
) -> std::result::Result<ApprovalDecision, String> {
    let message = format!("Allow `{}` to run with arguments {}? ({reason})", call.name, call.arguments);
    match peer.elicit::<Approval>(message).await {
        Ok(Some(Approval { approve: true })) => Ok(ApprovalDecision {
            id: call.id.to_string(),
            approved: true,
            decided_by: Some("mcp client".to_owned()),
            arguments: Some(call.arguments.clone()),
            ..ApprovalDecision::default()
        }),
        Ok(_) | Err(ElicitationError::UserDeclined | ElicitationError::UserCancelled) => {
            Err(format!("the call was denied: {reason}"))
        }
        Err(ElicitationError::CapabilityNotSupported) => Err(format!("approval is required: {reason}")),
        Err(other) => Err(format!("approval is required and asking for it failed ({other}): {reason}")),
    }
}

/// A call's outcome as MCP content: the model-facing content (never fields the tool kept
/// host-only), content parts as the MCP blocks of their kinds, `isError` for error
/// returns and for calls that need an approval this server cannot get. With a return
/// schema, the value is `structuredContent` once it matches (an `execution` error naming
/// the path if not): MCP requires it to follow the schema, which a value cut to
/// `max_chars` would not, so a cut value goes whole there and cut in the blocks.
fn result_of(outcome: CallOutcome, returns: Option<&Value>, max_chars: Option<u32>) -> CallToolResult {
    match outcome {
        CallOutcome::Returned(ret) => {
            let content = &ret.part.content;
            if ret.part.is_error {
                let message = content.get("message").and_then(Value::as_str).unwrap_or_default().to_owned();
                let mut result = CallToolResult::error(vec![Content::text(message)]);
                result.structured_content = Some(content.clone());
                return result;
            }
            if let Some(schema) = returns {
                return match structured::structured_content(schema, ret.schema_value(max_chars)) {
                    Ok(structured) => {
                        let mut result = CallToolResult::success(blocks(content));
                        result.structured_content = Some(structured);
                        result
                    }
                    Err(message) => {
                        let mut result = CallToolResult::error(vec![Content::text(message.clone())]);
                        result.structured_content = Some(serde_json::json!({
                            "kind": ToolErrorKind::Execution.as_str(), "message": message, "success": false,
                        }));
                        result
                    }
                };
            }
            let mut result = CallToolResult::success(blocks(content));
            if Part::list_from(content).is_some() {
                return result;
            }
            if content.is_object() {
                result.structured_content = Some(content.clone());
            }
            result
        }
        CallOutcome::NeedsApproval(waits) => {
            CallToolResult::error(vec![Content::text(format!("approval is required: {}", waits.reason))])
        }
        CallOutcome::Deferred(waits) => CallToolResult::error(vec![Content::text(format!(
            "the call was deferred and cannot finish here: {}",
            waits.reason
        ))]),
        // Only a tool raising the kind itself gets here: the client answers what served
        // tools ask.
        CallOutcome::NeedsInput(asks) => CallToolResult::error(vec![Content::text(format!(
            "the call waits for the user's answer, which nobody can give here: {}",
            asks.question.message
        ))]),
    }
}

/// Model-facing content as MCP blocks: content parts as the blocks of their kinds, any
/// other value as one text block (a string as it is, else its JSON).
fn blocks(content: &Value) -> Vec<Content> {
    if let Some(parts) = Part::list_from(content) {
        return parts.into_iter().map(super::content::to_block).collect();
    }
    let text = match content {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    vec![Content::text(text)]
}

/// A definition as an MCP tool: name, description, input schema, output schema (from the
/// return schema, `$defs` as they are: a client checks values, it does not fill them), and annotations from
/// the metadata's MCP hint keys. The schema goes with its `$defs` inlined: many MCP
/// clients (the Inspector among them) do not follow a `$ref`, and send such an argument as
/// a string. The `$defs` stay beside the inlined properties, since JSON Schema 2020-12 is
/// MCP's dialect (SEP-1613) and a client may look for them; a recursive schema, which no
/// inlining can finish, keeps its `$ref`s.
fn describe(definition: &crate::tool::ToolDefinition) -> McpTool {
    let inlined = crate::schema::inline_defs(&definition.parameters, crate::schema::DEFAULT_INLINE_LIMIT);
    let mut schema = inlined.as_ref().unwrap_or(&definition.parameters).as_object().cloned().unwrap_or_default();
    if let Some(defs) = definition.parameters.get("$defs") {
        schema.entry("$defs").or_insert_with(|| defs.clone());
    }
    let mut tool =
        McpTool::new_with_raw(definition.name.clone(), definition.description.clone().map(Into::into), schema);
    if let Some(returns) = &definition.return_schema {
        tool.output_schema = Some(Arc::new(structured::output_schema(returns)));
    }
    let hint = |key: &str| definition.metadata.get(key).and_then(Value::as_bool);
    let title = definition.metadata.get("title").and_then(Value::as_str).map(str::to_owned);
    let hints = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"];
    if title.is_some() || hints.iter().any(|k| hint(k).is_some()) {
        tool.annotations = Some(ToolAnnotations::from_raw(
            title,
            hint("readOnlyHint"),
            hint("destructiveHint"),
            hint("idempotentHint"),
            hint("openWorldHint"),
        ));
    }
    tool
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolset::DynamicToolset;

    #[test]
    fn a_dynamic_toolset_cannot_be_served_and_says_why() {
        let dynamic = DynamicToolset::new("phases", |_| Box::pin(async { Ok(Vec::new()) }));
        let err = McpService::builder("x").toolset(dynamic).build().err().unwrap();
        assert!(err.to_string().contains("toolset `phases`") && err.to_string().contains("dynamic"), "{err}");
    }

    #[test]
    fn served_tools_are_named_as_served_in_duplicate_and_collision_errors() {
        let noop = || {
            crate::tool::ToolBuilder::new("deploy")
                .handler(|_: crate::tool::ToolContext, _: Map<String, Value>| async { Ok(()) })
                .unwrap()
        };
        let twice = McpService::builder("x").tool(noop()).tool(noop()).build().err().unwrap();
        assert!(matches!(twice, crate::Error::DuplicateTool { within: "an MCP service", .. }), "{twice:?}");
        assert_eq!(twice.to_string(), "duplicate tool name `deploy`: tool names must be unique within an MCP service");
        let ops = crate::toolset::StaticToolset::new("ops").tool(noop());
        let clash = McpService::builder("x").tool(noop()).toolset(ops).build().err().unwrap();
        assert_eq!(
            clash.to_string(),
            "tool name `deploy` is given by both the served tools and toolset `ops`; rename or prefix one of them"
        );
    }

    #[test]
    fn schemas_are_served_inlined_with_their_defs_kept_and_a_recursive_one_as_it_is() {
        let with_defs = |defs: Value| {
            let parameters =
                serde_json::json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}, "$defs": defs});
            crate::tool::ToolDefinition::new("t", parameters)
        };
        let defs = serde_json::json!({"P": {"type": "string"}});
        let flat = describe(&with_defs(defs.clone()));
        assert_eq!(
            Value::Object((*flat.input_schema).clone()),
            serde_json::json!({"type": "object", "properties": {"p": {"type": "string"}}, "$defs": defs})
        );
        let recursive = serde_json::json!({"P": {"type": "object", "properties": {"next": {"$ref": "#/$defs/P"}}}});
        let kept = describe(&with_defs(recursive.clone()));
        assert_eq!(kept.input_schema.get("$defs"), Some(&recursive));
    }
}
