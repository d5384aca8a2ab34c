//! Progress and log messages as MCP notifications, both ways: a served call's reports
//! become `notifications/progress` (for a request that carried a progress token) and
//! `notifications/message` (at or above the session's `logging/setLevel`), sent in order
//! and before the call's answer; a server's notifications become a call's reports on our
//! side. MCP logging is deprecated by SEP-2577, which clients still use, hence the allows.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use futures::future::BoxFuture;
use rmcp::model::GetMeta;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ClientResult, CreateMessageRequestParams, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, GetExtensions, JsonRpcMessage, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken, RequestId, ServerJsonRpcMessage, ServerNotification, ServerRequest,
};
use rmcp::service::{ElicitationMode, OriginatingRequestId, Peer, RoleClient, RoleServer};
use rmcp::transport::Transport;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::tool::{
    CallChannel, ElicitAnswer, Elicitation, LogLevel, LogMessage, Progress, Sampled, Sampling, ToolContext, ToolError,
};

/// The least severe log message a client session wants; every level until it says.
#[derive(Default)]
pub(super) struct LevelFilter(AtomicU8);

impl LevelFilter {
    pub(super) fn set(&self, level: LogLevel) {
        self.0.store(level as u8, Ordering::Relaxed);
    }

    fn passes(&self, level: LogLevel) -> bool {
        level as u8 >= self.0.load(Ordering::Relaxed)
    }
}

/// MCP's level as ours (the same eight).
pub(super) fn level_of(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

fn mcp_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

/// A log message as MCP's `data`: the message alone, or `{"message", "data"}` with data.
fn log_data(log: &LogMessage) -> Value {
    match &log.data {
        None => Value::String(log.message.clone()),
        Some(data) => {
            let mut object = Map::new();
            object.insert("message".into(), log.message.as_str().into());
            object.insert("data".into(), data.clone());
            Value::Object(object)
        }
    }
}

/// A server's log notification as a log message: [`log_data`]'s two forms read back, any
/// other data as its JSON text with the data kept.
pub(super) fn log_message(notification: LoggingMessageNotificationParam) -> LogMessage {
    let level = level_of(notification.level);
    match notification.data {
        Value::String(message) => LogMessage { level, message, data: None },
        Value::Object(mut object)
            if object.get("message").is_some_and(Value::is_string)
                && object.keys().all(|k| k == "message" || k == "data") =>
        {
            let message = match object.remove("message") {
                Some(Value::String(message)) => message,
                _ => String::new(),
            };
            LogMessage { level, message, data: object.remove("data") }
        }
        data => LogMessage { level, message: data.to_string(), data: Some(data) },
    }
}

/// A server's progress notification as a call's progress; `None` for numbers JSON cannot
/// carry.
pub(super) fn progress_of(notification: &ProgressNotificationParam) -> Option<Progress> {
    Progress::new(notification.progress, notification.total, notification.message.as_deref()).ok()
}

/// The text of a sampled message: its text blocks, joined.
fn sampled_text(message: &impl serde::Serialize) -> String {
    let json = serde_json::to_value(message).unwrap_or_default();
    let blocks = match json.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().collect(),
        block => block.into_iter().collect::<Vec<_>>(),
    };
    let texts: Vec<&str> = blocks.iter().filter_map(|block| block.get("text").and_then(Value::as_str)).collect();
    texts.join("\n")
}

/// A notification to send for a served call.
pub(super) enum Note {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
}

/// A served call's channel: its reports as notifications, queued in order, and its
/// questions as requests to the client, sent with the call's own request.
pub(super) struct Notifier {
    token: Option<ProgressToken>,
    level: Arc<LevelFilter>,
    out: mpsc::UnboundedSender<Note>,
    peer: Peer<RoleServer>,
    /// The `tools/call` request: over HTTP, what the call asks rides its stream (SEP-2260).
    request: RequestId,
}

impl Notifier {
    pub(super) fn new(
        token: Option<ProgressToken>,
        level: Arc<LevelFilter>,
        peer: Peer<RoleServer>,
        request: RequestId,
    ) -> (Self, mpsc::UnboundedReceiver<Note>) {
        let (out, notes) = mpsc::unbounded_channel();
        (Self { token, level, out, peer, request }, notes)
    }

    /// Asks the client, with the call's request as the question's origin.
    async fn ask(&self, call: &ToolContext, request: ServerRequest) -> Result<ClientResult, ToolError> {
        let mut request = request;
        request.extensions_mut().insert(OriginatingRequestId(self.request.clone()));
        self.peer.send_request(request).await.map_err(|error| {
            ToolError::execution(format!(
                "tool `{}` asked the MCP client, which failed to answer: {error}",
                call.tool_name()
            ))
            .not_retryable()
        })
    }
}

/// A call that asked a client that does not offer what it asked for.
fn not_offered(call: &ToolContext, what: &str) -> ToolError {
    ToolError::execution(format!(
        "tool `{}` asked the MCP client for {what}, which the client does not offer",
        call.tool_name()
    ))
    .not_retryable()
}

impl CallChannel for Notifier {
    /// Form elicitation with the tool's own message and schema.
    fn elicit<'a>(
        &'a self,
        call: &'a ToolContext,
        request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitAnswer, ToolError>> {
        Box::pin(async move {
            let schema: ElicitationSchema = serde_json::from_value(request.schema.clone()).map_err(|error| {
                ToolError::user_error(format!(
                    "tool `{}` asked for input with a schema MCP elicitation cannot carry (an object of \
                     string, number, integer, boolean and enum properties): {error}",
                    call.tool_name()
                ))
            })?;
            if !self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
                return Err(not_offered(call, "input (elicitation)"));
            }
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: request.message.clone(),
                requested_schema: schema,
            };
            let asked = ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(params));
            let ClientResult::ElicitResult(answer) = self.ask(call, asked).await? else {
                return Err(ToolError::execution("the MCP client answered an elicitation with something else"));
            };
            Ok(match answer.action {
                ElicitationAction::Accept => ElicitAnswer::Accept {
                    content: match answer.content {
                        Some(Value::Object(content)) => content,
                        _ => Map::new(),
                    },
                },
                ElicitationAction::Decline => ElicitAnswer::Decline,
                // A dismissal, and any action a later revision adds: the user gave nothing.
                _ => ElicitAnswer::Cancel,
            })
        })
    }

    /// Sampling by the client's model.
    fn sample<'a>(&'a self, call: &'a ToolContext, request: &'a Sampling) -> BoxFuture<'a, Result<Sampled, ToolError>> {
        Box::pin(async move {
            if self.peer.peer_info().is_none_or(|info| info.capabilities.sampling.is_none()) {
                return Err(not_offered(call, "a completion (sampling)"));
            }
            let messages: Vec<Value> = request
                .messages
                .iter()
                .map(|m| serde_json::json!({"role": m.role, "content": {"type": "text", "text": m.text}}))
                .collect();
            let mut params = Map::new();
            params.insert("messages".into(), Value::Array(messages));
            params.insert("maxTokens".into(), request.max_tokens.into());
            if let Some(system) = &request.system_prompt {
                params.insert("systemPrompt".into(), system.as_str().into());
            }
            if let Some(temperature) = request.temperature {
                params.insert("temperature".into(), temperature.into());
            }
            let params: CreateMessageRequestParams = serde_json::from_value(Value::Object(params))
                .map_err(|error| ToolError::user_error(format!("a sampling request MCP cannot carry: {error}")))?;
            let asked = ServerRequest::CreateMessageRequest(rmcp::model::CreateMessageRequest::new(params));
            let ClientResult::CreateMessageResult(answer) = self.ask(call, asked).await? else {
                return Err(ToolError::execution("the MCP client answered a sampling request with something else"));
            };
            Ok(Sampled {
                text: sampled_text(&answer.message),
                model: Some(answer.model),
                stop_reason: answer.stop_reason,
            })
        })
    }

    fn progress(&self, _: &ToolContext, progress: &Progress) {
        // Progress goes only where the client asked for it, under its token.
        let Some(token) = &self.token else { return };
        let mut param = ProgressNotificationParam::new(token.clone(), progress.progress);
        param.total = progress.total;
        param.message.clone_from(&progress.message);
        drop(self.out.send(Note::Progress(param)));
    }

    fn log(&self, call: &ToolContext, log: &LogMessage) {
        if self.level.passes(log.level) {
            let param =
                LoggingMessageNotificationParam::new(mcp_level(log.level), log_data(log)).with_logger(call.tool_name());
            drop(self.out.send(Note::Log(param)));
        }
    }
}

/// Runs `call` while handing each of its notifications to `handle` in order, on this
/// task, then the ones left, so all of them precede the answer.
pub(super) async fn alongside<T, N, Handled: Future<Output = ()>>(
    call: impl Future<Output = T>,
    mut notes: mpsc::UnboundedReceiver<N>,
    mut handle: impl FnMut(N) -> Handled,
) -> T {
    tokio::pin!(call);
    let answer = loop {
        tokio::select! {
            biased;
            answer = &mut call => break answer,
            Some(note) = notes.recv() => handle(note).await,
        }
    };
    // A tool that kept its context cannot hold the answer back.
    notes.close();
    while let Ok(note) = notes.try_recv() {
        handle(note).await;
    }
    answer
}

/// Sends one notification; a client that went away misses it, and the call goes on.
pub(super) async fn send(peer: &Peer<RoleServer>, note: Note) {
    let sent = match note {
        Note::Progress(param) => peer.notify_progress(param).await,
        Note::Log(param) => peer.notify_logging_message(param).await,
    };
    if let Err(error) = sent {
        tracing::debug!(%error, "an MCP notification could not be sent");
    }
}

/// A client transport that hands a server's progress and log notifications to their calls
/// as they are read, in order: rmcp runs its notification handlers in tasks of their own,
/// which may run after the call's answer has been taken, and a report must come first.
pub(super) struct Tap<T> {
    inner: T,
    calls: Arc<InFlight>,
}

impl<T> Tap<T> {
    pub(super) fn new(inner: T, calls: Arc<InFlight>) -> Self {
        Self { inner, calls }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Tap<T> {
    type Error = T::Error;

    /// Before a call leaves, binds its listener to the progress token rmcp gave it (rmcp
    /// puts its own on every request), so no notification can come before the binding.
    fn send(
        &mut self,
        mut item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &mut item
            && let ClientRequest::CallToolRequest(call) = &mut request.request
            && let Some(meta) = &mut call.params.meta
            && let Some(listener) = meta.0.0.remove(LISTENER_KEY).as_ref().and_then(Value::as_u64)
        {
            if meta.0.0.is_empty() {
                call.params.meta = None;
            }
            if let Some(token) = request.request.get_meta().get_progress_token() {
                self.calls.bind(listener, token);
            }
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(notification) = &message {
            match &notification.notification {
                ServerNotification::ProgressNotification(progress) => self.calls.progress(&progress.params),
                ServerNotification::LoggingMessageNotification(log) => self.calls.log(log.params.clone()),
                _ => {}
            }
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// The `_meta` key that names a call's listener on its way out; taken off before it leaves.
const LISTENER_KEY: &str = "io.starweaver/listener";

/// A server's question, on its way to the call it belongs to, with where the answer goes.
pub(super) enum Asked {
    Elicit(Elicitation, oneshot::Sender<Result<ElicitAnswer, ToolError>>),
    Sample(Sampling, oneshot::Sender<Result<Sampled, ToolError>>),
}

/// What a server sent about one of our calls, queued for the call to report on its own
/// task: never from rmcp's, which must not wait on a run (a Python run's log takes the
/// interpreter lock to wake its reader).
pub(super) enum Heard {
    Progress(Progress),
    Log(LogMessage),
    Asked(Asked),
}

/// The calls in flight to one server that listen for its notifications, oldest first.
#[derive(Default)]
pub(super) struct InFlight {
    calls: std::sync::Mutex<Vec<Listener>>,
    next: std::sync::atomic::AtomicU64,
}

struct Listener {
    id: u64,
    /// The progress token its request went out with, once it has.
    token: Option<ProgressToken>,
    /// The tool's name on the server, which our server gives as a log message's logger.
    tool: String,
    heard: mpsc::UnboundedSender<Heard>,
}

/// A call's place in [`InFlight`], given up when dropped.
pub(super) struct Listening<'a> {
    calls: &'a InFlight,
    id: u64,
}

impl Listening<'_> {
    /// Marks the call's request as this listener's (see [`Tap`]).
    pub(super) fn mark(&self, meta: &mut rmcp::model::RequestMetaObject) {
        meta.0.0.insert(LISTENER_KEY.into(), self.id.into());
    }
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        self.calls.lock().retain(|listener| listener.id != self.id);
    }
}

impl InFlight {
    /// Listens for the notifications of a call about to be made to the server's `tool`;
    /// what is heard arrives on the receiver.
    pub(super) fn listen(&self, tool: &str) -> (Listening<'_>, mpsc::UnboundedReceiver<Heard>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (heard, reports) = mpsc::unbounded_channel();
        self.lock().push(Listener { id, token: None, tool: tool.to_owned(), heard });
        (Listening { calls: self, id }, reports)
    }

    fn bind(&self, id: u64, token: ProgressToken) {
        if let Some(listener) = self.lock().iter_mut().find(|listener| listener.id == id) {
            listener.token = Some(token);
        }
    }

    /// A server's progress, for the call whose token it names.
    pub(super) fn progress(&self, notification: &ProgressNotificationParam) {
        let Some(progress) = progress_of(notification) else { return };
        let calls = self.lock();
        if let Some(listener) = calls.iter().find(|l| l.token.as_ref() == Some(&notification.progress_token)) {
            drop(listener.heard.send(Heard::Progress(progress)));
        }
    }

    /// A server's log message. MCP's log notifications name no request, so it goes to the
    /// one call in flight, or else to the one call of the tool its logger names (our
    /// server names the tool); otherwise it belongs to no run we can tell, and giving it to
    /// some call could show one session another's logs.
    pub(super) fn log(&self, notification: LoggingMessageNotificationParam) {
        let calls = self.lock();
        let named = |listener: &&Listener| notification.logger.as_deref() == Some(listener.tool.as_str());
        let listener = match calls.as_slice() {
            [only] => Some(only),
            _ => {
                let mut of_tool = calls.iter().filter(named);
                of_tool.next().filter(|_| of_tool.next().is_none())
            }
        };
        match listener {
            Some(listener) => drop(listener.heard.send(Heard::Log(log_message(notification)))),
            None => tracing::debug!(?notification, "an MCP server's log message matches no single call in flight"),
        }
    }

    /// A server's question (elicitation, sampling). MCP's requests name no call of ours
    /// either: it goes to the one call in flight, and with several, asking one user for
    /// another's answer is worse than not answering.
    ///
    /// # Errors
    /// Why no call can take the question.
    pub(super) fn ask(&self, asked: Asked) -> Result<(), String> {
        let calls = self.lock();
        match calls.as_slice() {
            [only] => only.heard.send(Heard::Asked(asked)).map_err(|_| "the call it belongs to has ended".to_owned()),
            [] => Err("no call of this client is running to answer it".to_owned()),
            several => {
                Err(format!("{} calls of this client are running, and a request names none of them", several.len()))
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Listener>> {
        self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
