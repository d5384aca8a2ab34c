//! The client side: an MCP server's tools as a dynamic toolset.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, CallToolResult, PaginatedRequestParams};
use rmcp::service::{ClientServiceExt, Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value};

use super::asked::{Answering, Client, reporting};
use super::auth::{AuthorizedHttp, Authorizer, OAuth};
use super::notify::{InFlight, Tap};
use super::wire::{ClientTransport, Fault};
use crate::tool::{ElicitationHandler, SamplingHandler, Tool, ToolContext, ToolDefinition, ToolError, ToolResult};
use crate::toolset::{Toolset, ToolsetContext, ToolsetError};

/// How many stderr lines of a server are kept to explain its failures, and how much of
/// each: its stderr is read to the end, whatever it holds, so it never fills its pipe.
const STDERR_TAIL: usize = 20;
const STDERR_LINE_BYTES: usize = 1024;
/// How long the handshake and each listing of tools may take when no `timeout_ms` is set.
const DEFAULT_REQUEST_MS: u64 = 30_000;
/// How many pages of tools a server may list: a cursor that never ends is an error.
const MAX_PAGES: usize = 100;
/// How long a stopped server has to exit once its stdin is closed before it is killed.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(1);
/// How many times a call is repeated after the server's transport failed.
const TRANSPORT_RETRIES: u32 = 1;
/// How many times a broken HTTP event stream is reopened before its calls fail; rmcp's
/// default never gives up, so a server that went away would hang its calls.
const SSE_RECONNECTS: usize = 3;

/// Reconnects to a streamable HTTP server: 0.25 s, 0.5 s, 1 s, then the calls fail.
fn reconnects() -> ExponentialBackoff {
    let mut policy = ExponentialBackoff::default();
    policy.max_times = Some(SSE_RECONNECTS);
    policy.base_duration = std::time::Duration::from_millis(250);
    policy
}

/// An MCP server as a toolset: build it with [`McpServer::stdio`] or [`McpServer::http`].
#[derive(Clone)]
pub struct McpServer(Arc<Inner>);

/// How the client opens a session with a server: which MCP revision it offers, and how.
///
/// ```
/// use starweaver::mcp::{McpProtocol, McpServer};
///
/// let server = McpServer::http("tickets", "http://127.0.0.1:8000/mcp").protocol(McpProtocol::Auto);
/// assert_eq!(McpProtocol::default(), McpProtocol::Initialize);
/// # drop(server);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum McpProtocol {
    /// `initialize`, offering 2025-11-25 (the server may answer with an older revision):
    /// what servers speak today.
    #[default]
    Initialize,
    /// `server/discover`, stateless 2026-07-28: for servers of that revision; a server
    /// that does not know it fails the handshake.
    Discover,
    /// `server/discover` first, then `initialize` when the server does not know it (an
    /// older server costs a round trip more).
    Auto,
}

impl std::str::FromStr for McpProtocol {
    type Err = String;

    /// `"initialize"`, `"discover"` or `"auto"`.
    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "initialize" => Ok(Self::Initialize),
            "discover" => Ok(Self::Discover),
            "auto" => Ok(Self::Auto),
            other => Err(format!("protocol must be 'initialize', 'discover' or 'auto', got {other:?}")),
        }
    }
}

impl McpProtocol {
    fn lifecycle(self) -> rmcp::service::ClientLifecycleMode {
        use rmcp::model::ProtocolVersion;
        use rmcp::service::ClientLifecycleMode;
        match self {
            Self::Initialize => ClientLifecycleMode::Initialize,
            Self::Discover => ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] },
            Self::Auto => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
            },
        }
    }
}

/// How to reach a server.
#[derive(Clone)]
enum Launch {
    Stdio { command: String, args: Vec<String>, env: BTreeMap<String, String>, cwd: Option<PathBuf> },
    Http { url: String, headers: Vec<(String, String)>, auth: Option<Arc<Authorizer>> },
}

struct Inner {
    name: String,
    launch: Launch,
    protocol: McpProtocol,
    timeout_ms: Option<u64>,
    connection: tokio::sync::Mutex<Option<Connection>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// What the server did wrong that ended its session, if it did.
    fault: Fault,
    /// The calls in flight, to hand them the server's notifications and questions.
    calls: Arc<InFlight>,
    /// Answers the server's elicitation before anyone else would.
    elicitation: Option<Arc<dyn ElicitationHandler>>,
    /// Answers the server's sampling before the run's model would.
    sampling: Option<Arc<dyn SamplingHandler>>,
    /// The `instructions` of the server's last handshake, sent with the agent's while its
    /// tools are offered (unless turned off).
    instructions: Mutex<Option<Arc<str>>>,
    /// Whether the server's instructions reach the model.
    use_instructions: bool,
}

/// A session with a server, as rmcp runs it.
type Session = RunningService<RoleClient, Client>;

/// What the client says of itself in `initialize`: its own name and version, and the
/// newest protocol revision that has that handshake (rmcp's default names rmcp, and a
/// revision that has none).
fn client_info() -> rmcp::model::ClientConfig {
    let implementation = rmcp::model::Implementation::new("starweaver", env!("CARGO_PKG_VERSION"));
    let mut info = rmcp::model::ClientConfig::new(rmcp::model::ClientCapabilities::default(), implementation);
    info.protocol_version = rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE;
    info
}

/// A started server: the rmcp session, and for stdio the child process, kept to stop it.
struct Connection {
    service: Session,
    child: Option<tokio::process::Child>,
    /// Tells connections apart, so a failed one is discarded only if still current.
    generation: u64,
}

impl Connection {
    /// Ends the session and waits for rmcp's task, then for the process, killing it if it
    /// does not exit (a hung server ignores its closed stdin).
    async fn stop(mut self) {
        drop(self.service.close_with_timeout(EXIT_GRACE).await);
        if let Some(mut child) = self.child.take()
            && tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_err()
        {
            drop(child.kill().await);
        }
    }
}

impl McpServer {
    /// A server started as `command` (a child process speaking MCP on stdio) and named
    /// `name` in errors, approval rules and collisions.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        let launch = Launch::Stdio { command: command.into(), args: Vec::new(), env: BTreeMap::new(), cwd: None };
        Self::new(name.into(), launch)
    }

    /// A server reached over MCP's streamable HTTP at `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(name.into(), Launch::Http { url: url.into(), headers: Vec::new(), auth: None })
    }

    fn new(name: String, launch: Launch) -> Self {
        Self(Arc::new(Inner {
            name,
            launch,
            protocol: McpProtocol::default(),
            timeout_ms: None,
            connection: tokio::sync::Mutex::new(None),
            stderr: Arc::default(),
            fault: Arc::default(),
            calls: Arc::default(),
            elicitation: None,
            sampling: None,
            instructions: Mutex::default(),
            use_instructions: true,
        }))
    }

    fn edit(self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Arc::try_unwrap(self.0).unwrap_or_else(|shared| Inner {
            name: shared.name.clone(),
            launch: shared.launch.clone(),
            protocol: shared.protocol,
            timeout_ms: shared.timeout_ms,
            connection: tokio::sync::Mutex::new(None),
            stderr: Arc::default(),
            fault: Arc::default(),
            calls: Arc::default(),
            elicitation: shared.elicitation.clone(),
            sampling: shared.sampling.clone(),
            instructions: Mutex::default(),
            use_instructions: shared.use_instructions,
        });
        change(&mut inner);
        Self(Arc::new(inner))
    }

    /// The command's arguments (stdio servers).
    #[must_use]
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(self, more: I) -> Self {
        self.edit(|inner| {
            if let Launch::Stdio { args, .. } = &mut inner.launch {
                args.extend(more.into_iter().map(Into::into));
            }
        })
    }

    /// An environment variable for the server process (stdio servers).
    #[must_use]
    pub fn env(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.edit(|inner| {
            if let Launch::Stdio { env, .. } = &mut inner.launch {
                env.insert(name.into(), value.into());
            }
        })
    }

    /// The server process's working directory (stdio servers).
    #[must_use]
    pub fn cwd(self, dir: impl Into<PathBuf>) -> Self {
        self.edit(|inner| {
            if let Launch::Stdio { cwd, .. } = &mut inner.launch {
                *cwd = Some(dir.into());
            }
        })
    }

    /// A header on every request (HTTP servers).
    #[must_use]
    pub fn header(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.edit(|inner| {
            if let Launch::Http { headers, .. } = &mut inner.launch {
                headers.push((name.into(), value.into()));
            }
        })
    }

    /// How the session is opened ([`McpProtocol`]; `initialize` unless set).
    #[must_use]
    pub fn protocol(self, protocol: McpProtocol) -> Self {
        self.edit(|inner| inner.protocol = protocol)
    }

    /// Answers the server's elicitation requests (form mode) before anyone else: without
    /// one, a call in an agent run asks as the run's tools ask (the agent's elicitation
    /// handler, else a pending elicitation of the run, after which the tool is called
    /// again and its question answered), and a call made directly cannot be answered. An
    /// accepted answer gets the schema's defaults for what it leaves out.
    ///
    /// ```
    /// use starweaver::mcp::McpServer;
    /// use starweaver::tool::{ElicitAnswer, Elicitation};
    /// use starweaver::ToolContext;
    ///
    /// let server = McpServer::http("forms", "http://127.0.0.1:8000/mcp")
    ///     .elicitation_handler(|_: &ToolContext, _: &Elicitation| async { Ok(ElicitAnswer::Decline) });
    /// ```
    #[must_use]
    pub fn elicitation_handler(self, handler: impl ElicitationHandler + 'static) -> Self {
        self.edit(|inner| inner.elicitation = Some(Arc::new(handler)))
    }

    /// Answers the server's sampling requests (text messages) before anyone else: without
    /// one, a call in an agent run has the agent's model answer (without tools), and a
    /// call made directly cannot be answered.
    #[must_use]
    pub fn sampling_handler(self, handler: impl SamplingHandler + 'static) -> Self {
        self.edit(|inner| inner.sampling = Some(Arc::new(handler)))
    }

    /// OAuth 2.1 for this server (HTTP servers): it is authorized when it asks, and each
    /// request carries its token. See [`OAuth`].
    #[must_use]
    pub fn auth(self, oauth: OAuth) -> Self {
        self.edit(|inner| {
            if let Launch::Http { url, auth, .. } = &mut inner.launch {
                *auth = Some(Arc::new(Authorizer::new(inner.name.clone(), url.clone(), oauth)));
            }
        })
    }

    /// A timeout for each request to the server: each call of its tools (cancelled on the
    /// server when it fires), the handshake, and each listing of its tools (30 s without it).
    #[must_use]
    pub fn timeout_ms(self, timeout_ms: u64) -> Self {
        self.edit(|inner| inner.timeout_ms = Some(timeout_ms))
    }

    /// Whether the `instructions` the server gives in its handshake are sent with the
    /// agent's while its tools are offered (they are unless turned off here).
    #[must_use]
    pub fn use_instructions(self, use_instructions: bool) -> Self {
        self.edit(|inner| inner.use_instructions = use_instructions)
    }

    /// Starts the server now if it is not running (it also starts on first use).
    ///
    /// # Errors
    /// The server did not start or did not complete the MCP handshake.
    pub async fn connect(&self) -> Result<(), String> {
        self.0.client().await.map(drop)
    }

    /// Calls one of the server's tools directly, outside any agent run (no scheduler,
    /// events or approvals), within the server's `timeout_ms` if set; dropping the future
    /// sends MCP's cancel. The value is what the tool's return would carry.
    ///
    /// ```no_run
    /// # async fn call() -> Result<(), starweaver::ToolError> {
    /// let echo = starweaver::mcp::McpServer::stdio("echo", "python").args(["echo_server.py"]);
    /// let value = echo.call_tool("echo", serde_json::json!({"text": "hi"})).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// An `execution` error for an `isError` result or a server that failed (named, with
    /// its stderr's tail); a `timeout` error past `timeout_ms`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, ToolError> {
        let call = self.0.call(name, &arguments, None);
        let result = match self.0.timeout_ms {
            Some(ms) => tokio::time::timeout(std::time::Duration::from_millis(ms), call)
                .await
                .map_err(|_| ToolError::timeout(self.0.failure(&format!("did not answer `{name}` within {ms} ms"))))?,
            None => call.await,
        };
        outcome(result?).map(|result| result.value)
    }

    /// Stops the server, waiting for it to go (a stdio server that does not exit within a
    /// second of its stdin closing is killed); the next use starts it again.
    pub async fn close(&self) {
        let connection = self.0.connection.lock().await.take();
        if let Some(connection) = connection {
            connection.stop().await;
        }
    }
}

impl Inner {
    /// The time the handshake and each listing may take.
    fn request_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.timeout_ms.unwrap_or(DEFAULT_REQUEST_MS))
    }

    /// What answers the server's requests in a session with it.
    fn handler(&self) -> Client {
        Client::new(client_info(), self.calls.clone())
    }

    /// The running session (its peer and generation), started if needed.
    async fn client(&self) -> Result<(Peer<RoleClient>, u64), String> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref().filter(|c| !c.service.is_closed()) {
            return Ok((connection.service.peer().clone(), connection.generation));
        }
        let generation = slot.as_ref().map_or(0, |c| c.generation + 1);
        if let Some(closed) = slot.take() {
            tokio::spawn(closed.stop());
        }
        *self.fault.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        let (service, child) = self.start().await?;
        let peer = service.peer().clone();
        *slot = Some(Connection { service, child, generation });
        Ok((peer, generation))
    }

    /// Starts the server and completes the handshake within the request timeout.
    async fn start(&self) -> Result<(Session, Option<tokio::process::Child>), String> {
        match &self.launch {
            Launch::Stdio { command, args, env, cwd } => {
                let mut process = tokio::process::Command::new(command);
                process
                    .args(args)
                    .envs(env)
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .kill_on_drop(true);
                if let Some(dir) = cwd {
                    process.current_dir(dir);
                }
                let mut child =
                    process.spawn().map_err(|e| self.failure(&format!("failed to start `{command}`: {e}")))?;
                let (Some(stdin), Some(stdout), Some(stderr)) =
                    (child.stdin.take(), child.stdout.take(), child.stderr.take())
                else {
                    return Err(self.failure("started without the pipes it was given"));
                };
                self.keep_tail(stderr);
                let transport = ClientTransport::new(tokio::io::BufReader::new(stdout), stdin, self.fault.clone());
                // On failure the child is dropped here, which kills it.
                Ok((
                    self.handshake(Box::pin(
                        self.handler()
                            .serve_with_lifecycle(Tap::new(transport, self.calls.clone()), self.protocol.lifecycle()),
                    ))
                    .await?,
                    Some(child),
                ))
            }
            Launch::Http { url, headers, auth } => {
                let mut custom = std::collections::HashMap::new();
                for (name, value) in headers {
                    let name = reqwest::header::HeaderName::try_from(name.as_str())
                        .map_err(|e| self.failure(&format!("has an invalid header name `{name}`: {e}")))?;
                    let value = reqwest::header::HeaderValue::try_from(value.as_str())
                        .map_err(|e| self.failure(&format!("has an invalid value for header `{name}`: {e}")))?;
                    custom.insert(name, value);
                }
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                config.custom_headers = custom;
                config.retry_config = Arc::new(reconnects());
                if let Some(authorizer) = auth {
                    let http = AuthorizedHttp::new(authorizer.clone()).map_err(|e| self.failure(&e))?;
                    let transport = StreamableHttpClientTransport::with_client(http, config);
                    return Ok((
                        self.handshake(Box::pin(
                            self.handler().serve_with_lifecycle(
                                Tap::new(transport, self.calls.clone()),
                                self.protocol.lifecycle(),
                            ),
                        ))
                        .await?,
                        None,
                    ));
                }
                Ok((
                    self.handshake(Box::pin(self.handler().serve_with_lifecycle(
                        Tap::new(StreamableHttpClientTransport::from_config(config), self.calls.clone()),
                        self.protocol.lifecycle(),
                    )))
                    .await?,
                    None,
                ))
            }
        }
    }

    /// The MCP handshake, within the request timeout. Callers box `handshake`: rmcp's is
    /// about 16 KB, too much to carry inline in every future that may start the server.
    async fn handshake(
        &self,
        handshake: impl Future<Output = Result<Session, rmcp::service::ClientInitializeError>>,
    ) -> Result<Session, String> {
        let limit = self.request_timeout();
        match tokio::time::timeout(limit, handshake).await {
            Ok(Ok(service)) => {
                let instructions = service.peer().peer_info().and_then(|info| info.instructions.clone());
                *self.instructions.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                    instructions.filter(|text| !text.trim().is_empty()).map(Arc::from);
                Ok(service)
            }
            Ok(Err(e)) => Err(self.failure(&format!("did not complete the MCP handshake: {}", self.fault_or(e)))),
            Err(_) => Err(self.failure(&format!("did not complete the MCP handshake within {} ms", limit.as_millis()))),
        }
    }

    /// Keeps the last lines of a server's stderr, to explain its failures. It reads to the
    /// end whatever comes (any bytes, lines of any length), holding a bounded tail.
    fn keep_tail(&self, mut stderr: tokio::process::ChildStderr) {
        use tokio::io::AsyncReadExt;
        let tail = self.stderr.clone();
        tokio::spawn(async move {
            let mut chunk = vec![0; 8192];
            let mut line = Vec::new();
            while let Ok(read) = stderr.read(&mut chunk).await
                && read > 0
            {
                #[allow(clippy::indexing_slicing)] // `read` is at most the buffer's length (`AsyncRead`'s contract)
                let bytes = &chunk[..read];
                for piece in bytes.split_inclusive(|&b| b == b'\n') {
                    let room = STDERR_LINE_BYTES.saturating_sub(line.len());
                    line.extend_from_slice(piece.get(..room).unwrap_or(piece));
                    if piece.ends_with(b"\n") {
                        let text = String::from_utf8_lossy(line.trim_ascii_end()).into_owned();
                        line.clear();
                        let mut tail = tail.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        if tail.len() == STDERR_TAIL {
                            tail.pop_front();
                        }
                        tail.push_back(text);
                    }
                }
            }
        });
    }

    /// A failure of this server, named, with the tail of its stderr.
    fn failure(&self, what: &str) -> String {
        let tail = self.stderr.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut message = format!("MCP server `{}` {what}", self.name);
        if !tail.is_empty() {
            message.push_str("; its stderr ends with:\n");
            message.push_str(&tail.iter().cloned().collect::<Vec<_>>().join("\n"));
        }
        message
    }

    /// Why a request failed: what the server did wrong if that ended the session, else
    /// the error rmcp gave.
    fn fault_or(&self, error: impl std::fmt::Display) -> String {
        let fault = self.fault.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        fault.unwrap_or_else(|| error.to_string())
    }

    /// Forgets a session that failed, so the next use starts the server again.
    async fn discard(&self, generation: u64) {
        let mut slot = self.connection.lock().await;
        if slot.as_ref().is_some_and(|c| c.generation == generation)
            && let Some(connection) = slot.take()
        {
            tokio::spawn(connection.stop());
        }
    }

    /// Calls tool `name`; the server's progress and log notifications meanwhile are
    /// reported by `ctx`'s call, when it listens, and its questions answered (see
    /// [`Answering`]).
    ///
    /// # Errors
    /// The server failed (named, with its stderr's tail), or a question must wait for the
    /// run's resume (`elicitation_required`: the call's outcome, whatever the server did
    /// once told so).
    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        ctx: Option<&ToolContext>,
    ) -> Result<CallToolResult, ToolError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments.clone());
        }
        let (listening, heard) = self.calls.listen(name);
        listening.mark(params.meta.get_or_insert_with(Default::default));
        let answering = Answering {
            tool: name,
            ctx: ctx.filter(|ctx| ctx.listens()),
            elicitation: self.elicitation.as_deref(),
            sampling: self.sampling.as_deref(),
            waiting: std::sync::Mutex::default(),
        };
        // Boxed: rmcp's request future is large, and wrapped in the reporting loop it
        // makes every call of this server's tools carry it inline.
        let result = reporting(Box::pin(self.send_call(name, params)), heard, &answering).await;
        drop(listening);
        if let Some(waiting) = answering.waiting.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
            return Err(waiting);
        }
        result.map_err(|message| ToolError::execution(message).not_retryable())
    }

    /// Sends a call, once more if the transport failed.
    async fn send_call(&self, name: &str, params: CallToolRequestParams) -> Result<CallToolResult, String> {
        let mut attempt = 0;
        loop {
            let (client, generation) = self.client().await?;
            match client.call_tool(params.clone()).await {
                Ok(result) => return Ok(result),
                Err(error) => {
                    self.discard(generation).await;
                    let faulty = self.fault.lock().unwrap_or_else(std::sync::PoisonError::into_inner).is_some();
                    // A server that broke the protocol would break it again: no retry.
                    if faulty || attempt >= TRANSPORT_RETRIES {
                        return Err(self.failure(&format!("failed during `{name}`: {}", self.fault_or(&error))));
                    }
                    attempt += 1;
                }
            }
        }
    }

    /// Every page of the server's tools, within the request timeout, at most [`MAX_PAGES`].
    async fn list(&self) -> Result<Vec<rmcp::model::Tool>, String> {
        let (client, generation) = self.client().await?;
        let limit = self.request_timeout();
        let listing = async {
            let mut tools = Vec::new();
            let mut cursor = None;
            for _ in 0..MAX_PAGES {
                let page = client.list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
                tools.extend(page.tools);
                cursor = page.next_cursor;
                if cursor.is_none() {
                    return Ok(Some(tools));
                }
            }
            Ok::<_, rmcp::ServiceError>(None)
        };
        let failed = match tokio::time::timeout(limit, listing).await {
            Ok(Ok(Some(tools))) => return Ok(tools),
            Ok(Ok(None)) => format!("listed more than {MAX_PAGES} pages of tools"),
            Ok(Err(error)) => format!("could not list its tools: {}", self.fault_or(&error)),
            Err(_) => format!("did not list its tools within {} ms", limit.as_millis()),
        };
        self.discard(generation).await;
        Err(self.failure(&failed))
    }
}

impl Toolset for McpServer {
    fn name(&self) -> &str {
        &self.0.name
    }

    /// The `instructions` the server gave in its last handshake (read after each listing,
    /// so they are the running session's).
    fn instructions(&self) -> Option<Arc<str>> {
        if !self.0.use_instructions {
            return None;
        }
        self.0.instructions.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn list_tools<'a>(&'a self, ctx: &'a ToolsetContext) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolsetError>> {
        Box::pin(async move {
            let mut seen = std::collections::HashSet::new();
            let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
            for tool in self.0.list().await? {
                let definition = ToolDefinition {
                    name: tool.name.to_string(),
                    description: tool.description.map(|d| d.to_string()),
                    parameters: Value::Object((*tool.input_schema).clone()),
                    strict: None,
                    sequential: false,
                    defer_loading: false,
                    timeout_ms: self.0.timeout_ms,
                    max_return_chars: None,
                    max_retries: None,
                    max_concurrency: None,
                    max_uses: None,
                    metadata: annotations(tool.annotations.as_ref()),
                    return_schema: tool.output_schema.map(|schema| Value::Object((*schema).clone())),
                };
                // One bad tool (its input or output schema malformed, say) is refused by
                // name; the server's other tools stay usable.
                let refused = match definition.validate() {
                    Err(error) => Some(error.to_string()),
                    Ok(()) if !seen.insert(definition.name.clone()) => {
                        Some(format!("it lists `{}` twice", definition.name))
                    }
                    Ok(()) => None,
                };
                if let Some(why) = refused {
                    tracing::warn!(server = %self.0.name, tool = %definition.name, "MCP server `{}` offers a tool that cannot be used: {why}", self.0.name);
                    ctx.refuse_tool(definition.name, why);
                    continue;
                }
                tools.push(Arc::new(McpTool { server: self.0.clone(), definition }));
            }
            Ok(tools)
        })
    }
}

/// A server's tool annotations as model-facing metadata.
fn annotations(annotations: Option<&rmcp::model::ToolAnnotations>) -> Map<String, Value> {
    match annotations.map(serde_json::to_value) {
        Some(Ok(Value::Object(map))) if !map.is_empty() => {
            let mut metadata = Map::new();
            metadata.insert("mcp_annotations".into(), Value::Object(map));
            metadata
        }
        _ => Map::new(),
    }
}

/// One tool of an MCP server.
struct McpTool {
    server: Arc<Inner>,
    definition: ToolDefinition,
}

impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call<'a>(&'a self, ctx: ToolContext, args: &'a Value) -> BoxFuture<'a, Result<ToolResult, ToolError>> {
        Box::pin(async move {
            // Dropping the request on cancellation sends MCP's `notifications/cancelled`.
            let result = tokio::select! {
                biased;
                () = ctx.cancelled() => return Err(ToolError::cancelled("the call was cancelled")),
                result = self.server.call(&self.definition.name, args, Some(&ctx)) => result,
            };
            outcome(result?)
        })
    }
}

/// A call's result as the model sees it: structured content when the server gave it, else
/// the text (one block as a string, several as a list), else, when any block is not text
/// (an image, audio, a resource), every block as a content part. `isError` is an error
/// return the model reads.
fn outcome(result: CallToolResult) -> Result<ToolResult, ToolError> {
    let texts: Option<Vec<&str>> =
        result.content.iter().map(|block| block.as_text().map(|t| t.text.as_str())).collect();
    if result.is_error == Some(true) {
        let text = texts.unwrap_or_default().join("\n");
        let message = if text.is_empty() { "the tool reported an error".to_owned() } else { text };
        return Err(ToolError::execution(message).not_retryable());
    }
    if let Some(structured) = result.structured_content {
        return Ok(ToolResult::new(structured));
    }
    let value = match texts.as_deref() {
        Some([]) => Value::Null,
        Some([text]) => Value::String((*text).to_owned()),
        Some(texts) => texts.iter().map(|t| Value::String((*t).to_owned())).collect(),
        None => {
            let parts = result.content.iter().map(super::content::from_block).collect::<Result<Vec<_>, _>>();
            let parts = parts.map_err(|e| ToolError::execution(format!("the server's result: {e}")).not_retryable())?;
            return Ok(ToolResult::from(parts));
        }
    };
    Ok(ToolResult::new(value))
}
