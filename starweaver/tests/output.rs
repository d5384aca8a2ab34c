//! Typed output (DESIGN.md §17): output tools, unions with and without text, output
//! functions, validation and retries, validators, end strategies, and durable runs.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};
use starweaver::durable::{DurableRun, Step};
use starweaver::output::{Output, OutputMode};
use starweaver::testing::TestModel;
use starweaver::{
    Agent, CancellationToken, EndStrategy, Error, ModelResponse, RunError, RunOptions, RunStatus, ToolBuilder,
    ToolContext, ToolError, tool,
};

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// An invoice read from a document.
struct Invoice {
    /// Its number, as printed.
    number: String,
    total_cents: u64,
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Refusal {
    reason: String,
}

fn invoice_call(id: &str, arguments: Value) -> ModelResponse {
    TestModel::tool_call_response([call(id, "final_result", arguments)])
}

#[tokio::test]
async fn a_typed_output_ends_the_run_with_the_decoded_value() {
    let model = Arc::new(TestModel::new([invoice_call("c1", json!({"number": "A-7", "total_cents": 1250}))]));
    let agent = Agent::builder(model.clone()).output_type::<Invoice>().build().unwrap();
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(result.output_as::<Invoice>().unwrap(), Invoice { number: "A-7".into(), total_cents: 1250 });
    assert_eq!(result.output_tool.as_deref(), Some("final_result"));
    assert_eq!(result.text(), None);
    // The model sees that the result was taken; the value stays host-only.
    let ret = &result.messages.to_json()[2]["parts"][0];
    assert_eq!(ret["content"], "Final result processed.");
    assert_eq!(ret["value"], json!({"number": "A-7", "total_cents": 1250}));
    let events: Vec<Value> = result.events.iter().map(|e| serde_json::to_value(e).unwrap()).collect();
    let complete = events.iter().find(|e| e["type"] == "run_complete").unwrap();
    assert_eq!((&complete["output"]["number"], &complete["output_tool"]), (&json!("A-7"), &json!("final_result")));
    // The output tool is offered as tools are, described by the type's doc comment.
    let offered = &model.requests()[0].tools;
    assert_eq!(offered.len(), 1);
    assert_eq!(offered[0].description.as_deref(), Some("An invoice read from a document."));
    assert_eq!(offered[0].parameters["required"], json!(["number", "total_cents"]));
}

#[tokio::test]
async fn a_failed_decode_goes_back_to_the_model_naming_the_field() {
    let model = Arc::new(TestModel::new([
        invoice_call("c1", json!({"number": "A-7", "total_cents": "lots"})),
        invoice_call("c2", json!({"number": "A-7", "total_cents": 5})),
    ]));
    let agent = Agent::builder(model.clone()).output_type::<Invoice>().build().unwrap();
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.output_as::<Invoice>().unwrap().total_cents, 5);
    let first = &tool_returns(result.messages.messages())[0];
    assert!(first.is_error);
    assert_eq!(first.content["kind"], "invalid_arguments");
    assert!(first.content["message"].as_str().unwrap().contains("total_cents"), "{}", first.content);
}

#[tokio::test]
async fn past_its_retries_the_output_fails_the_run() {
    let bad = || invoice_call("c", json!({"number": 7}));
    let model = TestModel::new([bad(), bad(), bad()]);
    let agent = Agent::builder(model).output_type::<Invoice>().output_retries(1).build().unwrap();
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.status, RunStatus::Failed);
    let Some(RunError::OutputValidation { max_retries, message }) = &result.error else {
        panic!("expected an output validation error, got {:?}", result.error)
    };
    assert_eq!(*max_retries, 1);
    assert!(message.contains("number"), "{message}");
    assert!(result.output.is_none());
}

#[tokio::test]
async fn a_union_offers_one_output_tool_per_member() {
    let model = Arc::new(TestModel::new([TestModel::tool_call_response([call(
        "c1",
        "final_result_Refusal",
        json!({"reason": "not an invoice"}),
    )])]));
    let agent = Agent::builder(model.clone()).output_type::<Invoice>().output_type::<Refusal>().build().unwrap();
    let names: Vec<&str> = agent.definitions().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["final_result_Invoice", "final_result_Refusal"]);
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.output_tool.as_deref(), Some("final_result_Refusal"));
    assert_eq!(result.output_as::<Refusal>().unwrap().reason, "not an invoice");
    assert!(result.output_as::<Invoice>().is_err());
}

#[tokio::test]
async fn text_is_refused_unless_the_output_takes_it() {
    let model = Arc::new(TestModel::new([
        ModelResponse::text("it is A-7"),
        invoice_call("c1", json!({"number": "A-7", "total_cents": 1})),
    ]));
    let agent = Agent::builder(model.clone()).output_type::<Invoice>().build().unwrap();
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.output_as::<Invoice>().unwrap().number, "A-7");
    let told = &model.requests()[1].messages;
    let last = serde_json::to_value(told.last().unwrap()).unwrap();
    assert!(last.to_string().contains("calling `final_result`"), "{last}");

    let model = TestModel::new([ModelResponse::text("no invoice here")]);
    let agent = Agent::builder(model).output_type::<Invoice>().text_output().build().unwrap();
    let result = agent.run("read it").await.unwrap();
    assert_eq!((result.text(), result.output_tool.as_deref()), (Some("no invoice here"), None));
}

#[tokio::test]
async fn a_type_that_is_not_an_object_is_asked_for_under_response() {
    let model = Arc::new(TestModel::new([invoice_call("c1", json!({"response": ["a", "b"]}))]));
    let agent = Agent::builder(model.clone()).output_type::<Vec<String>>().build().unwrap();
    assert_eq!(agent.definitions()[0].parameters["properties"]["response"]["type"], "array");
    let result = agent.run("list").await.unwrap();
    assert_eq!(result.output_as::<Vec<String>>().unwrap(), ["a", "b"]);
}

fn side_effect(ran: &Counter) -> impl starweaver::Tool {
    let ran = ran.clone();
    raw_tool(ToolBuilder::new("notify"), move |_, _| {
        let ran = ran.clone();
        async move {
            ran.bump();
            Ok(json!("sent"))
        }
    })
}

#[tokio::test]
async fn early_end_skips_the_other_calls_and_exhaustive_runs_them() {
    let response = || {
        TestModel::tool_call_response([
            call("n1", "notify", json!({})),
            call("c1", "final_result", json!({"number": "A-7", "total_cents": 1})),
        ])
    };
    for (strategy, runs) in [(EndStrategy::Early, 0), (EndStrategy::Exhaustive, 1)] {
        let ran = Counter::default();
        let agent = Agent::builder(TestModel::new([response()]))
            .tool(side_effect(&ran))
            .output_type::<Invoice>()
            .end_strategy(strategy)
            .build()
            .unwrap();
        let result = agent.run("go").await.unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{strategy:?}");
        assert_eq!(ran.get(), runs, "{strategy:?}");
        let returns = tool_returns(result.messages.messages());
        assert_eq!(returns.len(), 2, "every call has a return");
        let notify = returns.iter().find(|r| &*r.name == "notify").unwrap();
        match strategy {
            EndStrategy::Early => assert_eq!(notify.content["kind"], "cancelled"),
            EndStrategy::Exhaustive => assert_eq!(notify.content, json!("sent")),
        }
    }
}

#[tokio::test]
async fn a_refused_output_lets_the_other_calls_run_and_the_next_output_call_is_tried() {
    let ran = Counter::default();
    let model = TestModel::new([TestModel::tool_call_response([
        call("c1", "final_result", json!({"number": 1})),
        call("n1", "notify", json!({})),
        call("c2", "final_result", json!({"number": "B-2", "total_cents": 3})),
    ])]);
    let agent = Agent::builder(model).tool(side_effect(&ran)).output_type::<Invoice>().build().unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.output_as::<Invoice>().unwrap().number, "B-2");
    assert_eq!(ran.get(), 0, "the second output call was taken, so `early` skips the others");
}

/// Reads the weather into a report; the model fills the parameters.
#[tool]
#[allow(clippy::needless_pass_by_value)] // a tool's parameters are decoded, owned values
fn report(_ctx: &ToolContext, city: String, celsius: f64) -> Result<Value, ToolError> {
    if celsius < -90.0 {
        return Err(ToolError::model_retry("no city is that cold: check the reading"));
    }
    Ok(json!({ "report": format!("{city}: {celsius} °C") }))
}

#[tokio::test]
async fn an_output_function_gives_its_return_value_and_may_ask_again() {
    let model = Arc::new(TestModel::new([
        invoice_call("c1", json!({"city": "Oslo", "celsius": -120.0})),
        invoice_call("c2", json!({"city": "Oslo", "celsius": -3.0})),
    ]));
    let agent = Agent::builder(model.clone()).output_function(report_tool()).build().unwrap();
    assert_eq!(agent.definitions()[0].name, "final_result");
    let result = agent.run("weather").await.unwrap();
    assert_eq!(result.output, Some(json!({"report": "Oslo: -3 °C"})));
    assert_eq!(tool_returns(result.messages.messages())[0].content["kind"], "model_retry");
}

#[tokio::test]
async fn validators_may_change_the_output_or_ask_again() {
    let model = TestModel::new([
        invoice_call("c1", json!({"number": "a-7", "total_cents": 0})),
        invoice_call("c2", json!({"number": "a-7", "total_cents": 9})),
    ]);
    let agent = Agent::builder(model)
        .output_type::<Invoice>()
        .output_validator(|_: ToolContext, output: Value| async move {
            match output["total_cents"].as_u64() {
                Some(0) => Err(ToolError::model_retry("an invoice's total is never 0")),
                _ => Ok(output),
            }
        })
        .output_validator(|_: ToolContext, mut output: Value| async move {
            output["number"] = json!(output["number"].as_str().unwrap_or_default().to_uppercase());
            Ok(output)
        })
        .build()
        .unwrap();
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.output_as::<Invoice>().unwrap(), Invoice { number: "A-7".into(), total_cents: 9 });
    assert!(tool_returns(result.messages.messages())[0].content["message"].as_str().unwrap().contains("never 0"));
}

#[tokio::test]
async fn output_tools_are_neither_gated_nor_hooked_and_take_no_other_tools_name() {
    let model = TestModel::new([invoice_call("c1", json!({"number": "A-7", "total_cents": 1}))]);
    let agent = Agent::builder(model).output_type::<Invoice>().approval_required_tools(["*"]).build().unwrap();
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed, "`*` gates the tools, not the output");

    let named = raw_tool(ToolBuilder::new("final_result"), |_, _| async { Ok(json!(1)) });
    let refused = Agent::builder(TestModel::new([])).tool(named).output_type::<Invoice>().build();
    assert!(matches!(refused, Err(Error::ToolCollision { .. })), "{:?}", refused.err());
}

#[tokio::test]
async fn a_durable_run_ends_with_the_same_output() {
    let script =
        || [invoice_call("c1", json!({"number": 1})), invoice_call("c2", json!({"number": "A-7", "total_cents": 2}))];
    let agent = Agent::builder(TestModel::new(script())).output_type::<Invoice>().build().unwrap();
    let mut run = DurableRun::start(&agent, "read it", "run_1").unwrap();
    let durable = loop {
        match run.next_step() {
            Step::ListTools(task) => run.tools_listed(agent.list_tools(&task).await.unwrap()),
            Step::RequestModel(task) => run.model_responded(agent.request_model(&task).await.unwrap()),
            Step::StartCalls(tasks) => {
                for task in tasks {
                    let result = agent.run_call("run_1", &task, CancellationToken::default(), None).await;
                    run.call_finished(task.index, result);
                }
            }
            Step::AwaitCalls => unreachable!("every started call was reported"),
            Step::CheckOutput(task) => run.output_checked(agent.check_output(&task).await),
            Step::Done(result) => break result,
        }
    };
    let local = Agent::builder(TestModel::new(script())).output_type::<Invoice>().build().unwrap();
    let local = local.run("read it").await.unwrap();
    assert_eq!((durable.output.clone(), durable.output_tool.clone()), (local.output, local.output_tool));
    assert_eq!(durable.output_as::<Invoice>().unwrap().total_cents, 2);
}

#[test]
fn the_output_tools_definitions_are_snapshotted() {
    let agent = Agent::builder(TestModel::new([])).output_type::<Invoice>().build().unwrap();
    let union = Agent::builder(TestModel::new([]))
        .output_type::<Invoice>()
        .output_type::<Refusal>()
        .output_type::<Vec<String>>()
        .build()
        .unwrap();
    let function = Agent::builder(TestModel::new([])).output_function(report_tool()).build().unwrap();
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_json_snapshot!("rust__output_tool_model", agent.definitions());
        insta::assert_json_snapshot!("rust__output_tool_union", union.definitions());
        insta::assert_json_snapshot!("rust__output_tool_function", function.definitions());
    });
}

#[tokio::test]
async fn native_output_reads_the_answer_as_json_and_asks_again_when_it_is_not() {
    let model = Arc::new(TestModel::new([
        ModelResponse::text("A-7, 5 cents"),
        ModelResponse::text(r#"{"number": "A-7", "total_cents": 5}"#),
    ]));
    let agent = Agent::builder(model.clone()).output_type::<Invoice>().output_mode(OutputMode::Native).build().unwrap();
    assert!(agent.definitions().is_empty(), "native output offers no output tool");
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.output_as::<Invoice>().unwrap().total_cents, 5);
    assert_eq!(result.output_tool, None);
    let requests = model.requests();
    assert_eq!(requests[0].output.as_ref().map(|d| d.name.as_str()), Some("final_result"));
    let told = serde_json::to_value(requests[1].messages.last().unwrap()).unwrap();
    assert!(told.to_string().contains("must be JSON"), "{told}");
}

#[tokio::test]
async fn prompted_output_puts_the_schema_in_the_instructions_and_takes_fenced_json() {
    let model =
        Arc::new(TestModel::new([ModelResponse::text("```json\n{\"number\": \"P-1\", \"total_cents\": 9}\n```")]));
    let agent = Agent::builder(model.clone())
        .instructions("Read invoices.")
        .output_type::<Invoice>()
        .output_mode(OutputMode::Prompted)
        .build()
        .unwrap();
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.output_as::<Invoice>().unwrap(), Invoice { number: "P-1".into(), total_cents: 9 });
    let system = serde_json::to_value(&model.requests()[0].messages[0]).unwrap();
    let text = system["parts"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Read invoices.") && text.contains(r#""total_cents""#), "{text}");
    assert!(model.requests()[0].output.is_none(), "prompted output sends no response format");
}

#[tokio::test]
async fn native_and_prompted_output_refuse_text_beside_their_types() {
    for mode in [OutputMode::Native, OutputMode::Prompted] {
        let built = union_agent(TestModel::new([]), mode).text_output().build();
        let Err(Error::InvalidOption { option: "output_type", message }) = built.map(drop) else {
            panic!("the agent is refused")
        };
        assert!(message.contains("without text"), "{message}");
    }
}

/// A union's answer as native and prompted output ask for it.
fn union_answer(kind: &str, data: Value) -> ModelResponse {
    let mut answer = json!({"result": {"kind": kind}});
    answer["result"]["data"] = data;
    ModelResponse::text(answer.to_string())
}

/// An agent whose output is `Invoice | Refusal`, asked for in `mode`.
fn union_agent(model: impl starweaver::Model, mode: OutputMode) -> starweaver::AgentBuilder {
    Agent::builder(model).output_type::<Invoice>().output_type::<Refusal>().output_mode(mode)
}

#[tokio::test]
async fn a_native_union_answers_with_the_member_its_kind_names() {
    let model = Arc::new(TestModel::new([union_answer("Refusal", json!({"reason": "not an invoice"}))]));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let saw = seen.clone();
    let agent = union_agent(model.clone(), OutputMode::Native)
        .output_validator(move |ctx: ToolContext, output: Value| {
            saw.lock().unwrap().push(ctx.tool_name().to_owned());
            async move { Ok(output) }
        })
        .build()
        .unwrap();
    assert!(agent.definitions().is_empty(), "native output offers no output tool");
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(result.output_as::<Refusal>().unwrap(), Refusal { reason: "not an invoice".into() });
    assert_eq!(result.output_tool.as_deref(), Some("final_result_Refusal"));
    assert_eq!(*seen.lock().unwrap(), ["final_result_Refusal"], "the validators see the member's tool");
    let events: Vec<Value> = result.events.iter().map(|e| serde_json::to_value(e).unwrap()).collect();
    let complete = events.iter().find(|e| e["type"] == "run_complete").unwrap();
    assert_eq!(complete["output_tool"], "final_result_Refusal");
    // One schema asks for either member, each under its own name.
    let asked = model.requests()[0].output.clone().unwrap();
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_json_snapshot!("rust__native_output_union", asked);
    });
    let kinds: Vec<&Value> = asked.parameters["properties"]["result"]["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|member| &member["properties"]["kind"]["const"])
        .collect();
    assert_eq!(kinds, [&json!("Invoice"), &json!("Refusal")]);
}

#[tokio::test]
async fn a_union_answer_of_an_unknown_kind_or_without_data_goes_back_to_the_model() {
    let model = Arc::new(TestModel::new([
        union_answer("Receipt", json!({"reason": "?"})),
        ModelResponse::text(r#"{"result": {"kind": "Invoice"}}"#),
        union_answer("Invoice", json!({"number": "A-7", "total_cents": 3})),
    ]));
    let agent = union_agent(model.clone(), OutputMode::Native).output_retries(2).build().unwrap();
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.output_as::<Invoice>().unwrap(), Invoice { number: "A-7".into(), total_cents: 3 });
    assert_eq!(result.output_tool.as_deref(), Some("final_result_Invoice"));
    let told = |request: usize| serde_json::to_value(model.requests()[request].messages.last().unwrap()).unwrap();
    let unknown = told(1).to_string();
    assert!(unknown.contains(r#"unknown `result.kind` \"Receipt\""#) && unknown.contains("`Refusal`"), "{unknown}");
    assert!(told(2).to_string().contains("missing field `result.data`"), "{}", told(2));
    // Each correction counts against the output's retries: one fewer and the run fails.
    let script = [union_answer("Receipt", json!({})), ModelResponse::text(r#"{"result": {"kind": "Invoice"}}"#)];
    let agent = union_agent(TestModel::new(script), OutputMode::Native).build().unwrap();
    let result = agent.run("read it").await.unwrap();
    assert!(matches!(result.error, Some(RunError::OutputValidation { max_retries: 1, .. })), "{:?}", result.error);
}

#[tokio::test]
async fn a_prompted_union_shows_the_union_schema_in_the_instructions() {
    let model = Arc::new(TestModel::new([ModelResponse::text(format!(
        "```json\n{}\n```",
        json!({"result": {"kind": "Invoice", "data": {"number": "P-1", "total_cents": 9}}})
    ))]));
    let agent = union_agent(model.clone(), OutputMode::Prompted).instructions("Read invoices.").build().unwrap();
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.output_as::<Invoice>().unwrap(), Invoice { number: "P-1".into(), total_cents: 9 });
    assert_eq!(result.output_tool.as_deref(), Some("final_result_Invoice"));
    let request = &model.requests()[0];
    assert!(request.output.is_none(), "prompted output sends no response format");
    let system = serde_json::to_value(&request.messages[0]).unwrap();
    let text = system["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#""anyOf""#) && text.contains(r#""const":"Refusal""#), "{text}");
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!("rust__prompted_output_union_instructions", text);
    });
}

mod first {
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Line {
        pub sku: String,
    }
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Order {
        pub line: Line,
    }
}

mod second {
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Line {
        pub text: String,
    }
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Memo {
        pub line: Line,
        pub again: super::first::Order,
    }
}

#[tokio::test]
async fn a_union_hoists_its_members_defs_and_refuses_two_of_one_name_that_differ() {
    // `Order` and `Memo` both define a `Line`, differently.
    let built = Agent::builder(TestModel::new([]))
        .output_type::<first::Order>()
        .output_type::<second::Memo>()
        .output_mode(OutputMode::Native)
        .build();
    let Err(Error::InvalidOption { option: "output_type", message }) = built.map(drop) else {
        panic!("the agent is refused")
    };
    assert!(message.contains("`Order` and `Memo` define `$defs/Line` differently"), "{message}");
    // The same definition given by two members is hoisted to the root once.
    let model = Arc::new(TestModel::new([union_answer("Order", json!({"line": {"sku": "X"}}))]));
    let agent = Agent::builder(model.clone())
        .output_type::<first::Order>()
        .output_type::<Refusal>()
        .output_type::<first::Line>()
        .output_mode(OutputMode::Native)
        .build()
        .unwrap();
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.output, Some(json!({"line": {"sku": "X"}})));
    assert_eq!(result.output_tool.as_deref(), Some("final_result_Order"));
    let asked = model.requests()[0].output.clone().unwrap().parameters;
    let defs: Vec<&String> = asked["$defs"].as_object().unwrap().keys().collect();
    assert_eq!(defs, ["Line"]);
    let order = &asked["properties"]["result"]["anyOf"][0]["properties"]["data"];
    assert_eq!((order.get("$defs"), &order["properties"]["line"]["$ref"]), (None, &json!("#/$defs/Line")));
}

#[tokio::test]
async fn a_durable_run_of_a_native_union_records_the_member_that_answered() {
    let script = || [union_answer("Refusal", json!({"reason": "blank page"}))];
    let agent = union_agent(TestModel::new(script()), OutputMode::Native).build().unwrap();
    let mut run = DurableRun::start(&agent, "read it", "run_1").unwrap();
    let durable = loop {
        match run.next_step() {
            Step::RequestModel(task) => run.model_responded(agent.request_model(&task).await.unwrap()),
            Step::CheckOutput(task) => {
                let checked = agent.check_output(&task).await;
                // What an engine records crosses as JSON.
                let checked = serde_json::from_value(serde_json::to_value(&checked).unwrap()).unwrap();
                run.output_checked(checked);
            }
            Step::Done(result) => break result,
            step => panic!("{step:?}"),
        }
    };
    let local =
        union_agent(TestModel::new(script()), OutputMode::Native).build().unwrap().run("read it").await.unwrap();
    assert_eq!(durable.output_tool.as_deref(), Some("final_result_Refusal"));
    assert_eq!((durable.output, durable.output_tool), (local.output, local.output_tool));
}

#[tokio::test]
async fn validators_check_a_text_answer_too() {
    let model = TestModel::new([ModelResponse::text("hello"), ModelResponse::text("HELLO")]);
    let agent = Agent::builder(model)
        .output_validator(|_: ToolContext, output: Value| async move {
            match output.as_str() {
                Some(text) if text == text.to_uppercase() => Ok(json!(format!("{text}!"))),
                _ => Err(ToolError::model_retry("shout it")),
            }
        })
        .build()
        .unwrap();
    let result = agent.run("greet").await.unwrap();
    assert_eq!(result.text(), Some("HELLO!"));
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct City {
    name: String,
}

fn with_output(output: Output) -> RunOptions {
    RunOptions { output: Some(output), ..RunOptions::default() }
}

#[tokio::test]
async fn a_run_may_ask_for_its_own_output_instead_of_the_agents() {
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "final_result", json!({"name": "Lyon"}))]),
        invoice_call("c2", json!({"number": "A-7", "total_cents": 5})),
    ]));
    let agent = Agent::builder(model.clone())
        .output_type::<Invoice>()
        .output_validator(|_: ToolContext, _: Value| async move { Err(ToolError::model_retry("never")) })
        .output_retries(0)
        .build()
        .unwrap();
    // The run's own output replaces the agent's: its tool only, none of the agent's validators.
    let result = agent.run_with("where?", with_output(Output::new().typed::<City>())).await.unwrap();
    assert_eq!(result.output_as::<City>().unwrap(), City { name: "Lyon".into() });
    let offered = &model.requests()[0].tools;
    assert_eq!(offered.len(), 1);
    assert_eq!(offered[0].parameters["required"], json!(["name"]));
    // The agent's own runs are as before.
    let result = agent.run("read it").await.unwrap();
    assert_eq!(result.status, RunStatus::Failed, "the agent's validator refuses every invoice");
    assert!(matches!(result.error, Some(RunError::OutputValidation { .. })), "{:?}", result.error);
}

#[tokio::test]
async fn a_run_of_a_text_agent_may_ask_for_prompted_output_and_text_again() {
    let model =
        Arc::new(TestModel::new([ModelResponse::text(r#"{"name": "Oslo"}"#), ModelResponse::text("plain words")]));
    let agent = Agent::builder(model.clone()).instructions("Be brief.").build().unwrap();
    let prompted = Output::new().typed::<City>().mode(OutputMode::Prompted);
    let result = agent.run_with("where?", with_output(prompted)).await.unwrap();
    assert_eq!(result.output_as::<City>().unwrap().name, "Oslo");
    let system = |request: usize| serde_json::to_value(&model.requests()[request].messages[0]).unwrap();
    let text = system(0)["parts"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.starts_with("Be brief.\n\n") && text.contains(r#""name""#), "{text}");
    // A run without its own output answers in text, with the agent's instructions alone.
    let result = agent.run("and now?").await.unwrap();
    assert_eq!(result.text(), Some("plain words"));
    assert_eq!(system(1)["parts"][0]["text"], "Be brief.");
}

#[tokio::test]
async fn a_runs_own_output_is_checked_before_anything_happens() {
    let model = Arc::new(TestModel::new([ModelResponse::text("never asked")]));
    let agent = Agent::builder(model.clone()).build().unwrap();
    let with_text = Output::new().typed::<Invoice>().typed::<City>().or_text().mode(OutputMode::Native);
    let refused = agent.run_with("where?", with_output(with_text)).await;
    let Err(Error::InvalidOption { option, message }) = refused else { panic!("{refused:?}") };
    assert_eq!(option, "output_type");
    assert!(message.contains("NativeOutput takes types, without text"), "{message}");
    assert!(model.requests().is_empty(), "nothing was sent");
}
