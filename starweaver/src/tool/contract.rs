//! The [`Tool`] trait, all the scheduler sees of a tool.

use futures::future::BoxFuture;
use serde_json::Value;

use super::{RunsAhead, ToolContext, ToolDefinition, ToolError, ToolResult};
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

    /// How this tool runs chains of its calls ahead, if it can: a tool whose calls are
    /// costly to start (a sync Python function) runs a run of its calls back to back on a
    /// thread of its own, under the rules the runtime enforces ([`RunsAhead`], module
    /// [`run_ahead`](super::run_ahead)). The default runs nothing ahead.
    fn runs_ahead(&self) -> Option<&dyn RunsAhead> {
        None
    }
}
