//! DESIGN.md §20: deferred tools stay out of model requests until `search_tools` finds
//! them (or the model calls one by name); loaded tools follow the always-loaded ones in
//! load order, are kept with the session, and an unknown name never lists the catalog.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use common::*;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use starweaver::durable::{DurableRun, Step};
use starweaver::render::Provider;
use starweaver::search::ToolSearch;
use starweaver::testing::TestModel;
use starweaver::{
    Agent, DynamicToolset, Error, EventKind, LoadedTools, Model, ModelError, ModelErrorKind, ModelRequest,
    ModelResponse, ProviderItem, ResponsePart, RunResult, RunStatus, SpanKind, StaticToolset, Tool, ToolBuilder,
    ToolContext, Toolset, tool,
};

/// A tool answering with its own name.
fn named(name: &str, description: &str) -> Arc<dyn Tool> {
    let answer = name.to_owned();
    Arc::new(
        ToolBuilder::new(name)
            .description(description)
            .handler(move |_: ToolContext, _: Args| {
                let answer = answer.clone();
                async move { Ok(json!(answer)) }
            })
            .unwrap(),
    )
}

/// A deferred catalog: weather, email and files tools.
fn catalog() -> StaticToolset {
    StaticToolset::new("catalog")
        .shared_tool(named("get_weather", "Forecast for a city."))
        .shared_tool(named("sendEmail", "Send an email to a recipient."))
        .shared_tool(named("list-files", "List the files in a folder."))
}

/// Looks up a city's population.
#[tool(defer_loading)]
fn population(
    /// The city.
    mut city: String,
) -> String {
    city.push_str(": many");
    city
}

fn names(model: &TestModel, request: usize) -> Vec<String> {
    model.requests()[request].tools.iter().map(|t| t.name.clone()).collect()
}

fn loaded_events(result: &RunResult) -> Vec<(Vec<String>, Option<String>)> {
    result
        .events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::ToolsLoaded { names, query } => Some((names.clone(), query.clone())),
            _ => None,
        })
        .collect()
}

fn search(id: &str, query: &str) -> ModelResponse {
    TestModel::tool_call_response([call(id, "search_tools", json!({"query": query}))])
}

#[tokio::test]
async fn a_search_loads_what_it_finds_for_the_next_request_after_the_always_loaded_tools() {
    let model = Arc::new(TestModel::new([
        search("s1", "weather forecast"),
        TestModel::tool_call_response([call("c1", "get_weather", json!({}))]),
        search("s2", "email"),
        ModelResponse::text("done"),
    ]));
    let agent = Agent::builder(model.clone())
        .shared_tool(named("status", "Say how things are."))
        .toolset(catalog().deferred())
        .tool(population_tool())
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(names(&model, 0), ["status", "search_tools"]);
    assert_eq!(names(&model, 1), ["status", "search_tools", "get_weather"]);
    assert_eq!(names(&model, 2), ["status", "search_tools", "get_weather"]);
    assert_eq!(names(&model, 3), ["status", "search_tools", "get_weather", "sendEmail"]);
    let returns = tool_returns(result.messages.messages());
    assert_eq!(returns[0].content, json!({"tools": [{"name": "get_weather", "description": "Forecast for a city."}]}));
    assert_eq!(returns[1].content, json!("get_weather"));
    assert_eq!(
        loaded_events(&result),
        [
            (vec!["get_weather".to_owned()], Some("weather forecast".to_owned())),
            (vec!["sendEmail".to_owned()], Some("email".to_owned()))
        ]
    );
    let search_spans = result.trace.spans.iter().filter(|span| span.kind == SpanKind::ToolSearch).count();
    assert_eq!(search_spans, 2, "each search is a span of its step:\n{}", result.trace);
}

#[tokio::test]
async fn a_deferred_tool_called_by_name_runs_and_loads_and_the_macro_option_defers() {
    let model = Arc::new(TestModel::new([
        TestModel::tool_call_response([call("c1", "population", json!({"city": "Lyon"}))]),
        ModelResponse::text("done"),
    ]));
    let agent = Agent::builder(model.clone()).tool(population_tool()).build().unwrap();
    assert!(agent.definitions()[0].defer_loading);
    let result = agent.run("go").await.unwrap();
    assert_eq!(tool_returns(result.messages.messages())[0].content, json!("Lyon: many"));
    assert_eq!(names(&model, 0), ["search_tools"]);
    assert_eq!(names(&model, 1), ["search_tools", "population"]);
    assert_eq!(loaded_events(&result), [(vec!["population".to_owned()], None)]);
}

#[tokio::test]
async fn an_unknown_name_never_lists_the_deferred_catalog() {
    let model = calls_then_text(vec![call("c1", "get_wether", json!({}))], "done");
    let agent = Agent::builder(model).toolset(catalog().deferred()).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let content = tool_returns(result.messages.messages())[0].content.to_string();
    assert!(content.contains("not_found") && content.contains("search_tools"), "{content}");
    for name in ["get_weather", "sendEmail", "list-files"] {
        assert!(!content.contains(name), "{name} leaked: {content}");
    }
}

#[tokio::test]
async fn bad_search_arguments_are_an_invalid_arguments_return_naming_the_field() {
    let model = calls_then_text(
        vec![
            call("c1", "search_tools", json!({"limit": 2})),
            call("c2", "search_tools", json!({"query": "x", "limit": 0})),
            call("c3", "search_tools", json!({"query": "nothing matches", "limit": null})),
        ],
        "done",
    );
    let agent = Agent::builder(model).toolset(catalog().deferred()).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let returns = tool_returns(result.messages.messages());
    assert_eq!(returns[0].content["kind"], json!("invalid_arguments"));
    assert!(returns[0].content["message"].as_str().unwrap().contains("missing field `query`"), "{:?}", returns[0]);
    assert_eq!(returns[1].content["message"], json!("`limit` must be from 1 to 20, got 0"));
    assert_eq!(returns[2].content["tools"], json!([]));
    assert!(loaded_events(&result).is_empty());
}

#[tokio::test]
async fn loaded_tools_are_kept_with_the_session_through_export_and_restore() {
    let model = Arc::new(TestModel::new([
        search("s1", "files folder"),
        ModelResponse::text("found"),
        ModelResponse::text("again"),
    ]));
    let agent = Agent::builder(model.clone()).toolset(catalog().deferred()).build().unwrap();
    let mut session = agent.session();
    session.run("find").await.unwrap();
    let state = session.export_state();
    assert_eq!(state["loaded"], json!(["list-files"]));
    let mut restored = agent.restore_session(&state).unwrap();
    assert_eq!(restored.export_state(), state);
    restored.run("more").await.unwrap();
    assert_eq!(names(&model, 2), ["search_tools", "list-files"]);
    let fresh = agent.session().export_state();
    assert!(fresh.get("loaded").is_none(), "a state without loaded tools keeps its form: {fresh}");
}

#[tokio::test]
async fn a_dynamic_toolset_can_be_deferred_and_a_tool_named_search_tools_collides() {
    let dynamic = DynamicToolset::new("late", |_| {
        Box::pin(async { Ok(vec![named("translate_text", "Translate text to another language.")]) })
    })
    .deferred();
    let model = Arc::new(TestModel::new([search("s1", "translate"), ModelResponse::text("done")]));
    let agent = Agent::builder(model.clone()).toolset(dynamic).build().unwrap();
    agent.run("go").await.unwrap();
    assert_eq!(names(&model, 0), ["search_tools"]);
    assert_eq!(names(&model, 1), ["search_tools", "translate_text"]);

    let own = named("search_tools", "Mine.");
    let err = Agent::builder(TestModel::new([])).shared_tool(own).toolset(catalog().deferred()).build().err().unwrap();
    assert!(matches!(&err, Error::ToolCollision { name, .. } if name == "search_tools"), "{err}");
    let value: Value = json!(err.to_string());
    assert!(value.as_str().unwrap().contains("tool search"), "{value}");
}

/// `prompt` run step by step, as an engine would: the result, the run, and the deferred
/// tools of each model task.
async fn durably(agent: &Agent, prompt: &str) -> (RunResult, DurableRun, Vec<Vec<String>>) {
    let mut run = DurableRun::start(agent, prompt, "run_d").unwrap();
    let mut deferred = Vec::new();
    let result = loop {
        match run.next_step() {
            Step::ListTools(task) => run.tools_listed(agent.list_tools(&task).await.unwrap()),
            Step::RequestModel(task) => {
                deferred.push(task.deferred.iter().map(|d| d.name.clone()).collect());
                run.model_responded(agent.request_model(&task).await.unwrap());
            }
            Step::StartCalls(tasks) => {
                for task in tasks {
                    let result = agent.run_call("run_d", &task, starweaver::CancellationToken::default(), None).await;
                    run.call_finished(task.index, result);
                }
            }
            Step::CheckOutput(task) => run.output_checked(agent.check_output(&task).await),
            Step::AwaitCalls => unreachable!("every started call was reported"),
            Step::Done(result) => break result,
        }
    };
    (result, run, deferred)
}

#[tokio::test]
async fn a_durable_run_and_a_stored_session_keep_the_loaded_tools() {
    use starweaver::store::SqliteSessionStore;

    let script = || [search("s1", "weather"), ModelResponse::text("found it"), ModelResponse::text("again")];
    let model = Arc::new(TestModel::new(script()));
    let agent = Agent::builder(model.clone()).toolset(catalog().deferred()).build().unwrap();
    let (result, run, _) = durably(&agent, "find the forecast").await;
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(names(&model, 1), ["search_tools", "get_weather"], "the durable run sends what it loaded");
    assert_eq!(run.export_state().unwrap()["loaded"], json!(["get_weather"]));

    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteSessionStore::open(dir.path().join("sessions.db")).unwrap());
    let model = Arc::new(TestModel::new(script()));
    let agent =
        Agent::builder(model.clone()).toolset(catalog().deferred()).session_store(store.clone()).build().unwrap();
    agent.open_session("desk").unwrap().run("find the forecast").await.unwrap();
    let mut reopened = agent.open_session("desk").unwrap();
    reopened.run("again").await.unwrap();
    assert_eq!(names(&model, 2), ["search_tools", "get_weather"], "the stored session kept what it loaded");
}

/// A model whose provider searches deferred tools itself: it records each request's tools
/// and deferred tools, and answers from a script.
struct NativeSearchModel {
    requests: Mutex<Vec<(Vec<String>, Vec<String>)>>,
    answers: Mutex<VecDeque<ModelResponse>>,
}

impl NativeSearchModel {
    /// A search of the provider's that loads `get_weather` (and a name the agent does not
    /// have), then calls it and a misspelt tool; then `done`.
    fn new() -> Arc<Self> {
        let search = json!({"type": "tool_search_call", "id": "tsc_1", "arguments": {"query": "forecast"}});
        let mut first = ModelResponse::from_parts(vec![
            ResponsePart::ProviderItem(ProviderItem::new(Provider::OpenAiResponses, search)),
            ResponsePart::ToolCall(call("c1", "get_weather", json!({}))),
            ResponsePart::ToolCall(call("c2", "get_wether", json!({}))),
        ]);
        first.loaded =
            vec![LoadedTools { names: vec!["get_weather".into(), "not_ours".into()], query: Some("forecast".into()) }];
        let answers = [first, ModelResponse::text("done")].into();
        Arc::new(Self { requests: Mutex::default(), answers: Mutex::new(answers) })
    }

    fn requests(&self) -> Vec<(Vec<String>, Vec<String>)> {
        self.requests.lock().unwrap().clone()
    }
}

impl Model for NativeSearchModel {
    fn request<'a>(&'a self, request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let names = |tools: &[starweaver::ToolDefinition]| tools.iter().map(|t| t.name.clone()).collect();
        self.requests.lock().unwrap().push((names(request.tools), names(request.deferred)));
        let answer = self.answers.lock().unwrap().pop_front();
        Box::pin(async move { answer.ok_or_else(|| ModelError::of(ModelErrorKind::Other, "out of answers")) })
    }

    fn native_tool_search(&self) -> bool {
        true
    }
}

/// DESIGN.md §20, native: the run offers no `search_tools`; every request hands the whole
/// deferred catalog to the provider, which loads tools itself. What it reports loaded
/// becomes the session's, with a `tools_loaded` event and a search span, in process or
/// durably, and an unknown name's error points at the provider's search, never the catalog.
#[tokio::test]
async fn with_native_search_the_provider_gets_the_deferred_tools_and_what_it_loads_is_kept() {
    let native = |model: Arc<NativeSearchModel>| {
        Agent::builder(model).toolset(catalog().deferred()).tool_search(ToolSearch::Native).build().unwrap()
    };
    let catalog_names = ["get_weather", "sendEmail", "list-files"].map(String::from).to_vec();
    let model = NativeSearchModel::new();
    let result = native(model.clone()).run("weather?").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(model.requests(), [(Vec::new(), catalog_names.clone()), (Vec::new(), catalog_names.clone())]);
    assert_eq!(loaded_events(&result), [(vec!["get_weather".to_owned()], Some("forecast".to_owned()))]);
    let returns = tool_returns(result.messages.messages());
    assert_eq!(returns[0].content, json!("get_weather"), "the loaded tool runs");
    let unknown = returns[1].content.to_string();
    assert!(unknown.contains("the tool search finds tools"), "{unknown}");
    assert!(catalog_names.iter().all(|name| !unknown.contains(name.as_str())), "{unknown}");
    let search_spans = result.trace.spans.iter().filter(|span| span.kind == SpanKind::ToolSearch).count();
    assert_eq!(search_spans, 1, "{}", result.trace);

    let model = NativeSearchModel::new();
    let (result, run, deferred) = durably(&native(model.clone()), "weather?").await;
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(deferred, [catalog_names.clone(), catalog_names.clone()], "each model task carries them");
    assert_eq!(model.requests()[1], (Vec::new(), catalog_names));
    assert_eq!(run.export_state().unwrap()["loaded"], json!(["get_weather"]));
}
