//! `ToolContext.cancelled()`: an asyncio future on the caller's loop that a tokio task
//! resolves when the call's cancellation fires.

use pyo3::prelude::*;
use starweaver::ToolContext;

use super::doorbell::{LoopWake, release_waiter};
use super::future::loop_future;
use super::runtime;

/// A future on the running loop, done once `ctx` is cancelled.
pub(crate) fn cancelled(py: Python<'_>, ctx: ToolContext) -> PyResult<Py<PyAny>> {
    let (event_loop, future) = loop_future(py)?;
    if ctx.is_cancelled() {
        release_waiter(&future)?;
        return Ok(future.unbind());
    }
    // The waiter may outlive its loop (a run that ends without being cancelled never
    // fires it), so it holds the loop, not the loop's doorbell and its pipe.
    let (wake, waiter) = (LoopWake::Loop(event_loop.unbind()), future.clone().unbind());
    runtime().spawn(async move {
        ctx.cancelled().await;
        wake.release(waiter);
    });
    Ok(future.unbind())
}
