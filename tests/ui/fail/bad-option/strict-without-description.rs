use starweaver::tool;

#[tool(strict = true)]
async fn add(left: i64, right: i64) -> i64 {
    left + right
}

fn main() {}
