//! One tool call: argument checks, the approval gate, attempts with internal retries,
//! timeouts and panic capture, and the return the model will see.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::event::{EventKind, EventLog};
use crate::hitl::ApprovalDecision;
use crate::message::{HostFields, ToolCallPart, ToolReturnPart, ToolReturnRecord};
use crate::registry::{RegisteredTool, ToolRegistry};
use crate::tool::run_ahead::{self, ChainedCall, Claimed, StopGuard};
use crate::tool::{
    Answered, CallChannel, Channel, Dependencies, Elicitation, Replies, ToolContext, ToolError, ToolErrorKind,
    ToolResult,
};
use crate::trace::{SpanId, SpanOf, Tracer};

use super::channel::RunChannel;

/// What every call of one batch shares.
pub(crate) struct CallEnv<'a> {
    /// The run's events and trace, and the channel its calls talk through.
    pub run: &'a Arc<RunChannel>,
    /// The span calls are timed under.
    pub parent: SpanId,
    pub registry: &'a ToolRegistry,
    pub run_id: &'a Arc<str>,
    pub cancellation: &'a CancellationToken,
    pub dependencies: &'a Dependencies,
    pub limit: Option<&'a Semaphore>,
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
}

/// How a call ended.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum CallOutcome {
    Returned(ToolReturn),
    NeedsApproval {
        reason: String,
        metadata: Map<String, Value>,
    },
    Deferred {
        reason: String,
        metadata: Map<String, Value>,
    },
    /// The call asked the user `question`, its `asked`-th (from 0), with nobody to ask.
    NeedsInput {
        asked: usize,
        question: Elicitation,
    },
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
    pub host: Option<Box<HostFields>>,
    pub error: Option<ToolErrorKind>,
}

impl ToolReturn {
    /// The `tool_return` event reporting this return.
    pub(crate) fn event(&self) -> EventKind {
        EventKind::ToolReturn(ToolReturnRecord { part: self.part.clone(), host: self.host.clone() })
    }

    pub(crate) fn success(call: &ToolCallPart, result: ToolResult) -> Self {
        let ToolResult { value, model_content, app_value, user_content, metadata, private_metadata } = result;
        let (content, value) = match model_content {
            Some(content) => (content, Some(value)),
            None => (value, None),
        };
        Self {
            part: Arc::new(ToolReturnPart {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content,
                is_error: false,
                metadata,
            }),
            host: HostFields { value, app_value, user_content, private_metadata }.into_boxed(),
            error: None,
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
                metadata,
            }),
            host: HostFields { private_metadata, ..HostFields::default() }.into_boxed(),
            error: Some(kind),
        }
    }
}

/// Runs one call outside any agent run (an MCP `tools/call`, a durable run's activity)
/// under a trace and an event log of its own; the events it emitted come back with it.
/// What the call reports as it runs goes to `listener` too, and `answers` answers what it
/// asks.
pub(crate) async fn invoke_alone(
    registry: &ToolRegistry,
    dependencies: &Dependencies,
    run_id: &Arc<str>,
    cancellation: &CancellationToken,
    request: CallRequest<'_>,
    listener: Option<Arc<dyn CallChannel>>,
    answers: Arc<dyn CallChannel>,
) -> (CallOutcome, Vec<EventKind>) {
    let trace = Tracer::new(run_id.clone());
    let (parent, _span) = trace.open(SpanOf::Run, None);
    let run = Arc::new(RunChannel {
        events: Arc::new(EventLog::new(run_id.clone(), 0, None)),
        trace: Arc::new(trace),
        also: listener,
        answers,
    });
    let env = CallEnv { run: &run, parent, registry, run_id, cancellation, dependencies, limit: None };
    let outcome = invoke(&env, request).await;
    (outcome, run.events.finish().0.into_iter().map(|event| event.kind).collect())
}

/// Runs one call to its end (value, error, or a suspension for a human).
pub(crate) async fn invoke(env: &CallEnv<'_>, mut request: CallRequest<'_>) -> CallOutcome {
    let call = request.part;
    env.run.events.emit(EventKind::ToolCall {
        tool_call_id: call.id.clone(),
        name: call.name.clone(),
        override_arguments: override_of(&request).cloned(),
    });
    let ahead = request.ahead.take();
    let arguments = arguments_of(&request);
    let (call_span, span) =
        env.run.trace.open(SpanOf::ToolCall { tool: &call.name, tool_call_id: &call.id }, Some(env.parent));
    let outcome = async {
        let Some(tool) = env.registry.get(&call.name) else {
            let available = env.registry.names().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
            let message = format!("unknown tool `{}`; available tools: {available}", call.name);
            return ToolReturn::failure(call, ToolError::new(ToolErrorKind::NotFound, message), Map::new()).into();
        };
        let arguments = match prepare(tool, &request, arguments) {
            Ok(arguments) => arguments,
            Err(outcome) => return outcome,
        };
        let _permit = match env.limit {
            Some(limit) => Some(limit.acquire().await.expect("the run's semaphore is never closed")),
            None => None,
        };
        attempts(env, tool, &request, ahead, &arguments).await
    }
    .instrument(span)
    .await;
    env.run.trace.close(
        call_span,
        match &outcome {
            CallOutcome::Returned(ret) => ret.error.map_or("ok", ToolErrorKind::as_str),
            CallOutcome::NeedsApproval { .. } => "approval_required",
            CallOutcome::Deferred { .. } => "deferred",
            CallOutcome::NeedsInput { .. } => "elicitation_required",
        },
    );
    if let CallOutcome::Returned(ret) = &outcome {
        env.run.events.emit(ret.event());
    }
    outcome
}

/// What a call runs with, or how it ends without running: its arguments as an object with
/// defaults put back, past the approval gate.
fn prepare<'v>(
    tool: &RegisteredTool,
    request: &CallRequest<'_>,
    arguments: &'v Value,
) -> Result<Cow<'v, Value>, CallOutcome> {
    let call = request.part;
    let mut arguments = object_arguments(arguments).map_err(|err| ToolReturn::failure(call, err, Map::new()))?;
    if tool.fills_defaults && contains_null(&arguments) {
        crate::schema::fill_null_defaults(&tool.tool.definition().parameters, arguments.to_mut());
    }
    if request.approval.is_none()
        && let Some(rule) = &tool.approval_rule
    {
        let reason = format!("tool `{}` requires approval (approval rule {rule})", call.name);
        return Err(CallOutcome::NeedsApproval { reason, metadata: Map::new() });
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
    if tool.timeout.is_some() || env.limit.is_some() {
        return None;
    }
    let (indices, calls): (Vec<usize>, Vec<ChainedCall>) = std::iter::once(first)
        .chain(rest)
        .map_while(|(index, request)| {
            let arguments = prepare(tool, &request, arguments_of(&request)).ok()?.into_owned();
            let ctx = context(env, tool, &request, 1, env.cancellation.clone());
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

/// The context of one attempt.
fn context(
    env: &CallEnv<'_>,
    tool: &RegisteredTool,
    request: &CallRequest<'_>,
    attempt: u32,
    cancellation: CancellationToken,
) -> ToolContext {
    ToolContext {
        run_id: env.run_id.clone(),
        tool_call_id: request.part.id.clone(),
        tool_name: tool.name.clone(),
        retry: request.retry,
        attempt,
        max_retries: tool.max_retries,
        cancellation,
        approval: request.approval.clone(),
        dependencies: env.dependencies.clone(),
        channel: Some(Channel(env.run.clone())),
        // Each attempt asks its questions from the first again.
        replies: request.answered.as_ref().map(|answered| Arc::new(Replies::new(answered.clone()))),
    }
}

async fn attempts(
    env: &CallEnv<'_>,
    tool: &RegisteredTool,
    request: &CallRequest<'_>,
    mut ahead: Option<Claimed>,
    arguments: &Value,
) -> CallOutcome {
    let call = request.part;
    let mut attempt = 1;
    loop {
        let cancellation = match tool.timeout {
            // A child token lets a timed-out blocking tool see `is_cancelled()` without
            // cancelling the run; untimed calls share the run's token and allocate nothing.
            Some(_) => env.cancellation.child_token(),
            None => env.cancellation.clone(),
        };
        let ctx = context(env, tool, request, attempt, cancellation.clone());
        let outcome = match ahead.take() {
            // Boxed, so the rare path does not grow every call's future.
            Some(claimed) => {
                Box::pin(claimed_or(claimed, || attempt_once(tool, ctx, arguments, &cancellation, &call.name))).await
            }
            None => attempt_once(tool, ctx, arguments, &cancellation, &call.name).await,
        };
        let error = match outcome {
            Ok(result) => return ToolReturn::success(call, result).into(),
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
            ToolErrorKind::ApprovalRequired => {
                let (_, reason, metadata, _) = error.into_parts();
                return CallOutcome::NeedsApproval { reason, metadata };
            }
            ToolErrorKind::CallDeferred => {
                let (_, reason, metadata, _) = error.into_parts();
                return CallOutcome::Deferred { reason, metadata };
            }
            ToolErrorKind::ElicitationRequired => {
                if let Some((asked, question)) = error.question() {
                    return CallOutcome::NeedsInput { asked, question };
                }
                let message = format!(
                    "tool `{}` raised `elicitation_required` itself; a call waits for the user's answer only \
                     through `ctx.elicit(...)`",
                    call.name
                );
                return ToolReturn::failure(call, ToolError::user_error(message), Map::new()).into();
            }
            ToolErrorKind::Execution => {
                let extra = json!({"attempts": attempt, "max_retries": tool.max_retries});
                let Value::Object(extra) = extra else { unreachable!("json! of an object literal") };
                let message = format!("{} (failed after {attempt} attempt(s))", error.message());
                let (kind, _, metadata, private) = error.into_parts();
                let mut error = ToolError::new(kind, message).with_metadata(metadata);
                if let Some(private) = private {
                    error = error.with_private_metadata(private);
                }
                return ToolReturn::failure(call, error, extra).into();
            }
            _ => return ToolReturn::failure(call, error, Map::new()).into(),
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

/// One attempt: a panic becomes an `Execution` error, a timeout a `Timeout` error.
async fn attempt_once(
    tool: &RegisteredTool,
    ctx: ToolContext,
    arguments: &Value,
    cancellation: &CancellationToken,
    name: &str,
) -> Result<ToolResult, ToolError> {
    let future = match std::panic::catch_unwind(AssertUnwindSafe(|| tool.tool.call(ctx, arguments))) {
        Ok(future) => AssertUnwindSafe(future).catch_unwind(),
        Err(panic) => return Err(ToolError::panicked(name, &*panic)),
    };
    let outcome = match tool.timeout {
        None => future.await,
        Some(limit) => match tokio::time::timeout(limit, future).await {
            Ok(outcome) => outcome,
            Err(_) => {
                cancellation.cancel();
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
