//! What a tool is: the [`Tool`] trait, its definition, context, result and errors.

mod args;
mod ask;
mod builder;
mod context;
mod contract;
mod definition;
mod error;
mod lent;
mod options;
mod report;
mod result;
pub mod run_ahead;

pub use args::decode_args;
pub(crate) use ask::Replies;
pub use ask::{Answered, ElicitAnswer, Elicitation, Sampled, Sampling, SamplingMessage, SamplingRole};
pub use builder::{FnTool, ToolBuilder};
pub(crate) use context::{Attempt, Channel, RunScope};
pub use context::{CallChannel, Dependencies, ElicitationHandler, SamplingHandler, ToolContext};
pub use contract::Tool;
pub use definition::{DEFAULT_MAX_RETRIES, ToolDefinition, is_valid_name};
pub(crate) use error::panic_message;
pub use error::{ToolError, ToolErrorKind};
pub(crate) use lent::{Lent, Shared};
pub use options::TOOL_OPTIONS;
pub use report::{LogLevel, LogMessage, Progress};
pub use result::{IntoToolResult, ToolResult};
pub use run_ahead::RunsAhead;
