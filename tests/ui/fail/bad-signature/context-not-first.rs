use starweaver::{ToolContext, tool};

#[tool]
async fn whoami(name: String, ctx: &ToolContext) -> String {
    format!("{name} {}", ctx.tool_name())
}

fn main() {}
