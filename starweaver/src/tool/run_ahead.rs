//! Running a chain of calls ahead: the seam a tool whose calls are costly to start (a sync
//! Python function, which must reach a worker thread and the interpreter) implements to
//! run a run of its calls back to back on a thread of its own.
//!
//! The runtime owns the rules; the tool only runs what [`Chain::next_call`] hands out. A
//! *chain* is a run of calls to one tool in one response that the runtime would make one
//! after another anyway (see the scheduler). The tool is asked for a [`ChainLane`] on the
//! runtime's thread ([`RunsAhead::lane`], where it may capture what only that thread
//! knows, such as Python context variables); the lane then runs on a thread of its own,
//! taking calls from the [`Chain`] and settling each with its outcome. The chain hands out
//! the next call only after the one before it was settled with a success, and none once
//! the run stopped it (the run ended or was cancelled), so the lane cannot run a call the
//! runtime would not have made. The runtime still makes every call in its turn (its event,
//! its span, its retries) and finds the outcome waiting; a call the lane never ran takes
//! the ordinary path.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use serde_json::Value;

use super::{ToolContext, ToolError, ToolResult};

/// A tool that can run chains of its calls ahead; offered through
/// [`Tool::runs_ahead`](super::Tool::runs_ahead).
pub trait RunsAhead: Send + Sync {
    /// What will run a chain of `calls` calls (at least two) on a thread of its own, or
    /// `None` to run none of them ahead. Called on the runtime's thread, as the chain's
    /// first call starts.
    fn lane(&self, calls: usize) -> Option<Box<dyn ChainLane>>;
}

/// Runs one chain on the thread the runtime starts for it.
pub trait ChainLane: Send {
    /// Runs the calls `chain` hands out, each settled with its outcome, until it hands out
    /// no more.
    fn run(self: Box<Self>, chain: Chain);
}

/// One call of a chain: its first attempt's context and its arguments (after any
/// approver's override, with defaults filled in).
#[derive(Debug, Clone)]
pub struct ChainedCall {
    /// What [`Tool::call`](super::Tool::call) would be given for this call's first attempt.
    pub ctx: ToolContext,
    /// The arguments, a JSON object.
    pub arguments: Value,
}

/// The calls of a chain, handed out one at a time; see the [module](self) documentation.
pub struct Chain {
    calls: std::vec::IntoIter<(ChainedCall, Arc<Slot>)>,
    stopped: Arc<AtomicBool>,
}

impl Chain {
    /// The next call, with where its outcome goes; `None` once a call failed or was not
    /// settled, the run stopped the chain, or every call ran.
    pub fn next_call(&mut self) -> Option<(ChainedCall, Settle<'_>)> {
        let (call, slot) = self.calls.next()?;
        if self.stopped.load(Ordering::Acquire) || call.ctx.is_cancelled() {
            slot.settle(SlotState::Skipped);
            self.end();
            return None;
        }
        Some((call, Settle { chain: self, slot: Some(slot) }))
    }

    /// The calls not handed out take the ordinary path.
    fn end(&mut self) {
        for (_, slot) in self.calls.by_ref() {
            slot.settle(SlotState::Skipped);
        }
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        self.end();
    }
}

/// Where one call's outcome goes: [`settle`](Self::settle) it before asking the chain for
/// the next call (the borrow sees to that). Dropped unsettled, the call takes the ordinary
/// path and the chain ends.
pub struct Settle<'c> {
    chain: &'c mut Chain,
    slot: Option<Arc<Slot>>,
}

impl Settle<'_> {
    /// The call ended with `outcome`; a failure ends the chain, for the runtime decides what
    /// follows one (a retry comes first).
    pub fn settle(mut self, outcome: Result<ToolResult, ToolError>) {
        let failed = outcome.is_err();
        if let Some(slot) = self.slot.take() {
            slot.settle(SlotState::Done(Box::new(outcome)));
        }
        if failed {
            self.chain.end();
        }
    }
}

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            slot.settle(SlotState::Skipped);
            self.chain.end();
        }
    }
}

/// Starts `calls` on a lane of their own: the outcome of each, in order, for the runtime to
/// claim as it makes the call, and a guard that stops the chain when dropped (with the
/// run's batch). `None` if the lane's thread cannot start.
pub(crate) fn start(lane: Box<dyn ChainLane>, calls: Vec<ChainedCall>) -> Option<(Vec<Claimed>, StopGuard)> {
    let slots: Vec<Arc<Slot>> = calls.iter().map(|_| Arc::default()).collect();
    let stopped = Arc::new(AtomicBool::new(false));
    let chain = Chain { calls: calls.into_iter().zip(slots.iter().cloned()).collect::<Vec<_>>().into_iter(), stopped };
    let guard = StopGuard(chain.stopped.clone());
    std::thread::Builder::new().name("starweaver-chain".into()).spawn(move || lane.run(chain)).ok()?;
    Some((slots.into_iter().map(Claimed).collect(), guard))
}

/// Stops a chain when dropped: it hands out no more calls.
pub(crate) struct StopGuard(Arc<AtomicBool>);

impl Drop for StopGuard {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Where one call's outcome lands.
#[derive(Default)]
pub(crate) struct Slot(Mutex<SlotState>);

#[derive(Default)]
enum SlotState {
    #[default]
    Pending,
    Waiting(Waker),
    Done(Box<Result<ToolResult, ToolError>>),
    /// The chain stopped before this call: it takes the ordinary path.
    Skipped,
    Taken,
}

impl Slot {
    fn settle(&self, state: SlotState) {
        let previous = {
            let mut current = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            // A settled slot keeps its outcome (a chain ending settles the rest only once).
            if !matches!(*current, SlotState::Pending | SlotState::Waiting(_)) {
                return;
            }
            std::mem::replace(&mut *current, state)
        };
        // Woken outside the lock: the waker may need what the claiming side holds while it
        // waits for the lock (the Python interpreter's).
        if let SlotState::Waiting(waker) = previous {
            waker.wake();
        }
    }
}

/// A call's outcome from its chain: the outcome, or `None` if the chain never ran it.
pub(crate) struct Claimed(Arc<Slot>);

impl Future for Claimed {
    type Output = Option<Result<ToolResult, ToolError>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.0.0.lock().unwrap_or_else(PoisonError::into_inner);
        match std::mem::replace(&mut *state, SlotState::Taken) {
            SlotState::Done(outcome) => Poll::Ready(Some(*outcome)),
            SlotState::Pending | SlotState::Waiting(_) => {
                *state = SlotState::Waiting(cx.waker().clone());
                Poll::Pending
            }
            SlotState::Skipped | SlotState::Taken => Poll::Ready(None),
        }
    }
}
