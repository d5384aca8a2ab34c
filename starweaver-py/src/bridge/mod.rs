//! The Python↔Rust bridge: how a call crosses between asyncio and Rust futures.
//!
//! A native `async` method returns a [`RustFuture`] (`future.rs`; Python sees the class
//! under the same name). The asyncio Task awaiting it polls the Rust future on the loop
//! thread. When that future reaches a Python tool, the tool's coroutine is stepped in place
//! as a [`PyAwait`] (`awaitable.rs`), on the same thread and under the same Task. Timers,
//! cancellation waiters and MCP transports run on one background tokio runtime
//! ([`runtime`]); what they wake comes back through the loop's doorbell, a pipe it watches
//! (on Unix; `call_soon_threadsafe` otherwise: `doorbell.rs`). `ToolContext.cancelled()`
//! is an asyncio future that the runtime resolves (`cancel.rs`). Sync tools run in the
//! loop's executor, except a chain of calls to one sync tool, which runs ahead on a thread
//! of its own (`ahead.rs`).

mod ahead;
mod awaitable;
mod cancel;
mod doorbell;
mod exiting;
mod future;

pub(crate) use ahead::Lane;
pub(crate) use awaitable::{PyAwait, is_awaitable};
pub(crate) use cancel::cancelled;
pub(crate) use exiting::{attach_unless_exiting, before_exit};
pub(crate) use future::{RustFuture, runtime};
