//! DESIGN.md §18: concurrency limits beside the run's cap — a tool's own, a toolset's, and
//! named limits shared across tools, toolsets, agents and runs of one process; in process
//! and in a durable run. Tokio's paused clock makes "ran at once" a deterministic fact.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::json;
use starweaver::durable::{DurableRun, Step};
use starweaver::{
    Agent, CancellationToken, ConcurrencyLimit, EventKind, RunOptions, RunStatus, StaticToolset, ToolBuilder,
    ToolContext, Toolset,
};
use tokio::time::{Instant, sleep};

/// A tool that takes `ms` of virtual time, logging when each call starts.
fn sleeper(builder: ToolBuilder, ms: u64, log: &Log, flight: &InFlight) -> impl starweaver::Tool + use<> {
    let (log, flight) = (log.clone(), flight.clone());
    raw_tool(builder, move |ctx: ToolContext, _: Args| {
        let (log, flight) = (log.clone(), flight.clone());
        async move {
            let _guard = flight.enter();
            log.push(ctx.tool_call_id().to_string());
            sleep(Duration::from_millis(ms)).await;
            Ok(ok())
        }
    })
}

/// The limits each call's `tool_call` event says it queued for, by call id.
fn queued(events: &[starweaver::Event]) -> Vec<(String, Vec<String>)> {
    events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::ToolCall { tool_call_id, queued_for, .. } => {
                Some((tool_call_id.to_string(), queued_for.iter().map(ToString::to_string).collect()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_tools_own_limit_holds_across_concurrent_runs() {
    let (log, flight) = (Log::default(), InFlight::default());
    let search: Arc<dyn starweaver::Tool> =
        Arc::new(sleeper(ToolBuilder::new("search").max_concurrency(2), 10, &log, &flight));
    // Each run gets an agent (and a scripted model) of its own over the one tool object.
    let agents: Vec<Agent> = (0..5)
        .map(|_| {
            let model = calls_then_text(vec![call("c", "search", json!({}))], "done");
            Agent::builder(model).shared_tool(search.clone()).build().unwrap()
        })
        .collect();
    let started = Instant::now();
    let results = futures::future::join_all(agents.iter().map(|agent| agent.run("go"))).await;
    assert!(results.iter().all(|r| r.as_ref().unwrap().status == RunStatus::Completed));
    assert_eq!(flight.peak(), 2, "five runs, one call each, two at a time");
    assert_eq!(started.elapsed(), Duration::from_millis(30));
}

#[tokio::test(start_paused = true)]
async fn a_shared_limit_holds_across_tools_and_the_queued_call_says_what_it_waited_for() {
    let (log, flight) = (Log::default(), InFlight::default());
    let api = ConcurrencyLimit::shared("test-shared-api", 1).unwrap();
    let model = calls_then_text(vec![call("c1", "fetch", json!({})), call("c2", "lookup", json!({}))], "done");
    let agent = Agent::builder(model)
        .tool(sleeper(ToolBuilder::new("fetch").max_concurrency(api.clone()), 10, &log, &flight))
        .tool(sleeper(ToolBuilder::new("lookup").max_concurrency(api), 10, &log, &flight))
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(flight.peak(), 1, "two tools, one limit of 1");
    assert_eq!(
        queued(&result.events),
        [("c1".into(), vec![]), ("c2".into(), vec!["test-shared-api".to_owned()])],
        "the second call queued behind the first"
    );
}

#[tokio::test(start_paused = true)]
async fn a_shared_limit_holds_across_agents() {
    let (log, flight) = (Log::default(), InFlight::default());
    let agents: Vec<Agent> = (0..3)
        .map(|i| {
            Agent::builder(calls_then_text(vec![call("c", &format!("t{i}"), json!({}))], "done"))
                .tool(sleeper(ToolBuilder::new(format!("t{i}")), 10, &log, &flight))
                .max_concurrency(ConcurrencyLimit::shared("test-agents", 1).unwrap())
                .build()
                .unwrap()
        })
        .collect();
    let started = Instant::now();
    futures::future::join_all(agents.iter().map(|agent| agent.run("go"))).await;
    assert_eq!(flight.peak(), 1);
    assert_eq!(started.elapsed(), Duration::from_millis(30), "three agents took turns");
}

#[tokio::test(start_paused = true)]
async fn a_toolsets_limit_caps_its_tools_calls_together_and_queued_calls_start_in_model_order() {
    let (log, flight) = (Log::default(), InFlight::default());
    let mut ops = StaticToolset::new("ops");
    for name in ["a", "b", "c", "d"] {
        ops = ops.tool(sleeper(ToolBuilder::new(name), 10, &log, &flight));
    }
    let calls = ["d", "a", "c", "b"].iter().map(|n| call(&format!("call_{n}"), n, json!({}))).collect();
    let agent = Agent::builder(calls_then_text(calls, "done")).toolset(ops.with_max_concurrency(2)).build().unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(flight.peak(), 2);
    assert_eq!(log.entries(), ["call_d", "call_a", "call_c", "call_b"], "queued calls start in model order");
    let waited: Vec<_> = queued(&result.events).into_iter().filter(|(_, limits)| !limits.is_empty()).collect();
    assert_eq!(
        waited,
        [("call_c".into(), vec!["toolset:ops".to_owned()]), ("call_b".into(), vec!["toolset:ops".to_owned()])]
    );
}

#[tokio::test(start_paused = true)]
async fn a_queued_calls_timeout_starts_when_it_starts() {
    let (log, flight) = (Log::default(), InFlight::default());
    let one = ConcurrencyLimit::shared("test-timeout", 1).unwrap();
    let model = calls_then_text(vec![call("c1", "first", json!({})), call("c2", "second", json!({}))], "done");
    let agent = Agent::builder(model)
        .tool(sleeper(ToolBuilder::new("first").max_concurrency(one.clone()), 40, &log, &flight))
        .tool(sleeper(ToolBuilder::new("second").max_concurrency(one).timeout_ms(50), 40, &log, &flight))
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    let returns = tool_returns(result.messages.messages());
    assert!(returns.iter().all(|r| !r.is_error), "the second call waited 40 ms and ran 40 ms of its 50: {returns:?}");
}

#[tokio::test(start_paused = true)]
async fn a_queued_call_is_cancelled_with_the_run() {
    let (log, flight) = (Log::default(), InFlight::default());
    let model = calls_then_text(vec![call("c1", "slow", json!({})), call("c2", "other", json!({}))], "done");
    let one = ConcurrencyLimit::shared("test-cancel", 1).unwrap();
    let agent = Agent::builder(model)
        .tool(sleeper(ToolBuilder::new("slow").max_concurrency(one.clone()), 1_000, &log, &flight))
        .tool(sleeper(ToolBuilder::new("other").max_concurrency(one), 10, &log, &flight))
        .build()
        .unwrap();
    let cancellation = CancellationToken::new();
    let cancel = cancellation.clone();
    tokio::spawn(async move {
        sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let result = agent.run_with("go", RunOptions { cancellation: Some(cancellation), ..Default::default() }).await;
    assert_eq!(result.unwrap().status, RunStatus::Cancelled);
    assert_eq!(log.entries(), ["c1"], "the queued call never started");
    // The places were given back: the limit serves the next run at once.
    assert_eq!(flight.peak(), 1);
}

#[test]
fn a_limit_of_zero_or_one_name_with_two_sizes_is_refused_by_name() {
    let shared = ConcurrencyLimit::shared("test-sizes", 2).unwrap();
    let error = ConcurrencyLimit::shared("test-sizes", 3).unwrap_err().to_string();
    assert!(error.contains("`test-sizes` is 2 in this process already"), "{error}");
    assert!(ConcurrencyLimit::shared("test-zero", 0).unwrap_err().to_string().contains("at least 1 call"));
    drop(shared);
    assert!(ConcurrencyLimit::shared("test-sizes", 3).is_ok(), "a name no one holds any more is free");

    let zero_tool = ToolBuilder::new("t").max_concurrency(0).handler(|_: ToolContext, _: Args| async { Ok(ok()) });
    let error = zero_tool.err().unwrap().to_string();
    assert!(error.contains("`max_concurrency` must be at least 1"), "{error}");

    let zero_toolset = StaticToolset::new("ops")
        .tool(raw_tool(ToolBuilder::new("t"), |_: ToolContext, _: Args| async { Ok(ok()) }))
        .with_max_concurrency(0);
    let error = Agent::builder(calls_then_text(vec![], "x")).toolset(zero_toolset).build().err().unwrap().to_string();
    assert!(error.contains("toolset `ops`'s `max_concurrency` must be at least 1"), "{error}");
}

#[test]
fn a_definitions_limit_reads_back_as_the_same_shared_limit() {
    let limit = ConcurrencyLimit::shared("test-serde", 4).unwrap();
    let definition = starweaver::ToolDefinition::new("t", json!({"type": "object"})).with_max_concurrency(limit);
    let json = serde_json::to_value(&definition).unwrap();
    assert_eq!(json["max_concurrency"], json!({"name": "test-serde", "max_running": 4}));
    let back: starweaver::ToolDefinition = serde_json::from_value(json).unwrap();
    assert_eq!(back, definition);
    let own: starweaver::ToolDefinition =
        serde_json::from_value(json!({"name": "t", "parameters": {"type": "object"}, "max_concurrency": 2})).unwrap();
    assert_eq!(own.max_concurrency.unwrap().max_running(), 2);
    // A definition stored when the limit had another size (a durable run's recorded
    // listing) reads back as the process's limit of that name.
    let older = json!({"name": "t", "parameters": {"type": "object"}, "max_concurrency": {"name": "test-serde", "max_running": 5}});
    let read: starweaver::ToolDefinition = serde_json::from_value(older).unwrap();
    assert_eq!(read.max_concurrency.unwrap().max_running(), 4);
    let unknown = json!({"name": "t", "parameters": {"type": "object"}, "max_concurrency": {"name": "x", "max_running": 1, "queue": 3}});
    assert!(serde_json::from_value::<starweaver::ToolDefinition>(unknown).is_err());
}

/// Drives a durable run of `agent` to its end, reporting the newest started call first;
/// the result, and the most calls started and not yet reported at once.
async fn drive_durably(agent: &Agent) -> (starweaver::RunResult, usize) {
    let mut run = DurableRun::start(agent, "go", "run_limits").unwrap();
    let mut running = Vec::new();
    let mut peak = 0;
    loop {
        match run.next_step() {
            Step::ListTools(_) => unreachable!("no dynamic toolsets"),
            Step::RequestModel(task) => run.model_responded(agent.request_model(&task).await.unwrap()),
            Step::StartCalls(tasks) => {
                running.extend(tasks);
                peak = peak.max(running.len());
            }
            Step::AwaitCalls => {
                let task = running.pop().expect("a run awaits only while a call runs");
                let result = agent.run_call("run_limits", &task, CancellationToken::default(), None).await;
                run.call_finished(task.index, result);
            }
            Step::CheckOutput(task) => run.output_checked(agent.check_output(&task).await),
            Step::Done(result) => return (result, peak),
        }
    }
}

fn quick(name: &str) -> impl starweaver::Tool + use<> {
    raw_tool(ToolBuilder::new(name), |_: ToolContext, _: Args| async { Ok(ok()) })
}

#[tokio::test]
async fn a_durable_run_starts_no_more_calls_than_the_limits_allow() {
    let mut ops = StaticToolset::new("ops");
    let names: Vec<String> = (0..6).map(|i| format!("t{i}")).collect();
    for name in &names {
        ops = ops.tool(quick(name));
    }
    let calls = names.iter().map(|n| call(&format!("call_{n}"), n, json!({}))).collect();
    let agent = Agent::builder(calls_then_text(calls, "done")).toolset(ops.with_max_concurrency(2)).build().unwrap();
    let (result, peak) = drive_durably(&agent).await;
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(peak, 2, "never more than two calls started and unreported");
    assert_eq!(tool_returns(result.messages.messages()).len(), 6);
    let waited: Vec<_> = queued(&result.events).into_iter().filter(|(_, limits)| !limits.is_empty()).collect();
    assert_eq!(waited.len(), 4, "the four calls held back say what for: {waited:?}");
    assert!(waited.iter().all(|(_, limits)| limits == &["toolset:ops".to_owned()]));
}

#[tokio::test]
async fn a_durable_run_counts_one_limit_of_its_own_given_to_two_tools_once() {
    let one = ConcurrencyLimit::from(1);
    let model = calls_then_text(vec![call("c1", "a", json!({})), call("c2", "b", json!({}))], "done");
    let (a, b) = (ToolBuilder::new("a").max_concurrency(one.clone()), ToolBuilder::new("b").max_concurrency(one));
    let ok_tool = |builder| raw_tool(builder, |_: ToolContext, _: Args| async { Ok(ok()) });
    let agent = Agent::builder(model).tool(ok_tool(a)).tool(ok_tool(b)).build().unwrap();
    let (result, peak) = drive_durably(&agent).await;
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(peak, 1, "the two tools share one limit of 1");
}

/// A hook whose `before_call` runs an agent of its own first (a check by a smaller model,
/// say), whose tool shares the hooked tool's limit.
struct AsksFirst(Agent);

impl starweaver::hook::Hooks for AsksFirst {
    fn before_call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a starweaver::hook::HookCall<'a>,
    ) -> starweaver::hook::Hooked<'a, Result<starweaver::hook::Before, starweaver::ToolError>> {
        starweaver::hook::Hooked::new(async move {
            let checked = self.0.run("check").await.unwrap();
            assert_eq!(checked.status, RunStatus::Completed);
            Ok(starweaver::hook::Before::Continue)
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_hook_holds_no_place_so_it_may_wait_for_a_call_under_the_same_limit() {
    let (log, flight) = (Log::default(), InFlight::default());
    let api = ConcurrencyLimit::shared("test-hook-nesting", 1).unwrap();
    let checker = Agent::builder(calls_then_text(vec![call("k1", "classify", json!({}))], "fine"))
        .tool(sleeper(ToolBuilder::new("classify").max_concurrency(api.clone()), 10, &log, &flight))
        .build()
        .unwrap();
    let agent = Agent::builder(calls_then_text(vec![call("c1", "search", json!({}))], "done"))
        .tool(sleeper(ToolBuilder::new("search").max_concurrency(api), 10, &log, &flight))
        .hook(AsksFirst(checker))
        .build()
        .unwrap();
    let result = tokio::time::timeout(Duration::from_mins(1), agent.run("go")).await;
    let result = result.expect("the hook's own call waited for the place its call held").unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(log.entries(), ["k1", "c1"], "the hook's call ran first, then the hooked one");
}
