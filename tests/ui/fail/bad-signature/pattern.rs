use starweaver::tool;

#[tool]
async fn add((left, right): (i64, i64)) -> i64 {
    left + right
}

fn main() {}
