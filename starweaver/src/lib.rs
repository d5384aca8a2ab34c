//! Starweaver: an agent-tool runtime where tools written in Rust or Python share one
//! [`ToolDefinition`] and one scheduler.
//!
//! A tool call's path reads off the modules: [`tool`] (what a tool is) → [`registry`]
//! (an agent's tools) → `scheduler` (running a response's calls) → `agent` (the loop)
//! → [`session`] and [`hitl`] (waiting for humans) → [`event`] and [`stream`] (what
//! happened), with [`model`] and [`testing`] on the model side.

mod agent;
pub mod error;
pub mod event;
pub mod hitl;
pub mod message;
pub mod model;
pub mod registry;
pub mod result;
mod scheduler;
pub mod schema;
pub mod session;
pub mod stream;
pub mod testing;
pub mod tool;

pub use agent::{Agent, AgentBuilder, DEFAULT_MAX_STEPS, RunOptions};
pub use error::{DefinitionError, DefinitionErrorKind, Error, Result};
pub use event::{Event, EventKind};
pub use hitl::{
    ApprovalDecision, ApprovalPolicy, ApprovalRule, DeferredOutcome, DeferredResult, Hitl, HitlDecisions,
    PendingApproval, PendingCall, PendingDeferred,
};
pub use message::{
    History, HostFields, Message, RequestPart, ResponsePart, ToolCallPart, ToolReturnPart, ToolReturnRecord,
};
pub use model::{Model, ModelError, ModelRequest, ModelResponse};
pub use registry::{ToolRegistry, Toolset};
pub use result::{RunError, RunResult, RunStatus};
pub use schema::{SchemaError, schema_for};
pub use session::Session;
pub use stream::RunStream;
pub use tokio_util::sync::CancellationToken;
/// The README's samples, compiled and run as doc tests so they cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

pub use tool::{
    DEFAULT_MAX_RETRIES, Dependencies, FnTool, IntoToolResult, Tool, ToolBuilder, ToolContext, ToolDefinition,
    ToolError, ToolErrorKind, ToolResult, decode_args,
};
