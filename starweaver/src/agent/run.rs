//! The agent loop: ask the model, run its tool calls, feed the returns back, until a final
//! answer, a failure, a cancellation, or a wait for human decisions.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::mpsc::UnboundedSender;
use tracing::Instrument;

use super::inner::AgentInner;
use super::limits::Bounds;
use super::machine::{End, Machine, Next, ReadyCall, resolve_decisions};
use super::options::RunOptions;
use super::state::{SessionState, Suspended};
use crate::concurrency::Limit;
use crate::error::{Error, Result};
use crate::event::{Event, EventKind, EventLog};
use crate::hitl::{HitlDecisions, Resolution};
use crate::hook::Hooks;
use crate::message::{ResponsePart, ToolCallPart};
use crate::model::ModelRequest;
use crate::output::RunOutput;
use crate::registry::{Source, ToolList, ToolRegistry};
use crate::result::{RunError, RunResult, RunStatus};
use crate::scheduler::{Ahead, CallEnv, CallRequest, RunChannel, Woken, chain_ahead, invoke, prepare_step};
use crate::search::SEARCH_TOOL;
use crate::tool::{Channel, RunScope};
use crate::toolset::ToolsetContext;
use crate::trace::{GenAi, SpanId, SpanOf, Tracer};

/// How a run starts: from a prompt, or from decisions on a waiting run.
pub(crate) enum Start {
    Prompt(String),
    Resume(HitlDecisions),
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
    let output = match &options.output {
        Some(own) => Arc::new(own.build(&*agent.model, agent.instructions.as_deref())?),
        None => agent.output.clone(),
    };
    let dependencies = options.dependencies.unwrap_or_else(|| agent.dependencies.clone());
    let mut extra = ToolList::new(Source::Run);
    for tool in options.tools {
        extra.tool(tool);
    }
    for toolset in options.toolsets {
        extra.toolset(toolset);
    }
    let hooks: Vec<Arc<dyn Hooks>> = options.hooks.into_iter().chain(agent.hooks.iter().cloned()).collect();
    let tools_at = |run_id: &Arc<str>, step: u32| ToolsetContext::new(run_id.clone(), step, dependencies.clone());
    let (run_id, next_seq, first, tools) = match start {
        Start::Prompt(prompt) => {
            state.ensure_idle()?;
            let run_id: Arc<str> = format!("run_{}", uuid::Uuid::new_v4().simple()).into();
            let tools = agent.tools_for(&extra, &output, &tools_at(&run_id, 1)).await?;
            (run_id, 0, First::Prompt(prompt), tools)
        }
        Start::Resume(decisions) => {
            let (resolved, claimed) = resolve_decisions(state, decisions)?;
            let waiting = state.waiting.as_ref().ok_or(Error::NotWaiting)?;
            // The tools of the step the run resumes at, before anything is claimed.
            let tools = agent.tools_for(&extra, &output, &tools_at(&waiting.run_id, waiting.step)).await?;
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
            (waiting.run_id.clone(), waiting.next_seq, First::Resume(waiting, resolved), tools)
        }
    };
    let listed_step = match &first {
        First::Prompt(_) => 1,
        First::Resume(waiting, _) => waiting.step,
    };
    let trace = Tracer::new(run_id.clone());
    let (run_span, span) = trace.open(SpanOf::Run, None);
    let events = Arc::new(EventLog::new(run_id.clone(), next_seq, live));
    let channel = Arc::new(RunChannel { events, trace: Arc::new(trace), also: None, answers: agent.answerer.clone() });
    let cancellation = options.cancellation.unwrap_or_default();
    let scope = RunScope::new(run_id, cancellation, dependencies, Some(Channel(channel.clone())));
    let run = Run {
        channel,
        run_span,
        agent,
        scope,
        registry: tools.registry,
        refused: tools.refused,
        extra,
        listed_step,
        limit: agent.run_limit(),
        hooks,
        bounds: Bounds {
            max_steps: agent.max_steps,
            usage: options.usage_limits.unwrap_or(agent.usage_limits),
            output: output.rules,
        },
        output,
    };
    run.go(state, first).instrument(span).await
}

enum First {
    Prompt(String),
    Resume(Suspended, Vec<(usize, Resolution)>),
}

/// The I/O around the machine: the model, the tools, listing tools, spans.
struct Run<'a> {
    /// The run's events and trace, and what its calls report through.
    channel: Arc<RunChannel>,
    run_span: SpanId,
    agent: &'a AgentInner,
    /// What every call's context shares: the run's id, cancellation, dependencies and
    /// channel.
    scope: Arc<RunScope>,
    /// The tools of the current step.
    registry: Arc<ToolRegistry>,
    /// The `tool_refused` events of the listing made before the run, until the machine
    /// emits them.
    refused: Vec<EventKind>,
    /// The run's own tools and toolsets.
    extra: ToolList,
    /// The step `registry` was listed for.
    listed_step: u32,
    /// The cap on the run's calls, if the agent has one.
    limit: Option<Limit>,
    bounds: Bounds,
    /// The run's hooks, then the agent's.
    hooks: Vec<Arc<dyn Hooks>>,
    /// What the run answers with: the agent's output, or the run's own.
    output: Arc<RunOutput>,
}

impl Run<'_> {
    async fn go(mut self, state: &mut SessionState, first: First) -> Result<RunResult> {
        let bounds = self.bounds;
        let refused = std::mem::take(&mut self.refused);
        let mut machine = match first {
            First::Prompt(prompt) => Machine::start(
                state,
                self.scope.run_id.clone(),
                bounds,
                self.output.instructions.as_deref(),
                prompt,
                refused,
                &self.channel.events,
            ),
            First::Resume(waiting, resolved) => {
                Machine::resume(state, waiting, bounds, resolved, &self.registry, refused, &self.channel.events)
            }
        };
        // A resume's approved calls run under the run's span, before any step of its own.
        let mut step_span = None;
        loop {
            match machine.next(&self.channel.events, &self.registry) {
                Next::ListTools { step } => match self.list_tools(&machine.run_id, step).await {
                    Ok(refused) => machine.tools_listed(refused, &self.channel.events),
                    Err(message) => machine.failed(RunError::Tools { message }),
                },
                Next::RequestModel { step } => {
                    let (span_id, span) = self.channel.trace.open(SpanOf::Step(step), Some(self.run_span));
                    self.request_model(&mut machine, step, span_id).instrument(span.clone()).await;
                    step_span = Some((span_id, span));
                }
                Next::StartCalls(first) => match step_span.take() {
                    Some((span_id, span)) => {
                        self.run_calls(&mut machine, first, span_id).instrument(span).await;
                        self.channel.trace.close(span_id, "tool_calls");
                    }
                    None => self.run_calls(&mut machine, first, self.run_span).await,
                },
                Next::AwaitCalls => unreachable!("run_calls returns once every call has ended"),
                Next::CheckOutput { text } => {
                    let ctx = self.output.context(&self.scope.run_id, &self.scope.dependencies);
                    let checked = self.output.check(ctx, &text).await;
                    machine.output_checked(checked);
                }
                Next::End(end) => {
                    if let Some((span_id, _)) = step_span.take() {
                        self.channel.trace.close(span_id, end.as_str());
                    }
                    return Ok(self.finish(machine, end));
                }
            }
        }
    }

    /// The tools of `step`, listed again unless they were listed for it already, and the
    /// `tool_refused` events of a new listing; or why they cannot be had.
    async fn list_tools(&mut self, run_id: &Arc<str>, step: u32) -> std::result::Result<Vec<EventKind>, String> {
        let mut refused = Vec::new();
        if step != self.listed_step {
            let ctx = ToolsetContext::new(run_id.clone(), step, self.scope.dependencies.clone());
            let tools =
                self.agent.tools_for(&self.extra, &self.output, &ctx).await.map_err(|error| error.to_string())?;
            self.registry = tools.registry;
            self.listed_step = step;
            refused = tools.refused;
        }
        if let Some(prepared) = prepare_step(&self.registry, &self.hooks, run_id, &self.scope.dependencies).await? {
            self.registry = Arc::new(prepared);
        }
        Ok(refused)
    }

    /// One model request, its outcome handed to the machine.
    async fn request_model(&self, machine: &mut Machine<&mut SessionState>, step: u32, step_span: SpanId) {
        let events = &self.channel.events;
        let deltas = move |delta| events.delta(step, delta);
        let offered = self.registry.offered(&machine.state.loaded);
        let request = ModelRequest {
            messages: machine.state.history.messages(),
            tools: &offered.tools,
            deferred: &offered.deferred,
            output: self.output.asked.as_ref(),
            toolset_instructions: self.registry.instructions(),
            run_id: &machine.run_id,
            step,
            deltas: events.is_live().then_some(&deltas as &(dyn Fn(_) + Send + Sync)),
        };
        let model = &self.agent.model;
        let (model_span, span) = self.channel.trace.open(SpanOf::ModelRequest(step), Some(step_span));
        self.channel.trace.annotate(model_span, &GenAi::request(model.system(), model.model_name()));
        let response = tokio::select! {
            biased;
            () = self.scope.cancellation.cancelled() => {
                self.channel.trace.close(model_span, "cancelled");
                return machine.cancel(events, &self.registry);
            }
            response = model.request(request).instrument(span) => response,
        };
        self.channel.trace.close(model_span, if response.is_ok() { "ok" } else { "error" });
        match response {
            Ok(response) => {
                self.channel
                    .trace
                    .annotate(model_span, &GenAi::response(response.model_name.as_deref(), response.usage));
                // The run answers tool searches itself, while taking the response; a
                // provider's own search is taken with it too.
                let searches = !response.loaded.is_empty()
                    || self.registry.defers()
                        && !self.registry.searches_natively()
                        && response
                            .parts
                            .iter()
                            .any(|part| matches!(part, ResponsePart::ToolCall(call) if &*call.name == SEARCH_TOOL));
                let search = searches.then(|| self.channel.trace.open(SpanOf::ToolSearch(step), Some(step_span)));
                let _entered = search.as_ref().map(|(_, span)| span.enter());
                machine.model_responded(response, &self.channel.events, &self.registry);
                if let Some((search_span, _)) = search {
                    self.channel.trace.close(search_span, "ok");
                }
            }
            Err(error) => machine.failed(RunError::model(error)),
        }
    }

    /// Runs a response's calls side by side on this task as the machine releases them,
    /// until every one has ended or the run is cancelled.
    async fn run_calls(&self, machine: &mut Machine<&mut SessionState>, first: Vec<ReadyCall>, parent: SpanId) {
        let Some(response) = machine.response() else { return };
        let calls: Vec<&ToolCallPart> = response.tool_calls().collect();
        let env = CallEnv {
            run: &self.channel,
            parent,
            registry: &self.registry,
            scope: &self.scope,
            limit: self.limit.as_ref(),
            hooks: &self.hooks,
        };
        let mut running = FuturesUnordered::new();
        // Chains of calls to one tool that the tool runs ahead; dropped with the batch.
        let mut ahead: Vec<Ahead> = Vec::new();
        #[allow(clippy::indexing_slicing)] // the machine released `r`: one of this response's calls
        let request = |r: &ReadyCall| CallRequest {
            part: calls[r.index],
            approval: r.approval.clone(),
            answered: r.answered.clone(),
            retry: r.retry,
            ahead: None,
            queued_for: Vec::new(),
        };
        // Each call makes a `tool_call` and a `tool_return` event and a span, at least; a
        // few more events and spans follow the batch (the next step, its request and its
        // answer, or the end), which must not regrow what the batch filled.
        self.channel.events.reserve(2 * calls.len() + 4);
        self.channel.trace.reserve(calls.len() + 4);
        // One wait on the cancellation for the whole batch, not one made per call, polled
        // again only once it wakes the run (not at every call's end).
        let stopped = std::pin::pin!(self.scope.cancellation.cancelled());
        let mut stopped = Woken::new(stopped);
        let mut start = first;
        let cancelled = loop {
            for ready in start.drain(..) {
                let mut call = request(&ready);
                call.ahead = ahead.iter_mut().find_map(|chain| chain.claim(ready.index));
                let mut chain = machine.chain_after(&ready).peekable();
                if chain.peek().is_some()
                    && let Some(mut chained) =
                        chain_ahead(&env, (ready.index, request(&ready)), chain.map(|r| (r.index, request(&r))))
                {
                    call.ahead = chained.claim(ready.index);
                    ahead.push(chained);
                }
                let (env, index) = (&env, ready.index);
                running.push(async move { (index, invoke(env, call).await) });
            }
            let finished = tokio::select! {
                biased;
                () = &mut stopped => break true,
                finished = running.next() => finished,
            };
            let Some((i, outcome)) = finished else { break false };
            machine.call_finished(i, outcome);
            if !machine.next_calls(&self.channel.events, &mut start) {
                break false;
            }
        };
        drop(running);
        drop(ahead);
        if cancelled {
            machine.cancel(&self.channel.events, &self.registry);
        }
    }

    fn finish(self, machine: Machine<&mut SessionState>, end: End) -> RunResult {
        let RunChannel { events, trace, .. } = &*self.channel;
        let trace = |status: RunStatus| {
            trace.close(self.run_span, status.as_str());
            trace.finish()
        };
        machine.finish(end, events, trace).0
    }
}
