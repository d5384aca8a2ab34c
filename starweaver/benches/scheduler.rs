//! P4 (PERF.md): 1,000 Rust tool calls in one model response, pure Rust, for a
//! closure-built tool and a `#[tool]` function.
//!
//! `cargo bench -p starweaver --bench scheduler` prints the time for a whole run of
//! 1,000 calls; divide by 1,000 for µs per call (the target is ≤ 1 µs).
// Bench code, like test code, may unwrap and index: a panic fails the bench.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use divan::Bencher;
use serde_json::json;
use starweaver::testing::FunctionModel;
use starweaver::{Agent, ModelResponse, Tool, ToolBuilder, ToolCallPart, ToolContext, tool};

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

fn agent(calls: usize, tool: impl Tool) -> Agent {
    let response = ModelResponse::tool_calls(
        (0..calls).map(|i| ToolCallPart::new(format!("call_{i}"), "add", json!({"a": i, "b": 1}))),
    );
    let model = FunctionModel::new(move |request| {
        Ok(if request.step == 1 { response.clone() } else { ModelResponse::text("done") })
    });
    Agent::builder(model).tool(tool).build().expect("valid agent")
}

fn run(bencher: Bencher, agent: &Agent) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    bencher.bench_local(|| {
        let result = runtime.block_on(agent.run("go")).unwrap();
        assert_eq!(result.output.as_deref(), Some("done"));
    });
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
