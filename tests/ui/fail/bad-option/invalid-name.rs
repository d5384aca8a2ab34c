use starweaver::tool;

/// Add two numbers.
#[tool(name = "add numbers")]
async fn add(left: i64, right: i64) -> i64 {
    left + right
}

fn main() {}
