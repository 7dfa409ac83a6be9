//! Middleware: the application's policy around every call, registered once and applied on
//! every path — [`execute`](crate::OperationRegistry::execute),
//! [`subscribe`](crate::OperationRegistry::subscribe), typed calls made with a registry's
//! context, nested calls through an env, and every served edge (HTTP, MCP, the call protocol,
//! and an application's own edge through [`OperationRegistry::serve`](crate::OperationRegistry::serve)).
//!
//! A [`Middleware`] gets the [`Call`] (the operation's spec, the caller's context with its
//! identity and [`edge`](crate::edge), and the input) and the [`Next`] step. It can
//!
//! * reject the call with any [`CallError`] (the handler never runs),
//! * add to the context ([`Call::ctx_mut`]: a state value, a shorter deadline, a session),
//! * read or replace the input ([`Call::input`], [`Call::set_input`]),
//! * observe or replace the result ([`Outcome`], [`Reply`]), and
//! * wrap a subscription's stream, item by item ([`Outcome::map_items`]).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use opkit::middleware::{self, Scope};
//! use opkit::prelude::*;
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! #[operation(namespace = "math")]
//! async fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! let calls = Arc::new(AtomicUsize::new(0));
//! let counted = calls.clone();
//! let registry = OperationRegistry::new()
//!     // Runs around every call of every operation: counts them.
//!     .with_middleware(middleware::from_fn(move |call, next| {
//!         counted.fetch_add(1, Ordering::Relaxed);
//!         next.run(call)
//!     }))
//!     // Runs around the calls of `math.*` only: refuses callers without an identity.
//!     .with_middleware_for(Scope::namespace("math"), middleware::from_fn(|call, next| async move {
//!         if call.ctx().identity().is_none() {
//!             return Err(CallError::unauthenticated("sign in first"));
//!         }
//!         next.run(call).await
//!     }));
//! registry.register_operation(add).unwrap();
//!
//! let anonymous = registry.context();
//! let error = registry.execute("math.add", serde_json::json!({"a": 1, "b": 2}), &anonymous).await.unwrap_err();
//! assert_eq!(error.kind, Some(ErrorKind::Unauthenticated));
//!
//! // Typed calls made with the registry's context go through the same middleware.
//! let ann = registry.context().with_identity(Identity::new("ann"));
//! assert_eq!(add::call(&ann, 1, 2).await.unwrap().data, 3);
//! assert_eq!(calls.load(Ordering::Relaxed), 2);
//! # });
//! ```
//!
//! # Order
//!
//! Middleware runs in the order it was registered, the first registered outermost: it sees
//! the call first and the result last. A [`Scope`] only decides whether a middleware runs
//! for a call (the whole registry, a namespace, one operation, or the operations that name a
//! layer in `#[operation(layer = "..")]`), never where it runs. Access checks (on served
//! calls) come before every middleware; the input is validated after the last one, just
//! before the handler starts, so a middleware sees the input as the caller sent it.
//!
//! # Ready-made policies
//!
//! [`RateLimit`] (per identity and/or operation, `RATE_LIMITED` with the time to wait),
//! [`ConcurrencyLimit`], [`Timeout`], [`Cache`] (query results by operation, input and
//! identity) and [`Audit`] (one `tracing` record per call). The per-operation timeout is also
//! an attribute: `#[operation(timeout = "5s")]`.
//!
//! # tower
//!
//! With the `tower` feature, a tower [`Layer`](::tower::Layer) — `ConcurrencyLimitLayer`,
//! `TimeoutLayer`, `LoadShedLayer`, `RateLimitLayer`, or the application's own — is a
//! middleware through [`tower_layer`]: its service is built once and shared by every call.
//! opkit's own trait is not a tower `Service` itself because a call's result can be a stream
//! and a typed value, and a middleware needs the call's spec and context, which a tower
//! request type would have to carry anyway; [`tower_layer`] gives tower's layers that
//! request ([`TowerRequest`]) and maps their errors (`Elapsed` → `TIMEOUT`, `Overloaded` →
//! `UNAVAILABLE`).
//!
//! # Cost
//!
//! A registry with no middleware runs exactly as before: one atomic load decides. With
//! middleware, each call boxes one future per middleware it passes through.
// The tower section links items that exist only with the `tower` feature.
#![cfg_attr(not(feature = "tower"), allow(rustdoc::broken_intra_doc_links))]

mod call;
mod chain;
mod outcome;
mod policies;
#[cfg(feature = "tower")]
mod tower;

pub use call::Call;
pub(crate) use call::{CallInput, Endpoint, TypedInput};
pub use chain::Next;
pub(crate) use chain::{Chain, Layers};
pub use outcome::{CacheHint, CacheScope, Outcome, Reply, ReplyStream};
pub(crate) use outcome::{Data, TypedOrJson, TypedReply, typed_data};
pub use policies::{Audit, AuditRecord, Cache, ConcurrencyLimit, RateLimit, RateLimitKey, Timeout};
#[cfg(feature = "tower")]
pub use tower::{TowerMiddleware, TowerNext, TowerRequest, tower_layer};

use crate::error::CallError;
use crate::spec::OperationSpec;
use futures::future::BoxFuture;
use std::future::Future;

/// Code that runs around calls: see the [module docs](self).
///
/// Implement it for a type of your own, or make one from a closure with [`from_fn`].
pub trait Middleware: Send + Sync + 'static {
    /// Handles `call`: pass it on with `next.run(call)` (changed or not), or answer it
    /// without running the rest of the chain.
    fn handle(&self, call: Call, next: Next) -> BoxFuture<'static, Result<Outcome, CallError>>;
}

/// A middleware made from a closure (see [`from_fn`]).
pub struct FromFn<F>(F);

impl<F> std::fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FromFn")
    }
}

/// A middleware from a closure `|call, next| async move { .. next.run(call).await }`.
pub fn from_fn<F, Fut>(handle: F) -> FromFn<F>
where
    F: Fn(Call, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Outcome, CallError>> + Send + 'static,
{
    FromFn(handle)
}

impl<F, Fut> Middleware for FromFn<F>
where
    F: Fn(Call, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Outcome, CallError>> + Send + 'static,
{
    fn handle(&self, call: Call, next: Next) -> BoxFuture<'static, Result<Outcome, CallError>> {
        Box::pin((self.0)(call, next))
    }
}

/// Which calls a middleware runs for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every operation of the registry.
    All,
    /// The operations of one namespace (and of the namespaces below it: `notes` covers
    /// `notes.admin.purge`).
    Namespace(String),
    /// One operation, by id.
    Operation(String),
    /// The operations that name this layer: `#[operation(layer = "expensive")]` or
    /// [`OperationSpec::layer`].
    Layer(String),
}

impl Scope {
    /// [`Scope::Namespace`].
    pub fn namespace(namespace: impl Into<String>) -> Self {
        Self::Namespace(namespace.into())
    }

    /// [`Scope::Operation`].
    pub fn operation(id: impl Into<String>) -> Self {
        Self::Operation(id.into())
    }

    /// [`Scope::Layer`].
    pub fn layer(name: impl Into<String>) -> Self {
        Self::Layer(name.into())
    }

    /// `true` when a middleware of this scope runs for the operation `id` of `spec`.
    pub fn covers(&self, id: &str, spec: &OperationSpec) -> bool {
        match self {
            Self::All => true,
            Self::Namespace(namespace) => {
                spec.namespace == *namespace
                    || spec
                        .namespace
                        .strip_prefix(namespace.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
            }
            Self::Operation(wanted) => id == wanted,
            Self::Layer(name) => spec.layers.iter().any(|layer| layer == name),
        }
    }
}
