//! DESIGN.md §18: hooks around every call (before, after, on error, prepare), their order,
//! their guarantees, and approval bound to the arguments hooks leave.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};
use starweaver::durable::CallTask;
use starweaver::hook::{Before, HookCall, Hooked, Hooks};
use starweaver::{
    Agent, ApprovalRule, Error, EventKind, RunOptions, RunStatus, StaticToolset, ToolBuilder, ToolContext,
    ToolDefinition, ToolError, ToolResult, Toolset,
};

/// A tool that echoes its arguments, logging each run.
fn echo(name: &str, log: &Log) -> impl starweaver::Tool {
    let log = log.clone();
    raw_tool(ToolBuilder::new(name), move |_: ToolContext, args: Args| {
        log.push(format!("ran with {}", Value::Object(args.clone())));
        async move { Ok(Value::Object(args)) }
    })
}

/// A hook that logs what it sees under its name and does what `act` says before the call.
struct Probe {
    name: &'static str,
    log: Log,
    before: fn(&HookCall) -> Result<Before, ToolError>,
    /// Whether each answer is a future that waits before it gives the answer.
    waits: bool,
}

impl Probe {
    fn new(name: &'static str, log: &Log) -> Self {
        Self { name, log: log.clone(), before: |_| Ok(Before::Continue), waits: false }
    }

    fn before(mut self, before: fn(&HookCall) -> Result<Before, ToolError>) -> Self {
        self.before = before;
        self
    }

    fn waiting(mut self) -> Self {
        self.waits = true;
        self
    }

    fn answer<'a, T: Send + 'a>(&self, answer: T) -> Hooked<'a, T> {
        if self.waits {
            Hooked::new(async move {
                tokio::task::yield_now().await;
                answer
            })
        } else {
            Hooked::ready(answer)
        }
    }
}

impl Hooks for Probe {
    fn name(&self) -> &str {
        self.name
    }

    fn before_call<'a>(&'a self, _: &'a ToolContext, call: &'a HookCall) -> Hooked<'a, Result<Before, ToolError>> {
        self.log.push(format!("{} before {}", self.name, call.arguments));
        self.answer((self.before)(call))
    }

    fn after_call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a HookCall,
        result: &'a mut ToolResult,
    ) -> Hooked<'a, Result<(), ToolError>> {
        self.log.push(format!("{} after {}", self.name, result.value));
        self.answer(Ok(()))
    }

    fn on_error<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a HookCall,
        error: ToolError,
    ) -> Hooked<'a, Result<ToolResult, ToolError>> {
        self.log.push(format!("{} error {}", self.name, error.kind().as_str()));
        self.answer(Err(error))
    }
}

#[allow(clippy::unnecessary_wraps)] // the shape `Probe::before` takes
fn to_prod(call: &HookCall) -> Result<Before, ToolError> {
    let mut arguments = call.arguments.clone();
    arguments["env"] = json!("prod");
    Ok(Before::Arguments(arguments))
}

fn tool_call_events(events: &[starweaver::Event]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ToolCall { .. }))
        .map(|e| serde_json::to_value(&e.kind).unwrap())
        .collect()
}

#[tokio::test]
async fn hooks_run_in_order_run_agent_toolset_in_and_reverse_out() {
    let x = r#"{"x":1}"#;
    // The same order whether every hook answers at once, one of them waits, or all do.
    for waiting in [None, Some("run"), Some("agent"), Some("toolset"), Some("all")] {
        let log = Log::default();
        let probe = |name| {
            let probe = Probe::new(name, &log);
            if waiting == Some(name) || waiting == Some("all") { probe.waiting() } else { probe }
        };
        let model = calls_then_text(vec![call("c1", "echo", json!({"x": 1}))], "done");
        let toolset = StaticToolset::new("ops").tool(echo("echo", &log)).with_hooks([Arc::new(probe("toolset")) as _]);
        let agent = Agent::builder(model).toolset(toolset).hook(probe("agent")).build().unwrap();
        let options = RunOptions { hooks: vec![Arc::new(probe("run"))], ..RunOptions::default() };
        let result = agent.run_with("go", options).await.unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{waiting:?} waits");
        assert_eq!(
            log.entries(),
            [
                format!("run before {x}"),
                format!("agent before {x}"),
                format!("toolset before {x}"),
                format!("ran with {x}"),
                format!("toolset after {x}"),
                format!("agent after {x}"),
                format!("run after {x}"),
            ],
            "{waiting:?} waits"
        );
        let returned = result.messages.messages()[2].tool_returns().next().unwrap().content.clone();
        assert_eq!(returned, json!({"x": 1}), "{waiting:?} waits");
        assert_eq!(
            tool_call_events(&result.events),
            [json!({"type": "tool_call", "tool_call_id": "c1", "name": "echo"})],
            "a call no hook changed keeps the event's usual form"
        );
    }
}

#[tokio::test]
async fn a_rewritten_call_runs_with_and_reports_the_final_arguments() {
    let log = Log::default();
    let model = calls_then_text(vec![call("c1", "deploy", json!({"env": "staging"}))], "done");
    let agent = Agent::builder(model)
        .tool(echo("deploy", &log))
        .hook(Probe::new("prod", &log).before(to_prod))
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    assert!(log.entries().contains(&r#"ran with {"env":"prod"}"#.to_owned()), "{:?}", log.entries());
    assert_eq!(
        tool_call_events(&result.events),
        [
            json!({"type": "tool_call", "tool_call_id": "c1", "name": "deploy", "arguments": {"env": "prod"}, "rewritten_by": "prod"})
        ]
    );
}

#[tokio::test]
async fn a_hook_that_answers_stops_the_call_and_the_hooks_after_it() {
    let log = Log::default();
    let model = calls_then_text(vec![call("c1", "echo", json!({}))], "done");
    let answer = Probe::new("cache", &log).before(|_| Ok(Before::Answer(ToolResult::new(json!("cached")))));
    let agent = Agent::builder(model)
        .tool(echo("echo", &log))
        .hook(Probe::new("outer", &log))
        .hook(answer)
        .hook(Probe::new("inner", &log))
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(log.entries(), ["outer before {}", "cache before {}", r#"outer after "cached""#]);
    assert_eq!(tool_returns(result.messages.messages())[0].content, json!("cached"));
    assert_eq!(
        tool_call_events(&result.events),
        [json!({"type": "tool_call", "tool_call_id": "c1", "name": "echo", "answered_by": "cache"})]
    );
}

#[tokio::test]
async fn rewritten_arguments_are_checked_against_the_schema() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Deploy {
        #[allow(dead_code)]
        env: String,
    }
    let tool = ToolBuilder::new("deploy").handler(|_: ToolContext, _: Deploy| async { Ok(json!("ok")) }).unwrap();
    let model = calls_then_text(vec![call("c1", "deploy", json!({"env": "staging"}))], "done");
    let bad = Probe::new("bad", &Log::default()).before(|_| Ok(Before::Arguments(json!({"env": 7}))));
    let agent = Agent::builder(model).tool(tool).hook(bad).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let returned = &tool_returns(result.messages.messages())[0];
    assert!(returned.is_error);
    assert_eq!(returned.content["kind"], "invalid_arguments", "{}", returned.content);
}

/// A hook's failure made by `out`: at once (a panic of `out` comes while the hook makes its
/// answer), or from a future (a panic comes while it is polled).
fn failure<'a, T: Send + 'a>(at_once: bool, out: fn() -> ToolError) -> Hooked<'a, Result<T, ToolError>> {
    if at_once { Hooked::ready(Err(out())) } else { Hooked::new(async move { Err(out()) }) }
}

/// A hook whose `before_call` fails with what `out` makes ([`failure`]).
struct Failing {
    at_once: bool,
    out: fn() -> ToolError,
}

impl Hooks for Failing {
    fn name(&self) -> &'static str {
        "failing"
    }

    fn before_call<'a>(&'a self, _: &'a ToolContext, _: &'a HookCall) -> Hooked<'a, Result<Before, ToolError>> {
        failure(self.at_once, self.out)
    }
}

/// A hook whose answer was taken already: awaiting it fails as polling a spent future.
struct Spent;

impl Hooks for Spent {
    fn name(&self) -> &'static str {
        "failing"
    }

    fn before_call<'a>(&'a self, _: &'a ToolContext, _: &'a HookCall) -> Hooked<'a, Result<Before, ToolError>> {
        Hooked::Ready(None)
    }
}

#[tokio::test]
async fn a_failing_or_panicking_hook_fails_its_call_not_the_run() {
    let log = Log::default();
    let mut hooks: Vec<(Arc<dyn Hooks>, &str)> = vec![(
        Arc::new(Spent),
        "hook `failing` failed in `before_call`: it panicked: `Hooked` polled after it completed",
    )];
    for at_once in [true, false] {
        for (out, expected) in [
            ((|| ToolError::execution("boom")) as fn() -> ToolError, "hook `failing` failed in `before_call`: boom"),
            (|| panic!("kaboom"), "hook `failing` failed in `before_call`: it panicked: kaboom"),
        ] {
            hooks.push((Arc::new(Failing { at_once, out }), expected));
        }
    }
    for (hook, expected) in hooks {
        let model = calls_then_text(vec![call("c1", "echo", json!({}))], "done");
        let agent = Agent::builder(model).tool(echo("echo", &log)).hook(hook).build().unwrap();
        let result = agent.run("go").await.unwrap();
        assert_eq!(result.status, RunStatus::Completed);
        let returned = &tool_returns(result.messages.messages())[0];
        assert_eq!(returned.content["kind"], "execution");
        assert_eq!(returned.content["message"], expected);
        assert!(result.events.iter().all(|e| !matches!(e.kind, EventKind::ToolRetry { .. })), "not retried");
    }
    assert!(log.entries().is_empty(), "the tool never ran: {:?}", log.entries());
}

#[tokio::test]
async fn a_hook_raising_model_retry_counts_a_retry_like_the_tool() {
    let model = calls_then_text(vec![call("c1", "echo", json!({}))], "done");
    let hook = Failing { at_once: false, out: || ToolError::model_retry("say please") };
    let agent = Agent::builder(model).tool(echo("echo", &Log::default())).hook(hook).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let returned = &tool_returns(result.messages.messages())[0];
    assert_eq!(returned.content["kind"], "model_retry");
    assert_eq!(returned.content["message"], "say please");
    assert_eq!(returned.content["retry_expected"], true);
}

/// A hook whose `after_call` and `on_error` fail with what `out` makes ([`failure`]).
struct Out {
    at_once: bool,
    out: fn() -> ToolError,
}

impl Hooks for Out {
    fn name(&self) -> &'static str {
        "out"
    }

    fn after_call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a HookCall,
        _: &'a mut ToolResult,
    ) -> Hooked<'a, Result<(), ToolError>> {
        failure(self.at_once, self.out)
    }

    fn on_error<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a HookCall,
        _: ToolError,
    ) -> Hooked<'a, Result<ToolResult, ToolError>> {
        failure(self.at_once, self.out)
    }
}

#[tokio::test]
async fn the_way_out_blames_after_call_for_its_failures_but_not_on_error_for_the_calls() {
    for at_once in [true, false] {
        for (out, after, on_error) in [
            ((|| ToolError::execution("bad")) as fn() -> ToolError, "hook `out` failed in `after_call`: bad", "bad"),
            (
                || panic!("kaboom"),
                "hook `out` failed in `after_call`: it panicked: kaboom",
                "hook `out` failed in `on_error`: it panicked: kaboom",
            ),
        ] {
            let failing = raw_tool(ToolBuilder::new("failing"), |_: ToolContext, _: Args| async {
                Err::<Value, _>(ToolError::user_error("no"))
            });
            let model = calls_then_text(vec![call("c1", "echo", json!({})), call("c2", "failing", json!({}))], "done");
            let agent = Agent::builder(model)
                .tool(echo("echo", &Log::default()))
                .tool(failing)
                .hook(Out { at_once, out })
                .build()
                .unwrap();
            let result = agent.run("go").await.unwrap();
            let returned = tool_returns(result.messages.messages());
            let messages: Vec<_> = returned.iter().map(|r| (&r.content["kind"], &r.content["message"])).collect();
            assert_eq!(messages, [(&json!("execution"), &json!(after)), (&json!("execution"), &json!(on_error))]);
        }
    }
}

/// A hook whose `prepare_tools` panics, at once or while it is polled.
struct PreparePanics(bool);

impl Hooks for PreparePanics {
    fn name(&self) -> &'static str {
        "prepare"
    }

    fn prepare_tools<'a>(
        &'a self,
        _: &'a ToolContext,
        _: Vec<ToolDefinition>,
    ) -> Hooked<'a, Result<Vec<ToolDefinition>, ToolError>> {
        if self.0 { panic!("kaboom") } else { Hooked::new(async { panic!("kaboom") }) }
    }
}

#[tokio::test]
async fn a_panicking_prepare_tools_fails_the_run_naming_the_hook() {
    for at_once in [true, false] {
        let model = calls_then_text(vec![call("c1", "echo", json!({}))], "done");
        let agent =
            Agent::builder(model).tool(echo("echo", &Log::default())).hook(PreparePanics(at_once)).build().unwrap();
        let result = agent.run("go").await.unwrap();
        assert_eq!(result.status, RunStatus::Failed);
        let error = result.error.unwrap().to_string();
        assert!(error.contains("hook `prepare` failed in `prepare_tools`: it panicked: kaboom"), "{error}");
    }
}

/// Turns any failure into a result.
struct Rescue;

impl Hooks for Rescue {
    fn on_error<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a HookCall,
        error: ToolError,
    ) -> Hooked<'a, Result<ToolResult, ToolError>> {
        Hooked::ready(Ok(ToolResult::new(json!({"rescued": error.message()}))))
    }
}

#[tokio::test]
async fn on_error_sees_the_failure_after_the_retries_and_may_turn_it_into_a_result() {
    let runs = Counter::default();
    let counted = runs.clone();
    let flaky = raw_tool(ToolBuilder::new("flaky").max_retries(1), move |_: ToolContext, _: Args| {
        counted.bump();
        async { Err::<Value, _>(ToolError::execution("down")) }
    });
    let model = calls_then_text(vec![call("c1", "flaky", json!({}))], "done");
    let agent = Agent::builder(model).tool(flaky).hook(Rescue).build().unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(runs.get(), 2, "the call's own retry ran first");
    let returned = &tool_returns(result.messages.messages())[0];
    assert!(!returned.is_error);
    assert_eq!(returned.content, json!({"rescued": "down (failed after 2 attempt(s))"}));
}

#[tokio::test]
async fn a_failure_tells_the_model_of_the_attempts_unless_a_hook_made_it_after_a_rescue() {
    let flaky = || {
        raw_tool(ToolBuilder::new("flaky").max_retries(1), |_: ToolContext, _: Args| async {
            Err::<Value, _>(ToolError::execution("down"))
        })
    };
    // Passed through: the attempts' own failure, with their count.
    let model = calls_then_text(vec![call("c1", "flaky", json!({}))], "done");
    let agent = Agent::builder(model).tool(flaky()).hook(Probe::new("outer", &Log::default())).build().unwrap();
    let returned = &tool_returns(agent.run("go").await.unwrap().messages.messages())[0];
    assert_eq!((&returned.content["attempts"], &returned.content["max_retries"]), (&json!(2), &json!(1)));
    // Rescued by `on_error`, then failed by an outer `after_call`: the hook's failure, which
    // no attempt made.
    let model = calls_then_text(vec![call("c1", "flaky", json!({}))], "done");
    let out = Out { at_once: true, out: || ToolError::execution("bad") };
    let agent = Agent::builder(model).tool(flaky()).hook(out).hook(Rescue).build().unwrap();
    let returned = &tool_returns(agent.run("go").await.unwrap().messages.messages())[0];
    assert_eq!(returned.content["message"], "hook `out` failed in `after_call`: bad");
    assert!(returned.content.get("attempts").is_none(), "{}", returned.content);
}

/// A hook whose `after_call` redacts a result's `secret` in place, at once or after a wait.
struct Redact {
    waits: bool,
}

impl Hooks for Redact {
    fn after_call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a HookCall,
        result: &'a mut ToolResult,
    ) -> Hooked<'a, Result<(), ToolError>> {
        let mut redact = move || {
            if let Some(secret) = result.value.get_mut("secret") {
                *secret = json!("[redacted]");
            }
            result.metadata.insert("redacted".into(), json!(true));
            Ok(())
        };
        if self.waits {
            Hooked::new(async move {
                tokio::task::yield_now().await;
                redact()
            })
        } else {
            Hooked::ready(redact())
        }
    }
}

#[tokio::test]
async fn after_call_changes_the_result_in_place_for_the_hooks_before_it_and_the_model() {
    for waits in [false, true] {
        let log = Log::default();
        let model = calls_then_text(vec![call("c1", "echo", json!({"secret": "hunter2", "user": "ann"}))], "done");
        let agent = Agent::builder(model)
            .tool(echo("echo", &log))
            .hook(Probe::new("outer", &log))
            .hook(Redact { waits })
            .build()
            .unwrap();
        let result = agent.run("go").await.unwrap();
        let returned = &tool_returns(result.messages.messages())[0];
        assert_eq!(returned.content, json!({"secret": "[redacted]", "user": "ann"}), "waits: {waits}");
        assert_eq!(returned.metadata.get("redacted"), Some(&json!(true)));
        let after: Vec<String> = log.entries().into_iter().filter(|entry| entry.starts_with("outer after")).collect();
        assert_eq!(after, [r#"outer after {"secret":"[redacted]","user":"ann"}"#], "the outer hook sees the change");
    }
}

#[tokio::test]
async fn the_way_out_turns_from_on_error_to_after_call_where_a_hook_rescues_also_when_hooks_wait() {
    let log = Log::default();
    let flaky = raw_tool(ToolBuilder::new("flaky").max_retries(0), |_: ToolContext, _: Args| async {
        Err::<Value, _>(ToolError::execution("down"))
    });
    let model = calls_then_text(vec![call("c1", "flaky", json!({}))], "done");
    let agent = Agent::builder(model)
        .tool(flaky)
        .hook(Probe::new("outer", &log).waiting())
        .hook(Rescue)
        .hook(Probe::new("inner", &log).waiting())
        .build()
        .unwrap();
    agent.run("go").await.unwrap();
    assert_eq!(
        log.entries(),
        [
            "outer before {}",
            "inner before {}",
            "inner error execution",
            r#"outer after {"rescued":"down (failed after 1 attempt(s))"}"#,
        ]
    );
}

/// Offers only tools whose names do not start with `admin_`, and describes the rest anew.
struct HideAdmin;

impl Hooks for HideAdmin {
    fn prepare_tools<'a>(
        &'a self,
        _: &'a ToolContext,
        definitions: Vec<ToolDefinition>,
    ) -> Hooked<'a, Result<Vec<ToolDefinition>, ToolError>> {
        let kept = definitions
            .into_iter()
            .filter(|d| !d.name.starts_with("admin_"))
            .map(|d| ToolDefinition { description: Some("checked".into()), ..d })
            .collect();
        Hooked::ready(Ok(kept))
    }
}

#[tokio::test]
async fn prepare_tools_decides_what_the_model_sees_and_what_it_can_call() {
    let log = Log::default();
    let model = calls_then_text(vec![call("c1", "admin_drop", json!({})), call("c2", "echo", json!({}))], "done");
    let agent = Agent::builder(model.clone())
        .tool(echo("echo", &log))
        .tool(echo("admin_drop", &log))
        .hook(HideAdmin)
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    let offered = model.requests()[0].tools.clone();
    assert_eq!(offered.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(), ["echo"]);
    assert_eq!(offered[0].description.as_deref(), Some("checked"));
    let returns = tool_returns(result.messages.messages());
    assert_eq!(returns[0].content["kind"], "not_found", "a dropped tool cannot be called: {}", returns[0].content);
    assert_eq!(log.entries(), ["ran with {}"]);
}

/// Offers every tool it is shown, plus one it was not shown.
struct AddsStranger;

impl Hooks for AddsStranger {
    fn prepare_tools<'a>(
        &'a self,
        _: &'a ToolContext,
        mut definitions: Vec<ToolDefinition>,
    ) -> Hooked<'a, Result<Vec<ToolDefinition>, ToolError>> {
        definitions.push(ToolDefinition::new("echo", json!({"type": "object"})));
        Hooked::ready(Ok(definitions))
    }
}

#[tokio::test]
async fn a_toolsets_prepare_tools_sees_and_may_drop_only_its_own_tools() {
    let log = Log::default();
    let model = calls_then_text(vec![call("c1", "admin_drop", json!({}))], "done");
    let admin = StaticToolset::new("admin")
        .tool(echo("admin_drop", &log))
        .tool(echo("admin_list", &log))
        .tool(echo("list", &log))
        .with_hooks([Arc::new(HideAdmin) as Arc<dyn Hooks>]);
    let agent = Agent::builder(model.clone())
        .tool(echo("admin_echo", &log))
        .toolset(admin)
        .tool(echo("echo", &log))
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    let offered: Vec<(String, Option<String>)> =
        model.requests()[0].tools.iter().map(|d| (d.name.clone(), d.description.clone())).collect();
    let described = |name: &str, description: Option<&str>| (name.to_owned(), description.map(str::to_owned));
    assert_eq!(
        offered,
        [described("admin_echo", None), described("list", Some("checked")), described("echo", None)],
        "the agent's own `admin_echo` stays; the toolset's tools keep their place"
    );
    let returns = tool_returns(result.messages.messages());
    assert_eq!(returns[0].content["kind"], "not_found", "{}", returns[0].content);

    let strays = StaticToolset::new("strays").tool(echo("stray", &log)).with_hooks([Arc::new(AddsStranger) as _]);
    let agent =
        Agent::builder(calls_then_text(vec![], "done")).tool(echo("echo", &log)).toolset(strays).build().unwrap();
    let error = agent.run("go").await.unwrap().error.unwrap().to_string();
    assert!(error.contains("returned the tool `echo`, which is not the toolset's"), "{error}");
}

/// Notes the names each `prepare_tools` call was shown.
struct Shown(Log);

impl Hooks for Shown {
    fn prepare_tools<'a>(
        &'a self,
        _: &'a ToolContext,
        definitions: Vec<ToolDefinition>,
    ) -> Hooked<'a, Result<Vec<ToolDefinition>, ToolError>> {
        self.0.push(definitions.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(","));
        Hooked::ready(Ok(definitions))
    }
}

#[tokio::test]
async fn two_toolsets_made_from_one_with_hooks_each_prepare_their_own_tools() {
    let (log, shown) = (Log::default(), Log::default());
    let ops = Arc::new(
        StaticToolset::new("ops")
            .tool(echo("x", &log))
            .tool(echo("y", &log))
            .with_hooks([Arc::new(Shown(shown.clone())) as Arc<dyn Hooks>]),
    );
    let model = calls_then_text(vec![], "done");
    let agent =
        Agent::builder(model.clone()).toolset(ops.clone().prefixed("a_")).toolset(ops.prefixed("b_")).build().unwrap();
    agent.run("go").await.unwrap();
    assert_eq!(shown.entries(), ["a_x,a_y", "b_x,b_y"]);
    let offered: Vec<String> = model.requests()[0].tools.iter().map(|d| d.name.clone()).collect();
    assert_eq!(offered, ["a_x", "a_y", "b_x", "b_y"]);
}

/// An agent whose `deploy` needs approval, and whose hook rewrites every `env` to `prod`;
/// the model asks to deploy `staging`.
fn gated_prod_deploy(log: &Log) -> Agent {
    let model = calls_then_text(vec![call("c1", "deploy", json!({"env": "staging"}))], "done");
    Agent::builder(model)
        .tool(echo("deploy", log))
        .hook(Probe::new("prod", &Log::default()).before(to_prod))
        .approval_required_tools([ApprovalRule::from("deploy")])
        .build()
        .unwrap()
}

/// The required test of issue 22: a hook rewrites `env` from `staging` to `prod`; the
/// pending approval shows `prod`, and a decision made for `staging` does not run the call.
#[tokio::test]
async fn approval_is_asked_for_and_bound_to_the_arguments_a_hook_rewrote() {
    let log = Log::default();
    let mut session = gated_prod_deploy(&log).session();
    let waiting = session.run("deploy").await.unwrap();
    assert_eq!(waiting.status, RunStatus::Waiting);
    let pending = &waiting.hitl.approvals[0];
    assert_eq!(pending.arguments, json!({"env": "prod"}), "the approver sees what would run");

    let mut for_staging = pending.approve();
    for_staging.arguments = Some(json!({"env": "staging"}));
    let err = session.resume(vec![for_staging]).await.unwrap_err();
    assert!(matches!(err, Error::StaleDecision { .. }), "{err}");
    assert!(log.entries().is_empty(), "nothing ran: {:?}", log.entries());

    let result = session.resume(vec![pending.approve()]).await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(log.entries(), [r#"ran with {"env":"prod"}"#]);
}

#[tokio::test]
async fn an_approval_for_other_arguments_than_the_hooks_leave_does_not_run_the_call() {
    let log = Log::default();
    let mut session = gated_prod_deploy(&log).session();
    let waiting = session.run("deploy").await.unwrap();
    // The approver asks for staging explicitly; the hook would still run prod.
    let decision = waiting.hitl.approvals[0].approve().override_arguments(json!({"env": "staging"}));
    let result = session.resume(vec![decision]).await.unwrap();
    let returned = &tool_returns(result.messages.messages())[0];
    assert_eq!(returned.content["kind"], "approval_denied", "{}", returned.content);
    assert!(log.entries().is_empty(), "nothing ran: {:?}", log.entries());
}

#[tokio::test]
async fn run_call_runs_the_agents_hooks() {
    let log = Log::default();
    let model = calls_then_text(vec![], "done");
    let agent = Agent::builder(model)
        .tool(echo("deploy", &log))
        .hook(Probe::new("prod", &Log::default()).before(to_prod))
        .build()
        .unwrap();
    let task: CallTask = serde_json::from_value(json!({
        "index": 0, "call": {"id": "c1", "name": "deploy", "arguments": {"env": "staging"}}, "retry": 0, "max_retries": 0
    }))
    .unwrap();
    agent.run_call("run_1", &task, starweaver::CancellationToken::new(), None).await;
    assert_eq!(log.entries(), [r#"ran with {"env":"prod"}"#]);
}

#[tokio::test]
async fn toolset_hooks_see_only_their_toolsets_calls() {
    let log = Log::default();
    let model = calls_then_text(vec![call("c1", "mine", json!({})), call("c2", "other", json!({}))], "done");
    let toolset =
        StaticToolset::new("ops").tool(echo("mine", &log)).with_hooks([Arc::new(Probe::new("ops", &log)) as _]);
    assert_eq!(toolset.hooks().len(), 1);
    let agent = Agent::builder(model).toolset(toolset).tool(echo("other", &log)).build().unwrap();
    agent.run("go").await.unwrap();
    let entries = log.entries();
    assert_eq!(entries.iter().filter(|e| e.starts_with("ops ")).count(), 2, "{entries:?}");
}

/// Waits before every call, as a hook asking a slow policy service would.
struct Slow;

impl Hooks for Slow {
    fn before_call<'a>(&'a self, _: &'a ToolContext, _: &'a HookCall<'a>) -> Hooked<'a, Result<Before, ToolError>> {
        Hooked::new(async {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            Ok(Before::Continue)
        })
    }
}

#[tokio::test]
async fn hook_time_is_inside_the_calls_span() {
    let model = calls_then_text(vec![call("c1", "echo", json!({}))], "done");
    let agent = Agent::builder(model).tool(echo("echo", &Log::default())).hook(Slow).build().unwrap();
    let result = agent.run("go").await.unwrap();
    let span = result.trace.spans.iter().find(|s| s.kind == starweaver::SpanKind::ToolCall).unwrap();
    // A lower bound only: the hook slept 20 ms inside the span, however fast the machine.
    assert!(span.duration_us >= 20_000, "the hook's wait is timed in the call's span: {span:?}");
}

/// A hook that logs what a language binding would find kept with the call's context, and
/// the arguments' version, and keeps its own name there when it finds nothing.
struct Binder(&'static str, Log);

impl Binder {
    fn look(&self, stage: &str, ctx: &ToolContext) {
        let slot = ctx.binding_slot();
        let kept = slot.get_or_init(|| Arc::new(self.0)).downcast_ref::<&str>().copied();
        let version = ctx.arguments_version();
        self.1.push(format!("{} {stage} finds {} at {version}", self.0, kept.unwrap_or("another kind")));
    }
}

impl Hooks for Binder {
    fn before_call<'a>(&'a self, ctx: &'a ToolContext, _: &'a HookCall) -> Hooked<'a, Result<Before, ToolError>> {
        self.look("before", ctx);
        Hooked::ready(Ok(Before::Continue))
    }

    fn after_call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        _: &'a HookCall,
        _: &'a mut ToolResult,
    ) -> Hooked<'a, Result<(), ToolError>> {
        self.look("after", ctx);
        Hooked::ready(Ok(()))
    }
}

#[tokio::test]
async fn what_a_binding_keeps_lasts_the_call_and_the_arguments_version_counts_each_rewrite() {
    // No rewrite, one at once, one that waits, and two.
    for (rewriters, waits) in [(0, false), (1, false), (1, true), (2, false)] {
        let log = Log::default();
        let model = calls_then_text(vec![call("c1", "deploy", json!({"env": "staging"}))], "done");
        let mut agent = Agent::builder(model).tool(echo("deploy", &log)).hook(Binder("outer", log.clone()));
        for _ in 0..rewriters {
            let rewriter = Probe::new("rewriter", &log).before(to_prod);
            agent = agent.hook(if waits { rewriter.waiting() } else { rewriter });
        }
        let agent = agent.hook(Binder("inner", log.clone())).build().unwrap();
        let version = rewriters;
        assert_eq!(agent.run("go").await.unwrap().status, RunStatus::Completed);
        let found: Vec<String> = log.entries().into_iter().filter(|entry| entry.contains(" finds ")).collect();
        assert_eq!(
            found,
            [
                "outer before finds outer at 0".to_owned(),
                format!("inner before finds outer at {version}"),
                format!("inner after finds outer at {version}"),
                format!("outer after finds outer at {version}"),
            ],
            "{rewriters} rewriter(s)"
        );
    }
}
