//! `async for event in agent.run_stream(...)`: a run's events as they happen, then its result.

use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use pyo3::exceptions::{PyRuntimeError, PyStopAsyncIteration};
use pyo3::prelude::*;
use pyo3::types::PyType;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use starweaver::{CancellationToken, RunStream};

use crate::bridge::{RustFuture, runtime};
use crate::convert;
use crate::output::Decoder;
use crate::result::result_to_py;

/// A run's events, live: iterate with `async for` (each event is a dict with `seq`,
/// `run_id` and `type`), then `await stream.result()` for the `RunResult`. Iterating drives
/// the run; nothing runs between iterations.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "RunStream", frozen)]
pub struct PyRunStream {
    stream: Arc<tokio::sync::Mutex<Settling>>,
    /// Cancelling the Task that reads the stream cancels the run through it.
    cancellation: CancellationToken,
    /// Decodes the run's output into its Python type.
    decoder: Option<Decoder>,
}

/// The run stream, dropped inside the timer runtime: a stream dropped mid-run settles its
/// run as cancelled at once (see [`RunStream`]'s drop), which may touch tokio timers.
struct Settling(Option<RunStream<'static>>);

impl Drop for Settling {
    fn drop(&mut self) {
        let _runtime = runtime().enter();
        drop(self.0.take());
    }
}

impl PyRunStream {
    pub(crate) fn new(stream: RunStream<'static>, decoder: Option<Decoder>) -> Self {
        let cancellation = stream.cancellation().clone();
        Self { stream: Arc::new(tokio::sync::Mutex::new(Settling(Some(stream)))), cancellation, decoder }
    }
}

#[gen_stub_pymethods]
#[pymethods]
impl PyRunStream {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[types.Event]", imports = ("typing", "starweaver.types")))]
    fn __anext__(&self) -> RustFuture {
        let stream = self.stream.clone();
        let next = async move {
            let mut stream = stream.lock().await;
            let event = match stream.0.as_mut() {
                Some(stream) => stream.next().await,
                None => None,
            };
            match event {
                Some(event) => Python::attach(|py| convert::serialize_to_py(py, &event).map(Bound::unbind)),
                None => Err(PyStopAsyncIteration::new_err(())),
            }
        };
        RustFuture::new(next.boxed(), Some(self.cancellation.clone()))
    }

    /// Finishes the run (events not yet read stay in the result's `events`) and returns it.
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[RunResult[types.OutputT]]", imports = ("typing", "starweaver.types")))]
    fn result(&self) -> RustFuture {
        let (stream, decoder) = (self.stream.clone(), self.decoder.clone());
        let result = async move {
            let Some(run) = stream.lock().await.0.take() else {
                return Err(PyRuntimeError::new_err("the stream's result was already taken"));
            };
            result_to_py(run.result().await, decoder.as_ref())
        };
        RustFuture::new(result.boxed(), Some(self.cancellation.clone()))
    }

    /// `RunStream[str]` at runtime; the stub's `typing.Generic` says what it means to type
    /// checkers.
    #[classmethod]
    #[gen_stub(skip)]
    fn __class_getitem__<'py>(cls: &Bound<'py, PyType>, item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        convert::generic_alias(cls, item)
    }

    /// Cancels the run: its tools see `ctx.is_cancelled()`, and the stream ends with the
    /// run cancelled. Dropping a stream mid-run (for instance by leaving
    /// `async for event in session.run_stream(...)` early) does the same at once.
    fn cancel(&self) {
        self.cancellation.cancel();
    }
}
