//! What a waiting run asks for: a [`PendingApproval`], [`PendingDeferred`] or
//! [`PendingElicitation`] per call it cannot finish alone, gathered in [`Hitl`], each under
//! an id no decision was made for.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::decision::{ApprovalDecision, DeferredOutcome, DeferredResult, ElicitationResponse};
use crate::tool::ElicitAnswer;

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

/// A tool call that asked the user for input (`ToolContext::elicit`) in a run with no
/// elicitation handler: answered through a resume, after which the call is invoked again
/// and gets the answer when it asks the same question.
///
/// ```
/// use serde_json::json;
/// use starweaver::ElicitationResponse;
/// # let pending: starweaver::PendingElicitation = serde_json::from_value(json!({
/// #     "id": "run_1:c1", "run_id": "run_1", "tool_call_id": "c1", "tool_name": "deploy",
/// #     "arguments": {}, "reason": "", "message": "Which environment?",
/// #     "schema": {"type": "object", "properties": {"env": {"type": "string"}}},
/// # })).unwrap();
///
/// let answer = pending.accept(json!({"env": "prod"}).as_object().unwrap().clone());
/// assert_eq!(serde_json::to_value(&answer).unwrap(), json!({"id": "run_1:c1", "action": "accept", "content": {"env": "prod"}}));
/// assert_eq!(serde_json::to_value(pending.decline()).unwrap(), json!({"id": "run_1:c1", "action": "decline"}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingElicitation {
    /// The call that asked.
    #[serde(flatten)]
    pub call: PendingCall,
    /// What the tool asks the user, in its own words.
    pub message: String,
    /// The JSON schema of the answer (an object of primitive properties).
    pub schema: Value,
}

impl std::ops::Deref for PendingElicitation {
    type Target = PendingCall;

    fn deref(&self) -> &PendingCall {
        &self.call
    }
}

impl PendingElicitation {
    /// Answers with a value of the asked shape.
    pub fn accept(&self, content: Map<String, Value>) -> ElicitationResponse {
        self.respond(ElicitAnswer::Accept { content })
    }

    /// The user said no; the tool goes on without the value.
    pub fn decline(&self) -> ElicitationResponse {
        self.respond(ElicitAnswer::Decline)
    }

    /// The user dismissed the question.
    pub fn cancel(&self) -> ElicitationResponse {
        self.respond(ElicitAnswer::Cancel)
    }

    fn respond(&self, answer: ElicitAnswer) -> ElicitationResponse {
        ElicitationResponse { id: self.call.id.clone(), answer }
    }
}

/// What a waiting run needs before it can go on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Hitl {
    /// Calls waiting for approval, in model order.
    pub approvals: Vec<PendingApproval>,
    /// Calls waiting for an outside result, in model order.
    pub deferred: Vec<PendingDeferred>,
    /// Calls waiting for the user's answer to their question, in model order.
    #[serde(default)]
    pub elicitations: Vec<PendingElicitation>,
}

impl Hitl {
    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.approvals.is_empty() && self.deferred.is_empty() && self.elicitations.is_empty()
    }
}
