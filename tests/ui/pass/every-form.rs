//! Every accepted signature compiles without warnings.
#![deny(warnings, missing_docs)]

use starweaver::{ToolContext, ToolError, ToolResult, tool};

/// No parameters, no return.
#[tool]
pub async fn ping() {}

/// A context by value and a `ToolResult`.
#[tool(sequential)]
pub async fn owned(ctx: ToolContext) -> ToolResult {
    ToolResult::new(serde_json::json!(ctx.retry()))
}

/// A raw identifier parameter and a `Result` alias.
#[tool]
pub fn typed(r#type: String) -> std::io::Result<String> {
    Ok(r#type)
}

/// `?` on a boxed error.
#[tool]
pub async fn boxed(text: String) -> Result<i64, ToolError> {
    let parsed: Result<i64, Box<dyn std::error::Error + Send + Sync>> = text.parse::<i64>().map_err(Into::into);
    Ok(parsed?)
}

/// An `impl Trait` value: no return schema, since the type cannot be named.
#[tool]
pub async fn opaque() -> Result<impl serde::Serialize, ToolError> {
    Ok(1)
}

/// A return schema given as JSON.
#[tool(return_schema = r#"{"type": "integer"}"#)]
pub async fn explicit() -> u8 {
    1
}

/// A return schema turned off.
#[tool(return_schema = false)]
pub async fn untyped() -> u8 {
    1
}

fn main() {
    let _ = (ping_tool(), owned_tool(), typed_tool(), boxed_tool(), opaque_tool(), explicit_tool(), untyped_tool());
}
