//! DESIGN.md §16: what outside testing broke, each kept broken-proof here.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::*;
use futures::StreamExt;
use serde_json::{Value, json};
use starweaver::testing::TestModel;
use starweaver::{
    Agent, Error, Event, EventKind, HitlDecisions, ModelResponse, PendingApproval, RunStatus, ToolBuilder, ToolContext,
    ToolError,
};

/// `deploy`: asks for approval unless re-invoked with one; logs the environments it deployed.
fn deploy(log: &Log) -> impl starweaver::Tool {
    let log = log.clone();
    raw_tool(ToolBuilder::new("deploy"), move |ctx: ToolContext, args: Args| {
        let log = log.clone();
        async move {
            if ctx.approval().is_none() {
                return Err(ToolError::approval_required("deploys need a human"));
            }
            log.push(format!("deployed {}", args["env"]));
            Ok(json!({"ok": true}))
        }
    })
}

#[tokio::test]
async fn a_decision_cannot_approve_a_later_call_that_reuses_the_model_call_id() {
    let log = Log::default();
    let model = TestModel::new([
        TestModel::tool_call_response([call("call_1", "deploy", json!({"env": "staging"}))]),
        TestModel::tool_call_response([call("call_1", "deploy", json!({"env": "prod"}))]),
        ModelResponse::text("done"),
    ]);
    let agent = Agent::builder(model).tool(deploy(&log)).build().unwrap();
    let mut session = agent.session();
    let first = session.run("deploy").await.unwrap();
    let first_id = first.hitl.approvals[0].id.clone();
    let decision = json!({"approvals": [{"id": first_id, "approved": true}]});
    let second = session.resume(HitlDecisions::from_json(&decision).unwrap()).await.unwrap();
    assert_eq!(second.status, RunStatus::Waiting);
    let second_id = second.hitl.approvals[0].id.clone();
    assert_ne!(second_id, first_id, "each pending call gets an id of its own");
    assert!(second_id.starts_with(&second.run_id));

    let err = session.resume(HitlDecisions::from_json(&decision).unwrap()).await.unwrap_err();
    assert!(matches!(err, Error::ReplayedDecision { ref id } if *id == first_id), "{err}");
    assert_eq!(log.entries(), ["deployed \"staging\""], "the prod deploy did not run");
    assert_eq!(session.pending().unwrap().approvals[0].id, second_id, "still waiting, still resumable");

    let done = session.resume(vec![second.hitl.approvals[0].approve()]).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(log.entries(), ["deployed \"staging\"", "deployed \"prod\""]);
}

#[tokio::test]
async fn two_pending_calls_with_one_model_id_get_distinct_ids_and_a_bare_id_is_ambiguous() {
    let log = Log::default();
    let model = TestModel::new([
        TestModel::tool_call_response([
            call("c", "deploy", json!({"env": "a"})),
            call("c", "deploy", json!({"env": "b"})),
        ]),
        ModelResponse::text("done"),
    ]);
    let agent = Agent::builder(model).tool(deploy(&log)).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("go").await.unwrap();
    let ids: Vec<&str> = waiting.hitl.approvals.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    let bare = json!({"approvals": [{"id": "c", "approved": true}, {"id": "c", "approved": true}]});
    let err = session.resume(HitlDecisions::from_json(&bare).unwrap()).await.unwrap_err();
    assert!(matches!(err, Error::InvalidDecision { .. }), "{err}");
    assert!(err.to_string().contains("canonical ids"), "{err}");
    let approvals: Vec<_> = waiting.hitl.approvals.iter().map(PendingApproval::approve).collect();
    assert_eq!(session.resume(approvals).await.unwrap().status, RunStatus::Completed);
}

#[test]
fn deferred_results_are_read_as_strictly_as_approvals() {
    let read = |result: Value| HitlDecisions::from_json(&json!({"deferred_results": [result]}));
    assert!(read(json!({"id": "c", "status": "completed", "value": null})).is_ok());
    assert!(read(json!({"id": "c", "status": "failed", "error": "no"})).is_ok());
    for (bad, says) in [
        (json!({"id": "c", "status": 0, "value": 1}), "expected a string"),
        (json!({"id": "c", "status": 1, "error": "x"}), "expected a string"),
        (json!({"id": "c", "status": "completed", "value": 1, "extra": 2}), "unknown field `extra`"),
        (json!({"id": "c", "status": "completed", "value": 1, "error": "x"}), "takes `value`, not `error`"),
        (json!({"id": "c", "status": "failed", "error": "x", "value": 1}), "takes `error`, not `value`"),
        (json!({"id": "c", "status": "completed"}), "needs a `value`"),
        (json!({"id": "c", "status": "failed"}), "needs an `error`"),
        (json!({"id": "c", "status": "done", "value": 1}), "must be \"completed\" or \"failed\""),
    ] {
        let err = read(bad.clone()).unwrap_err().to_string();
        assert!(err.contains("deferred_results[0]") && err.contains(says), "{bad}: {err}");
    }
}

#[tokio::test]
async fn a_return_value_that_cannot_be_serialised_is_reported_once_not_retried() {
    let runs = Counter::default();
    let counted = runs.clone();
    let tool = ToolBuilder::new("pairs")
        .handler(move |_: ToolContext, _: Args| {
            counted.bump();
            // Tuple keys have no JSON form.
            async move { Ok(HashMap::from([((1, 2), 3)])) }
        })
        .unwrap();
    let agent =
        Agent::builder(calls_then_text(vec![call("c", "pairs", json!({}))], "done")).tool(tool).build().unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(runs.get(), 1, "its side effects happened once");
    let returns = tool_returns(result.messages.messages());
    assert_eq!(returns[0].content["kind"], "execution");
    assert!(returns[0].content["message"].as_str().unwrap().contains("not JSON-serialisable"));
    assert!(!result.events.iter().any(|e| matches!(e.kind, EventKind::ToolRetry { .. })));
}

#[tokio::test]
async fn every_event_reads_back_from_its_own_json_as_an_equal_value() {
    let log = Log::default();
    let model = TestModel::new([
        TestModel::tool_call_response([call("a", "deploy", json!({"env": "x"})), call("b", "missing", json!({}))]),
        ModelResponse::text("done"),
    ]);
    let agent = Agent::builder(model).tool(deploy(&log)).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("go").await.unwrap();
    let done = session.resume(vec![waiting.hitl.approvals[0].approve()]).await.unwrap();
    for event in waiting.events.iter().chain(&done.events) {
        let json = serde_json::to_value(event).unwrap();
        let back: Event = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(&back, event, "{json}");
    }
}

#[tokio::test]
async fn a_restored_history_with_a_call_but_no_return_is_refused_naming_the_part() {
    let agent = Agent::builder(TestModel::new([ModelResponse::text("x")])).build().unwrap();
    let state = json!({"version": 1, "decided": [], "waiting": null, "history": [
        {"kind": "request", "parts": [{"kind": "user_prompt", "text": "go"}]},
        {"kind": "response", "parts": [{"kind": "text", "text": "sure"},
            {"kind": "tool_call", "id": "c1", "name": "deploy", "arguments": {}}]},
    ]});
    let err = agent.restore_session(&state).err().unwrap().to_string();
    assert!(err.contains("message 1, part 1: tool call `c1` (`deploy`) has no return"), "{err}");
    let panicky = json!({"version": 1, "history": [{"parts": [{}]}], "decided": []});
    assert!(matches!(agent.restore_session(&panicky), Err(Error::InvalidJson { .. })));
}

#[tokio::test]
async fn dropping_a_stream_mid_run_ends_the_run_cancelled_at_once() {
    let seen = Counter::default();
    let saw = seen.clone();
    let slow = ToolBuilder::new("slow")
        .handler(move |ctx: ToolContext, _: Args| {
            let saw = saw.clone();
            async move {
                ctx.cancelled().await;
                saw.bump();
                Ok(json!(null))
            }
        })
        .unwrap();
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c", "slow", json!({}))]),
        ModelResponse::text("later"),
        ModelResponse::text("again"),
    ]));
    let agent = Agent::builder(model).tool(slow).build().unwrap();
    let mut session = agent.session();
    {
        let mut stream = session.run_stream("go");
        while let Some(event) = stream.next().await {
            if matches!(event.kind, EventKind::ToolCall { .. }) {
                break;
            }
        }
    }
    let returns = tool_returns(session.history().messages());
    assert_eq!(returns.len(), 1, "the call got its return");
    assert_eq!(returns[0].content["kind"], "cancelled");
    assert_eq!(session.pending(), None);
    assert_eq!(session.run("next").await.unwrap().status, RunStatus::Completed, "the session is free");
}

#[tokio::test]
async fn a_resume_that_died_after_claiming_leaves_the_calls_to_be_decided_again() {
    use starweaver::store::{MemorySessionStore, SessionStore};
    let log = Log::default();
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let model = TestModel::new([TestModel::tool_call_response([call("c", "deploy", json!({"env": "x"}))])]);
    let agent = Agent::builder(model).tool(deploy(&log)).session_store(store.clone()).build().unwrap();
    let waiting = agent.open_session("s").unwrap().run("go").await.unwrap();
    let old_id = waiting.hitl.approvals[0].id.clone();
    // What a claim writes before the tool runs, as a process killed right after it leaves it.
    let stored = store.load("s").unwrap().unwrap();
    let mut claimed = stored.state.clone();
    claimed["decided"] = json!([old_id]);
    store.save("s", &claimed, stored.revision).unwrap();

    let model = TestModel::new([ModelResponse::text("done")]);
    let again = Agent::builder(model).tool(deploy(&log)).session_store(store.clone()).build().unwrap();
    let mut session = again.open_session("s").unwrap();
    let pending = session.pending().unwrap().approvals[0].clone();
    assert_ne!(pending.id, old_id);
    assert_eq!(pending.metadata["interrupted_decision"], json!(old_id));
    assert!(pending.reason.contains("may have run"), "{}", pending.reason);
    let replay = json!({"approvals": [{"id": old_id, "approved": true}]});
    assert!(matches!(
        session.resume(HitlDecisions::from_json(&replay).unwrap()).await,
        Err(Error::ReplayedDecision { .. })
    ));
    assert_eq!(session.resume(vec![pending.approve()]).await.unwrap().status, RunStatus::Completed);
}
