//! DESIGN.md §7: what each tool outcome makes the runtime do and the model see.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::{Map, Value, json};
use starweaver::testing::TestModel;
use starweaver::{
    Agent, CancellationToken, ModelResponse, RunError, RunOptions, RunStatus, ToolBuilder, ToolContext, ToolError,
    ToolResult,
};

/// Runs one call of `tool` (named `t`) and returns the run and the return the model saw.
async fn run_once(
    tool: impl starweaver::Tool,
    arguments: Value,
) -> (starweaver::RunResult, starweaver::ToolReturnPart) {
    let agent = Agent::builder(calls_then_text(vec![call("c1", "t", arguments)], "done")).tool(tool).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let ret = tool_returns(result.messages.messages()).remove(0);
    (result, ret)
}

#[tokio::test]
async fn a_value_is_returned_as_is_and_tool_call_ids_are_kept_as_sent() {
    let tool = raw_tool(ToolBuilder::new("t"), |_: ToolContext, _: Args| async { Ok(json!({"total": 5})) });
    let (result, ret) = run_once(tool, json!({})).await;
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!((&*ret.tool_call_id, ret.content, ret.is_error), ("c1", json!({"total": 5}), false));
}

#[tokio::test]
async fn tool_result_shows_the_model_model_content_and_keeps_host_fields_on_the_host() {
    let tool = raw_tool(ToolBuilder::new("t"), |_: ToolContext, _: Args| async {
        let Value::Object(metadata) = json!({"audit": "release"}) else { unreachable!() };
        Ok(ToolResult::new(json!({"raw": "application record"}))
            .with_metadata(metadata)
            .with_app_value(json!({"release_id": 42}))
            .with_model_content(json!({"summary": "release is ready"}))
            .with_user_content(json!({"markdown": "**Ready**"}))
            .with_private_metadata(json!({"trace_id": "host-only"})))
    });
    let model = calls_then_text(vec![call("c1", "t", json!({}))], "done");
    let agent = Agent::builder(model.clone()).tool(tool).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let ret = tool_returns(result.messages.messages()).remove(0);
    assert_eq!(ret.content, json!({"summary": "release is ready"}));
    assert_eq!(ret.metadata["audit"], "release");
    let host = result.messages.to_json()[2]["parts"][0].clone();
    assert_eq!(host["app_value"], json!({"release_id": 42}));
    assert_eq!(host["user_content"], json!({"markdown": "**Ready**"}));
    assert_eq!(host["private_metadata"], json!({"trace_id": "host-only"}));
    assert_eq!(host["value"], json!({"raw": "application record"}));
    let fields = result.messages.host_fields(2, 0).expect("the return keeps its host fields");
    assert_eq!(fields.app_value, Some(json!({"release_id": 42})));
    assert!(result.messages.host_fields(2, 1).is_none() && result.messages.host_fields(1, 0).is_none());
    let sent = serde_json::to_string(&model.requests()[1]).unwrap();
    for host_only in ["app_value", "user_content", "private_metadata", "host-only", "application record"] {
        assert!(!sent.contains(host_only), "`{host_only}` reached the model: {sent}");
    }
}

#[tokio::test]
async fn invalid_arguments_name_the_field_and_count_a_retry() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct AddArgs {
        #[allow(dead_code)]
        left: i64,
    }
    let retries = Log::default();
    let seen = retries.clone();
    let tool = ToolBuilder::new("t")
        .handler(move |ctx: ToolContext, _: AddArgs| {
            seen.push(format!("retry={}", ctx.retry()));
            async { Ok(ok()) }
        })
        .unwrap();
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "t", json!({"left": "two"}))]),
        TestModel::tool_call_response([call("c2", "t", json!({"left": 2}))]),
        ModelResponse::text("done"),
    ]));
    let result = Agent::builder(model).tool(tool).build().unwrap().run("go").await.unwrap();
    let returns = tool_returns(result.messages.messages());
    assert_eq!(returns[0].content["kind"], "invalid_arguments");
    assert_eq!(returns[0].content["message"], "`left`: invalid type: string \"two\", expected i64");
    assert_eq!((returns[0].content["success"].clone(), returns[0].is_error), (json!(false), true));
    assert_eq!(retries.entries(), ["retry=1"], "the second call saw the retry the first one spent");
}

#[tokio::test]
async fn arguments_that_are_not_a_json_object_are_invalid_arguments() {
    for (arguments, expected) in [
        (json!("{not json"), "arguments are not valid JSON"),
        (json!("[1, 2]"), "arguments must be a JSON object, got an array"),
        (json!(7), "arguments must be a JSON object, got a number"),
    ] {
        let tool = raw_tool(ToolBuilder::new("t"), |_: ToolContext, _: Args| async { Ok(ok()) });
        let (_, ret) = run_once(tool, arguments).await;
        assert_eq!(ret.content["kind"], "invalid_arguments");
        assert!(ret.content["message"].as_str().unwrap().starts_with(expected), "{ret:?}");
    }
    let tool = raw_tool(ToolBuilder::new("t"), |_: ToolContext, args: Args| async move { Ok(Value::Object(args)) });
    let (_, ret) = run_once(tool, json!("{\"a\": 1}")).await;
    assert_eq!(ret.content, json!({"a": 1}), "a JSON object sent as a string is decoded");
}

#[tokio::test]
async fn model_retry_counts_a_retry_and_exhausting_the_budget_fails_the_run_naming_the_tool() {
    let tool = raw_tool(ToolBuilder::new("flaky").max_retries(1), |_: ToolContext, _: Args| async {
        Err::<Value, _>(ToolError::model_retry("use a positive number"))
    });
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "flaky", json!({}))]),
        TestModel::tool_call_response([call("c2", "flaky", json!({}))]),
        ModelResponse::text("unreachable"),
    ]));
    let result = Agent::builder(model.clone()).tool(tool).build().unwrap().run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(
        result.error,
        Some(RunError::RetriesExhausted {
            tool: "flaky".into(),
            max_retries: 1,
            message: "use a positive number".into()
        })
    );
    assert_eq!(
        result.error.unwrap().to_string(),
        "tool `flaky` exceeded its retry budget of 1; last error: use a positive number"
    );
    let first = &tool_returns(&model.requests()[1].messages)[0];
    assert_eq!(first.content["kind"], "model_retry");
    assert_eq!(first.content["retry_expected"], true);
    assert_eq!(model.requests().len(), 2, "the run stopped instead of asking the model again");
}

#[tokio::test]
async fn feedback_is_guidance_not_an_error_and_spends_no_retry() {
    let tool = raw_tool(ToolBuilder::new("t").max_retries(0), |_: ToolContext, _: Args| async {
        Err::<Value, _>(ToolError::feedback("no such file: notes.txt"))
    });
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "t", json!({}))]),
        TestModel::tool_call_response([call("c2", "t", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let result = Agent::builder(model).tool(tool).build().unwrap().run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    let ret = &tool_returns(result.messages.messages())[0];
    assert_eq!(
        (ret.is_error, ret.content["success"].clone(), ret.content["kind"].clone()),
        (false, json!(false), json!("feedback"))
    );
}

#[tokio::test]
async fn user_error_is_an_error_with_no_retry_of_any_kind() {
    let runs = Counter::default();
    let counted = runs.clone();
    let tool = raw_tool(ToolBuilder::new("t").max_retries(0), move |_: ToolContext, _: Args| {
        counted.bump();
        async { Err::<Value, _>(ToolError::user_error("missing runtime dependency")) }
    });
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "t", json!({}))]),
        TestModel::tool_call_response([call("c2", "t", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let result = Agent::builder(model).tool(tool).build().unwrap().run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed, "user errors do not spend the model-retry budget");
    assert_eq!(runs.get(), 2, "one attempt per call: no internal retry");
    let ret = &tool_returns(result.messages.messages())[0];
    assert_eq!((ret.is_error, ret.content["kind"].clone()), (true, json!("user_error")));
}

#[tokio::test]
async fn execution_errors_are_retried_internally_until_one_succeeds() {
    let attempts = Log::default();
    let seen = attempts.clone();
    let tool = raw_tool(ToolBuilder::new("t"), move |ctx: ToolContext, _: Args| {
        seen.push(format!("{}{}", ctx.attempt(), if ctx.last_attempt() { " last" } else { "" }));
        async move { if ctx.attempt() < 3 { Err(ToolError::execution("flaky network")) } else { Ok(ok()) } }
    });
    let (result, ret) = run_once(tool, json!({})).await;
    assert_eq!((ret.content, ret.is_error), (ok(), false));
    assert_eq!(attempts.entries(), ["1", "2", "3"]);
    let retried = result.events.iter().filter(|e| matches!(e.kind, starweaver::EventKind::ToolRetry { .. })).count();
    assert_eq!(retried, 2);
}

#[tokio::test]
async fn execution_errors_reach_the_model_after_the_last_attempt_with_attempt_counts() {
    let attempts = Log::default();
    let seen = attempts.clone();
    let tool = raw_tool(ToolBuilder::new("t"), move |ctx: ToolContext, _: Args| {
        seen.push(format!("{}{}", ctx.attempt(), if ctx.last_attempt() { " last" } else { "" }));
        async { Err::<Value, _>(ToolError::execution("disk on fire")) }
    });
    let (result, ret) = run_once(tool, json!({})).await;
    assert_eq!(attempts.entries(), ["1", "2", "3", "4 last"], "default budget: 3 retries after the first attempt");
    assert!(ret.is_error);
    assert_eq!(ret.content["kind"], "execution");
    assert_eq!(ret.content["attempts"], 4);
    assert_eq!(ret.content["message"], "disk on fire (failed after 4 attempt(s))");
    assert_eq!(result.status, RunStatus::Completed, "the model saw the failure and answered");
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_execution_error_and_the_runtime_carries_on() {
    let tool = raw_tool(ToolBuilder::new("t").max_retries(1), |_: ToolContext, args: Args| async move {
        #[allow(clippy::manual_assert)] // a tool that panics, as a bug in it would
        if args.contains_key("boom") {
            panic!("index out of bounds");
        }
        Ok(ok())
    });
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "t", json!({"boom": true}))]),
        TestModel::tool_call_response([call("c2", "t", json!({}))]),
        ModelResponse::text("recovered"),
    ]));
    let agent = Agent::builder(model).tool(tool).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let returns = tool_returns(result.messages.messages());
    assert_eq!(returns[0].content["kind"], "execution");
    assert_eq!(returns[0].content["message"], "tool `t` panicked: index out of bounds (failed after 2 attempt(s))");
    assert_eq!(returns[1].content, ok());
    assert_eq!(result.text(), Some("recovered"));
}

#[tokio::test]
async fn a_panic_before_the_future_is_built_is_caught_too() {
    let tool = raw_tool(
        ToolBuilder::new("t").max_retries(0),
        |_: ToolContext, _: Args| -> std::future::Ready<Result<Value, ToolError>> { panic!("eager panic") },
    );
    let (_, ret) = run_once(tool, json!({})).await;
    assert_eq!(ret.content["message"], "tool `t` panicked: eager panic (failed after 1 attempt(s))");
}

#[tokio::test]
async fn approval_required_and_call_deferred_suspend_the_run() {
    let ask = raw_tool(ToolBuilder::new("t"), |_: ToolContext, _: Args| async {
        Err::<Value, _>(ToolError::approval_required("deploy production"))
    });
    let (result, ()) = Box::pin(async {
        let agent =
            Agent::builder(calls_then_text(vec![call("c1", "t", json!({}))], "done")).tool(ask).build().unwrap();
        (agent.run("go").await.unwrap(), ())
    })
    .await;
    assert_eq!(result.status, RunStatus::Waiting);
    assert_eq!(result.hitl.approvals[0].reason, "deploy production");
    let defer = raw_tool(ToolBuilder::new("t"), |_: ToolContext, _: Args| async {
        Err::<Value, _>(ToolError::call_deferred("waiting for the batch job"))
    });
    let agent = Agent::builder(calls_then_text(vec![call("c1", "t", json!({}))], "done")).tool(defer).build().unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Waiting);
    assert_eq!(result.hitl.deferred[0].reason, "waiting for the batch job");
    assert!(tool_returns(result.messages.messages()).is_empty(), "the model sees nothing until resumed");
}

#[tokio::test(start_paused = true)]
async fn a_timeout_cancels_the_call_and_the_model_sees_kind_timeout() {
    let runs = Counter::default();
    let counted = runs.clone();
    let tool = raw_tool(ToolBuilder::new("t").timeout_ms(50), move |ctx: ToolContext, _: Args| {
        counted.bump();
        async move {
            tokio::time::sleep(Duration::from_mins(1)).await;
            Ok(json!({"cancelled_seen": ctx.is_cancelled()}))
        }
    });
    let (_, ret) = run_once(tool, json!({})).await;
    assert_eq!(ret.content["kind"], "timeout");
    assert_eq!(ret.content["message"], "tool `t` timed out after 50 ms");
    assert!(ret.is_error);
    assert_eq!(runs.get(), 1, "a timeout is not retried");
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_blocking_tool_sees_is_cancelled() {
    let observed = Log::default();
    let seen = observed.clone();
    let tool = raw_tool(ToolBuilder::new("t").timeout_ms(20), move |ctx: ToolContext, _: Args| {
        let seen = seen.clone();
        async move {
            // A tool that does not yield to the runtime (as a plain `fn` off the async
            // workers): it polls the flag itself.
            let handle = tokio::task::spawn(async move {
                ctx.cancelled().await;
                seen.push("cancelled");
            });
            tokio::time::sleep(Duration::from_secs(1)).await;
            handle.abort();
            Ok(ok())
        }
    });
    let (_, ret) = run_once(tool, json!({})).await;
    assert_eq!(ret.content["kind"], "timeout");
    tokio::task::yield_now().await;
    assert_eq!(observed.entries(), ["cancelled"]);
}

#[tokio::test]
async fn cancellation_cancels_running_calls_and_ends_the_run_cancelled() {
    let token = CancellationToken::new();
    let trigger = token.clone();
    let slow = raw_tool(ToolBuilder::new("slow"), move |_: ToolContext, _: Args| {
        let trigger = trigger.clone();
        async move {
            trigger.cancel();
            futures::future::pending::<()>().await;
            Ok(json!("never returned"))
        }
    });
    let done = raw_tool(ToolBuilder::new("quick"), |_: ToolContext, _: Args| async { Ok(ok()) });
    let model = calls_then_text(vec![call("c1", "quick", json!({})), call("c2", "slow", json!({}))], "unreachable");
    let agent = Agent::builder(model.clone()).tool(slow).tool(done).build().unwrap();
    let options = RunOptions { cancellation: Some(token), ..RunOptions::default() };
    let result = agent.run_with("go", options).await.unwrap();
    assert_eq!(result.status, RunStatus::Cancelled);
    let returns = tool_returns(result.messages.messages());
    assert_eq!(returns[0].content, ok(), "the finished call keeps its value");
    assert_eq!((returns[1].content["kind"].clone(), returns[1].is_error), (json!("cancelled"), true));
    assert_eq!(model.requests().len(), 1);
    assert!(matches!(result.events.last().unwrap().kind, starweaver::EventKind::RunCancelled));
}

#[tokio::test]
async fn a_run_cancelled_before_the_model_answers_ends_cancelled() {
    let token = CancellationToken::new();
    token.cancel();
    let agent = Agent::builder(calls_then_text(vec![], "x")).build().unwrap();
    let result = agent.run_with("go", RunOptions { cancellation: Some(token), ..RunOptions::default() }).await.unwrap();
    assert_eq!(result.status, RunStatus::Cancelled);
}

#[tokio::test]
async fn tools_raising_cancelled_or_timeout_map_to_those_kinds() {
    for (error, kind) in [(ToolError::cancelled("stopped"), "cancelled"), (ToolError::timeout("too slow"), "timeout")] {
        let error = Arc::new(std::sync::Mutex::new(Some(error)));
        let tool = raw_tool(ToolBuilder::new("t"), move |_: ToolContext, _: Args| {
            let error = error.lock().unwrap().take().unwrap();
            async move { Err::<Value, _>(error) }
        });
        let (_, ret) = run_once(tool, json!({})).await;
        assert_eq!((ret.content["kind"].clone(), ret.is_error), (json!(kind), true));
    }
}

#[tokio::test]
async fn an_unknown_tool_is_a_not_found_return_listing_the_tools() {
    let tool = raw_tool(ToolBuilder::new("known"), |_: ToolContext, _: Args| async { Ok(ok()) });
    let agent =
        Agent::builder(calls_then_text(vec![call("c1", "missing", json!({}))], "done")).tool(tool).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let ret = &tool_returns(result.messages.messages())[0];
    assert_eq!(ret.content["kind"], "not_found");
    assert_eq!(ret.content["message"], "unknown tool `missing`; available tools: `known`");
}

#[tokio::test]
async fn a_return_value_that_is_not_json_serialisable_is_an_execution_error() {
    let tool = raw_tool(ToolBuilder::new("t").max_retries(0), |_: ToolContext, _: Args| async {
        Ok(HashMap::from([((1, 2), "tuple keys cannot be JSON object keys")]))
    });
    let (_, ret) = run_once(tool, json!({})).await;
    assert_eq!(ret.content["kind"], "execution");
    assert!(ret.content["message"].as_str().unwrap().starts_with("the tool's return value is not JSON-serialisable"));
}

#[tokio::test]
async fn error_metadata_is_public_and_private_metadata_stays_on_the_host() {
    let tool = raw_tool(ToolBuilder::new("t").max_retries(0), |_: ToolContext, _: Args| async {
        let Value::Object(meta) = json!({"path": "notes.txt"}) else { unreachable!() };
        Err::<Value, _>(
            ToolError::execution("boom").with_metadata(meta).with_private_metadata(json!({"traceback": "line 3"})),
        )
    });
    let model = calls_then_text(vec![call("c1", "t", json!({}))], "done");
    let result = Agent::builder(model.clone()).tool(tool).build().unwrap().run("go").await.unwrap();
    let ret = &tool_returns(result.messages.messages())[0];
    assert_eq!(ret.metadata, Map::from_iter([("path".to_owned(), json!("notes.txt"))]));
    assert_eq!(result.messages.to_json()[2]["parts"][0]["private_metadata"]["traceback"], "line 3");
    assert!(!serde_json::to_string(&model.requests()[1]).unwrap().contains("traceback"));
}
