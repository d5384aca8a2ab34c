//! What a session keeps between runs ([`SessionState`]: its history, a waiting run, the
//! decisions already applied) and its JSON form, which `Session::export_state` gives and
//! `Agent::restore_session` takes back. Below the machine, which runs on it.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{Error, JsonInput, Result};
use crate::hitl::{
    ApprovalDecision, Hitl, PendingApproval, PendingCall, PendingDeferred, PendingElicitation, fresh_id,
};
use crate::message::{History, Message};
use crate::registry::NameMap;
use crate::scheduler::ToolReturn;
use crate::tool::Answered;

/// What a session keeps between runs.
#[derive(Default)]
pub(crate) struct SessionState {
    pub history: History,
    pub waiting: Option<Suspended>,
    /// Canonical ids of every decision already applied, to refuse replays.
    pub decided: HashSet<String>,
    /// The deferred tools loaded so far, in load order (sent after the always-loaded ones).
    pub loaded: Vec<Arc<str>>,
}

/// A run waiting for decisions: the response it stopped at (the history's last message),
/// and a slot per tool call of it.
pub(crate) struct Suspended {
    pub run_id: Arc<str>,
    pub step: u32,
    pub retries: NameMap<Arc<str>, u32>,
    /// Calls started per tool with a `max_uses` budget.
    pub uses: NameMap<Arc<str>, u32>,
    pub next_seq: u64,
    pub response: Arc<Message>,
    pub slots: Vec<Slot>,
}

impl SessionState {
    /// Refuses a new run while one waits for decisions, naming how many calls it waits on.
    ///
    /// # Errors
    /// `SessionWaiting` when a run is waiting.
    pub(crate) fn ensure_idle(&self) -> Result<()> {
        match &self.waiting {
            Some(waiting) => {
                Err(Error::SessionWaiting { run_id: waiting.run_id.to_string(), pending: waiting.pending() })
            }
            None => Ok(()),
        }
    }
}

impl Suspended {
    /// How many calls still wait for a decision.
    pub(crate) fn pending(&self) -> usize {
        self.slots.iter().filter(|slot| !matches!(slot, Slot::Done(_))).count()
    }

    pub(crate) fn hitl(&self) -> Hitl {
        let mut hitl = Hitl::default();
        for slot in &self.slots {
            match slot {
                Slot::Done(_) => {}
                Slot::Approval(a) => hitl.approvals.push((**a).clone()),
                Slot::Deferred(d) => hitl.deferred.push((**d).clone()),
                Slot::Elicitation(asking) => hitl.elicitations.push(asking.pending.clone()),
            }
        }
        hitl
    }
}

/// Where one call of a batch stands. Serialised in exported session state.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(crate) enum Slot {
    Done(ToolReturn),
    Approval(Box<PendingApproval>),
    Deferred(Box<PendingDeferred>),
    Elicitation(Box<Asking>),
}

/// A call waiting for the user's answer, with what invoking it again takes: the answers
/// it already had, and the decision it was approved by.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Asking {
    #[serde(flatten)]
    pub pending: PendingElicitation,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered: Vec<Answered>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalDecision>,
}

impl Slot {
    /// The pending call this slot waits on, if it waits.
    pub(crate) fn pending_mut(&mut self) -> Option<&mut PendingCall> {
        match self {
            Self::Done(_) => None,
            Self::Approval(pending) => Some(&mut pending.0),
            Self::Deferred(pending) => Some(&mut pending.0),
            Self::Elicitation(asking) => Some(&mut asking.pending.call),
        }
    }

    /// The model's id of the call this slot is for.
    pub(crate) fn tool_call_id(&self) -> &str {
        match self {
            Self::Done(ret) => &ret.part.tool_call_id,
            Self::Approval(pending) => &pending.tool_call_id,
            Self::Deferred(pending) => &pending.tool_call_id,
            Self::Elicitation(asking) => &asking.pending.tool_call_id,
        }
    }
}

impl SessionState {
    /// The canonical JSON of [`Session::export_state`](crate::Session::export_state).
    pub(crate) fn export(&self) -> Value {
        let mut decided: Vec<&String> = self.decided.iter().collect();
        decided.sort();
        let waiting = self.waiting.as_ref().map(|w| {
            let counts = |of: &NameMap<Arc<str>, u32>| -> BTreeMap<String, u32> {
                of.iter().map(|(tool, n)| (tool.to_string(), *n)).collect()
            };
            let mut waiting = serde_json::Map::new();
            waiting.insert("run_id".into(), json!(&*w.run_id));
            waiting.insert("step".into(), json!(w.step));
            waiting.insert("retries".into(), json!(counts(&w.retries)));
            // Only when a tool has a budget, so other states keep their form.
            if !w.uses.is_empty() {
                waiting.insert("uses".into(), json!(counts(&w.uses)));
            }
            waiting.insert("next_seq".into(), json!(w.next_seq));
            waiting.insert("slots".into(), json!(&w.slots));
            Value::Object(waiting)
        });
        let mut exported = json!({
            "version": STATE_VERSION,
            "history": self.history.to_json(),
            "decided": decided,
            "waiting": waiting,
        });
        // Only once a tool was loaded, so other states keep their form.
        if !self.loaded.is_empty()
            && let Value::Object(fields) = &mut exported
        {
            fields.insert("loaded".into(), json!(self.loaded.iter().map(|name| &**name).collect::<Vec<_>>()));
        }
        exported
    }
}

/// The version of [`Session::export_state`](crate::Session::export_state)'s format.
const STATE_VERSION: u32 = 1;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportedSession {
    version: u32,
    history: Value,
    decided: Vec<String>,
    waiting: Option<ExportedWaiting>,
    #[serde(default)]
    loaded: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportedWaiting {
    run_id: String,
    step: u32,
    retries: BTreeMap<String, u32>,
    #[serde(default)]
    uses: BTreeMap<String, u32>,
    next_seq: u64,
    slots: Vec<Slot>,
}

impl SessionState {
    /// The state [`export`](Self::export) gave. A waiting run's calls must match the
    /// history's last response; decisions claimed by a resume that stopped mid-run are
    /// reissued (see `reissue_interrupted`).
    ///
    /// # Errors
    /// `InvalidJson` naming what does not fit: the format, the version, the history, or
    /// a waiting run whose calls do not match the history's last response.
    pub(crate) fn restore(state: &Value) -> Result<Self> {
        let invalid = |message: String| Error::InvalidJson { what: JsonInput::SessionState, message };
        let exported: ExportedSession = serde_path_to_error::deserialize(state)
            .map_err(|e| invalid(format!("at `{}`: {}", e.path(), e.inner())))?;
        if exported.version != STATE_VERSION {
            return Err(invalid(format!("version {} is not supported (expected {STATE_VERSION})", exported.version)));
        }
        let history = History::from_json(&exported.history)?;
        let waiting = match exported.waiting {
            None => {
                if let Some((m, p, call)) = history.unanswered_calls().first() {
                    return Err(invalid(format!(
                        "message {m}, part {p}: tool call `{}` (`{}`) has no return, and no run is waiting for it",
                        call.id, call.name
                    )));
                }
                None
            }
            Some(waiting) => Some(restore_waiting(&history, waiting).map_err(invalid)?),
        };
        let decided: HashSet<String> = exported.decided.into_iter().collect();
        let loaded = exported.loaded.into_iter().map(Arc::from).collect();
        let mut state = SessionState { history, waiting, decided, loaded };
        reissue_interrupted(&mut state);
        Ok(state)
    }
}

/// A resume that claimed its decisions and then stopped (its process died mid-run) leaves
/// pending calls whose ids are decided: resending those decisions is a replay. The calls
/// get fresh ids, with a note that they may have run, so a human decides them again
/// knowing that, instead of the session being stuck.
fn reissue_interrupted(state: &mut SessionState) {
    let SessionState { waiting, decided, .. } = state;
    let Some(waiting) = waiting else { return };
    // Ids in use by the other pending calls are taken too.
    let mut issued: Vec<String> =
        waiting.slots.iter_mut().filter_map(Slot::pending_mut).map(|p| p.id.clone()).collect();
    for pending in waiting.slots.iter_mut().filter_map(Slot::pending_mut) {
        if !decided.contains(&pending.id) {
            continue;
        }
        let id = fresh_id(&pending.run_id, &pending.tool_call_id, |id| {
            decided.contains(id) || issued.iter().any(|i| i == id)
        });
        pending.metadata.insert("interrupted_decision".into(), Value::String(std::mem::replace(&mut pending.id, id)));
        pending.reason = format!(
            "{} (a resume that approved this call stopped before it finished: the call may have run)",
            pending.reason
        );
        issued.push(pending.id.clone());
    }
}

/// A waiting run's state, checked against the response it stopped at.
fn restore_waiting(history: &History, waiting: ExportedWaiting) -> std::result::Result<Suspended, String> {
    let response = history.messages().last().cloned().filter(|m| matches!(**m, Message::Response { .. }));
    let Some(response) = response else {
        return Err("a waiting run needs the history to end with the model response it stopped at".into());
    };
    let calls: Vec<&str> = response.tool_calls().map(|c| &*c.id).collect();
    let slot_ids: Vec<&str> = waiting.slots.iter().map(Slot::tool_call_id).collect();
    if calls != slot_ids {
        return Err(format!("the waiting run's calls {slot_ids:?} do not match the last response's calls {calls:?}"));
    }
    Ok(Suspended {
        run_id: Arc::from(waiting.run_id),
        step: waiting.step,
        retries: waiting.retries.into_iter().map(|(tool, n)| (Arc::from(tool), n)).collect(),
        uses: waiting.uses.into_iter().map(|(tool, n)| (Arc::from(tool), n)).collect(),
        next_seq: waiting.next_seq,
        response,
        slots: waiting.slots,
    })
}
