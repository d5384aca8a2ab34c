//! What a waiting run asks for: a [`PendingApproval`] or [`PendingDeferred`] per call it
//! cannot finish alone, gathered in [`Hitl`], each under an id no decision was made for.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::decision::{ApprovalDecision, DeferredOutcome, DeferredResult};

/// The stable id of a pending item: derived from the run id and the model's tool-call id.
pub fn canonical_id(run_id: &str, tool_call_id: &str) -> String {
    format!("{run_id}:{tool_call_id}")
}

/// The canonical id, or when `taken` has it (a model reused its call id, or a resume of
/// the call was claimed), the same id with the first free `:<n>` suffix: every pending
/// call gets an id no decision was ever made for.
pub(crate) fn fresh_id(run_id: &str, tool_call_id: &str, taken: impl Fn(&str) -> bool) -> String {
    let base = canonical_id(run_id, tool_call_id);
    let mut id = base.clone();
    let mut n = 1;
    while taken(&id) {
        n += 1;
        id = format!("{base}:{n}");
    }
    id
}

/// A tool call the run cannot finish alone: the body of a [`PendingApproval`] and of a
/// [`PendingDeferred`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// Canonical id (`<run id>:<tool-call id>`).
    pub id: String,
    /// The waiting run.
    pub run_id: String,
    /// The model's call id.
    pub tool_call_id: String,
    /// The tool.
    pub tool_name: String,
    /// The arguments the call runs with.
    pub arguments: Value,
    /// Why the call waits (from `ApprovalRequired(reason)` / `CallDeferred(reason)`, or the policy).
    pub reason: String,
    /// Context for whoever decides (from the error's `metadata`).
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

/// A tool call waiting for a human to approve or deny it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PendingApproval(pub PendingCall);

impl std::ops::Deref for PendingApproval {
    type Target = PendingCall;

    fn deref(&self) -> &PendingCall {
        &self.0
    }
}

impl PendingApproval {
    /// Approves the call as it stands (the decision records the arguments it approved);
    /// refine with the decision's builder methods.
    pub fn approve(&self) -> ApprovalDecision {
        ApprovalDecision {
            id: self.id.clone(),
            approved: true,
            arguments: Some(self.arguments.clone()),
            ..ApprovalDecision::default()
        }
    }

    /// Denies the call; the model is told `reason`.
    pub fn deny(&self, reason: impl Into<String>) -> ApprovalDecision {
        ApprovalDecision {
            id: self.id.clone(),
            approved: false,
            reason: Some(reason.into()),
            ..ApprovalDecision::default()
        }
    }
}

/// A tool call whose result will be supplied from outside the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PendingDeferred(pub PendingCall);

impl std::ops::Deref for PendingDeferred {
    type Target = PendingCall;

    fn deref(&self) -> &PendingCall {
        &self.0
    }
}

impl PendingDeferred {
    /// Supplies the call's value.
    pub fn complete(&self, value: Value) -> DeferredResult {
        DeferredResult { id: self.id.clone(), outcome: DeferredOutcome::Completed { value } }
    }

    /// Supplies a failure; the model sees a `deferred_failed` error.
    pub fn fail(&self, error: impl Into<String>) -> DeferredResult {
        DeferredResult { id: self.id.clone(), outcome: DeferredOutcome::Failed { error: error.into() } }
    }
}

/// What a waiting run needs before it can go on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Hitl {
    /// Calls waiting for approval, in model order.
    pub approvals: Vec<PendingApproval>,
    /// Calls waiting for an outside result, in model order.
    pub deferred: Vec<PendingDeferred>,
}

impl Hitl {
    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.approvals.is_empty() && self.deferred.is_empty()
    }
}
