//! The [`Tool`] trait, all the scheduler sees of a tool, and the run-ahead hooks it may
//! offer ([`ChainedCall`], [`RunAhead`]).

use futures::future::BoxFuture;
use serde_json::Value;

use super::{ToolContext, ToolDefinition, ToolError, ToolResult};
use crate::error::DefinitionError;

/// An async tool. Rust `#[tool]` functions, closure-built [`FnTool`](super::FnTool)s and
/// Python tools all implement it, and the scheduler sees nothing else.
///
/// `args` is always a JSON object (the runtime rejects anything else before the call).
pub trait Tool: Send + Sync + 'static {
    /// The definition the model sees and the runtime enforces.
    fn definition(&self) -> &ToolDefinition;

    /// Checks the tool can be registered; agents call it when they are built.
    ///
    /// # Errors
    /// The first registration rule the tool breaks. The default checks the definition;
    /// tools that can fail to build one (a `#[tool]` whose argument type has no object
    /// schema) report that here.
    fn validate(&self) -> Result<(), DefinitionError> {
        self.definition().validate()
    }

    /// Runs one attempt of one call.
    fn call<'a>(&'a self, ctx: ToolContext, args: &'a Value) -> BoxFuture<'a, Result<ToolResult, ToolError>>;

    /// `chain` yields calls to this tool that the runtime will make one after another, each
    /// as soon as the one before it ended: a run of calls to one tool in one response (the
    /// first is about to start). It is built as it is read, so a tool that declines pays
    /// nothing. A tool whose calls are costly to start, such as a Python
    /// function that must reach a worker thread, may run each one as soon as the one before
    /// it *succeeded*, on a thread of its own, and hand the result to the [`call`](Self::call)
    /// for it (its first attempt, with the same context). After any failure it must run no
    /// more of the chain: the runtime decides what follows (a retry comes first). Dropping
    /// the returned [`RunAhead`] (the run ended, or was cancelled) stops the calls not yet
    /// started. The default runs nothing ahead.
    fn run_ahead(&self, _chain: &mut dyn Iterator<Item = ChainedCall>) -> Option<RunAhead> {
        None
    }
}

/// One call of a chain offered to [`Tool::run_ahead`]: its first attempt's context and its
/// arguments (after any approver's override, with defaults filled in).
#[derive(Debug, Clone)]
pub struct ChainedCall {
    /// What [`Tool::call`] will be given for this call's first attempt.
    pub ctx: ToolContext,
    /// The arguments, a JSON object.
    pub arguments: Value,
}

/// Keeps a [`Tool::run_ahead`] chain going: dropping it tells the tool to start no more of it.
pub struct RunAhead {
    _on_drop: Box<dyn Send + Sync>,
}

impl RunAhead {
    /// Wraps whatever stops the chain when dropped.
    pub fn new(on_drop: impl Send + Sync + 'static) -> Self {
        Self { _on_drop: Box::new(on_drop) }
    }
}
