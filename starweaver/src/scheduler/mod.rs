//! Running the tool calls of one model response: [`CallPlan`] says which
//! calls may start (a `sequential` call is a barrier; calls to one tool name run one at a
//! time in model order while other names overlap), and `call.rs` runs one call. The run's
//! driver runs the released calls concurrently on its own task (no spawn per call); an
//! optional semaphore caps concurrency. `channel.rs` records what a call reports while it
//! runs; `woken.rs` keeps the run's wait on its cancellation from costing every call.

mod attempted;
mod call;
mod channel;
mod cut;
mod hooks;
mod plan;
mod woken;

pub(crate) use call::{
    Ahead, Asks, CallEnv, CallOutcome, CallRequest, Served, ToolReturn, Waits, chain_ahead, invoke, invoke_alone,
    not_found,
};
pub(crate) use channel::RunChannel;
pub(crate) use hooks::prepare_step;
pub use plan::{CallPlan, PlannedCall};
pub(crate) use woken::Woken;
