//! Running the tool calls of one model response (DESIGN.md §6).
//!
//! Calls run concurrently on the run's own task (no spawn per call), started as
//! [`CallPlan`] releases them: a `sequential` call is a barrier; calls to one tool name run
//! one at a time in model order while other names overlap. An optional semaphore caps
//! concurrency; outcomes come back in model order whatever order they finished in.

mod call;
mod plan;

use std::sync::Mutex;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Map;

pub(crate) use call::{CallEnv, CallOutcome, CallRequest, ToolReturn, invoke, panicked};
pub use plan::{CallPlan, PlannedCall};

use crate::tool::ToolError;

/// Outcomes in model order, and whether the run was cancelled before all calls ended.
pub(crate) struct BatchOutcome {
    pub outcomes: Vec<CallOutcome>,
    pub cancelled: bool,
}

/// Runs `calls` under the scheduling rules; stops early if the run is cancelled, in which
/// case unfinished calls end as `cancelled` error returns.
pub(crate) async fn execute(env: &CallEnv<'_>, calls: &[CallRequest<'_>]) -> BatchOutcome {
    let slots: Mutex<Vec<Option<CallOutcome>>> = Mutex::new(calls.iter().map(|_| None).collect());
    let cancelled = tokio::select! {
        biased;
        () = env.cancellation.cancelled() => true,
        () = run_in_order(env, calls, &slots) => false,
    };
    let slots = slots.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    let outcomes = slots
        .into_iter()
        .zip(calls)
        .map(|(slot, request)| {
            slot.unwrap_or_else(|| {
                let error = ToolError::cancelled("the run was cancelled before this call finished");
                let ret = ToolReturn::failure(request.part, error, Map::new());
                env.events.emit(ret.event());
                ret.into()
            })
        })
        .collect();
    BatchOutcome { outcomes, cancelled }
}

/// Runs the calls as the plan releases them, side by side on this task.
async fn run_in_order(env: &CallEnv<'_>, calls: &[CallRequest<'_>], slots: &Mutex<Vec<Option<CallOutcome>>>) {
    let mut plan = CallPlan::new(calls.iter().map(|request| PlannedCall {
        name: request.part.name.to_string(),
        sequential: env.registry.get(&request.part.name).is_some_and(|t| t.sequential),
    }));
    let mut running = FuturesUnordered::new();
    loop {
        for i in plan.start_ready() {
            running.push(async move { (i, invoke(env, &calls[i]).await) });
        }
        let Some((i, outcome)) = running.next().await else { break };
        slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[i] = Some(outcome);
        plan.finish(i);
    }
}
