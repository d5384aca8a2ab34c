//! Gives this crate the cfgs of `PyO3` for the interpreter it is built for, such as
//! `Py_GIL_DISABLED` on a free-threaded one.

fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
