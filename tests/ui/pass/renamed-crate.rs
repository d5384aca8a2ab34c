//! `crate = "..."` lets a crate that re-exports starweaver use the macro.
#![deny(warnings, missing_docs)]

mod reexport {
    pub use starweaver as engine;
}

/// Add two numbers.
#[starweaver::tool(crate = "crate::reexport::engine")]
pub async fn add(left: i64, right: i64) -> i64 {
    left + right
}

fn main() {
    let tool = add_tool();
    assert_eq!(starweaver::Tool::definition(&tool).name, "add");
}
