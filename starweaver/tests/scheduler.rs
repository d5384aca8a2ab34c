//! DESIGN.md §6: how the calls of one model response are scheduled.
//! Tokio's paused clock makes "ran concurrently" a deterministic fact about virtual time.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use starweaver::{Agent, RunStatus, ToolBuilder, ToolContext};
use tokio::time::{Instant, sleep};

fn sleeper(name: &str, ms: u64, log: &Log, flight: &InFlight) -> impl starweaver::Tool {
    let (log, flight, name_owned) = (log.clone(), flight.clone(), name.to_owned());
    raw_tool(ToolBuilder::new(name), move |_ctx: ToolContext, args: Args| {
        let (log, flight, name) = (log.clone(), flight.clone(), name_owned.clone());
        async move {
            let _guard = flight.enter();
            let tag = args.get("tag").and_then(|t| t.as_str()).unwrap_or(&name).to_owned();
            log.push(format!("{tag} start"));
            sleep(Duration::from_millis(ms)).await;
            log.push(format!("{tag} end"));
            Ok(ok())
        }
    })
}

#[tokio::test(start_paused = true)]
async fn calls_of_one_response_run_concurrently_by_default() {
    let (log, flight) = (Log::default(), InFlight::default());
    let tools = ["a", "b", "c"].map(|n| sleeper(n, 100, &log, &flight));
    let model =
        calls_then_text(vec![call("1", "a", json!({})), call("2", "b", json!({})), call("3", "c", json!({}))], "done");
    let mut builder = Agent::builder(model);
    for t in tools {
        builder = builder.tool(t);
    }
    let started = Instant::now();
    let result = builder.build().unwrap().run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(started.elapsed(), Duration::from_millis(100), "three 100 ms calls overlapped");
    assert_eq!(flight.peak(), 3);
}

#[tokio::test(start_paused = true)]
async fn sequential_call_is_a_barrier() {
    let (log, flight) = (Log::default(), InFlight::default());
    let seq_log = log.clone();
    let audit = raw_tool(ToolBuilder::new("audit").sequential(true), move |_: ToolContext, _: Args| {
        let log = seq_log.clone();
        async move {
            log.push("audit start");
            sleep(Duration::from_millis(10)).await;
            log.push("audit end");
            Ok(ok())
        }
    });
    let model = calls_then_text(
        vec![call("1", "slow", json!({})), call("2", "audit", json!({})), call("3", "fast", json!({}))],
        "done",
    );
    let agent = Agent::builder(model)
        .tool(sleeper("slow", 100, &log, &flight))
        .tool(audit)
        .tool(sleeper("fast", 1, &log, &flight))
        .build()
        .unwrap();
    agent.run("go").await.unwrap();
    assert_eq!(log.entries(), ["slow start", "slow end", "audit start", "audit end", "fast start", "fast end"]);
}

#[tokio::test(start_paused = true)]
async fn same_name_calls_run_one_at_a_time_in_model_order_while_other_tools_overlap() {
    let (log, write_flight, other_flight) = (Log::default(), InFlight::default(), InFlight::default());
    let model = calls_then_text(
        vec![
            call("1", "write", json!({"tag": "w1"})),
            call("2", "read", json!({"tag": "r1"})),
            call("3", "write", json!({"tag": "w2"})),
            call("4", "write", json!({"tag": "w3"})),
        ],
        "done",
    );
    let agent = Agent::builder(model)
        .tool(sleeper("write", 50, &log, &write_flight))
        .tool(sleeper("read", 120, &log, &other_flight))
        .build()
        .unwrap();
    let started = Instant::now();
    agent.run("go").await.unwrap();
    assert_eq!(write_flight.peak(), 1, "writes never overlapped");
    assert!(log.position("w1 end") < log.position("w2 start") && log.position("w2 end") < log.position("w3 start"));
    assert!(log.position("r1 start") < log.position("w1 end"), "the unrelated read overlapped the writes");
    assert_eq!(started.elapsed(), Duration::from_millis(150), "3 × 50 ms of writes alongside a 120 ms read");
}

#[tokio::test(start_paused = true)]
async fn results_enter_the_history_in_model_order_whatever_order_they_finished_in() {
    let (log, flight) = (Log::default(), InFlight::default());
    let model = calls_then_text(vec![call("slow_1", "slow", json!({})), call("fast_1", "fast", json!({}))], "done");
    let agent = Agent::builder(model)
        .tool(sleeper("slow", 100, &log, &flight))
        .tool(sleeper("fast", 1, &log, &flight))
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    assert!(log.position("fast end") < log.position("slow end"));
    let ids: Vec<_> =
        tool_returns(result.messages.messages()).into_iter().map(|r| r.tool_call_id.to_string()).collect();
    assert_eq!(ids, ["slow_1", "fast_1"]);
}

#[tokio::test(start_paused = true)]
async fn a_concurrency_cap_limits_calls_in_flight() {
    let (log, flight) = (Log::default(), InFlight::default());
    let names = ["t1", "t2", "t3", "t4", "t5"];
    let calls = names.iter().enumerate().map(|(i, n)| call(&i.to_string(), n, json!({}))).collect();
    let mut builder = Agent::builder(calls_then_text(calls, "done")).max_concurrency(2);
    for n in names {
        builder = builder.tool(sleeper(n, 10, &log, &flight));
    }
    let started = Instant::now();
    builder.build().unwrap().run("go").await.unwrap();
    assert_eq!(flight.peak(), 2);
    assert_eq!(started.elapsed(), Duration::from_millis(30), "five 10 ms calls, two at a time");
}

#[tokio::test(start_paused = true)]
async fn concurrency_is_unbounded_by_default() {
    let (log, flight) = (Log::default(), InFlight::default());
    let names: Vec<String> = (0..20).map(|i| format!("t{i}")).collect();
    let calls = names.iter().map(|n| call(n, n, json!({}))).collect();
    let mut builder = Agent::builder(calls_then_text(calls, "done"));
    for n in &names {
        builder = builder.tool(sleeper(n, 10, &log, &flight));
    }
    builder.build().unwrap().run("go").await.unwrap();
    assert_eq!(flight.peak(), 20);
}

#[test]
fn a_zero_concurrency_cap_is_rejected() {
    let err = Agent::builder(calls_then_text(vec![], "x")).max_concurrency(0).build().err().unwrap();
    assert_eq!(err.to_string(), "invalid option `max_concurrency`: must be at least 1");
}

/// A tool that runs the chains it is offered ahead, recording the calls it ran there; a
/// call whose id is in `fail` fails there, and one in `abandon` is dropped unsettled.
struct Offered {
    definition: starweaver::ToolDefinition,
    ran: std::sync::Arc<std::sync::Mutex<Vec<Vec<String>>>>,
    fail: &'static [&'static str],
    abandon: &'static [&'static str],
}

impl starweaver::Tool for Offered {
    fn definition(&self) -> &starweaver::ToolDefinition {
        &self.definition
    }

    fn call<'a>(
        &'a self,
        _: ToolContext,
        _: &'a serde_json::Value,
    ) -> futures::future::BoxFuture<'a, Result<starweaver::ToolResult, starweaver::ToolError>> {
        Box::pin(async { Ok(starweaver::ToolResult::new(json!("called"))) })
    }

    fn runs_ahead(&self) -> Option<&dyn starweaver::RunsAhead> {
        Some(self)
    }
}

impl starweaver::RunsAhead for Offered {
    fn lane(&self, calls: usize) -> Option<Box<dyn starweaver::run_ahead::ChainLane>> {
        let ran = self.ran.clone();
        ran.lock().unwrap().push(Vec::with_capacity(calls));
        Some(Box::new(OfferedLane { ran, fail: self.fail, abandon: self.abandon }))
    }
}

struct OfferedLane {
    ran: std::sync::Arc<std::sync::Mutex<Vec<Vec<String>>>>,
    fail: &'static [&'static str],
    abandon: &'static [&'static str],
}

impl starweaver::run_ahead::ChainLane for OfferedLane {
    fn run(self: Box<Self>, mut chain: starweaver::run_ahead::Chain) {
        while let Some((call, settle)) = chain.next_call() {
            assert!(call.ctx.attempt() == 1 && call.arguments.is_object());
            let id = call.ctx.tool_call_id().to_owned();
            self.ran.lock().unwrap().last_mut().unwrap().push(id.clone());
            if self.abandon.contains(&id.as_str()) {
                continue;
            }
            settle.settle(if self.fail.contains(&id.as_str()) {
                Err(starweaver::ToolError::model_retry("not ahead"))
            } else {
                Ok(starweaver::ToolResult::new(json!(format!("ahead {id}"))))
            });
        }
    }
}

/// The chains run ahead, and each call's return, for calls `a b a a` where `a` runs ahead.
async fn offered_chains(
    definition: starweaver::ToolDefinition,
    fail: &'static [&'static str],
    abandon: &'static [&'static str],
    configure: fn(starweaver::AgentBuilder) -> starweaver::AgentBuilder,
) -> (Vec<Vec<String>>, Vec<serde_json::Value>) {
    let ran = std::sync::Arc::default();
    let a = Offered { definition, ran: std::sync::Arc::clone(&ran), fail, abandon };
    let b = sleeper("b", 1, &Log::default(), &InFlight::default());
    let calls = ["a", "b", "a", "a"].iter().enumerate().map(|(i, n)| call(&format!("c{i}"), n, json!({}))).collect();
    let agent = configure(Agent::builder(calls_then_text(calls, "done")).tool(a).tool(b)).build().unwrap();
    let result = agent.run("go").await.unwrap();
    // Approval-gated calls leave the run waiting; every other case completes.
    assert_ne!(result.status, RunStatus::Failed);
    let returns = tool_returns(result.messages.messages()).into_iter().filter(|r| &*r.name == "a");
    (ran.lock().unwrap().clone(), returns.map(|r| r.content).collect())
}

#[tokio::test]
async fn a_run_of_calls_to_one_tool_is_run_ahead_once_as_a_chain_and_only_when_it_can_be() {
    let a = || starweaver::ToolDefinition::new("a", json!({"type": "object"}));
    let (ran, returns) = offered_chains(a(), &[], &[], |b| b).await;
    assert_eq!(ran, [["c0", "c2", "c3"]], "`b` is alone; `a` once, at its head");
    assert_eq!(returns, [json!("ahead c0"), json!("ahead c2"), json!("ahead c3")]);
    for (configure, why) in [
        ((|b| b) as fn(_) -> _, "a timed call is never run ahead"),
        (|b: starweaver::AgentBuilder| b.max_concurrency(8), "nor under a concurrency cap"),
        (|b: starweaver::AgentBuilder| b.approval_required_tools(["a"]), "nor a call that must wait for approval"),
    ] {
        let definition = if why.starts_with("a timed") { a().with_timeout_ms(1_000) } else { a() };
        let (ran, _) = offered_chains(definition, &[], &[], configure).await;
        assert!(ran.is_empty(), "{why}: {ran:?}");
    }
}

#[tokio::test]
async fn a_chain_runs_nothing_after_a_call_that_failed_or_was_left_unsettled() {
    let a = || starweaver::ToolDefinition::new("a", json!({"type": "object"}));
    let (ran, returns) = offered_chains(a(), &["c2"], &[], |b| b).await;
    assert_eq!(ran, [["c0", "c2"]], "the lane is handed nothing after a failure");
    assert_eq!(returns[1]["kind"], "model_retry", "the failure is the call's first attempt: {returns:?}");
    assert_eq!(returns[2], json!("called"), "the rest take the ordinary path");

    let (ran, returns) = offered_chains(a(), &[], &["c0"], |b| b).await;
    assert_eq!(ran, [["c0"]]);
    assert_eq!(returns, [json!("called"), json!("called"), json!("called")]);
}
