//! `Session`: a conversation that keeps its history across runs and can wait for humans.

use crate::agent::{Agent, RunOptions, SessionState, Start, drive};
use crate::error::Result;
use crate::hitl::{Hitl, HitlDecisions};
use crate::message::History;
use crate::result::RunResult;
use crate::stream::RunStream;

/// A conversation with an agent (DESIGN.md §8).
///
/// A run that needs approvals or deferred results returns with status `waiting`; the
/// session holds it until [`resume`](Self::resume) supplies a decision for every pending item.
///
/// ```
/// use serde_json::{json, Map, Value};
/// use starweaver::testing::TestModel;
/// use starweaver::{Agent, ModelResponse, RunStatus, ToolBuilder, ToolCallPart, ToolContext, ToolError};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let deploy = ToolBuilder::new("deploy")
///     .handler(|ctx: ToolContext, _: Map<String, Value>| async move {
///         match ctx.approval() {
///             None => Err(ToolError::approval_required("deploy production")),
///             Some(_) => Ok(json!({"approved": true})),
///         }
///     })
///     .unwrap();
/// let model = TestModel::new([
///     TestModel::tool_call_response([ToolCallPart::new("call_1", "deploy", json!({}))]),
///     ModelResponse::text("deployed"),
/// ]);
/// let agent = Agent::builder(model).tool(deploy).build().unwrap();
/// let mut session = agent.session();
/// let waiting = session.run("deploy").await.unwrap();
/// assert_eq!(waiting.status, RunStatus::Waiting);
/// let decision = waiting.hitl.approvals[0].approve().decided_by("ui");
/// let done = session.resume(vec![decision]).await.unwrap();
/// assert_eq!(done.output.as_deref(), Some("deployed"));
/// # });
/// ```
pub struct Session {
    pub(crate) agent: Agent,
    pub(crate) state: SessionState,
}

impl Session {
    pub(crate) fn new(agent: Agent) -> Self {
        Self { agent, state: SessionState::default() }
    }

    /// Runs `prompt`, continuing the session's conversation.
    ///
    /// # Errors
    /// `SessionWaiting` when a run is waiting for decisions.
    pub async fn run(&mut self, prompt: impl Into<String>) -> Result<RunResult> {
        self.run_with(prompt, RunOptions::default()).await
    }

    /// Runs `prompt` with options (cancellation, dependencies).
    ///
    /// # Errors
    /// `SessionWaiting` when a run is waiting for decisions.
    pub async fn run_with(&mut self, prompt: impl Into<String>, options: RunOptions) -> Result<RunResult> {
        drive(&self.agent.inner, &mut self.state, Start::Prompt(prompt.into()), options, None).await
    }

    /// Runs `prompt`, yielding events as they happen.
    pub fn run_stream(&mut self, prompt: impl Into<String>) -> RunStream<'_> {
        self.stream(Start::Prompt(prompt.into()), RunOptions::default())
    }

    /// Continues the waiting run with a decision for every pending item.
    ///
    /// # Errors
    /// `NotWaiting`, or the first decision that is unknown, foreign, replayed, duplicated,
    /// of the wrong kind or malformed, or `MissingDecisions`. Nothing is applied then, and
    /// the session keeps waiting.
    pub async fn resume(&mut self, decisions: impl Into<HitlDecisions>) -> Result<RunResult> {
        self.resume_with(decisions, RunOptions::default()).await
    }

    /// [`resume`](Self::resume) with options.
    ///
    /// # Errors
    /// As [`resume`](Self::resume).
    pub async fn resume_with(&mut self, decisions: impl Into<HitlDecisions>, options: RunOptions) -> Result<RunResult> {
        drive(&self.agent.inner, &mut self.state, Start::Resume(decisions.into()), options, None).await
    }

    /// [`resume`](Self::resume), yielding events as they happen.
    pub fn resume_stream(&mut self, decisions: impl Into<HitlDecisions>) -> RunStream<'_> {
        self.stream(Start::Resume(decisions.into()), RunOptions::default())
    }

    /// What the waiting run needs, if a run is waiting.
    pub fn pending(&self) -> Option<Hitl> {
        self.state.waiting.as_ref().map(|w| w.hitl())
    }

    /// The conversation so far, host-only fields included.
    pub fn history(&self) -> &History {
        &self.state.history
    }

    fn stream(&mut self, start: Start, options: RunOptions) -> RunStream<'_> {
        let Self { agent, state } = self;
        RunStream::new(move |live| drive(&agent.inner, state, start, options, Some(live)))
    }
}
