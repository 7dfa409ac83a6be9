//! # opkit
//!
//! Typed, schema-described, observable operations. Plain `async fn`s and stream functions
//! become **operations** — named, schema-described, access-checked units of work — that are
//! called in-process, across processes, or imported from HTTP APIs and MCP servers, and every
//! result comes back in one shape: a [`ResponseEnvelope`] `{ data, meta }`.
//!
//! ## Operations from functions
//!
//! [`#[operation]`](macro@operation) derives the input and output JSON Schemas of a fn and
//! collects it into a registry; the fn stays a plain fn, and a typed handle of the same name
//! calls it without JSON.
//!
//! ```rust,standalone_crate
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use opkit::prelude::*;
//! use serde_json::json;
//!
//! /// Adds two integers.
//! #[operation(namespace = "math")]
//! async fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! let registry = OperationRegistry::from_inventory();
//! let ctx = OperationContext::default();
//! // Dynamic call: JSON in, validated, envelope out.
//! let envelope = registry.execute("math.add", json!({"a": 2, "b": 40}), &ctx).await?;
//! assert_eq!(envelope.data, json!(42));
//! // Typed call: no JSON round trip.
//! assert_eq!(add::call(&ctx, 2, 40).await?.data, 42);
//! # Ok::<(), CallError>(())
//! # }).unwrap();
//! ```
//!
//! ## Inside an application
//!
//! **Application state** (a database pool, a config, a client) is given once to the
//! registry and reaches each operation as a [`State<T>`] parameter, like axum's — not part of
//! the input schema. A registry that lacks a state its operations read says so at startup
//! ([`OperationRegistry::check_states`], run by the servers and the call handler), naming
//! the operation and the type. Dynamic handlers read it with [`OperationContext::state`].
//!
//! **Domain errors** say what went wrong in the application's terms —
//! [`CallError::not_found`], [`conflict`](CallError::conflict),
//! [`unprocessable`](CallError::unprocessable), [`rate_limited`](CallError::rate_limited),
//! [`unauthenticated`](CallError::unauthenticated), [`unavailable`](CallError::unavailable) —
//! as an [`ErrorKind`] beside the protocol's [`ErrorCode`]: the HTTP server answers 404, 409,
//! 422, 429, 401 and 503 for them and documents them per operation (`errors(..)` in the
//! attribute), the MCP server returns them as tool errors, and the call protocol carries the
//! kind, so a remote caller sees the same error as a local one.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use opkit::prelude::*;
//! use serde_json::json;
//! use std::collections::HashMap;
//! use std::sync::{Arc, Mutex};
//!
//! /// The application's store: cheap to clone, shared by every call.
//! #[derive(Clone, Default)]
//! struct Notes(Arc<Mutex<HashMap<u64, String>>>);
//!
//! /// A note by id.
//! #[operation(namespace = "notes", errors(not_found))]
//! async fn get(State(notes): State<Notes>, id: u64) -> Result<String, CallError> {
//!     let notes = notes.0.lock().unwrap();
//!     notes.get(&id).cloned().ok_or_else(|| CallError::not_found(format!("no note {id}")))
//! }
//!
//! let notes = Notes::default();
//! notes.0.lock().unwrap().insert(1, "milk".into());
//! let registry = OperationRegistry::new().with_state(notes);
//! registry.register_operation(get)?;
//! registry.check_states()?;
//!
//! let ctx = OperationContext::default();
//! assert_eq!(registry.execute("notes.get", json!({"id": 1}), &ctx).await?.data, "milk");
//! let missing = registry.execute("notes.get", json!({"id": 2}), &ctx).await.unwrap_err();
//! assert_eq!(missing.kind, Some(ErrorKind::NotFound));
//! // Typed calls read the state from the context: `registry.context()` carries it.
//! assert_eq!(get::call(&registry.context(), 1).await?.data, "milk");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! **The application's own authentication** and **mounting** are the servers' part
//! (`opkit-adapters`): `HttpServer` and `McpServer` take the caller's [`Identity`] from what
//! the application's middleware put into the request's extensions, or from an
//! `Authenticator` that sees the whole request (API keys, cookies, bearer tokens); their
//! routers are root-relative, so `Router::nest("/api", ..)` and `nest("/mcp", ..)` mount
//! them beside the application's own routes. Over the call protocol the identity travels
//! in `call.requested` and is trusted as stated: see [`protocol`] for who may state it.
//!
//! ## The dynamic API
//!
//! Operations can also be built at run time from a spec and a handler (what the adapters do
//! for imported APIs and MCP servers):
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use opkit::prelude::*;
//! use serde_json::json;
//!
//! let registry = OperationRegistry::new();
//! registry.register(
//!     OperationSpec::new("greet", "hello", OperationKind::Query)
//!         .input_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}))
//!         .output_schema(json!({"type": "string"})),
//!     Handler::unary(|input, _ctx| async move {
//!         Ok(json!(format!("Hello, {}!", input["name"].as_str().unwrap_or("?"))))
//!     }),
//! ).unwrap();
//!
//! let envelope = registry.execute("greet.hello", json!({"name": "Ada"}), &OperationContext::default()).await?;
//! assert_eq!(envelope.data, json!("Hello, Ada!"));
//! assert_eq!(envelope.meta.source(), "local");
//! # Ok::<(), CallError>(())
//! # }).unwrap();
//! ```
//!
//! ## Middleware
//!
//! The application's policy around every call — rate limits, an audit log, timeouts,
//! concurrency caps, caching, its own checks — is [`middleware`] registered once
//! on the registry. It runs on every path: `execute`, `subscribe`, typed calls made with the
//! registry's context, nested calls, and every edge that serves the registry (HTTP, MCP, the
//! call protocol over Redis or WebSocket), so a policy is never written once per transport:
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use opkit::middleware::{self, Audit, RateLimit, RateLimitKey, Scope};
//! use opkit::prelude::*;
//! use std::time::Duration;
//!
//! #[operation(namespace = "notes", timeout = "5s")]
//! async fn count() -> u32 {
//!     3
//! }
//!
//! let registry = OperationRegistry::new()
//!     // Who called what, through which edge, and how it ended (`RUST_LOG=opkit::audit=info`).
//!     .with_middleware(Audit::new())
//!     // 100 calls a minute per caller, whichever edge the calls come through.
//!     .with_middleware(RateLimit::per_minute(100).keyed_by(RateLimitKey::Identity))
//!     // A check of the application's own, on one namespace.
//!     .with_middleware_for(Scope::namespace("notes"), middleware::from_fn(|call, next| async move {
//!         if call.ctx().identity().is_none() {
//!             return Err(CallError::unauthenticated("notes are private: sign in"));
//!         }
//!         next.run(call).await
//!     }));
//! registry.register_operation(count).unwrap();
//!
//! let ann = registry.context().with_identity(Identity::new("ann"));
//! assert_eq!(count::call(&ann).await?.data, 3);
//! let anonymous = registry.context();
//! assert_eq!(count::call(&anonymous).await.unwrap_err().kind, Some(ErrorKind::Unauthenticated));
//! # Ok::<(), CallError>(())
//! # }).unwrap();
//! ```
//!
//! **Edges.** Every server serves a call from outside through one front door,
//! [`OperationRegistry::serve`]: it looks the operation up once, checks access, builds the
//! context, opens the span, runs the middleware and dispatches on kind. An edge only maps its
//! wire to `(id, input, context)` and the [`Outcome`](middleware::Outcome) back, and puts what
//! it knows about the call (HTTP headers, the MCP session, the call protocol's caller) on the
//! context as an [`Edge`](edge::Edge), where operations and middleware read it. A server of
//! the application's own (gRPC, a Unix socket) does the same: see [`OperationRegistry::serve`].
//!
//! ## Map of the crate
//! - [`envelope`]: [`ResponseEnvelope`], the meta variants, detection and factories.
//! - [`OperationSpec`], [`OperationKind`], [`AccessRule`], [`Identity`]: what an operation is.
//! - [`OperationContext`]: what a handler knows about its call; [`OperationEnv`] for nested calls.
//! - [`operation`]: the attribute that turns a fn into an operation (signature shapes,
//!   arguments, the linker caveat); [`TypedOperation`] and [`Input`] for typed use.
//! - [`OperationRegistry`] and [`Handler`]: registration and the shared result pipeline.
//! - [`schema`]: schema generation, compiled validation and normalization (cast).
//! - [`CallError`] / [`ErrorCode`] / [`ErrorKind`]: the one error type, its protocol codes and
//!   the application error kinds.
//! - [`state`]: application state ([`State<T>`]) and which value a call sees.
//! - [`limits`]: every resource bound on outside data, its default and the error it gives.
//! - [`trace`]: a `tracing` span per call and W3C trace context across processes.
//! - [`middleware`]: policy around every call; [`edge`]: what the edge a call came through
//!   knows, and sessions; [`OperationRegistry::serve`]: the front door every edge uses.
//! - [`protocol`]: the call protocol ([`PendingRequestMap`], [`CallHandler`], [`PubSub`], [`MemoryPubSub`]).
//!
//! ## Architecture
//!
//! The modules, from the bottom up. Each one uses only modules listed before it, so there is
//! no cycle: the registry can be tested without the call protocol, and the protocol could
//! become a crate of its own. `tests/architecture.rs` reads the sources and fails on a
//! reference upwards; a new module must be placed in this list.
//!
//! 1. `error`: [`CallError`], its protocol [`ErrorCode`] and application [`ErrorKind`].
//! 2. [`schema`]: schema generation, compiled validation, normalization (cast).
//! 3. [`binary`]: [`Binary`](binary::Binary), bytes as an input field or output.
//! 4. [`limits`]: every resource bound on outside data and the depth check.
//! 5. `access`: [`AccessRule`] and [`Identity`].
//! 6. [`state`]: application state ([`State<T>`]) and the state map.
//! 7. [`edge`]: what the edge a call came through knows ([`Edge`](edge::Edge)) and sessions.
//! 8. [`report`]: logs and progress a handler reports to its caller.
//! 9. `spec`: [`OperationSpec`] and [`OperationKind`], what an operation is.
//! 10. [`envelope`]: [`ResponseEnvelope`], its meta, detection and factories.
//! 11. `trace_context`: the W3C trace context value (re-exported by [`trace`]).
//! 12. [`bounds`]: [`Deadline`] and [`Bounds`], the one deadline/cancellation race.
//! 13. [`elicit`]: asking the caller's user (and client) from inside an operation: the
//!     [`Elicitor`](elicit::Elicitor) an edge sets, typed answers.
//! 14. `request_id`: a context's request id (a fresh one written out when first read).
//! 15. `context`: [`OperationContext`], and the [`EnvBackend`] nested calls go to.
//! 16. `env`: [`OperationEnv`], nested calls by id through the context's backend.
//! 17. [`trace`]: the [`CallSpan`](trace::CallSpan) of each call, metrics and OpenTelemetry.
//! 18. [`middleware`]: the application's policy around every call ([`Middleware`](middleware::Middleware)),
//!     the ready-made policies, and tower layers as middleware.
//! 19. `registry`: [`OperationRegistry`], [`Handler`], the result pipeline and the
//!     `#[operation]` inventory (a local [`OperationEnv`] is made here).
//! 20. `typed`: [`TypedOperation`] and [`Input`], typed handles over the registry.
//! 21. [`protocol`]: the call protocol over [`PubSub`] (a remote [`OperationEnv`] is made here).
//! 22. `__private`: what the `#[operation]` expansion names; the top, nothing uses it.

pub mod binary;
pub mod bounds;
pub mod edge;
pub mod elicit;
pub mod envelope;
pub mod limits;
pub mod middleware;
pub mod protocol;
pub mod schema;

mod access;
mod context;
mod env;
mod error;
mod registry;
pub mod report;
mod request_id;
mod spec;
pub mod state;
pub mod trace;
mod trace_context;
mod typed;

#[doc(hidden)]
#[path = "private/mod.rs"]
pub mod __private;

pub use access::{AccessRule, Identity};
pub use bounds::{Bounds, Deadline, Interrupted};
#[doc(hidden)]
pub use context::{EnvBackend, OperationContext, new_request_id};
pub use env::OperationEnv;
pub use envelope::{ResponseEnvelope, ResponseMeta};
pub use error::{CallError, ErrorCode, ErrorKind, Violation};
#[doc = include_str!("operation.md")]
pub use opkit_macros::operation;
pub use protocol::{CallHandler, MemoryPubSub, PendingRequestMap, PubSub};
pub use registry::{EnvelopeStream, FoundOperation, Handler, OperationRegistry, RegistryError};
pub use spec::{OperationKind, OperationSpec};
pub use state::State;
pub use typed::{Input, TypedOperation};

/// The names most programs need: `use opkit::prelude::*;`.
pub mod prelude {
    pub use crate::envelope::ResponseEnvelope;
    pub use crate::{
        AccessRule, CallError, EnvelopeStream, ErrorCode, ErrorKind, Handler, Identity, Input,
        OperationContext, OperationEnv, OperationKind, OperationRegistry, OperationSpec, State,
        TypedOperation, operation,
    };
    pub use futures::{Stream, StreamExt};
}
