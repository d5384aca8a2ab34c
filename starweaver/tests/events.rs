//! DESIGN.md §9: ordered event streams, live, and tracing spans.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use futures::StreamExt;
use serde_json::json;
use starweaver::{Agent, EventKind, RunStatus, ToolBuilder, ToolContext};

fn kinds(events: &[starweaver::Event]) -> Vec<String> {
    events.iter().map(|e| serde_json::to_value(e).unwrap()["type"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn every_run_records_an_ordered_numbered_event_stream() {
    let tool = raw_tool(ToolBuilder::new("t"), |_: ToolContext, _: Args| async { Ok(ok()) });
    let agent = Agent::builder(calls_then_text(vec![call("c1", "t", json!({}))], "done")).tool(tool).build().unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(
        kinds(&result.events),
        [
            "run_start",
            "model_request",
            "model_response",
            "tool_call",
            "tool_return",
            "model_request",
            "model_response",
            "run_complete"
        ]
    );
    for (i, event) in result.events.iter().enumerate() {
        assert_eq!((event.seq, &*event.run_id), (i as u64, result.run_id.as_str()));
    }
    let json = serde_json::to_value(&result.events[4]).unwrap();
    assert_eq!(json["type"], "tool_return");
    assert_eq!(json["tool_call_id"], "c1");
    assert_eq!(json["content"], ok());
}

#[tokio::test]
async fn waits_and_resumes_are_events_and_sequence_numbers_continue() {
    let tool = raw_tool(ToolBuilder::new("deploy"), |_: ToolContext, _: Args| async { Ok(ok()) });
    let agent = Agent::builder(calls_then_text(vec![call("c1", "deploy", json!({}))], "done"))
        .tool(tool)
        .approval_required_tools(["deploy"])
        .build()
        .unwrap();
    let mut session = agent.session();
    let waiting = session.run("go").await.unwrap();
    assert_eq!(
        kinds(&waiting.events),
        ["run_start", "model_request", "model_response", "tool_call", "approval_requested", "waiting"]
    );
    let resumed = session.resume(vec![waiting.hitl.approvals[0].approve()]).await.unwrap();
    assert_eq!(
        kinds(&resumed.events),
        ["run_resumed", "tool_call", "tool_return", "model_request", "model_response", "run_complete"]
    );
    assert_eq!(resumed.events[0].seq, waiting.events.len() as u64);
}

#[tokio::test]
async fn failed_and_retried_runs_report_it_in_events() {
    let tool = raw_tool(ToolBuilder::new("t").max_retries(1), |ctx: ToolContext, _: Args| async move {
        if ctx.attempt() == 1 { Err(starweaver::ToolError::execution("flaky")) } else { Ok(ok()) }
    });
    let agent = Agent::builder(calls_then_text(vec![call("c1", "t", json!({}))], "done"))
        .tool(tool)
        .max_steps(1)
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Failed);
    let kinds = kinds(&result.events);
    assert_eq!(kinds[3..], ["tool_call", "tool_retry", "tool_return", "run_failed"]);
}

#[tokio::test]
async fn the_stream_yields_events_live_before_a_slow_tool_finishes() {
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = Arc::new(Mutex::new(Some(released)));
    let tool = raw_tool(ToolBuilder::new("slow"), move |_: ToolContext, _: Args| {
        let gate = released.lock().unwrap().take().unwrap();
        async move {
            gate.await.unwrap();
            Ok(ok())
        }
    });
    let agent =
        Agent::builder(calls_then_text(vec![call("c1", "slow", json!({}))], "done")).tool(tool).build().unwrap();
    let mut stream = agent.run_stream("go");
    let mut seen = Vec::new();
    // The tool only finishes once the test has seen its `tool_call` event: if events
    // were delivered at the end, this loop would never end.
    while let Some(event) = stream.next().await {
        if matches!(event.kind, EventKind::ToolCall { .. }) {
            seen.push("tool_call");
            break;
        }
    }
    release.send(()).unwrap();
    let rest: Vec<_> = (&mut stream).collect().await;
    assert_eq!(seen, ["tool_call"]);
    assert!(matches!(rest.last().unwrap().kind, EventKind::RunComplete { .. }));
    let result = stream.result().await.unwrap();
    assert_eq!(result.output.as_deref(), Some("done"));
    assert_eq!(result.events.len(), 4 + rest.len(), "the result holds the whole stream");
}

#[tokio::test]
async fn private_metadata_appears_in_events_but_never_in_model_requests() {
    let tool = raw_tool(ToolBuilder::new("t"), |_: ToolContext, _: Args| async {
        Ok(starweaver::ToolResult::new(json!(1)).with_private_metadata(json!({"trace_id": "secret-7"})))
    });
    let model = calls_then_text(vec![call("c1", "t", json!({}))], "done");
    let result = Agent::builder(model.clone()).tool(tool).build().unwrap().run("go").await.unwrap();
    let events = serde_json::to_string(&result.events).unwrap();
    assert!(events.contains("secret-7"));
    assert!(!serde_json::to_string(&model.requests()).unwrap().contains("secret-7"));
}

#[tokio::test]
async fn a_session_stream_resumes_a_waiting_run() {
    let tool = raw_tool(ToolBuilder::new("deploy"), |_: ToolContext, _: Args| async { Ok(ok()) });
    let agent = Agent::builder(calls_then_text(vec![call("c1", "deploy", json!({}))], "done"))
        .tool(tool)
        .approval_required_tools(["*"])
        .build()
        .unwrap();
    let mut session = agent.session();
    let events: Vec<_> = session.run_stream("go").collect().await;
    let EventKind::ApprovalRequested(pending) = &events[4].kind else { panic!("{:?}", events[4]) };
    let decision = pending.approve();
    let resumed: Vec<_> = session.resume_stream(vec![decision]).collect().await;
    assert!(matches!(resumed.last().unwrap().kind, EventKind::RunComplete { .. }));
}
