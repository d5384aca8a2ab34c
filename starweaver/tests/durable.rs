//! DESIGN.md §15: a run driven step by step from outside (as a durable workflow drives it),
//! every task and result crossing as JSON, ends exactly as the in-process run does.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};
use starweaver::durable::{CallResult, CallTask, DurableRun, ListTask, ModelTask, Step};
use starweaver::testing::TestModel;
use starweaver::{
    Agent, CancellationToken, DynamicToolset, Error, HitlDecisions, ModelResponse, RunError, RunResult, RunStatus,
    Tool, ToolBuilder, ToolContext, ToolError, Toolset,
};

/// Through JSON and back, as an engine records it.
fn recorded<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> T {
    serde_json::from_value(serde_json::to_value(value).unwrap()).unwrap()
}

/// Drives `run` to its end; calls start in the order released and each started batch
/// finishes in reverse, so the result cannot depend on finishing order.
async fn drive(agent: &Agent, run: &mut DurableRun) -> RunResult {
    drive_finishing(agent, run, true).await
}

/// Drives `run` to its end, each started batch finishing in reverse or in the order started.
async fn drive_finishing(agent: &Agent, run: &mut DurableRun, reverse: bool) -> RunResult {
    loop {
        match run.next_step() {
            Step::ListTools(task) => match agent.list_tools(&recorded::<ListTask>(&task)).await {
                Ok(listing) => run.tools_listed(recorded(&listing)),
                Err(error) => run.tools_lost(&error.to_string()),
            },
            Step::RequestModel(task) => match agent.request_model(&recorded::<ModelTask>(&task)).await {
                Ok(response) => run.model_responded(recorded(&response)),
                Err(error) => run.model_failed(error),
            },
            Step::StartCalls(tasks) => {
                let mut results = Vec::new();
                for task in tasks {
                    let task: CallTask = recorded(&task);
                    let result = agent.run_call(&task.call.id, &task, CancellationToken::default(), None).await;
                    results.push((task.index, recorded::<CallResult>(&result)));
                }
                if reverse {
                    results.reverse();
                }
                for (index, result) in results {
                    run.call_finished(index, result);
                }
            }
            Step::AwaitCalls => panic!("every started call was reported"),
            Step::CheckOutput(task) => run.output_checked(recorded(&agent.check_output(&recorded(&task)).await)),
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
    assert_eq!((durable.status, durable.text()), (RunStatus::Completed, Some("done")));
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
    assert_eq!((done.status, done.text()), (RunStatus::Completed, Some("both live")));
    let deployed: Vec<Value> = tool_returns(done.messages.messages()).into_iter().map(|r| r.content).collect();
    assert_eq!(deployed, [json!({"deployed": "staging"}), json!({"deployed": "prod"})]);
}

/// Everything a run's result says but its trace (a durable run is traced by its engine).
fn outcome(result: &RunResult) -> (RunStatus, Option<Value>, String, Value, Value, Vec<starweaver::Event>, Value) {
    (
        result.status,
        result.output.clone(),
        format!("{:?}", result.error),
        serde_json::to_value(&result.hitl).unwrap(),
        result.messages.to_json(),
        result.events.clone(),
        json!([result.usage, result.finish_reason]),
    )
}

#[tokio::test]
async fn one_script_through_both_drivers_gives_the_same_events_counts_and_result() {
    // A model retry, a sequential tool, an approval beside a finished call (so the waiting
    // run has one finished and one pending slot), a resume, and a final answer.
    let script = || {
        TestModel::new([
            TestModel::tool_call_response([
                call("c1", "read", json!({"path": "a"})),
                call("c2", "flaky", json!({})),
                call("c3", "write", json!({})),
            ]),
            TestModel::tool_call_response([
                call("c4", "flaky", json!({})),
                call("c5", "deploy", json!({"env": "prod"})),
            ]),
            ModelResponse::text("shipped"),
        ])
    };
    let build = |log: &Log| {
        let mut builder = Agent::builder(script()).shared_tool(gated());
        for tool in tools(log) {
            builder = builder.shared_tool(tool);
        }
        builder.build().unwrap()
    };

    let in_process_agent = build(&Log::default());
    let mut session = in_process_agent.session();
    let waiting = session.run("ship it").await.unwrap();
    assert_eq!(waiting.status, RunStatus::Waiting);
    let refused = session.run("again").await.unwrap_err();
    let decisions = HitlDecisions::from(vec![waiting.hitl.approvals[0].approve().decided_by("ops")]);
    let done = session.resume(decisions.clone()).await.unwrap();
    assert_eq!(done.text(), Some("shipped"));

    let durable_agent = build(&Log::default());
    let mut run = DurableRun::start(&durable_agent, "ship it", waiting.run_id.clone()).unwrap();
    let durable_waiting = drive_finishing(&durable_agent, &mut run, false).await;
    assert_eq!(outcome(&durable_waiting), outcome(&waiting));
    let state = run.export_state().unwrap();
    let restored = || durable_agent.restore_session(&state).unwrap();
    let durable_refused = DurableRun::start_in_session(&durable_agent, restored(), "again", "run_2").err().unwrap();
    assert_eq!(format!("{durable_refused:?}"), format!("{refused:?}"));
    assert!(matches!(refused, Error::SessionWaiting { pending: 1, .. }), "{refused:?}");
    assert!(matches!(restored().run("again").await, Err(Error::SessionWaiting { pending: 1, .. })));

    run.resume(decisions).unwrap();
    let durable_done = drive_finishing(&durable_agent, &mut run, false).await;
    assert_eq!(outcome(&durable_done), outcome(&done));
}

#[tokio::test]
async fn a_question_without_a_handler_waits_in_a_durable_run_as_in_process_and_its_answer_crosses_as_json() {
    let asks = || -> Arc<dyn Tool> {
        Arc::new(raw_tool(ToolBuilder::new("deploy"), |ctx: ToolContext, _: Args| async move {
            let schema = json!({"type": "object", "properties": {"env": {"type": "string"}}});
            let env = ctx.elicit("Which environment?", schema).await?;
            let sure = ctx.elicit("Sure?", json!({"type": "object"})).await?;
            Ok(json!(format!("{env:?} / {sure:?}")))
        }))
    };
    let build = || {
        let model = TestModel::new([
            TestModel::tool_call_response([call("c1", "deploy", json!({}))]),
            ModelResponse::text("shipped"),
        ]);
        Agent::builder(model).shared_tool(asks()).build().unwrap()
    };
    let in_process = build();
    let mut session = in_process.session();
    let mut results = vec![session.run("ship it").await.unwrap()];
    let env = results[0].hitl.elicitations[0].accept(json!({"env": "prod"}).as_object().unwrap().clone());
    results.push(session.resume(vec![env.clone()]).await.unwrap());
    let sure = results[1].hitl.elicitations[0].decline();
    results.push(session.resume(vec![sure.clone()]).await.unwrap());
    assert_eq!(results[2].text(), Some("shipped"));

    let durable = build();
    let mut run = DurableRun::start(&durable, "ship it", results[0].run_id.clone()).unwrap();
    assert_eq!(outcome(&drive(&durable, &mut run).await), outcome(&results[0]));
    run.resume(HitlDecisions::from(vec![env])).unwrap();
    let Step::StartCalls(tasks) = run.next_step() else { panic!("the answered call starts again") };
    let task = serde_json::to_value(&tasks[0]).unwrap();
    assert_eq!(task["answered"][0]["answer"], json!({"action": "accept", "content": {"env": "prod"}}), "{task}");
    let result = durable
        .run_call(&results[0].run_id, &recorded::<CallTask>(&tasks[0]), CancellationToken::default(), None)
        .await;
    run.call_finished(0, recorded(&result));
    assert_eq!(outcome(&drive(&durable, &mut run).await), outcome(&results[1]));
    run.resume(HitlDecisions::from(vec![sure])).unwrap();
    assert_eq!(outcome(&drive(&durable, &mut run).await), outcome(&results[2]));
}

/// An agent whose tools come from a dynamic toolset that offers `read` at step 1 (and
/// refuses a broken tool) and the gated `deploy` after, listing through `listings` while
/// `up` is set.
fn listed_agent(log: &Log, listings: &Counter, up: &Arc<std::sync::atomic::AtomicBool>) -> Agent {
    let read = tools(log).remove(0);
    let deploy = gated();
    let (listings, up) = (listings.clone(), up.clone());
    let phases = DynamicToolset::new("phases", move |ctx| {
        listings.bump();
        let tools = if ctx.step == 1 {
            ctx.refuse_tool("broken", "its schema is not an object");
            vec![read.clone()]
        } else {
            vec![deploy.clone()]
        };
        let up = up.load(std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move { if up { Ok(tools) } else { Err(starweaver::ToolsetError::new("the server is gone")) } })
    });
    let model = TestModel::new([
        TestModel::tool_call_response([call("c1", "read", json!({"path": "a"}))]),
        TestModel::tool_call_response([call("c2", "deploy", json!({"env": "prod"}))]),
        ModelResponse::text("shipped"),
    ]);
    Agent::builder(model).toolset(phases).build().unwrap()
}

#[tokio::test]
async fn a_durable_run_lists_dynamic_toolsets_at_each_step_and_ends_as_the_in_process_run() {
    let up = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let in_process = listed_agent(&Log::default(), &Counter::default(), &up);
    let mut session = in_process.session();
    let waiting = session.run("ship it").await.unwrap();
    assert_eq!(waiting.status, RunStatus::Waiting);
    let decisions = HitlDecisions::from(vec![waiting.hitl.approvals[0].approve()]);
    let done = session.resume(decisions.clone()).await.unwrap();

    let (log, listings) = (Log::default(), Counter::default());
    let durable = listed_agent(&log, &listings, &up);
    let mut run = DurableRun::start(&durable, "ship it", waiting.run_id.clone()).unwrap();
    let Step::ListTools(task) = run.next_step() else { panic!("an agent with a dynamic toolset lists first") };
    assert_eq!((task.step, listings.get()), (1, 0), "the run itself lists nothing");
    run.tools_listed(recorded(&durable.list_tools(&task).await.unwrap()));
    let Step::RequestModel(request) = run.next_step() else { panic!("then asks the model") };
    let offered: Vec<&str> = request.tools.iter().flatten().map(|d| d.name.as_str()).collect();
    assert_eq!(offered, ["read"], "the model task carries the step's tools");
    run.model_responded(durable.request_model(&recorded(&request)).await.unwrap());

    assert_eq!(outcome(&drive(&durable, &mut run).await), outcome(&waiting));
    assert_eq!(log.entries(), ["read {\"path\":\"a\"}"], "the listed tool ran where it was listed");
    run.resume(decisions).unwrap();
    assert!(matches!(run.next_step(), Step::ListTools(ListTask { step: 2, .. })), "a resume lists its step again");
    assert_eq!(outcome(&drive(&durable, &mut run).await), outcome(&done));
    let deployed: Vec<Value> = tool_returns(run_messages(&done)).into_iter().map(|r| r.content).collect();
    assert_eq!(deployed[1], json!({"deployed": "prod"}));
}

fn run_messages(result: &RunResult) -> &[Arc<starweaver::Message>] {
    result.messages.messages()
}

#[tokio::test]
async fn tools_that_cannot_be_listed_fail_a_step_and_leave_a_resume_waiting() {
    let up = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let agent = listed_agent(&Log::default(), &Counter::default(), &up);
    let mut run = DurableRun::start(&agent, "ship it", "run_l").unwrap();
    let waiting = drive(&agent, &mut run).await;
    assert_eq!(waiting.status, RunStatus::Waiting);
    let decisions = HitlDecisions::from(vec![waiting.hitl.approvals[0].approve()]);

    up.store(false, std::sync::atomic::Ordering::SeqCst);
    run.resume(decisions.clone()).unwrap();
    let again = drive(&agent, &mut run).await;
    assert_eq!(again.status, RunStatus::Waiting, "{:?}", again.error);
    assert_eq!(run.pending().unwrap().approvals[0].id, waiting.hitl.approvals[0].id);

    // The same decision is not a replay: the resume that could not list was undone.
    up.store(true, std::sync::atomic::Ordering::SeqCst);
    run.resume(decisions).unwrap();
    assert_eq!(drive(&agent, &mut run).await.text(), Some("shipped"));

    up.store(false, std::sync::atomic::Ordering::SeqCst);
    let mut run = DurableRun::start(&agent, "ship it", "run_m").unwrap();
    let failed = drive(&agent, &mut run).await;
    assert_eq!(failed.status, RunStatus::Failed);
    assert_eq!(
        failed.error,
        Some(RunError::Tools { message: "toolset `phases` could not list its tools: the server is gone".into() })
    );
}

#[tokio::test]
async fn a_durable_runs_model_requests_carry_the_toolset_instructions_and_its_calls_are_cut() {
    use starweaver::Toolset as _;
    let page: Arc<dyn Tool> = Arc::new(
        ToolBuilder::new("page").handler(|_: ToolContext, _: Args| async { Ok(json!("p".repeat(30))) }).unwrap(),
    );
    let docs = DynamicToolset::new("docs", move |_| {
        let tools = vec![page.clone()];
        Box::pin(async move { Ok(tools) })
    })
    .with_instructions("Quote pages exactly.")
    .with_max_return_chars(5);
    let model = calls_then_text(vec![call("c1", "page", json!({}))], "done");
    let agent = Agent::builder(model.clone()).toolset(docs).build().unwrap();
    let mut run = DurableRun::start(&agent, "read", "run_x").unwrap();
    let result = drive(&agent, &mut run).await;
    assert_eq!(result.status, RunStatus::Completed);
    let sent: Vec<Vec<String>> =
        model.requests().iter().map(|r| r.toolset_instructions.iter().map(ToString::to_string).collect()).collect();
    assert_eq!(sent, [["Quote pages exactly."], ["Quote pages exactly."]]);
    let returned = tool_returns(result.messages.messages())[0].content.clone();
    assert_eq!(returned, json!("ppppp… [25 more characters cut]"));
}

#[tokio::test]
async fn a_durable_listing_keeps_the_instructions_of_two_toolsets_of_one_name() {
    use starweaver::Toolset as _;
    let docs = |tool: &str, instructions: &str| {
        let tool: Arc<dyn Tool> =
            Arc::new(ToolBuilder::new(tool).handler(|_: ToolContext, _: Args| async { Ok(json!("ok")) }).unwrap());
        DynamicToolset::new("docs", move |_| {
            let tools = vec![tool.clone()];
            Box::pin(async move { Ok(tools) })
        })
        .with_instructions(instructions.to_owned())
    };
    let model = calls_then_text(vec![call("c1", "page", json!({}))], "done");
    let agent = Agent::builder(model.clone())
        .toolset(docs("page", "Quote pages exactly."))
        .toolset(docs("index", "The index is sorted by title."))
        .build()
        .unwrap();
    let mut run = DurableRun::start(&agent, "read", "run_y").unwrap();
    let result = drive(&agent, &mut run).await;
    assert_eq!(result.status, RunStatus::Completed);
    let sent: Vec<Vec<String>> =
        model.requests().iter().map(|r| r.toolset_instructions.iter().map(ToString::to_string).collect()).collect();
    assert_eq!(sent, [["Quote pages exactly.", "The index is sorted by title."]; 2]);
}

/// Offers only tools whose names do not start with `admin_`, and describes the rest anew.
struct HideAdmin;

impl starweaver::hook::Hooks for HideAdmin {
    fn prepare_tools<'a>(
        &'a self,
        _: &'a ToolContext,
        definitions: Vec<starweaver::ToolDefinition>,
    ) -> starweaver::hook::Hooked<'a, Result<Vec<starweaver::ToolDefinition>, ToolError>> {
        let kept = definitions
            .into_iter()
            .filter(|d| !d.name.starts_with("admin_"))
            .map(|d| starweaver::ToolDefinition { description: Some("checked".into()), ..d })
            .collect();
        starweaver::hook::Hooked::ready(Ok(kept))
    }
}

/// DESIGN.md §18: `prepare_tools` decides a durable run's tools as it does in process: the
/// step's listing runs it, the model task offers what it left, and a dropped tool's call
/// is refused.
#[tokio::test]
async fn a_durable_runs_steps_offer_the_tools_the_hooks_prepare() {
    let echo = |name: &str| {
        ToolBuilder::new(name).handler(|_: ToolContext, args: Args| async move { Ok(Value::Object(args)) }).unwrap()
    };
    let agent = |model: Arc<TestModel>| {
        let admin = starweaver::StaticToolset::new("admin")
            .tool(echo("admin_list"))
            .tool(echo("list"))
            .with_hooks([Arc::new(HideAdmin) as Arc<dyn starweaver::hook::Hooks>]);
        let agent = Agent::builder(model).tool(echo("admin_drop")).tool(echo("echo")).toolset(admin);
        agent.hook(HideAdmin).build().unwrap()
    };
    let calls = || vec![call("c1", "admin_drop", json!({})), call("c2", "list", json!({}))];
    let in_process = agent(calls_then_text(calls(), "done")).run("go").await.unwrap();

    let model = calls_then_text(calls(), "done");
    let durable_agent = agent(model.clone());
    let mut run = DurableRun::start(&durable_agent, "go", "run_1").unwrap();
    let Step::ListTools(task) = run.next_step() else { panic!("an agent with hooks lists each step's tools") };
    run.tools_listed(recorded(&durable_agent.list_tools(&task).await.unwrap()));
    let Step::RequestModel(task) = run.next_step() else { panic!("the model is asked next") };
    let offered: Vec<(String, Option<String>)> =
        task.tools.as_ref().unwrap().iter().map(|d| (d.name.clone(), d.description.clone())).collect();
    let checked = |name: &str| (name.to_owned(), Some("checked".to_owned()));
    assert_eq!(offered, [checked("echo"), checked("list")], "the agent's and the toolset's hooks drop `admin_*`");
    run.model_responded(recorded(&durable_agent.request_model(&task).await.unwrap()));
    let result = drive(&durable_agent, &mut run).await;

    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(result.messages.to_json(), in_process.messages.to_json(), "as in process");
    let returns = tool_returns(result.messages.messages());
    assert_eq!(returns[0].content["kind"], "not_found", "{}", returns[0].content);
    assert!(!returns[1].is_error, "{}", returns[1].content);
    let tools_of = |request: usize| model.requests()[request].tools.iter().map(|d| d.name.clone()).collect::<Vec<_>>();
    assert_eq!(tools_of(1), ["echo", "list"], "the second step is prepared again");
}
