//! The notes table in SQLite: the application state the operations reach through
//! `State<Db>`.
//!
//! One connection behind a mutex, used from tokio's blocking pool. The file may be shared by
//! several processes (each replica of the Redis example opens it): WAL mode and a busy
//! timeout let them take turns.

use opkit::CallError;
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A stored note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Note {
    /// The note's id, given by the database.
    pub id: i64,
    /// Its title, unique among notes.
    pub title: String,
    /// Its text.
    pub body: String,
    /// The id of the identity that wrote it, when the call had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// The replica (process) that stored it.
    pub stored_by: String,
}

/// The notes database: cheap to clone (one shared connection).
#[derive(Clone)]
pub struct Db {
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Db")
    }
}

/// A database failure as a call error: a unique title taken is a conflict, anything else
/// an execution error.
fn call_error(error: rusqlite::Error) -> CallError {
    match &error {
        rusqlite::Error::SqliteFailure(failure, _)
            if failure.code == ErrorCode::ConstraintViolation =>
        {
            CallError::conflict("a note with this title exists already")
        }
        _ => CallError::execution(format!("the notes database failed: {error}")),
    }
}

impl Db {
    /// Opens (creating when needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, rusqlite::Error> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS notes (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                title TEXT NOT NULL UNIQUE,
                body TEXT NOT NULL,
                author TEXT,
                stored_by TEXT NOT NULL
            )",
        )?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `work` on the connection in tokio's blocking pool.
    async fn with<T, F>(&self, work: F) -> Result<T, CallError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let conn = conn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            work(&conn).map_err(call_error)
        })
        .await
        .map_err(|error| CallError::execution(format!("the database task failed: {error}")))?
    }

    /// Stores a new note.
    pub async fn insert(
        &self,
        title: String,
        body: String,
        author: Option<String>,
        stored_by: String,
    ) -> Result<Note, CallError> {
        self.with(move |conn| {
            conn.execute(
                "INSERT INTO notes (title, body, author, stored_by) VALUES (?1, ?2, ?3, ?4)",
                params![title, body, author, stored_by],
            )?;
            Ok(Note {
                id: conn.last_insert_rowid(),
                title,
                body,
                author,
                stored_by,
            })
        })
        .await
    }

    /// The note `id`, when there is one.
    pub async fn get(&self, id: i64) -> Result<Option<Note>, CallError> {
        self.with(move |conn| {
            conn.query_row(
                "SELECT id, title, body, author, stored_by FROM notes WHERE id = ?1",
                params![id],
                row_note,
            )
            .optional()
        })
        .await
    }

    /// Notes with an id above `after`, oldest first, at most `limit`; only `author`'s when
    /// given.
    pub async fn list(
        &self,
        after: i64,
        limit: u32,
        author: Option<String>,
    ) -> Result<Vec<Note>, CallError> {
        self.with(move |conn| {
            let mut statement = conn.prepare_cached(
                "SELECT id, title, body, author, stored_by FROM notes
                 WHERE id > ?1 AND (?2 IS NULL OR author = ?2) ORDER BY id LIMIT ?3",
            )?;
            let rows = statement.query_map(params![after, author, limit], row_note)?;
            rows.collect()
        })
        .await
    }

    /// Renames note `id`; `None` when there is no such note.
    pub async fn rename(&self, id: i64, title: String) -> Result<Option<Note>, CallError> {
        let changed = self
            .with(move |conn| {
                conn.execute(
                    "UPDATE notes SET title = ?1 WHERE id = ?2",
                    params![title, id],
                )
            })
            .await?;
        if changed == 0 {
            return Ok(None);
        }
        self.get(id).await
    }

    /// Deletes note `id`; `false` when there was none.
    pub async fn delete(&self, id: i64) -> Result<bool, CallError> {
        self.with(move |conn| conn.execute("DELETE FROM notes WHERE id = ?1", params![id]))
            .await
            .map(|deleted| deleted > 0)
    }
}

fn row_note(row: &rusqlite::Row<'_>) -> Result<Note, rusqlite::Error> {
    Ok(Note {
        id: row.get(0)?,
        title: row.get(1)?,
        body: row.get(2)?,
        author: row.get(3)?,
        stored_by: row.get(4)?,
    })
}
