//! The run loop as a deterministic state machine with no I/O of its own.
//!
//! It says what to do next ([`Next`]: list a step's tools, request the model, start these
//! calls with their policy, wait for the running ones, or the run's end) and takes each
//! outcome back. The step limit, retry budgets, the approval gate's suspensions, closing
//! calls a run leaves undecided, cancellation, the history and every event the run itself
//! emits live here. Its two drivers only do I/O: `run.rs` (in this process: the model
//! request, the tool calls, listing tools, timing spans) and `durable.rs` (an engine that
//! makes them elsewhere), so the two cannot disagree on what a step means.

use std::borrow::BorrowMut;
use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::catalog;
use super::limits::Bounds;
use super::state::{Asking, SessionState, Slot, Suspended};
use super::task::CallTask;
use crate::error::{Error, Result};
use crate::event::{EventKind, EventLog};
use crate::hitl::{
    ApprovalDecision, DeferredOutcome, Hitl, HitlDecisions, Pending, PendingApproval, PendingCall, PendingDeferred,
    PendingElicitation, PendingKind, Resolution, fresh_id, resolve,
};
use crate::message::{Message, RequestPart, ToolCallPart};
use crate::model::{FinishReason, ModelResponse, Usage};
use crate::output::{Checked, EndStrategy};
use crate::registry::{NameMap, RegisteredTool, Source, ToolRegistry};
use crate::result::{RunError, RunResult, RunStatus};
use crate::scheduler::{Asks, CallOutcome, CallPlan, PlannedCall, ToolReturn, Waits};
use crate::tool::{Answered, Elicitation, ToolError, ToolErrorKind, ToolResult};
use crate::trace::Trace;

/// Decisions matched to the slots they decide, and the ids they decide.
pub(crate) type Resolved = (Vec<(usize, Resolution)>, Vec<String>);

/// Matches `decisions` to a waiting run's pending calls (refusing forged, replayed and
/// stale ones, by name); the resolutions and the ids they decide, which the caller marks
/// as applied.
pub(crate) fn resolve_decisions(state: &SessionState, decisions: HitlDecisions) -> Result<Resolved> {
    let waiting = state.waiting.as_ref().ok_or(Error::NotWaiting)?;
    let pending: Vec<Pending<'_>> = waiting
        .slots
        .iter()
        .enumerate()
        .filter_map(|(slot, s)| {
            let (call, kind, schema) = match s {
                Slot::Done(_) => return None,
                Slot::Approval(a) => (&a.0, PendingKind::Approval, None),
                Slot::Deferred(d) => (&d.0, PendingKind::Deferred, None),
                Slot::Elicitation(asking) => {
                    (&asking.pending.call, PendingKind::Elicitation, Some(&asking.pending.schema))
                }
            };
            let (id, tool_call_id, arguments) = (&*call.id, &*call.tool_call_id, &call.arguments);
            Some(Pending { slot, id, tool_call_id, arguments, kind, schema })
        })
        .collect();
    let resolved = resolve(&waiting.run_id, &pending, &state.decided, decisions)?;
    Ok((resolved, pending.iter().map(|p| p.id.to_owned()).collect()))
}

/// A run's answer: its text, or the value an output call gave (with the output tool).
pub(crate) struct Answer {
    pub value: Value,
    pub tool: Option<Arc<str>>,
}

/// How a run ended.
pub(crate) enum End {
    Completed(Answer),
    /// Waiting for decisions on the response's calls.
    Waiting(Arc<Message>, Vec<Slot>),
    Failed(RunError),
    Cancelled,
}

impl End {
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Self::Completed(_) => "completed",
            Self::Waiting(..) => "waiting",
            Self::Failed(_) => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// What the driver does next.
pub(crate) enum Next {
    /// List the tools of `step` (dynamic toolsets may change them) and report with
    /// [`Machine::tools_listed`], or [`Machine::failed`].
    ListTools { step: u32 },
    /// Request the model with the history and the step's tools, and report with
    /// [`Machine::model_responded`], or [`Machine::failed`].
    RequestModel { step: u32 },
    /// Start these calls of the current response.
    StartCalls(Vec<ReadyCall>),
    /// Nothing new may start: report the next running call that finishes.
    AwaitCalls,
    /// Check the model's text answer as the run's output (native or prompted output,
    /// output validators on text) and report with [`Machine::output_checked`].
    CheckOutput { text: String },
    /// The run is over; hand the end to [`Machine::conclude`].
    End(End),
}

/// A call that may start now, with what it runs under.
#[derive(Clone)]
pub(crate) struct ReadyCall {
    /// Its position among the response's tool calls.
    pub index: usize,
    /// The decision that approved it, if any.
    pub approval: Option<Arc<ApprovalDecision>>,
    /// The user's answers to the questions it asked before, if it waited for them.
    pub answered: Option<Arc<[Answered]>>,
    /// The model retries its tool has spent in the run so far.
    pub retry: u32,
    pub policy: CallPolicy,
}

/// What a call runs under, from its tool's definition: what an engine running the call
/// elsewhere enforces ([`CallTask`]).
#[derive(Clone, Copy, Default)]
pub(crate) struct CallPolicy {
    pub timeout_ms: Option<u64>,
    pub max_retries: u32,
    /// How many times the run may call the tool.
    pub max_uses: Option<u32>,
}

impl CallPolicy {
    fn of(tool: Option<&RegisteredTool>) -> Self {
        tool.map_or_else(Self::default, |tool| Self {
            timeout_ms: tool.tool.definition().timeout_ms,
            max_retries: tool.max_retries,
            max_uses: tool.tool.definition().max_uses,
        })
    }
}

/// A call of a response to run, with what a resume gave it: the decision that approved
/// it, and the answers to its questions.
#[derive(Default)]
struct ToRun {
    index: usize,
    approval: Option<Arc<ApprovalDecision>>,
    answered: Option<Arc<[Answered]>>,
}

/// A call of a batch that runs, in model order, and its tool (an index into the batch's
/// `tools`).
struct Planned {
    run: ToRun,
    tool: usize,
}

// In bounds: every `Planned` indexes the tools of the batch it was made with.
#[allow(clippy::indexing_slicing)]
impl Planned {
    fn tool<'a>(&self, tools: &'a [BatchTool]) -> &'a BatchTool {
        &tools[self.tool]
    }

    /// The call to start, on its tool's `retry`-th retry.
    fn ready(&self, tools: &[BatchTool], retry: u32) -> ReadyCall {
        let ToRun { index, approval, answered } = &self.run;
        let policy = self.tool(tools).policy;
        ReadyCall { index: *index, approval: approval.clone(), answered: answered.clone(), retry, policy }
    }
}

/// A tool the calls of a batch name, with what its calls run under. A batch keeps each
/// once, not once a call: a response of ten thousand calls mostly names a few tools, and
/// its calls are kept until the last of them ends.
struct BatchTool {
    name: Arc<str>,
    policy: CallPolicy,
    sequential: bool,
}

impl BatchTool {
    fn of(name: &Arc<str>, registry: &ToolRegistry) -> Self {
        let tool = registry.get(name);
        Self { name: name.clone(), policy: CallPolicy::of(tool), sequential: tool.is_some_and(|t| t.sequential) }
    }
}

/// The calls of one response on their way.
struct Batch {
    response: Arc<Message>,
    /// One per call in model order: what was decided without running it (`None` for the
    /// calls in `runs`).
    slots: Vec<Option<Slot>>,
    /// The calls to run, in model order.
    runs: Vec<Planned>,
    /// The tools `runs` call, each once.
    tools: Vec<BatchTool>,
    /// How each of `runs` ended, as they end.
    outcomes: Vec<Option<CallOutcome>>,
    /// Releases `runs` under the §6 rules (its indices are into `runs`).
    plan: CallPlan,
    /// The calls the plan released that the machine has not yet let start or refused
    /// (empty between releases; kept for its room, as a call ends every few steps).
    released: Vec<ReadyCall>,
    /// While the response's output call runs alone: what comes once it ended.
    stage: Option<OutputStage>,
}

/// What waits for a response's output call (which runs alone, first): the response's
/// other output calls, tried in turn while one fails, and its other calls, which run once
/// no output was taken or under [`EndStrategy::Exhaustive`].
struct OutputStage {
    outputs: VecDeque<usize>,
    held: Vec<ToRun>,
}

impl Batch {
    /// `runs` (the response's calls, in model order) with what a resume gave them.
    // In bounds: `model_responded` numbers the response's calls, and a resume's come from
    // slots `restore_waiting` matched one to one with them.
    #[allow(clippy::indexing_slicing)]
    fn new(response: Arc<Message>, slots: Vec<Option<Slot>>, runs: Vec<ToRun>, registry: &ToolRegistry) -> Self {
        let calls: Vec<&ToolCallPart> = response.tool_calls().collect();
        let mut tools: Vec<BatchTool> = Vec::new();
        let mut found: NameMap<Arc<str>, usize> = NameMap::default();
        let runs: Vec<Planned> = runs
            .into_iter()
            .map(|run| {
                let name = &calls[run.index].name;
                // Calls to one tool mostly come one after another, so a call mostly names
                // the tool added last: no lookup for those, and no map until a second tool.
                let tool = match tools.len().checked_sub(1) {
                    Some(last) if tools[last].name == *name => last,
                    None => {
                        tools.push(BatchTool::of(name, registry));
                        0
                    }
                    Some(_) => {
                        if found.is_empty() {
                            found.extend(tools.iter().enumerate().map(|(i, tool)| (tool.name.clone(), i)));
                        }
                        *found.entry(name.clone()).or_insert_with(|| {
                            tools.push(BatchTool::of(name, registry));
                            tools.len() - 1
                        })
                    }
                };
                Planned { run, tool }
            })
            .collect();
        drop(calls);
        let plan = CallPlan::new(runs.iter().map(|run| {
            let tool = &tools[run.tool];
            PlannedCall { name: &tool.name, sequential: tool.sequential }
        }));
        let outcomes = runs.iter().map(|_| None).collect();
        Self { response, slots, runs, tools, outcomes, plan, released: Vec::new(), stage: None }
    }

    /// The tool of `runs[run]`.
    #[allow(clippy::indexing_slicing)] // callers pass positions in `runs`
    fn tool_of(&self, run: usize) -> &BatchTool {
        self.runs[run].tool(&self.tools)
    }

    /// The position in `runs` of the response's call `index`, if it runs: `index` itself
    /// when every call before it runs too (most batches), else found by its index.
    fn run_of(&self, index: usize) -> Option<usize> {
        match self.runs.get(index) {
            Some(run) if run.run.index == index => Some(index),
            _ => self.runs.binary_search_by_key(&index, |run| run.run.index).ok(),
        }
    }

    /// Puts the calls the plan releases now in `released`.
    #[allow(clippy::indexing_slicing)] // the plan was made over `runs` and gives out indices into it
    fn release(&mut self, retries: &NameMap<Arc<str>, u32>) {
        let (runs, tools) = (&self.runs, &self.tools);
        let ready = self.plan.start_ready().map(|i| {
            let retry = retries.get(&runs[i].tool(tools).name).copied().unwrap_or(0);
            runs[i].ready(tools, retry)
        });
        self.released.extend(ready);
    }
}

enum Phase {
    /// Next: check the step limit, then list the step's tools.
    Model,
    /// The step's tools are being listed.
    Listing,
    /// The model is being asked.
    Requesting,
    /// The model's text answer is being checked as the output.
    Checking(String),
    // Boxed: the phase is moved out and back at every step, and a batch is large.
    Calls(Box<Batch>),
    Over(End),
    /// The end was handed out; nothing follows.
    Spent,
}

/// One run of a session, from its start (or resume) to its end.
pub(crate) struct Machine<S> {
    /// The session: a borrowed one (a run in this process) or an owned one (a run driven
    /// from elsewhere).
    pub state: S,
    pub run_id: Arc<str>,
    pub step: u32,
    bounds: Bounds,
    /// Model retries spent per tool.
    retries: NameMap<Arc<str>, u32>,
    /// Calls started per tool with a `max_uses` budget (a call that stopped to wait for a
    /// human is not one: it starts again once decided).
    uses: NameMap<Arc<str>, u32>,
    /// Tokens the run's model requests used.
    pub usage: Usage,
    /// Calls started (since the run's start or resume), for the tool-calls limit.
    calls_started: u64,
    /// The usage limit a call would have passed: no further call starts, and the run
    /// fails once the running ones end.
    exceeded: Option<RunError>,
    /// Why the latest answer ended, when the model said.
    finish_reason: Option<FinishReason>,
    /// The output an output call gave, once one did.
    answer: Option<Answer>,
    phase: Phase,
}

impl<S: BorrowMut<SessionState>> Machine<S> {
    /// A run of `prompt`: the request (with the instructions, on a session's first run)
    /// enters the history.
    pub fn start(
        mut state: S,
        run_id: Arc<str>,
        bounds: Bounds,
        instructions: Option<&str>,
        prompt: String,
        refused: Vec<EventKind>,
        events: &EventLog,
    ) -> Self {
        events.emit(EventKind::RunStart { prompt: prompt.clone() });
        events.emit_all(refused);
        let mut parts = Vec::with_capacity(2);
        if state.borrow().history.messages().is_empty()
            && let Some(instructions) = instructions
        {
            parts.push(RequestPart::SystemPrompt { text: instructions.to_owned() });
        }
        parts.push(RequestPart::UserPrompt { text: prompt });
        state.borrow_mut().history.push(Message::Request { parts });
        Self {
            state,
            run_id,
            step: 0,
            bounds,
            retries: NameMap::default(),
            uses: NameMap::default(),
            usage: Usage::default(),
            calls_started: 0,
            exceeded: None,
            finish_reason: None,
            answer: None,
            phase: Phase::Model,
        }
    }

    /// A waiting run taken up again with `resolved` decisions: denials and deferred
    /// results become returns now; approved calls run again, with their decision, and
    /// answered calls with their answers, under the usual scheduling.
    // In bounds: a resolved slot is one of `slots`, one per call of `response` (a restored
    // state's are checked against them).
    #[allow(clippy::indexing_slicing)]
    pub fn resume(
        state: S,
        waiting: Suspended,
        bounds: Bounds,
        resolved: Vec<(usize, Resolution)>,
        registry: &ToolRegistry,
        refused: Vec<EventKind>,
        events: &EventLog,
    ) -> Self {
        let Suspended { run_id, step, retries, uses, response, slots, .. } = waiting;
        let count = |kind: fn(&Resolution) -> bool| resolved.iter().filter(|(_, r)| kind(r)).count();
        events.emit(EventKind::RunResumed {
            approvals: count(|r| matches!(r, Resolution::Approval(_))),
            deferred_results: count(|r| matches!(r, Resolution::Deferred(_))),
            elicitations: count(|r| matches!(r, Resolution::Elicitation(_))),
        });
        events.emit_all(refused);
        let mut slots: Vec<Option<Slot>> = slots.into_iter().map(Some).collect();
        let mut runs = Vec::new();
        let calls: Vec<&ToolCallPart> = response.tool_calls().collect();
        for (slot, resolution) in resolved {
            let call = calls[slot];
            let ret = match resolution {
                Resolution::Approval(mut decision) if decision.approved => {
                    // An approval is for the arguments the approver was shown, even when
                    // the decision does not repeat them: hooks that rewrite them otherwise
                    // when the call runs again do not run it.
                    if decision.arguments.is_none()
                        && let Some(Slot::Approval(pending)) = &slots[slot]
                    {
                        decision.arguments = Some(pending.arguments.clone());
                    }
                    runs.push(ToRun { index: slot, approval: Some(Arc::new(decision)), answered: None });
                    continue;
                }
                Resolution::Elicitation(response) => {
                    let Some(Slot::Elicitation(asking)) = slots[slot].take() else {
                        unreachable!("`resolve` matches an answer only to a pending elicitation")
                    };
                    let Asking { pending, mut answered, approval } = *asking;
                    let question = Elicitation { message: pending.message, schema: pending.schema };
                    answered.push(Answered { question, answer: response.answer });
                    let (approval, answered) = (approval.map(Arc::new), Some(answered.into()));
                    runs.push(ToRun { index: slot, approval, answered });
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
                    DeferredOutcome::Completed { value } => {
                        let max_chars = registry.get(&call.name).and_then(|tool| tool.max_return_chars);
                        ToolReturn::success(call, ToolResult::new(value), max_chars)
                    }
                    DeferredOutcome::Failed { error } => {
                        ToolReturn::failure(call, ToolError::new(ToolErrorKind::DeferredFailed, error), Map::new())
                    }
                },
            };
            events.emit(ret.event());
            slots[slot] = Some(Slot::Done(ret));
        }
        drop(calls);
        runs.sort_by_key(|run| run.index);
        for run in &runs {
            slots[run.index] = None;
        }
        // An output taken before the run waited (its other calls ran on, `exhaustive`)
        // ends the run once they are decided.
        let answer = slots.iter().find_map(|slot| match slot {
            Some(Slot::Done(ret)) if ret.error.is_none() && registry.is_output(&ret.part.name) => Some(answer_of(ret)),
            _ => None,
        });
        let batch = Box::new(Batch::new(response, slots, runs, registry));
        Self {
            state,
            run_id,
            step,
            bounds,
            retries,
            uses,
            usage: Usage::default(),
            calls_started: 0,
            exceeded: None,
            finish_reason: None,
            answer,
            phase: Phase::Calls(batch),
        }
    }

    /// What to do next.
    pub fn next(&mut self, events: &EventLog, registry: &ToolRegistry) -> Next {
        loop {
            match std::mem::replace(&mut self.phase, Phase::Spent) {
                Phase::Model if self.step >= self.bounds.max_steps => {
                    return Next::End(End::Failed(RunError::StepLimit { max_steps: self.bounds.max_steps }));
                }
                Phase::Model => {
                    if let Some(exceeded) = self.bounds.usage.before_request(&self.usage) {
                        return Next::End(End::Failed(exceeded));
                    }
                    self.step += 1;
                    self.phase = Phase::Listing;
                    return Next::ListTools { step: self.step };
                }
                Phase::Listing => {
                    self.phase = Phase::Listing;
                    return Next::ListTools { step: self.step };
                }
                Phase::Requesting => {
                    self.phase = Phase::Requesting;
                    return Next::RequestModel { step: self.step };
                }
                Phase::Checking(text) => {
                    self.phase = Phase::Checking(text.clone());
                    return Next::CheckOutput { text };
                }
                Phase::Calls(mut batch) => {
                    let mut start = Vec::new();
                    self.release(&mut batch, events, &mut start);
                    let done = batch.plan.is_done();
                    if !done {
                        self.phase = Phase::Calls(batch);
                        return if start.is_empty() { Next::AwaitCalls } else { Next::StartCalls(start) };
                    }
                    if let Some(stage) = batch.stage.take() {
                        self.phase = Phase::Calls(Box::new(self.after_output(*batch, stage, events, registry)));
                        continue;
                    }
                    match self.settle(*batch, false, events, registry) {
                        Some(end) => return Next::End(end),
                        None => self.phase = Phase::Model,
                    }
                }
                Phase::Over(end) => return Next::End(end),
                Phase::Spent => return Next::End(End::Cancelled),
            }
        }
    }

    /// The response whose calls are running.
    pub fn response(&self) -> Option<Arc<Message>> {
        match &self.phase {
            Phase::Calls(batch) => Some(batch.response.clone()),
            _ => None,
        }
    }

    /// The step's tools were listed, leaving out `refused` (their `tool_refused` events):
    /// the model is asked next.
    pub fn tools_listed(&mut self, refused: Vec<EventKind>, events: &EventLog) {
        if !matches!(self.phase, Phase::Listing) {
            return;
        }
        events.emit_all(refused);
        let messages = self.state.borrow().history.messages().len();
        events.emit(EventKind::ModelRequest { step: self.step, messages });
        self.phase = Phase::Requesting;
    }

    /// The calls `ready` as tasks for an engine that runs them elsewhere.
    #[allow(clippy::indexing_slicing)] // the machine released `ready`: calls of this batch's response
    pub fn call_tasks(&self, ready: Vec<ReadyCall>) -> Vec<CallTask> {
        let Phase::Calls(batch) = &self.phase else { return Vec::new() };
        let calls: Vec<&ToolCallPart> = batch.response.tool_calls().collect();
        ready
            .into_iter()
            .map(|r| CallTask {
                index: r.index,
                step: self.step,
                call: calls[r.index].clone(),
                approval: r.approval.map(|a| (*a).clone()),
                answered: r.answered.map(|a| a.to_vec()).unwrap_or_default(),
                retry: r.retry,
                timeout_ms: r.policy.timeout_ms,
                max_retries: r.policy.max_retries,
                queued_for: Vec::new(),
            })
            .collect()
    }

    /// The model answered: the response enters the history; its calls come next, or the
    /// run ends with its text.
    pub fn model_responded(&mut self, response: ModelResponse, events: &EventLog, registry: &ToolRegistry) {
        // Every answer is one request, whether or not the model reports usage (a test or
        // function model does not).
        self.usage += Usage { requests: 1, ..response.usage.unwrap_or_default() };
        let ModelResponse { parts, usage, finish_reason, loaded: searched, .. } = response;
        self.finish_reason = finish_reason;
        let empty = parts.is_empty();
        let message = self.state.borrow_mut().history.push(Message::Response { parts }).clone();
        events.emit(EventKind::ModelResponse { step: self.step, message: message.clone(), usage, finish_reason });
        catalog::loaded_natively(&searched, registry, &mut self.state.borrow_mut().loaded, events);
        self.phase = if let Some(last) = message.tool_calls().count().checked_sub(1) {
            // The call being written when the token limit cut the answer may have cut-off
            // arguments that still parse (a string value ends early): it is the model's to
            // write again, never run.
            let cut_off = (finish_reason == Some(FinishReason::Length)).then_some(last);
            let loaded = &mut self.state.borrow_mut().loaded;
            // Sized up front: the calls are a filter over the parts, which cannot tell
            // `collect` their count, and the slots are kept while the calls run.
            let mut slots: Vec<Option<Slot>> = Vec::with_capacity(last + 1);
            slots.extend(message.tool_calls().enumerate().map(|(i, call)| {
                if Some(i) != cut_off {
                    // A tool search is answered here; a call to a deferred tool loads it.
                    return catalog::answer(call, registry, loaded, events).map(Slot::Done);
                }
                let message = "the answer reached the model's token limit while this call was being \
                               written, so its arguments may be cut off: call it again with complete \
                               arguments (or raise `max_tokens`)";
                let ret = ToolReturn::failure(call, ToolError::invalid_arguments(message), Map::new());
                events.emit(ret.event());
                Some(Slot::Done(ret))
            }));
            let to_run = |index| ToRun { index, ..ToRun::default() };
            // The calls still to run, the output calls apart.
            let (mut outputs, mut held) = (VecDeque::new(), Vec::with_capacity(slots.len()));
            for (index, (call, slot)) in message.tool_calls().zip(&slots).enumerate() {
                match slot {
                    Some(_) => {}
                    None if registry.is_output(&call.name) => outputs.push_back(index),
                    None => held.push(to_run(index)),
                }
            }
            match outputs.pop_front() {
                // The output call runs first, alone: what it gives decides the others.
                Some(first) => {
                    let mut batch = Batch::new(message, slots, vec![to_run(first)], registry);
                    batch.stage = Some(OutputStage { outputs, held });
                    Phase::Calls(Box::new(batch))
                }
                None => Phase::Calls(Box::new(Batch::new(message, slots, held, registry))),
            }
        } else if empty {
            Phase::Over(End::Failed(RunError::EmptyResponse))
        } else if !self.bounds.output.takes_text {
            self.refuse_text(registry)
        } else if self.bounds.output.checks_text {
            Phase::Checking(message.text().unwrap_or_default())
        } else {
            Phase::Over(End::Completed(Answer { value: Value::String(message.text().unwrap_or_default()), tool: None }))
        };
    }

    /// The text answer was checked as the output: it ends the run with the output, or
    /// the model is told why not, as a correction counted against the output's retries;
    /// past them the run fails.
    pub fn output_checked(&mut self, checked: std::result::Result<Checked, ToolError>) {
        if !matches!(self.phase, Phase::Checking(_)) {
            return;
        }
        self.phase = match checked {
            Ok((value, tool)) => Phase::Over(End::Completed(Answer { value, tool })),
            Err(error) => {
                let max_retries = self.bounds.output.retries;
                let spent = self.retries.entry(Arc::from(crate::output::OUTPUT_TOOL)).or_default();
                *spent += 1;
                let message = error.message().to_owned();
                if *spent > max_retries {
                    Phase::Over(End::Failed(RunError::OutputValidation { max_retries, message }))
                } else {
                    let text = format!("Your answer was not accepted: {message}\n\nFix it and answer again.");
                    self.state
                        .borrow_mut()
                        .history
                        .push(Message::Request { parts: vec![RequestPart::UserPrompt { text }] });
                    Phase::Model
                }
            }
        };
    }

    /// The model answered in text where the run's output must come from an output tool:
    /// it is told so, as a correction counted against the output's retries (those of its
    /// first output tool), and asked again; past them the run fails.
    fn refuse_text(&mut self, registry: &ToolRegistry) -> Phase {
        let names: Vec<String> = registry
            .definitions()
            .iter()
            .filter(|d| registry.is_output(&d.name))
            .map(|d| format!("`{}`", d.name))
            .collect();
        let Some(first) = registry.definitions().iter().find(|d| registry.is_output(&d.name)) else {
            return Phase::Over(End::Failed(RunError::EmptyResponse));
        };
        let name: Arc<str> = Arc::from(first.name.as_str());
        let max_retries = registry.get(&name).map_or(0, |tool| tool.max_retries);
        let spent = self.retries.entry(name).or_default();
        *spent += 1;
        let message =
            format!("a plain text answer is not accepted: give the final answer by calling {}", names.join(" or "));
        if *spent > max_retries {
            return Phase::Over(End::Failed(RunError::OutputValidation { max_retries, message }));
        }
        self.state
            .borrow_mut()
            .history
            .push(Message::Request { parts: vec![RequestPart::UserPrompt { text: message }] });
        Phase::Model
    }

    /// The response's output call ended: taken, the run's output is its value and the
    /// response's other output calls are not used (nor, `early`, its other calls: each gets
    /// a `cancelled` return saying why); refused, the next output call is tried, and the
    /// other calls run as any would.
    #[allow(clippy::indexing_slicing)] // the stage's call is one of the response's; `slots` has one per call
    fn after_output(&mut self, batch: Batch, stage: OutputStage, events: &EventLog, registry: &ToolRegistry) -> Batch {
        let Batch { response, mut slots, runs, outcomes, .. } = batch;
        let OutputStage { mut outputs, mut held } = stage;
        let calls: Vec<&ToolCallPart> = response.tool_calls().collect();
        for (run, outcome) in runs.iter().zip(outcomes) {
            let call = calls[run.run.index];
            let ret = match outcome {
                Some(CallOutcome::Returned(ret)) => ret,
                Some(_) | None => {
                    let error = ToolError::execution("an output tool cannot wait for a human").not_retryable();
                    let ret = ToolReturn::failure(call, error, Map::new());
                    events.emit(ret.event());
                    ret
                }
            };
            if ret.error.is_none() && self.answer.is_none() {
                self.answer = Some(answer_of(&ret));
            }
            slots[run.run.index] = Some(Slot::Done(ret));
        }
        let skip = |slots: &mut Vec<Option<Slot>>, index: usize, message: &str| {
            let ret = ToolReturn::failure(calls[index], ToolError::cancelled(message), Map::new());
            events.emit(ret.event());
            slots[index] = Some(Slot::Done(ret));
        };
        if self.answer.is_none() {
            if let Some(next) = outputs.pop_front() {
                drop(calls);
                let mut batch = Batch::new(response, slots, vec![ToRun { index: next, ..ToRun::default() }], registry);
                batch.stage = Some(OutputStage { outputs, held });
                return batch;
            }
        } else {
            for index in outputs {
                skip(&mut slots, index, "not used: the run's final result was already given");
            }
            if self.bounds.output.end_strategy == EndStrategy::Early {
                for run in held.drain(..) {
                    skip(&mut slots, run.index, "not run: the run ended with its final result first");
                }
            }
        }
        drop(calls);
        Batch::new(response, slots, held, registry)
    }

    /// Listing the tools or the model request failed: the run ends.
    pub fn failed(&mut self, error: RunError) {
        self.phase = Phase::Over(End::Failed(error));
    }

    /// The run was cancelled: running calls end as `cancelled` returns (in model order),
    /// calls waiting for a decision are closed, and the run ends.
    pub fn cancel(&mut self, events: &EventLog, registry: &ToolRegistry) {
        match std::mem::replace(&mut self.phase, Phase::Spent) {
            Phase::Calls(batch) => {
                let end = self.settle(*batch, true, events, registry).unwrap_or(End::Cancelled);
                self.phase = Phase::Over(end);
            }
            over @ Phase::Over(_) => self.phase = over,
            Phase::Model | Phase::Listing | Phase::Requesting | Phase::Checking(_) | Phase::Spent => {
                self.phase = Phase::Over(End::Cancelled);
            }
        }
    }

    /// The calls that will run one after another after `head` (just released): the rest of
    /// a run of calls to its tool, which the driver may let the tool run ahead; never more
    /// than the tool-calls limit and the tool's `max_uses` let start.
    #[allow(clippy::indexing_slicing)] // the plan was made over `runs` and gives out indices into it
    pub fn chain_after(&self, head: &ReadyCall) -> impl Iterator<Item = ReadyCall> + '_ {
        let batch = match &self.phase {
            Phase::Calls(batch) => Some(batch),
            _ => None,
        };
        let run = batch.and_then(|b| b.run_of(head.index));
        let retry = head.retry;
        let room = |left: u64| usize::try_from(left).unwrap_or(usize::MAX);
        let calls_left =
            self.bounds.usage.tool_calls.map_or(usize::MAX, |max| room(max.saturating_sub(self.calls_started)));
        // The chain is calls to the head's tool, whose uses already count the head.
        let uses_left = head.policy.max_uses.zip(batch.zip(run)).map_or(usize::MAX, |(max, (batch, run))| {
            let used = self.uses.get(&batch.tool_of(run).name).copied().unwrap_or(0);
            room(u64::from(max.saturating_sub(used)))
        });
        let room = calls_left.min(uses_left);
        batch
            .zip(run)
            .into_iter()
            .flat_map(move |(batch, run)| {
                batch.plan.chain_after(run).map(move |i| batch.runs[i].ready(&batch.tools, retry))
            })
            .take(room)
    }

    /// Puts in `starting` the calls that may start now that one ended (possibly none);
    /// `false` once every call of the batch has ended.
    pub fn next_calls(&mut self, events: &EventLog, starting: &mut Vec<ReadyCall>) -> bool {
        let Phase::Calls(mut batch) = std::mem::replace(&mut self.phase, Phase::Spent) else { return false };
        let more = !batch.plan.is_done();
        if more {
            self.release(&mut batch, events, starting);
        }
        self.phase = Phase::Calls(batch);
        more
    }

    /// The calls the plan releases now, as far as the tool-calls limit and each tool's
    /// `max_uses` let them start; the rest end at once with a `limit_reached` return
    /// (which may release more, ending the same way). Past the tool-calls limit the run
    /// will fail; past a tool's `max_uses` the model is told and the run goes on.
    #[allow(clippy::indexing_slicing)] // the plan was made over `runs` and gives out indices into it
    fn release(&mut self, batch: &mut Batch, events: &EventLog, starting: &mut Vec<ReadyCall>) {
        loop {
            batch.release(&self.retries);
            if batch.released.is_empty() {
                return;
            }
            let mut refused = false;
            let mut released = std::mem::take(&mut batch.released);
            for call in released.drain(..) {
                let Some(run) = batch.run_of(call.index) else { continue };
                if self.exceeded.is_none() {
                    self.exceeded = self.bounds.usage.before_call(self.calls_started);
                }
                let message = match (&self.exceeded, call.policy.max_uses) {
                    (Some(_), _) => "the run reached a usage limit before this call started".to_owned(),
                    (None, Some(max)) => {
                        let name = &batch.tool_of(run).name;
                        let used = self.uses.entry(name.clone()).or_default();
                        if *used < max {
                            *used += 1;
                            self.calls_started += 1;
                            starting.push(call);
                            continue;
                        }
                        format!("`{name}` may be called at most {max} times in a run, and it was")
                    }
                    (None, None) => {
                        self.calls_started += 1;
                        starting.push(call);
                        continue;
                    }
                };
                refused = true;
                let Some(part) = batch.response.tool_calls().nth(call.index) else { continue };
                let ret = ToolReturn::failure(part, ToolError::new(ToolErrorKind::LimitReached, message), Map::new());
                events.emit(ret.event());
                batch.outcomes[run] = Some(ret.into());
                batch.plan.finish(run);
            }
            batch.released = released;
            if !refused {
                return;
            }
        }
    }

    /// Call `index` (of the response) ended with `outcome`; an error the model is to
    /// correct counts against its tool's retry budget.
    #[allow(clippy::indexing_slicing)] // `run` was found in `runs`, and `outcomes` has one entry per run
    pub fn call_finished(&mut self, index: usize, outcome: CallOutcome) {
        let Phase::Calls(batch) = &mut self.phase else { return };
        let Some(run) = batch.run_of(index) else { return };
        if batch.outcomes[run].is_some() {
            return;
        }
        match &outcome {
            CallOutcome::Returned(ret) if ret.error.is_some_and(ToolErrorKind::counts_model_retry) => {
                *self.retries.entry(batch.tool_of(run).name.clone()).or_default() += 1;
            }
            CallOutcome::Returned(_) => {}
            // It waits for a human and starts again once decided: that start is its use.
            CallOutcome::NeedsApproval(_) | CallOutcome::Deferred(_) | CallOutcome::NeedsInput(_) => {
                if let Some(used) = self.uses.get_mut(&batch.tool_of(run).name) {
                    *used = used.saturating_sub(1);
                }
            }
        }
        batch.outcomes[run] = Some(outcome);
        batch.plan.finish(run);
    }

    /// Call `index` could not be run to its end (an engine gave up on it: its workers were
    /// lost too often): an `execution` error return the model sees, not retried.
    pub fn call_lost(&mut self, index: usize, message: &str, events: &EventLog) {
        let Phase::Calls(batch) = &self.phase else { return };
        let Some(call) = batch.response.tool_calls().nth(index) else { return };
        let ret = ToolReturn::failure(call, ToolError::execution(message).not_retryable(), Map::new());
        events.emit(ret.event());
        self.call_finished(index, ret.into());
    }

    /// Decides what follows a batch whose calls all ended (or were cancelled): wait,
    /// fail, stop, or go on to the next model request (`None`).
    #[allow(clippy::indexing_slicing)] // a run's index is one of the response's calls; `slots` has one per call
    fn settle(&mut self, batch: Batch, cancelled: bool, events: &EventLog, registry: &ToolRegistry) -> Option<End> {
        let Batch { response, mut slots, runs, mut outcomes, .. } = batch;
        let calls: Vec<&ToolCallPart> = response.tool_calls().collect();
        // Calls the run's cancellation stopped first, then the rest in model order. Filled
        // in place: a batch's outcomes are as many as its calls.
        for (outcome, run) in outcomes.iter_mut().zip(&runs).filter(|(outcome, _)| outcome.is_none()) {
            let error = ToolError::cancelled("the run was cancelled before this call finished");
            let ret = ToolReturn::failure(calls[run.run.index], error, Map::new());
            events.emit(ret.event());
            *outcome = Some(ret.into());
        }
        let mut issued = Vec::new();
        // Every outcome is set now: none is skipped, so each meets its own call.
        for (outcome, run) in outcomes.into_iter().flatten().zip(runs) {
            let index = run.run.index;
            slots[index] = Some(self.slot(outcome, calls[index], run.run, &mut issued, events));
        }
        let mut slots: Vec<Slot> = slots.into_iter().map(|slot| slot.expect("a call is decided or run")).collect();
        if cancelled {
            close_pending(&calls, &mut slots, "the run was cancelled before this call was decided", events);
            drop(calls);
            self.push_returns(slots);
            return Some(End::Cancelled);
        }
        let exhausted = self.exceeded.take().or_else(|| self.exhausted_budget(&slots, registry));
        if exhausted.is_none() && slots.iter().any(|s| !matches!(s, Slot::Done(_))) {
            drop(calls);
            return Some(End::Waiting(response, slots));
        }
        close_pending(&calls, &mut slots, "the run failed before this call was decided", events);
        drop(calls);
        self.push_returns(slots);
        exhausted.map(End::Failed).or_else(|| self.answer.take().map(End::Completed))
    }

    /// A call's outcome as its slot; a call waiting for a human gets an id no decision was
    /// ever made for, so a decision made for one call cannot approve a later call that
    /// reuses its model id.
    fn slot(
        &self,
        outcome: CallOutcome,
        call: &ToolCallPart,
        run: ToRun,
        issued: &mut Vec<String>,
        events: &EventLog,
    ) -> Slot {
        let approval = run.approval.as_deref();
        let mut pending = |reason, metadata, rewritten: Option<Value>| {
            let id = fresh_id(&self.run_id, &call.id, |id| {
                self.state.borrow().decided.contains(id) || issued.iter().any(|i| i == id)
            });
            issued.push(id.clone());
            // What the call would run with: as hooks left them, else the approver's, else
            // the model's; a decision is bound to these.
            let overridden = approval.and_then(|a| a.override_arguments.as_ref());
            PendingCall {
                id,
                run_id: self.run_id.to_string(),
                tool_call_id: call.id.to_string(),
                tool_name: call.name.to_string(),
                arguments: rewritten.unwrap_or_else(|| overridden.unwrap_or(&call.arguments).clone()),
                reason,
                metadata,
            }
        };
        match outcome {
            CallOutcome::Returned(ret) => Slot::Done(ret),
            CallOutcome::NeedsApproval(waits) => {
                let Waits { reason, metadata, arguments } = *waits;
                let pending = Box::new(PendingApproval(pending(reason, metadata, arguments)));
                events.emit(EventKind::ApprovalRequested(pending.clone()));
                Slot::Approval(pending)
            }
            CallOutcome::Deferred(waits) => {
                let Waits { reason, metadata, arguments } = *waits;
                let pending = Box::new(PendingDeferred(pending(reason, metadata, arguments)));
                events.emit(EventKind::DeferredRequested(pending.clone()));
                Slot::Deferred(pending)
            }
            CallOutcome::NeedsInput(asks) => {
                let Asks { asked, question, arguments } = *asks;
                let Elicitation { message, schema } = question;
                let call = pending(message.clone(), Map::new(), arguments);
                let pending = PendingElicitation { call, message, schema };
                events.emit(EventKind::ElicitationRequested(Box::new(pending.clone())));
                // The answers to the questions it asked before this one, which it asks
                // again in the same order when invoked again.
                let answered = run.answered.as_deref().unwrap_or_default();
                let answered = answered.get(..asked).unwrap_or(answered).to_vec();
                let approval = run.approval.map(|a| (*a).clone());
                Slot::Elicitation(Box::new(Asking { pending, answered, approval }))
            }
        }
    }

    /// The first tool (in model order) whose model retries now exceed its budget.
    fn exhausted_budget(&self, slots: &[Slot], registry: &ToolRegistry) -> Option<RunError> {
        let retries = &self.retries;
        slots.iter().find_map(|slot| {
            let Slot::Done(ret) = slot else { return None };
            ret.error.filter(|k| k.counts_model_retry())?;
            let tool = registry.get(&ret.part.name)?;
            let spent = retries.get(&*ret.part.name).copied().unwrap_or(0);
            let message = ret.part.content.get("message").and_then(Value::as_str).unwrap_or_default().to_owned();
            (spent > tool.max_retries).then(|| match tool.source {
                Source::Output => RunError::OutputValidation { max_retries: tool.max_retries, message },
                _ => RunError::RetriesExhausted {
                    tool: ret.part.name.to_string(),
                    max_retries: tool.max_retries,
                    message,
                },
            })
        })
    }

    fn push_returns(&mut self, slots: Vec<Slot>) {
        self.state.borrow_mut().history.push_request(slots.into_iter().map(|slot| match slot {
            Slot::Done(ret) => {
                let ToolReturn { part, host, .. } = ret;
                (RequestPart::ToolReturn(part), host)
            }
            Slot::Approval(_) | Slot::Deferred(_) | Slot::Elicitation(_) => {
                unreachable!("pending calls are closed before returns are pushed")
            }
        }));
    }

    /// Ends the run: records the end in the session (a waiting run's slots, numbered to
    /// go on from this run's events) and in the events, closes the events, and gives the
    /// result and the session. `trace` closes the run's trace once its status is known.
    pub fn finish(self, end: End, events: &EventLog, trace: impl FnOnce(RunStatus) -> Trace) -> (RunResult, S) {
        let Self { mut state, run_id, step, retries, uses, usage, finish_reason, .. } = self;
        let (status, output, error) = match end {
            End::Completed(Answer { value, tool }) => {
                events.emit(EventKind::RunComplete { output: value.clone(), output_tool: tool.clone() });
                (RunStatus::Completed, Some((value, tool)), None)
            }
            End::Waiting(response, slots) => {
                let suspended = Suspended { run_id: run_id.clone(), step, retries, uses, next_seq: 0, response, slots };
                let hitl = suspended.hitl();
                events.emit(EventKind::Waiting {
                    approvals: hitl.approvals.len(),
                    deferred: hitl.deferred.len(),
                    elicitations: hitl.elicitations.len(),
                });
                state.borrow_mut().waiting = Some(suspended);
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
        let trace = trace(status);
        let (events, next_seq) = events.finish();
        let session = state.borrow_mut();
        let hitl = session.waiting.as_mut().map_or_else(Hitl::default, |waiting| {
            waiting.next_seq = next_seq;
            waiting.hitl()
        });
        let messages = session.history.clone();
        let (output, output_tool) = output.unzip();
        let result = RunResult {
            run_id: run_id.to_string(),
            status,
            output,
            output_tool: output_tool.flatten().map(|tool| tool.to_string()),
            error,
            hitl,
            messages,
            events,
            trace,
            usage,
            finish_reason,
        };
        (result, state)
    }
}

/// The output an output call's return holds: its host-only value.
fn answer_of(ret: &ToolReturn) -> Answer {
    let value = ret.host.as_ref().and_then(|host| host.value.clone()).unwrap_or_else(|| ret.part.content.clone());
    Answer { value, tool: Some(ret.part.name.clone()) }
}

/// Gives every still-pending call a `cancelled` return, so the history never holds a
/// call without a return.
fn close_pending(calls: &[&ToolCallPart], slots: &mut [Slot], message: &str, events: &EventLog) {
    for (slot, call) in slots.iter_mut().zip(calls) {
        if !matches!(slot, Slot::Done(_)) {
            let ret = ToolReturn::failure(call, ToolError::cancelled(message), Map::new());
            events.emit(ret.event());
            *slot = Slot::Done(ret);
        }
    }
}
