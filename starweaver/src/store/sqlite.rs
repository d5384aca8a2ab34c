//! `SqliteSessionStore`: sessions in an embedded SQLite database file (SQLite is bundled).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::Value;

use super::session_store::{SessionStore, StoredSession};
use super::token_store::TokenStore;
use crate::error::{Error, Result};

/// How long a write waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Keeps sessions in a SQLite database file, shared by every process that opens it.
///
/// Each save is one `IMMEDIATE` transaction in WAL mode: a process killed at any point
/// leaves the last committed state of every session loadable. Writes wait up to five
/// seconds for another process's transaction.
///
/// ```
/// use serde_json::json;
/// use starweaver::store::{SessionStore, SqliteSessionStore};
///
/// let dir = std::env::temp_dir().join(format!("starweaver-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let store = SqliteSessionStore::open(dir.join("sessions.db")).unwrap();
/// let revision = store.save("ticket-42", &json!({"version": 1}), 0).unwrap();
/// let reopened = SqliteSessionStore::open(dir.join("sessions.db")).unwrap();
/// assert_eq!(reopened.load("ticket-42").unwrap().unwrap().revision, revision);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug)]
pub struct SqliteSessionStore {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl SqliteSessionStore {
    /// Opens (creating if needed) the database at `path`.
    ///
    /// # Errors
    /// `Store` naming the path when the file cannot be opened or is not a session store.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let fail = |e: rusqlite::Error| store_error(&path, "open", &e);
        let connection = Connection::open(&path).map_err(fail)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        // WAL keeps readers off the writer's back; NORMAL sync is durable against a killed
        // process (not against power loss), at a fraction of FULL's cost.
        let mode: String = connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)).map_err(fail)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Store {
                path: path.display().to_string(),
                operation: "open",
                message: format!("the database refused WAL mode (journal mode is `{mode}`)"),
            });
        }
        connection
            .execute_batch(
                "PRAGMA synchronous = NORMAL;
                 CREATE TABLE IF NOT EXISTS starweaver_sessions (
                     id TEXT PRIMARY KEY NOT NULL,
                     revision INTEGER NOT NULL,
                     state TEXT NOT NULL,
                     updated_at_ms INTEGER NOT NULL
                 ) STRICT;
                 CREATE TABLE IF NOT EXISTS starweaver_oauth_tokens (
                     key TEXT PRIMARY KEY NOT NULL,
                     credentials TEXT NOT NULL,
                     updated_at_ms INTEGER NOT NULL
                 ) STRICT;",
            )
            .map_err(fail)?;
        Ok(Self { path, connection: Mutex::new(connection) })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        // A panic mid-call leaves SQLite's own transaction to roll back; the connection is fine.
        self.connection.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn fail(&self, operation: &'static str) -> impl Fn(rusqlite::Error) -> Error + '_ {
        move |e| store_error(&self.path, operation, &e)
    }
}

/// The time now, for the rows' `updated_at_ms`.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn store_error(path: &Path, operation: &'static str, error: &rusqlite::Error) -> Error {
    Error::Store { path: path.display().to_string(), operation, message: error.to_string() }
}

impl SessionStore for SqliteSessionStore {
    fn load(&self, id: &str) -> Result<Option<StoredSession>> {
        let row: Option<(i64, String)> = self
            .connection()
            .query_row("SELECT revision, state FROM starweaver_sessions WHERE id = ?1", [id], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()
            .map_err(self.fail("load"))?;
        let Some((revision, state)) = row else { return Ok(None) };
        let state = crate::json::parse(&state).map_err(|e| Error::Store {
            path: self.path.display().to_string(),
            operation: "load",
            message: format!("session `{id}` holds invalid JSON: {e}"),
        })?;
        Ok(Some(StoredSession { revision: revision.unsigned_abs(), state }))
    }

    fn save(&self, id: &str, state: &Value, expected: u64) -> Result<u64> {
        let fail = self.fail("save");
        let mut connection = self.connection();
        // IMMEDIATE takes the write lock up front, so the revision read below cannot go
        // stale before the write.
        let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(&fail)?;
        let found: Option<i64> = tx
            .query_row("SELECT revision FROM starweaver_sessions WHERE id = ?1", [id], |row| row.get(0))
            .optional()
            .map_err(&fail)?;
        let found = found.map_or(0, i64::unsigned_abs);
        if found != expected {
            return Err(Error::SessionConflict { id: id.to_owned(), expected, found });
        }
        let revision = found + 1;
        tx.execute(
            "INSERT INTO starweaver_sessions (id, revision, state, updated_at_ms) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, state = excluded.state,
                 updated_at_ms = excluded.updated_at_ms",
            params![id, i64::try_from(revision).unwrap_or(i64::MAX), state.to_string(), now_ms()],
        )
        .map_err(&fail)?;
        tx.commit().map_err(&fail)?;
        Ok(revision)
    }

    fn delete(&self, id: &str) -> Result<bool> {
        let removed = self
            .connection()
            .execute("DELETE FROM starweaver_sessions WHERE id = ?1", [id])
            .map_err(self.fail("delete"))?;
        Ok(removed > 0)
    }

    fn ids(&self) -> Result<Vec<String>> {
        let connection = self.connection();
        let fail = self.fail("list");
        let mut statement = connection.prepare("SELECT id FROM starweaver_sessions ORDER BY id").map_err(&fail)?;
        let ids = statement.query_map([], |row| row.get(0)).map_err(&fail)?;
        ids.collect::<rusqlite::Result<Vec<String>>>().map_err(fail)
    }
}

/// OAuth credentials of MCP servers, in their own table of the same file: the file then
/// holds bearer tokens, so keep it as private as the accounts they open.
impl TokenStore for SqliteSessionStore {
    fn load_token(&self, key: &str) -> Result<Option<Value>> {
        let row: Option<String> = self
            .connection()
            .query_row("SELECT credentials FROM starweaver_oauth_tokens WHERE key = ?1", [key], |row| row.get(0))
            .optional()
            .map_err(self.fail("load"))?;
        let Some(credentials) = row else { return Ok(None) };
        // The parser's message could quote the text: say only which entry is unreadable.
        let credentials = crate::json::parse(&credentials).map_err(|_| Error::Store {
            path: self.path.display().to_string(),
            operation: "load",
            message: format!("the OAuth credentials kept for `{key}` are not valid JSON"),
        })?;
        Ok(Some(credentials))
    }

    fn save_token(&self, key: &str, credentials: &Value) -> Result<()> {
        self.connection()
            .execute(
                "INSERT INTO starweaver_oauth_tokens (key, credentials, updated_at_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (key) DO UPDATE SET credentials = excluded.credentials,
                     updated_at_ms = excluded.updated_at_ms",
                params![key, credentials.to_string(), now_ms()],
            )
            .map_err(self.fail("save"))?;
        Ok(())
    }

    fn delete_token(&self, key: &str) -> Result<()> {
        self.connection()
            .execute("DELETE FROM starweaver_oauth_tokens WHERE key = ?1", [key])
            .map_err(self.fail("delete"))?;
        Ok(())
    }
}
