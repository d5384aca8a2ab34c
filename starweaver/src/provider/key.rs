//! [`ApiKey`]: a credential that is sent and never shown (a model finds its key in
//! `model.rs`).

use std::fmt;

use serde::Deserialize;

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
