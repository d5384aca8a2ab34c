//! P4 (PERF.md): 1,000 Rust tool calls in one model response, pure Rust, for a
//! closure-built tool and a `#[tool]` function; and P13's Rust half: the same `#[tool]`
//! run with one `before_call` and one `after_call` hook on the agent.
//!
//! `cargo bench -p starweaver --bench scheduler` prints the time for a whole run of
//! 1,000 calls, the result dropped included; divide by 1,000 for µs per call (the target
//! is ≤ 1 µs). The model's response is made before each timed run (since 2026-12-03; P4
//! figures recorded before then include the model copying it). The hooks' cost
//! per call is the difference between `thousand_calls_macro_tool_with_hooks` and
//! `thousand_calls_macro_tool`, over 1,000 (the target is ≤ 50 ns);
//! `thousand_calls_macro_tool_with_pass_through_hooks` gives the runtime's own share of
//! it, with hooks that do no work. Benches run one after another in one process leave
//! their heap to the next: to compare two, run each in a process of its own
//! (`cargo bench -p starweaver --bench scheduler -- --exact scheduler::<bench>`).
// Bench code, like test code, may unwrap and index: a panic fails the bench.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::{Arc, Mutex};

use divan::Bencher;
use serde_json::json;
use starweaver::hook::{Before, HookCall, Hooked, Hooks};
use starweaver::testing::FunctionModel;
use starweaver::{
    Agent, AgentBuilder, ModelResponse, Tool, ToolBuilder, ToolCallPart, ToolContext, ToolError, ToolResult, tool,
};

fn main() {
    divan::main();
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Add two integers.
#[tool]
#[allow(clippy::unused_async)] // an async tool, as users write one: it runs on the async workers
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn agent(calls: usize, tool: impl Tool) -> (Agent, Script) {
    let (builder, script) = builder(calls, tool);
    (builder.build().expect("valid agent"), script)
}

/// The model's one response of `calls` calls, made before each timed run and taken by the
/// model when the run asks: making a response is the model's work (a provider's parsing),
/// not the runtime's, so no run's time includes copying one.
struct Script {
    response: ModelResponse,
    next: Arc<Mutex<Option<ModelResponse>>>,
}

fn builder(calls: usize, tool: impl Tool) -> (AgentBuilder, Script) {
    let response = ModelResponse::tool_calls(
        (0..calls).map(|i| ToolCallPart::new(format!("call_{i}"), "add", json!({"a": i, "b": 1}))),
    );
    let script = Script { response, next: Arc::default() };
    let next = script.next.clone();
    let model = FunctionModel::new(move |request| {
        Ok(if request.step == 1 {
            next.lock().unwrap().take().expect("the bench set this run's response")
        } else {
            ModelResponse::text("done")
        })
    });
    (Agent::builder(model).tool(tool), script)
}

fn run(bencher: Bencher, (agent, script): &(Agent, Script)) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    bencher.with_inputs(|| script.response.clone()).bench_local_values(|response| {
        *script.next.lock().unwrap() = Some(response);
        one_run(&runtime, agent);
    });
}

/// One timed run, result dropped included. A function of its own, so that a profiler
/// counts only the runs: `valgrind --tool=callgrind --toggle-collect='scheduler::one_run'`.
#[inline(never)]
fn one_run(runtime: &tokio::runtime::Runtime, agent: &Agent) {
    let result = runtime.block_on(agent.run("go")).unwrap();
    assert_eq!(result.text(), Some("done"));
}

/// One run whose single response holds 1,000 calls of a closure-built async `add`.
#[divan::bench(sample_count = 100)]
fn thousand_calls_closure_tool(bencher: Bencher) {
    let add = ToolBuilder::new("add")
        .handler(|_: ToolContext, args: AddArgs| async move { Ok(args.a + args.b) })
        .expect("valid tool");
    run(bencher, &agent(1_000, add));
}

/// The same with a `#[tool]` function.
#[divan::bench(sample_count = 100)]
fn thousand_calls_macro_tool(bencher: Bencher) {
    run(bencher, &agent(1_000, add_tool()));
}

/// A sync hook that reads every call on the way in and out, as an audit hook would, and as
/// P13's Python hooks do (`bench/scenarios_starweaver.py`): the tool's name on the way in,
/// the call's id on the way out.
struct Audit;

impl Hooks for Audit {
    fn before_call<'a>(&'a self, _: &'a ToolContext, call: &'a HookCall) -> Hooked<'a, Result<Before, ToolError>> {
        Hooked::ready(if &**call.name == "add" {
            Ok(Before::Continue)
        } else {
            Err(ToolError::user_error("not `add`"))
        })
    }

    fn after_call<'a>(
        &'a self,
        _: &'a ToolContext,
        call: &'a HookCall,
        _: &'a mut ToolResult,
    ) -> Hooked<'a, Result<(), ToolError>> {
        Hooked::ready(if call.id.is_empty() { Err(ToolError::user_error("no call id")) } else { Ok(()) })
    }
}

/// P13, Rust: the `#[tool]` run with one `before_call` and one `after_call` hook.
#[divan::bench(sample_count = 100)]
fn thousand_calls_macro_tool_with_hooks(bencher: Bencher) {
    let (builder, script) = builder(1_000, add_tool());
    run(bencher, &(builder.hook(Audit).build().expect("valid agent"), script));
}

/// Hooks whose methods are the trait's defaults: they change nothing and do no work, so
/// what they cost is the runtime's alone.
struct PassThrough;

impl Hooks for PassThrough {}

/// P13, Rust, the runtime's share: the `#[tool]` run with hooks that do no work.
#[divan::bench(sample_count = 100)]
fn thousand_calls_macro_tool_with_pass_through_hooks(bencher: Bencher) {
    let (builder, script) = builder(1_000, add_tool());
    run(bencher, &(builder.hook(PassThrough).build().expect("valid agent"), script));
}
