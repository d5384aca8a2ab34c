use starweaver::tool;

#[tool]
async fn add(#[arg(rename = "l")] left: i64, right: i64) -> i64 {
    left + right
}

fn main() {}
