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

/// Negate a number.
#[tool(return_schema = r#"[1]"#)]
async fn neg(value: i64) -> i64 {
    -value
}

fn main() {}
