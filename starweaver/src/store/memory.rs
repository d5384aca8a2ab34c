//! `MemorySessionStore`: sessions kept in this process, the default.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::Value;

use super::session_store::{SessionStore, StoredSession};
use crate::error::{Error, Result};

/// Keeps sessions in memory, for the life of the process.
///
/// ```
/// use serde_json::json;
/// use starweaver::store::{MemorySessionStore, SessionStore};
///
/// let store = MemorySessionStore::new();
/// assert_eq!(store.save("s1", &json!({"v": 1}), 0).unwrap(), 1);
/// assert!(store.save("s1", &json!({"v": 2}), 0).is_err()); // based on a stale revision
/// assert_eq!(store.load("s1").unwrap().unwrap().state, json!({"v": 1}));
/// ```
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    sessions: Mutex<BTreeMap<String, StoredSession>>,
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, StoredSession>> {
        // Every write replaces one entry whole, so a panic elsewhere cannot leave it torn.
        self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl SessionStore for MemorySessionStore {
    fn load(&self, id: &str) -> Result<Option<StoredSession>> {
        Ok(self.sessions().get(id).cloned())
    }

    fn save(&self, id: &str, state: &Value, expected: u64) -> Result<u64> {
        let mut sessions = self.sessions();
        let found = sessions.get(id).map_or(0, |s| s.revision);
        if found != expected {
            return Err(Error::SessionConflict { id: id.to_owned(), expected, found });
        }
        let revision = found + 1;
        sessions.insert(id.to_owned(), StoredSession { revision, state: state.clone() });
        Ok(revision)
    }

    fn delete(&self, id: &str) -> Result<bool> {
        Ok(self.sessions().remove(id).is_some())
    }

    fn ids(&self) -> Result<Vec<String>> {
        Ok(self.sessions().keys().cloned().collect())
    }
}
