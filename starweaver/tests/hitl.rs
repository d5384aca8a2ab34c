//! DESIGN.md §8: waiting runs, decisions, resumes and approval policies.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};
use starweaver::testing::TestModel;
use starweaver::{
    Agent, ApprovalRule, Error, HitlDecisions, ModelResponse, RunStatus, StaticToolset, ToolBuilder, ToolContext,
    ToolError,
};

/// A tool that asks for approval unless re-invoked with one, logging each invocation.
fn gated(name: &str, log: &Log) -> impl starweaver::Tool {
    let log = log.clone();
    raw_tool(ToolBuilder::new(name), move |ctx: ToolContext, args: Args| {
        let log = log.clone();
        async move {
            let Some(approval) = ctx.approval() else {
                log.push("asked");
                let Value::Object(meta) = json!({"risk": "high"}) else { unreachable!() };
                return Err(ToolError::approval_required("deploy production").with_metadata(meta));
            };
            log.push(format!("ran by {:?} with {}", approval.decided_by, Value::Object(args.clone())));
            Ok(json!({"approved": true}))
        }
    })
}

/// A tool that defers its result.
fn deferred(name: &str) -> impl starweaver::Tool {
    raw_tool(ToolBuilder::new(name), |_: ToolContext, _: Args| async {
        Err::<Value, _>(ToolError::call_deferred("batch job queued"))
    })
}

fn plain(name: &str, runs: &Counter) -> impl starweaver::Tool {
    let runs = runs.clone();
    raw_tool(ToolBuilder::new(name), move |ctx: ToolContext, _: Args| {
        runs.bump();
        let approved = ctx.approval().is_some();
        async move { Ok(json!({"approved": approved})) }
    })
}

#[tokio::test]
async fn waiting_runs_list_pending_items_under_canonical_ids() {
    let log = Log::default();
    let model =
        calls_then_text(vec![call("call_a", "deploy", json!({"env": "prod"})), call("call_d", "job", json!({}))], "x");
    let agent = Agent::builder(model).tool(gated("deploy", &log)).tool(deferred("job")).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("deploy").await.unwrap();
    assert_eq!(waiting.status, RunStatus::Waiting);
    let approval = &waiting.hitl.approvals[0];
    assert_eq!(approval.id, format!("{}:call_a", waiting.run_id));
    assert_eq!((approval.tool_name.as_str(), approval.arguments.clone()), ("deploy", json!({"env": "prod"})));
    assert_eq!((approval.reason.as_str(), approval.metadata["risk"].clone()), ("deploy production", json!("high")));
    assert_eq!(waiting.hitl.deferred[0].id, format!("{}:call_d", waiting.run_id));
    assert_eq!(session.pending(), Some(waiting.hitl.clone()));
}

#[tokio::test]
async fn an_approved_tool_is_reinvoked_with_its_decision_and_the_run_completes() {
    let log = Log::default();
    let model = calls_then_text(vec![call("call_1", "deploy", json!({}))], "deployed");
    let agent = Agent::builder(model.clone()).tool(gated("deploy", &log)).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("deploy").await.unwrap();
    let decision = waiting.hitl.approvals[0].approve().decided_by("ui");
    let result = session.resume(vec![decision]).await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(result.text(), Some("deployed"));
    assert_eq!(log.entries(), ["asked", "ran by Some(\"ui\") with {}"]);
    assert_eq!(result.run_id, waiting.run_id, "a resume continues the same run");
    let ret = &tool_returns(&model.requests()[1].messages)[0];
    assert_eq!(ret.content, json!({"approved": true}));
    assert!(session.pending().is_none());
}

#[tokio::test]
async fn a_decision_for_other_arguments_is_refused_as_stale() {
    let log = Log::default();
    let model = calls_then_text(vec![call("call_1", "deploy", json!({"env": "prod"}))], "ok");
    let agent = Agent::builder(model).tool(gated("deploy", &log)).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("deploy").await.unwrap();
    let mut forged = waiting.hitl.approvals[0].approve();
    forged.arguments = Some(json!({"env": "staging"}));
    let err = session.resume(vec![forged]).await.unwrap_err();
    assert!(matches!(err, Error::StaleDecision { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "decision `{}` approved arguments {{\"env\":\"staging\"}}, but the pending call has {{\"env\":\"prod\"}}; decide again, or approve with `override_arguments`",
            waiting.hitl.approvals[0].id
        )
    );
    assert_eq!(log.entries(), ["asked"], "nothing ran");
    let recorded = waiting.hitl.approvals[0].approve();
    assert_eq!(recorded.arguments, Some(json!({"env": "prod"})), "approve() records what it approved");
    session.resume(vec![recorded]).await.unwrap();
    assert_eq!(log.entries()[1], "ran by None with {\"env\":\"prod\"}");
}

#[tokio::test]
async fn an_approval_can_override_the_arguments() {
    let log = Log::default();
    let model = calls_then_text(vec![call("call_1", "deploy", json!({"env": "prod"}))], "ok");
    let agent = Agent::builder(model).tool(gated("deploy", &log)).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("deploy").await.unwrap();
    let decision = waiting.hitl.approvals[0].approve().override_arguments(json!({"env": "staging"}));
    session.resume(vec![decision]).await.unwrap();
    assert_eq!(log.entries()[1], "ran by None with {\"env\":\"staging\"}");
}

#[tokio::test]
async fn a_denied_tool_returns_the_denial_to_the_model_and_never_runs() {
    let log = Log::default();
    let model = calls_then_text(vec![call("call_1", "deploy", json!({}))], "ok, not deploying");
    let agent = Agent::builder(model.clone()).tool(gated("deploy", &log)).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("deploy").await.unwrap();
    let decision = waiting.hitl.approvals[0].deny("change freeze").decided_by("alice");
    let result = session.resume(vec![decision]).await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(log.entries(), ["asked"]);
    let ret = &tool_returns(&model.requests()[1].messages)[0];
    assert_eq!(ret.content["kind"], "approval_denied");
    assert_eq!(ret.content["message"], "change freeze");
    assert_eq!(ret.content["decided_by"], "alice");
    assert!(ret.is_error);
}

#[tokio::test]
async fn deferred_calls_complete_or_fail_from_outside() {
    for (complete, expected_error) in [(true, false), (false, true)] {
        let model = calls_then_text(vec![call("call_1", "job", json!({}))], "done");
        let agent = Agent::builder(model.clone()).tool(deferred("job")).build().unwrap();
        let mut session = agent.session();
        let waiting = session.run("go").await.unwrap();
        let pending = &waiting.hitl.deferred[0];
        let result = if complete { pending.complete(json!({"rows": 3})) } else { pending.fail("job crashed") };
        session.resume(vec![result]).await.unwrap();
        let ret = &tool_returns(&model.requests()[1].messages)[0];
        assert_eq!(ret.is_error, expected_error);
        if complete {
            assert_eq!(ret.content, json!({"rows": 3}));
        } else {
            assert_eq!(
                (ret.content["kind"].clone(), ret.content["message"].clone()),
                (json!("deferred_failed"), json!("job crashed"))
            );
        }
    }
}

#[tokio::test]
async fn bare_tool_call_ids_and_canonical_json_decisions_are_accepted() {
    let log = Log::default();
    let model = calls_then_text(vec![call("call_a", "deploy", json!({})), call("call_d", "job", json!({}))], "done");
    let agent = Agent::builder(model).tool(gated("deploy", &log)).tool(deferred("job")).build().unwrap();
    let mut session = agent.session();
    session.run("go").await.unwrap();
    let decisions = HitlDecisions::from_json(&json!({
        "approvals": [{"id": "call_a", "approved": true, "decided_by": "cli"}],
        "deferred_results": [{"id": "call_d", "status": "completed", "value": 7}],
    }))
    .unwrap();
    let result = session.resume(decisions).await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(log.entries()[1], "ran by Some(\"cli\") with {}");
}

#[test]
fn malformed_decision_json_names_the_field() {
    let err = HitlDecisions::from_json(&json!({"approvals": [{"id": "x", "approved": "yes"}]})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid decisions: at `approvals[0].approved`: invalid type: string \"yes\", expected a boolean"
    );
    let err = HitlDecisions::from_json(&json!({"approvals": [], "approvels": []})).unwrap_err();
    assert!(err.to_string().contains("unknown field `approvels`"), "{err}");
}

#[tokio::test]
async fn approval_policy_gates_tools_by_name_toolset_metadata_and_star() {
    let Value::Object(risky) = json!({"risk": "network"}) else { unreachable!() };
    let cases: Vec<(&str, ApprovalRule)> = vec![
        ("name", ApprovalRule::from("fetch")),
        ("toolset name", ApprovalRule::from("net")),
        ("toolset id", ApprovalRule::from("net-v2")),
        ("metadata", ApprovalRule::Metadata(risky.clone())),
        ("star", ApprovalRule::from("*")),
    ];
    for (label, rule) in cases {
        let runs = Counter::default();
        let fetch = raw_tool(ToolBuilder::new("fetch").metadata(risky.clone()), {
            let runs = runs.clone();
            move |ctx: ToolContext, _: Args| {
                runs.bump();
                let approved = ctx.approval().is_some();
                async move { Ok(json!({"approved": approved})) }
            }
        });
        let model = calls_then_text(vec![call("c1", "fetch", json!({}))], "done");
        let agent = Agent::builder(model)
            .toolset(StaticToolset::new("net").with_id("net-v2").tool(fetch))
            .approval_required_tools([rule])
            .build()
            .unwrap();
        let mut session = agent.session();
        let waiting = session.run("go").await.unwrap();
        assert_eq!(waiting.status, RunStatus::Waiting, "{label}");
        assert_eq!(runs.get(), 0, "{label}: the tool never runs before its decision");
        assert!(waiting.hitl.approvals[0].reason.starts_with("tool `fetch` requires approval"), "{label}");
        let decision = waiting.hitl.approvals[0].approve();
        let result = session.resume(vec![decision]).await.unwrap();
        assert_eq!(runs.get(), 1, "{label}");
        assert_eq!(tool_returns(result.messages.messages())[0].content, json!({"approved": true}), "{label}");
    }
}

#[tokio::test]
async fn a_policy_leaves_unmatched_tools_alone() {
    let (runs, gated_runs) = (Counter::default(), Counter::default());
    let model = calls_then_text(vec![call("c1", "read", json!({})), call("c2", "write", json!({}))], "done");
    let agent = Agent::builder(model)
        .tool(plain("read", &runs))
        .tool(plain("write", &gated_runs))
        .approval_required_tools(["write"])
        .build()
        .unwrap();
    let waiting = agent.session().run("go").await.unwrap();
    assert_eq!((runs.get(), gated_runs.get()), (1, 0));
    assert_eq!(waiting.hitl.approvals.len(), 1);
}

/// A session waiting on one approval for `deploy` (call id `call_1`).
async fn waiting_session() -> (starweaver::Session, starweaver::RunResult, Counter) {
    let runs = Counter::default();
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("call_1", "deploy", json!({}))]),
        ModelResponse::text("done"),
        TestModel::tool_call_response([call("call_1", "deploy", json!({}))]),
        ModelResponse::text("done again"),
    ]));
    let agent = Agent::builder(model).tool(plain("deploy", &runs)).approval_required_tools(["deploy"]).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("deploy").await.unwrap();
    (session, waiting, runs)
}

#[tokio::test]
async fn unknown_decision_ids_are_refused_and_the_session_keeps_waiting() {
    let (mut session, waiting, runs) = waiting_session().await;
    let forged = starweaver::ApprovalDecision { id: "call_999".into(), approved: true, ..Default::default() };
    let err = session.resume(vec![forged]).await.unwrap_err();
    assert!(matches!(err, Error::UnknownDecision { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "unknown decision id `call_999`: no pending approval or deferred call has that id (pending: `{}:call_1`)",
            waiting.run_id
        )
    );
    assert_eq!(runs.get(), 0);
    let ok = session.resume(vec![waiting.hitl.approvals[0].approve()]).await.unwrap();
    assert_eq!(ok.status, RunStatus::Completed, "a refused resume changed nothing");
}

#[tokio::test]
async fn missing_decisions_are_refused() {
    let (mut session, waiting, _) = waiting_session().await;
    let err = session.resume(HitlDecisions::default()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "missing decision(s) for {}:call_1: every pending approval and deferred call needs one",
            waiting.run_id
        )
    );
}

#[tokio::test]
async fn decisions_for_another_run_are_refused() {
    let (mut first, first_waiting, _) = waiting_session().await;
    let (mut second, _, runs) = waiting_session().await;
    let err = second.resume(vec![first_waiting.hitl.approvals[0].approve()]).await.unwrap_err();
    assert!(matches!(err, Error::ForeignDecision { .. }), "{err}");
    assert!(err.to_string().contains(&format!("belongs to run `{}`", first_waiting.run_id)), "{err}");
    assert_eq!(runs.get(), 0);
    first.resume(vec![first_waiting.hitl.approvals[0].approve()]).await.unwrap();
}

#[tokio::test]
async fn replayed_decisions_are_refused() {
    let (mut session, waiting, runs) = waiting_session().await;
    let decision = waiting.hitl.approvals[0].approve();
    session.resume(vec![decision.clone()]).await.unwrap();
    let again = session.run("deploy again").await.unwrap();
    assert_eq!(again.status, RunStatus::Waiting);
    let err = session.resume(vec![decision]).await.unwrap_err();
    assert!(matches!(err, Error::ReplayedDecision { .. }), "{err}");
    assert_eq!(runs.get(), 1, "the replay ran nothing");
}

#[tokio::test]
async fn duplicate_and_mistyped_decisions_are_refused() {
    let (mut session, waiting, _) = waiting_session().await;
    let pending = &waiting.hitl.approvals[0];
    let err = session.resume(vec![pending.approve(), pending.deny("no")]).await.unwrap_err();
    assert!(matches!(err, Error::DuplicateDecision { .. }), "{err}");
    let as_deferred = starweaver::PendingDeferred(pending.0.clone()).complete(json!(1));
    let err = session.resume(vec![as_deferred]).await.unwrap_err();
    assert_eq!(err.to_string(), format!("`{}` is a pending approval, but was given a deferred result", pending.id));
    let err = session.resume(vec![pending.approve().override_arguments(json!([1]))]).await.unwrap_err();
    assert!(err.to_string().ends_with("`override_arguments` must be a JSON object, got an array"), "{err}");
}

#[tokio::test]
async fn resuming_a_session_that_is_not_waiting_and_running_one_that_is_are_refused() {
    let (mut session, waiting, _) = waiting_session().await;
    let err = session.run("another").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "session is waiting on run `{}` for 1 decision(s); resume it before starting a new run",
            waiting.run_id
        )
    );
    session.resume(vec![waiting.hitl.approvals[0].approve()]).await.unwrap();
    let err = session.resume(vec![waiting.hitl.approvals[0].approve()]).await.unwrap_err();
    assert!(matches!(err, Error::NotWaiting));
}

#[tokio::test]
async fn sessions_keep_their_history_across_runs() {
    let model = Arc::new(TestModel::new([ModelResponse::text("first"), ModelResponse::text("second")]));
    let agent = Agent::builder(model.clone()).instructions("Be brief.").build().unwrap();
    let mut session = agent.session();
    session.run("one").await.unwrap();
    let result = session.run("two").await.unwrap();
    assert_eq!(result.text(), Some("second"));
    let second_request = serde_json::to_value(&model.requests()[1].messages).unwrap();
    assert_eq!(
        second_request,
        json!([
            {"kind": "request", "parts": [{"kind": "system_prompt", "text": "Be brief."}, {"kind": "user_prompt", "text": "one"}]},
            {"kind": "response", "parts": [{"kind": "text", "text": "first"}]},
            {"kind": "request", "parts": [{"kind": "user_prompt", "text": "two"}]},
        ])
    );
    assert_eq!(session.history().messages().len(), 4);
}

#[tokio::test]
async fn completed_calls_of_a_waiting_response_keep_their_results_and_run_once() {
    let (runs, log) = (Counter::default(), Log::default());
    let model = calls_then_text(vec![call("c1", "read", json!({})), call("c2", "deploy", json!({}))], "done");
    let agent = Agent::builder(model.clone()).tool(plain("read", &runs)).tool(gated("deploy", &log)).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("go").await.unwrap();
    let result = session.resume(vec![waiting.hitl.approvals[0].approve()]).await.unwrap();
    assert_eq!(runs.get(), 1);
    let ids: Vec<_> =
        tool_returns(result.messages.messages()).into_iter().map(|r| r.tool_call_id.to_string()).collect();
    assert_eq!(ids, ["c1", "c2"], "returns stay in model order across the wait");
}

/// The deploy agent of the export tests, with a model script starting at `from`.
fn export_agent(from: usize, runs: &Counter) -> Agent {
    let script = [
        TestModel::tool_call_response([
            call("c_read", "read", json!({})),
            call("c_deploy", "deploy", json!({"env": "prod"})),
            call("c_job", "job", json!({})),
        ]),
        ModelResponse::text("all done"),
    ];
    let model = Arc::new(TestModel::new(script.into_iter().skip(from)));
    Agent::builder(model)
        .tool(plain("read", runs))
        .tool(plain("deploy", runs))
        .tool(deferred("job"))
        .approval_required_tools(["deploy"])
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_exported_waiting_session_resumes_elsewhere_exactly_as_in_process() {
    let runs = Counter::default();
    let mut original = export_agent(0, &runs).session();
    let waiting = original.run("go").await.unwrap();
    let state = original.export_state();
    let text = serde_json::to_string(&state).unwrap();
    assert!(text.contains("\"state\":\"approval\"") && text.contains("\"state\":\"deferred\""), "{text}");

    let decisions = |hitl: &starweaver::Hitl| HitlDecisions {
        approvals: vec![hitl.approvals[0].approve().decided_by("ops")],
        deferred_results: vec![hitl.deferred[0].complete(json!({"rows": 2}))],
        ..HitlDecisions::default()
    };
    let in_process = original.resume(decisions(&waiting.hitl)).await.unwrap();

    // Elsewhere: a fresh agent (its model continues the script) restores the JSON text.
    let fresh_runs = Counter::default();
    let agent = export_agent(1, &fresh_runs);
    let mut restored = agent.restore_session(&serde_json::from_str(&text).unwrap()).unwrap();
    assert_eq!(restored.pending(), Some(waiting.hitl.clone()));
    let resumed = restored.resume(decisions(&waiting.hitl)).await.unwrap();

    assert_eq!(resumed.status, RunStatus::Completed);
    assert_eq!(resumed.output, in_process.output);
    assert_eq!(resumed.messages.to_json(), in_process.messages.to_json());
    assert_eq!(serde_json::to_value(&resumed.events).unwrap(), serde_json::to_value(&in_process.events).unwrap());
    assert_eq!(fresh_runs.get(), 1, "only the approved call ran after the restore: `read` kept its result");
    let err = restored.resume(decisions(&waiting.hitl)).await.unwrap_err();
    assert!(matches!(err, Error::NotWaiting));
}

#[tokio::test]
async fn replayed_decisions_stay_refused_after_a_restore() {
    let runs = Counter::default();
    let agent = export_agent(0, &runs);
    let mut session = agent.session();
    let waiting = session.run("go").await.unwrap();
    let approval = waiting.hitl.approvals[0].approve();
    session
        .resume(HitlDecisions {
            approvals: vec![approval.clone()],
            deferred_results: vec![waiting.hitl.deferred[0].complete(json!(1))],
            ..HitlDecisions::default()
        })
        .await
        .unwrap();
    let mut restored = export_agent(0, &runs).restore_session(&session.export_state()).unwrap();
    restored.run("again").await.unwrap();
    let err = restored.resume(vec![approval]).await.unwrap_err();
    assert!(matches!(err, Error::ReplayedDecision { .. }), "{err}");
}

#[test]
fn malformed_session_state_is_refused_naming_what_is_wrong() {
    let agent = export_agent(0, &Counter::default());
    for (state, expected) in [
        (json!({"version": 2, "history": [], "decided": [], "waiting": null}), "version 2 is not supported"),
        (json!({"version": 1, "history": {}, "decided": [], "waiting": null}), "invalid history"),
        (json!({"version": 1, "history": [], "decided": [], "waiting": null, "extra": 1}), "unknown field `extra`"),
        (
            json!({"version": 1, "history": [], "decided": [], "waiting": {"run_id": "r", "step": 1, "retries": {}, "next_seq": 0, "slots": []}}),
            "needs the history to end with the model response",
        ),
    ] {
        let err = agent.restore_session(&state).err().unwrap().to_string();
        assert!(err.contains(expected), "{err}");
    }
}
