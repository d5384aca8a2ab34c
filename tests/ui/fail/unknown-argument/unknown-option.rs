use starweaver::tool;

#[tool(descr = "Add two numbers.")]
async fn add(left: i64, right: i64) -> i64 {
    left + right
}

fn main() {}
