//! `ToolContext`: what a running tool may know about its call and its run.

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use futures::future::BoxFuture;

use super::ask::{ElicitAnswer, Elicitation, Replies, Sampled, Sampling};
use super::error::{ToolError, ToolErrorKind};
use super::report::{LogLevel, LogMessage, Progress};
use crate::hitl::ApprovalDecision;

/// Typed values the application hands to its tools (a database pool, an HTTP client).
/// One value per type; cheap to clone.
///
/// ```
/// use starweaver::Dependencies;
///
/// struct Db(&'static str);
/// let deps = Dependencies::new().with(Db("postgres://"));
/// assert_eq!(deps.get::<Db>().unwrap().0, "postgres://");
/// assert!(deps.get::<String>().is_none());
/// ```
#[derive(Clone, Default)]
pub struct Dependencies {
    values: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Dependencies {
    /// No dependencies.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the value of type `T`.
    #[must_use]
    pub fn with<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        Arc::make_mut(&mut self.values).insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// The value of type `T`, if the application supplied one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.values.get(&TypeId::of::<T>()).and_then(|v| v.downcast_ref())
    }
}

impl std::fmt::Debug for Dependencies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dependencies").field("len", &self.values.len()).finish()
    }
}

/// The runtime state of one tool call, handed to the tool.
///
/// ```
/// use starweaver::ToolContext;
///
/// let ctx = ToolContext::detached("add");
/// assert_eq!(ctx.tool_name(), "add");
/// assert!(!ctx.is_cancelled());
/// assert!(ctx.approval().is_none());
/// ```
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// What the call shares with every call of its run.
    pub(crate) scope: Arc<RunScope>,
    pub(crate) tool_call_id: Arc<str>,
    pub(crate) tool_name: Arc<str>,
    pub(crate) retry: u32,
    pub(crate) attempt: u32,
    pub(crate) max_retries: u32,
    /// The attempt's own cancellation (a timed tool's, which its timeout cancels); `None`
    /// for the run's.
    pub(crate) cancellation: Option<Arc<CancellationToken>>,
    pub(crate) approval: Option<Arc<ApprovalDecision>>,
    /// The answers a call invoked again after waiting for them replays.
    pub(crate) replies: Option<Arc<Replies>>,
    /// What a language binding keeps with this context ([`ToolContext::binding_slot`]).
    pub(crate) binding: BindingSlot,
}

/// What a context of one attempt holds of its own.
pub(crate) struct Attempt {
    pub retry: u32,
    pub attempt: u32,
    pub max_retries: u32,
    pub cancellation: Option<Arc<CancellationToken>>,
    pub replies: Option<Arc<Replies>>,
}

/// What every call of one run shares (one call served alone has a scope of its own): held
/// by each context under one reference count. A context is made for every attempt of every
/// call; each count taken is an atomic operation, about five nanoseconds here, and this
/// makes it one where it was four. (A call's hooks borrow one that takes none:
/// [`Lent`](super::Lent).)
#[derive(Debug, Clone)]
pub(crate) struct RunScope {
    pub(crate) run_id: Arc<str>,
    /// Cancelled when the run is.
    pub(crate) cancellation: CancellationToken,
    pub(crate) dependencies: Dependencies,
    /// Where progress and log messages go, and who answers questions; `None` outside any
    /// run.
    pub(crate) channel: Option<Channel>,
}

impl RunScope {
    /// The scope of a run with `run_id` and `dependencies`, whose calls talk through
    /// `channel` and stop when `cancellation` is cancelled.
    pub(crate) fn new(
        run_id: Arc<str>,
        cancellation: CancellationToken,
        dependencies: Dependencies,
        channel: Option<Channel>,
    ) -> Arc<Self> {
        Arc::new(Self { run_id, cancellation, dependencies, channel })
    }
}

/// One value a language binding keeps with a context, and how many times hooks have
/// rewritten the call's arguments since the context was made. A clone of the context
/// starts without either: the value describes the context it was made for, and a clone is
/// another.
#[derive(Default)]
pub(crate) struct BindingSlot {
    kept: OnceLock<Arc<dyn Any + Send + Sync>>,
    pub(crate) rewrites: u32,
}

impl Clone for BindingSlot {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for BindingSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BindingSlot")
    }
}

/// Where a call's progress and log messages go, and who answers what it asks:
/// implemented by whoever runs calls (an agent run, the MCP server, a durable engine's
/// worker), never by tools. `progress` and `log` are called on the tool's own thread,
/// possibly often: they must return at once, and must not wait on anything a tool's
/// thread may hold (a lock, Python's interpreter lock).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use starweaver::tool::{CallChannel, LogMessage, Progress};
/// use starweaver::ToolContext;
///
/// #[derive(Default)]
/// struct Recorder(Mutex<Vec<f64>>);
///
/// impl CallChannel for Recorder {
///     fn progress(&self, _: &ToolContext, progress: &Progress) {
///         self.0.lock().unwrap().push(progress.progress);
///     }
///     fn log(&self, _: &ToolContext, _: &LogMessage) {}
/// }
///
/// let recorder = Arc::new(Recorder::default());
/// let ctx = ToolContext::detached("index").with_channel(recorder.clone());
/// ctx.report_progress(1.0, Some(2.0), None).unwrap();
/// assert_eq!(*recorder.0.lock().unwrap(), [1.0]);
/// ```
pub trait CallChannel: Send + Sync {
    /// The call `call` reports progress.
    fn progress(&self, call: &ToolContext, progress: &Progress);

    /// The call `call` logs a message.
    fn log(&self, call: &ToolContext, message: &LogMessage);

    /// The call `call` asks the user for a value. By default nobody can answer.
    ///
    /// # Errors
    /// The question could not be asked (a channel that cannot, a client that went away).
    fn elicit<'a>(
        &'a self,
        call: &'a ToolContext,
        request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitAnswer, ToolError>> {
        let _ = request;
        Box::pin(std::future::ready(Err(nobody_to(call, "ask the user for input"))))
    }

    /// The call `call` asks a model for a completion. By default no model can answer.
    ///
    /// # Errors
    /// No model can answer here, or the model failed.
    fn sample<'a>(&'a self, call: &'a ToolContext, request: &'a Sampling) -> BoxFuture<'a, Result<Sampled, ToolError>> {
        let _ = request;
        Box::pin(std::future::ready(Err(nobody_to(call, "ask a model for a completion"))))
    }
}

/// Answers a tool's question for the user in an agent run (a UI prompt, a chat message, a
/// policy). Closures taking the context and the question implement it.
///
/// ```
/// use starweaver::tool::{ElicitAnswer, Elicitation};
/// use starweaver::{Agent, ToolContext};
/// # let model = starweaver::testing::TestModel::new([]);
///
/// let agent = Agent::builder(model)
///     .elicitation_handler(|ctx: &ToolContext, question: &Elicitation| {
///         println!("{} asks: {}", ctx.tool_name(), question.message);
///         async { Ok(ElicitAnswer::Decline) }
///     })
///     .build()
///     .unwrap();
/// ```
pub trait ElicitationHandler: Send + Sync {
    /// The user's answer to `request`, asked by the call `call` runs.
    ///
    /// # Errors
    /// Asking failed; the tool sees the error.
    fn elicit<'a>(
        &'a self,
        call: &'a ToolContext,
        request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitAnswer, ToolError>>;
}

/// A closure taking the context and the question, and giving a future of the answer that
/// owns what it needs (clone from the arguments).
impl<F, Fut> ElicitationHandler for F
where
    F: Fn(&ToolContext, &Elicitation) -> Fut + Send + Sync,
    Fut: Future<Output = Result<ElicitAnswer, ToolError>> + Send + 'static,
{
    fn elicit<'a>(
        &'a self,
        call: &'a ToolContext,
        request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitAnswer, ToolError>> {
        Box::pin(self(call, request))
    }
}

/// Answers a model completion a tool asks for, in place of the model that would (an MCP
/// server's sampling requests, answered by the application's own model client or a
/// policy). Closures taking the context and the request implement it.
///
/// ```
/// # #[cfg(feature = "mcp")] {
/// use starweaver::mcp::McpServer;
/// use starweaver::tool::{Sampled, Sampling};
/// use starweaver::ToolContext;
///
/// let server = McpServer::http("writer", "http://127.0.0.1:8000/mcp").sampling_handler(|_: &ToolContext, request: &Sampling| {
///     let text = format!("{} messages read", request.messages.len());
///     async move { Ok(Sampled { text, model: Some("canned".into()), stop_reason: None }) }
/// });
/// # }
/// ```
pub trait SamplingHandler: Send + Sync {
    /// The completion of `request`, asked for by the call `call` runs.
    ///
    /// # Errors
    /// The completion failed; the asker sees the error.
    fn sample<'a>(&'a self, call: &'a ToolContext, request: &'a Sampling) -> BoxFuture<'a, Result<Sampled, ToolError>>;
}

/// A closure taking the context and the request, and giving a future of the completion
/// that owns what it needs.
impl<F, Fut> SamplingHandler for F
where
    F: Fn(&ToolContext, &Sampling) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Sampled, ToolError>> + Send + 'static,
{
    fn sample<'a>(&'a self, call: &'a ToolContext, request: &'a Sampling) -> BoxFuture<'a, Result<Sampled, ToolError>> {
        Box::pin(self(call, request))
    }
}

/// The error of a call that asks where nobody can answer: the tool cannot do its work
/// here, and trying again would not change that.
fn nobody_to(call: &ToolContext, what: &str) -> ToolError {
    let message = format!("tool `{}` tried to {what}, but nothing running this call can answer", call.tool_name);
    ToolError::execution(message).not_retryable()
}

/// A call's channel, shared by every call of a run.
#[derive(Clone)]
pub(crate) struct Channel(pub(crate) Arc<dyn CallChannel>);

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallChannel")
    }
}

impl ToolContext {
    /// A context outside any run, for calling a tool directly in a unit test.
    pub fn detached(tool_name: &str) -> Self {
        Self::of_run(tool_name, Arc::from("detached"), Dependencies::new())
    }

    /// The context of one attempt of a call: what it shares with the call (the run's scope,
    /// the call's id, the tool's name, the approval) and what it holds of its own.
    ///
    /// It must not panic: [`Shared::lent`](super::Shared::lent) hands it handles on `Arc`s
    /// that must never be dropped.
    pub(crate) fn of_call(
        scope: Arc<RunScope>,
        tool_call_id: Arc<str>,
        tool_name: Arc<str>,
        approval: Option<Arc<ApprovalDecision>>,
        attempt: Attempt,
    ) -> Self {
        let Attempt { retry, attempt, max_retries, cancellation, replies } = attempt;
        Self {
            scope,
            tool_call_id,
            tool_name,
            retry,
            attempt,
            max_retries,
            cancellation,
            approval,
            replies,
            binding: BindingSlot::default(),
        }
    }

    /// A context of the run `run_id`, with its `dependencies`, for code of the run's
    /// own that no call runs (an output check, a step's `prepare_tools`): nothing hears it
    /// and nothing cancels it.
    pub(crate) fn of_run(tool_name: &str, run_id: Arc<str>, dependencies: Dependencies) -> Self {
        Self {
            scope: RunScope::new(run_id, CancellationToken::new(), dependencies, None),
            tool_call_id: Arc::from("detached"),
            tool_name: Arc::from(tool_name),
            retry: 0,
            attempt: 1,
            max_retries: crate::tool::DEFAULT_MAX_RETRIES,
            cancellation: None,
            approval: None,
            replies: None,
            binding: BindingSlot::default(),
        }
    }

    /// Sends this call's progress and log messages to `channel` (for direct calls in
    /// tests, and for engines that run calls themselves); a context without one drops them.
    #[must_use]
    pub fn with_channel(mut self, channel: Arc<dyn CallChannel>) -> Self {
        Arc::make_mut(&mut self.scope).channel = Some(Channel(channel));
        self
    }

    /// Supplies dependencies (for direct calls in tests).
    #[must_use]
    pub fn with_dependencies(mut self, dependencies: Dependencies) -> Self {
        Arc::make_mut(&mut self.scope).dependencies = dependencies;
        self
    }

    /// Gives the call a human's decision (for direct calls in tests of tools that need
    /// approval).
    #[must_use]
    pub fn with_approval(mut self, decision: ApprovalDecision) -> Self {
        self.approval = Some(Arc::new(decision));
        self
    }

    /// For a language binding: one value kept with this context, made by whichever of the
    /// binding's hook methods needs it first. Every hook method of one call is given the
    /// same context, so the binding hands them all the same objects (its own views of the
    /// context and the call) instead of making new ones for each; what it kept of the
    /// arguments stands while [`ToolContext::arguments_version`] is the same. Not for
    /// tools: each attempt of a call has a context of its own.
    #[doc(hidden)]
    pub fn binding_slot(&self) -> &OnceLock<Arc<dyn Any + Send + Sync>> {
        &self.binding.kept
    }

    /// For a language binding: a number that changes each time a hook rewrites the call's
    /// arguments, so a view of them kept in [`ToolContext::binding_slot`] can tell whether
    /// it still shows them.
    #[doc(hidden)]
    pub fn arguments_version(&self) -> u32 {
        self.binding.rewrites
    }

    /// The run this call belongs to.
    pub fn run_id(&self) -> &str {
        &self.scope.run_id
    }

    /// The call id exactly as the model sent it.
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// The tool's name.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// Model retries (`InvalidArguments`, `ModelRetry`) this tool has spent so far in the run.
    pub fn retry(&self) -> u32 {
        self.retry
    }

    /// This call's attempt number, from 1; above 1 after internal `Execution` retries.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The tool's retry budget.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// True when a retryable failure now would not be retried again: the model-retry
    /// budget is spent, or this is the last internal attempt.
    pub fn last_attempt(&self) -> bool {
        self.retry >= self.max_retries || self.attempt > self.max_retries
    }

    /// Whether the runtime has asked this call to stop (run cancelled or attempt timed out).
    pub fn is_cancelled(&self) -> bool {
        self.cancellation().is_cancelled()
    }

    /// Completes when the runtime asks this call to stop.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancellation().cancelled()
    }

    /// What cancels this attempt: its own token, or the run's.
    fn cancellation(&self) -> &CancellationToken {
        self.cancellation.as_deref().unwrap_or(&self.scope.cancellation)
    }

    /// The human decision this call was re-invoked with, after an approval.
    pub fn approval(&self) -> Option<&ApprovalDecision> {
        self.approval.as_deref()
    }

    /// A dependency supplied by the application.
    pub fn dependency<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.scope.dependencies.get()
    }

    /// A dependency the tool cannot work without.
    ///
    /// # Errors
    /// A `UserError` naming the missing type: the application forgot to supply it.
    pub fn require<T: Send + Sync + 'static>(&self) -> Result<&T, ToolError> {
        self.dependency().ok_or_else(|| {
            ToolError::user_error(format!(
                "tool `{}` needs a dependency of type `{}`, but the application supplied none",
                self.tool_name,
                type_name::<T>()
            ))
        })
    }

    /// Reports how far the call has got: `progress` so far, out of `total` when known,
    /// with what it is doing now. The run's stream gets a `tool_progress` event (the kept
    /// event log only the last of each call); an MCP client that asked for progress gets
    /// `notifications/progress`. Cheap enough to call in a tight loop.
    ///
    /// ```
    /// # fn main() -> Result<(), starweaver::ToolError> {
    /// let ctx = starweaver::ToolContext::detached("index");
    /// for done in 0..=10 {
    ///     ctx.report_progress(f64::from(done), Some(10.0), None)?;
    /// }
    /// assert!(ctx.report_progress(f64::INFINITY, None, None).is_err());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A `UserError` when `progress` or `total` is not a finite number.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> Result<(), ToolError> {
        self.send_progress(&Progress::new(progress, total, message)?);
        Ok(())
    }

    /// Whether anyone hears this call's progress and log messages.
    #[cfg(feature = "mcp")]
    pub(crate) fn listens(&self) -> bool {
        self.scope.channel.is_some()
    }

    /// Hands checked progress to the channel.
    pub(crate) fn send_progress(&self, progress: &Progress) {
        if let Some(channel) = &self.scope.channel {
            channel.0.progress(self, progress);
        }
    }

    /// Hands a log message to the channel.
    pub(crate) fn send_log(&self, log: &LogMessage) {
        if let Some(channel) = &self.scope.channel {
            channel.0.log(self, log);
        }
    }

    /// Logs a message at `level`, with optional JSON `data`: a `tool_log` event of the
    /// run, or MCP's `notifications/message` (at or above the client's `logging/setLevel`)
    /// when served.
    ///
    /// ```
    /// use starweaver::tool::LogLevel;
    ///
    /// let ctx = starweaver::ToolContext::detached("index");
    /// ctx.log(LogLevel::Info, "reading the index", Some(serde_json::json!({"files": 3})));
    /// ```
    pub fn log(&self, level: LogLevel, message: impl Into<String>, data: Option<serde_json::Value>) {
        self.send_log(&LogMessage { level, message: message.into(), data });
    }

    /// Asks the user for a value of the shape `schema` gives (an object of primitive
    /// properties), saying why with `message`. Over MCP the client asks (form
    /// elicitation); in an agent run the agent's elicitation handler answers, and without
    /// one this returns an `ElicitationRequired` error for the tool to pass on (`?`): the
    /// run waits with a pending elicitation, and once a resume answers it the call is
    /// invoked again, where asking the same question again gives that answer.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let ctx = starweaver::ToolContext::detached("deploy");
    /// let schema = serde_json::json!({"type": "object", "properties": {"env": {"type": "string"}}});
    /// let err = ctx.elicit("Which environment?", schema).await.unwrap_err();
    /// assert!(err.message().contains("nothing running this call can answer"));
    /// # });
    /// ```
    ///
    /// # Errors
    /// `ElicitationRequired` when the run must wait for the answer; otherwise nothing
    /// running the call can ask, or asking failed.
    pub async fn elicit(
        &self,
        message: impl Into<String>,
        schema: serde_json::Value,
    ) -> Result<ElicitAnswer, ToolError> {
        let mut schema = schema;
        // What is asked for is always an object, and MCP's form elicitation wants the
        // schema to say so: a schema that leaves its type out gets it.
        if let serde_json::Value::Object(map) = &mut schema {
            map.entry("type").or_insert_with(|| "object".into());
        }
        let request = Elicitation { message: message.into(), schema };
        let asked = match &self.replies {
            Some(replies) => match replies.ask(&request) {
                (_, Some(answer)) => return Ok(answer),
                (asked, None) => asked,
            },
            None => 0,
        };
        let Some(channel) = &self.scope.channel else { return Err(nobody_to(self, "ask the user for input")) };
        match channel.0.elicit(self, &request).await {
            Err(error) if error.kind() == ToolErrorKind::ElicitationRequired => {
                Err(ToolError::elicitation_required(asked, &request))
            }
            answered => answered,
        }
    }

    /// Asks a model for a completion: over MCP the client's model (sampling), in an agent
    /// run the agent's own.
    ///
    /// # Errors
    /// No model can answer here, or the model failed.
    pub async fn sample(&self, request: Sampling) -> Result<Sampled, ToolError> {
        match &self.scope.channel {
            Some(channel) => channel.0.sample(self, &request).await,
            None => Err(nobody_to(self, "ask a model for a completion")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_of_a_context_starts_without_what_a_binding_kept_with_it() {
        let ctx = ToolContext::detached("t");
        assert!(ctx.binding_slot().set(Arc::new(1_u8)).is_ok());
        assert_eq!(ctx.binding_slot().get().and_then(|kept| kept.downcast_ref::<u8>()), Some(&1));
        assert!(ctx.clone().binding_slot().get().is_none());
    }
}
