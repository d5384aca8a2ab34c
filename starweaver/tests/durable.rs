//! DESIGN.md §15: a run driven step by step from outside (as a durable workflow drives it),
//! every task and result crossing as JSON, ends exactly as the in-process run does.

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};
use starweaver::durable::{CallResult, CallTask, DurableRun, ModelTask, Step};
use starweaver::testing::TestModel;
use starweaver::{
    Agent, Error, HitlDecisions, ModelResponse, RunResult, RunStatus, Tool, ToolBuilder, ToolContext, ToolError,
};

/// Through JSON and back, as an engine records it.
fn recorded<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> T {
    serde_json::from_value(serde_json::to_value(value).unwrap()).unwrap()
}

/// Drives `run` to its end; calls start in the order released and each started batch
/// finishes in reverse, so the result cannot depend on finishing order.
async fn drive(agent: &Agent, run: &mut DurableRun) -> RunResult {
    loop {
        match run.next_step() {
            Step::RequestModel(task) => match agent.request_model(&recorded::<ModelTask>(&task)).await {
                Ok(response) => run.model_responded(recorded(&response)),
                Err(error) => run.model_failed(error),
            },
            Step::StartCalls(tasks) => {
                let mut results = Vec::new();
                for task in tasks {
                    let task: CallTask = recorded(&task);
                    let result = agent.run_call(&task.call.id, &task, Default::default()).await;
                    results.push((task.index, recorded::<CallResult>(&result)));
                }
                for (index, result) in results.into_iter().rev() {
                    run.call_finished(index, result);
                }
            }
            Step::AwaitCalls => panic!("every started call was reported"),
            Step::Done(result) => return result,
        }
    }
}

fn tools(log: &Log) -> Vec<Arc<dyn Tool>> {
    let named = |name: &str, sequential: bool| -> Arc<dyn Tool> {
        let log = log.clone();
        let label = name.to_owned();
        Arc::new(raw_tool(ToolBuilder::new(name).sequential(sequential), move |_: ToolContext, args: Args| {
            log.push(format!("{label} {}", Value::Object(args.clone())));
            async move { Ok(json!({"ok": true})) }
        }))
    };
    let flaky: Arc<dyn Tool> =
        Arc::new(raw_tool(ToolBuilder::new("flaky").max_retries(1), |ctx: ToolContext, _: Args| {
            let retry = ctx.retry();
            async move { if retry == 0 { Err(ToolError::model_retry("once more")) } else { Ok(json!(retry)) } }
        }));
    vec![named("read", false), named("fetch", false), named("write", true), flaky]
}

fn script() -> Vec<ModelResponse> {
    vec![
        TestModel::tool_call_response([
            call("c1", "read", json!({"path": "a"})),
            call("c2", "fetch", json!({})),
            call("c3", "read", json!({"path": "b"})),
            call("c4", "write", json!({})),
            call("c5", "flaky", json!({})),
        ]),
        TestModel::tool_call_response([call("c6", "flaky", json!({}))]),
        ModelResponse::text("done"),
    ]
}

fn agent(log: &Log) -> Agent {
    let mut builder = Agent::builder(TestModel::new(script()));
    for tool in tools(log) {
        builder = builder.shared_tool(tool);
    }
    builder.build().unwrap()
}

#[tokio::test]
async fn a_durable_run_ends_as_the_in_process_run_of_the_same_script() {
    let in_process = agent(&Log::default()).run("go").await.unwrap();
    let log = Log::default();
    let durable_agent = agent(&log);
    let mut run = DurableRun::start(&durable_agent, "go", in_process.run_id.clone()).unwrap();
    let durable = drive(&durable_agent, &mut run).await;
    assert_eq!((durable.status, durable.output.as_deref()), (RunStatus::Completed, Some("done")));
    assert_eq!(durable.messages.to_json(), in_process.messages.to_json());
    let kinds = |r: &RunResult| {
        r.events.iter().map(|e| serde_json::to_value(&e.kind).unwrap()["type"].clone()).collect::<Vec<_>>()
    };
    assert_eq!(kinds(&durable).len(), kinds(&in_process).len());
    // Same-name calls in model order; the sequential one after everything before it.
    let order = log.entries();
    assert!(
        order.iter().position(|e| e == "read {\"path\":\"a\"}")
            < order.iter().position(|e| e == "read {\"path\":\"b\"}")
    );
    assert_eq!(order.last().map(String::as_str), Some("write {}"), "{order:?}");
}

fn gated() -> Arc<dyn Tool> {
    Arc::new(raw_tool(ToolBuilder::new("deploy"), |ctx: ToolContext, args: Args| async move {
        match ctx.approval() {
            None => Err(ToolError::approval_required("deploys need a human")),
            Some(_) => Ok(json!({"deployed": args["env"]})),
        }
    }))
}

#[tokio::test]
async fn a_waiting_durable_run_takes_decisions_once_and_refuses_a_replay() {
    let model = TestModel::new([
        TestModel::tool_call_response([call("c1", "deploy", json!({"env": "staging"}))]),
        TestModel::tool_call_response([call("c2", "deploy", json!({"env": "prod"}))]),
        ModelResponse::text("both live"),
    ]);
    let agent = Agent::builder(model).shared_tool(gated()).build().unwrap();
    let mut run = DurableRun::start(&agent, "deploy twice", "run_x").unwrap();
    let first = drive(&agent, &mut run).await;
    assert_eq!(first.status, RunStatus::Waiting);
    let staging = HitlDecisions::from(vec![first.hitl.approvals[0].approve()]);

    let forged = HitlDecisions::from(vec![starweaver::ApprovalDecision {
        id: "run_x:nope".into(),
        approved: true,
        ..Default::default()
    }]);
    assert!(matches!(run.resume(forged), Err(Error::UnknownDecision { .. })));
    assert_eq!(run.pending().map(|h| h.approvals.len()), Some(1), "a refused decision leaves the run waiting");

    run.check(staging.clone()).unwrap();
    run.resume(staging.clone()).unwrap();
    let second = drive(&agent, &mut run).await;
    assert_eq!(second.status, RunStatus::Waiting);
    assert!(matches!(run.resume(staging), Err(Error::ReplayedDecision { .. })));

    // Carried across a continue-as-new.
    let mut run = DurableRun::restore(&agent, &run.export_state().unwrap(), "run_x").unwrap();
    let prod = HitlDecisions::from(vec![run.pending().unwrap().approvals[0].approve()]);
    run.resume(prod).unwrap();
    let done = drive(&agent, &mut run).await;
    assert_eq!((done.status, done.output.as_deref()), (RunStatus::Completed, Some("both live")));
    let deployed: Vec<Value> = tool_returns(done.messages.messages()).into_iter().map(|r| r.content).collect();
    assert_eq!(deployed, [json!({"deployed": "staging"}), json!({"deployed": "prod"})]);
}
