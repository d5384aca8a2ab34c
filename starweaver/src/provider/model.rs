//! [`ProviderModel`]: a model name and its settings, built method by method; the one
//! request path every protocol shares (key, body, retries, streaming).

use std::fmt;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use super::arguments::keep_wide_arguments;
use super::http::{self, BodyError, Failure};
use super::key::ApiKey;
use super::protocol::{Protocol, StreamState};
use super::settings::{Settings, ToolChoice};
use super::sse;
use super::wire;
use crate::model::{Model, ModelDelta, ModelError, ModelErrorKind, ModelRequest, ModelResponse};

/// A model behind a provider's HTTP API. Build it with the protocol's `new(model)`, then
/// the methods below; each reads its default from the environment where one is usual.
#[derive(Clone)]
pub struct ProviderModel<P> {
    protocol: P,
    name: String,
    settings: Settings,
    client: http::Client,
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

impl<P: Protocol> ProviderModel<P> {
    /// The model `name` (`gpt-4.1-mini`, `claude-sonnet-4-5`, `gemini-2.5-flash`, ...).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            protocol: P::default(),
            name: name.into(),
            settings: Settings::default(),
            client: http::Client::default(),
        }
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

    /// Retries after a connection error, 408, 409, 429 or 5xx
    /// ([`DEFAULT_MAX_HTTP_RETRIES`](super::DEFAULT_MAX_HTTP_RETRIES) by default).
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

    /// The most bytes one answer may have, whole or streamed
    /// ([`DEFAULT_MAX_RESPONSE_BYTES`](super::DEFAULT_MAX_RESPONSE_BYTES) by default).
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

    /// Every header a request carries: the protocol's, the key's, the extra ones, then
    /// those `request` needs (joined to an extra one of the same name), each checked here
    /// so a bad one is named instead of failing every attempt.
    fn headers(&self, key: Option<&ApiKey>, request: &ModelRequest<'_>) -> Result<HeaderMap, ModelError> {
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
        for (name, value) in self.protocol.request_headers(request) {
            let given: Vec<&str> = headers.get_all(*name).iter().filter_map(|v| v.to_str().ok()).collect();
            if given.iter().any(|list| list.split(',').any(|item| item.trim() == *value)) {
                continue;
            }
            let joined = given.into_iter().chain([*value]).collect::<Vec<_>>().join(",");
            let joined = HeaderValue::from_str(&joined)
                .map_err(|_| bad(format!("header `{name}`: the value holds characters a header cannot carry")))?;
            headers.insert(*name, joined);
        }
        Ok(headers)
    }

    async fn answer(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let base_url = self.resolved_base_url();
        let key = resolve_key::<P>(&self.settings, &base_url)?;
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
        if !P::NATIVE_TOOL_SEARCH && !request.deferred.is_empty() {
            // Sending them as plain tools would load the whole catalog; leaving them out
            // would hide it.
            return Err(ModelError::of(
                ModelErrorKind::Other,
                format!("{} has no native tool search to hand deferred tools to", P::NAME),
            ));
        }
        let mut body = self.protocol.body(&self.name, request, &self.settings, stream)?;
        if let Value::Object(map) = &mut body {
            map.extend(self.settings.extra_body.clone());
        }
        let url = self.protocol.url(base_url.trim_end_matches('/'), &self.name, stream);
        let timeouts = self.settings.timeouts();
        let client = self.client.get(timeouts)?;
        let mut url = reqwest::Url::parse(&url)
            .map_err(|e| ModelError::of(ModelErrorKind::Connection, format!("invalid base URL `{base_url}`: {e}")))?;
        let query = self.settings.query_pairs();
        if query.clone().next().is_some() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let body = serde_json::to_vec(&body)
            .map_err(|e| ModelError::of(ModelErrorKind::Other, format!("the request is not JSON: {e}")))?;
        let mut headers = self.headers(key, request)?;
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
        let body: P::Body = wire::decode(P::NAME, "the body", &text).map_err(|mut error| {
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

    fn native_output(&self) -> bool {
        P::NATIVE_OUTPUT
    }

    fn native_tool_search(&self) -> bool {
        P::NATIVE_TOOL_SEARCH
    }

    fn protocol(&self) -> Option<crate::render::Provider> {
        Some(P::FORMAT)
    }

    fn model_name(&self) -> Option<&str> {
        Some(&self.name)
    }
}

/// The key: given, or from the environment. Only the provider's own endpoint needs
/// one; a local OpenAI-compatible server is called without.
fn resolve_key<P: Protocol>(settings: &Settings, base_url: &str) -> Result<Option<ApiKey>, ModelError> {
    if let Some(key) = &settings.api_key {
        return Ok(Some(key.clone()));
    }
    let env = settings.api_key_env.as_deref().unwrap_or(P::KEY_ENV);
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
