use starweaver::tool;

struct Opaque;

/// Take something that has no JSON form.
#[tool]
async fn take(value: Opaque) -> i64 {
    let _ = value;
    1
}

fn main() {}
