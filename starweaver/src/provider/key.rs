//! [`ApiKey`]: a credential that is sent and never shown, and where a model finds it.

use std::fmt;

use serde::Deserialize;

use super::protocol::Protocol;
use super::settings::Settings;
use crate::model::{ModelError, ModelErrorKind};

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

    pub(super) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// The key: given, or from the environment. Only the provider's own endpoint needs
/// one; a local OpenAI-compatible server is called without.
pub(super) fn resolve<P: Protocol>(settings: &Settings, base_url: &str) -> Result<Option<ApiKey>, ModelError> {
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
