//! Leaving Python alone while it exits. CPython ends a thread that asks for the GIL during
//! finalization with `pthread_exit`, which aborts the process when it unwinds through Rust
//! frames: a timer or an MCP task finishing at exit must not ask.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use pyo3::prelude::*;

/// Whether the interpreter is shutting down (set by an `atexit` hook), and how many
/// threads are inside [`attach_unless_exiting`].
static EXITING: AtomicBool = AtomicBool::new(false);
static ATTACHED: AtomicUsize = AtomicUsize::new(0);

/// `Python::attach` for threads Python does not own (the timer runtime's): `None`, without
/// touching Python, once the interpreter is shutting down.
pub(crate) fn attach_unless_exiting<R>(run: impl FnOnce(Python<'_>) -> R) -> Option<R> {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            ATTACHED.fetch_sub(1, Ordering::SeqCst);
        }
    }
    ATTACHED.fetch_add(1, Ordering::SeqCst);
    let _leave = Leave;
    if EXITING.load(Ordering::SeqCst) {
        return None;
    }
    Some(Python::attach(run))
}

/// The `atexit` hook: no background thread enters Python from now on, and those already
/// entering get the GIL and leave before finalization starts (within a second, in case
/// one waits on something that will never come).
#[pyfunction]
pub(crate) fn before_exit(py: Python<'_>) {
    EXITING.store(true, Ordering::SeqCst);
    py.detach(|| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while ATTACHED.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    });
}
