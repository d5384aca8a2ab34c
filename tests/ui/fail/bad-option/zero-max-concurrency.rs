/// Never runs: a limit of no calls at once.
#[starweaver::tool(max_concurrency = 0)]
async fn stuck(query: String) -> String {
    query
}

fn main() {}
