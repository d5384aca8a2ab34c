//! The agent loop, models, registration and bad input a new user might try.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};
use starweaver::testing::{FunctionModel, TestModel};
use starweaver::{
    Agent, Dependencies, Error, History, Message, ModelError, ModelResponse, ResponsePart, RunError, RunStatus,
    ToolBuilder, ToolContext, ToolDefinition, ToolError,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    left: i64,
    right: i64,
}

fn add() -> impl starweaver::Tool {
    ToolBuilder::new("add")
        .description("Add two integers.")
        .handler(|_: ToolContext, a: AddArgs| async move { Ok(json!({"total": a.left + a.right})) })
        .unwrap()
}

#[tokio::test]
async fn the_loop_runs_tools_and_feeds_returns_back_until_a_text_answer() {
    let model = calls_then_text(vec![call("call_add", "add", json!({"left": 2, "right": 3}))], "done");
    let agent = Agent::builder(model.clone()).tool(add()).build().unwrap();
    let result = agent.run("Add two numbers").await.unwrap();
    assert_eq!((result.status, result.text(), result.error.clone()), (RunStatus::Completed, Some("done"), None));
    assert_eq!(result.usage.requests, 2, "each answer is a request, though the test model reports no usage");
    assert_eq!(
        result.messages.to_json(),
        json!([
            {"kind": "request", "parts": [{"kind": "user_prompt", "text": "Add two numbers"}]},
            {"kind": "response", "parts": [{"kind": "tool_call", "id": "call_add", "name": "add", "arguments": {"left": 2, "right": 3}}]},
            {"kind": "request", "parts": [{"kind": "tool_return", "tool_call_id": "call_add", "name": "add", "content": {"total": 5}, "is_error": false, "metadata": {}}]},
            {"kind": "response", "parts": [{"kind": "text", "text": "done"}]},
        ])
    );
}

#[tokio::test]
async fn test_model_records_each_request_as_a_provider_would_receive_it() {
    let model = calls_then_text(vec![call("c1", "add", json!({"left": 1, "right": 1}))], "2");
    let agent = Agent::builder(model.clone()).tool(add()).build().unwrap();
    agent.run("1+1").await.unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].messages.len(), 1);
    assert_eq!(requests[1].messages.len(), 3);
    let tools = serde_json::to_value(&requests[0].tools).unwrap();
    assert_eq!(
        tools,
        json!([{
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"left": {"type": "integer", "format": "int64"}, "right": {"type": "integer", "format": "int64"}},
                "required": ["left", "right"],
            },
            "strict": null,
            "sequential": false,
        }])
    );
}

#[tokio::test]
async fn a_script_that_runs_out_fails_the_run_with_a_clear_error() {
    let model =
        Arc::new(TestModel::new([TestModel::tool_call_response([call("c1", "add", json!({"left": 1, "right": 1}))])]));
    let result = Agent::builder(model).tool(add()).build().unwrap().run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(
        result.error.unwrap().to_string(),
        "model request failed: TestModel script exhausted: request 2 has no scripted response (the script has 1)"
    );
}

#[tokio::test]
async fn test_model_scripts_read_from_json() {
    let model = TestModel::from_json(&json!([
        {"tool_calls": [{"id": "call_add", "name": "add", "arguments": {"left": 2, "right": 3}}]},
        {"text": "done"},
    ]))
    .unwrap();
    let result = Agent::builder(model).tool(add()).build().unwrap().run("go").await.unwrap();
    assert_eq!(result.text(), Some("done"));
    for (script, expected) in [
        (json!({"text": "x"}), "invalid test model script: expected a list"),
        (
            json!([{"txt": "x"}]),
            "invalid test model script: response 0: invalid model response: expected {\"text\": ...}",
        ),
        (json!([{"tool_calls": [{"id": "c", "arguments": {}}]}]), "missing field `name`"),
        (json!([{"text": 3}]), "`text` must be a string, got 3"),
    ] {
        let err = TestModel::from_json(&script).unwrap_err().to_string();
        assert!(err.contains(expected), "{err}");
    }
}

#[tokio::test]
async fn function_model_lets_a_closure_act_as_the_model() {
    let model = FunctionModel::new(|request| {
        let returns = tool_returns(request.messages);
        Ok(match returns.first() {
            None => ModelResponse::tool_calls([call("c1", "add", json!({"left": 20, "right": 22}))]),
            Some(ret) => ModelResponse::text(format!("the total is {}", ret.content["total"])),
        })
    });
    let result = Agent::builder(model).tool(add()).build().unwrap().run("go").await.unwrap();
    assert_eq!(result.text(), Some("the total is 42"));
}

#[tokio::test]
async fn a_model_error_fails_the_run() {
    let model = FunctionModel::new(|_| Err(ModelError::new("provider returned 503")));
    let result = Agent::builder(model).build().unwrap().run("go").await.unwrap();
    let error = ModelError::new("provider returned 503");
    assert_eq!(result.error, Some(RunError::Model { message: error.to_string(), error: Some(Box::new(error)) }));
}

#[tokio::test]
async fn an_empty_response_fails_the_run() {
    let model = Arc::new(TestModel::new([ModelResponse::from_parts(vec![])]));
    let result = Agent::builder(model).build().unwrap().run("go").await.unwrap();
    assert_eq!(result.error, Some(RunError::EmptyResponse));
}

#[tokio::test]
async fn a_model_that_never_stops_calling_tools_hits_the_step_limit() {
    let model = FunctionModel::new(|r| {
        Ok(ModelResponse::tool_calls([call(&r.step.to_string(), "add", json!({"left": 1, "right": 1}))]))
    });
    let agent = Agent::builder(model).tool(add()).max_steps(3).build().unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.error, Some(RunError::StepLimit { max_steps: 3 }));
    assert_eq!(tool_returns(result.messages.messages()).len(), 3);
}

#[tokio::test]
async fn text_beside_tool_calls_does_not_end_the_run() {
    let model = Arc::new(TestModel::new([
        ModelResponse::from_parts(vec![
            ResponsePart::Text { text: "let me add".into() },
            ResponsePart::ToolCall(call("c1", "add", json!({"left": 1, "right": 2}))),
        ]),
        ModelResponse::text("3"),
    ]));
    let result = Agent::builder(model).tool(add()).build().unwrap().run("go").await.unwrap();
    assert_eq!(result.text(), Some("3"));
}

#[tokio::test]
async fn dependencies_reach_tools_and_a_missing_one_is_a_user_error_naming_the_type() {
    struct Db(&'static str);
    let tool = raw_tool(ToolBuilder::new("query"), |ctx: ToolContext, _: Args| {
        let db = ctx.require::<Db>().map(|db| db.0);
        async move { db.map(|url| json!({"url": url})) }
    });
    let shared: Arc<dyn starweaver::Tool> = Arc::new(tool);
    let with = Agent::builder(calls_then_text(vec![call("c1", "query", json!({}))], "done"))
        .shared_tool(shared.clone())
        .dependencies(Dependencies::new().with(Db("postgres://db")))
        .build()
        .unwrap();
    let ret = &tool_returns(with.run("go").await.unwrap().messages.messages())[0];
    assert_eq!(ret.content, json!({"url": "postgres://db"}));
    let without = Agent::builder(calls_then_text(vec![call("c1", "query", json!({}))], "done"))
        .shared_tool(shared)
        .build()
        .unwrap();
    let ret = &tool_returns(without.run("go").await.unwrap().messages.messages())[0];
    assert_eq!(ret.content["kind"], "user_error");
    assert!(ret.content["message"].as_str().unwrap().contains("needs a dependency of type `agent_run::"), "{ret:?}");
}

#[test]
fn duplicate_tool_names_are_rejected_at_build() {
    let err = Agent::builder(calls_then_text(vec![], "x")).tool(add()).tool(add()).build().err().unwrap();
    assert!(matches!(err, Error::DuplicateTool { .. }));
    assert_eq!(err.to_string(), "duplicate tool name `add`: tool names must be unique within an agent");
}

#[test]
fn malformed_explicit_schemas_are_rejected_naming_the_json_path() {
    let build = |schema: Value| {
        ToolBuilder::new("inspect")
            .parameters_schema(schema)
            .handler(|_: ToolContext, _: Args| async { Ok(ok()) })
            .err()
            .unwrap()
    };
    assert_eq!(
        build(json!({"type": "array"})).to_string(),
        "invalid tool `inspect`: parameters schema at `/type`: the top level must be `\"object\"`, got \"array\""
    );
    assert_eq!(
        build(json!({"type": "object", "properties": {"a": {}}, "required": ["b"]})).to_string(),
        "invalid tool `inspect`: parameters schema at `/required/0`: names `b`, which is not in `properties`"
    );
    assert_eq!(
        build(json!({"type": "object", "additionalProperties": 1})).to_string(),
        "invalid tool `inspect`: parameters schema at `/additionalProperties`: must be a bool or a schema object, got a number"
    );
}

#[test]
fn invalid_names_and_strict_without_description_are_rejected_at_registration() {
    let err = ToolBuilder::new("bad name").handler(|_: ToolContext, _: Args| async { Ok(ok()) }).err().unwrap();
    assert_eq!(err.to_string(), "invalid tool `bad name`: names must match `[A-Za-z0-9_-]{1,64}`");
    let err = ToolBuilder::new("t").strict(true).handler(|_: ToolContext, _: Args| async { Ok(ok()) }).err().unwrap();
    assert!(err.to_string().contains("strict tools need a description"));
}

/// A hand-written `Tool` whose definition was never validated is checked by the agent.
#[test]
fn the_agent_validates_definitions_of_hand_written_tools() {
    struct Raw(ToolDefinition);
    impl starweaver::Tool for Raw {
        fn definition(&self) -> &ToolDefinition {
            &self.0
        }
        fn call<'a>(
            &'a self,
            _: ToolContext,
            _: &'a Value,
        ) -> futures::future::BoxFuture<'a, Result<starweaver::ToolResult, ToolError>> {
            unreachable!("never registered")
        }
    }
    let err = Agent::builder(calls_then_text(vec![], "x"))
        .tool(Raw(ToolDefinition::new("raw", json!({"type": "object", "properties": {"x": 1}}))))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "invalid tool `raw`: parameters schema at `/properties/x`: property `x` must be a schema object, got a number"
    );
}

#[tokio::test]
async fn the_history_round_trips_through_canonical_json() {
    let model = calls_then_text(vec![call("c1", "add", json!({"left": 1, "right": 1}))], "2");
    let result = Agent::builder(model).tool(add()).build().unwrap().run("go").await.unwrap();
    let json = result.messages.to_json();
    assert_eq!(History::from_json(&json).unwrap(), result.messages);
    assert!(matches!(*result.messages.messages()[1], Message::Response { .. }));
}

#[tokio::test]
async fn a_stream_takes_tools_for_its_run_only() {
    let model = calls_then_text(vec![call("c", "add", json!({"left": 2, "right": 3}))], "5");
    let agent = Agent::builder(model).build().unwrap();
    let options = starweaver::RunOptions { tools: vec![Arc::new(add())], ..starweaver::RunOptions::default() };
    let result = agent.run_stream_with("2 + 3", options).result().await.unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(tool_returns(result.messages.messages())[0].content, json!({"total": 5}));
    assert!(agent.definitions().is_empty(), "the agent is unchanged");
}

#[tokio::test]
async fn a_scripted_answer_can_say_it_was_cut_at_the_token_limit() {
    let cut = ModelResponse::from_json(json!({"text": "2 + 3 =", "finish_reason": "length"})).unwrap();
    assert_eq!(cut.finish_reason, Some(starweaver::FinishReason::Length));
    let result = Agent::builder(Arc::new(TestModel::new([cut]))).build().unwrap().run("2 + 3?").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(result.finish_reason, Some(starweaver::FinishReason::Length), "the cut is not silent");
    let bad = ModelResponse::from_json(json!({"text": "x", "finish_reason": "tired"})).unwrap_err().to_string();
    assert!(bad.contains("`finish_reason`: unknown variant `tired`"), "{bad}");
}

/// A chart: its caption and the picture.
#[starweaver::tool]
fn chart() -> Vec<starweaver::content::Part> {
    vec![
        starweaver::content::Text::new("the chart").into(),
        starweaver::content::Image::data(*b"\x89PNG", "image/png").into(),
    ]
}

/// A photo, by URL.
#[starweaver::tool]
fn photo() -> starweaver::content::Image {
    starweaver::content::Image::url("https://example.com/p.jpg")
}

#[tokio::test]
async fn tools_returning_content_parts_show_them_to_the_model_and_an_export_keeps_them() {
    let model = calls_then_text(vec![call("c1", "chart", json!({})), call("c2", "photo", json!({}))], "done");
    let agent = Agent::builder(model.clone()).tool(chart_tool()).tool(photo_tool()).build().unwrap();
    let mut session = agent.session();
    session.run("draw").await.unwrap();
    let expected = [
        json!([{"kind": "text", "text": "the chart"}, {"kind": "image", "data": "iVBORw==", "media_type": "image/png"}]),
        json!({"kind": "image", "url": "https://example.com/p.jpg"}),
    ];
    let sent: Vec<Value> = tool_returns(&model.requests()[1].messages).into_iter().map(|r| r.content).collect();
    assert_eq!(sent, expected);
    let state = session.export_state();
    let restored = agent.restore_session(&state).unwrap();
    assert_eq!(restored.export_state(), state);
    let kept: Vec<Value> = tool_returns(restored.history().messages()).into_iter().map(|r| r.content).collect();
    assert_eq!(kept, expected);
    let parts = starweaver::content::Part::list_from(&kept[1]).unwrap();
    assert_eq!(parts, [starweaver::content::Image::url("https://example.com/p.jpg").into()]);
}
