//! Session stores: where sessions opened by id are kept between runs and processes.
//!
//! A session opened with [`Agent::open_session`](crate::Agent::open_session) is written to
//! its agent's store each time a run or resume returns (completed, waiting, failed or
//! cancelled), as [`Session::export_state`](crate::Session::export_state) JSON. Each write
//! is one transaction and carries the revision it was based on, so a process that died
//! mid-write leaves the previous state, and two processes resuming one session cannot both
//! commit.

mod memory;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use memory::MemoryStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;

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
