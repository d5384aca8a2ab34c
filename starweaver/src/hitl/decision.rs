//! What humans decide: an [`ApprovalDecision`], a [`DeferredResult`] or an
//! [`ElicitationResponse`] per pending call, gathered in [`HitlDecisions`] for a resume.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tool::ElicitAnswer;

/// A human's decision on a [`PendingApproval`](super::PendingApproval); canonical JSON when
/// serialised.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalDecision {
    /// The canonical id of the pending approval (the bare tool-call id is accepted too).
    pub id: String,
    /// Whether the call may run.
    pub approved: bool,
    /// Who decided (for the audit trail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// Why; shown to the model when denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The arguments this approval was given for. When present, the resume is refused
    /// if the pending call's arguments differ: changing them takes an explicit
    /// `override_arguments`, never a stale decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// Arguments to run with instead of the model's (a JSON object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_arguments: Option<Value>,
    /// Anything else the application records with the decision.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl ApprovalDecision {
    /// Records who decided.
    #[must_use]
    pub fn decided_by(mut self, who: impl Into<String>) -> Self {
        self.decided_by = Some(who.into());
        self
    }

    /// Runs the call with these arguments instead of the model's.
    #[must_use]
    pub fn override_arguments(mut self, arguments: Value) -> Self {
        self.override_arguments = Some(arguments);
        self
    }

    /// Records extra data with the decision.
    #[must_use]
    pub fn metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = metadata;
        self
    }
}

/// The outside result of a [`PendingDeferred`](super::PendingDeferred); canonical JSON when
/// serialised: `{"id", "status": "completed", "value"}` or `{"id", "status": "failed",
/// "error"}`.
/// Reading it is as strict as reading an [`ApprovalDecision`]: unknown fields, another
/// status, or `value` and `error` together are refused.
///
/// ```
/// use starweaver::DeferredResult;
/// use serde_json::json;
///
/// let ok: DeferredResult = serde_json::from_value(json!({"id": "c1", "status": "completed", "value": 3})).unwrap();
/// assert_eq!(ok, DeferredResult { id: "c1".into(), outcome: starweaver::DeferredOutcome::Completed { value: json!(3) } });
/// assert!(serde_json::from_value::<DeferredResult>(json!({"id": "c1", "status": 1, "value": 3})).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawDeferredResult")]
pub struct DeferredResult {
    /// The canonical id of the deferred call (the bare tool-call id is accepted too).
    pub id: String,
    /// What happened.
    #[serde(flatten)]
    pub outcome: DeferredOutcome,
}

/// How a deferred call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum DeferredOutcome {
    /// It produced this value.
    Completed {
        /// The tool's value.
        value: Value,
    },
    /// It failed with this message.
    Failed {
        /// Shown to the model.
        error: String,
    },
}

/// A deferred result as written, before its fields are checked against each other.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDeferredResult {
    id: String,
    status: String,
    /// `Some(Value::Null)` for an explicit `null`: a tool may complete with `null`.
    #[serde(default, deserialize_with = "present")]
    value: Option<Value>,
    #[serde(default)]
    error: Option<String>,
}

fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

impl TryFrom<RawDeferredResult> for DeferredResult {
    type Error = String;

    fn try_from(raw: RawDeferredResult) -> Result<Self, String> {
        let RawDeferredResult { id, status, value, error } = raw;
        let outcome = match (status.as_str(), value, error) {
            ("completed", Some(value), None) => DeferredOutcome::Completed { value },
            ("failed", None, Some(error)) => DeferredOutcome::Failed { error },
            ("completed", None, _) => return Err("a `completed` result needs a `value`".into()),
            ("completed", Some(_), Some(_)) => return Err("a `completed` result takes `value`, not `error`".into()),
            ("failed", _, None) => return Err("a `failed` result needs an `error` message".into()),
            ("failed", Some(_), Some(_)) => return Err("a `failed` result takes `error`, not `value`".into()),
            (other, _, _) => return Err(format!("`status` must be \"completed\" or \"failed\", got {other:?}")),
        };
        Ok(Self { id, outcome })
    }
}

/// The user's answer to a [`PendingElicitation`](super::PendingElicitation); canonical
/// JSON: `{"id", "action": "accept", "content": {...}}`, `{"id", "action": "decline"}` or
/// `{"id", "action": "cancel"}`. Read as strictly as the other decisions: unknown fields,
/// another action, content that is not an object, or content with a decline are refused.
///
/// ```
/// use serde_json::json;
/// use starweaver::ElicitationResponse;
///
/// let ok: ElicitationResponse = serde_json::from_value(json!({"id": "c1", "action": "accept", "content": {"env": "prod"}})).unwrap();
/// assert_eq!(ok.id, "c1");
/// assert!(serde_json::from_value::<ElicitationResponse>(json!({"id": "c1", "action": "accept"})).is_err());
/// assert!(serde_json::from_value::<ElicitationResponse>(json!({"id": "c1", "action": "decline", "content": {}})).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawElicitationResponse")]
pub struct ElicitationResponse {
    /// The canonical id of the pending elicitation (the bare tool-call id is accepted too).
    pub id: String,
    /// The answer.
    #[serde(flatten)]
    pub answer: ElicitAnswer,
}

/// An answer as written, before its fields are checked against each other.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawElicitationResponse {
    id: String,
    action: String,
    #[serde(default, deserialize_with = "present")]
    content: Option<Value>,
}

impl TryFrom<RawElicitationResponse> for ElicitationResponse {
    type Error = String;

    fn try_from(raw: RawElicitationResponse) -> Result<Self, String> {
        let RawElicitationResponse { id, action, content } = raw;
        let answer = match (action.as_str(), content) {
            ("accept", Some(Value::Object(content))) => ElicitAnswer::Accept { content },
            ("accept", Some(other)) => {
                return Err(format!(
                    "an accepted answer's `content` must be an object, got {}",
                    crate::json::kind_of(&other)
                ));
            }
            ("accept", None) => return Err("an `accept` answer needs its `content`".into()),
            ("decline", None) => ElicitAnswer::Decline,
            ("cancel", None) => ElicitAnswer::Cancel,
            ("decline" | "cancel", Some(_)) => return Err(format!("a `{action}` answer takes no `content`")),
            (other, _) => {
                return Err(format!("`action` must be \"accept\", \"decline\" or \"cancel\", got {other:?}"));
            }
        };
        Ok(Self { id, answer })
    }
}

/// Everything a resume carries; canonical JSON: `{"approvals": [...], "deferred_results":
/// [...], "elicitations": [...]}`.
///
/// ```
/// let decisions: starweaver::HitlDecisions = serde_json::from_value(serde_json::json!({
///     "approvals": [{"id": "run_1:call_1", "approved": true, "decided_by": "ui"}],
/// })).unwrap();
/// assert!(decisions.approvals[0].approved);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HitlDecisions {
    /// Decisions on pending approvals.
    #[serde(default)]
    pub approvals: Vec<ApprovalDecision>,
    /// Results of deferred calls.
    #[serde(default)]
    pub deferred_results: Vec<DeferredResult>,
    /// Answers to pending elicitations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elicitations: Vec<ElicitationResponse>,
}

impl HitlDecisions {
    /// Decisions from canonical JSON.
    ///
    /// # Errors
    /// `InvalidJson` saying which field does not fit.
    pub fn from_json(json: &Value) -> crate::Result<Self> {
        serde_path_to_error::deserialize(json).map_err(|e| crate::Error::InvalidJson {
            what: crate::JsonInput::Decisions,
            message: format!("at `{}`: {}", e.path(), e.inner()),
        })
    }
}

impl From<Vec<ApprovalDecision>> for HitlDecisions {
    fn from(approvals: Vec<ApprovalDecision>) -> Self {
        Self { approvals, ..Self::default() }
    }
}

impl From<Vec<ElicitationResponse>> for HitlDecisions {
    fn from(elicitations: Vec<ElicitationResponse>) -> Self {
        Self { elicitations, ..Self::default() }
    }
}

impl From<Vec<DeferredResult>> for HitlDecisions {
    fn from(deferred_results: Vec<DeferredResult>) -> Self {
        Self { deferred_results, ..Self::default() }
    }
}
