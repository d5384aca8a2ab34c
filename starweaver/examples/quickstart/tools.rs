//! The quickstart agent's tools. A module of its own so the definition snapshots in
//! `tests/` cover them too.
// A tool may be `async` without awaiting: it then runs on the async workers, not beside them.
#![allow(clippy::unused_async)]

use serde_json::{Value, json};
use starweaver::{ToolContext, ToolError, tool};

/// Add two integers.
#[tool]
pub async fn add(
    /// The first addend.
    left: i64,
    /// The second addend.
    right: i64,
) -> Value {
    json!({"total": left + right})
}

/// Deploy the current release; runs only once a human approved it.
#[tool(metadata = r#"{"risk": "high"}"#)]
pub async fn deploy(
    ctx: &ToolContext,
    /// Where to deploy.
    environment: String,
) -> Result<Value, ToolError> {
    let approval = ctx.approval().ok_or_else(|| ToolError::user_error("deploy runs only after approval"))?;
    Ok(json!({"deployed_to": environment, "approved_by": approval.decided_by}))
}
