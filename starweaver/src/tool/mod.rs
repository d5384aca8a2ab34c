//! What a tool is: the [`Tool`] trait, its definition, context, result and errors.

mod args;
mod builder;
mod context;
mod definition;
mod error;
mod options;
mod result;

use futures::future::BoxFuture;
use serde_json::Value;

pub use args::decode_args;
pub use builder::{FnTool, ToolBuilder};
pub use context::{Dependencies, ToolContext};
pub use definition::{DEFAULT_MAX_RETRIES, ToolDefinition, is_valid_name};
pub use error::{ToolError, ToolErrorKind};
pub use options::TOOL_OPTIONS;
pub use result::{IntoToolResult, ToolResult};

/// An async tool. Rust `#[tool]` functions, closure-built [`FnTool`]s and Python tools
/// all implement it, and the scheduler sees nothing else.
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
    fn validate(&self) -> Result<(), crate::DefinitionError> {
        self.definition().validate()
    }

    /// Runs one attempt of one call.
    fn call<'a>(&'a self, ctx: ToolContext, args: &'a Value) -> BoxFuture<'a, Result<ToolResult, ToolError>>;
}
