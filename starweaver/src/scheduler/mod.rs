//! Running the tool calls of one model response (DESIGN.md §6).
//!
//! Calls run concurrently on the run's own task (no spawn per call); a `sequential` call
//! is a barrier; calls to one tool name run one at a time in model order while other
//! names overlap; an optional semaphore caps concurrency; outcomes come back in model
//! order whatever order they finished in.

mod call;

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Map;

pub(crate) use call::{CallEnv, CallOutcome, CallRequest, ToolReturn, invoke, panicked};

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

fn is_sequential(env: &CallEnv<'_>, request: &CallRequest<'_>) -> bool {
    env.registry.get(&request.part.name).is_some_and(|t| t.sequential)
}

async fn run_in_order(env: &CallEnv<'_>, calls: &[CallRequest<'_>], slots: &Mutex<Vec<Option<CallOutcome>>>) {
    let mut start = 0;
    while start < calls.len() {
        if is_sequential(env, &calls[start]) {
            run_one(env, calls, start, slots).await;
            start += 1;
            continue;
        }
        let end = (start..calls.len()).find(|&i| is_sequential(env, &calls[i])).unwrap_or(calls.len());
        run_concurrent(env, calls, start..end, slots).await;
        start = end;
    }
}

/// Runs a barrier-free stretch: one chain per tool name, chains side by side.
async fn run_concurrent(
    env: &CallEnv<'_>,
    calls: &[CallRequest<'_>],
    range: std::ops::Range<usize>,
    slots: &Mutex<Vec<Option<CallOutcome>>>,
) {
    let mut chains: Vec<Vec<usize>> = Vec::new();
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    for i in range {
        let chain = *by_name.entry(&*calls[i].part.name).or_insert_with(|| {
            chains.push(Vec::new());
            chains.len() - 1
        });
        chains[chain].push(i);
    }
    let run_chain = |chain: Vec<usize>| async move {
        for i in chain {
            run_one(env, calls, i, slots).await;
        }
    };
    if chains.len() == 1 {
        run_chain(chains.pop().expect("one chain")).await;
    } else {
        futures::future::join_all(chains.into_iter().map(run_chain)).await;
    }
}

async fn run_one(env: &CallEnv<'_>, calls: &[CallRequest<'_>], i: usize, slots: &Mutex<Vec<Option<CallOutcome>>>) {
    let outcome = invoke(env, &calls[i]).await;
    slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[i] = Some(outcome);
}
