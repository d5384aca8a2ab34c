//! [`ProviderModel`]: a model name, where and how to reach it, and its settings; the one
//! request path every protocol shares (key, body, retries, streaming).

use std::fmt;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::http::{self, BodyError, Failure, RetryPolicy, Timeouts};
use super::sse::{self, SseEvent};
use crate::message::ResponsePart;
use crate::model::{Model, ModelDelta, ModelError, ModelErrorKind, ModelRequest, ModelResponse};

/// An API key. It is sent, never shown: `Debug` prints `ApiKey(***)`, and errors, events,
/// traces and logs never hold it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// Which tool the model must, may or must not call. As data: `"auto"`, `"required"`,
/// `"none"` or `{"tool": name}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "ToolChoiceData")]
pub enum ToolChoice {
    /// The model decides (the default).
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must not call tools.
    None,
    /// The model must call this tool.
    Tool(String),
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "expected \"auto\", \"required\", \"none\" or {\"tool\": name}")]
enum ToolChoiceData {
    Mode(Mode),
    Tool { tool: String },
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Auto,
    Required,
    None,
}

impl From<ToolChoiceData> for ToolChoice {
    fn from(data: ToolChoiceData) -> Self {
        match data {
            ToolChoiceData::Mode(Mode::Auto) => Self::Auto,
            ToolChoiceData::Mode(Mode::Required) => Self::Required,
            ToolChoiceData::Mode(Mode::None) => Self::None,
            ToolChoiceData::Tool { tool } => Self::Tool(tool),
        }
    }
}

/// Everything a [`ProviderModel`] holds besides its protocol and name: where and how to
/// reach the model, and the sampling settings sent with every request. The builder
/// methods set it field by field; as data (the Python binding's keyword arguments) it
/// has their names, times in seconds, and refuses any other name.
///
/// ```
/// use starweaver::provider::{OpenAIChatModel, Settings};
///
/// let settings: Settings = serde_json::from_value(serde_json::json!({
///     "base_url": "http://127.0.0.1:8080/v1",
///     "timeout": 30.0,
///     "tool_choice": {"tool": "add"},
/// }))?;
/// let model = OpenAIChatModel::new("local").settings(settings);
/// assert_eq!(model.name(), "local");
/// assert!(serde_json::from_value::<Settings>(serde_json::json!({"temprature": 0.0})).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Where the API lives; by default the protocol's environment variable, then its URL.
    pub base_url: Option<String>,
    /// The key; by default read from the environment.
    pub api_key: Option<ApiKey>,
    /// The environment variable holding the key, when not the protocol's usual one.
    pub api_key_env: Option<String>,
    /// The header that carries the key as is, instead of the protocol's own.
    pub api_key_header: Option<String>,
    /// Azure OpenAI's `api-version`; the key then goes in `api-key`.
    pub azure_api_version: Option<String>,
    /// Extra headers on every request.
    #[serde(default, deserialize_with = "or_default")]
    pub headers: Pairs,
    /// Extra query parameters on every request.
    #[serde(default, deserialize_with = "or_default")]
    pub query: Pairs,
    /// How long one attempt may take in all (600 s by default).
    #[serde(default, deserialize_with = "seconds")]
    pub timeout: Option<Duration>,
    /// How long to wait for a connection (10 s by default).
    #[serde(default, deserialize_with = "seconds")]
    pub connect_timeout: Option<Duration>,
    /// How long to wait between bytes of an answer (120 s by default).
    #[serde(default, deserialize_with = "seconds")]
    pub read_timeout: Option<Duration>,
    /// Retries after a connection error, 408, 409, 429 or 5xx ([`DEFAULT_MAX_RETRIES`] by default).
    pub max_retries: Option<u32>,
    /// The longest wait before a retry (60 s by default, and never longer than `timeout`):
    /// a server whose `Retry-After` asks for more gets no retry, so no request waits past
    /// what the model allows.
    #[serde(default, deserialize_with = "seconds")]
    pub max_retry_wait: Option<Duration>,
    /// The most bytes one answer may have, whole or streamed (64 MiB by default): a
    /// larger one is an `InvalidResponse` error, so no server can grow our memory.
    pub max_response_bytes: Option<usize>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// The most tokens an answer may have.
    pub max_tokens: Option<u64>,
    /// A sampling seed, where the provider takes one.
    pub seed: Option<i64>,
    /// Which tool the model must, may or must not call.
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one answer.
    pub parallel_tool_calls: Option<bool>,
    /// Merged into the request body last, so it can set anything the provider takes.
    #[serde(default, deserialize_with = "or_default")]
    pub extra_body: Map<String, Value>,
}

impl Settings {
    /// The query parameters every request carries: the extra ones, then Azure's version.
    fn query_pairs(&self) -> impl Iterator<Item = (&str, &str)> + Clone {
        let azure = self.azure_api_version.as_deref().map(|version| ("api-version", version));
        self.query.0.iter().map(|(name, value)| (name.as_str(), value.as_str())).chain(azure)
    }

    /// The header that carries the key as is, if not the protocol's own: the one given,
    /// else Azure's `api-key`.
    fn key_header(&self) -> Option<&str> {
        self.api_key_header.as_deref().or(self.azure_api_version.as_ref().map(|_| "api-key"))
    }

    fn retry_policy(&self) -> RetryPolicy {
        let max_wait = self.max_retry_wait.unwrap_or(http::DEFAULT_MAX_RETRY_WAIT).min(self.timeouts().total);
        RetryPolicy { max_retries: self.max_retries.unwrap_or(DEFAULT_MAX_RETRIES), max_wait }
    }

    fn max_response_bytes(&self) -> usize {
        self.max_response_bytes.unwrap_or(DEFAULT_MAX_RESPONSE_BYTES)
    }

    fn timeouts(&self) -> Timeouts {
        let default = Timeouts::default();
        Timeouts {
            connect: self.connect_timeout.unwrap_or(default.connect),
            read: self.read_timeout.unwrap_or(default.read),
            total: self.timeout.unwrap_or(default.total),
        }
    }
}

/// Names and values, in order (the builder may repeat a name): headers, query
/// parameters. A value may be a credential, so `Debug` shows the names only. As data, a
/// map of names to strings.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Pairs(pub Vec<(String, String)>);

impl fmt::Debug for Pairs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(name, _)| name)).finish()
    }
}

impl<'de> Deserialize<'de> for Pairs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Pairs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of names to strings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Pairs, A::Error> {
                std::iter::from_fn(|| map.next_entry().transpose()).collect::<Result<_, _>>().map(Pairs)
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// `null` stands for the default (none), as leaving the field out does.
fn or_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(deserializer: D) -> Result<T, D::Error> {
    Ok(Option::deserialize(deserializer)?.unwrap_or_default())
}

fn seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    let Some(seconds) = Option::<f64>::deserialize(deserializer)? else { return Ok(None) };
    Duration::try_from_secs_f64(seconds).map(Some).map_err(|_| {
        serde::de::Error::invalid_value(serde::de::Unexpected::Float(seconds), &"a positive number of seconds")
    })
}

/// What one wire protocol supplies; the four are [`OpenAIChat`](super::OpenAIChat),
/// [`OpenAIResponses`](super::OpenAIResponses), [`Anthropic`](super::Anthropic) and
/// [`Gemini`](super::Gemini).
#[doc(hidden)]
pub trait Protocol: Default + Send + Sync + 'static {
    /// The provider's name in errors.
    const PROVIDER: &'static str;
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
    fn parse(&self, body: Value, step: u32) -> Result<ModelResponse, ModelError>;
    /// A fresh stream state for request `step`.
    fn stream(&self, step: u32) -> Self::Stream;
    /// The JSON text of each tool call's arguments in a whole body, in order, for a
    /// protocol that sends them as objects rather than text (see [`keep_wide_arguments`]).
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

/// A model behind a provider's HTTP API. Build it with the protocol's `new(model)`, then
/// the methods below; each reads its default from the environment where one is usual.
#[derive(Clone)]
pub struct ProviderModel<P> {
    protocol: P,
    name: String,
    settings: Settings,
}

impl<P: Protocol> fmt::Debug for ProviderModel<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderModel")
            .field("provider", &P::PROVIDER)
            .field("name", &self.name)
            .field("base_url", &self.settings.base_url)
            .field("api_key", &self.settings.api_key)
            .field("headers", &self.settings.headers)
            .finish_non_exhaustive()
    }
}

/// Retries after the first attempt unless set (as the `openai` SDK does).
pub const DEFAULT_MAX_RETRIES: u32 = 2;
/// The most bytes one answer may have unless set: far past any model's answer, far short
/// of what would hurt the process.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

impl<P: Protocol> ProviderModel<P> {
    /// The model `name` (`gpt-4.1-mini`, `claude-sonnet-4-5`, `gemini-2.5-flash`, ...).
    pub fn new(name: impl Into<String>) -> Self {
        Self { protocol: P::default(), name: name.into(), settings: Settings::default() }
    }

    /// All settings at once, in place of any set before.
    #[must_use]
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Where the API lives (any OpenAI-compatible server, for the OpenAI protocols).
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.settings.base_url = Some(url.into());
        self
    }

    /// The API key (by default the protocol's environment variable).
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.settings.api_key = Some(ApiKey::new(key));
        self
    }

    /// Reads the key from this environment variable instead of the protocol's usual one.
    #[must_use]
    pub fn api_key_env(mut self, name: impl Into<String>) -> Self {
        self.settings.api_key_env = Some(name.into());
        self
    }

    /// Sends the key in this header, as is (Azure OpenAI's `api-key`), instead of the
    /// protocol's own header.
    #[must_use]
    pub fn api_key_header(mut self, name: impl Into<String>) -> Self {
        self.settings.api_key_header = Some(name.into());
        self
    }

    /// Azure OpenAI: `api-version` on every request and the key in `api-key`. The base URL
    /// is the deployment's (`https://<resource>.openai.azure.com/openai/deployments/<name>`).
    #[must_use]
    pub fn azure(mut self, api_version: impl Into<String>) -> Self {
        self.settings.azure_api_version = Some(api_version.into());
        self
    }

    /// An extra header on every request.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.headers.0.push((name.into(), value.into()));
        self
    }

    /// An extra query parameter on every request.
    #[must_use]
    pub fn query(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.query.0.push((name.into(), value.into()));
        self
    }

    /// How long to wait for a connection (10 s by default).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.settings.connect_timeout = Some(timeout);
        self
    }

    /// How long to wait between bytes of an answer (120 s by default).
    #[must_use]
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.settings.read_timeout = Some(timeout);
        self
    }

    /// How long one attempt may take in all (600 s by default).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.settings.timeout = Some(timeout);
        self
    }

    /// Retries after a connection error, 408, 409, 429 or 5xx ([`DEFAULT_MAX_RETRIES`] by default).
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.settings.max_retries = Some(retries);
        self
    }

    /// The longest wait before a retry (60 s by default, never longer than [`timeout`](Self::timeout)).
    #[must_use]
    pub fn max_retry_wait(mut self, wait: Duration) -> Self {
        self.settings.max_retry_wait = Some(wait);
        self
    }

    /// The most bytes one answer may have, whole or streamed ([`DEFAULT_MAX_RESPONSE_BYTES`] by default).
    #[must_use]
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.settings.max_response_bytes = Some(bytes);
        self
    }

    /// Sampling temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.settings.temperature = Some(temperature);
        self
    }

    /// Nucleus sampling.
    #[must_use]
    pub fn top_p(mut self, top_p: f64) -> Self {
        self.settings.top_p = Some(top_p);
        self
    }

    /// The most tokens an answer may have.
    #[must_use]
    pub fn max_tokens(mut self, tokens: u64) -> Self {
        self.settings.max_tokens = Some(tokens);
        self
    }

    /// A sampling seed, where the provider takes one.
    #[must_use]
    pub fn seed(mut self, seed: i64) -> Self {
        self.settings.seed = Some(seed);
        self
    }

    /// Which tool the model must, may or must not call.
    #[must_use]
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.settings.tool_choice = Some(choice);
        self
    }

    /// Whether the model may call several tools in one answer.
    #[must_use]
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.settings.parallel_tool_calls = Some(parallel);
        self
    }

    /// Fields merged into the request body last (anything the provider takes).
    #[must_use]
    pub fn extra_body(mut self, extra: Map<String, Value>) -> Self {
        self.settings.extra_body.extend(extra);
        self
    }

    /// The model's name as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn resolved_base_url(&self) -> String {
        let from_env = P::BASE_URL_ENV.and_then(|name| std::env::var(name).ok()).filter(|url| !url.is_empty());
        self.settings.base_url.clone().or(from_env).unwrap_or_else(|| P::DEFAULT_BASE_URL.to_owned())
    }

    /// The key: given, or from the environment. Only the provider's own endpoint needs
    /// one; a local OpenAI-compatible server is called without.
    fn resolved_key(&self, base_url: &str) -> Result<Option<ApiKey>, ModelError> {
        if let Some(key) = &self.settings.api_key {
            return Ok(Some(key.clone()));
        }
        let env = self.settings.api_key_env.as_deref().unwrap_or(P::KEY_ENV);
        if let Some(key) = std::env::var(env).ok().filter(|k| !k.is_empty()) {
            return Ok(Some(ApiKey::new(key)));
        }
        if base_url != P::DEFAULT_BASE_URL {
            return Ok(None);
        }
        let mut error = ModelError::of(
            ModelErrorKind::MissingApiKey,
            format!("no API key: set the environment variable `{env}` or pass `api_key`"),
        );
        error.provider = Some(P::PROVIDER.to_owned());
        Err(error)
    }

    /// Every header a request carries: the protocol's, the key's, then the extra ones,
    /// each checked here so a bad one is named instead of failing every attempt.
    fn headers(&self, key: Option<&ApiKey>) -> Result<HeaderMap, ModelError> {
        let bad = |message: String| ModelError::of(ModelErrorKind::Other, message);
        let name_of = |name: &str| {
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad(format!("`{name}` is not a valid header name")))
        };
        let mut headers = HeaderMap::new();
        for (name, value) in self.protocol.fixed_headers() {
            headers.append(*name, HeaderValue::from_static(value));
        }
        if let Some(key) = key {
            let (name, value) = match self.settings.key_header() {
                Some(name) => (name, key.expose().to_owned()),
                None => self.protocol.auth(key.expose()),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                ModelError::of(ModelErrorKind::MissingApiKey, "the API key holds characters a header cannot carry")
            })?;
            value.set_sensitive(true);
            headers.append(name_of(name)?, value);
        }
        for (name, value) in &self.settings.headers.0 {
            let value = HeaderValue::from_str(value)
                .map_err(|_| bad(format!("header `{name}`: the value holds characters a header cannot carry")))?;
            headers.append(name_of(name)?, value);
        }
        Ok(headers)
    }

    async fn answer(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let base_url = self.resolved_base_url();
        let key = self.resolved_key(&base_url)?;
        let secrets: Vec<&str> = key.iter().map(ApiKey::expose).collect();
        let answered = self.send(&base_url, key.as_ref(), &request).await;
        // The one place a response's words pass on their way to errors, events and traces.
        match answered {
            Ok(mut response) => {
                response.model_name = response.model_name.map(|name| http::redact(&name, &secrets));
                Ok(response)
            }
            Err(error) => Err(http::redact_error(error, &secrets)),
        }
    }

    async fn send(
        &self,
        base_url: &str,
        key: Option<&ApiKey>,
        request: &ModelRequest<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let stream = request.deltas.is_some();
        let mut body = self.protocol.body(&self.name, request, &self.settings, stream)?;
        if let Value::Object(map) = &mut body {
            map.extend(self.settings.extra_body.clone());
        }
        let url = self.protocol.url(base_url.trim_end_matches('/'), &self.name, stream);
        let timeouts = self.settings.timeouts();
        let client = http::client(timeouts)?;
        let mut url = reqwest::Url::parse(&url)
            .map_err(|e| ModelError::of(ModelErrorKind::Connection, format!("invalid base URL `{base_url}`: {e}")))?;
        let query = self.settings.query_pairs();
        if query.clone().next().is_some() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let body = serde_json::to_vec(&body)
            .map_err(|e| ModelError::of(ModelErrorKind::Other, format!("the request is not JSON: {e}")))?;
        let mut headers = self.headers(key)?;
        headers.insert(reqwest::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let builder = client.post(url).timeout(timeouts.total).headers(headers).body(body);
        let builder = &builder;
        let limit = self.settings.max_response_bytes();
        http::with_retries(self.settings.retry_policy(), || async {
            let attempt = builder.try_clone().ok_or_else(|| {
                Failure::fatal(ModelError::of(ModelErrorKind::Other, "the request cannot be repeated"))
            })?;
            let response = attempt.send().await.map_err(|e| http::transport_failure(P::PROVIDER, &e))?;
            let status = response.status().as_u16();
            if !response.status().is_success() {
                let headers = response.headers().clone();
                // An error body matters only for its excerpt: the rest of it is not read.
                let text = match http::read_body(response, http::ERROR_BODY_LIMIT).await {
                    Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    Err(_) => String::new(),
                };
                return Err(http::status_failure(P::PROVIDER, status, &headers, P::REQUEST_ID_HEADER, &text));
            }
            let request_id =
                response.headers().get(P::REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let outcome = match request.deltas {
                Some(deltas) => self.streamed(response, request, deltas, limit).await,
                None => self.whole(response, request.step, limit).await,
            };
            outcome.map_err(|mut failure| {
                failure.error.provider.get_or_insert_with(|| P::PROVIDER.to_owned());
                failure.error.request_id = failure.error.request_id.take().or_else(|| request_id.clone());
                failure
            })
        })
        .await
    }

    async fn whole(&self, response: reqwest::Response, step: u32, limit: usize) -> Result<ModelResponse, Failure> {
        let bytes = http::read_body(response, limit).await.map_err(|error| match error {
            BodyError::Transport(e) => http::transport_failure(P::PROVIDER, &e),
            BodyError::TooLarge => http::too_large(limit),
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let body: Value = crate::json::parse(&text).map_err(|e| {
            let mut error = ModelError::of(ModelErrorKind::InvalidResponse, format!("the body is not JSON: {e}"));
            error.body = Some(http::excerpt(&text));
            Failure::fatal(error)
        })?;
        let mut response = self.protocol.parse(body, step).map_err(Failure::fatal)?;
        keep_wide_arguments(&mut response.parts, &text, |body| self.protocol.raw_arguments(body));
        Ok(response)
    }

    /// Reads a stream, handing each delta to the run as it arrives. A stream that breaks
    /// before anything reached the run is retried like any failed attempt; after, it is a
    /// `StreamInterrupted` error (the run has shown part of an answer that will not come).
    async fn streamed(
        &self,
        response: reqwest::Response,
        request: &ModelRequest<'_>,
        deltas: &(dyn Fn(ModelDelta) + Send + Sync),
        limit: usize,
    ) -> Result<ModelResponse, Failure> {
        let mut state = self.protocol.stream(request.step);
        let mut given = 0usize;
        let mut events = std::pin::pin!(sse::events(response, limit));
        let broken = |given: usize, message: String| {
            if given == 0 {
                Failure::retryable(ModelError::of(ModelErrorKind::Connection, message))
            } else {
                Failure::fatal(ModelError::of(
                    ModelErrorKind::StreamInterrupted,
                    format!("the stream broke after part of the answer was given to the run: {message}"),
                ))
            }
        };
        while let Some(event) = events.next().await {
            let event = event.map_err(|error| match error {
                sse::SseError::Transport(e) => broken(given, format!("the stream failed: {e}")),
                sse::SseError::TooLarge => http::too_large(limit),
            })?;
            for delta in state.event(&event).map_err(Failure::fatal)? {
                given += 1;
                deltas(delta);
            }
        }
        state.finish().map_err(|error| match error.kind {
            ModelErrorKind::StreamInterrupted => broken(given, error.message),
            _ => Failure::fatal(error),
        })
    }
}

impl<P: Protocol> Model for ProviderModel<P> {
    fn request<'a>(&'a self, request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(self.answer(request))
    }

    fn system(&self) -> Option<&str> {
        Some(P::SYSTEM)
    }

    fn model_name(&self) -> Option<&str> {
        Some(&self.name)
    }
}

/// A body or event that does not fit the protocol.
pub(crate) fn invalid(message: impl Into<String>) -> ModelError {
    ModelError::of(ModelErrorKind::InvalidResponse, message)
}

/// Tool-call arguments as the model sent them: the object when the text is one (and
/// holds no integer wider than 64 bits, which parsing would turn into a float), else the
/// text itself, which the scheduler answers with an `invalid_arguments` return the model
/// can correct.
pub(crate) fn arguments(text: &str) -> Value {
    match crate::json::parse(text) {
        Ok(object @ Value::Object(_)) if !holds_float(&object) || crate::json::wide_integer(text).is_none() => object,
        _ if text.trim().is_empty() => Value::Object(Map::new()),
        _ => Value::String(text.to_owned()),
    }
}

/// Gives back, as the text the model sent, the arguments of calls in `parts` that a
/// protocol sent as objects when an integer in them was too wide for 64 bits: parsing
/// the body turned it into a float, and the scheduler answers the text with an
/// `invalid_arguments` return naming where it is. `raw` reads each call's arguments
/// text from `body`; it runs only when a call holds a float and the body such an integer.
pub(crate) fn keep_wide_arguments(
    parts: &mut [ResponsePart],
    body: &str,
    raw: impl FnOnce(&str) -> Vec<Box<RawValue>>,
) {
    let calls = || parts.iter().filter(|p| matches!(p, ResponsePart::ToolCall(_)));
    if !calls().any(|p| matches!(p, ResponsePart::ToolCall(call) if holds_float(&call.arguments)))
        || crate::json::wide_integer(body).is_none()
    {
        return;
    }
    let texts = raw(body);
    let calls = parts.iter_mut().filter_map(|p| match p {
        ResponsePart::ToolCall(call) => Some(call),
        ResponsePart::Text { .. } => None,
    });
    for (call, text) in calls.zip(texts) {
        call.arguments = arguments(text.get());
    }
}

/// Whether a float appears in `value`: only then can an integer have been widened.
fn holds_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(holds_float),
        Value::Object(map) => map.values().any(holds_float),
        _ => false,
    }
}

/// A value as the text a provider wants where it takes text (tool-call arguments, a
/// tool return's content): a string as it is, anything else as JSON.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The rendered tools of a request.
pub(crate) fn tools(request: &ModelRequest<'_>, provider: crate::render::Provider) -> Result<Vec<Value>, ModelError> {
    crate::render::render_all(request.tools, provider, None)
        .map_err(|e| ModelError::of(ModelErrorKind::Other, e.to_string()))
}

/// The text of consecutive system prompts, joined (for providers that take it apart
/// from the messages).
#[cfg(any(feature = "anthropic", feature = "gemini"))]
pub(crate) fn instructions(request: &ModelRequest<'_>) -> Option<String> {
    let texts: Vec<&str> = request
        .messages
        .iter()
        .flat_map(|m| match &**m {
            crate::message::Message::Request { parts } => parts.as_slice(),
            crate::message::Message::Response { .. } => &[],
        })
        .filter_map(|part| match part {
            crate::message::RequestPart::SystemPrompt { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}
