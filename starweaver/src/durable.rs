//! Runs driven from outside, one step at a time: the run's state machine
//! without the in-process driver, for a durable-execution engine (a Temporal workflow)
//! that makes each model request and each tool call elsewhere, as an activity, and feeds
//! the outcomes back.
//!
//! [`DurableRun`] does no I/O: it says what to do next ([`Step`]) and takes the outcome
//! back. [`Agent::request_model`] and [`Agent::run_call`] do the I/O it asks for, wherever
//! the agent's tools are (another process or machine sharing the agent's definition).
//! Everything that crosses between them serialises, so an engine can record it.
//!
//! ```
//! use serde_json::json;
//! use starweaver::durable::{DurableRun, Step};
//! use starweaver::testing::TestModel;
//! use starweaver::{Agent, ModelResponse, RunStatus, ToolBuilder, ToolCallPart, ToolContext};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Double { n: i64 }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let double = ToolBuilder::new("double")
//!     .handler(|_: ToolContext, args: Double| async move { Ok(json!(args.n * 2)) })
//!     .unwrap();
//! let model = TestModel::new([
//!     TestModel::tool_call_response([ToolCallPart::new("c1", "double", json!({"n": 21}))]),
//!     ModelResponse::text("42"),
//! ]);
//! let agent = Agent::builder(model).tool(double).build().unwrap();
//! let mut run = DurableRun::start(&agent, "double 21", "run_1").unwrap();
//! let result = loop {
//!     match run.next_step() {
//!         Step::ListTools(task) => match agent.list_tools(&task).await {
//!             Ok(listing) => run.tools_listed(listing),
//!             Err(error) => run.tools_lost(&error.to_string()),
//!         },
//!         Step::RequestModel(task) => match agent.request_model(&task).await {
//!             Ok(response) => run.model_responded(response),
//!             Err(error) => run.model_failed(error),
//!         },
//!         Step::StartCalls(tasks) => {
//!             for task in tasks {
//!                 let result = agent.run_call("run_1", &task, Default::default(), None).await;
//!                 run.call_finished(task.index, result);
//!             }
//!         }
//!         Step::AwaitCalls => unreachable!("every started call was reported"),
//!         Step::CheckOutput(task) => run.output_checked(agent.check_output(&task).await),
//!         Step::Done(result) => break result,
//!     }
//! };
//! assert_eq!((result.status, result.text()), (RunStatus::Completed, Some("42")));
//! # });
//! ```

use std::sync::Arc;

use serde_json::Value;

use crate::agent::{Bounds, Machine, Next, SessionState, Suspended, resolve_decisions};
pub use crate::agent::{CallResult, CallTask, ListTask, ModelTask, OutputChecked, OutputTask, ToolListing};
use crate::concurrency::{self, Admission, Counted, Limit};
use crate::error::{Error, Result};
use crate::event::{Event, EventKind, EventLog};
use crate::hitl::{Hitl, HitlDecisions, Resolution};
use crate::model::{ModelError, ModelResponse};
use crate::registry::{Source, ToolList, ToolRegistry};
use crate::result::{RunError, RunResult};
use crate::trace::Tracer;
use crate::{Agent, Session};

/// What the driver of a [`DurableRun`] does next.
#[derive(Debug)]
// One is made per step and matched on at once: boxing the result would cost every caller
// a `*` to save bytes nothing keeps.
#[allow(clippy::large_enum_variant)]
pub enum Step {
    /// List the tools of the agent's dynamic toolsets for a step ([`Agent::list_tools`])
    /// and report with [`DurableRun::tools_listed`] or [`DurableRun::tools_lost`]. Only an
    /// agent with dynamic toolsets (an MCP server's, say), or with hooks (its own or a
    /// toolset's, whose `prepare_tools` may change each step's tools), has this step.
    ListTools(ListTask),
    /// Request the model ([`Agent::request_model`]) and report with
    /// [`DurableRun::model_responded`] or [`DurableRun::model_failed`].
    RequestModel(ModelTask),
    /// Start these calls ([`Agent::run_call`], side by side), reporting each with
    /// [`DurableRun::call_finished`].
    StartCalls(Vec<CallTask>),
    /// Nothing new may start until a running call is reported.
    AwaitCalls,
    /// Check the model's text answer as the output ([`Agent::check_output`]) and report
    /// with [`DurableRun::output_checked`].
    CheckOutput(OutputTask),
    /// The run ended: completed, failed, cancelled, or waiting for decisions
    /// ([`DurableRun::resume`]).
    Done(RunResult),
}

/// A run driven one step at a time; see the [module](self) documentation.
pub struct DurableRun {
    agent: Agent,
    run_id: Arc<str>,
    /// The tools of the step listed last: the agent's as built until its dynamic toolsets
    /// are listed.
    tools: Arc<ToolRegistry>,
    /// The step `tools` were listed for, if its dynamic toolsets were listed in this leg.
    listed_step: Option<u32>,
    stage: Stage,
    /// The calls started and held back under the concurrency limits: the engine is never
    /// asked to start more calls than they allow.
    admission: Admission<CallTask>,
    /// The run's cap on its calls, as in process.
    run_limit: Option<Limit>,
    /// Whether each step's tools are listed ([`Step::ListTools`]): the agent has dynamic
    /// toolsets, or hooks that prepare each step's tools.
    lists_tools: bool,
}

enum Stage {
    Running {
        machine: Box<Machine<SessionState>>,
        events: EventLog,
    },
    /// A resume that waits for the tools of the step it takes up (its approved calls run
    /// under their tools' policies).
    Resuming(Box<Resuming>),
    /// Ended, or waiting (a resume's events go on from the waiting run's `next_seq`).
    Ended {
        state: SessionState,
        result: Box<RunResult>,
    },
    /// A resume was refused after the state was taken; never observed outside.
    Poisoned,
}

/// A resume accepted before its step's tools are listed, with what undoes it if they
/// cannot be.
struct Resuming {
    state: SessionState,
    waiting: Suspended,
    resolved: Vec<(usize, Resolution)>,
    claimed: Vec<String>,
    /// The waiting run's result, for a resume that cannot go on.
    result: Box<RunResult>,
    events: EventLog,
}

impl DurableRun {
    /// A run of `prompt` in a new session, under `run_id` (the engine's, so that a replay
    /// gets the same one). The tools of an agent with dynamic toolsets or hooks are listed
    /// at each step ([`Step::ListTools`]).
    ///
    /// # Errors
    /// None today; kept fallible as [`start_in_session`](Self::start_in_session) is.
    pub fn start(agent: &Agent, prompt: impl Into<String>, run_id: impl Into<String>) -> Result<Self> {
        Self::start_in(agent, SessionState::default(), prompt.into(), run_id.into())
    }

    /// A run of `prompt` continuing `session`'s history (it must not be waiting).
    ///
    /// # Errors
    /// A waiting session.
    pub fn start_in_session(
        agent: &Agent,
        session: Session,
        prompt: impl Into<String>,
        run_id: impl Into<String>,
    ) -> Result<Self> {
        Self::start_in(agent, session.into_state(), prompt.into(), run_id.into())
    }

    fn start_in(agent: &Agent, state: SessionState, prompt: String, run_id: String) -> Result<Self> {
        state.ensure_idle()?;
        let run_id: Arc<str> = run_id.into();
        let events = EventLog::new(run_id.clone(), 0, None);
        let inner = &agent.inner;
        let instructions = inner.output.instructions.as_deref();
        let machine =
            Machine::start(state, run_id.clone(), Self::bounds(agent), instructions, prompt, Vec::new(), &events);
        let running = Stage::Running { machine: Box::new(machine), events };
        Ok(Self::new(agent, run_id, running))
    }

    fn new(agent: &Agent, run_id: Arc<str>, stage: Stage) -> Self {
        Self {
            agent: agent.clone(),
            run_id,
            tools: agent.inner.registry.clone(),
            listed_step: None,
            stage,
            admission: Admission::default(),
            run_limit: agent.inner.run_limit(),
            lists_tools: !agent.inner.tools.dynamic.is_empty()
                || !agent.inner.hooks.is_empty()
                || !agent.inner.registry.toolset_hooks().is_empty(),
        }
    }

    fn bounds(agent: &Agent) -> Bounds {
        Bounds { max_steps: agent.inner.max_steps, usage: agent.inner.usage_limits, output: agent.inner.output.rules }
    }

    /// Whether the tools of a step are still to be listed: a copy of what decides it, so
    /// it can be asked while the stage is borrowed.
    fn unlisted(&self) -> impl Fn(u32) -> bool + Copy + use<> {
        let (lists, listed_step) = (self.lists_tools, self.listed_step);
        move |step| lists && listed_step != Some(step)
    }

    /// What to do next.
    pub fn next_step(&mut self) -> Step {
        let unlisted = self.unlisted();
        if let Stage::Resuming(resuming) = &self.stage {
            let step = resuming.waiting.step;
            if unlisted(step) {
                return Step::ListTools(ListTask { run_id: self.run_id.to_string(), step });
            }
            self.take_up(Vec::new());
        }
        let lists_tools = self.lists_tools;
        let next = match &mut self.stage {
            Stage::Running { machine, events } => match machine.next(events, &self.tools) {
                Next::ListTools { step } if unlisted(step) => {
                    return Step::ListTools(ListTask { run_id: self.run_id.to_string(), step });
                }
                // Listed already, or nothing to list (no dynamic toolsets).
                Next::ListTools { .. } => {
                    machine.tools_listed(Vec::new(), events);
                    machine.next(events, &self.tools)
                }
                next => next,
            },
            Stage::Ended { result, .. } => return Step::Done((**result).clone()),
            Stage::Resuming(_) | Stage::Poisoned => {
                unreachable!("a resume was taken up above; poisoned is never observed")
            }
        };
        let Stage::Running { machine, .. } = &mut self.stage else { unreachable!("matched above") };
        match next {
            Next::ListTools { .. } => unreachable!("the tools were just listed"),
            Next::RequestModel { step } => {
                let messages = machine.state.history.to_json();
                // Deferred tools make each request's tools depend on what the run loaded.
                let offered = self.tools.offered(&machine.state.loaded);
                let tools = (lists_tools || self.tools.defers()).then(|| offered.tools.into_owned());
                let toolset_instructions = self.tools.instructions().to_vec();
                Step::RequestModel(ModelTask {
                    run_id: self.run_id.to_string(),
                    step,
                    messages,
                    tools,
                    deferred: offered.deferred,
                    toolset_instructions,
                })
            }
            Next::StartCalls(ready) => {
                let tasks = machine.call_tasks(ready);
                let offered: Vec<_> =
                    tasks.into_iter().map(|task| (task.index, self.limits_of(&task.call.name), task)).collect();
                Self::starting(self.admission.offer(offered))
            }
            Next::AwaitCalls => Self::starting(self.admission.release()),
            Next::CheckOutput { text } => {
                Step::CheckOutput(OutputTask { run_id: self.run_id.to_string(), step: machine.step, text })
            }
            Next::End(end) => {
                let Stage::Running { machine, events } = std::mem::replace(&mut self.stage, Stage::Poisoned) else {
                    unreachable!("matched above")
                };
                let (result, state) = machine.finish(end, &events, |_| Tracer::new(self.run_id.clone()).finish());
                self.stage = Stage::Ended { state, result: Box::new(result.clone()) };
                Step::Done(result)
            }
        }
    }

    /// The concurrency limits a call to `tool` counts against: its own, its toolset's, the
    /// run's, each once.
    fn limits_of(&self, tool: &str) -> Vec<Counted> {
        let own = self.tools.get(tool).map(|tool| tool.limits.clone()).unwrap_or_default();
        concurrency::in_order(own.iter().chain(&self.run_limit)).into_iter().map(Counted::from).collect()
    }

    /// The calls that may start now (each naming the limits it was held back for), or a
    /// wait for a running one to end.
    fn starting(released: Vec<(CallTask, Vec<Arc<str>>)>) -> Step {
        if released.is_empty() {
            return Step::AwaitCalls;
        }
        let tasks = released
            .into_iter()
            .map(|(mut task, queued_for)| {
                task.queued_for = queued_for.iter().map(ToString::to_string).collect();
                task
            })
            .collect();
        Step::StartCalls(tasks)
    }

    /// A resume's machine, under the tools listed last, emitting `refused` (the listing's
    /// `tool_refused` events) after `run_resumed`.
    fn take_up(&mut self, refused: Vec<EventKind>) {
        let Stage::Resuming(resuming) = std::mem::replace(&mut self.stage, Stage::Poisoned) else { return };
        let Resuming { state, waiting, resolved, events, .. } = *resuming;
        let bounds = Self::bounds(&self.agent);
        let machine = Machine::resume(state, waiting, bounds, resolved, &self.tools, refused, &events);
        self.stage = Stage::Running { machine: Box::new(machine), events };
    }

    /// How the check of a [`Step::CheckOutput`] step ended.
    pub fn output_checked(&mut self, checked: OutputChecked) {
        if let Stage::Running { machine, .. } = &mut self.stage {
            machine.output_checked(match checked {
                OutputChecked::Output(output) => Ok((output, None)),
                OutputChecked::Member { tool, output } => Ok((output, Some(tool.into()))),
                OutputChecked::Refused(message) => Err(crate::tool::ToolError::model_retry(message)),
            });
        }
    }

    /// The tools of a [`Step::ListTools`] step, from [`Agent::list_tools`]. A listing that
    /// does not fit the agent's tools (a name two sources give) fails the run, as in
    /// process; one for another step than the one asked for is ignored.
    pub fn tools_listed(&mut self, listing: ToolListing) {
        let step = listing.step;
        let asked = match &self.stage {
            Stage::Running { machine, .. } => machine.step,
            Stage::Resuming(resuming) => resuming.waiting.step,
            Stage::Ended { .. } | Stage::Poisoned => return,
        };
        if step != asked || !self.unlisted()(step) {
            return;
        }
        let (listed, prepared, refused) = listing.registrations();
        let inner = &self.agent.inner;
        let tools = inner.step_registry(&ToolList::new(Source::Run), &inner.output, listed).and_then(|tools| {
            let Some(definitions) = prepared else { return Ok(tools) };
            tools.prepared(definitions).map(Arc::new).map_err(|message| Error::PrepareTools { message })
        });
        match tools {
            Ok(tools) => {
                self.tools = tools;
                self.listed_step = Some(step);
                match &mut self.stage {
                    Stage::Running { machine, events } => machine.tools_listed(refused, events),
                    _ => self.take_up(refused),
                }
            }
            Err(error) => self.tools_lost(&error.to_string()),
        }
    }

    /// The tools of a [`Step::ListTools`] step could not be listed (the engine gave up):
    /// the run fails as in process; a resume that waited for them is undone, and the run
    /// waits again for the same decisions.
    pub fn tools_lost(&mut self, message: &str) {
        match std::mem::replace(&mut self.stage, Stage::Poisoned) {
            Stage::Running { mut machine, events } => {
                machine.failed(RunError::Tools { message: message.to_owned() });
                self.stage = Stage::Running { machine, events };
            }
            Stage::Resuming(resuming) => {
                let Resuming { mut state, waiting, claimed, result, .. } = *resuming;
                tracing::warn!(run_id = %self.run_id, "a resume could not list its tools, so the run waits again: {message}");
                for id in &claimed {
                    state.decided.remove(id);
                }
                state.waiting = Some(waiting);
                self.stage = Stage::Ended { state, result };
            }
            ended => self.stage = ended,
        }
    }

    /// The model answered the request of [`Step::RequestModel`].
    pub fn model_responded(&mut self, response: ModelResponse) {
        if let Stage::Running { machine, events } = &mut self.stage {
            machine.model_responded(response, events, &self.tools);
        }
    }
    /// The model request failed (after its own retries).
    pub fn model_failed(&mut self, error: ModelError) {
        if let Stage::Running { machine, .. } = &mut self.stage {
            machine.failed(RunError::model(error));
        }
    }

    /// A call of [`Step::StartCalls`] ended.
    pub fn call_finished(&mut self, index: usize, result: CallResult) {
        self.admission.finished(index);
        if let Stage::Running { machine, events } = &mut self.stage {
            events.emit_all(result.events);
            machine.call_finished(index, result.outcome);
        }
    }

    /// A call of [`Step::StartCalls`] could not be run to its end (the engine gave up on
    /// it: its workers were lost too often): an `execution` error return the model sees.
    pub fn call_lost(&mut self, index: usize, message: &str) {
        self.admission.finished(index);
        if let Stage::Running { machine, events } = &mut self.stage {
            machine.call_lost(index, message, events);
        }
    }

    /// The run was cancelled: running calls end as `cancelled` returns, and the run ends.
    pub fn cancel(&mut self) {
        self.admission.drop_held();
        self.take_up(Vec::new());
        if let Stage::Running { machine, events } = &mut self.stage {
            machine.cancel(events, &self.tools);
        }
    }

    /// The events of the run since it started or was last resumed, in order.
    pub fn events(&self) -> Vec<Event> {
        match &self.stage {
            Stage::Running { events, .. } => events.snapshot(),
            Stage::Resuming(resuming) => resuming.events.snapshot(),
            Stage::Ended { result, .. } => result.events.clone(),
            Stage::Poisoned => Vec::new(),
        }
    }

    /// The pending approvals and deferred calls of a waiting run.
    pub fn pending(&self) -> Option<Hitl> {
        match &self.stage {
            Stage::Ended { state, .. } => state.waiting.as_ref().map(Suspended::hitl),
            _ => None,
        }
    }

    /// Checks `decisions` for a waiting run as a resume would, changing nothing.
    ///
    /// # Errors
    /// As [`resume`](Self::resume).
    pub fn check(&self, decisions: HitlDecisions) -> Result<()> {
        match &self.stage {
            Stage::Ended { state, .. } => resolve_decisions(state, decisions).map(drop),
            _ => Err(Error::NotWaiting),
        }
    }

    /// Takes a waiting run up again with `decisions`; [`next_step`](Self::next_step) goes on.
    ///
    /// # Errors
    /// The run is not waiting, or a decision is forged, replayed, stale or incomplete (a
    /// `DecisionError`-kind error naming it); the run keeps waiting.
    pub fn resume(&mut self, decisions: HitlDecisions) -> Result<()> {
        let Stage::Ended { state, .. } = &self.stage else { return Err(Error::NotWaiting) };
        let (resolved, claimed) = resolve_decisions(state, decisions)?;
        let Stage::Ended { mut state, result } = std::mem::replace(&mut self.stage, Stage::Poisoned) else {
            unreachable!("matched above")
        };
        state.decided.extend(claimed.iter().cloned());
        let waiting = state.waiting.take().expect("resolve_decisions found the run waiting");
        let events = EventLog::new(self.run_id.clone(), waiting.next_seq, None);
        // A resume is a leg of its own: its step's tools are listed again (a server's
        // `listChanged` since takes effect).
        self.listed_step = None;
        self.tools = self.agent.inner.registry.clone();
        self.admission = Admission::default();
        self.stage = Stage::Resuming(Box::new(Resuming { state, waiting, resolved, claimed, result, events }));
        Ok(())
    }

    /// The session as [`Session::export_state`] gives it, once the run ended (or waits);
    /// `None` while it runs.
    pub fn export_state(&self) -> Option<Value> {
        match &self.stage {
            Stage::Ended { state, .. } => Some(state.export()),
            _ => None,
        }
    }

    /// A run that ended or waits, from [`export_state`](Self::export_state) (to carry it
    /// across a workflow's continue-as-new).
    ///
    /// # Errors
    /// As [`Agent::restore_session`].
    pub fn restore(agent: &Agent, state: &Value, run_id: impl Into<String>) -> Result<Self> {
        let state = agent.restore_session(state)?.into_state();
        let run_id: Arc<str> = run_id.into().into();
        let hitl = state.waiting.as_ref().map(Suspended::hitl).unwrap_or_default();
        let status = if state.waiting.is_some() { crate::RunStatus::Waiting } else { crate::RunStatus::Completed };
        let result = RunResult {
            run_id: run_id.to_string(),
            status,
            output: None,
            output_tool: None,
            error: None,
            hitl,
            messages: state.history.clone(),
            events: Vec::new(),
            trace: Tracer::new(run_id.clone()).finish(),
            usage: crate::Usage::default(),
            finish_reason: None,
        };
        let ended = Stage::Ended { state, result: Box::new(result) };
        Ok(Self::new(agent, run_id, ended))
    }
}
