//! `Agent`: a model, tools, instructions and an approval policy, built once and run many times.

mod answer;
mod catalog;
mod inner;
mod limits;
mod machine;
mod options;
mod run;
mod state;
mod task;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use answer::Answerer;
pub(crate) use inner::AgentInner;
pub(crate) use limits::Bounds;
pub use limits::UsageLimits;
pub(crate) use machine::{Machine, Next, resolve_decisions};
pub use options::RunOptions;
pub(crate) use run::{Claim, Start, drive};
pub(crate) use state::{SessionState, Suspended};
pub use task::{CallResult, CallTask, ListTask, ModelTask, OutputChecked, OutputTask, ToolListing};

use crate::concurrency::ConcurrencyLimit;
use crate::error::{Error, Result};
use crate::hitl::{ApprovalPolicy, ApprovalRule};
use crate::hook::Hooks;
use crate::message::History;
use crate::model::{Model, ModelError, ModelErrorKind, ModelRequest, ModelResponse};
use crate::output::{EndStrategy, Output, OutputMode, OutputValidator};
use crate::registry::{RegistrationRules, Source, ToolList, ToolRegistry};
use crate::result::RunResult;
use crate::scheduler::{CallRequest, Served, ToolReturn, invoke_alone, prepare_step};
use crate::search::ToolSearch;
use crate::session::Session;
use crate::store::{MemorySessionStore, SessionStore};
use crate::stream::RunStream;
use crate::tool::{CallChannel, Dependencies, ElicitationHandler, Tool, ToolDefinition, ToolError};
use crate::toolset::{Toolset, ToolsetContext};

/// How many model requests a run may make unless the agent says otherwise.
pub const DEFAULT_MAX_STEPS: u32 = 50;

/// An agent: cheap to clone, shareable across tasks.
///
/// ```
/// use starweaver::{Agent, ModelResponse, RunStatus, ToolBuilder, ToolCallPart, ToolContext};
/// use starweaver::testing::TestModel;
/// use serde_json::json;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct AddArgs { left: i64, right: i64 }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let add = ToolBuilder::new("add")
///     .handler(|_: ToolContext, a: AddArgs| async move { Ok(json!({"total": a.left + a.right})) })
///     .unwrap();
/// let model = TestModel::new([
///     TestModel::tool_call_response([ToolCallPart::new("call_add", "add", json!({"left": 2, "right": 3}))]),
///     ModelResponse::text("done"),
/// ]);
/// let agent = Agent::builder(model).tool(add).build().unwrap();
/// let result = agent.run("Add two numbers").await.unwrap();
/// assert_eq!(result.status, RunStatus::Completed);
/// assert_eq!(result.text(), Some("done"));
/// # });
/// ```
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<AgentInner>,
}

impl Agent {
    /// Starts building an agent on `model`.
    pub fn builder(model: impl Model) -> AgentBuilder {
        AgentBuilder {
            model: Arc::new(model),
            tools: ToolList::new(Source::Agent),
            instructions: None,
            approval_rules: Vec::new(),
            max_steps: DEFAULT_MAX_STEPS,
            usage_limits: UsageLimits::default(),
            max_concurrency: None,
            dependencies: Dependencies::new(),
            store: None,
            rules: RegistrationRules::default(),
            elicitation: None,
            hooks: Vec::new(),
            output: Output::default(),
        }
    }

    /// A new session: a conversation that keeps its history across runs and can wait for
    /// human decisions.
    pub fn session(&self) -> Session {
        Session::new(self.inner.clone())
    }

    /// The session `id` from the agent's [store](AgentBuilder::session_store), or a new
    /// one under that id. It is written back each time a run or resume returns, so a
    /// waiting run can be resumed by any process that opens the same store.
    ///
    /// ```
    /// use starweaver::testing::TestModel;
    /// use starweaver::{Agent, ModelResponse};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let agent = Agent::builder(TestModel::new([ModelResponse::text("hi")])).build().unwrap();
    /// let mut session = agent.open_session("ticket-42").unwrap();
    /// session.run("hello").await.unwrap();
    /// let reopened = agent.open_session("ticket-42").unwrap();
    /// assert_eq!(reopened.history().messages().len(), 2);
    /// # });
    /// ```
    ///
    /// # Errors
    /// `InvalidOption` for an empty id; `Store` when the store cannot be read;
    /// `InvalidJson` when the stored state does not fit this agent.
    pub fn open_session(&self, id: impl Into<String>) -> Result<Session> {
        let id = id.into();
        if id.is_empty() {
            return Err(Error::InvalidOption { option: "session_id", message: "must not be empty".into() });
        }
        let (mut session, revision) = match self.inner.store.load(&id)? {
            Some(stored) => {
                let session = self.restore_session(&stored.state).map_err(|e| match e {
                    Error::InvalidJson { what, message } => {
                        Error::InvalidJson { what, message: format!("stored session `{id}`: {message}") }
                    }
                    other => other,
                })?;
                (session, stored.revision)
            }
            None => (Session::new(self.inner.clone()), 0),
        };
        session.link(id, revision);
        Ok(session)
    }

    /// A session from [`Session::export_state`]. A waiting session resumes as it would
    /// have where it was exported; this agent must have the tools it was using.
    ///
    /// # Errors
    /// `InvalidJson` naming what does not fit: the format, the version, the history, or
    /// a waiting run whose calls do not match the history's last response.
    pub fn restore_session(&self, state: &Value) -> Result<Session> {
        Ok(Session::with_state(self.inner.clone(), SessionState::restore(state)?))
    }

    /// Where [`open_session`](Self::open_session) keeps sessions.
    pub fn session_store(&self) -> &Arc<dyn SessionStore> {
        &self.inner.store
    }

    /// Runs `prompt` in a fresh session. To resume a waiting run, use [`Agent::session`].
    ///
    /// # Errors
    /// Only misuse; run failures are reported in the [`RunResult`].
    pub async fn run(&self, prompt: impl Into<String>) -> Result<RunResult> {
        self.session().run(prompt).await
    }

    /// Runs `prompt` in a fresh session with options.
    ///
    /// # Errors
    /// Only misuse; run failures are reported in the [`RunResult`].
    pub async fn run_with(&self, prompt: impl Into<String>, options: RunOptions) -> Result<RunResult> {
        self.session().run_with(prompt, options).await
    }

    /// Runs `prompt` in a fresh session, yielding events as they happen.
    pub fn run_stream(&self, prompt: impl Into<String>) -> RunStream<'static> {
        self.run_stream_with(prompt, RunOptions::default())
    }

    /// [`run_stream`](Self::run_stream) with options (tools and toolsets for this run,
    /// cancellation, dependencies).
    pub fn run_stream_with(&self, prompt: impl Into<String>, options: RunOptions) -> RunStream<'static> {
        Session::run_stream_owned(Box::new(self.session()), prompt, options)
    }

    /// The tool definitions models are sent, in registration order.
    pub fn definitions(&self) -> &[ToolDefinition] {
        self.inner.registry.definitions()
    }

    /// Lists the tools of a step a [`DurableRun`](crate::durable::DurableRun) asked for:
    /// what this agent's dynamic toolsets (an MCP server's, say) offer now, and the step's
    /// tools as the agent's and toolsets' hooks' `prepare_tools` leave them.
    ///
    /// # Errors
    /// A toolset that cannot list its tools (a server that will not start), or a hook's
    /// failing `prepare_tools`.
    pub async fn list_tools(&self, task: &ListTask) -> Result<ToolListing> {
        let inner = &self.inner;
        let run_id: Arc<str> = task.run_id.as_str().into();
        let ctx = ToolsetContext::new(run_id.clone(), task.step, inner.dependencies.clone());
        let (listed, refused) = inner.list_dynamic(&ToolList::new(Source::Run), &ctx).await?;
        let mut listing = ToolListing::new(task.step, &listed, refused);
        let registry = if listed.is_empty() {
            inner.registry.clone()
        } else {
            inner.step_registry(&ToolList::new(Source::Run), &inner.output, listed)?
        };
        let prepared = prepare_step(&registry, &inner.hooks, &run_id, &inner.dependencies)
            .await
            .map_err(|message| Error::PrepareTools { message })?;
        listing.prepared = prepared.map(|prepared| prepared.definitions().to_vec());
        Ok(listing)
    }

    /// Makes the model request a [`DurableRun`](crate::durable::DurableRun) asked for, with this agent's model and
    /// the step's tools.
    ///
    /// # Errors
    /// The model's error, or an `invalid_response` one if the task's messages do not parse.
    pub async fn request_model(&self, task: &ModelTask) -> std::result::Result<ModelResponse, ModelError> {
        let history = History::from_json(&task.messages)
            .map_err(|e| ModelError::of(ModelErrorKind::InvalidResponse, format!("the task's messages: {e}")))?;
        let request = ModelRequest {
            messages: history.messages(),
            tools: task.tools.as_deref().unwrap_or_else(|| self.inner.registry.definitions()),
            deferred: &task.deferred,
            output: self.inner.output.asked.as_ref(),
            toolset_instructions: &task.toolset_instructions,
            run_id: &task.run_id,
            step: task.step,
            deltas: None,
        };
        self.inner.model.request(request).await
    }

    /// Checks a text answer a [`DurableRun`](crate::durable::DurableRun) asked to check as
    /// its output (native or prompted output, output validators on text).
    pub async fn check_output(&self, task: &OutputTask) -> OutputChecked {
        let output = &self.inner.output;
        let ctx = output.context(&Arc::from(task.run_id.as_str()), &self.inner.dependencies);
        match output.check(ctx, &task.text).await {
            Ok((output, None)) => OutputChecked::Output(output),
            Ok((output, Some(tool))) => OutputChecked::Member { tool: tool.to_string(), output },
            Err(error) => OutputChecked::Refused(error.message().to_owned()),
        }
    }

    /// Runs a call a [`DurableRun`](crate::durable::DurableRun) asked for through the scheduler's call path (argument
    /// checks, the approval gate, internal retries, the timeout), once; `cancellation`
    /// stops it as a run's cancellation would. What the call reports while it runs
    /// (progress, log messages) is in the result's events, and goes to `listener` as it
    /// happens (an engine's heartbeats, say). A tool of a dynamic toolset is found among
    /// what its toolset lists now for the task's step.
    pub async fn run_call(
        &self,
        run_id: &str,
        task: &CallTask,
        cancellation: CancellationToken,
        listener: Option<Arc<dyn CallChannel>>,
    ) -> CallResult {
        let inner = &self.inner;
        let run_id: Arc<str> = run_id.into();
        let registry = match self.tools_of(&run_id, task).await {
            Ok(registry) => registry,
            Err(error) => {
                let error = ToolError::execution(error.to_string()).not_retryable();
                return CallResult {
                    outcome: ToolReturn::failure(&task.call, error, Map::new()).into(),
                    events: Vec::new(),
                };
            }
        };
        let approval = task.approval.clone().map(Arc::new);
        let answered = (!task.answered.is_empty()).then(|| task.answered.as_slice().into());
        let queued_for = task.queued_for.iter().map(|label| Arc::from(label.as_str())).collect();
        let request = CallRequest { part: &task.call, approval, answered, retry: task.retry, ahead: None, queued_for };
        let answers = inner.answerer.clone();
        let served = Served { registry: &registry, hooks: &inner.hooks, dependencies: &inner.dependencies };
        let (outcome, events) = invoke_alone(served, &run_id, &cancellation, request, listener, answers).await;
        CallResult { outcome, events }
    }

    /// The tools a call task's tool is among: the agent's as built, or, for a name only a
    /// dynamic toolset gives, what the dynamic toolsets list for the task's step.
    async fn tools_of(&self, run_id: &Arc<str>, task: &CallTask) -> Result<Arc<ToolRegistry>> {
        let inner = &self.inner;
        if inner.tools.dynamic.is_empty() || inner.registry.get(&task.call.name).is_some() {
            return Ok(inner.registry.clone());
        }
        let ctx = ToolsetContext::new(run_id.clone(), task.step, inner.dependencies.clone());
        Ok(inner.tools_for(&ToolList::new(Source::Run), &inner.output, &ctx).await?.registry)
    }
}

/// Builds an [`Agent`]; every registration rule is checked in [`build`](Self::build).
#[must_use]
pub struct AgentBuilder {
    model: Arc<dyn Model>,
    tools: ToolList,
    instructions: Option<String>,
    approval_rules: Vec<ApprovalRule>,
    max_steps: u32,
    usage_limits: UsageLimits,
    max_concurrency: Option<ConcurrencyLimit>,
    dependencies: Dependencies,
    store: Option<Arc<dyn SessionStore>>,
    rules: RegistrationRules,
    elicitation: Option<Arc<dyn ElicitationHandler>>,
    hooks: Vec<Arc<dyn Hooks>>,
    output: Output,
}

impl AgentBuilder {
    /// Adds a tool.
    pub fn tool(self, tool: impl Tool) -> Self {
        self.shared_tool(Arc::new(tool))
    }

    /// Adds a tool that is shared with other agents.
    pub fn shared_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.tool(tool);
        self
    }

    /// Adds a toolset: a static one's tools are checked with the agent's; a dynamic one is
    /// listed at every step. Approval rules may name the toolset.
    pub fn toolset(self, toolset: impl Toolset) -> Self {
        self.shared_toolset(Arc::new(toolset))
    }

    /// Adds a toolset that is shared with other agents.
    pub fn shared_toolset(mut self, toolset: Arc<dyn Toolset>) -> Self {
        self.tools.toolset(toolset);
        self
    }

    /// Every call of the agent runs through `hook` (after the hooks added before it; after
    /// a run's hooks and before a toolset's), in every run and in
    /// [`run_call`](Agent::run_call). See [`Hooks`].
    pub fn hook(mut self, hook: impl Hooks) -> Self {
        self.hooks.push(Arc::new(hook));
        self
    }

    /// Every call of the agent runs through these hooks, in order (see [`hook`](Self::hook)).
    pub fn hooks(mut self, hooks: impl IntoIterator<Item = Arc<dyn Hooks>>) -> Self {
        self.hooks.extend(hooks);
        self
    }

    /// Instructions sent as the system prompt at the start of each session.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Tools that need a human decision before every call: names, toolset names or ids,
    /// metadata bundles, or `"*"`.
    pub fn approval_required_tools<R: Into<ApprovalRule>>(mut self, rules: impl IntoIterator<Item = R>) -> Self {
        self.approval_rules.extend(rules.into_iter().map(Into::into));
        self
    }

    /// The most model requests one run may make ([`DEFAULT_MAX_STEPS`] by default).
    pub fn max_steps(mut self, max_steps: u32) -> Self {
        self.max_steps = max_steps;
        self
    }

    /// What each run may spend (model requests, tool calls, tokens; unbounded by default);
    /// a run's [`RunOptions::usage_limits`] replace them for that run.
    pub fn usage_limits(mut self, limits: UsageLimits) -> Self {
        self.usage_limits = limits;
        self
    }

    /// The most tool calls that may run at once (unbounded by default): a number caps each
    /// run on its own; a shared [`ConcurrencyLimit`] caps every run of every agent naming it.
    pub fn max_concurrency(mut self, limit: impl Into<ConcurrencyLimit>) -> Self {
        self.max_concurrency = Some(limit.into());
        self
    }

    /// The most characters of model-facing content any tool return may have, for tools
    /// whose definition and toolset set no `max_return_chars`. Longer content is cut, ending
    /// with a marker such as `… [1234 more characters cut]`; the whole value stays
    /// host-only (the return's `value` in the history and events).
    ///
    /// ```
    /// use serde_json::json;
    /// use starweaver::testing::TestModel;
    /// use starweaver::{Agent, ModelResponse, ToolBuilder, ToolCallPart, ToolContext};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let page = ToolBuilder::new("page")
    ///     .handler(|_: ToolContext, _: serde_json::Map<String, serde_json::Value>| async { Ok("x".repeat(5000)) })
    ///     .unwrap();
    /// let model = TestModel::new([
    ///     TestModel::tool_call_response([ToolCallPart::new("c1", "page", json!({}))]),
    ///     ModelResponse::text("done"),
    /// ]);
    /// let agent = Agent::builder(model).tool(page).max_return_chars(100).build().unwrap();
    /// let result = agent.run("read it").await.unwrap();
    /// let ret = &result.messages.to_json()[2]["parts"][0];
    /// assert_eq!(ret["content"], format!("{}… [4900 more characters cut]", "x".repeat(100)));
    /// assert_eq!(ret["value"], "x".repeat(5000));
    /// # });
    /// ```
    pub fn max_return_chars(mut self, max: u32) -> Self {
        self.rules.max_return_chars = Some(max);
        self
    }

    /// Values tools can read with [`crate::ToolContext::dependency`].
    pub fn dependencies(mut self, dependencies: Dependencies) -> Self {
        self.dependencies = dependencies;
        self
    }

    /// Who answers when a tool asks the user for input mid-call
    /// ([`ToolContext::elicit`](crate::ToolContext::elicit)): a UI prompt, a chat message,
    /// a policy. Without one such a call fails, saying so.
    pub fn elicitation_handler(mut self, handler: impl ElicitationHandler + 'static) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// Where [`Agent::open_session`] keeps sessions: a [`MemorySessionStore`] unless set, or a
    /// [`SqliteSessionStore`](crate::store::SqliteSessionStore) to keep them across processes.
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Makes a parameter without a description a registration error, so every parameter
    /// a model sees is explained (doc comments, docstring `Args`, `Field(description=...)`).
    pub fn require_parameter_descriptions(mut self, required: bool) -> Self {
        self.rules.require_parameter_descriptions = required;
        self
    }

    /// What runs answer with unless a run asks for its own ([`RunOptions::output`]); see
    /// [`Output`]. The `output_*` methods below edit it in place.
    pub fn output(mut self, output: Output) -> Self {
        self.output = output;
        self
    }

    /// Who searches the deferred tools ([`ToolSearch::Local`] by default: the run, through
    /// `search_tools`). [`ToolSearch::Native`] hands them to the provider's own search
    /// (Anthropic's tool search tool, OpenAI Responses' `tool_search`); a model without one
    /// is refused by [`build`](Self::build).
    ///
    /// ```
    /// use starweaver::search::ToolSearch;
    /// use starweaver::testing::TestModel;
    /// use starweaver::{Agent, Error};
    ///
    /// let refused = Agent::builder(TestModel::new([])).tool_search(ToolSearch::Native).build();
    /// assert!(matches!(refused, Err(Error::InvalidOption { option: "tool_search", .. })));
    /// ```
    pub fn tool_search(mut self, search: ToolSearch) -> Self {
        self.rules.tool_search = search;
        self
    }

    /// Runs answer with a `T` ([`RunResult::output_as`]) instead of text; called again,
    /// each type is a member of a union. See [`Output::typed`] and [`crate::output`].
    pub fn output_type<T: JsonSchema + DeserializeOwned + Serialize + 'static>(mut self) -> Self {
        self.output = self.output.typed::<T>();
        self
    }

    /// An output function: the model fills its parameters, and its return value is the
    /// run's output. See [`Output::function`].
    pub fn output_function(self, tool: impl Tool) -> Self {
        self.shared_output_function(Arc::new(tool))
    }

    /// An output function shared with other agents (see [`output_function`](Self::output_function)).
    pub fn shared_output_function(mut self, tool: Arc<dyn Tool>) -> Self {
        self.output = self.output.shared_function(tool);
        self
    }

    /// How the model is asked for the output (output tools by default); a model without
    /// what the mode needs is refused by [`build`](Self::build). See [`Output::mode`].
    pub fn output_mode(mut self, mode: OutputMode) -> Self {
        self.output = self.output.mode(mode);
        self
    }

    /// Lets a text answer end a run too, beside the output types (a union with text).
    pub fn text_output(mut self) -> Self {
        self.output = self.output.or_text();
        self
    }

    /// How many times the model may be corrected on its output; 1 by default. See
    /// [`Output::retries`].
    pub fn output_retries(mut self, retries: u32) -> Self {
        self.output = self.output.retries(retries);
        self
    }

    /// Checks every output once decoded, after the validators added before it; see
    /// [`OutputValidator`].
    pub fn output_validator(self, validator: impl OutputValidator) -> Self {
        self.shared_output_validator(Arc::new(validator))
    }

    /// An output validator shared with other agents.
    pub fn shared_output_validator(mut self, validator: Arc<dyn OutputValidator>) -> Self {
        self.output = self.output.shared_validator(validator);
        self
    }

    /// What becomes of a response's other calls when it calls an output tool too
    /// ([`EndStrategy::Early`] by default: they do not run).
    pub fn end_strategy(mut self, strategy: EndStrategy) -> Self {
        self.output = self.output.end_strategy(strategy);
        self
    }

    /// Validates every tool and option and builds the agent.
    ///
    /// # Errors
    /// An invalid definition, a duplicate tool name, or an out-of-range option.
    pub fn build(self) -> Result<Agent> {
        if self.max_steps == 0 {
            return Err(Error::InvalidOption { option: "max_steps", message: "must be at least 1".into() });
        }
        if self.max_concurrency.as_ref().is_some_and(ConcurrencyLimit::is_zero) {
            return Err(Error::InvalidOption { option: "max_concurrency", message: "must be at least 1".into() });
        }
        if self.rules.max_return_chars == Some(0) {
            return Err(Error::InvalidOption { option: "max_return_chars", message: "must be at least 1".into() });
        }
        if self.rules.tool_search == ToolSearch::Native && !self.model.native_tool_search() {
            let model = match self.model.protocol() {
                Some(protocol) => format!("the `{protocol}` protocol"),
                None => "this model".to_owned(),
            };
            let message = format!(
                "{model} has no native tool search (the `anthropic` and `openai-responses` protocols have one): \
                 search locally instead (`ToolSearch::Local`, `tool_search=\"local\"`, the default)"
            );
            return Err(Error::InvalidOption { option: "tool_search", message });
        }
        let output = Arc::new(self.output.build(&*self.model, self.instructions.as_deref())?);
        let tools = self.tools;
        let policy = ApprovalPolicy::new(self.approval_rules);
        let mut entries = tools.entries.clone();
        entries.extend(output.registrations.iter().cloned());
        let registry = Arc::new(ToolRegistry::new(entries, &policy, self.rules)?);
        let answerer = Arc::new(Answerer { model: self.model.clone(), elicitation: self.elicitation });
        Ok(Agent {
            inner: Arc::new(AgentInner {
                answerer,
                model: self.model,
                registry,
                tools,
                output,
                policy,
                rules: self.rules,
                instructions: self.instructions,
                max_steps: self.max_steps,
                usage_limits: self.usage_limits,
                max_concurrency: self.max_concurrency,
                dependencies: self.dependencies,
                hooks: self.hooks,
                store: self.store.unwrap_or_else(|| Arc::new(MemorySessionStore::new())),
            }),
        })
    }
}
