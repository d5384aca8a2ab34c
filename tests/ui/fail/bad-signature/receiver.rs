use starweaver::tool;

struct Service;

impl Service {
    #[tool]
    async fn status(&self) -> String {
        String::new()
    }
}

fn main() {}
