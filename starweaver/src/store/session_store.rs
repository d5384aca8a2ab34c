//! [`SessionStore`]: what every session store promises, and [`StoredSession`], what it
//! keeps.

use serde_json::Value;

use crate::error::Result;

/// A session as stored: its state and the revision that wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSession {
    /// Counts the session's writes: 1 after the first.
    pub revision: u64,
    /// [`Session::export_state`](crate::Session::export_state) JSON.
    pub state: Value,
}

/// Keeps session state by session id.
///
/// Implementations must make [`save`](Self::save) atomic: after any crash, [`load`](Self::load)
/// returns either the state before the write or the state after it.
pub trait SessionStore: Send + Sync + 'static {
    /// The stored session `id`, if any.
    ///
    /// # Errors
    /// `Store` when the store cannot be read.
    fn load(&self, id: &str) -> Result<Option<StoredSession>>;

    /// Writes `state` for `id` if its stored revision is still `expected` (0: not stored
    /// yet), and returns the new revision.
    ///
    /// # Errors
    /// `SessionConflict` when another writer got there first; `Store` when the store
    /// cannot be written.
    fn save(&self, id: &str, state: &Value, expected: u64) -> Result<u64>;

    /// Removes `id`; whether it was there.
    ///
    /// # Errors
    /// `Store` when the store cannot be written.
    fn delete(&self, id: &str) -> Result<bool>;

    /// Every stored session id, sorted.
    ///
    /// # Errors
    /// `Store` when the store cannot be read.
    fn ids(&self) -> Result<Vec<String>>;
}
