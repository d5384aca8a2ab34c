//! `ToolError`: every way a tool call can end other than with a value.

use std::fmt;

use serde_json::{Map, Value};

use super::ask::Elicitation;

/// Where an `ElicitationRequired` error keeps its question, so it survives a trip through
/// a Python exception (whose `metadata` comes back as it went).
const QUESTION_SCHEMA: &str = "schema";
const QUESTION_INDEX: &str = "question";

/// How a tool call failed, and so what the runtime does next.
///
/// The first nine kinds are raised by tools; `NotFound`, `ApprovalDenied` and
/// `DeferredFailed` and `LimitReached` are produced by the runtime, and `ElicitationRequired` by
/// [`ToolContext::elicit`](super::ToolContext::elicit). `as_str` is the `kind` the model sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// The arguments do not fit the schema; counts one model retry.
    InvalidArguments,
    /// The tool asks the model to call again differently; counts one model retry.
    ModelRetry,
    /// Expected, correctable condition: `success: false`, `is_error: false`, no retry.
    Feedback,
    /// The application wired the tool wrongly: `is_error: true`, never retried.
    UserError,
    /// Unexpected failure (or panic): retried internally up to `max_retries`.
    Execution,
    /// The call needs a human decision; the run waits.
    ApprovalRequired,
    /// The result will be supplied later from outside; the run waits.
    CallDeferred,
    /// The call was cancelled.
    Cancelled,
    /// An attempt ran past `timeout_ms`.
    Timeout,
    /// The model called a tool the agent does not have.
    NotFound,
    /// A human denied the approval.
    ApprovalDenied,
    /// A deferred call was completed with a failure.
    DeferredFailed,
    /// The call asked the user for input in a run with nobody to ask: the run waits with a
    /// pending elicitation, and the call is invoked again with the answer.
    ElicitationRequired,
    /// The call did not run: a limit (the run's usage limits) was reached before it
    /// started. Not a retry.
    LimitReached,
}

impl ToolErrorKind {
    /// The canonical `kind` string of an error return.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArguments => "invalid_arguments",
            Self::ModelRetry => "model_retry",
            Self::Feedback => "feedback",
            Self::UserError => "user_error",
            Self::Execution => "execution",
            Self::ApprovalRequired => "approval_required",
            Self::CallDeferred => "call_deferred",
            Self::Cancelled => "cancelled",
            Self::Timeout => "timeout",
            Self::NotFound => "not_found",
            Self::ApprovalDenied => "approval_denied",
            Self::DeferredFailed => "deferred_failed",
            Self::ElicitationRequired => "elicitation_required",
            Self::LimitReached => "limit_reached",
        }
    }

    /// Whether the model should read this as an error (`Feedback` is guidance, not an error).
    pub fn is_error(self) -> bool {
        self != Self::Feedback
    }

    /// Whether this outcome spends the tool's model-retry budget.
    pub fn counts_model_retry(self) -> bool {
        matches!(self, Self::InvalidArguments | Self::ModelRetry)
    }

    /// Whether a call that fails so waits for a human (an approval, an outside result, an
    /// answer) instead of ending.
    pub(crate) fn suspends_call(self) -> bool {
        matches!(self, Self::ApprovalRequired | Self::CallDeferred | Self::ElicitationRequired)
    }
}

impl fmt::Display for ToolErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool call that did not produce a value.
///
/// ```
/// use starweaver::{ToolError, ToolErrorKind};
///
/// let err = ToolError::feedback("no such file: notes.txt");
/// assert_eq!(err.kind(), ToolErrorKind::Feedback);
/// assert!(!err.kind().is_error());
/// ```
#[derive(Debug)]
pub struct ToolError(Box<Inner>);

/// Boxed so `Result<T, ToolError>` stays one pointer wide on the hot, successful path.
#[derive(Debug)]
struct Inner {
    kind: ToolErrorKind,
    message: String,
    metadata: Map<String, Value>,
    private_metadata: Option<Value>,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
    /// `false` when running the call again cannot help.
    retryable: bool,
}

impl ToolError {
    /// An error of any kind.
    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self(Box::new(Inner {
            kind,
            message: message.into(),
            metadata: Map::new(),
            private_metadata: None,
            source: None,
            retryable: true,
        }))
    }

    /// The arguments are wrong; the model should call again with corrected ones.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::InvalidArguments, message)
    }

    /// Ask the model to retry the call with this guidance.
    pub fn model_retry(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::ModelRetry, message)
    }

    /// Agent-readable guidance for an expected condition (`success: false`, not an error).
    pub fn feedback(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::Feedback, message)
    }

    /// The application used the tool wrongly; never retried.
    pub fn user_error(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::UserError, message)
    }

    /// The `Execution` error for a tool that panicked, naming the tool and the panic's
    /// message.
    pub fn panicked(tool: &str, payload: &(dyn std::any::Any + Send)) -> Self {
        Self::execution(format!("tool `{tool}` panicked: {}", panic_message(payload)))
    }

    /// An unexpected failure; retried internally.
    pub fn execution(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::Execution, message)
    }

    /// Suspend the run until a human approves this call.
    pub fn approval_required(reason: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::ApprovalRequired, reason)
    }

    /// Suspend the run until the result is supplied from outside.
    pub fn call_deferred(reason: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::CallDeferred, reason)
    }

    /// Suspends the run until the user answers `question`, the call's `asked`-th (from 0).
    /// What `ToolContext::elicit` returns where nobody can be asked now; a tool passes it
    /// on.
    pub(crate) fn elicitation_required(asked: usize, question: &Elicitation) -> Self {
        let mut metadata = Map::new();
        metadata.insert(QUESTION_SCHEMA.into(), question.schema.clone());
        metadata.insert(QUESTION_INDEX.into(), asked.into());
        Self::new(ToolErrorKind::ElicitationRequired, question.message.clone()).with_metadata(metadata)
    }

    /// The question an `ElicitationRequired` error waits on, and its position among the
    /// call's questions; `None` for any other error, or one not made by
    /// [`elicitation_required`](Self::elicitation_required) (a tool that raised the kind
    /// itself).
    pub(crate) fn question(&self) -> Option<(usize, Elicitation)> {
        if self.0.kind != ToolErrorKind::ElicitationRequired {
            return None;
        }
        let asked = usize::try_from(self.0.metadata.get(QUESTION_INDEX)?.as_u64()?).ok()?;
        let schema = self.0.metadata.get(QUESTION_SCHEMA)?.clone();
        Some((asked, Elicitation { message: self.0.message.clone(), schema }))
    }

    /// The call was cancelled.
    pub fn cancelled(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::Cancelled, message)
    }

    /// The call ran out of time.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::Timeout, message)
    }

    /// Attaches model-facing metadata (shown in the tool return, or with a pending item).
    #[must_use]
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.0.metadata = metadata;
        self
    }

    /// Attaches host-only debugging data (a traceback, a trace id); never sent to a model.
    #[must_use]
    pub fn with_private_metadata(mut self, private_metadata: Value) -> Self {
        self.0.private_metadata = Some(private_metadata);
        self
    }

    /// Keeps the underlying error for the application (it is not shown to the model).
    #[must_use]
    pub fn with_source(mut self, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        self.0.source = Some(source.into());
        self
    }

    /// Marks an `Execution` failure that another attempt cannot fix (a return value that
    /// cannot be serialised): it is reported at once instead of retried, so the tool's side
    /// effects happen once.
    ///
    /// ```
    /// let err = starweaver::ToolError::execution("value is not JSON").not_retryable();
    /// assert!(!err.is_retryable());
    /// ```
    #[must_use]
    pub fn not_retryable(mut self) -> Self {
        self.0.retryable = false;
        self
    }

    /// Whether an `Execution` failure may be retried internally.
    pub fn is_retryable(&self) -> bool {
        self.0.retryable
    }

    /// The outcome kind.
    pub fn kind(&self) -> ToolErrorKind {
        self.0.kind
    }

    /// The message the model reads.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// Model-facing metadata.
    pub fn metadata(&self) -> &Map<String, Value> {
        &self.0.metadata
    }

    /// Host-only debugging data.
    pub fn private_metadata(&self) -> Option<&Value> {
        self.0.private_metadata.as_ref()
    }

    pub(crate) fn into_parts(self) -> (ToolErrorKind, String, Map<String, Value>, Option<Value>) {
        let Inner { kind, message, metadata, private_metadata, .. } = *self.0;
        (kind, message, metadata, private_metadata)
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.kind, self.0.message)
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source.as_deref().map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// I/O failures are unexpected: `Execution`, retried internally.
impl From<std::io::Error> for ToolError {
    fn from(err: std::io::Error) -> Self {
        Self::execution(err.to_string()).with_source(err)
    }
}

/// Any boxed error (`?` on `Box<dyn Error>`): `Execution`, retried internally.
impl From<Box<dyn std::error::Error + Send + Sync>> for ToolError {
    fn from(err: Box<dyn std::error::Error + Send + Sync>) -> Self {
        Self::execution(err.to_string()).with_source(err)
    }
}

/// A message (`Err("...".to_string())`): `Execution`, retried internally.
impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self::execution(message)
    }
}

/// A message (`Err("...")`): `Execution`, retried internally.
impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self::execution(message)
    }
}

/// What a panic said: its message, when it is a string.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string payload".to_owned())
}
