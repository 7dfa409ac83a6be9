//! A notes service built with opkit, the way an application puts opkit inside itself:
//!
//! - the notes live in SQLite ([`db::Db`]), reached by the operations through `State<Db>`
//!   (no globals), given once to the registry ([`registry`]);
//! - the operations ([`ops`]) answer domain errors — a missing note is `NOT_FOUND` (HTTP
//!   404), a duplicate title `CONFLICT` (409), a blank one `UNPROCESSABLE` (422), a second
//!   export within a minute `RATE_LIMITED` (429), `notes.mine` without a key
//!   `UNAUTHENTICATED` (401) — stream new notes (`notes.feed`), and call each other
//!   (`notes.summary` calls `notes.list` through the env);
//! - [`app::app`] is an axum application with routes of its own and its own API-key
//!   middleware, with opkit's HTTP routes mounted at `/api` and its MCP endpoint at `/mcp`;
//! - the same registry serves over the Redis call protocol, so several processes share the
//!   database: each replica serves with its own state (its own connection and name), and
//!   every identity on the bus is signed with a secret the processes share ([`bus`]), so a
//!   Redis client cannot state who it is;
//! - the application's policy is middleware registered once on the registry, so it holds on
//!   every edge alike: a rate limit per API key (one budget of [`CALLS_PER_MINUTE`] whether a
//!   key's calls come over HTTP, MCP or the call protocol) and an audit record of who called
//!   what (`RUST_LOG=opkit::audit=info`), with no change to the operations.
//!
//! Run it with `cargo run -p opkit-example-notes -- serve` (see `src/main.rs` for the
//! options).

pub mod app;
pub mod bus;
pub mod db;
pub mod ops;
pub mod state;

use opkit::OperationRegistry;
use opkit::middleware::{Audit, RateLimit, RateLimitKey};
use std::time::Duration;

/// How many calls one API key may make a minute, over every edge together.
pub const CALLS_PER_MINUTE: u32 = 100;

/// The registry of every notes operation, with its application state (the database, this
/// replica's name, and the export rate limit: one per caller per `export_window`) and its
/// middleware: an audit record per call, and [`CALLS_PER_MINUTE`] per API key.
pub fn registry(db: db::Db, replica: &str, export_window: Duration) -> OperationRegistry {
    OperationRegistry::from_inventory()
        .with_middleware(Audit::new())
        .with_middleware(RateLimit::per_minute(CALLS_PER_MINUTE).keyed_by(RateLimitKey::Identity))
        .with_state(db)
        .with_state(state::Replica {
            name: replica.to_owned(),
        })
        .with_state(state::RateLimit::new(export_window))
}
