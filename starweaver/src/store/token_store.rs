//! [`TokenStore`]: where an MCP client's OAuth credentials are kept, and
//! [`MemoryTokenStore`], the default.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::Value;

use crate::error::Result;

/// Keeps OAuth credentials (access and refresh tokens, the client id they were issued to)
/// by key: one key per protected server. The value is opaque JSON that only the OAuth
/// client reads; it holds secrets, so a store must never log or export it.
///
/// [`MemoryTokenStore`] keeps them for the life of the process (the default);
/// [`SqliteSessionStore`](crate::store::SqliteSessionStore) keeps them in its database
/// file, next to the sessions, so a restarted process reuses (and refreshes) a token
/// instead of asking the user to authorize again.
pub trait TokenStore: Send + Sync + 'static {
    /// The credentials kept under `key`, if any.
    ///
    /// # Errors
    /// `Store` when the store cannot be read.
    fn load_token(&self, key: &str) -> Result<Option<Value>>;

    /// Replaces the credentials kept under `key`.
    ///
    /// # Errors
    /// `Store` when the store cannot be written.
    fn save_token(&self, key: &str, credentials: &Value) -> Result<()>;

    /// Forgets the credentials kept under `key`.
    ///
    /// # Errors
    /// `Store` when the store cannot be written.
    fn delete_token(&self, key: &str) -> Result<()>;
}

/// Keeps OAuth credentials in memory, for the life of the process.
///
/// ```
/// use serde_json::json;
/// use starweaver::store::{MemoryTokenStore, TokenStore};
///
/// let store = MemoryTokenStore::new();
/// store.save_token("https://mcp.example.com/mcp", &json!({"client_id": "c1"})).unwrap();
/// assert!(store.load_token("https://mcp.example.com/mcp").unwrap().is_some());
/// store.delete_token("https://mcp.example.com/mcp").unwrap();
/// assert!(store.load_token("https://mcp.example.com/mcp").unwrap().is_none());
/// ```
#[derive(Default)]
pub struct MemoryTokenStore {
    tokens: Mutex<BTreeMap<String, Value>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn tokens(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Value>> {
        // Every write replaces one entry whole, so a panic elsewhere cannot leave it torn.
        self.tokens.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Names the keys only: the values are secrets.
impl std::fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTokenStore").field("keys", &self.tokens().keys().collect::<Vec<_>>()).finish()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load_token(&self, key: &str) -> Result<Option<Value>> {
        Ok(self.tokens().get(key).cloned())
    }

    fn save_token(&self, key: &str, credentials: &Value) -> Result<()> {
        self.tokens().insert(key.to_owned(), credentials.clone());
        Ok(())
    }

    fn delete_token(&self, key: &str) -> Result<()> {
        self.tokens().remove(key);
        Ok(())
    }
}
