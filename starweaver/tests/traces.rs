//! DESIGN.md §9: a run's `trace` (the subscriber-side test is alone in `spans.rs`).
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::*;
use serde_json::json;
use starweaver::{Agent, CancellationToken, RunOptions, SpanKind, ToolBuilder, ToolContext};

#[tokio::test]
async fn a_waiting_call_and_a_resume_are_traced_too() {
    let gated = raw_tool(ToolBuilder::new("gated"), |_: ToolContext, _: Args| async { Ok(ok()) });
    let model = calls_then_text(vec![call("c1", "gated", json!({}))], "done");
    let agent = Agent::builder(model).tool(gated).approval_required_tools(["gated"]).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("go").await.unwrap();
    let outcomes: Vec<_> = waiting.trace.spans.iter().map(|s| (s.kind, s.outcome)).collect();
    assert_eq!(outcomes[0], (SpanKind::Run, Some("waiting")));
    assert_eq!(outcomes[3], (SpanKind::ToolCall, Some("approval_required")));

    let done = session.resume(vec![waiting.hitl.approvals[0].approve()]).await.unwrap();
    let spans: Vec<_> = done.trace.spans.iter().map(|s| (s.kind, s.parent, s.outcome)).collect();
    assert_eq!(
        spans,
        [
            (SpanKind::Run, None, Some("completed")),
            (SpanKind::ToolCall, Some(0), Some("ok")),
            (SpanKind::Step, Some(0), Some("completed")),
            (SpanKind::ModelRequest, Some(2), Some("ok")),
        ],
        "the approved call runs under the resumed run, before its next step"
    );
}

#[tokio::test]
async fn a_cancelled_run_closes_its_open_spans_as_cancelled() {
    let stuck = raw_tool(ToolBuilder::new("stuck"), |_: ToolContext, _: Args| async {
        std::future::pending::<()>().await;
        Ok(ok())
    });
    let agent =
        Agent::builder(calls_then_text(vec![call("c1", "stuck", json!({}))], "never")).tool(stuck).build().unwrap();
    let cancellation = CancellationToken::new();
    let cancel = cancellation.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        cancel.cancel();
    });
    let options = RunOptions { cancellation: Some(cancellation), ..RunOptions::default() };
    let result = agent.run_with("go", options).await.unwrap();
    let outcomes: Vec<_> = result.trace.spans.iter().map(|s| (s.kind, s.outcome)).collect();
    assert_eq!(
        outcomes,
        [
            (SpanKind::Run, Some("cancelled")),
            (SpanKind::Step, Some("tool_calls")),
            (SpanKind::ModelRequest, Some("ok")),
            (SpanKind::ToolCall, Some("cancelled")),
        ]
    );
    let summary = result.trace.to_string();
    assert!(summary.starts_with(&format!("run {} cancelled: ", result.run_id)), "{summary}");
    assert!(summary.contains("\n    tool_call stuck c1: "), "{summary}");
}
