//! Starweaver: an agent-tool runtime where tools written in Rust or Python share one
//! [`ToolDefinition`] and one scheduler, which owns retries, timeouts, cancellation,
//! approvals, deferred results, event streams and traces.
//!
//! A tool is a function with `#[tool]`; an [`Agent`] runs a model and its tools until the
//! model answers. [`testing::TestModel`] plays a scripted model, so this runs as written:
//!
//! ```
//! use serde_json::json;
//! use starweaver::testing::TestModel;
//! use starweaver::{Agent, ModelResponse, RunStatus, ToolCallPart, tool};
//!
//! /// Add two integers.
//! #[tool]
//! async fn add(left: i64, right: i64) -> i64 {
//!     left + right
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), starweaver::Error> {
//! let model = TestModel::new([
//!     TestModel::tool_call_response([ToolCallPart::new("c1", "add", json!({"left": 2, "right": 3}))]),
//!     ModelResponse::text("2 + 3 = 5"),
//! ]);
//! let agent = Agent::builder(std::sync::Arc::new(model)).tool(add_tool()).build()?;
//! let result = agent.run("What is 2 + 3?").await?;
//! assert_eq!(result.status, RunStatus::Completed);
//! assert_eq!(result.text(), Some("2 + 3 = 5"));
//! assert_eq!(add(2, 3).await, 5, "the function itself stays callable");
//! # Ok(()) }
//! ```
//!
//! Real models are `starweaver::provider`'s clients (cargo features `openai`,
//! `anthropic`, `gemini`); MCP servers and clients are `starweaver::mcp` (feature `mcp`).
//!
//! # Snapshot your tools' definitions
//!
//! A tool's definition is what every model is sent, so a change to it (a renamed field, a
//! new doc comment, a different default) changes what the model sees. Lock each one with
//! an [insta](https://insta.rs) snapshot in your own tests (`insta = { version = "1",
//! features = ["json"] }` in `[dev-dependencies]`):
//!
//! ```no_run
//! # /// Add two integers.
//! # #[starweaver::tool]
//! # async fn add(left: i64, right: i64) -> i64 { left + right }
//! #[test]
//! fn tool_definitions_are_what_the_model_is_sent() {
//!     for tool in [add_tool()] {
//!         let definition = starweaver::Tool::definition(&tool);
//!         insta::assert_json_snapshot!(definition.name.clone(), definition);
//!     }
//! }
//! ```
//!
//! The first run writes `snapshots/*.snap`; commit them. After a change, `cargo test`
//! fails with the difference; `cargo insta review` (from `cargo install cargo-insta`)
//! shows each one to accept or reject, and `INSTA_UPDATE=no` in CI keeps a changed
//! definition from passing unreviewed. [`render::render`] gives the same definition in
//! each provider's format, to snapshot those too.
//!
//! # Where things are
//!
//! A tool call's path reads off the modules: [`tool`](mod@tool) (what a tool is) →
//! [`registry`] (an agent's tools) → [`scheduler`] (running a response's calls) → the
//! agent loop → [`session`] and [`hitl`] (waiting for humans) → [`store`] (sessions kept
//! across processes) → [`event`] and [`stream`] (what happened), with [`model`] and
//! [`testing`] on the model side.
#![deny(rustdoc::broken_intra_doc_links)]

#[doc(hidden)]
pub mod __private;
mod agent;
mod concurrency;
pub mod content;
pub mod durable;
pub mod error;
pub mod event;
pub mod hitl;
pub mod hook;
pub mod json;
mod json_map;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod message;
pub mod model;
pub mod output;
#[cfg(feature = "__http")]
pub mod provider;
pub mod registry;
pub mod render;
pub mod result;
pub mod scheduler;
pub mod schema;
pub mod search;
pub mod session;
pub mod store;
pub mod stream;
pub mod testing;
pub mod tool;
pub mod toolset;
pub mod trace;

pub use agent::{Agent, AgentBuilder, DEFAULT_MAX_STEPS, RunOptions, UsageLimits};
pub use concurrency::ConcurrencyLimit;
pub use error::{DefinitionError, DefinitionErrorKind, Error, ErrorCategory, JsonInput, Result};
pub use event::{Event, EventKind};
pub use hitl::{
    ApprovalDecision, ApprovalPolicy, ApprovalRule, DeferredOutcome, DeferredResult, ElicitationResponse, Hitl,
    HitlDecisions, PendingApproval, PendingCall, PendingDeferred, PendingElicitation,
};
pub use hook::Hooks;
pub use json_map::JsonMap;
pub use message::{
    History, HostFields, Message, Messages, ProviderItem, RequestPart, ResponsePart, ToolCallPart, ToolReturnPart,
    ToolReturnRecord,
};
pub use model::{
    FinishReason, LoadedTools, Model, ModelDelta, ModelError, ModelErrorKind, ModelRequest, ModelResponse,
    ToolCallDelta, Usage,
};
pub use output::{EndStrategy, OutputValidator};
pub use registry::ToolRegistry;
pub use result::{RunError, RunResult, RunStatus};
pub use schema::{SchemaError, return_schema_for, schema_for, validate_return_schema};
pub use session::Session;
/// Turns a function into a tool with the same [`ToolDefinition`] as Python's `@tool`.
///
/// The function stays exactly as written (call it directly in unit tests); beside it,
/// `#[tool]` generates `<name>_tool()`, which returns the [`Tool`] to register:
///
/// ```
/// use starweaver::testing::TestModel;
/// use starweaver::{Agent, ModelResponse, ToolCallPart, tool};
/// use serde_json::json;
///
/// /// Add two integers.
/// #[tool]
/// async fn add(
///     /// The first addend.
///     left: i64,
///     /// The second addend.
///     right: i64,
/// ) -> i64 {
///     left + right
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// assert_eq!(add(2, 3).await, 5); // still an ordinary function
///
/// let definition = starweaver::Tool::definition(&add_tool()).clone();
/// assert_eq!(definition.description.as_deref(), Some("Add two integers."));
/// assert_eq!(definition.parameters["properties"]["left"]["description"], "The first addend.");
///
/// let model = TestModel::new([
///     TestModel::tool_call_response([ToolCallPart::new("call_1", "add", json!({"left": 2, "right": 3}))]),
///     ModelResponse::text("5"),
/// ]);
/// let agent = Agent::builder(model).tool(add_tool()).build().unwrap();
/// assert_eq!(agent.run("2 + 3?").await.unwrap().text(), Some("5"));
/// # });
/// ```
///
/// # Options
///
/// `#[tool(name = "...", description = "...", strict, sequential, timeout_ms = 5_000,
/// max_retries = 1, metadata = r#"{"risk": "network"}"#, parameters_schema = r#"{...}"#,
/// return_schema = false)]`,
/// mirroring Python's `@tool(...)`; `crate = "path"` names starweaver when it is re-exported.
///
/// # Parameters
///
/// - Typed parameters, each `Deserialize + JsonSchema`; `Option<T>` is not required;
///   `#[arg(default)]` or `#[arg(default = expr)]` gives a default; doc comments or
///   `#[arg(description = "...")]` describe them. Unknown arguments are rejected.
/// - Or a single parameter named `args` whose type is the whole argument object (a
///   `#[derive(Deserialize, JsonSchema)]` struct, or `serde_json::Map` for any object).
/// - Optionally first, the context: `&ToolContext` or `ToolContext`. A parameter named
///   `context` of another type is an ordinary argument.
///
/// # Returns
///
/// Any `T: Serialize`, a [`ToolResult`], or `Result<T, E>` with `E: Into<ToolError>`, so `?`
/// works. A plain `fn` (not `async`) runs on tokio's blocking pool, off the async workers.
/// When `T` implements `JsonSchema` its schema is the definition's `return_schema`
/// (`return_schema = false` opts out; `return_schema` alone requires one).
///
/// ```
/// use starweaver::{ToolContext, ToolError, tool};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct TicketArgs {
///     /// The ticket to fetch.
///     ticket_id: String,
///     #[serde(default)]
///     include_history: bool,
/// }
///
/// /// Fetch a ticket.
/// #[tool(sequential, max_retries = 1)]
/// fn fetch_ticket(ctx: &ToolContext, args: TicketArgs) -> Result<serde_json::Value, ToolError> {
///     if args.ticket_id.is_empty() {
///         return Err(ToolError::model_retry("`ticket_id` must not be empty"));
///     }
///     Ok(serde_json::json!({"id": args.ticket_id, "history": args.include_history, "call": ctx.tool_call_id()}))
/// }
///
/// let definition = starweaver::Tool::definition(&fetch_ticket_tool()).clone();
/// assert!(definition.sequential);
/// assert_eq!(definition.parameters["required"], serde_json::json!(["ticket_id"]));
/// ```
#[cfg(feature = "macros")]
pub use starweaver_macros::tool;
pub use stream::RunStream;
pub use tokio_util::sync::CancellationToken;

/// The README's samples, compiled and run as doc tests so they cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The Rust samples of each `docs/` page that has any, run as doc tests like the README's.
#[cfg(doctest)]
#[doc = include_str!("../../docs/rust-tools.md")]
pub struct RustToolsDoctests;

pub use tool::{
    DEFAULT_MAX_RETRIES, Dependencies, FnTool, IntoToolResult, RunsAhead, TOOL_OPTIONS, Tool, ToolBuilder, ToolContext,
    ToolDefinition, ToolError, ToolErrorKind, ToolResult, decode_args, run_ahead,
};
pub use toolset::{Configured, DynamicToolset, RefusedTool, StaticToolset, Toolset, ToolsetContext, ToolsetError};
pub use trace::{SpanKind, Trace, TraceSpan};
