//! Sync Python tools run ahead: the lane that runs a chain of calls to one sync tool (the
//! calls to it in one response, which run one at a time) on a thread of its own, each as
//! soon as the one before it succeeded, so a chain of N calls costs one thread hand-off
//! instead of N round trips through the executor and the loop. The runtime's
//! [`Chain`](starweaver::run_ahead::Chain) decides which calls run; the lane only runs
//! them, under the interpreter lock.

use std::panic::AssertUnwindSafe;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyBytes;
use starweaver::run_ahead::{Chain, ChainLane};
use starweaver::{ToolContext, ToolError, ToolResult};

/// A call's context as the Python `ToolContext` its function is given.
pub(crate) type ContextToPy = fn(Python<'_>, ToolContext) -> PyResult<Py<PyAny>>;

/// What a call returned (or raised), as its outcome.
pub(crate) type Finish = fn(Python<'_>, PyResult<Py<PyAny>>) -> Result<ToolResult, ToolError>;

/// How many calls a chain runs per hold of the interpreter lock.
const CALLS_PER_HOLD: usize = 16;

/// One chain's work: `run` is the layer's `run_sync(ctx, arguments_json, context)`, `ctx`
/// gives the Python `ToolContext` of a call, and `finish` turns what it returned into the
/// call's outcome (both from the tool module, which sits above the bridge).
pub(crate) struct Lane {
    run: Py<PyAny>,
    /// The caller's context variables, as `run_in_executor` would have copied them.
    context: Py<PyAny>,
    ctx: ContextToPy,
    finish: Finish,
}

impl Lane {
    /// A lane for a chain starting now, on the caller's thread (whose context variables it
    /// copies); `None` if they cannot be copied.
    pub(crate) fn new(run: &Py<PyAny>, ctx: ContextToPy, finish: Finish) -> Option<Self> {
        Python::attach(|py| {
            let context = copy_context(py).ok()?;
            Some(Self { run: run.clone_ref(py), context, ctx, finish })
        })
    }

    fn call(&self, py: Python<'_>, ctx: ToolContext, arguments: &serde_json::Value) -> Result<ToolResult, ToolError> {
        let name = ctx.tool_name().to_owned();
        std::panic::catch_unwind(AssertUnwindSafe(|| {
            let arguments = serde_json::to_vec(arguments).map_err(|e| ToolError::invalid_arguments(e.to_string()))?;
            // A fresh copy per call, as each executor call had.
            let returned = self
                .context
                .call_method0(py, pyo3::intern!(py, "copy"))
                .and_then(|context| self.run.call1(py, ((self.ctx)(py, ctx)?, PyBytes::new(py, &arguments), context)));
            (self.finish)(py, returned)
        }))
        .unwrap_or_else(|panic| Err(ToolError::panicked(&name, &*panic)))
    }
}

impl ChainLane for Lane {
    fn run(self: Box<Self>, mut chain: Chain) {
        Python::attach(|py| {
            let mut since_release = 0;
            while let Some((call, settle)) = chain.next_call() {
                settle.settle(self.call(py, call.ctx, &call.arguments));
                // Calls run back to back under one hold of the interpreter lock, which is
                // let go every few calls so the loop can take in their outcomes.
                since_release += 1;
                if since_release == CALLS_PER_HOLD {
                    since_release = 0;
                    py.detach(std::thread::yield_now);
                }
            }
            drop(chain);
            drop(*self);
        });
    }
}

fn copy_context(py: Python<'_>) -> PyResult<Py<PyAny>> {
    static COPY_CONTEXT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    COPY_CONTEXT.import(py, "contextvars", "copy_context")?.call0().map(Bound::unbind)
}
