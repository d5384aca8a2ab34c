use starweaver::tool;

/// Add two numbers.
#[tool(metadata = r#"{"risk": high}"#)]
async fn add(left: i64, right: i64) -> i64 {
    left + right
}

/// Subtract two numbers.
#[tool(parameters_schema = r#"["not", "an", "object"]"#)]
async fn sub(left: i64, right: i64) -> i64 {
    left - right
}

fn main() {}
