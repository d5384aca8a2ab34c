use starweaver::tool;

#[derive(Debug)]
struct MyError;

/// Fail in a way starweaver cannot map.
#[tool]
async fn fail() -> Result<i64, MyError> {
    Err(MyError)
}

fn main() {}
