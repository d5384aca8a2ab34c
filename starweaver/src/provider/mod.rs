//! Real models: clients for OpenAI Chat Completions (and every
//! OpenAI-compatible server), OpenAI Responses, Anthropic Messages and Gemini, each a
//! [`Model`](crate::Model) behind a cargo feature (`openai`, `anthropic`, `gemini`).
//!
//! A request's path: [`ProviderModel`] (`model.rs`; its [`Settings`] in `settings.rs`, its
//! [`ApiKey`] in `key.rs`) → the `Protocol` (`protocol.rs`) of one protocol module
//! (`openai_chat.rs`, `openai_responses.rs`, `anthropic.rs`, `gemini.rs`: the request
//! body, the response mapping, the stream accumulator; pieces several bodies share in
//! `body.rs`) → `http.rs` (one shared client, retries with backoff, named errors) →
//! `sse.rs` for streamed answers; what comes back is read by `wire.rs`, and tool-call
//! arguments by `arguments.rs`.
//!
//! ```no_run
//! use starweaver::provider::OpenAIChatModel;
//! use starweaver::Agent;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // OPENAI_API_KEY (and OPENAI_BASE_URL, for any OpenAI-compatible server) from the environment.
//! let model = OpenAIChatModel::new("gpt-4.1-mini").temperature(0.0);
//! let agent = Agent::builder(model).build()?;
//! let result = agent.run("Say hi").await?;
//! println!("{:?} ({} tokens)", result.output, result.usage.output_tokens);
//! # Ok(()) }
//! ```

mod arguments;
mod body;
mod http;
mod key;
mod model;
mod protocol;
mod settings;
mod sse;
mod wire;

#[cfg(feature = "anthropic")]
mod anthropic;
#[cfg(feature = "gemini")]
mod gemini;
#[cfg(feature = "openai")]
mod openai_chat;
#[cfg(feature = "openai")]
mod openai_responses;

#[cfg(feature = "anthropic")]
pub use anthropic::Anthropic;
#[cfg(feature = "gemini")]
pub use gemini::Gemini;
pub use key::ApiKey;
pub use model::ProviderModel;
#[cfg(feature = "openai")]
pub use openai_chat::OpenAIChat;
#[cfg(feature = "openai")]
pub use openai_responses::OpenAIResponses;
#[doc(hidden)]
pub use protocol::{Protocol, StreamState};
pub use settings::{DEFAULT_MAX_HTTP_RETRIES, DEFAULT_MAX_RESPONSE_BYTES, Pairs, Settings, ToolChoice};
// The parsers a hostile server feeds, for the property tests and `make fuzz`.
#[doc(hidden)]
pub use http::retry_after;
#[doc(hidden)]
pub use sse::{SseError, SseEvent, parse as parse_sse};

/// OpenAI Chat Completions, or any OpenAI-compatible server (`base_url`).
#[cfg(feature = "openai")]
pub type OpenAIChatModel = ProviderModel<OpenAIChat>;
/// OpenAI Responses.
#[cfg(feature = "openai")]
pub type OpenAIResponsesModel = ProviderModel<OpenAIResponses>;
/// Anthropic Messages.
#[cfg(feature = "anthropic")]
pub type AnthropicModel = ProviderModel<Anthropic>;
/// Gemini `generateContent` / `streamGenerateContent`.
#[cfg(feature = "gemini")]
pub type GeminiModel = ProviderModel<Gemini>;
