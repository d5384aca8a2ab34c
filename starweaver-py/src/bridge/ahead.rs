//! Sync Python tools run ahead: a chain of calls to one sync tool (the calls to it in one
//! response, which run one at a time) goes to a thread of its own, where each call starts
//! as soon as the one before it succeeded. The runtime still makes every call in its turn
//! (its events, its span, its retries) and finds the outcome waiting, so a chain of N calls
//! costs one thread hand-off instead of N round trips through the executor and the loop.
//!
//! The first failure stops the chain: the runtime decides what follows (a retry comes
//! first), and the calls after it take the ordinary path. So does anything the chain did
//! not start: a cancelled run, or a dropped one (the [`RunAhead`] guard).

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyBytes;
use starweaver::{ChainedCall, RunAhead, ToolContext, ToolError, ToolResult};

/// A call's context as the Python `ToolContext` its function is given.
pub(crate) type ContextToPy = fn(Python<'_>, ToolContext) -> PyResult<Py<PyAny>>;

/// What a call returned (or raised), as its outcome.
pub(crate) type Finish = fn(Python<'_>, PyResult<Py<PyAny>>) -> Result<ToolResult, ToolError>;

/// A call is found by its run and its id (model call ids repeat across runs).
type Key = (String, String);

/// The calls run ahead of one tool, across runs, until the runtime claims them.
#[derive(Default)]
pub(crate) struct Ahead {
    slots: Mutex<HashMap<Key, Arc<Slot>>>,
}

impl Ahead {
    /// Starts `chain` on a thread of its own: `run` is the layer's
    /// `run_sync(ctx, arguments_json, context)`, `ctx` gives the Python `ToolContext` of a
    /// call, and `finish` turns what it returned into the call's outcome (both from the
    /// tool module, which sits above the bridge). `None` (nothing started) if the chain
    /// cannot be prepared.
    pub(crate) fn start(
        self: &Arc<Self>,
        chain: Vec<ChainedCall>,
        run: Py<PyAny>,
        ctx: ContextToPy,
        finish: Finish,
    ) -> Option<RunAhead> {
        let (context, jobs) = Python::attach(|py| -> PyResult<_> {
            // The caller's context variables, as `run_in_executor` would have copied them.
            let context = copy_context(py)?;
            let jobs = chain
                .into_iter()
                .map(|call| {
                    let arguments = serde_json::to_vec(&call.arguments).unwrap_or_default();
                    (call.ctx, PyBytes::new(py, &arguments).unbind(), Arc::new(Slot::default()))
                })
                .collect::<Vec<_>>();
            Ok((context, jobs))
        })
        .ok()?;
        let claims: Vec<(Key, Arc<Slot>)> = jobs.iter().map(|(ctx, _, slot)| (key(ctx), slot.clone())).collect();
        let stopped = Arc::new(AtomicBool::new(false));
        let lane = Lane { jobs, run, context, ctx, finish, stopped: stopped.clone() };
        // Registered only once the thread runs: a slot nobody will fill must not be claimed.
        std::thread::Builder::new().name("starweaver-sync-chain".into()).spawn(move || lane.run()).ok()?;
        let keys = claims.iter().map(|(key, _)| key.clone()).collect();
        self.slots.lock().unwrap_or_else(PoisonError::into_inner).extend(claims);
        Some(RunAhead::new(Stop { ahead: self.clone(), keys, stopped }))
    }

    /// The outcome of `ctx`'s call if a chain holds it; `None` sends the call the ordinary
    /// way. Only a first attempt can be claimed: a retry is never run ahead.
    pub(crate) fn claim(&self, ctx: &ToolContext) -> Option<Claimed> {
        if ctx.attempt() != 1 {
            return None;
        }
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if slots.is_empty() {
            return None;
        }
        slots.remove(&key(ctx)).map(Claimed)
    }
}

fn key(ctx: &ToolContext) -> Key {
    (ctx.run_id().to_owned(), ctx.tool_call_id().to_owned())
}

fn copy_context(py: Python<'_>) -> PyResult<Py<PyAny>> {
    static COPY_CONTEXT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    COPY_CONTEXT.import(py, "contextvars", "copy_context")?.call0().map(Bound::unbind)
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
        let previous = std::mem::replace(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner), state);
        if let SlotState::Waiting(waker) = previous {
            waker.wake();
        }
    }
}

/// A claimed call: resolves to its outcome, or to `None` if the chain never ran it.
pub(crate) struct Claimed(Arc<Slot>);

impl Future for Claimed {
    type Output = Option<Result<ToolResult, ToolError>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.0.0.lock().unwrap_or_else(PoisonError::into_inner);
        match std::mem::replace(&mut *state, SlotState::Taken) {
            SlotState::Done(outcome) => Poll::Ready(Some(*outcome)),
            SlotState::Skipped => Poll::Ready(None),
            SlotState::Pending | SlotState::Waiting(_) => {
                *state = SlotState::Waiting(cx.waker().clone());
                Poll::Pending
            }
            SlotState::Taken => Poll::Ready(None),
        }
    }
}

/// The thread's work: each call in order, while the ones before succeeded.
struct Lane {
    jobs: Vec<(ToolContext, Py<PyBytes>, Arc<Slot>)>,
    run: Py<PyAny>,
    context: Py<PyAny>,
    ctx: ContextToPy,
    finish: Finish,
    stopped: Arc<AtomicBool>,
}

impl Lane {
    fn run(self) {
        let mut jobs = self.jobs.into_iter().peekable();
        Python::attach(|py| {
            let mut since_release = 0;
            while let Some((ctx, arguments, slot)) = jobs.next() {
                if self.stopped.load(Ordering::Acquire) || ctx.is_cancelled() {
                    slot.settle(SlotState::Skipped);
                    break;
                }
                let outcome = Self::call(py, &self.run, &self.context, self.ctx, self.finish, ctx, &arguments);
                let failed = outcome.is_err();
                slot.settle(SlotState::Done(Box::new(outcome)));
                if failed {
                    break;
                }
                // Calls run back to back under one hold of the interpreter lock, which is
                // let go every few calls so the loop can take in their outcomes.
                since_release += 1;
                if since_release == CALLS_PER_HOLD && jobs.peek().is_some() {
                    since_release = 0;
                    py.detach(std::thread::yield_now);
                }
            }
            for (_, _, slot) in jobs {
                slot.settle(SlotState::Skipped);
            }
            drop((self.run, self.context));
        });
    }

    fn call(
        py: Python<'_>,
        run: &Py<PyAny>,
        context: &Py<PyAny>,
        to_py: ContextToPy,
        finish: Finish,
        ctx: ToolContext,
        arguments: &Py<PyBytes>,
    ) -> Result<ToolResult, ToolError> {
        let name = ctx.tool_name().to_owned();
        std::panic::catch_unwind(AssertUnwindSafe(|| {
            // A fresh copy per call, as each executor call had.
            let returned = context
                .call_method0(py, pyo3::intern!(py, "copy"))
                .and_then(|context| run.call1(py, (to_py(py, ctx)?, arguments.bind(py), context)));
            finish(py, returned)
        }))
        .unwrap_or_else(|panic| Err(ToolError::panicked(&name, &*panic)))
    }
}

/// How many calls a chain runs per hold of the interpreter lock.
const CALLS_PER_HOLD: usize = 16;

/// Dropped with the run's batch: the chain starts nothing more, and its unclaimed calls
/// are forgotten.
struct Stop {
    ahead: Arc<Ahead>,
    keys: Vec<Key>,
    stopped: Arc<AtomicBool>,
}

impl Drop for Stop {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Release);
        let mut slots = self.ahead.slots.lock().unwrap_or_else(PoisonError::into_inner);
        for key in &self.keys {
            slots.remove(key);
        }
    }
}
