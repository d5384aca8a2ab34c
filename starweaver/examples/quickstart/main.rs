//! The main job: an agent with tools on the built-in test model, including an approval.
//!
//! `cargo run --example quickstart` (or `make run`). The tools are `#[tool]` functions in
//! `tools.rs`; the risky one sits behind an approval policy.
// An example, like a test, may index: the script above makes the one approval it reads.
#![allow(clippy::indexing_slicing)]

mod tools;

use serde_json::json;
use starweaver::testing::TestModel;
use starweaver::{Agent, ModelResponse, RunStatus, ToolCallPart};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The test model plays a script: it calls both tools at once, then answers.
    let model = TestModel::new([
        TestModel::tool_call_response([
            ToolCallPart::new("call_add", "add", json!({"left": 2, "right": 3})),
            ToolCallPart::new("call_deploy", "deploy", json!({"environment": "production"})),
        ]),
        ModelResponse::text("2 + 3 = 5, and the release is live in production."),
    ]);
    let agent = Agent::builder(model)
        .instructions("You are a release assistant.")
        .tool(tools::add_tool())
        .tool(tools::deploy_tool())
        .approval_required_tools(["deploy"])
        .build()?;

    let mut session = agent.session();
    let waiting = session.run("Add 2 and 3, then deploy to production.").await?;
    assert_eq!(waiting.status, RunStatus::Waiting);
    let pending = &waiting.hitl.approvals[0];
    println!("run {} is waiting: {} ({})", waiting.run_id, pending.tool_name, pending.reason);

    let decision = pending.approve().decided_by("release-manager");
    let result = session.resume(vec![decision]).await?;
    println!("status: {}", result.status.as_str());
    println!("output: {}", result.text().unwrap_or_default());
    println!("history:\n{}", serde_json::to_string_pretty(&result.messages.to_json())?);
    println!("events of the resumed run:");
    for event in &result.events {
        println!("  {}", serde_json::to_string(event)?);
    }
    Ok(())
}
