//! DESIGN.md §14: toolsets, static and dynamic, their combinators, and tools a run adds
//! for itself.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};
use starweaver::testing::TestModel;
use starweaver::{
    Agent, DynamicToolset, Error, ModelResponse, RunError, RunOptions, RunStatus, StaticToolset, Tool, ToolBuilder,
    ToolContext, Toolset, ToolsetError,
};

/// A tool that answers with its own name, counting its calls.
fn named(name: &str, runs: &Counter) -> Arc<dyn Tool> {
    let runs = runs.clone();
    let answer = name.to_owned();
    Arc::new(
        ToolBuilder::new(name)
            .description(format!("The {name} tool."))
            .handler(move |_: ToolContext, _: Args| {
                runs.bump();
                let answer = answer.clone();
                async move { Ok(json!(answer)) }
            })
            .unwrap(),
    )
}

fn names(model: &TestModel, request: usize) -> Vec<String> {
    model.requests()[request].tools.iter().map(|t| t.name.clone()).collect()
}

#[tokio::test]
async fn combinators_prefix_filter_and_rename_and_calls_reach_the_inner_tool() {
    let runs = Counter::default();
    let ops = StaticToolset::new("ops")
        .shared_tool(named("deploy", &runs))
        .shared_tool(named("status", &runs))
        .shared_tool(named("secret", &runs))
        .filtered(|d| d.name != "secret")
        .renamed([("status", "health")])
        .prefixed("ops_");
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "ops_health", json!({})), call("c2", "ops_deploy", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let agent = Agent::builder(model.clone()).toolset(ops).build().unwrap();
    let defined: Vec<&str> = agent.definitions().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(defined, ["ops_deploy", "ops_health"]);
    let result = agent.run("go").await.unwrap();
    let contents: Vec<Value> = tool_returns(result.messages.messages()).into_iter().map(|r| r.content).collect();
    assert_eq!(contents, [json!("status"), json!("deploy")], "the renamed tools run the inner ones");
    assert_eq!(runs.get(), 2);
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_json_snapshot!("rust__toolset_ops_prefixed", agent.definitions());
    });
}

#[tokio::test]
async fn a_dynamic_toolset_is_listed_at_every_step() {
    let runs = Counter::default();
    let (first, second) = (named("first", &runs), named("second", &runs));
    let steps = DynamicToolset::new("phases", move |ctx| {
        let tools = if ctx.step == 1 { vec![first.clone()] } else { vec![second.clone()] };
        Box::pin(async move { Ok(tools) })
    });
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "first", json!({}))]),
        TestModel::tool_call_response([call("c2", "second", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let agent = Agent::builder(model.clone()).toolset(steps).build().unwrap();
    assert!(agent.definitions().is_empty(), "dynamic tools are not the agent's");
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!((names(&model, 0), names(&model, 1)), (vec!["first".to_owned()], vec!["second".to_owned()]));
    assert_eq!(runs.get(), 2);
}

#[tokio::test]
async fn collisions_name_both_sources() {
    let runs = Counter::default();
    let err = Agent::builder(TestModel::new([]))
        .shared_tool(named("deploy", &runs))
        .toolset(StaticToolset::new("ops").shared_tool(named("deploy", &runs)))
        .build()
        .err()
        .unwrap();
    assert!(matches!(err, Error::ToolCollision { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "tool name `deploy` is given by both the agent's tools and toolset `ops`; rename or prefix one of them"
    );

    let clash = named("deploy", &runs);
    let late = DynamicToolset::new("late", move |_| {
        let clash = clash.clone();
        Box::pin(async move { Ok(vec![clash]) })
    });
    let model = TestModel::new([ModelResponse::text("never asked")]);
    let agent = Agent::builder(model).shared_tool(named("deploy", &runs)).toolset(late).build().unwrap();
    let err = agent.run("go").await.err().unwrap();
    assert!(err.to_string().contains("toolset `late`"), "{err}");
}

#[tokio::test]
async fn a_toolset_that_cannot_list_fails_the_step_naming_it() {
    let flaky = DynamicToolset::new("remote", |ctx| {
        let step = ctx.step;
        // The error behind the message stays with the toolset's error, not in the run's.
        let gone = ToolsetError::new("the server is gone").with_source(std::io::Error::other("connection reset"));
        Box::pin(async move { if step == 1 { Ok(Vec::new()) } else { Err(gone) } })
    });
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "nothing", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let result = Agent::builder(model).toolset(flaky).build().unwrap().run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(
        result.error,
        Some(RunError::Tools { message: "toolset `remote` could not list its tools: the server is gone".into() })
    );
}

#[tokio::test]
async fn an_approval_required_toolset_waits_for_every_call_and_resumes() {
    let runs = Counter::default();
    let gated = StaticToolset::new("ops").shared_tool(named("deploy", &runs)).approval_required();
    let model = calls_then_text(vec![call("c1", "deploy", json!({}))], "done");
    let agent = Agent::builder(model).toolset(gated).build().unwrap();
    let mut session = agent.session();
    let waiting = session.run("go").await.unwrap();
    assert_eq!(waiting.status, RunStatus::Waiting);
    assert!(waiting.hitl.approvals[0].reason.contains("toolset `ops`"), "{}", waiting.hitl.approvals[0].reason);
    assert_eq!(runs.get(), 0);
    let done = session.resume(vec![waiting.hitl.approvals[0].approve()]).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn tools_a_run_adds_leave_the_agent_unchanged() {
    let runs = Counter::default();
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "extra", json!({}))]),
        ModelResponse::text("done"),
        TestModel::tool_call_response([call("c2", "extra", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let agent = Agent::builder(model.clone()).shared_tool(named("base", &runs)).build().unwrap();
    let options = RunOptions {
        tools: vec![named("extra", &runs)],
        toolsets: vec![Arc::new(StaticToolset::new("more").shared_tool(named("more", &runs)))],
        ..RunOptions::default()
    };
    let with = agent.run_with("go", options).await.unwrap();
    assert_eq!(tool_returns(with.messages.messages())[0].content, json!("extra"));
    assert_eq!(names(&model, 0), ["base", "extra", "more"]);
    let without = agent.run("go").await.unwrap();
    assert_eq!(tool_returns(without.messages.messages())[0].content["kind"], "not_found");
    let defined: Vec<&str> = agent.definitions().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(defined, ["base"]);
    let clash = RunOptions { tools: vec![named("base", &runs)], ..RunOptions::default() };
    let err = agent.run_with("go", clash).await.err().unwrap();
    assert!(err.to_string().contains("both the agent's tools and the run's tools"), "{err}");
    let twice = RunOptions { tools: vec![named("extra", &runs), named("extra", &runs)], ..RunOptions::default() };
    let err = agent.run_with("go", twice).await.err().unwrap();
    assert_eq!(err.to_string(), "duplicate tool name `extra`: tool names must be unique within a run");
}

#[tokio::test]
async fn a_toolset_failing_when_a_stored_session_resumes_claims_nothing() {
    use starweaver::store::{MemorySessionStore, SessionStore};
    let runs = Counter::default();
    let listings = Counter::default();
    let gated = named("deploy", &runs);
    let flaky = DynamicToolset::new("ops", move |_| {
        let attempt = listings.bump();
        let tools = vec![gated.clone()];
        Box::pin(async move { if attempt == 1 { Ok(tools) } else { Err("the registry is down".into()) } })
    })
    .approval_required();
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let model = calls_then_text(vec![call("c1", "deploy", json!({}))], "done");
    let agent = Agent::builder(model).toolset(flaky).session_store(store.clone()).build().unwrap();
    let mut session = agent.open_session("s").unwrap();
    let waiting = session.run("go").await.unwrap();
    let before = store.load("s").unwrap().unwrap();
    let err = session.resume(vec![waiting.hitl.approvals[0].approve()]).await.err().unwrap();
    assert!(err.to_string().contains("the registry is down"), "{err}");
    assert_eq!(store.load("s").unwrap().unwrap(), before, "nothing was claimed");
    assert_eq!(session.pending(), Some(waiting.hitl.clone()), "the session keeps waiting");
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn a_tool_a_toolset_refuses_is_reported_by_name_at_each_listing_and_the_rest_are_offered() {
    let runs = Counter::default();
    let good = named("good", &runs);
    let listed = DynamicToolset::new("remote", move |ctx| {
        ctx.refuse_tool("bad name", "a tool name may not hold spaces");
        let good = good.clone();
        Box::pin(async move { Ok(vec![good]) })
    });
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "good", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let result = Agent::builder(model.clone()).toolset(listed).build().unwrap().run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(runs.get(), 1);
    let kinds: Vec<Value> = result.events.iter().map(|e| serde_json::to_value(&e.kind).unwrap()).collect();
    let refused = json!({"type": "tool_refused", "toolset": "remote", "tool": "bad name",
        "reason": "a tool name may not hold spaces"});
    // Each listing's refusal comes after the run's first event and before the step's request.
    let order: Vec<&str> = kinds.iter().map(|k| k["type"].as_str().unwrap()).collect();
    assert_eq!(order[..3], ["run_start", "tool_refused", "model_request"], "{order:?}");
    let steps: Vec<&Value> = kinds.iter().filter(|k| k["type"] == "tool_refused").map(|k| &k["step"]).collect();
    assert_eq!(steps, [&json!(1), &json!(2)]);
    for kind in kinds.iter().filter(|k| k["type"] == "tool_refused") {
        let mut kind = kind.clone();
        kind.as_object_mut().unwrap().remove("step");
        assert_eq!(kind, refused);
    }
}

/// What each request of `model` sent as toolset instructions.
fn instructions_sent(model: &TestModel) -> Vec<Vec<String>> {
    model.requests().iter().map(|r| r.toolset_instructions.iter().map(ToString::to_string).collect()).collect()
}

#[tokio::test]
async fn toolset_instructions_are_sent_with_the_agents_while_their_tools_are_offered() {
    let runs = Counter::default();
    let ops = StaticToolset::new("ops").shared_tool(named("deploy", &runs)).with_instructions("Deploy only on green.");
    let same =
        StaticToolset::new("ops2").shared_tool(named("status", &runs)).with_instructions("Deploy only on green.");
    let late = named("late", &runs);
    // Offers its tool from step 2 on: no instructions before then.
    let phased = DynamicToolset::new("phased", move |ctx| {
        let tools = if ctx.step >= 2 { vec![late.clone()] } else { Vec::new() };
        Box::pin(async move { Ok(tools) })
    })
    .with_instructions("Use `late` last.");
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "deploy", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let agent = Agent::builder(model.clone())
        .instructions("Be brief.")
        .toolset(ops)
        .toolset(same)
        .toolset(phased)
        .build()
        .unwrap();
    agent.run("go").await.unwrap();
    assert_eq!(
        instructions_sent(&model),
        [vec!["Deploy only on green."], vec!["Deploy only on green.", "Use `late` last."]],
        "each text once; a toolset with no tool offered contributes none"
    );
    // The agent's own instructions stay in the history; the toolsets' are per request.
    let first = serde_json::to_value(&model.requests()[0].messages[0]).unwrap();
    assert_eq!(first["parts"][0], json!({"kind": "system_prompt", "text": "Be brief."}));
}

#[tokio::test]
async fn a_toolset_whose_tools_prepare_tools_drops_contributes_no_instructions() {
    struct DropDeploy;
    impl starweaver::Hooks for DropDeploy {
        fn prepare_tools<'a>(
            &'a self,
            _: &'a ToolContext,
            definitions: Vec<starweaver::ToolDefinition>,
        ) -> starweaver::hook::Hooked<'a, Result<Vec<starweaver::ToolDefinition>, starweaver::ToolError>> {
            starweaver::hook::Hooked::ready(Ok(definitions.into_iter().filter(|d| d.name != "deploy").collect()))
        }
    }
    let runs = Counter::default();
    let ops = StaticToolset::new("ops").shared_tool(named("deploy", &runs)).with_instructions("Deploy only on green.");
    let model = Arc::new(TestModel::new([ModelResponse::text("done")]));
    let agent = Agent::builder(model.clone())
        .toolset(ops)
        .shared_tool(named("status", &runs))
        .hook(DropDeploy)
        .build()
        .unwrap();
    agent.run("go").await.unwrap();
    assert_eq!(instructions_sent(&model), [Vec::<String>::new()]);
}
