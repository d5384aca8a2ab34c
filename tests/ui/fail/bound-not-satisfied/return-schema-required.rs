use starweaver::{ToolResult, tool};

/// `return_schema` alone asks for the value type's schema, and `ToolResult` has none.
#[tool(return_schema)]
async fn report() -> ToolResult {
    ToolResult::new(serde_json::json!({}))
}

fn main() {}
