//! OAuth 2.1 for MCP servers reached over HTTP, as the MCP authorization spec asks of a
//! client, on `rmcp`'s authorization manager.
//!
//! [`OAuth`] (documented there: what the client does, in which order) says how the client
//! gets its tokens; `flow.rs` runs the authorizations, `http.rs` sends each request with
//! the token and reacts to the server's refusals, `store.rs` keeps the tokens in the
//! application's [`TokenStore`](crate::store::TokenStore).

mod flow;
mod http;
mod oauth;
mod store;

pub(crate) use flow::Authorizer;
pub(crate) use http::AuthorizedHttp;
pub use oauth::{AuthorizationResponse, Authorize, MAX_AUTHORIZATIONS, OAuth};
