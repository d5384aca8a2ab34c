//! Awaiting a Python awaitable from Rust, on the loop thread: a coroutine is stepped with
//! `send(None)` exactly as an asyncio Task would (so `asyncio.current_task()` is the task
//! awaiting the run); an asyncio future (a sync tool in the executor) is awaited with a
//! done-callback. Dropping a pending awaitable cancels it: the coroutine sees
//! `CancelledError` where it is suspended.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use pyo3::exceptions::{PyRuntimeError, PyStopIteration};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString};

/// Whether what a Python callback returned is awaitable (has `__await__`). The plain
/// values callbacks return most (`None`, a dict, a list, a str) are known at once: looking
/// up an attribute they lack costs Python an exception.
pub(crate) fn is_awaitable(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    if value.is_none()
        || value.is_instance_of::<PyDict>()
        || value.is_instance_of::<PyList>()
        || value.is_instance_of::<PyString>()
    {
        return Ok(false);
    }
    value.hasattr(pyo3::intern!(value.py(), "__await__"))
}

/// A Python coroutine or asyncio future, as a Rust future of its result.
pub(crate) struct PyAwait {
    coroutine: Option<Py<PyAny>>,
    /// The asyncio future the coroutine waits on (or that is awaited itself).
    waiting_on: Option<Py<PyAny>>,
    /// The waker the done-callback wakes; refreshed on every poll.
    waker: Arc<Mutex<Option<Waker>>>,
    done: bool,
}

impl PyAwait {
    /// Wraps what a Python call returned: a coroutine, or an awaitable future.
    pub(crate) fn new(awaitable: Bound<'_, PyAny>) -> PyResult<Self> {
        let py = awaitable.py();
        let waker: Arc<Mutex<Option<Waker>>> = Arc::default();
        let (coroutine, waiting_on) = if awaitable.hasattr(pyo3::intern!(py, "send"))? {
            (Some(awaitable.unbind()), None)
        } else if awaitable.hasattr(pyo3::intern!(py, "add_done_callback"))? {
            awaitable.call_method1(pyo3::intern!(py, "add_done_callback"), (WakeOnDone(waker.clone()),))?;
            (None, Some(awaitable.unbind()))
        } else {
            let coroutine = awaitable.call_method0(pyo3::intern!(py, "__await__"))?;
            (Some(coroutine.unbind()), None)
        };
        Ok(Self { coroutine, waiting_on, waker, done: false })
    }

    fn step(&mut self, py: Python<'_>, waker: &Waker) -> Poll<PyResult<Py<PyAny>>> {
        *self.waker.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(waker.clone());
        if let Some(future) = &self.waiting_on {
            let future = future.bind(py);
            match future.call_method0(pyo3::intern!(py, "done")).and_then(|d| d.extract::<bool>()) {
                Ok(false) => return Poll::Pending,
                Ok(true) => {}
                Err(err) => return Poll::Ready(Err(err)),
            }
            let future = self.waiting_on.take().expect("checked above").into_bound(py);
            if self.coroutine.is_none() {
                self.done = true;
                return Poll::Ready(future.call_method0(pyo3::intern!(py, "result")).map(Bound::unbind));
            }
        }
        let Some(coroutine) = &self.coroutine else {
            return Poll::Ready(Err(PyRuntimeError::new_err("awaitable already finished")));
        };
        match coroutine.bind(py).call_method1(pyo3::intern!(py, "send"), (py.None(),)) {
            Ok(yielded) if yielded.is_none() => {
                // A bare `yield` (`asyncio.sleep(0)`): step again on the next turn.
                waker.wake_by_ref();
                Poll::Pending
            }
            Ok(yielded) => match self.wait_on(yielded) {
                Ok(()) => Poll::Pending,
                Err(err) => {
                    self.done = true;
                    Poll::Ready(Err(err))
                }
            },
            Err(err) if err.is_instance_of::<PyStopIteration>(py) => {
                self.done = true;
                Poll::Ready(err.value(py).getattr(pyo3::intern!(py, "value")).map(Bound::unbind))
            }
            Err(err) => {
                self.done = true;
                Poll::Ready(Err(err))
            }
        }
    }

    /// What asyncio's Task does with a yielded future: clear its blocking flag and resume
    /// the coroutine once it is done.
    fn wait_on(&mut self, yielded: Bound<'_, PyAny>) -> PyResult<()> {
        let py = yielded.py();
        if !yielded.hasattr(pyo3::intern!(py, "_asyncio_future_blocking"))? {
            return Err(PyRuntimeError::new_err(format!(
                "a tool coroutine yielded {}; only asyncio awaitables are supported",
                yielded.repr()?
            )));
        }
        yielded.setattr(pyo3::intern!(py, "_asyncio_future_blocking"), false)?;
        yielded.call_method1(pyo3::intern!(py, "add_done_callback"), (WakeOnDone(self.waker.clone()),))?;
        self.waiting_on = Some(yielded.unbind());
        Ok(())
    }
}

impl Future for PyAwait {
    type Output = PyResult<Py<PyAny>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Python::attach(|py| self.step(py, cx.waker()))
    }
}

impl Drop for PyAwait {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        Python::attach(|py| {
            if let Some(future) = self.waiting_on.take() {
                drop(future.bind(py).call_method0(pyo3::intern!(py, "cancel")));
            }
            if let Some(coroutine) = self.coroutine.take() {
                cancel_coroutine(coroutine.bind(py));
            }
        });
    }
}

/// Throws `CancelledError` in where the coroutine waits, then closes it if it carries on.
fn cancel_coroutine(coroutine: &Bound<'_, PyAny>) {
    static CANCELLED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = coroutine.py();
    let Ok(cancelled) = CANCELLED.import(py, "asyncio", "CancelledError") else { return };
    let Ok(error) = cancelled.call0() else { return };
    if coroutine.call_method1(pyo3::intern!(py, "throw"), (error,)).is_ok() {
        drop(coroutine.call_method0(pyo3::intern!(py, "close")));
    }
}

/// A done-callback that wakes whichever task last polled the awaitable.
#[pyclass(module = "starweaver._native")]
struct WakeOnDone(Arc<Mutex<Option<Waker>>>);

#[pymethods]
impl WakeOnDone {
    fn __call__(&self, _future: &Bound<'_, PyAny>) {
        if let Some(waker) = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref() {
            waker.wake_by_ref();
        }
    }
}
