//! The main job: an agent with tools on the built-in test model, including an approval.
//!
//! `cargo run --example quickstart`

use serde_json::json;
use starweaver::testing::TestModel;
use starweaver::{Agent, ModelResponse, RunStatus, ToolBuilder, ToolCallPart, ToolContext, ToolError};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first addend.
    left: i64,
    /// The second addend.
    right: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct DeployArgs {
    /// Where to deploy.
    environment: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let add = ToolBuilder::new("add")
        .description("Add two integers.")
        .handler(|_: ToolContext, args: AddArgs| async move { Ok(json!({"total": args.left + args.right})) })?;
    let deploy = ToolBuilder::new("deploy").description("Deploy the current release.").handler(
        |ctx: ToolContext, args: DeployArgs| async move {
            let approval = ctx.approval().ok_or_else(|| ToolError::user_error("deploy runs only after approval"))?;
            Ok(json!({"deployed_to": args.environment, "approved_by": approval.decided_by}))
        },
    )?;

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
        .tool(add)
        .tool(deploy)
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
    println!("output: {}", result.output.as_deref().unwrap_or_default());
    println!("history:\n{}", serde_json::to_string_pretty(&result.messages.to_json())?);
    println!("events of the resumed run:");
    for event in &result.events {
        println!("  {}", serde_json::to_string(event)?);
    }
    Ok(())
}
