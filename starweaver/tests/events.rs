//! DESIGN.md §9: ordered event streams, live, and tracing spans.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use futures::StreamExt;
use serde_json::json;
use starweaver::tool::LogLevel;
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
    assert_eq!(result.text(), Some("done"));
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

/// A tool that reports progress `reports` times and logs twice, as `name`.
fn chatty(name: &str, reports: u32) -> impl starweaver::Tool {
    raw_tool(ToolBuilder::new(name), move |ctx: ToolContext, _: Args| async move {
        ctx.log(LogLevel::Info, "starting", None);
        for done in 1..=reports {
            ctx.report_progress(f64::from(done), Some(f64::from(reports)), Some("indexing"))?;
        }
        ctx.log(LogLevel::Warning, "one file skipped", Some(json!({"file": "a.bin"})));
        Ok(ok())
    })
}

#[tokio::test]
async fn progress_and_logs_are_events_live_and_the_kept_log_holds_each_calls_last_progress() {
    let calls = vec![call("c1", "index", json!({})), call("c2", "scan", json!({}))];
    let agent =
        Agent::builder(calls_then_text(calls, "done")).tool(chatty("index", 50)).tool(chatty("scan", 3)).build();
    let mut stream = agent.unwrap().run_stream("go");
    let live: Vec<_> = (&mut stream).collect().await;
    let result = stream.result().await.unwrap();
    let progress_of = |events: &[starweaver::Event], id: &str| -> Vec<f64> {
        events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ToolProgress { tool_call_id, progress, .. } if &**tool_call_id == id => Some(*progress),
                _ => None,
            })
            .collect()
    };
    let all: Vec<f64> = (1..=50).map(f64::from).collect();
    assert_eq!(progress_of(&live, "c1"), all, "a live stream gets every report");
    assert_eq!(progress_of(&result.events, "c1"), [50.0], "the kept log only the last");
    assert_eq!(progress_of(&result.events, "c2"), [3.0]);
    // The kept events are the live ones less the earlier reports, in the same order.
    let kept: Vec<u64> = result.events.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = live
        .iter()
        .filter(|e| result.events.iter().any(|k| k.seq == e.seq) || !matches!(e.kind, EventKind::ToolProgress { .. }))
        .map(|e| e.seq)
        .collect();
    assert_eq!(kept, expected);
    assert!(kept.windows(2).all(|w| w[0] < w[1]), "{kept:?}");
    let last = result
        .events
        .iter()
        .find(|e| matches!(&e.kind, EventKind::ToolProgress { tool_call_id, .. } if &**tool_call_id == "c1"));
    assert_eq!(
        serde_json::to_value(last.unwrap()).unwrap(),
        json!({"seq": last.unwrap().seq, "run_id": result.run_id, "type": "tool_progress", "tool_call_id": "c1",
               "name": "index", "progress": 50.0, "total": 50.0, "message": "indexing"})
    );
    let logs: Vec<_> = result
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolLog { tool_call_id, level, message, data, .. } if &**tool_call_id == "c1" => {
                Some((*level, message.as_str(), data.as_deref().cloned()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        logs,
        [(LogLevel::Info, "starting", None), (LogLevel::Warning, "one file skipped", Some(json!({"file": "a.bin"})))]
    );
    // Each event comes after its call's `tool_call` and before its `tool_return`.
    let position = |what: &dyn Fn(&EventKind) -> bool| result.events.iter().position(|e| what(&e.kind)).unwrap();
    let started = position(&|k| matches!(k, EventKind::ToolCall { tool_call_id, .. } if &**tool_call_id == "c1"));
    let returned = position(&|k| matches!(k, EventKind::ToolReturn(r) if &*r.part.tool_call_id == "c1"));
    let reported = position(&|k| matches!(k, EventKind::ToolProgress { tool_call_id, .. } if &**tool_call_id == "c1"));
    assert!(started < reported && reported < returned);
    // Nothing a tool reports reaches the model.
    let history = serde_json::to_string(&result.messages.to_json()).unwrap();
    assert!(!history.contains("indexing") && !history.contains("one file skipped"), "{history}");
}

#[tokio::test]
async fn a_calls_span_holds_its_last_progress_and_its_logs_as_span_events() {
    let agent = Agent::builder(calls_then_text(vec![call("c1", "index", json!({}))], "done"))
        .tool(chatty("index", 20))
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    let span = result.trace.spans.iter().find(|s| s.tool_call_id.as_deref() == Some("c1")).unwrap();
    let names: Vec<&str> = span.events.iter().map(|e| e.name).collect();
    assert_eq!(names, ["tool_log", "tool_progress", "tool_log"]);
    assert_eq!(span.events[1].attributes["progress"], json!(20.0));
    assert_eq!(span.events[2].attributes["data"], json!(r#"{"file":"a.bin"}"#));
    assert!(span.events.windows(2).all(|w| w[0].at_us <= w[1].at_us));
}

#[tokio::test]
async fn a_report_that_is_not_a_finite_number_is_the_tools_user_error() {
    let tool = raw_tool(ToolBuilder::new("bad"), |ctx: ToolContext, _: Args| async move {
        ctx.report_progress(1.0, Some(f64::NAN), None)?;
        Ok(ok())
    });
    let agent = Agent::builder(calls_then_text(vec![call("c1", "bad", json!({}))], "done")).tool(tool).build();
    let result = agent.unwrap().run("go").await.unwrap();
    let returns = tool_returns(result.messages.messages());
    assert_eq!(returns[0].content["kind"], "user_error");
    assert_eq!(returns[0].content["message"], "progress `total` must be a finite number, got NaN");
    assert!(!result.events.iter().any(|e| matches!(e.kind, EventKind::ToolProgress { .. })));
}

#[tokio::test]
async fn a_tool_that_keeps_its_context_past_its_call_cannot_report_into_the_run() {
    type Gate = Arc<Mutex<Option<tokio::sync::oneshot::Receiver<()>>>>;
    let (go, gate) = tokio::sync::oneshot::channel::<()>();
    let (reported, done) = tokio::sync::oneshot::channel::<()>();
    let gate: Gate = Arc::new(Mutex::new(Some(gate)));
    let done: Gate = Arc::new(Mutex::new(Some(done)));
    let reported = Arc::new(Mutex::new(Some(reported)));
    let go = Arc::new(Mutex::new(Some(go)));
    // `early` returns at once, leaving a task that reports once `late` runs.
    let early = raw_tool(ToolBuilder::new("early"), move |ctx: ToolContext, _: Args| {
        let (gate, reported) = (gate.lock().unwrap().take().unwrap(), reported.lock().unwrap().take().unwrap());
        tokio::spawn(async move {
            gate.await.unwrap();
            ctx.report_progress(99.0, None, Some("after my call ended")).unwrap();
            ctx.log(LogLevel::Info, "after my call ended", None);
            reported.send(()).unwrap();
        });
        async { Ok(ok()) }
    });
    let late = raw_tool(ToolBuilder::new("late"), move |_: ToolContext, _: Args| {
        let (go, done) = (go.lock().unwrap().take().unwrap(), done.lock().unwrap().take().unwrap());
        async move {
            go.send(()).unwrap();
            done.await.unwrap();
            Ok(ok())
        }
    });
    let model = Arc::new(starweaver::testing::TestModel::new([
        starweaver::testing::TestModel::tool_call_response([call("c1", "early", json!({}))]),
        starweaver::testing::TestModel::tool_call_response([call("c2", "late", json!({}))]),
        starweaver::ModelResponse::text("done"),
    ]));
    let agent = Agent::builder(model).tool(early).tool(late).build().unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    let stale =
        result.events.iter().any(|e| matches!(e.kind, EventKind::ToolProgress { .. } | EventKind::ToolLog { .. }));
    assert!(!stale, "{:?}", kinds(&result.events));
    assert!(result.trace.spans.iter().all(|s| s.events.is_empty()));
}
