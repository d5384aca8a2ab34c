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
//!         Step::Done(result) => break result,
//!     }
//! };
//! assert_eq!((result.status, result.output.as_deref()), (RunStatus::Completed, Some("42")));
//! # });
//! ```

use std::sync::Arc;

use serde_json::Value;

use crate::agent::{Bounds, Machine, Next, SessionState, Suspended, resolve_decisions};
pub use crate::agent::{CallResult, CallTask, ModelTask};
use crate::error::{Error, Result};
use crate::event::{Event, EventLog};
use crate::hitl::{Hitl, HitlDecisions};
use crate::model::{ModelError, ModelResponse};
use crate::result::{RunError, RunResult};
use crate::trace::Tracer;
use crate::{Agent, Session};

/// What the driver of a [`DurableRun`] does next.
#[derive(Debug)]
// One is made per step and matched on at once: boxing the result would cost every caller
// a `*` to save bytes nothing keeps.
#[allow(clippy::large_enum_variant)]
pub enum Step {
    /// Request the model ([`Agent::request_model`]) and report with
    /// [`DurableRun::model_responded`] or [`DurableRun::model_failed`].
    RequestModel(ModelTask),
    /// Start these calls ([`Agent::run_call`], side by side), reporting each with
    /// [`DurableRun::call_finished`].
    StartCalls(Vec<CallTask>),
    /// Nothing new may start until a running call is reported.
    AwaitCalls,
    /// The run ended: completed, failed, cancelled, or waiting for decisions
    /// ([`DurableRun::resume`]).
    Done(RunResult),
}

/// A run driven one step at a time; see the [module](self) documentation.
pub struct DurableRun {
    agent: Agent,
    run_id: Arc<str>,
    stage: Stage,
}

enum Stage {
    Running {
        machine: Box<Machine<SessionState>>,
        events: EventLog,
    },
    /// Ended, or waiting (a resume's events go on from the waiting run's `next_seq`).
    Ended {
        state: SessionState,
        result: Box<RunResult>,
    },
    /// A resume was refused after the state was taken; never observed outside.
    Poisoned,
}

impl DurableRun {
    /// A run of `prompt` in a new session, under `run_id` (the engine's, so that a replay
    /// gets the same one).
    ///
    /// # Errors
    /// The agent has dynamic toolsets: their tools are listed at each step, which is I/O a
    /// durable run does not do yet.
    pub fn start(agent: &Agent, prompt: impl Into<String>, run_id: impl Into<String>) -> Result<Self> {
        Self::start_in(agent, SessionState::default(), prompt.into(), run_id.into())
    }

    /// A run of `prompt` continuing `session`'s history (it must not be waiting).
    ///
    /// # Errors
    /// As [`start`](Self::start), and a waiting session.
    pub fn start_in_session(
        agent: &Agent,
        session: Session,
        prompt: impl Into<String>,
        run_id: impl Into<String>,
    ) -> Result<Self> {
        Self::start_in(agent, session.into_state(), prompt.into(), run_id.into())
    }

    fn start_in(agent: &Agent, state: SessionState, prompt: String, run_id: String) -> Result<Self> {
        if let Some(toolset) = agent.inner.tools.dynamic.first() {
            return Err(Error::Toolset {
                toolset: toolset.name().to_owned(),
                message: "it is dynamic; a durable run needs its tools known up front".into(),
            });
        }
        state.ensure_idle()?;
        let run_id: Arc<str> = run_id.into();
        let events = EventLog::new(run_id.clone(), 0, None);
        let inner = &agent.inner;
        let instructions = inner.instructions.as_deref();
        let bounds = Bounds { max_steps: inner.max_steps, usage: inner.usage_limits };
        let machine = Machine::start(state, run_id.clone(), bounds, instructions, prompt, Vec::new(), &events);
        Ok(Self { agent: agent.clone(), run_id, stage: Stage::Running { machine: Box::new(machine), events } })
    }

    /// What to do next.
    pub fn next_step(&mut self) -> Step {
        let registry = self.agent.inner.registry.clone();
        let Stage::Running { machine, events } = &mut self.stage else {
            return match &self.stage {
                Stage::Ended { result, .. } => Step::Done((**result).clone()),
                Stage::Running { .. } | Stage::Poisoned => unreachable!("a poisoned run is never observed"),
            };
        };
        let next = match machine.next(events, &registry) {
            // The agent's tools are known up front (no dynamic toolsets): nothing to list.
            Next::ListTools { .. } => {
                machine.tools_listed(Vec::new(), events);
                machine.next(events, &registry)
            }
            next => next,
        };
        match next {
            Next::ListTools { .. } => unreachable!("the tools were just listed"),
            Next::RequestModel { step } => {
                let messages = machine.state.history.to_json();
                Step::RequestModel(ModelTask { run_id: self.run_id.to_string(), step, messages })
            }
            Next::StartCalls(ready) => Step::StartCalls(machine.call_tasks(ready)),
            Next::AwaitCalls => Step::AwaitCalls,
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

    /// The model answered the request of [`Step::RequestModel`].
    pub fn model_responded(&mut self, response: ModelResponse) {
        let registry = self.agent.inner.registry.clone();
        if let Stage::Running { machine, events } = &mut self.stage {
            machine.model_responded(response, events, &registry);
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
        if let Stage::Running { machine, events } = &mut self.stage {
            events.emit_all(result.events);
            machine.call_finished(index, result.outcome);
        }
    }

    /// A call of [`Step::StartCalls`] could not be run to its end (the engine gave up on
    /// it: its workers were lost too often): an `execution` error return the model sees.
    pub fn call_lost(&mut self, index: usize, message: &str) {
        if let Stage::Running { machine, events } = &mut self.stage {
            machine.call_lost(index, message, events);
        }
    }

    /// The run was cancelled: running calls end as `cancelled` returns, and the run ends.
    pub fn cancel(&mut self) {
        let registry = self.agent.inner.registry.clone();
        if let Stage::Running { machine, events } = &mut self.stage {
            machine.cancel(events, &registry);
        }
    }

    /// The events of the run since it started or was last resumed, in order.
    pub fn events(&self) -> Vec<Event> {
        match &self.stage {
            Stage::Running { events, .. } => events.snapshot(),
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
        let Stage::Ended { mut state, .. } = std::mem::replace(&mut self.stage, Stage::Poisoned) else {
            unreachable!("matched above")
        };
        state.decided.extend(claimed);
        let waiting = state.waiting.take().expect("resolve_decisions found the run waiting");
        let events = EventLog::new(self.run_id.clone(), waiting.next_seq, None);
        let registry = self.agent.inner.registry.clone();
        let inner = &self.agent.inner;
        let bounds = Bounds { max_steps: inner.max_steps, usage: inner.usage_limits };
        let machine = Machine::resume(state, waiting, bounds, resolved, &registry, Vec::new(), &events);
        self.stage = Stage::Running { machine: Box::new(machine), events };
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
            error: None,
            hitl,
            messages: state.history.clone(),
            events: Vec::new(),
            trace: Tracer::new(run_id.clone()).finish(),
            usage: crate::Usage::default(),
            finish_reason: None,
        };
        Ok(Self { agent: agent.clone(), run_id, stage: Stage::Ended { state, result: Box::new(result) } })
    }
}
