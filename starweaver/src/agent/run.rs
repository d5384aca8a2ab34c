//! The agent loop: ask the model, run its tool calls, feed the returns back, until a final
//! answer, a failure, a cancellation, or a wait for human decisions.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::Semaphore;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{AgentInner, RunOptions, RunTools};
use crate::error::{Error, Result};
use crate::event::{Event, EventKind, EventLog};
use crate::hitl::{
    ApprovalDecision, DeferredOutcome, Hitl, HitlDecisions, PendingApproval, PendingCall, PendingDeferred, Resolution,
    fresh_id, resolve,
};
use crate::message::{History, Message, RequestPart, ToolCallPart};
use crate::model::{ModelRequest, Usage};
use crate::registry::ToolRegistry;
use crate::result::{RunError, RunResult, RunStatus};
use crate::scheduler::{self, CallEnv, CallOutcome, CallRequest, ToolReturn};
use crate::tool::{Dependencies, ToolError, ToolErrorKind, ToolResult};
use crate::toolset::ToolsetContext;
use crate::trace::{GenAi, SpanId, SpanOf, Tracer};

/// What a session keeps between runs.
#[derive(Default)]
pub(crate) struct SessionState {
    pub history: History,
    pub waiting: Option<Suspended>,
    /// Canonical ids of every decision already applied, to refuse replays.
    pub decided: HashSet<String>,
}

/// A run waiting for decisions: the response it stopped at (the history's last message),
/// and a slot per tool call of it.
pub(crate) struct Suspended {
    pub run_id: Arc<str>,
    pub step: u32,
    pub retries: HashMap<Arc<str>, u32>,
    pub next_seq: u64,
    pub response: Arc<Message>,
    pub slots: Vec<Slot>,
}

impl Slot {
    /// The pending call this slot waits on, if it waits.
    pub(crate) fn pending_mut(&mut self) -> Option<&mut PendingCall> {
        match self {
            Self::Done(_) => None,
            Self::Approval(pending) => Some(&mut pending.0),
            Self::Deferred(pending) => Some(&mut pending.0),
        }
    }

    /// The model's id of the call this slot is for.
    pub(crate) fn tool_call_id(&self) -> &str {
        match self {
            Self::Done(ret) => &ret.part.tool_call_id,
            Self::Approval(pending) => &pending.tool_call_id,
            Self::Deferred(pending) => &pending.tool_call_id,
        }
    }
}

impl Suspended {
    pub(crate) fn hitl(&self) -> Hitl {
        let mut hitl = Hitl::default();
        for slot in &self.slots {
            match slot {
                Slot::Done(_) => {}
                Slot::Approval(a) => hitl.approvals.push((**a).clone()),
                Slot::Deferred(d) => hitl.deferred.push((**d).clone()),
            }
        }
        hitl
    }
}

/// Where one call of a batch stands. Serialised in exported session state.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(crate) enum Slot {
    Done(ToolReturn),
    Approval(Box<PendingApproval>),
    Deferred(Box<PendingDeferred>),
}

/// How a run starts: from a prompt, or from decisions on a waiting run.
pub(crate) enum Start {
    Prompt(String),
    Resume(HitlDecisions),
}

enum End {
    Completed(String),
    Waiting(Arc<Message>, Vec<Slot>),
    Failed(RunError),
    Cancelled,
}

impl End {
    fn as_str(&self) -> &'static str {
        match self {
            Self::Completed(_) => "completed",
            Self::Waiting(..) => "waiting",
            Self::Failed(_) => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// The calls of one response after execution, one slot per call in model order.
struct Batch {
    response: Arc<Message>,
    slots: Vec<Slot>,
    cancelled: bool,
}

/// Records a resume's decisions where other processes see them before any approved tool
/// runs (a store write that fails if someone else resumed first); see [`drive`].
pub(crate) type Claim<'c> = &'c mut (dyn FnMut(&SessionState) -> Result<()> + Send);

/// Runs (or resumes) one run of a session to its end. A resume first marks its decisions
/// as applied and hands the state to `claim`; if that fails, nothing has run and the
/// session keeps waiting, so a decision's tool runs at most once across racing resumes.
pub(crate) async fn drive(
    agent: &AgentInner,
    state: &mut SessionState,
    start: Start,
    options: RunOptions,
    live: Option<UnboundedSender<Event>>,
    claim: Option<Claim<'_>>,
) -> Result<RunResult> {
    // Every check happens before the first event, so a refused call leaves no trace.
    let dependencies = options.dependencies.unwrap_or_else(|| agent.dependencies.clone());
    let extra = RunTools::new(options.tools, options.toolsets);
    let tools_at = |run_id: &Arc<str>, step: u32| ToolsetContext {
        run_id: run_id.clone(),
        step,
        dependencies: dependencies.clone(),
    };
    let (run_id, step, retries, next_seq, first, registry) = match start {
        Start::Prompt(prompt) => {
            if let Some(waiting) = &state.waiting {
                let pending = waiting.slots.iter().filter(|s| !matches!(s, Slot::Done(_))).count();
                return Err(Error::SessionWaiting { run_id: waiting.run_id.to_string(), pending });
            }
            let run_id: Arc<str> = format!("run_{}", uuid::Uuid::new_v4().simple()).into();
            let registry = agent.tools_for(&extra, &tools_at(&run_id, 1)).await?;
            (run_id, 0, HashMap::new(), 0, First::Prompt(prompt), registry)
        }
        Start::Resume(decisions) => {
            let waiting = state.waiting.as_ref().ok_or(Error::NotWaiting)?;
            let pending = pending_items(waiting);
            let resolved = resolve(&waiting.run_id, &pending, &state.decided, decisions)?;
            let claimed: Vec<String> = pending.iter().map(|p| p.id.to_owned()).collect();
            // The tools of the step the run resumes at, before anything is claimed.
            let registry = agent.tools_for(&extra, &tools_at(&waiting.run_id, waiting.step)).await?;
            state.decided.extend(claimed.iter().cloned());
            if let Some(claim) = claim
                && let Err(error) = claim(state)
            {
                for id in &claimed {
                    state.decided.remove(id);
                }
                return Err(error);
            }
            let Some(waiting) = state.waiting.take() else { return Err(Error::NotWaiting) };
            let (run_id, step, retries, next_seq) =
                (waiting.run_id.clone(), waiting.step, waiting.retries.clone(), waiting.next_seq);
            (run_id, step, retries, next_seq, First::Resume(waiting, resolved), registry)
        }
    };
    let listed_step = match &first {
        First::Prompt(_) => step + 1,
        First::Resume(..) => step,
    };
    let tracer = Tracer::new(run_id.clone());
    let (run_span, span) = tracer.open(SpanOf::Run, None);
    let run = Run {
        tracer,
        run_span,
        agent,
        events: EventLog::new(run_id.clone(), next_seq, live),
        run_id,
        step,
        retries: Mutex::new(retries),
        cancellation: options.cancellation.unwrap_or_default(),
        dependencies,
        registry,
        extra,
        listed_step,
        limit: agent.max_concurrency.map(Semaphore::new),
        usage: Usage::default(),
        state,
    };
    run.go(first).instrument(span).await
}

enum First {
    Prompt(String),
    Resume(Suspended, Vec<(usize, Resolution)>),
}

fn pending_items(waiting: &Suspended) -> Vec<crate::hitl::Pending<'_>> {
    waiting
        .slots
        .iter()
        .enumerate()
        .filter_map(|(slot, s)| {
            let (call, is_approval) = match s {
                Slot::Done(_) => return None,
                Slot::Approval(a) => (&a.0, true),
                Slot::Deferred(d) => (&d.0, false),
            };
            Some(crate::hitl::Pending {
                slot,
                id: &call.id,
                tool_call_id: &call.tool_call_id,
                arguments: &call.arguments,
                is_approval,
            })
        })
        .collect()
}

struct Run<'a> {
    tracer: Tracer,
    run_span: SpanId,
    agent: &'a AgentInner,
    state: &'a mut SessionState,
    run_id: Arc<str>,
    step: u32,
    retries: Mutex<HashMap<Arc<str>, u32>>,
    events: EventLog,
    cancellation: CancellationToken,
    dependencies: Dependencies,
    /// The tools of the current step.
    registry: Arc<ToolRegistry>,
    /// The run's own tools and toolsets.
    extra: RunTools,
    /// The step `registry` was listed for.
    listed_step: u32,
    limit: Option<Semaphore>,
    /// Tokens the run's model requests used.
    usage: Usage,
}

impl Run<'_> {
    async fn go(mut self, first: First) -> Result<RunResult> {
        let mut batch = match first {
            First::Prompt(prompt) => {
                self.events.emit(EventKind::RunStart { prompt: prompt.clone() });
                let mut parts = Vec::with_capacity(2);
                if self.state.history.messages().is_empty()
                    && let Some(instructions) = &self.agent.instructions
                {
                    parts.push(RequestPart::SystemPrompt { text: instructions.clone() });
                }
                parts.push(RequestPart::UserPrompt { text: prompt });
                self.state.history.push(Message::Request { parts });
                None
            }
            First::Resume(Suspended { response, slots, .. }, resolved) => {
                let approvals = resolved.iter().filter(|(_, r)| matches!(r, Resolution::Approval(_))).count();
                let deferred_results = resolved.len() - approvals;
                self.events.emit(EventKind::RunResumed { approvals, deferred_results });
                Some(self.apply(response, slots, resolved).await)
            }
        };
        loop {
            if let Some(batch) = batch.take()
                && let Some(end) = self.settle(batch)
            {
                return Ok(self.finish(end));
            }
            if self.step >= self.agent.max_steps {
                let max_steps = self.agent.max_steps;
                return Ok(self.finish(End::Failed(RunError::StepLimit { max_steps })));
            }
            self.step += 1;
            if self.step != self.listed_step {
                let ctx = ToolsetContext {
                    run_id: self.run_id.clone(),
                    step: self.step,
                    dependencies: self.dependencies.clone(),
                };
                match self.agent.tools_for(&self.extra, &ctx).await {
                    Ok(registry) => self.registry = registry,
                    Err(error) => return Ok(self.finish(End::Failed(RunError::Tools { message: error.to_string() }))),
                }
            }
            let (step_span, span) = self.tracer.open(SpanOf::Step(self.step), Some(self.run_span));
            let step = async {
                let response = self.step_model(step_span).await?;
                let requests: Vec<CallRequest<'_>> =
                    response.tool_calls().map(|part| CallRequest { part, approval: None }).collect();
                let (slots, cancelled) = self.run_calls(&requests, step_span).await;
                drop(requests);
                Ok::<_, End>(Batch { response, slots, cancelled })
            };
            match step.instrument(span).await {
                Ok(next) => {
                    self.tracer.close(step_span, "tool_calls");
                    batch = Some(next);
                }
                Err(end) => {
                    self.tracer.close(step_span, end.as_str());
                    return Ok(self.finish(end));
                }
            }
        }
    }

    /// One model request; `Ok` holds a response with tool calls to run, `Err` how the run ends.
    async fn step_model(&mut self, step_span: SpanId) -> Result<Arc<Message>, End> {
        let step = self.step;
        let messages = self.state.history.messages();
        self.events.emit(EventKind::ModelRequest { step, messages: messages.len() });
        let events = &self.events;
        let deltas = move |delta| events.delta(step, delta);
        let request = ModelRequest {
            messages,
            tools: self.registry.definitions(),
            run_id: &self.run_id,
            step,
            deltas: events.is_live().then_some(&deltas as &(dyn Fn(_) + Send + Sync)),
        };
        let model = &self.agent.model;
        let (model_span, span) = self.tracer.open(SpanOf::ModelRequest(step), Some(step_span));
        self.tracer.annotate(model_span, &GenAi::request(model.system(), model.model_name()));
        let response = tokio::select! {
            biased;
            () = self.cancellation.cancelled() => {
                self.tracer.close(model_span, "cancelled");
                return Err(End::Cancelled);
            }
            response = self.agent.model.request(request).instrument(span) => response,
        };
        self.tracer.close(model_span, if response.is_ok() { "ok" } else { "error" });
        let response = response.map_err(|e| End::Failed(RunError::model(e)))?;
        self.tracer.annotate(model_span, &GenAi::response(response.model_name.as_deref(), response.usage));
        if let Some(usage) = response.usage {
            self.usage += usage;
        }
        let empty = response.parts.is_empty();
        let message = self.state.history.push(Message::Response { parts: response.parts }).clone();
        self.events.emit(EventKind::ModelResponse { step, message: message.clone(), usage: response.usage });
        if message.tool_calls().next().is_some() {
            return Ok(message);
        }
        if empty {
            return Err(End::Failed(RunError::EmptyResponse));
        }
        Err(End::Completed(message.text().unwrap_or_default()))
    }

    /// Runs calls through the scheduler and turns each outcome into a slot.
    async fn run_calls(&self, requests: &[CallRequest<'_>], parent: SpanId) -> (Vec<Slot>, bool) {
        let env = CallEnv {
            trace: &self.tracer,
            parent,
            registry: &self.registry,
            run_id: &self.run_id,
            cancellation: &self.cancellation,
            dependencies: &self.dependencies,
            events: &self.events,
            retries: &self.retries,
            limit: self.limit.as_ref(),
        };
        let batch = scheduler::execute(&env, requests).await;
        let mut issued = Vec::new();
        let slots = batch
            .outcomes
            .into_iter()
            .zip(requests)
            .map(|(outcome, request)| self.slot(outcome, request, &mut issued))
            .collect();
        (slots, batch.cancelled)
    }

    /// A pending item's id: canonical, and never one this session has issued before, so a
    /// decision made for one call cannot approve a later call that reuses its model id.
    fn pending_id(&self, tool_call_id: &str, issued: &mut Vec<String>) -> String {
        let id = fresh_id(&self.run_id, tool_call_id, |id| {
            self.state.decided.contains(id) || issued.iter().any(|i| i == id)
        });
        issued.push(id.clone());
        id
    }

    fn slot(&self, outcome: CallOutcome, request: &CallRequest<'_>, issued: &mut Vec<String>) -> Slot {
        let mut pending = |reason, metadata| {
            let call = request.part;
            let overridden = request.approval.as_ref().and_then(|a| a.override_arguments.as_ref());
            PendingCall {
                id: self.pending_id(&call.id, issued),
                run_id: self.run_id.to_string(),
                tool_call_id: call.id.to_string(),
                tool_name: call.name.to_string(),
                arguments: overridden.unwrap_or(&call.arguments).clone(),
                reason,
                metadata,
            }
        };
        match outcome {
            CallOutcome::Returned(ret) => Slot::Done(ret),
            CallOutcome::NeedsApproval { reason, metadata } => {
                let pending = Box::new(PendingApproval(pending(reason, metadata)));
                self.events.emit(EventKind::ApprovalRequested(pending.clone()));
                Slot::Approval(pending)
            }
            CallOutcome::Deferred { reason, metadata } => {
                let pending = Box::new(PendingDeferred(pending(reason, metadata)));
                self.events.emit(EventKind::DeferredRequested(pending.clone()));
                Slot::Deferred(pending)
            }
        }
    }

    /// Applies resolved decisions: denials and deferred results become returns; approved
    /// calls run again, with their decision in the context, under the usual scheduling.
    async fn apply(&self, response: Arc<Message>, mut slots: Vec<Slot>, resolved: Vec<(usize, Resolution)>) -> Batch {
        let calls: Vec<&ToolCallPart> = response.tool_calls().collect();
        let mut approved: Vec<(usize, Arc<ApprovalDecision>)> = Vec::new();
        for (slot, resolution) in resolved {
            let call = &calls[slot];
            let ret = match resolution {
                Resolution::Approval(decision) if decision.approved => {
                    approved.push((slot, Arc::new(decision)));
                    continue;
                }
                Resolution::Approval(decision) => {
                    let reason = decision.reason.unwrap_or_else(|| "the call was denied".to_owned());
                    let mut extra = Map::new();
                    if let Some(who) = decision.decided_by {
                        extra.insert("decided_by".into(), Value::String(who));
                    }
                    ToolReturn::failure(call, ToolError::new(ToolErrorKind::ApprovalDenied, reason), extra)
                }
                Resolution::Deferred(result) => match result.outcome {
                    DeferredOutcome::Completed { value } => ToolReturn::success(call, ToolResult::new(value)),
                    DeferredOutcome::Failed { error } => {
                        ToolReturn::failure(call, ToolError::new(ToolErrorKind::DeferredFailed, error), Map::new())
                    }
                },
            };
            self.events.emit(ret.event());
            slots[slot] = Slot::Done(ret);
        }
        approved.sort_by_key(|(slot, _)| *slot);
        let requests: Vec<CallRequest<'_>> =
            approved.iter().map(|(slot, d)| CallRequest { part: calls[*slot], approval: Some(d.clone()) }).collect();
        let (rerun, cancelled) = self.run_calls(&requests, self.run_span).await;
        drop(requests);
        drop(calls);
        for ((slot, _), new) in approved.into_iter().zip(rerun) {
            slots[slot] = new;
        }
        Batch { response, slots, cancelled }
    }

    /// Decides what follows a batch: wait, fail, stop, or go on to the next model request.
    fn settle(&mut self, batch: Batch) -> Option<End> {
        let Batch { response, mut slots, cancelled } = batch;
        if cancelled {
            self.close_pending(&response, &mut slots, "the run was cancelled before this call was decided");
            self.push_returns(slots);
            return Some(End::Cancelled);
        }
        let exhausted = self.exhausted_budget(&slots);
        if exhausted.is_none() && slots.iter().any(|s| !matches!(s, Slot::Done(_))) {
            return Some(End::Waiting(response, slots));
        }
        self.close_pending(&response, &mut slots, "the run failed before this call was decided");
        self.push_returns(slots);
        exhausted.map(End::Failed)
    }

    /// The first tool (in model order) whose model retries now exceed its budget.
    fn exhausted_budget(&self, slots: &[Slot]) -> Option<RunError> {
        let retries = self.retries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        slots.iter().find_map(|slot| {
            let Slot::Done(ret) = slot else { return None };
            ret.error.filter(|k| k.counts_model_retry())?;
            let tool = self.registry.get(&ret.part.name)?;
            let spent = retries.get(&*ret.part.name).copied().unwrap_or(0);
            (spent > tool.max_retries).then(|| RunError::RetriesExhausted {
                tool: ret.part.name.to_string(),
                max_retries: tool.max_retries,
                message: ret.part.content["message"].as_str().unwrap_or_default().to_owned(),
            })
        })
    }

    /// Gives every still-pending call a `cancelled` return, so the history never holds a
    /// call without a return.
    fn close_pending(&self, response: &Message, slots: &mut [Slot], message: &str) {
        for (slot, call) in slots.iter_mut().zip(response.tool_calls()) {
            if !matches!(slot, Slot::Done(_)) {
                let ret = ToolReturn::failure(call, ToolError::cancelled(message), Map::new());
                self.events.emit(ret.event());
                *slot = Slot::Done(ret);
            }
        }
    }

    fn push_returns(&mut self, slots: Vec<Slot>) {
        self.state.history.push_request(slots.into_iter().map(|slot| match slot {
            Slot::Done(ret) => {
                let ToolReturn { part, host, .. } = ret;
                (RequestPart::ToolReturn(part), host)
            }
            Slot::Approval(_) | Slot::Deferred(_) => unreachable!("pending calls are closed before returns are pushed"),
        }));
    }

    fn finish(self, end: End) -> RunResult {
        let Run { events, state, run_id, step, retries, tracer, run_span, usage, .. } = self;
        let (status, output, error) = match end {
            End::Completed(output) => {
                events.emit(EventKind::RunComplete { output: output.clone() });
                (RunStatus::Completed, Some(output), None)
            }
            End::Waiting(response, slots) => {
                let retries = retries.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
                let suspended = Suspended { run_id: run_id.clone(), step, retries, next_seq: 0, response, slots };
                let hitl = suspended.hitl();
                events.emit(EventKind::Waiting { approvals: hitl.approvals.len(), deferred: hitl.deferred.len() });
                state.waiting = Some(suspended);
                (RunStatus::Waiting, None, None)
            }
            End::Failed(error) => {
                events.emit(EventKind::RunFailed { error: error.to_string() });
                (RunStatus::Failed, None, Some(error))
            }
            End::Cancelled => {
                events.emit(EventKind::RunCancelled);
                (RunStatus::Cancelled, None, None)
            }
        };
        tracer.close(run_span, status.as_str());
        let (events, next_seq) = events.finish();
        let hitl = match &mut state.waiting {
            Some(waiting) => {
                waiting.next_seq = next_seq;
                waiting.hitl()
            }
            None => Hitl::default(),
        };
        let trace = tracer.finish();
        RunResult {
            run_id: run_id.to_string(),
            status,
            output,
            error,
            hitl,
            messages: state.history.clone(),
            events,
            trace,
            usage,
        }
    }
}
