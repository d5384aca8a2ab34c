//! Which calls of one model response may start now, with no I/O: the one
//! statement of the scheduling rules. The async scheduler runs what it says; a driver
//! elsewhere (a durable workflow) can do the same and get the same order.
//!
//! Each call waits for the previous call to the same tool, for the last `sequential`
//! call before it, and, when it is `sequential` itself, for every call before it. Waiting
//! on the nearest of each is enough: those waited for the rest.

use std::num::NonZeroUsize;

use serde::{Deserialize, Serialize};

use crate::registry::NameMap;

/// One call, as the rules see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedCall<'a> {
    /// The tool's name.
    pub name: &'a str,
    /// Whether the tool is `sequential` (it runs alone, a barrier).
    pub sequential: bool,
}

/// The calls of one response and where each stands.
///
/// ```
/// use starweaver::scheduler::{CallPlan, PlannedCall};
///
/// let call = |name, sequential| PlannedCall { name, sequential };
/// let mut plan = CallPlan::new([call("read", false), call("read", false), call("fetch", false), call("write", true)]);
/// assert!(plan.start_ready().eq([0, 2])); // one `read` at a time; `fetch` beside it
/// plan.finish(0);
/// assert!(plan.start_ready().eq([1]));
/// plan.finish(1);
/// plan.finish(2);
/// assert!(plan.start_ready().eq([3])); // `write` alone, once everything before it ended
/// plan.finish(3);
/// assert!(plan.is_done());
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(from = "StoredPlan", into = "StoredPlan")]
pub struct CallPlan {
    /// For each call, how many calls it still waits for.
    waits_for: Vec<usize>,
    /// For each call, the calls waiting for it besides its `next_in_chain`; empty while no
    /// call has any. Most calls have their chain successor alone, so a response of many
    /// calls to a few tools and no barrier keeps no list a call (the plan lives as long as
    /// its calls run).
    unblocks: Vec<Vec<usize>>,
    /// For each call, the call that runs right after it and waits for nothing else: the
    /// next call to the same tool, when no barrier stands between them. Never call 0,
    /// which comes after none: so it takes no more room than an index.
    next_in_chain: Vec<Option<NonZeroUsize>>,
    /// Calls some other call is `next_in_chain` of.
    chained: Vec<bool>,
    /// Calls that wait for nothing and have not been given out yet.
    ready: Vec<usize>,
    state: Vec<CallState>,
    /// How many calls are `Finished`, so `is_done` does not walk them all after each call.
    finished: usize,
}

/// A plan as stored (a durable run's): `unblocks` lists each call's chain successor too,
/// as every version has stored it, so a worker of any version reads any plan. Read back,
/// chains default to none (plans stored before they existed), and the finished count is
/// taken from the states.
#[derive(Serialize, Deserialize)]
struct StoredPlan {
    waits_for: Vec<usize>,
    unblocks: Vec<Vec<usize>>,
    #[serde(default)]
    next_in_chain: Vec<Option<usize>>,
    #[serde(default)]
    chained: Vec<bool>,
    ready: Vec<usize>,
    state: Vec<CallState>,
}

impl From<StoredPlan> for CallPlan {
    fn from(stored: StoredPlan) -> Self {
        let StoredPlan { waits_for, mut unblocks, next_in_chain, chained, ready, state } = stored;
        // A successor at 0 cannot be (nothing comes before call 0): read as none.
        let next_in_chain: Vec<Option<NonZeroUsize>> =
            next_in_chain.into_iter().map(|next| next.and_then(NonZeroUsize::new)).collect();
        for (unblocked, next) in unblocks.iter_mut().zip(&next_in_chain) {
            if let Some(next) = next {
                unblocked.retain(|&i| i != next.get());
            }
        }
        if unblocks.len() == waits_for.len() && unblocks.iter().all(Vec::is_empty) {
            unblocks = Vec::new();
        }
        let finished = state.iter().filter(|s| **s == CallState::Finished).count();
        Self { waits_for, unblocks, next_in_chain, chained, ready, state, finished }
    }
}

impl From<CallPlan> for StoredPlan {
    fn from(plan: CallPlan) -> Self {
        let CallPlan { waits_for, mut unblocks, next_in_chain, chained, ready, state, finished: _ } = plan;
        if unblocks.is_empty() {
            unblocks = vec![Vec::new(); waits_for.len()];
        }
        for (unblocked, next) in unblocks.iter_mut().zip(&next_in_chain) {
            if let Some(next) = next {
                // First, where the plans stored before had it: it comes before any barrier.
                unblocked.insert(0, next.get());
            }
        }
        let next_in_chain = next_in_chain.into_iter().map(|next| next.map(NonZeroUsize::get)).collect();
        Self { waits_for, unblocks, next_in_chain, chained, ready, state }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum CallState {
    Waiting,
    Running,
    Finished,
}

impl CallPlan {
    /// Plans `calls`, in model order.
    // Every index is a call's (`i`, or `j` below it) and every vector has one entry per call.
    #[allow(clippy::indexing_slicing)]
    pub fn new<'a>(calls: impl IntoIterator<Item = PlannedCall<'a>>) -> Self {
        let calls: Vec<PlannedCall<'a>> = calls.into_iter().collect();
        let mut unblocks: Vec<Vec<usize>> = Vec::new();
        let mut waits_for = vec![0; calls.len()];
        let mut next_in_chain = vec![None; calls.len()];
        let mut chained = vec![false; calls.len()];
        let mut last_of_name: NameMap<&str, usize> = NameMap::default();
        let mut barrier: Option<usize> = None;
        for (i, call) in calls.iter().enumerate() {
            // The calls this one waits for, in order and distinct: every call since the
            // barrier for a `sequential` call; else the barrier and the previous call to
            // the same tool after it.
            let (since_barrier, same_tool) = if call.sequential {
                (barrier.unwrap_or(0)..i, None)
            } else {
                let previous = last_of_name.get(call.name).copied().filter(|&j| Some(j) > barrier);
                (barrier.map_or(0..0, |b| b..b + 1), previous)
            };
            // A lone wait on the previous call to the same tool makes this call that one's
            // successor in a chain (with no barrier yet, nothing else stands between them).
            let same_tool = match same_tool {
                Some(previous) if barrier.is_none() => {
                    // `i` comes after `previous`, so it is not 0: always `Some`.
                    next_in_chain[previous] = NonZeroUsize::new(i);
                    chained[i] = true;
                    waits_for[i] += 1;
                    None
                }
                other => other,
            };
            for j in since_barrier.chain(same_tool) {
                if unblocks.is_empty() {
                    unblocks.resize_with(calls.len(), Vec::new);
                }
                unblocks[j].push(i);
                waits_for[i] += 1;
            }
            // The last call's name is never looked up: a batch of one call makes no map.
            if i + 1 < calls.len() {
                last_of_name.insert(call.name, i);
            }
            if call.sequential {
                barrier = Some(i);
            }
        }
        let ready = (0..calls.len()).filter(|&i| waits_for[i] == 0).collect();
        let state = vec![CallState::Waiting; calls.len()];
        Self { waits_for, unblocks, next_in_chain, chained, ready, state, finished: 0 }
    }

    /// The calls that may start now, in model order; each is given once and counts as
    /// running from then on, read or not.
    #[must_use = "the calls given out count as running: start each of them"]
    pub fn start_ready(&mut self) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.ready.sort_unstable();
        for &i in &self.ready {
            if let Some(state) = self.state.get_mut(i) {
                *state = CallState::Running;
            }
        }
        // Drained, not taken: the list keeps its room for the calls released next.
        self.ready.drain(..)
    }

    /// Records that call `index`, given out by [`start_ready`](Self::start_ready), ended
    /// (whatever its outcome). Anything else is ignored: a call that never started cannot
    /// release the calls after it.
    pub fn finish(&mut self, index: usize) {
        let Some(state) = self.state.get_mut(index).filter(|state| **state == CallState::Running) else { return };
        *state = CallState::Finished;
        self.finished += 1;
        let chained = self.next_in_chain.get(index).copied().flatten().map(NonZeroUsize::get);
        for &next in self.unblocks.get(index).into_iter().flatten().chain(&chained) {
            let Some(waits_for) = self.waits_for.get_mut(next) else { continue };
            *waits_for -= 1;
            if *waits_for == 0 {
                self.ready.push(next);
            }
        }
    }

    /// The calls that will run one after another after `index`, each as soon as the one
    /// before it ends and waiting for nothing else: the rest of a run of calls to one tool.
    /// Empty when `index` has already started: its chain, if any, was read then.
    pub fn chain_after(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        let head = self.state.get(index) == Some(&CallState::Running) && self.chained.get(index) == Some(&false);
        let next = |i: usize| self.next_in_chain.get(i).copied().flatten().map(NonZeroUsize::get);
        std::iter::successors(next(index).filter(|_| head), move |&i| next(i))
    }

    /// Whether every call ended.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.finished == self.state.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(calls: &[(&str, bool)]) -> CallPlan {
        CallPlan::new(calls.iter().map(|(name, sequential)| PlannedCall { name, sequential: *sequential }))
    }

    /// Runs the plan finishing calls in `order` whenever they are running; the waves seen.
    fn waves(mut plan: CallPlan, finish_first: impl Fn(&[usize]) -> usize) -> Vec<Vec<usize>> {
        let mut running: Vec<usize> = Vec::new();
        let mut seen = Vec::new();
        loop {
            let ready: Vec<usize> = plan.start_ready().collect();
            if !ready.is_empty() {
                seen.push(ready.clone());
            }
            running.extend(ready);
            if running.is_empty() {
                break;
            }
            let done = finish_first(&running);
            running.retain(|&i| i != done);
            plan.finish(done);
        }
        assert!(plan.is_done());
        seen
    }

    #[test]
    fn a_sequential_call_waits_for_all_before_and_holds_back_all_after() {
        let calls = plan(&[("a", false), ("b", false), ("s", true), ("c", false), ("d", false)]);
        assert_eq!(waves(calls, |running| running[0]), [vec![0, 1], vec![2], vec![3, 4]]);
    }

    #[test]
    fn calls_to_one_tool_run_one_at_a_time_in_model_order_beside_other_tools() {
        let calls = plan(&[("a", false), ("b", false), ("a", false), ("a", false)]);
        // Finishing the newest first shows `a`s never overlap, and `b` never waits for them.
        assert_eq!(waves(calls, |running| *running.last().unwrap()), [vec![0, 1], vec![2], vec![3]]);
    }

    #[test]
    fn chains_are_runs_of_one_tool_with_no_barrier_between() {
        let mut calls = plan(&[("a", false), ("b", false), ("a", false), ("a", false), ("s", true), ("a", false)]);
        let chain = |calls: &CallPlan, i| calls.chain_after(i).collect::<Vec<_>>();
        assert_eq!(chain(&calls, 0), [0; 0], "read once the call runs");
        assert_eq!(calls.start_ready().collect::<Vec<_>>(), [0, 1]);
        assert_eq!(chain(&calls, 0), [2, 3], "the barrier ends the chain");
        assert_eq!(chain(&calls, 1), [0; 0]);
        calls.finish(0);
        assert_eq!(calls.start_ready().collect::<Vec<_>>(), [2]);
        assert_eq!(chain(&calls, 2), [0; 0], "a chained call is not a head");
    }

    #[test]
    fn a_stored_plan_reads_back_where_it_stood() {
        let mut calls = plan(&[("a", false), ("a", false)]);
        assert_eq!(calls.start_ready().collect::<Vec<_>>(), [0]);
        calls.finish(0);
        let mut read: CallPlan = serde_json::from_value(serde_json::to_value(&calls).unwrap()).unwrap();
        assert!(!read.is_done());
        assert_eq!(read.start_ready().collect::<Vec<_>>(), [1]);
        read.finish(1);
        assert!(read.is_done());
    }

    #[test]
    fn a_plan_stores_its_chains_in_unblocks_and_reads_back_without_counting_them_twice() {
        let planned = plan(&[("a", false), ("a", false), ("s", true), ("a", false)]);
        let stored = serde_json::to_value(&planned).unwrap();
        assert_eq!(stored["unblocks"], serde_json::json!([[1, 2], [2], [3], []]), "as every version stored it");
        assert_eq!(stored["next_in_chain"], serde_json::json!([1, null, null, null]));
        let stored = serde_json::json!({
            "waits_for": [0, 1, 1],
            "unblocks": [[1], [2], []],
            "next_in_chain": [1, 2, null],
            "chained": [false, true, true],
            "ready": [0],
            "state": ["Waiting", "Waiting", "Waiting"],
        });
        let mut read: CallPlan = serde_json::from_value(stored.clone()).unwrap();
        // Chains alone keep no per-call list in memory, and are stored as before.
        assert!(read.unblocks.is_empty());
        assert_eq!(serde_json::to_value(&read).unwrap(), stored);
        for i in 0..3 {
            assert_eq!(read.start_ready().collect::<Vec<_>>(), [i]);
            read.finish(i);
        }
        assert!(read.is_done());
        // A plan with a barrier reads back to what it stores.
        let again: CallPlan = serde_json::from_value(serde_json::to_value(&planned).unwrap()).unwrap();
        assert_eq!(serde_json::to_value(&again).unwrap(), serde_json::to_value(&planned).unwrap());
        assert!(plan(&[("a", false), ("b", false), ("a", false)]).unblocks.is_empty());
    }

    #[test]
    fn a_long_chain_of_one_tool_plans_in_linear_time() {
        let mut calls = plan(&vec![("same", false); 100_000]);
        for i in 0..100_000 {
            assert_eq!(calls.start_ready().collect::<Vec<_>>(), [i]);
            calls.finish(i);
        }
        assert!(calls.is_done());
    }
}
