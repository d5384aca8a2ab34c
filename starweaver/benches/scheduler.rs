//! P4 (PERF.md): 1,000 Rust tool calls in one model response, pure Rust.
//!
//! `cargo bench -p starweaver --bench scheduler` prints the time for a whole run of
//! 1,000 calls; divide by 1,000 for µs per call.

use divan::Bencher;
use serde_json::json;
use starweaver::testing::FunctionModel;
use starweaver::{Agent, ModelResponse, ToolBuilder, ToolCallPart, ToolContext};

fn main() {
    divan::main();
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

fn agent(calls: usize) -> Agent {
    let response = ModelResponse::tool_calls(
        (0..calls).map(|i| ToolCallPart::new(format!("call_{i}"), "add", json!({"a": i, "b": 1}))),
    );
    let model = FunctionModel::new(move |request| {
        Ok(if request.step == 1 { response.clone() } else { ModelResponse::text("done") })
    });
    let add = ToolBuilder::new("add")
        .handler(|_: ToolContext, args: AddArgs| async move { Ok(args.a + args.b) })
        .expect("valid tool");
    Agent::builder(model).tool(add).build().expect("valid agent")
}

/// One run whose single response holds 1,000 calls of an async `add` tool.
#[divan::bench(sample_count = 50)]
fn thousand_calls_in_one_response(bencher: Bencher) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let agent = agent(1_000);
    bencher.bench_local(|| {
        let result = runtime.block_on(agent.run("go")).unwrap();
        assert_eq!(result.output.as_deref(), Some("done"));
    });
}
