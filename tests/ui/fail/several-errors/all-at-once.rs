use starweaver::{ToolContext, tool};

#[tool(descr = "x", name = "bad name", timeout_ms = 5, timeout_ms = 6)]
async fn everything_wrong((a, b): (i64, i64), ctx: &ToolContext) -> i64 {
    let _ = ctx;
    a + b
}

fn main() {
    // The function and its handle still exist, so this line adds no error of its own.
    let _ = everything_wrong_tool();
}
