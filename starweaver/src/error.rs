//! The crate's errors: [`Error`](enum@Error), everything a caller can get wrong, each naming what is
//! wrong.
//!
//! Failures that happen *inside* a run (a tool error, a model error, an exhausted budget)
//! are not `Error`s: they end up in the history, or as a [`RunError`](crate::RunError) in
//! [`crate::RunResult::error`].

use thiserror::Error;

use crate::schema::SchemaError;

/// A tool definition broke a registration rule.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid tool `{tool}`: {kind}")]
pub struct DefinitionError {
    /// The tool's name as given (it may itself be the problem).
    pub tool: String,
    /// Which rule was broken.
    pub kind: DefinitionErrorKind,
}

impl DefinitionError {
    pub(crate) fn new(tool: &str, kind: DefinitionErrorKind) -> Self {
        Self { tool: tool.to_owned(), kind }
    }
}

/// The registration rules a definition can break.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DefinitionErrorKind {
    /// The name is empty, too long, or uses characters providers refuse.
    #[error("names must match `[A-Za-z0-9_-]{{1,64}}`")]
    InvalidName,
    /// `strict: true` without a description.
    #[error("strict tools need a description (a doc comment, a docstring or `description`)")]
    StrictWithoutDescription,
    /// `timeout_ms: 0` would cancel every call before it starts.
    #[error("`timeout_ms` must be at least 1")]
    ZeroTimeout,
    /// `max_return_chars: 0` would leave the model nothing of any return.
    #[error("`max_return_chars` must be at least 1")]
    ZeroMaxReturnChars,
    /// `max_uses: 0` would refuse every call.
    #[error("`max_uses` must be at least 1")]
    ZeroMaxUses,
    /// `max_concurrency: 0` would start no call.
    #[error("`max_concurrency` must be at least 1")]
    ZeroMaxConcurrency,
    /// The parameter schema is malformed.
    #[error(transparent)]
    Schema(SchemaError),
    /// The return schema is malformed.
    #[error("return schema at `{}`: {}", .0.at(), .0.message)]
    ReturnSchema(SchemaError),
    /// `strict: true`, but the parameter schema cannot be made strict.
    #[error("`strict: true`, but the {0}")]
    NotStrict(SchemaError),
    /// A parameter has no description, and the agent requires them.
    #[error(
        "parameter `{name}` has no description (the agent requires one for every parameter: a doc comment, a docstring Args entry, or `Field(description=...)`)"
    )]
    UndescribedParameter {
        /// The parameter.
        name: String,
    },
}

/// What a caller of the runtime can get wrong.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// A tool definition is invalid.
    #[error(transparent)]
    Definition(#[from] DefinitionError),
    /// Two tools given directly to one agent, run or MCP service share a name.
    #[error("duplicate tool name `{name}`: tool names must be unique within {within}")]
    DuplicateTool {
        /// The shared name.
        name: String,
        /// What they were given to: `an agent`, `a run` or `an MCP service`.
        within: &'static str,
    },
    /// Two sources (the agent, a run, the served tools, toolsets) give tools of one name.
    #[error("tool name `{name}` is given by both {first} and {second}; rename or prefix one of them")]
    ToolCollision {
        /// The shared name.
        name: String,
        /// Where the first came from.
        first: String,
        /// Where the second came from.
        second: String,
    },
    /// A toolset could not list its tools.
    #[error("toolset `{toolset}` could not list its tools: {message}")]
    Toolset {
        /// The toolset.
        toolset: String,
        /// Why.
        message: String,
    },
    /// A hook's `prepare_tools` failed, or returned tools the step does not have.
    #[error("{message}")]
    PrepareTools {
        /// Which hook, and why.
        message: String,
    },
    /// An `approval_required_tools` entry is malformed.
    #[error("invalid approval rule {rule}: {message}")]
    InvalidApprovalRule {
        /// The entry as JSON.
        rule: String,
        /// What is wrong with it.
        message: String,
    },
    /// `run` on a session that is waiting for human decisions.
    #[error("session is waiting on run `{run_id}` for {pending} decision(s); resume it before starting a new run")]
    SessionWaiting {
        /// The suspended run.
        run_id: String,
        /// How many approvals and deferred results it waits for.
        pending: usize,
    },
    /// `resume` on a session with nothing to resume.
    #[error("session is not waiting for decisions; there is nothing to resume")]
    NotWaiting,
    /// A decision names no pending item of this session.
    #[error("unknown decision id `{id}`: no pending approval or deferred call has that id (pending: {pending})")]
    UnknownDecision {
        /// The id given.
        id: String,
        /// The ids that are pending, comma-separated.
        pending: String,
    },
    /// A decision was made for a different run.
    #[error("decision `{id}` belongs to run `{decision_run}`, but this session is waiting on run `{waiting_run}`")]
    ForeignDecision {
        /// The id given.
        id: String,
        /// The run the id names.
        decision_run: String,
        /// The run that is waiting.
        waiting_run: String,
    },
    /// A decision that was already applied was sent again.
    #[error("decision `{id}` was already applied; decisions cannot be replayed")]
    ReplayedDecision {
        /// The id given.
        id: String,
    },
    /// An approval was given for other arguments than the pending call has.
    #[error(
        "decision `{id}` approved arguments {approved}, but the pending call has {pending}; decide again, or approve with `override_arguments`"
    )]
    StaleDecision {
        /// The id given.
        id: String,
        /// The arguments the decision approved.
        approved: String,
        /// The pending call's arguments.
        pending: String,
    },
    /// Two decisions in one resume name the same item.
    #[error("two decisions name `{id}`; give each pending item exactly one decision")]
    DuplicateDecision {
        /// The id given twice.
        id: String,
    },
    /// A pending item got no decision.
    #[error("missing decision(s) for {ids}: every pending approval and deferred call needs one")]
    MissingDecisions {
        /// The undecided canonical ids, comma-separated.
        ids: String,
    },
    /// A decision of one kind was sent for a pending item of another (an approval for a
    /// deferred call, say).
    #[error("`{id}` is a pending {actual}, but was given {given}")]
    WrongDecisionKind {
        /// The id given.
        id: String,
        /// What the item is (`approval`, `deferred call` or `elicitation`).
        actual: &'static str,
        /// What was sent for it, with its article (`an approval decision`).
        given: &'static str,
    },
    /// A decision is malformed.
    #[error("invalid decision `{id}`: {message}")]
    InvalidDecision {
        /// The id given.
        id: String,
        /// What is wrong.
        message: String,
    },
    /// A resource, resource template or prompt given to an MCP service is invalid.
    #[error("invalid MCP {what}: {message}")]
    InvalidMcpItem {
        /// What it is, named: ``resource template `notes://{id}` ``.
        what: String,
        /// What is wrong with it.
        message: String,
    },
    /// An agent option is out of range.
    #[error("invalid option `{option}`: {message}")]
    InvalidOption {
        /// The option.
        option: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A definition cannot be rendered in a provider's format.
    #[error("tool `{tool}` cannot be rendered for {provider}: {message}")]
    Render {
        /// The tool.
        tool: String,
        /// The provider format.
        provider: &'static str,
        /// What stands in the way.
        message: String,
    },
    /// A session store could not be read or written.
    #[error("session store `{path}`: {operation} failed: {message}")]
    Store {
        /// Where the store keeps its data.
        path: String,
        /// What was being done (`open`, `load`, `save`, `delete`, `list`).
        operation: &'static str,
        /// What went wrong.
        message: String,
    },
    /// A session was written by someone else since it was loaded.
    #[error(
        "session `{id}` changed in its store since it was loaded (expected revision {expected}, found {found}); open it again"
    )]
    SessionConflict {
        /// The session id.
        id: String,
        /// The revision this session was based on.
        expected: u64,
        /// The revision in the store.
        found: u64,
    },
    /// Canonical JSON (history, script, decisions) could not be read.
    #[error("invalid {what}: {message}")]
    InvalidJson {
        /// What was being read.
        what: JsonInput,
        /// What is wrong, with its location.
        message: String,
    },
}

/// Which canonical JSON an [`Error::InvalidJson`] could not read; decisions are a human's
/// input ([`ErrorCategory::Decision`]), the rest are formats ([`ErrorCategory::Format`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonInput {
    /// A conversation's messages.
    History,
    /// A model's answer (a `FunctionModel`'s, say).
    ModelResponse,
    /// A `TestModel`'s list of answers.
    TestModelScript,
    /// Human decisions on a waiting run.
    Decisions,
    /// An exported session.
    SessionState,
    /// A run's output, read as the type asked for.
    Output,
}

impl std::fmt::Display for JsonInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::History => "history",
            Self::ModelResponse => "model response",
            Self::TestModelScript => "test model script",
            Self::Decisions => "decisions",
            Self::SessionState => "session state",
            Self::Output => "run output",
        })
    }
}

/// The kind of mistake an [`Error`](enum@Error) reports: what a binding maps to its own error classes.
/// Not `non_exhaustive`, so a binding's match names every kind and a new one cannot fall
/// through unnoticed.
///
/// ```
/// use starweaver::{Error, ErrorCategory};
///
/// assert_eq!(Error::NotWaiting.category(), ErrorCategory::SessionState);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCategory {
    /// A tool, toolset or option refused at registration.
    Registration,
    /// A session asked for something its state does not allow.
    SessionState,
    /// A human decision that does not fit what is pending.
    Decision,
    /// Canonical JSON that does not parse.
    Format,
    /// Another handle or process changed a stored session first.
    SessionConflict,
    /// A session store failed.
    Store,
    /// A definition cannot be rendered in a provider's format.
    Render,
    /// A toolset (an MCP server, a dynamic toolset) failed.
    Toolset,
}

impl Error {
    /// What kind of mistake this is.
    #[must_use]
    pub fn category(&self) -> ErrorCategory {
        match self {
            Self::Definition(_)
            | Self::DuplicateTool { .. }
            | Self::ToolCollision { .. }
            | Self::InvalidApprovalRule { .. }
            | Self::InvalidMcpItem { .. }
            | Self::InvalidOption { .. } => ErrorCategory::Registration,
            Self::SessionWaiting { .. } | Self::NotWaiting => ErrorCategory::SessionState,
            Self::UnknownDecision { .. }
            | Self::ForeignDecision { .. }
            | Self::ReplayedDecision { .. }
            | Self::StaleDecision { .. }
            | Self::DuplicateDecision { .. }
            | Self::MissingDecisions { .. }
            | Self::WrongDecisionKind { .. }
            | Self::InvalidDecision { .. }
            | Self::InvalidJson { what: JsonInput::Decisions, .. } => ErrorCategory::Decision,
            Self::InvalidJson { .. } => ErrorCategory::Format,
            Self::SessionConflict { .. } => ErrorCategory::SessionConflict,
            Self::Store { .. } => ErrorCategory::Store,
            Self::Render { .. } => ErrorCategory::Render,
            Self::Toolset { .. } | Self::PrepareTools { .. } => ErrorCategory::Toolset,
        }
    }
}

/// `Result` with the crate's [`Error`](enum@Error).
pub type Result<T, E = Error> = std::result::Result<T, E>;
