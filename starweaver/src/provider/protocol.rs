//! [`Protocol`] and [`StreamState`]: what each wire protocol supplies to the one request
//! path of [`ProviderModel`](super::ProviderModel).

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use super::settings::Settings;
use super::sse::SseEvent;
use crate::model::{ModelDelta, ModelError, ModelRequest, ModelResponse};
use crate::render::Provider;

/// What one wire protocol supplies; the four are [`OpenAIChat`](super::OpenAIChat),
/// [`OpenAIResponses`](super::OpenAIResponses), [`Anthropic`](super::Anthropic) and
/// [`Gemini`](super::Gemini).
#[doc(hidden)]
pub trait Protocol: Default + Send + Sync + 'static {
    /// The provider's name in errors.
    const PROVIDER: &'static str;
    /// The protocol's name in errors about what a server sent that does not fit it.
    const NAME: &'static str;
    /// OpenTelemetry's `gen_ai.system`.
    const SYSTEM: &'static str;
    /// Where the key comes from by default.
    const KEY_ENV: &'static str;
    /// Where the base URL comes from by default, if anywhere.
    const BASE_URL_ENV: Option<&'static str>;
    /// The base URL when neither the model nor the environment gives one.
    const DEFAULT_BASE_URL: &'static str;
    /// The response header holding the provider's request id.
    const REQUEST_ID_HEADER: &'static str;
    /// The protocol's tool format, which also names it (in provider items, errors).
    const FORMAT: Provider;
    /// Whether the protocol has a JSON-schema response format for native output.
    const NATIVE_OUTPUT: bool = false;
    /// Whether the provider searches deferred tools itself (native tool search): its body
    /// sends [`ModelRequest::deferred`], and its answers report what the search loaded.
    const NATIVE_TOOL_SEARCH: bool = false;
    /// A whole (unstreamed) response body, as the protocol defines it: what is required
    /// of it is required here, so a body without it is a named error.
    type Body: DeserializeOwned;
    /// The state that turns a stream's events into deltas and the final response.
    type Stream: StreamState;

    /// The endpoint for `model` under `base`.
    fn url(&self, base: &str, model: &str, stream: bool) -> String;
    /// The header carrying the key, and its value.
    fn auth(&self, key: &str) -> (&'static str, String);
    /// Headers every request carries (an API version).
    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Headers a request needs for what it asks (a beta feature), each merged into one the
    /// application set under the same name as another comma-separated value.
    fn request_headers(&self, _request: &ModelRequest<'_>) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// The request body.
    ///
    /// # Errors
    /// A tool that cannot be rendered for this provider.
    fn body(
        &self,
        model: &str,
        request: &ModelRequest<'_>,
        settings: &Settings,
        stream: bool,
    ) -> Result<Value, ModelError>;
    /// A whole (unstreamed) response body as a response.
    ///
    /// # Errors
    /// A refusal, a content filter stop, an unknown finish reason, or a body that does not fit.
    fn parse(&self, body: Self::Body, step: u32) -> Result<ModelResponse, ModelError>;
    /// A fresh stream state for request `step`.
    fn stream(&self, step: u32) -> Self::Stream;
    /// The JSON text of each tool call's arguments in a whole body, in order, for a
    /// protocol that sends them as objects rather than text (see
    /// [`keep_wide_arguments`](super::arguments::keep_wide_arguments)).
    fn raw_arguments(&self, _body: &str) -> Vec<Box<RawValue>> {
        Vec::new()
    }
}

/// The state of one streamed answer.
#[doc(hidden)]
pub trait StreamState: Send {
    /// Takes one event; returns the deltas it carried.
    ///
    /// # Errors
    /// An error event, or data that does not fit the protocol.
    fn event(&mut self, event: &SseEvent) -> Result<Vec<ModelDelta>, ModelError>;
    /// The whole response once the stream ended: exactly what the same answer gives
    /// unstreamed.
    ///
    /// # Errors
    /// The stream ended before its last event, or with a refusal, filter or unknown reason.
    fn finish(self) -> Result<ModelResponse, ModelError>;
}
