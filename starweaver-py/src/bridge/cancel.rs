//! `ToolContext.cancelled()`: an asyncio future on the caller's loop that a tokio task
//! resolves when the call's cancellation fires.

use pyo3::prelude::*;
use starweaver::ToolContext;

use super::{attach_unless_exiting, runtime};

/// A future on the running loop, done once `ctx` is cancelled.
pub(crate) fn cancelled(py: Python<'_>, ctx: ToolContext) -> PyResult<Py<PyAny>> {
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let future = event_loop.call_method0("create_future")?;
    if ctx.is_cancelled() {
        future.call_method1("set_result", (py.None(),))?;
        return Ok(future.unbind());
    }
    let (event_loop, waiter) = (event_loop.unbind(), future.clone().unbind());
    runtime().spawn(async move {
        ctx.cancelled().await;
        attach_unless_exiting(|py| {
            let set = waiter.getattr(py, "set_result");
            if let Ok(set) = set
                && !waiter.call_method0(py, "done").and_then(|d| d.extract::<bool>(py)).unwrap_or(true)
            {
                drop(event_loop.call_method1(py, "call_soon_threadsafe", (set, py.None())));
            }
        });
    });
    Ok(future.unbind())
}
