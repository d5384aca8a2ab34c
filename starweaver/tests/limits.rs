//! DESIGN.md §18, usage limits: checked before each model request and before each call
//! starts, so nothing past a limit starts, and the run fails naming the limit and the count.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;

use common::*;
use serde_json::json;
use starweaver::durable::DurableRun;
use starweaver::testing::TestModel;
use starweaver::{
    Agent, ModelResponse, RunError, RunOptions, RunStatus, ToolBuilder, ToolContext, Toolset as _, Usage, UsageLimits,
};

fn counted(runs: &Counter) -> impl starweaver::Tool {
    let runs = runs.clone();
    raw_tool(ToolBuilder::new("work"), move |_: ToolContext, _: Args| {
        runs.bump();
        async { Ok(json!("done")) }
    })
}

/// Calls to `work` in one response, then a final answer.
fn calls(n: usize) -> Arc<TestModel> {
    let calls = (0..n).map(|i| call(&format!("c{i}"), "work", json!({}))).collect();
    calls_then_text(calls, "finished")
}

fn exceeded(limit: &str, max: u64, count: u64) -> RunError {
    RunError::UsageLimitExceeded { limit: limit.into(), max, count }
}

#[tokio::test]
async fn calls_past_the_tool_calls_limit_never_start_and_the_run_fails_naming_it() {
    for limit in [3, 1, 0] {
        let runs = Counter::default();
        let agent = Agent::builder(calls(5))
            .tool(counted(&runs))
            .usage_limits(UsageLimits::new().tool_calls(limit))
            .build()
            .unwrap();
        let result = agent.run("work").await.unwrap();
        assert_eq!(result.status, RunStatus::Failed);
        assert_eq!(result.error, Some(exceeded("tool_calls", limit, limit)));
        assert_eq!(runs.get(), usize::try_from(limit).unwrap(), "no call past the limit started");
        let limited = tool_returns(result.messages.messages())
            .iter()
            .filter(|r| r.content.get("kind") == Some(&json!("limit_reached")))
            .count();
        assert_eq!(limited, 5 - usize::try_from(limit).unwrap(), "every call has a return");
    }
    let message = exceeded("tool_calls", 3, 3).to_string();
    assert_eq!(message, "the run reached its usage limit of 3 tool_calls (3 used); nothing past it started");
}

#[tokio::test]
async fn the_requests_limit_stops_before_the_request_that_would_pass_it() {
    let runs = Counter::default();
    let agent =
        Agent::builder(calls(1)).tool(counted(&runs)).usage_limits(UsageLimits::new().requests(1)).build().unwrap();
    let result = agent.run("work").await.unwrap();
    assert_eq!(result.error, Some(exceeded("requests", 1, 1)));
    assert_eq!((result.usage.requests, runs.get()), (1, 1), "the calls of the one request ran; no second request");
}

#[tokio::test]
async fn token_limits_stop_the_next_request_once_the_answers_passed_them() {
    let spend = |input, output| ModelResponse {
        usage: Some(Usage { requests: 1, input_tokens: input, output_tokens: output, cached_tokens: 0 }),
        ..TestModel::tool_call_response([call("c1", "work", json!({}))])
    };
    let model = || TestModel::new([spend(60, 10), spend(60, 10), ModelResponse::text("finished")]);
    for (limits, expected) in [
        (UsageLimits::new().input_tokens(100), Some(exceeded("input_tokens", 100, 120))),
        (UsageLimits::new().output_tokens(15), Some(exceeded("output_tokens", 15, 20))),
        (UsageLimits::new().total_tokens(70), Some(exceeded("total_tokens", 70, 140))),
        (UsageLimits::new().total_tokens(1_000), None),
    ] {
        let agent = Agent::builder(model()).tool(counted(&Counter::default())).usage_limits(limits).build().unwrap();
        let result = agent.run("work").await.unwrap();
        assert_eq!(result.error, expected, "{limits:?}");
    }
}

#[tokio::test]
async fn a_runs_own_limits_replace_the_agents_and_a_durable_run_keeps_them_too() {
    let runs = Counter::default();
    let agent =
        Agent::builder(calls(2)).tool(counted(&runs)).usage_limits(UsageLimits::new().tool_calls(1)).build().unwrap();
    let options = RunOptions { usage_limits: Some(UsageLimits::new().tool_calls(5)), ..RunOptions::default() };
    let result = agent.session().run_with("work", options).await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(runs.get(), 2);

    let durable_agent = Agent::builder(calls(2))
        .tool(counted(&Counter::default()))
        .usage_limits(UsageLimits::new().tool_calls(1))
        .build()
        .unwrap();
    let mut run = DurableRun::start(&durable_agent, "work", "run_d").unwrap();
    let starweaver::durable::Step::RequestModel(task) = run.next_step() else { panic!("a model request first") };
    run.model_responded(durable_agent.request_model(&task).await.unwrap());
    let starweaver::durable::Step::StartCalls(tasks) = run.next_step() else { panic!("the calls") };
    assert_eq!(tasks.len(), 1, "only the call within the limit is handed to the engine");
}

/// `work` with a budget of `max_uses` calls per run, approval asked on every first attempt
/// when `gated`.
fn budgeted(runs: &Counter, max_uses: u32, gated: bool) -> impl starweaver::Tool {
    let runs = runs.clone();
    raw_tool(ToolBuilder::new("work").max_uses(max_uses), move |ctx: ToolContext, _: Args| {
        let asks = gated && ctx.approval().is_none();
        if !asks {
            runs.bump();
        }
        async move { if asks { Err(starweaver::ToolError::approval_required("check first")) } else { Ok(json!("done")) } }
    })
}

#[tokio::test]
async fn calls_past_a_tools_max_uses_get_a_limit_reached_return_that_is_no_retry_and_the_run_goes_on() {
    let runs = Counter::default();
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response((0..3).map(|i| call(&format!("c{i}"), "work", json!({}))).collect::<Vec<_>>()),
        TestModel::tool_call_response([call("c3", "work", json!({}))]),
        ModelResponse::text("finished"),
    ]));
    let agent = Agent::builder(model).tool(budgeted(&runs, 2, false)).build().unwrap();
    let result = agent.run("work").await.unwrap();
    assert_eq!((result.status, result.text()), (RunStatus::Completed, Some("finished")));
    assert_eq!(runs.get(), 2, "no call past the budget ran");
    let kinds: Vec<_> =
        tool_returns(result.messages.messages()).iter().map(|r| r.content.get("kind").cloned()).collect();
    assert_eq!(kinds, [None, None, Some(json!("limit_reached")), Some(json!("limit_reached"))]);
    let refused = tool_returns(result.messages.messages())[2].content["message"].clone();
    assert_eq!(refused, json!("`work` may be called at most 2 times in a run, and it was"));
    // Two refusals past a budget of one retry: neither counted as a retry, or the run
    // would have failed with its retries exhausted.
    assert_eq!(result.error, None);

    let zero = starweaver::ToolDefinition::new("work", json!({"type": "object"})).with_max_uses(0).validate();
    assert_eq!(zero.unwrap_err().to_string(), "invalid tool `work`: `max_uses` must be at least 1");
}

#[tokio::test]
async fn a_call_waiting_for_approval_is_not_a_use_until_it_runs_and_the_count_survives_an_export() {
    let runs = Counter::default();
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c0", "work", json!({}))]),
        TestModel::tool_call_response([call("c1", "work", json!({}))]),
        ModelResponse::text("finished"),
    ]));
    let agent = Agent::builder(model).tool(budgeted(&runs, 1, true)).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("work").await.unwrap();
    assert_eq!(waiting.status, RunStatus::Waiting);
    let approve = starweaver::HitlDecisions::from(vec![waiting.hitl.approvals[0].approve()]);
    let restored = agent.restore_session(&session.export_state()).unwrap();
    let mut session = restored;
    let done = session.resume(approve).await.unwrap();
    assert_eq!(runs.get(), 1, "the approved call ran; the second call was past the budget");
    let kinds: Vec<_> = tool_returns(done.messages.messages()).iter().map(|r| r.content.get("kind").cloned()).collect();
    assert_eq!(kinds, [None, Some(json!("limit_reached"))]);
}

/// A tool `name` returning `value`, with a `max_return_chars` of its own when given.
fn returning(name: &str, value: serde_json::Value, max: Option<u32>) -> impl starweaver::Tool {
    let builder = ToolBuilder::new(name);
    let builder = match max {
        Some(max) => builder.max_return_chars(max),
        None => builder,
    };
    raw_tool(builder, move |_: ToolContext, _: Args| {
        let value = value.clone();
        async move { Ok(value) }
    })
}

/// The model-facing content and the host-only value of each return of `result`, in order.
fn contents_and_values(result: &starweaver::RunResult) -> Vec<(serde_json::Value, Option<serde_json::Value>)> {
    let history = result.messages.to_json();
    let returns = history.as_array().unwrap().iter().flat_map(|m| m["parts"].as_array().unwrap().clone());
    returns.filter(|p| p["kind"] == "tool_return").map(|p| (p["content"].clone(), p.get("value").cloned())).collect()
}

#[tokio::test]
async fn a_return_past_max_return_chars_is_cut_for_the_model_and_kept_whole_for_the_host() {
    let long = "a".repeat(30);
    let model = calls_then_text(vec![call("c1", "page", json!({}))], "done");
    let agent = Agent::builder(model.clone()).tool(returning("page", json!(long), Some(10))).build().unwrap();
    let result = agent.run("read").await.unwrap();
    let cut = json!(format!("{}… [20 more characters cut]", "a".repeat(10)));
    assert_eq!(contents_and_values(&result), [(cut.clone(), Some(json!(long)))]);
    // The model got the cut text, and nothing of the whole value.
    let sent = serde_json::to_string(&model.requests()[1].messages).unwrap();
    assert!(sent.contains(cut.as_str().unwrap()) && !sent.contains(&long), "{sent}");
    // The `tool_return` event carries both, as the history does.
    let event = result.events.iter().find_map(|e| match &e.kind {
        starweaver::EventKind::ToolReturn(record) => Some(record),
        _ => None,
    });
    let event = event.unwrap();
    assert_eq!(event.part.content, cut);
    assert_eq!(event.host.as_ref().unwrap().value, Some(json!(long)));
    // One copy of the whole value: the event and the history share it.
    let kept = result.messages.host_fields(2, 0).unwrap();
    assert!(
        std::ptr::eq(std::sync::Arc::as_ptr(event.host.as_ref().unwrap()), kept),
        "the event's host fields are the history's"
    );
}

#[tokio::test]
async fn the_most_specific_max_return_chars_wins_tool_then_toolset_then_agent() {
    let long = json!("b".repeat(40));
    let model = calls_then_text(
        ["own", "grouped", "grouped_own", "plain"].iter().map(|n| call(n, n, json!({}))).collect(),
        "done",
    );
    let toolset = starweaver::StaticToolset::new("docs")
        .tool(returning("grouped", long.clone(), None))
        .tool(returning("grouped_own", long.clone(), Some(3)))
        .with_max_return_chars(8);
    let agent = Agent::builder(model)
        .tool(returning("own", long.clone(), Some(5)))
        .toolset(toolset)
        .tool(returning("plain", long.clone(), None))
        .max_return_chars(12)
        .build()
        .unwrap();
    let result = agent.run("read").await.unwrap();
    let kept: Vec<usize> = contents_and_values(&result)
        .iter()
        .map(|(content, _)| content.as_str().unwrap().split('…').next().unwrap().chars().count())
        .collect();
    assert_eq!(kept, [5, 8, 3, 12], "own, toolset's, own over the toolset's, agent's");
    assert!(contents_and_values(&result).iter().all(|(_, value)| value.as_ref() == Some(&long)));
}

#[tokio::test]
async fn cuts_count_characters_not_bytes_and_json_values_are_cut_as_their_text() {
    let text = json!("日本語のテキスト🦀🦀");
    let value = json!({"rows": [1, 2, 3], "note": "ünïcode"});
    let model = calls_then_text(vec![call("c1", "text", json!({})), call("c2", "rows", json!({}))], "done");
    let agent = Agent::builder(model)
        .tool(returning("text", text.clone(), Some(4)))
        .tool(returning("rows", value.clone(), Some(20)))
        .build()
        .unwrap();
    let result = agent.run("read").await.unwrap();
    assert_eq!(
        contents_and_values(&result),
        [
            (json!("日本語の… [6 more characters cut]"), Some(text)),
            (json!("{\"rows\":[1,2,3],\"not… [13 more characters cut]"), Some(value)),
        ]
    );
}

#[tokio::test]
async fn content_within_the_limit_and_model_content_keep_their_form() {
    let model = calls_then_text(vec![call("c1", "short", json!({})), call("c2", "summarised", json!({}))], "done");
    let summarised = raw_tool(ToolBuilder::new("summarised").max_return_chars(6), |_: ToolContext, _: Args| async {
        Ok(starweaver::ToolResult::new(json!({"raw": 1})).with_model_content(json!("a long summary")))
    });
    let agent =
        Agent::builder(model).tool(returning("short", json!({"a": 1}), Some(7))).tool(summarised).build().unwrap();
    let result = agent.run("read").await.unwrap();
    assert_eq!(
        contents_and_values(&result),
        [(json!({"a": 1}), None), (json!("a long… [8 more characters cut]"), Some(json!({"raw": 1})))]
    );
}

#[tokio::test]
async fn max_return_chars_of_zero_is_refused_naming_the_option() {
    let zero = starweaver::ToolDefinition::new("t", json!({"type": "object"})).with_max_return_chars(0).validate();
    assert_eq!(zero.unwrap_err().to_string(), "invalid tool `t`: `max_return_chars` must be at least 1");
    let model = calls_then_text(vec![], "done");
    let agent = Agent::builder(model.clone()).max_return_chars(0).build();
    assert!(agent.err().unwrap().to_string().contains("max_return_chars"));
    let toolset = starweaver::StaticToolset::new("docs").tool(returning("t", json!(1), None)).with_max_return_chars(0);
    let err = Agent::builder(model).toolset(toolset).build().err().unwrap().to_string();
    assert!(err.contains("max_return_chars") && err.contains("toolset `docs`"), "{err}");
}

#[tokio::test]
async fn a_durable_runs_calls_are_cut_as_in_process() {
    let long = "c".repeat(50);
    let agent = Agent::builder(calls_then_text(vec![], "done"))
        .tool(returning("page", json!(long), None))
        .max_return_chars(10)
        .build()
        .unwrap();
    let task: starweaver::durable::CallTask = serde_json::from_value(json!({
        "index": 0, "call": {"id": "c1", "name": "page", "arguments": {}}, "retry": 0, "max_retries": 0
    }))
    .unwrap();
    let result = agent.run_call("run_1", &task, starweaver::CancellationToken::new(), None).await;
    let result = serde_json::to_value(&result).unwrap();
    let ret = &result["outcome"]["part"];
    assert_eq!(ret["content"], json!(format!("{}… [40 more characters cut]", "c".repeat(10))));
    assert_eq!(result["outcome"]["host"]["value"], json!(long));
}
