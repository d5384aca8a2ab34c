//! Matching a resume's decisions to a waiting run's pending items. Every check lives here,
//! so no decision reaches a tool unless it names exactly one pending item of this run.

use std::collections::HashSet;

use super::decision::{ApprovalDecision, DeferredResult, ElicitationResponse, HitlDecisions};
use super::pending::canonical_id;
use crate::error::{Error, Result};
use crate::tool::ElicitAnswer;

/// A pending item as the resolver sees it.
pub(crate) struct Pending<'a> {
    pub slot: usize,
    pub id: &'a str,
    pub tool_call_id: &'a str,
    pub arguments: &'a serde_json::Value,
    pub kind: PendingKind,
    /// The schema an elicitation's accepted answer must match.
    pub schema: Option<&'a serde_json::Value>,
}

/// What a pending item waits for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum PendingKind {
    Approval,
    Deferred,
    Elicitation,
}

impl PendingKind {
    /// The item, as an error names it.
    fn item(self) -> &'static str {
        match self {
            Self::Approval => "approval",
            Self::Deferred => "deferred call",
            Self::Elicitation => "elicitation",
        }
    }

    /// What decides an item of this kind, as an error names it.
    fn decision(self) -> &'static str {
        match self {
            Self::Approval => "an approval decision",
            Self::Deferred => "a deferred result",
            Self::Elicitation => "an answer to an elicitation",
        }
    }
}

/// A decision matched to the slot of the call it decides.
pub(crate) enum Resolution {
    Approval(ApprovalDecision),
    Deferred(DeferredResult),
    Elicitation(ElicitationResponse),
}

impl Resolution {
    fn kind(&self) -> PendingKind {
        match self {
            Self::Approval(_) => PendingKind::Approval,
            Self::Deferred(_) => PendingKind::Deferred,
            Self::Elicitation(_) => PendingKind::Elicitation,
        }
    }
}

/// Pairs each decision with its pending item, or says exactly what is wrong: an unknown,
/// foreign, replayed, duplicated or mistyped decision, or a pending item left undecided.
pub(crate) fn resolve(
    run_id: &str,
    pending: &[Pending<'_>],
    decided: &HashSet<String>,
    decisions: HitlDecisions,
) -> Result<Vec<(usize, Resolution)>> {
    let mut matched: Vec<(usize, Resolution)> = Vec::with_capacity(pending.len());
    let approvals = decisions.approvals.into_iter().map(|d| (d.id.clone(), Resolution::Approval(d)));
    let deferred = decisions.deferred_results.into_iter().map(|d| (d.id.clone(), Resolution::Deferred(d)));
    let answers = decisions.elicitations.into_iter().map(|a| (a.id.clone(), Resolution::Elicitation(a)));
    for (id, resolution) in approvals.chain(deferred).chain(answers) {
        let item = find(run_id, pending, decided, &id)?;
        if item.kind != resolution.kind() {
            return Err(Error::WrongDecisionKind { id, actual: item.kind.item(), given: resolution.kind().decision() });
        }
        if matched.iter().any(|(slot, _)| *slot == item.slot) {
            return Err(Error::DuplicateDecision { id: item.id.to_owned() });
        }
        if let Resolution::Approval(ApprovalDecision { arguments: Some(approved), .. }) = &resolution
            && approved != item.arguments
        {
            return Err(Error::StaleDecision {
                id,
                approved: approved.to_string(),
                pending: item.arguments.to_string(),
            });
        }
        if let Resolution::Elicitation(ElicitationResponse { answer: ElicitAnswer::Accept { content }, .. }) =
            &resolution
            && let Some(schema) = item.schema
            && let Err(mismatch) = crate::schema::check(schema, &serde_json::Value::Object(content.clone()))
        {
            return Err(Error::InvalidDecision {
                id,
                message: format!("the answer does not match the schema the tool asked with: {mismatch}"),
            });
        }
        if let Resolution::Approval(ApprovalDecision { override_arguments: Some(args), .. }) = &resolution
            && !args.is_object()
        {
            return Err(Error::InvalidDecision {
                id,
                message: format!("`override_arguments` must be a JSON object, got {}", crate::json::kind_of(args)),
            });
        }
        matched.push((item.slot, resolution));
    }
    let missing: Vec<&str> =
        pending.iter().filter(|p| !matched.iter().any(|(slot, _)| *slot == p.slot)).map(|p| p.id).collect();
    if !missing.is_empty() {
        return Err(Error::MissingDecisions { ids: missing.join(", ") });
    }
    Ok(matched)
}

fn find<'p, 'a>(
    run_id: &str,
    pending: &'p [Pending<'a>],
    decided: &HashSet<String>,
    id: &str,
) -> Result<&'p Pending<'a>> {
    // An id already decided is refused first: a later call may reuse the model's call id,
    // and a resent decision must not approve it.
    if decided.contains(id) {
        return Err(Error::ReplayedDecision { id: id.to_owned() });
    }
    if let Some(item) = pending.iter().find(|p| p.id == id) {
        return Ok(item);
    }
    let mut by_call_id = pending.iter().filter(|p| p.tool_call_id == id);
    match (by_call_id.next(), by_call_id.next()) {
        (Some(item), None) => return Ok(item),
        (Some(_), Some(_)) => {
            return Err(Error::InvalidDecision {
                id: id.to_owned(),
                message: "several pending calls have this model id; use their canonical ids".into(),
            });
        }
        (None, _) => {}
    }
    if decided.contains(&canonical_id(run_id, id)) {
        return Err(Error::ReplayedDecision { id: id.to_owned() });
    }
    if let Some((other_run, _)) = id.split_once(':')
        && other_run != run_id
        && other_run.starts_with("run_")
    {
        return Err(Error::ForeignDecision {
            id: id.to_owned(),
            decision_run: other_run.to_owned(),
            waiting_run: run_id.to_owned(),
        });
    }
    let pending = pending.iter().map(|p| format!("`{}`", p.id)).collect::<Vec<_>>().join(", ");
    Err(Error::UnknownDecision { id: id.to_owned(), pending })
}
