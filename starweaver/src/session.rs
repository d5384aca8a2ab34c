//! `Session`: a conversation that keeps its history across runs and can wait for humans.

use std::sync::Arc;

use serde_json::Value;

use crate::agent::{AgentInner, Claim, RunOptions, SessionState, Start, Suspended, drive};
use crate::error::Result;
use crate::hitl::{Hitl, HitlDecisions};
use crate::message::History;
use crate::result::RunResult;
use crate::stream::RunStream;

type Live = tokio::sync::mpsc::UnboundedSender<crate::event::Event>;

/// A conversation with an agent.
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
/// assert_eq!(done.text(), Some("deployed"));
/// # });
/// ```
pub struct Session {
    /// The agent it runs on.
    agent: Arc<AgentInner>,
    pub(crate) state: SessionState,
    stored: Option<StoreLink>,
}

/// Where a session opened by id is kept: its id and the revision it was last written at.
struct StoreLink {
    id: String,
    revision: u64,
}

impl Session {
    pub(crate) fn new(agent: Arc<AgentInner>) -> Self {
        Self::with_state(agent, SessionState::default())
    }

    /// A session that goes on from `state` (restored from its JSON).
    pub(crate) fn with_state(agent: Arc<AgentInner>, state: SessionState) -> Self {
        Self { agent, state, stored: None }
    }

    pub(crate) fn link(&mut self, id: String, revision: u64) {
        self.stored = Some(StoreLink { id, revision });
    }

    /// The id this session is stored under, when opened with
    /// [`Agent::open_session`](crate::Agent::open_session).
    pub fn id(&self) -> Option<&str> {
        self.stored.as_ref().map(|s| s.id.as_str())
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
        self.advance(Start::Prompt(prompt.into()), options, None).await
    }

    /// Runs `prompt`, yielding events as they happen.
    pub fn run_stream(&mut self, prompt: impl Into<String>) -> RunStream<'_> {
        self.run_stream_with(prompt, RunOptions::default())
    }

    /// [`run_stream`](Self::run_stream) with options (tools and toolsets for this run,
    /// cancellation, dependencies).
    pub fn run_stream_with(&mut self, prompt: impl Into<String>, options: RunOptions) -> RunStream<'_> {
        self.stream(Start::Prompt(prompt.into()), options)
    }

    /// [`run_stream_with`](Self::run_stream_with) on a session the stream holds (owned,
    /// or behind a lock guard), so the stream can outlive the caller's borrow.
    pub fn run_stream_owned<S>(mut session: S, prompt: impl Into<String>, options: RunOptions) -> RunStream<'static>
    where
        S: std::ops::DerefMut<Target = Session> + Send + 'static,
    {
        let prompt = prompt.into();
        RunStream::new(options, move |live, options| async move {
            session.advance(Start::Prompt(prompt), options, Some(live)).await
        })
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
        self.advance(Start::Resume(decisions.into()), options, None).await
    }

    /// [`resume`](Self::resume), yielding events as they happen.
    pub fn resume_stream(&mut self, decisions: impl Into<HitlDecisions>) -> RunStream<'_> {
        self.stream(Start::Resume(decisions.into()), RunOptions::default())
    }

    /// What the waiting run needs, if a run is waiting.
    pub fn pending(&self) -> Option<Hitl> {
        self.state.waiting.as_ref().map(Suspended::hitl)
    }

    /// The conversation so far, host-only fields included.
    pub fn history(&self) -> &History {
        &self.state.history
    }

    /// The session's state, for a run driven elsewhere.
    pub(crate) fn into_state(self) -> SessionState {
        self.state
    }

    /// The session as canonical JSON: the history (host-only fields included), the
    /// decisions already applied, and a waiting run's state (its pending approvals and
    /// deferred calls, the results of its other calls, its retry counts). Restore it with
    /// [`Agent::restore_session`](crate::Agent::restore_session), in this process or another.
    pub fn export_state(&self) -> Value {
        self.state.export()
    }

    fn stream(&mut self, start: Start, options: RunOptions) -> RunStream<'_> {
        RunStream::new(options, move |live, options| self.advance(start, options, Some(live)))
    }

    /// Every run and resume goes through here: drive the run, then write the session to
    /// its store when it has one. A refused call changes nothing and writes nothing.
    /// A resume on a stored session first claims its decisions in the store, so of two
    /// processes (or handles) resuming one waiting session, the loser is refused before
    /// any approved tool runs.
    async fn advance(&mut self, start: Start, options: RunOptions, live: Option<Live>) -> Result<RunResult> {
        let store = &self.agent.store;
        let mut save = self.stored.as_mut().map(|link| {
            move |state: &SessionState| -> Result<()> {
                link.revision = store.save(&link.id, &state.export(), link.revision)?;
                Ok(())
            }
        });
        let claim = match (&start, save.as_mut()) {
            (Start::Resume(_), Some(save)) => Some(save as Claim<'_>),
            _ => None,
        };
        let result = drive(&self.agent, &mut self.state, start, options, live, claim).await?;
        if let Some(save) = save.as_mut() {
            save(&self.state)?;
        }
        Ok(result)
    }
}
