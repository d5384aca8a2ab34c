use starweaver::tool;

struct Opaque;

/// Make something that has no JSON form.
#[tool]
async fn make() -> Opaque {
    Opaque
}

fn main() {}
