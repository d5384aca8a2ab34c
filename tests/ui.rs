//! Compile-fail cases for `#[tool]`: each `ui/fail/<topic>/*.rs` must fail with exactly
//! the `.stderr` beside it, and each `ui/pass/*.rs` must compile. Regenerate after a
//! deliberate change with `TRYBUILD=overwrite cargo test -p starweaver-tests --test ui`
//! and review the `.stderr` diffs like code. Messages depend on rustc; these are locked
//! on the toolchain in `rust-toolchain.toml`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
    cases.compile_fail("ui/fail/*/*.rs");
}
