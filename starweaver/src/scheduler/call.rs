//! One tool call: argument checks, the approval gate, attempts with internal retries,
//! timeouts and panic capture, and the return the model will see.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::concurrency::{self, Entry, Limit};
use crate::event::{EventKind, EventLog};
use crate::hitl::ApprovalDecision;
use crate::hook::{HookCall, Hooks};
use crate::message::{HostFields, ToolCallPart, ToolReturnPart, ToolReturnRecord};
use crate::registry::{RegisteredTool, Source, ToolRegistry};
use crate::tool::run_ahead::{self, ChainedCall, Claimed, StopGuard};
use crate::tool::{
    Answered, Attempt, CallChannel, Channel, Dependencies, Elicitation, Lent, Replies, RunScope, Shared, ToolContext,
    ToolError, ToolErrorKind, ToolResult,
};
use crate::trace::{SpanId, SpanOf, Tracer};

use super::attempted::{Attempted, Tried};
use super::channel::RunChannel;
use super::hooks::{self, HookChain, HookedCall};

/// What every call of one batch shares.
pub(crate) struct CallEnv<'a> {
    /// The run's events and trace, and the channel its calls talk through.
    pub run: &'a Arc<RunChannel>,
    /// The span calls are timed under.
    pub parent: SpanId,
    pub registry: &'a ToolRegistry,
    /// What every call's context shares: the run's id, cancellation, dependencies and
    /// channel.
    pub scope: &'a Arc<RunScope>,
    /// The run's cap on its calls, if it has one.
    pub limit: Option<&'a Limit>,
    /// The run's hooks, then the agent's (a tool's toolset's follow, from its registration).
    pub hooks: &'a [Arc<dyn Hooks>],
}

/// A call to make, with the decision it was approved by and the user's answers to what it
/// asked before, if any, the model retries its tool has spent in the run so far (what
/// `ToolContext::retry` tells the tool), and its first attempt's outcome if a chain runs
/// it ahead.
pub(crate) struct CallRequest<'a> {
    pub part: &'a ToolCallPart,
    pub approval: Option<Arc<ApprovalDecision>>,
    pub answered: Option<Arc<[Answered]>>,
    pub retry: u32,
    pub ahead: Option<Claimed>,
    /// The concurrency limits a driver held the call back for before it came here (a
    /// durable run's), which its `tool_call` event names with any it queues for here.
    pub queued_for: Vec<Arc<str>>,
}

/// How a call ended.
///
/// A call that waits for a human is rare, so what it waits with is boxed: the outcome is
/// moved through every call's futures, and an unboxed one would be seven times larger.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum CallOutcome {
    Returned(ToolReturn),
    NeedsApproval(Box<Waits>),
    Deferred(Box<Waits>),
    /// The call asked the user a question with nobody to ask.
    NeedsInput(Box<Asks>),
}

/// Why a call waits for approval or was deferred.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Waits {
    pub reason: String,
    pub metadata: Map<String, Value>,
    /// The arguments the call waits with, when hooks rewrote the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// The question a call asked the user: its `asked`-th (from 0).
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Asks {
    pub asked: usize,
    pub question: Elicitation,
    /// The arguments the call waits with, when hooks rewrote the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

impl CallOutcome {
    /// The call waits for approval.
    fn approval(reason: String, metadata: Map<String, Value>, arguments: Option<Value>) -> Self {
        Self::NeedsApproval(Box::new(Waits { reason, metadata, arguments }))
    }
}

impl From<ToolReturn> for CallOutcome {
    fn from(ret: ToolReturn) -> Self {
        Self::Returned(ret)
    }
}

/// A finished call: what the model sees, what only the host sees, and the error kind.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct ToolReturn {
    pub part: Arc<ToolReturnPart>,
    pub host: Option<Arc<HostFields>>,
    pub error: Option<ToolErrorKind>,
}

impl ToolReturn {
    /// The `tool_return` event reporting this return.
    pub(crate) fn event(&self) -> EventKind {
        EventKind::ToolReturn(ToolReturnRecord { part: self.part.clone(), host: self.host.clone() })
    }

    /// A success return; model-facing content longer than `max_chars` is cut, and the
    /// tool's whole value is then kept host-only (in `value`).
    pub(crate) fn success(call: &ToolCallPart, result: ToolResult, max_chars: Option<u32>) -> Self {
        let ToolResult { value, model_content, app_value, user_content, metadata, private_metadata } = result;
        let (content, value) = match model_content {
            Some(content) => (*content, Some(value)),
            None => (value, None),
        };
        let (content, value) = match max_chars.and_then(|max| super::cut::cut(&content, max)) {
            Some(shorter) => (shorter, value.or(Some(content))),
            None => (content, value),
        };
        Self {
            part: Arc::new(ToolReturnPart {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content,
                is_error: false,
                metadata,
            }),
            host: HostFields {
                value,
                app_value: app_value.map(|v| *v),
                user_content: user_content.map(|v| *v),
                private_metadata: private_metadata.map(|v| *v),
            }
            .into_shared(),
            error: None,
        }
    }

    /// What a return schema describes of a success returned under `max_chars`: the
    /// tool's whole value when the content is only that value cut short (it is host-only
    /// for the model's sake, not the tool's), else the content. A value the tool gave
    /// `model_content` in place of stays host-only.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))] // only `mcp::McpService` serves schemas
    pub(crate) fn schema_value(&self, max_chars: Option<u32>) -> &Value {
        let content = &self.part.content;
        match (self.host.as_ref().and_then(|host| host.value.as_ref()), max_chars) {
            (Some(whole), Some(max)) if super::cut::cut(whole, max).as_ref() == Some(content) => whole,
            _ => content,
        }
    }

    /// An error return: `content` is `{"kind", "message", "success": false, ...extra}`.
    pub(crate) fn failure(call: &ToolCallPart, error: ToolError, extra: Map<String, Value>) -> Self {
        let (kind, message, metadata, private_metadata) = error.into_parts();
        let mut content = Map::new();
        content.insert("kind".into(), kind.as_str().into());
        content.insert("message".into(), message.into());
        content.insert("success".into(), false.into());
        if kind.counts_model_retry() {
            content.insert("retry_expected".into(), true.into());
        }
        content.extend(extra);
        Self {
            part: Arc::new(ToolReturnPart {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content: Value::Object(content),
                is_error: kind.is_error(),
                metadata: metadata.into(),
            }),
            host: HostFields { private_metadata, ..HostFields::default() }.into_shared(),
            error: Some(kind),
        }
    }
}

/// What a call outside any agent run is made with: the tools, the hooks around every
/// call, and the dependencies they read.
pub(crate) struct Served<'a> {
    pub registry: &'a ToolRegistry,
    pub hooks: &'a [Arc<dyn Hooks>],
    pub dependencies: &'a Dependencies,
}

/// Runs one call outside any agent run (an MCP `tools/call`, a durable run's activity)
/// under a trace and an event log of its own; the events it emitted come back with it.
/// What the call reports as it runs goes to `listener` too, and `answers` answers what it
/// asks.
pub(crate) async fn invoke_alone(
    served: Served<'_>,
    run_id: &Arc<str>,
    cancellation: &CancellationToken,
    request: CallRequest<'_>,
    listener: Option<Arc<dyn CallChannel>>,
    answers: Arc<dyn CallChannel>,
) -> (CallOutcome, Vec<EventKind>) {
    let Served { registry, hooks, dependencies } = served;
    let trace = Tracer::new(run_id.clone());
    let (parent, _span) = trace.open(SpanOf::Run, None);
    let run = Arc::new(RunChannel {
        events: Arc::new(EventLog::new(run_id.clone(), 0, None)),
        trace: Arc::new(trace),
        also: listener,
        answers,
    });
    let channel = Some(Channel(run.clone()));
    let scope = &RunScope::new(run_id.clone(), cancellation.clone(), dependencies.clone(), channel);
    let env = CallEnv { run: &run, parent, registry, scope, limit: None, hooks };
    let outcome = invoke(&env, request).await;
    (outcome, run.events.finish().0.into_iter().map(|event| event.kind).collect())
}

/// The error of a call of `name`, a tool `registry` does not have.
pub(crate) fn not_found(name: &str, registry: &ToolRegistry) -> ToolError {
    // A deferred catalog stays out of the model's context, so it is never listed here.
    let message = if registry.searches_natively() {
        format!("unknown tool `{name}`; the tool search finds tools by what they do")
    } else if registry.defers() {
        format!("unknown tool `{name}`; `search_tools` finds tools by what they do")
    } else {
        let available = registry.names().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        format!("unknown tool `{name}`; available tools: {available}")
    };
    ToolError::new(ToolErrorKind::NotFound, message)
}

/// Runs one call to its end (value, error, or a suspension for a human): the way in
/// through its hooks, if it has any, then the approval gate, its places under its
/// concurrency limits and the attempts with the arguments the hooks left, then the way out.
/// The approval is bound to those arguments: a call approved for other arguments does not
/// run.
///
/// A call takes its places once its hooks let it go on, and gives them back before the way
/// out: a hook never holds a place, so a hook that waits for work under the same limit
/// cannot wait on itself, and the `tool_call` event, with the arguments the hooks left,
/// comes before the call queues.
#[expect(
    clippy::manual_async_fn,
    reason = "an `async fn`'s future keeps the request twice, as an argument and as the local it is \
              moved to (rust-lang/rust#62958): 80 bytes more in every call's future"
)]
pub(crate) fn invoke(env: &CallEnv<'_>, mut request: CallRequest<'_>) -> impl Future<Output = CallOutcome> {
    async move {
        let call = request.part;
        let ahead = request.ahead.take();
        let (call_span, span) =
            env.run.trace.open(SpanOf::ToolCall { tool: &call.name, tool_call_id: &call.id }, Some(env.parent));
        let outcome = async {
            let Some(tool) = env.registry.get(&call.name) else {
                announce(env, &request, None, Vec::new());
                return ToolReturn::failure(call, not_found(&call.name, env.registry), Map::new()).into();
            };
            let mut parsed = None;
            let arguments = match object_arguments(arguments_of(&request)) {
                Ok(arguments) => held(arguments, &mut parsed),
                Err(error) => {
                    announce(env, &request, None, Vec::new());
                    return ToolReturn::failure(call, error, Map::new()).into();
                }
            };
            let hooks = hook_chain(env, tool);
            let mut hooked = (!hooks.is_empty()).then(|| HookedCall::new(lent_context(env, tool, &request)));
            let mut stopped = None;
            if let Some(hooked) = &mut hooked {
                stopped = hooks::enter(hooks, call, arguments, hooked).await;
            }
            let hooked = hooked.as_ref();
            let arguments = hooked.map_or(arguments, |hooked| hooked.arguments(arguments));
            let outcome = 'ran: {
                if let Some(stopped) = stopped {
                    announce(env, &request, hooked, Vec::new());
                    break 'ran (*stopped).map_err(|error| (error, None));
                }
                if let Some(error) = unbound(&request, arguments) {
                    announce(env, &request, hooked, Vec::new());
                    break 'ran Err((error, None));
                }
                let mut filled = None;
                let arguments = match gate(tool, &request, Cow::Borrowed(arguments)) {
                    Ok(arguments) => held(arguments, &mut filled),
                    Err(reason) => {
                        announce(env, &request, hooked, Vec::new());
                        return CallOutcome::approval(
                            reason,
                            Map::new(),
                            hooked.and_then(HookedCall::rewritten_arguments),
                        );
                    }
                };
                let (queued_for, entry) = queue(env, tool, &request);
                announce(env, &request, hooked, queued_for);
                let _places = entry.enter().await;
                // Hooks run between a chain's calls, so no chain runs a call with hooks ahead.
                debug_assert!(hooked.is_none() || ahead.is_none(), "a call with hooks was run ahead");
                attempts(env, tool, &request, ahead, arguments).await
            };
            let outcome = match hooked {
                Some(hooked) => {
                    let seen = HookCall { id: &call.id, name: &call.name, arguments };
                    // The chain is found again, not kept: the call's future would carry it.
                    hooks::leave(hook_chain(env, tool).first(hooked.count), &hooked.ctx, &seen, outcome).await
                }
                None => outcome,
            };
            match outcome {
                Ok(result) => ToolReturn::success(call, result, tool.max_return_chars).into(),
                Err((error, tried)) => ended(call, error, tried, hooked.and_then(HookedCall::rewritten_arguments)),
            }
        }
        .instrument(span)
        .await;
        env.run.trace.close(
            call_span,
            match &outcome {
                CallOutcome::Returned(ret) => ret.error.map_or("ok", ToolErrorKind::as_str),
                CallOutcome::NeedsApproval(_) => "approval_required",
                CallOutcome::Deferred(_) => "deferred",
                CallOutcome::NeedsInput(_) => "elicitation_required",
            },
        );
        if let CallOutcome::Returned(ret) = &outcome {
            env.run.events.emit(ret.event());
        }
        outcome
    }
}

/// Why an approved call must not run with `arguments`: they are not those its approval
/// was given for (hooks rewrote them otherwise than when it was asked, or the run's hooks
/// that rewrote them are not there on resume).
fn unbound(request: &CallRequest<'_>, arguments: &Value) -> Option<ToolError> {
    let approval = request.approval.as_ref()?;
    let approved = approval.override_arguments.as_ref().or(approval.arguments.as_ref())?;
    let approved = object_arguments(approved).ok()?;
    (*approved != *arguments).then(|| {
        let message = format!(
            "the call was approved with arguments {approved}, but would run with {arguments}; it needs a decision \
             for the arguments it runs with"
        );
        ToolError::new(ToolErrorKind::ApprovalDenied, message)
    })
}

/// The `tool_call` event: what the model asked for, with the arguments hooks rewrote and
/// the hooks that rewrote or answered, if any, and the concurrency limits it queues for.
fn announce(env: &CallEnv<'_>, request: &CallRequest<'_>, hooked: Option<&HookedCall<'_>>, queued_for: Vec<Arc<str>>) {
    let call = request.part;
    env.run.events.emit(EventKind::ToolCall {
        tool_call_id: call.id.clone(),
        name: call.name.clone(),
        override_arguments: override_of(request).cloned().map(Box::new),
        arguments: hooked.and_then(HookedCall::rewritten_arguments).map(Box::new),
        rewritten_by: hooked.and_then(HookedCall::rewritten_by).cloned(),
        answered_by: hooked.and_then(|hooked| hooked.answered_by.clone()),
        queued_for: queued_for.into_boxed_slice(),
    });
}

/// The hooks of a call of `tool`: the run's and the agent's, then its toolset's.
fn hook_chain<'a>(env: &CallEnv<'a>, tool: &'a RegisteredTool) -> HookChain<'a> {
    // The run's output is the application's own answer, not a tool's work to govern.
    let outer = if matches!(tool.source, Source::Output) { &[] } else { env.hooks };
    HookChain { outer, toolset: &tool.hooks }
}

/// The concurrency limits the call runs under (its tool's, its toolset's, the run's): the
/// labels of those that are full (with any a driver held the call back for), which its
/// `tool_call` event names, and its entry, whose places are held from when `enter` gives
/// them until they are dropped.
fn queue(env: &CallEnv<'_>, tool: &RegisteredTool, request: &CallRequest<'_>) -> (Vec<Arc<str>>, Entry) {
    let mut queued_for = request.queued_for.clone();
    if tool.limits.is_empty() && env.limit.is_none() {
        return (queued_for, Entry::default());
    }
    let limits = concurrency::in_order(tool.limits.iter().chain(env.limit));
    let mut entry = Entry::try_enter(&limits);
    for label in std::mem::take(&mut entry.queued_for) {
        if !queued_for.contains(&label) {
            queued_for.push(label);
        }
    }
    (queued_for, entry)
}

/// How a call that failed with `error` ends: waiting for a human, or an error return
/// (telling the model of the attempts it `tried`); `arguments` are the ones a waiting call
/// shows, when hooks rewrote the model's.
fn ended(call: &ToolCallPart, error: ToolError, tried: Option<Tried>, arguments: Option<Value>) -> CallOutcome {
    match error.kind() {
        ToolErrorKind::ApprovalRequired => {
            let (_, reason, metadata, _) = error.into_parts();
            CallOutcome::approval(reason, metadata, arguments)
        }
        ToolErrorKind::CallDeferred => {
            let (_, reason, metadata, _) = error.into_parts();
            CallOutcome::Deferred(Box::new(Waits { reason, metadata, arguments }))
        }
        ToolErrorKind::ElicitationRequired => {
            if let Some((asked, question)) = error.question() {
                return CallOutcome::NeedsInput(Box::new(Asks { asked, question, arguments }));
            }
            let message = format!(
                "tool `{}` raised `elicitation_required` itself; a call waits for the user's answer only through \
                 `ctx.elicit(...)`",
                call.name
            );
            ToolReturn::failure(call, ToolError::user_error(message), Map::new()).into()
        }
        _ => ToolReturn::failure(call, error, tried.map_or_else(Map::new, Tried::into_map)).into(),
    }
}

/// What a call runs with, or why it waits for approval first: its arguments (an object)
/// with defaults put back, past the approval gate.
fn gate<'v>(
    tool: &RegisteredTool,
    request: &CallRequest<'_>,
    mut arguments: Cow<'v, Value>,
) -> Result<Cow<'v, Value>, String> {
    if tool.fills_defaults && contains_null(&arguments) {
        crate::schema::fill_null_defaults(&tool.tool.definition().parameters, arguments.to_mut());
    }
    if request.approval.is_none()
        && let Some(rule) = &tool.approval_rule
    {
        return Err(format!("tool `{}` requires approval (approval rule {rule})", request.part.name));
    }
    Ok(arguments)
}

/// The arguments a request runs with: the approver's override, else the model's.
fn arguments_of<'r>(request: &'r CallRequest<'_>) -> &'r Value {
    override_of(request).unwrap_or(&request.part.arguments)
}

/// The arguments the approver put in place of the model's, if any.
fn override_of<'r>(request: &'r CallRequest<'_>) -> Option<&'r Value> {
    request.approval.as_ref().and_then(|a| a.override_arguments.as_ref())
}

/// A chain of calls run ahead (see [`run_ahead`](crate::tool::run_ahead)): each call's
/// outcome, claimed as the runtime makes it, and the guard that stops the chain.
pub(crate) struct Ahead {
    /// In chain order, which is the order the calls start in.
    claims: VecDeque<(usize, Claimed)>,
    _stop: StopGuard,
}

impl Ahead {
    /// The outcome of call `index` (of the response) if this chain runs it.
    pub(crate) fn claim(&mut self, index: usize) -> Option<Claimed> {
        match self.claims.front() {
            Some((next, _)) if *next == index => self.claims.pop_front().map(|(_, claimed)| claimed),
            _ => None,
        }
    }
}

/// Offers the tool of `first` the chain `first` and `rest` (calls to it, by their index
/// in the response, that will run one after another, the first starting now) to run
/// ahead. Only untimed calls outside a concurrency cap are offered, and only up to the
/// first that would not reach the tool (bad arguments, an approval gate). The chain's
/// calls are prepared only once the tool takes it: a tool that runs nothing ahead costs
/// nothing.
pub(crate) fn chain_ahead<'c>(
    env: &CallEnv<'_>,
    first: (usize, CallRequest<'c>),
    rest: impl Iterator<Item = (usize, CallRequest<'c>)>,
) -> Option<Ahead> {
    let tool = env.registry.get(&first.1.part.name)?;
    let runs_ahead = tool.tool.runs_ahead()?;
    // Hooks run around each call as it starts, which a chain run ahead would skip.
    let limited = env.limit.is_some() || !tool.limits.is_empty();
    if tool.timeout.is_some() || limited || !env.hooks.is_empty() || !tool.hooks.is_empty() {
        return None;
    }
    let (indices, calls): (Vec<usize>, Vec<ChainedCall>) = std::iter::once(first)
        .chain(rest)
        .map_while(|(index, request)| {
            let arguments = object_arguments(arguments_of(&request)).ok()?;
            let arguments = gate(tool, &request, arguments).ok()?.into_owned();
            let ctx = context(env, tool, &request, 1, None);
            Some((index, ChainedCall { ctx, arguments }))
        })
        .unzip();
    if calls.len() < 2 {
        return None;
    }
    let lane = runs_ahead.lane(calls.len())?;
    let (claims, stop) = run_ahead::start(lane, calls)?;
    Some(Ahead { claims: indices.into_iter().zip(claims).collect(), _stop: stop })
}

/// The context of one attempt, of its own (a tool owns its context).
fn context(
    env: &CallEnv<'_>,
    tool: &RegisteredTool,
    request: &CallRequest<'_>,
    attempt: u32,
    cancellation: Option<Arc<CancellationToken>>,
) -> ToolContext {
    shared(env, tool, request).owned(attempt_of(tool, request, attempt, cancellation))
}

/// The context of the first attempt, lent, for code that only borrows it (the call's hooks).
fn lent_context<'c>(env: &CallEnv<'c>, tool: &'c RegisteredTool, request: &'c CallRequest<'_>) -> Lent<'c> {
    shared(env, tool, request).lent(attempt_of(tool, request, 1, None))
}

/// What a context of the call shares with it.
fn shared<'c>(env: &CallEnv<'c>, tool: &'c RegisteredTool, request: &'c CallRequest<'_>) -> Shared<'c> {
    Shared {
        scope: env.scope,
        tool_call_id: &request.part.id,
        tool_name: &tool.name,
        approval: request.approval.as_ref(),
    }
}

/// What a context of attempt `attempt` of the call holds of its own.
fn attempt_of(
    tool: &RegisteredTool,
    request: &CallRequest<'_>,
    attempt: u32,
    cancellation: Option<Arc<CancellationToken>>,
) -> Attempt {
    // Each attempt asks its questions from the first again.
    let replies = request.answered.as_ref().map(|answered| Arc::new(Replies::new(answered.clone())));
    Attempt { retry: request.retry, attempt, max_retries: tool.max_retries, cancellation, replies }
}

/// The attempts of a call, retrying `execution` failures within the tool's budget: its
/// result, or the error it ended with (and what the model is told of the attempts).
async fn attempts(
    env: &CallEnv<'_>,
    tool: &RegisteredTool,
    request: &CallRequest<'_>,
    mut ahead: Option<Claimed>,
    arguments: &Value,
) -> Attempted {
    let call = request.part;
    let mut attempt = 1;
    loop {
        // A child token lets a timed-out blocking tool see `is_cancelled()` without
        // cancelling the run; untimed calls share the run's token and allocate nothing.
        let own = tool.timeout.map(|_| Arc::new(env.scope.cancellation.child_token()));
        let ctx = context(env, tool, request, attempt, own.clone());
        let outcome = match ahead.take() {
            // Boxed, so the rare path does not grow every call's future.
            Some(claimed) => {
                Box::pin(claimed_or(claimed, || attempt_once(tool, ctx, arguments, own.as_deref(), &call.name))).await
            }
            None => attempt_once(tool, ctx, arguments, own.as_deref(), &call.name).await,
        };
        let error = match outcome {
            Ok(result) => return Ok(result),
            Err(error) => error,
        };
        match error.kind() {
            ToolErrorKind::Execution if attempt <= tool.max_retries && error.is_retryable() => {
                env.run.events.emit(EventKind::ToolRetry {
                    tool_call_id: call.id.clone(),
                    name: call.name.clone(),
                    attempt,
                    error: error.message().to_owned(),
                });
                attempt += 1;
            }
            ToolErrorKind::Execution => {
                let message = format!("{} (failed after {attempt} attempt(s))", error.message());
                let (kind, _, metadata, private) = error.into_parts();
                let mut error = ToolError::new(kind, message).with_metadata(metadata);
                if let Some(private) = private {
                    error = error.with_private_metadata(private);
                }
                return Err((error, Some(Tried { attempts: attempt, max_retries: tool.max_retries })));
            }
            _ => return Err((error, None)),
        }
    }
}

/// The first attempt of a call a chain ran ahead: its outcome there, or, if the chain never
/// ran it, the attempt `otherwise` makes here.
async fn claimed_or<F: Future<Output = Result<ToolResult, ToolError>>>(
    claimed: Claimed,
    otherwise: impl FnOnce() -> F,
) -> Result<ToolResult, ToolError> {
    match claimed.await {
        Some(outcome) => outcome,
        None => otherwise().await,
    }
}

/// One attempt: a panic becomes an `Execution` error, a timeout a `Timeout` error (which
/// cancels the attempt's `own` token, a timed tool's).
async fn attempt_once(
    tool: &RegisteredTool,
    ctx: ToolContext,
    arguments: &Value,
    own: Option<&CancellationToken>,
    name: &str,
) -> Result<ToolResult, ToolError> {
    let future = match std::panic::catch_unwind(AssertUnwindSafe(|| tool.tool.call(ctx, arguments))) {
        Ok(future) => AssertUnwindSafe(future).catch_unwind(),
        Err(panic) => return Err(ToolError::panicked(name, &*panic)),
    };
    let outcome = match tool.timeout {
        None => future.await,
        // Boxed, so untimed calls do not carry a timer in their future.
        Some(limit) => match Box::pin(tokio::time::timeout(limit, future)).await {
            Ok(outcome) => outcome,
            Err(_) => {
                if let Some(own) = own {
                    own.cancel();
                }
                return Err(ToolError::timeout(format!("tool `{name}` timed out after {} ms", limit.as_millis())));
            }
        },
    };
    outcome.unwrap_or_else(|panic| Err(ToolError::panicked(name, &*panic)))
}

/// Whether a `null` appears anywhere in `value` (cheaper than filling defaults for nothing).
fn contains_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().any(contains_null),
        Value::Object(map) => map.values().any(contains_null),
        _ => false,
    }
}

/// `arguments` as a reference, keeping a value made for them (parsed from text, defaults
/// filled in) in `slot`, boxed: made values are rare, and a call's future holds a slot and a
/// reference (16 bytes) where it would hold a `Cow` of a value (72).
#[inline]
fn held<'a>(arguments: Cow<'a, Value>, slot: &'a mut Option<Box<Value>>) -> &'a Value {
    match arguments {
        Cow::Borrowed(arguments) => arguments,
        Cow::Owned(arguments) => slot.insert(Box::new(arguments)),
    }
}

/// Arguments must be a JSON object; some providers send one encoded as a string.
fn object_arguments(arguments: &Value) -> Result<Cow<'_, Value>, ToolError> {
    match arguments {
        Value::Object(_) => Ok(Cow::Borrowed(arguments)),
        Value::String(text) => match crate::json::parse(text) {
            Ok(parsed @ Value::Object(_)) => match crate::json::wide_integer(text) {
                Some(wide) => Err(ToolError::invalid_arguments(wide)),
                None => Ok(Cow::Owned(parsed)),
            },
            Ok(other) => Err(ToolError::invalid_arguments(format!(
                "arguments must be a JSON object, got {}",
                crate::json::kind_of(&other)
            ))),
            Err(err) => Err(ToolError::invalid_arguments(format!("arguments are not valid JSON: {err}"))),
        },
        other => Err(ToolError::invalid_arguments(format!(
            "arguments must be a JSON object, got {}",
            crate::json::kind_of(other)
        ))),
    }
}
