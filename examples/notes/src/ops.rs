//! The notes operations: plain `async fn`s that reach the database through `State<Db>`,
//! answer domain errors (`not_found`, `conflict`, `unprocessable`, `rate_limited`,
//! `unauthenticated`), stream new notes, and call each other through the env.

use crate::db::{Db, Note};
use crate::state::{RateLimit, Replica};
use futures::Stream;
use opkit::elicit::Elicited;
use opkit::envelope::PromptMessage;
use opkit::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What a new note holds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NewNote {
    /// The title, unique among notes; not blank.
    pub title: String,
    /// The text.
    #[serde(default)]
    pub body: String,
}

fn missing(id: i64) -> CallError {
    CallError::not_found(format!("there is no note {id}"))
}

/// Stores a new note. A title that is taken is a conflict; a blank one cannot be stored.
#[operation(namespace = "notes", mutation, errors(conflict, unprocessable))]
pub async fn create(
    ctx: &OperationContext,
    State(db): State<Db>,
    State(replica): State<Replica>,
    Input(note): Input<NewNote>,
) -> Result<Note, CallError> {
    let title = note.title.trim().to_owned();
    if title.is_empty() {
        return Err(CallError::unprocessable(
            "a note needs a title that is not blank",
        ));
    }
    let author = ctx.identity().map(|identity| identity.id.clone());
    db.insert(title, note.body, author, replica.name).await
}

/// The note with this id.
#[operation(namespace = "notes", errors(not_found))]
pub async fn get(State(db): State<Db>, id: i64) -> Result<Note, CallError> {
    db.get(id).await?.ok_or_else(|| missing(id))
}

/// Notes in the order they were written.
#[operation(namespace = "notes")]
pub async fn list(
    State(db): State<Db>,
    /// Only notes with a greater id.
    after: Option<i64>,
    /// At most this many (default 100).
    limit: Option<u32>,
) -> Result<Vec<Note>, CallError> {
    db.list(after.unwrap_or(0), limit.unwrap_or(100), None)
        .await
}

/// Gives a note a new title.
#[operation(
    namespace = "notes",
    mutation,
    errors(not_found, conflict, unprocessable)
)]
pub async fn rename(State(db): State<Db>, id: i64, title: String) -> Result<Note, CallError> {
    let title = title.trim().to_owned();
    if title.is_empty() {
        return Err(CallError::unprocessable(
            "a note needs a title that is not blank",
        ));
    }
    db.rename(id, title).await?.ok_or_else(|| missing(id))
}

/// The answer to "delete this note?".
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct Confirm {
    /// Delete it.
    pub confirm: bool,
}

/// Deletes a note (administrators only). Over MCP the user is asked to confirm first; a
/// caller through an edge that cannot ask (HTTP, the call protocol, an MCP client without
/// the elicitation capability) has chosen to delete by calling.
#[operation(
    namespace = "notes",
    mutation,
    access(scopes = ["notes:admin"]),
    errors(not_found, conflict)
)]
pub async fn delete(
    ctx: &OperationContext,
    State(db): State<Db>,
    id: i64,
) -> Result<(), CallError> {
    let note = db.get(id).await?.ok_or_else(|| missing(id))?;
    let question = format!(
        "Delete the note {id} ({:?})? This cannot be undone.",
        note.title
    );
    match ctx.elicit::<Confirm>(question).await {
        Ok(Elicited::Accepted(Confirm { confirm: true })) => {}
        Ok(_) => {
            return Err(CallError::conflict(format!(
                "the note {id} was not deleted: the user did not confirm"
            )));
        }
        Err(error) if opkit::elicit::cannot_ask(&error) => {}
        Err(error) => return Err(error),
    }
    if db.delete(id).await? {
        Ok(())
    } else {
        Err(missing(id))
    }
}

/// The note at `notes://{id}`, as an MCP resource (its JSON); a client completes `{id}` with
/// the ids of the notes there are.
#[operation(
    namespace = "notes",
    errors(not_found),
    mcp(resource = "notes://{id}", complete(id = "notes.ids"))
)]
pub async fn read(State(db): State<Db>, id: i64) -> Result<Note, CallError> {
    db.get(id).await?.ok_or_else(|| missing(id))
}

/// The ids of the notes that start with `value` (at most 100, newest first): what a client
/// offers while the user types the `{id}` of `notes://{id}`.
#[operation(namespace = "notes")]
pub async fn ids(State(db): State<Db>, value: String) -> Result<Vec<String>, CallError> {
    let notes = db.list(0, 1000, None).await?;
    Ok(notes
        .into_iter()
        .map(|note| note.id.to_string())
        .filter(|id| id.starts_with(value.trim()))
        .take(100)
        .collect())
}

/// Summarize my notes: a prompt holding every note (at most 200), for the model to summarize.
#[operation(namespace = "notes", mcp(prompt))]
pub async fn summarize(
    State(db): State<Db>,
    /// How many words the summary may have (default 100).
    words: Option<u32>,
) -> Result<Vec<PromptMessage>, CallError> {
    let notes = db.list(0, 200, None).await?;
    let mut text = format!(
        "Summarize these {} notes in at most {} words.\n",
        notes.len(),
        words.unwrap_or(100)
    );
    for note in notes {
        text.push_str(&format!("\n# {}\n{}\n", note.title, note.body));
    }
    Ok(vec![PromptMessage::user(text)])
}

/// The caller's own notes; the caller must be known.
#[operation(namespace = "notes", errors(unauthenticated))]
pub async fn mine(ctx: &OperationContext, State(db): State<Db>) -> Result<Vec<Note>, CallError> {
    let Some(identity) = ctx.identity() else {
        return Err(CallError::unauthenticated(
            "`notes.mine` needs to know who you are: send your API key",
        ));
    };
    db.list(0, 1000, Some(identity.id.clone())).await
}

/// Every note, at most once a minute per caller.
#[operation(namespace = "notes", errors(rate_limited))]
pub async fn export(
    ctx: &OperationContext,
    State(db): State<Db>,
    State(limit): State<RateLimit>,
) -> Result<Vec<Note>, CallError> {
    let caller = ctx.identity().map_or("anonymous", |identity| &identity.id);
    limit.admit(caller)?;
    db.list(0, u32::MAX, None).await
}

/// How many notes there are and their titles, counted through a nested call to `notes.list`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// How many notes there are.
    pub count: usize,
    /// Their titles, oldest first.
    pub titles: Vec<String>,
}

/// A summary of the notes, made from a nested call to `notes.list`.
#[operation(namespace = "notes")]
pub async fn summary(ctx: &OperationContext) -> Result<Summary, CallError> {
    let notes = ctx
        .env()
        .call_typed::<list>(list::input(None, Some(1000)))
        .await?
        .data;
    Ok(Summary {
        count: notes.len(),
        titles: notes.into_iter().map(|note| note.title).collect(),
    })
}

/// Notes written after `after`, as they arrive: the existing ones first, then new ones,
/// until `limit` notes were sent or none arrived for `idle_ms` (default 2000).
#[operation(namespace = "notes", subscription)]
pub fn feed(
    State(db): State<Db>,
    after: i64,
    limit: u32,
    idle_ms: Option<u64>,
) -> impl Stream<Item = Result<Note, CallError>> + Send + 'static {
    let idle = Duration::from_millis(idle_ms.unwrap_or(2000));
    let cursor = Cursor {
        db,
        after,
        left: limit,
        idle,
        pending: Vec::new(),
    };
    futures::stream::unfold(cursor, Cursor::next)
}

/// Where a [`feed`] is.
struct Cursor {
    db: Db,
    after: i64,
    left: u32,
    idle: Duration,
    /// Fetched, not yet sent (newest last).
    pending: Vec<Note>,
}

impl Cursor {
    async fn next(mut self) -> Option<(Result<Note, CallError>, Self)> {
        if self.left == 0 {
            return None;
        }
        let started = tokio::time::Instant::now();
        while self.pending.is_empty() {
            match self.db.list(self.after, self.left, None).await {
                Ok(mut notes) => {
                    notes.reverse();
                    self.pending = notes;
                }
                Err(error) => {
                    self.left = 0;
                    return Some((Err(error), self));
                }
            }
            if self.pending.is_empty() {
                if started.elapsed() >= self.idle {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let note = self.pending.pop()?;
        self.after = note.id;
        self.left -= 1;
        Some((Ok(note), self))
    }
}
