//! Driving Rust futures from the asyncio event loop, without a thread hop per call.
//!
//! [`RustFuture`] is the awaitable every native `async` method returns: the awaiting asyncio
//! Task polls the Rust future on the loop thread, so Python tool coroutines are stepped in
//! place (see [`super::awaitable`]). A wake from the loop thread (a done-callback) resolves
//! the Task's waiter directly; wakes from other threads (timers and MCP messages on the
//! background tokio runtime) ring the loop's doorbell on Unix ([`super::doorbell`]).

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;

use futures::future::BoxFuture;
use pyo3::exceptions::{PyRuntimeError, PyStopIteration};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use tokio_util::sync::CancellationToken;

use super::doorbell::{LoopWake, release_waiter};

/// The tokio runtime that serves timers (`timeout_ms`), cancellation waiters and the I/O of
/// MCP transports (rmcp's tasks, a served stdio). Runs' futures are polled on the event
/// loop, not here.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("starweaver-timers")
            .enable_time()
            .enable_io()
            .build()
            .expect("the starweaver timer runtime starts")
    })
}

/// The running event loop and a new asyncio future on it.
pub(super) fn loop_future(py: Python<'_>) -> PyResult<(Bound<'_, PyAny>, Bound<'_, PyAny>)> {
    static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let event_loop = GET_RUNNING_LOOP.import(py, "asyncio", "get_running_loop")?.call0()?;
    let future = event_loop.call_method0(intern!(py, "create_future"))?;
    Ok((event_loop, future))
}

/// Where a waiting Task parks: the asyncio future it awaits, the loop's thread, and how
/// another thread wakes the loop.
struct Waiter {
    future: Py<PyAny>,
    thread: ThreadId,
    wake: LoopWake,
}

#[derive(Default)]
struct WakeState {
    woken: bool,
    waiter: Option<Waiter>,
}

/// The waker handed to the Rust future.
#[derive(Default)]
struct LoopWaker(Mutex<WakeState>);

impl Wake for LoopWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let waiter = {
            let mut state = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            state.woken = true;
            state.waiter.take()
        };
        let Some(waiter) = waiter else { return };
        if waiter.thread == std::thread::current().id() {
            // From the loop thread, which holds the GIL already.
            Python::attach(|py| drop(release_waiter(waiter.future.bind(py))));
        } else {
            waiter.wake.release(waiter.future);
        }
    }
}

/// An awaitable Rust future. `await` it from asyncio; cancelling the awaiting Task
/// cancels the run (running tools see `CancelledError`) and re-raises in the awaiter.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "RustFuture", frozen)]
pub struct RustFuture {
    /// Behind a lock only because pyclasses must be `Sync`; the awaiting Task is the one
    /// user, so it is never contended.
    future: Mutex<Option<BoxFuture<'static, PyResult<Py<PyAny>>>>>,
    waker: Arc<LoopWaker>,
    cancellation: Option<CancellationToken>,
}

impl RustFuture {
    pub(crate) fn new(
        future: BoxFuture<'static, PyResult<Py<PyAny>>>,
        cancellation: Option<CancellationToken>,
    ) -> Self {
        Self { future: Mutex::new(Some(future)), waker: Arc::default(), cancellation }
    }

    fn step(&self, py: Python<'_>, thrown: Option<PyErr>) -> PyResult<Py<PyAny>> {
        // The future is polled and also dropped here, and dropping one (a child process,
        // an MCP session) may spawn cleanup on the runtime: both need its context.
        let _runtime = runtime().enter();
        let mut slot = self.future.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(future) = slot.as_mut() else {
            return Err(PyRuntimeError::new_err("cannot reuse an already awaited starweaver call"));
        };
        if thrown.is_some()
            && let Some(cancellation) = &self.cancellation
        {
            cancellation.cancel();
        }
        let waited = {
            let mut state = self.waker.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            state.woken = false;
            state.waiter.take()
        };
        // Dropped out of the lock: dropping Python objects may run Python, which may let
        // another thread take the GIL and then wait for this lock to wake us.
        drop(waited);
        let poll = {
            let waker = Waker::from(self.waker.clone());
            future.as_mut().poll(&mut Context::from_waker(&waker))
        };
        match (poll, thrown) {
            (Poll::Ready(result), None) => {
                *slot = None;
                Err(PyStopIteration::new_err((result?,)))
            }
            (_, Some(thrown)) => {
                // The awaiter was cancelled: the run has wound down (or is dropped now,
                // which cancels its tools); the awaiter sees its exception.
                *slot = None;
                Err(thrown)
            }
            (Poll::Pending, None) => self.park(py),
        }
    }

    /// Yields what the Task should wait on: `None` to be stepped again at once (woken
    /// during the poll, like `asyncio.sleep(0)`), else a fresh asyncio future.
    fn park(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.waker.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).woken {
            return Ok(py.None());
        }
        // Python runs out of the lock (see `step`); a wake meanwhile sets `woken`, seen below.
        let (event_loop, future) = loop_future(py)?;
        future.setattr(intern!(py, "_asyncio_future_blocking"), true)?;
        let wake = LoopWake::of(&event_loop);
        let mut state = self.waker.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.woken {
            drop(state);
            return Ok(py.None());
        }
        state.waiter = Some(Waiter { future: future.clone().unbind(), thread: std::thread::current().id(), wake });
        Ok(future.unbind())
    }
}

#[gen_stub_pymethods]
#[pymethods]
impl RustFuture {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.step(py, None)
    }

    fn send(&self, py: Python<'_>, _value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.step(py, None)
    }

    fn throw(&self, py: Python<'_>, exc: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.step(py, Some(PyErr::from_value(exc.clone())))
    }

    fn close(&self) {
        self.settle();
    }
}

impl RustFuture {
    /// Ends an unfinished run as cancelled: its tools (sync ones in their threads too) see
    /// the cancellation, and one more poll lets it record `cancelled` returns and free its
    /// session, instead of vanishing mid-step.
    fn settle(&self) {
        // Dropping the future may spawn cleanup on the runtime (see `step`); the guard is
        // made first so that it outlives the future.
        let _runtime = runtime().enter();
        let future = self.future.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let Some(mut future) = future else { return };
        if let Some(cancellation) = &self.cancellation {
            cancellation.cancel();
            let poll = AssertUnwindSafe(|| future.as_mut().poll(&mut Context::from_waker(Waker::noop())));
            drop(std::panic::catch_unwind(poll));
        }
    }
}

/// An awaitable dropped before it finished (its Task was garbage-collected) cancels its run.
impl Drop for RustFuture {
    fn drop(&mut self) {
        self.settle();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spawns its cleanup on the runtime when dropped, as an MCP session or a child
    /// process does.
    struct SpawnsOnDrop;

    impl Drop for SpawnsOnDrop {
        fn drop(&mut self) {
            tokio::spawn(async {});
        }
    }

    #[test]
    fn an_unfinished_call_dropped_from_python_may_spawn_its_cleanup() {
        let cleanup = SpawnsOnDrop;
        let call = async move {
            let _cleanup = cleanup;
            std::future::pending::<PyResult<Py<PyAny>>>().await
        };
        // What happens when the awaiting Task is garbage-collected: no panic.
        drop(RustFuture::new(Box::pin(call), None));
    }
}
