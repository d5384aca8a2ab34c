//! `#[tool]` functions behave like closure-built tools under the same runtime: arguments,
//! returns, scheduling, retries, timeouts, panics and approvals.
#![deny(warnings, missing_docs)]
// Test code: helpers outside `#[test]` fns unwrap too, and the fixture tools are written
// the way users write them (`async` without awaiting).
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::unused_async)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use starweaver::testing::TestModel;
use starweaver::{Agent, ModelResponse, RunResult, RunStatus, Tool, ToolCallPart, ToolContext, ToolReturnPart};
use starweaver_tests as corpus;

fn returns(result: &RunResult) -> Vec<ToolReturnPart> {
    result.messages.messages().iter().flat_map(|m| m.tool_returns()).map(|r| (**r).clone()).collect()
}

fn script(calls: Vec<ToolCallPart>) -> Arc<TestModel> {
    Arc::new(TestModel::new([TestModel::tool_call_response(calls), ModelResponse::text("done")]))
}

async fn run_one(tool: impl Tool, name: &str, arguments: Value) -> ToolReturnPart {
    let agent = Agent::builder(script(vec![ToolCallPart::new("c1", name, arguments)])).tool(tool).build().unwrap();
    returns(&agent.run("go").await.unwrap()).remove(0)
}

#[tokio::test]
async fn the_function_stays_callable_as_written() {
    assert_eq!(corpus::add(2, 3).await, 5);
    #[allow(clippy::float_cmp)] // 2.0 * 4.0 is exact
    {
        assert_eq!(corpus::multiply(2.0, 4.0), 8.0);
    }
    let ctx = ToolContext::detached("whoami");
    assert_eq!(corpus::whoami(&ctx, "ci".into()).await["context"], "ci");
}

#[tokio::test]
async fn typed_parameters_decode_with_defaults_and_options() {
    let ret = run_one(corpus::lookup_tool(), "lookup", json!({"ticket_id": "T-1"})).await;
    assert_eq!(ret.content, json!({"ticket_id": "T-1", "include_history": false, "max_comments": 10, "since": null}));
    let ret =
        run_one(corpus::lookup_tool(), "lookup", json!({"ticket_id": "T-1", "max_comments": 2, "since": "c9"})).await;
    assert_eq!((ret.content["max_comments"].clone(), ret.content["since"].clone()), (json!(2), json!("c9")));
}

#[tokio::test]
async fn bad_arguments_are_invalid_arguments_naming_the_field() {
    let ret = run_one(corpus::add_tool(), "add", json!({"left": 1})).await;
    assert_eq!(
        (ret.content["kind"].clone(), ret.content["message"].clone()),
        (json!("invalid_arguments"), json!("missing field `right`"))
    );
    let ret = run_one(corpus::add_tool(), "add", json!({"left": 1, "right": "2"})).await;
    assert_eq!(ret.content["message"], "`right`: invalid type: string \"2\", expected i64");
    let ret = run_one(corpus::add_tool(), "add", json!({"left": 1, "right": 2, "extra": 3})).await;
    assert_eq!(ret.content["message"], "`extra`: unknown field `extra`, expected `left` or `right`");
    let ret = run_one(
        corpus::register_tool(),
        "register",
        json!({"customer": {"name": "A", "address": {"street": "S"}}, "tags": {}}),
    )
    .await;
    assert_eq!(ret.content["message"], "`customer.address`: missing field `city`");
}

#[tokio::test]
async fn argument_structs_and_raw_objects_are_the_whole_argument() {
    let ret = run_one(corpus::fetch_ticket_tool(), "fetch_ticket", json!({"ticket_id": "T-9"})).await;
    assert_eq!(ret.content, json!({"ticket_id": "T-9", "include_history": false}));
    let ret = run_one(corpus::inspect_payload_tool(), "inspect_payload", json!({"b": 1, "a": 2})).await;
    assert_eq!(ret.content, json!({"keys": ["a", "b"]}));
}

#[tokio::test]
async fn the_context_reaches_the_tool_and_a_parameter_named_context_is_ordinary() {
    let ret = run_one(corpus::whoami_tool(), "whoami", json!({"context": "nightly"})).await;
    assert_eq!(ret.content, json!({"tool": "whoami", "call": "c1", "context": "nightly", "retry": 0}));
}

#[tokio::test]
async fn result_errors_convert_with_question_mark_and_keep_their_kind() {
    let ret = run_one(corpus::create_ticket_tool(), "file_ticket", json!({"title": " ", "priority": "low"})).await;
    assert_eq!(ret.content["kind"], "model_retry");
    let ret = run_one(corpus::read_text_tool(), "read_text", json!({"path": "/definitely/not/here"})).await;
    assert_eq!(ret.content["kind"], "execution");
    assert!(ret.content["message"].as_str().unwrap().contains("No such file"), "{ret:?}");
}

#[tokio::test]
async fn execution_errors_are_retried_internally_for_macro_tools() {
    let ret = run_one(corpus::flaky_tool(), "flaky", json!({})).await;
    assert_eq!((ret.content.clone(), ret.is_error), (json!(3), false), "succeeded on the third attempt");
}

#[tokio::test]
async fn a_panicking_plain_fn_is_an_execution_error_and_the_runtime_carries_on() {
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([ToolCallPart::new("c1", "explode", json!({"reason": "boom"}))]),
        TestModel::tool_call_response([ToolCallPart::new("c2", "add", json!({"left": 1, "right": 1}))]),
        ModelResponse::text("still here"),
    ]));
    let agent = Agent::builder(model).tool(corpus::explode_tool()).tool(corpus::add_tool()).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let returns = returns(&result);
    assert_eq!(returns[0].content["message"], "tool `explode` panicked: boom (failed after 1 attempt(s))");
    assert_eq!(returns[1].content, json!(2));
    assert_eq!(result.text(), Some("still here"));
}

#[tokio::test(start_paused = true)]
async fn timeouts_apply_to_macro_tools() {
    let ret = run_one(corpus::nap_tool(), "nap", json!({"millis": 10_000})).await;
    assert_eq!(ret.content["kind"], "timeout");
    let ret = run_one(corpus::nap_tool(), "nap", json!({"millis": 10})).await;
    assert_eq!(ret.content, json!(10));
}

#[tokio::test(start_paused = true)]
async fn macro_tools_are_scheduled_like_any_tool() {
    // Three naps in one response: same name, so one at a time in model order.
    let calls = (1..=3).map(|i| ToolCallPart::new(format!("c{i}"), "nap", json!({"millis": 20}))).collect();
    let agent = Agent::builder(script(calls)).tool(corpus::nap_tool()).tool(corpus::add_tool()).build().unwrap();
    let started = tokio::time::Instant::now();
    let result = agent.run("go").await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_millis(60));
    let ids: Vec<String> = returns(&result).iter().map(|r| r.tool_call_id.to_string()).collect();
    assert_eq!(ids, ["c1", "c2", "c3"]);
}

#[tokio::test]
async fn a_sequential_macro_tool_is_a_barrier() {
    let model = script(vec![
        ToolCallPart::new("c1", "add", json!({"left": 1, "right": 1})),
        ToolCallPart::new("c2", "whoami", json!({"context": "x"})),
        ToolCallPart::new("c3", "multiply", json!({"left": 2.0, "right": 2.0})),
    ]);
    let agent = Agent::builder(model)
        .tool(corpus::add_tool())
        .tool(corpus::whoami_tool())
        .tool(corpus::multiply_tool())
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    let order: Vec<String> = result
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            starweaver::EventKind::ToolCall { name, .. } => Some(format!("call {name}")),
            starweaver::EventKind::ToolReturn(r) => Some(format!("return {}", r.part.name)),
            _ => None,
        })
        .collect();
    let position = |s: &str| order.iter().position(|o| o == s).unwrap();
    assert!(position("return add") < position("call whoami"));
    assert!(position("return whoami") < position("call multiply"));
}

#[tokio::test]
async fn approvals_gate_macro_tools_and_reinvoke_them_with_the_decision() {
    let model = script(vec![ToolCallPart::new("c1", "deploy", json!({"environment": "prod"}))]);
    let agent = Agent::builder(model.clone()).tool(corpus::deploy_tool()).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("ship it").await.unwrap();
    assert_eq!(waiting.status, RunStatus::Waiting);
    assert_eq!(waiting.hitl.approvals[0].reason, "deploy to prod");
    let result = session.resume(vec![waiting.hitl.approvals[0].approve().decided_by("ops")]).await.unwrap();
    let ret = &returns(&result)[0];
    assert_eq!(ret.content, json!({"summary": "deployed to prod"}));
    let host = &result.messages.to_json()[2]["parts"][0];
    assert_eq!(host["private_metadata"], json!({"approved_by": "ops"}));
    assert_eq!(host["value"], json!({"deployed": "prod"}));
}

#[tokio::test]
async fn approval_policies_match_macro_tool_metadata() {
    let model = script(vec![ToolCallPart::new("c1", "fetch_ticket", json!({"ticket_id": "T"}))]);
    let Value::Object(low) = json!({"risk": "low"}) else { unreachable!() };
    let agent = Agent::builder(model).tool(corpus::fetch_ticket_tool()).approval_required_tools([low]).build().unwrap();
    assert_eq!(agent.run("go").await.unwrap().status, RunStatus::Waiting);
}

/// A `#[tool]` whose single `args` parameter has no object schema fails at registration,
/// with an error naming the tool; it never panics.
#[test]
fn an_args_type_without_an_object_schema_is_a_registration_error() {
    /// Echo text.
    #[starweaver::tool]
    async fn echo(args: String) -> String {
        args
    }
    let err = Agent::builder(script(vec![])).tool(echo_tool()).build().err().unwrap();
    assert_eq!(
        err.to_string(),
        "invalid tool `echo`: parameters schema at `/type`: the top level must be `\"object\"`, got \"string\""
    );
}

/// Looks things up.
#[doc = include_str!("fixtures/docs/lookup.md")]
#[starweaver::tool]
async fn lookup(#[doc = include_str!("fixtures/docs/query.md")] query: String) -> String {
    query
}

#[test]
fn doc_attributes_that_are_expressions_are_part_of_the_description() {
    let definition = lookup_tool().definition().clone();
    assert_eq!(definition.description.as_deref(), Some("Looks things up.\nReads the whole catalogue.\nNever writes."));
    assert_eq!(definition.parameters["properties"]["query"]["description"], "What to look up.");
}

/// Every tool option can be set from `#[tool(...)]`: the macro's key list (as its error for
/// an unknown key spells it, locked by trybuild) names each of `TOOL_OPTIONS`.
#[test]
fn the_macro_takes_every_tool_option() {
    let stderr = include_str!("ui/fail/unknown-argument/unknown-option.stderr");
    let expected = stderr.lines().find_map(|line| line.split("expected one of ").nth(1)).expect("the key list");
    for option in starweaver::TOOL_OPTIONS {
        assert!(expected.contains(&format!("`{option}`")), "`#[tool]` does not take `{option}`: {expected}");
    }
}

/// A return type with `JsonSchema` gives a return schema unless `return_schema = false`;
/// `ToolResult`, `serde_json::Value` and content parts (no schema, or one that says nothing
/// about the value) give none, without the user opting out.
#[test]
fn return_schemas_come_from_typed_returns_unless_opted_out() {
    assert_eq!(corpus::add_tool().definition().return_schema.as_ref().unwrap()["type"], "integer");
    assert_eq!(corpus::read_text_tool().definition().return_schema, Some(json!({"type": "string"})));
    for none in [
        corpus::count_untyped_tool().definition().return_schema.clone(),
        corpus::picture_tool().definition().return_schema.clone(),
        corpus::deploy_tool().definition().return_schema.clone(),
        corpus::lookup_tool().definition().return_schema.clone(),
        corpus::create_ticket_tool().definition().return_schema.clone(),
    ] {
        assert_eq!(none, None);
    }
}

/// Charges a card; a run may do it twice at most.
#[starweaver::tool(max_uses = 2)]
async fn charge(cents: u64) -> u64 {
    cents
}

#[tokio::test]
async fn max_uses_is_a_tool_option_of_the_macro_and_bounds_the_calls_of_a_run() {
    assert_eq!(charge_tool().definition().max_uses, Some(2));
    let calls = (0..3).map(|i| ToolCallPart::new(format!("c{i}"), "charge", json!({"cents": i}))).collect();
    let agent = Agent::builder(script(calls)).tool(charge_tool()).build().unwrap();
    let kinds: Vec<Option<Value>> =
        returns(&agent.run("go").await.unwrap()).iter().map(|r| r.content.get("kind").cloned()).collect();
    assert_eq!(kinds, [None, None, Some(json!("limit_reached"))]);
}

/// Searches the web; its API takes two requests at a time, from every run together.
#[starweaver::tool(max_concurrency = 2)]
async fn web_search(query: String) -> String {
    query
}

#[test]
fn max_concurrency_is_a_tool_option_of_the_macro() {
    let definition = web_search_tool().definition().clone();
    let limit = definition.max_concurrency.expect("the macro set it");
    assert_eq!((limit.name(), limit.max_running()), (None, 2));
}

/// Reads a long page; the model sees its first 12 characters.
#[starweaver::tool(max_return_chars = 12)]
async fn read_page() -> String {
    "0123456789".repeat(5)
}

#[tokio::test]
async fn max_return_chars_is_a_tool_option_of_the_macro_and_cuts_what_the_model_sees() {
    assert_eq!(read_page_tool().definition().max_return_chars, Some(12));
    let calls = vec![ToolCallPart::new("c1", "read_page", json!({}))];
    let agent = Agent::builder(script(calls)).tool(read_page_tool()).build().unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(returns(&result)[0].content, json!("012345678901… [38 more characters cut]"));
    assert_eq!(result.messages.to_json()[2]["parts"][0]["value"], json!("0123456789".repeat(5)));
}
