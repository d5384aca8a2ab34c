//! `async for event in agent.run_stream(...)`: a run's events as they happen, then its result.

use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use pyo3::exceptions::{PyRuntimeError, PyStopAsyncIteration};
use pyo3::prelude::*;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use starweaver::RunStream;

use crate::agent::result_to_py;
use crate::convert;
use crate::runtime::LoopFuture;

/// A run's events, live: iterate with `async for` (each event is a dict with `seq`,
/// `run_id` and `type`), then `await stream.result()` for the `RunResult`. Iterating drives
/// the run; nothing runs between iterations.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "RunStream", frozen)]
pub struct PyRunStream(Arc<tokio::sync::Mutex<Option<RunStream<'static>>>>);

impl PyRunStream {
    pub(crate) fn new(stream: RunStream<'static>) -> Self {
        Self(Arc::new(tokio::sync::Mutex::new(Some(stream))))
    }
}

#[gen_stub_pymethods]
#[pymethods]
impl PyRunStream {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[dict[str, typing.Any]]", imports = ("typing",)))]
    fn __anext__(&self) -> LoopFuture {
        let stream = self.0.clone();
        let next = async move {
            let mut stream = stream.lock().await;
            let event = match stream.as_mut() {
                Some(stream) => stream.next().await,
                None => None,
            };
            match event {
                Some(event) => Python::attach(|py| convert::serialize_to_py(py, &event).map(Bound::unbind)),
                None => Err(PyStopAsyncIteration::new_err(())),
            }
        };
        LoopFuture::new(next.boxed(), None)
    }

    /// Finishes the run (events not yet read stay in the result's `events`) and returns it.
    #[gen_stub(override_return_type(type_repr = "typing.Awaitable[RunResult]", imports = ("typing",)))]
    fn result(&self) -> LoopFuture {
        let stream = self.0.clone();
        let result = async move {
            let Some(stream) = stream.lock().await.take() else {
                return Err(PyRuntimeError::new_err("the stream's result was already taken"));
            };
            result_to_py(stream.result().await)
        };
        LoopFuture::new(result.boxed(), None)
    }
}
