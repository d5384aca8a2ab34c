use starweaver::tool;

#[tool(name = "add", name = "plus")]
async fn add(left: i64, right: i64) -> i64 {
    left + right
}

fn main() {}
