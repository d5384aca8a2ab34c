//! Session stores: where sessions opened by id are kept between runs and processes.
//!
//! A session opened with [`Agent::open_session`](crate::Agent::open_session) is written to
//! its agent's store each time a run or resume returns (completed, waiting, failed or
//! cancelled), as [`Session::export_state`](crate::Session::export_state) JSON. Each write
//! is one transaction and carries the revision it was based on, so a process that died
//! mid-write leaves the previous state, and two processes resuming one session cannot both
//! commit.
//!
//! Token stores ([`TokenStore`]) keep an MCP client's OAuth credentials by server, in
//! memory ([`MemoryTokenStore`]) or in a `SqliteSessionStore`'s database.

mod memory;
mod session_store;
#[cfg(feature = "sqlite")]
mod sqlite;
mod token_store;

pub use memory::MemorySessionStore;
pub use session_store::{SessionStore, StoredSession};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteSessionStore;
pub use token_store::{MemoryTokenStore, TokenStore};
