//! Writes `_native.pyi` from the bindings' `#[gen_stub_*]` annotations.
//! `cargo run -p starweaver-py --bin stub_gen`, or `make stubs`.

fn main() -> pyo3_stub_gen::Result<()> {
    let stub = _native::stub_info()?;
    stub.generate()?;
    Ok(())
}
