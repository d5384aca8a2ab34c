//! MCP both ways, on `rmcp`, the official Rust SDK.
//!
//! [`McpServer`] (`client.rs`): a server
//! started as a child process over stdio, or reached over streamable HTTP, is a dynamic
//! [`Toolset`](crate::Toolset) whose tools run through the scheduler like any other (timeouts,
//! cancellation sent to the server, approvals, events, traces).
//!
//! The server starts on first use. Its tool list is cached by `rmcp` and refreshed when the
//! server says `listChanged`. A server that fails to start, dies or answers garbage is an
//! error naming it, with the tail of its stderr; the next use starts it again.
//!
//! [`McpService`] (`server.rs`): tools served to any MCP client over stdio or streamable HTTP, each call run
//! through the scheduler as in an agent; and the application's resources ([`McpResource`],
//! [`McpResourceTemplate`]), prompts ([`McpPrompt`]) and their completions, with resource
//! subscriptions told of changes through an [`McpHandle`].
//!
//! A server reached over HTTP that requires OAuth gets it from [`McpServer::auth`] with an
//! [`OAuth`] (`auth/`): discovery, registration, the authorization code grant through an
//! application callback or client credentials, refresh and step-up.
//!
//! What a tool reports while it runs crosses as MCP notifications both ways (`notify.rs`);
//! what a server asks our client mid-call (elicitation, sampling) is answered through the
//! call's run or the server's own handlers (`asked.rs`).
//! A tool's return schema is served as `outputSchema`, its value as `structuredContent`
//! checked against it (`structured.rs`).
//!
//! ```no_run
//! use starweaver::mcp::McpServer;
//! use starweaver::{Agent, Toolset};
//! # fn model() -> starweaver::testing::TestModel { starweaver::testing::TestModel::new([]) }
//!
//! let files = McpServer::stdio("files", "npx").args(["-y", "@modelcontextprotocol/server-filesystem", "."]);
//! let agent = Agent::builder(model()).toolset(files.prefixed("fs_")).build().unwrap();
//! ```

mod asked;
mod auth;
mod client;
mod completion;
mod content;
mod notify;
mod prompt;
mod resource;
mod server;
#[cfg(unix)]
mod stdio;
mod structured;
mod subscription;
mod uri_template;
mod wire;

pub use auth::{AuthorizationResponse, Authorize, MAX_AUTHORIZATIONS, OAuth};
pub use client::{McpProtocol, McpServer};
pub use completion::CompletionRequest;
pub use prompt::{McpPrompt, PromptArgument, PromptMessage, PromptRequest, Role};
pub use resource::{McpResource, McpResourceTemplate, ResourceRequest};
pub use server::{McpService, McpServiceBuilder};
#[cfg(unix)]
pub use stdio::stdio_copies;
pub use subscription::McpHandle;
