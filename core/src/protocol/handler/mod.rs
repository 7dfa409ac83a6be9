//! `CallHandler`: the serving side of the call protocol.
//!
//! Split by responsibility:
//!
//! - this module: the public [`CallHandler`] builder and [`CallHandlerHandle`], and the state
//!   their tasks share;
//! - `operations`: which operations are served (the refresh) and the loop that receives one
//!   operation's requests and aborts;
//! - `requests`: one request, from its `call.requested` to its last reply, and the aborts
//!   that cancel it.
//!
//! # Invariants
//!
//! **Running requests.** `running` maps the id of every request being served here to the
//! token that cancels it. `start` inserts the id before the request's future is first
//! polled, and the request's `RunningGuard` removes it when that future ends or is dropped
//! (finished, panicked, or cancelled at shutdown): an id is in `running` exactly while its
//! request is being served. A second `call.requested` with an id in `running` is a duplicate
//! and is dropped. With identity keys, a signed request's id is also remembered after it
//! ends, until its signature expires (`replays`, taken in `signed` after the signature
//! verifies): a genuine request published again is dropped however late it comes.
//!
//! **Aborts and tombstones.** A `call.aborted` for an id in `running` cancels its token: the
//! request's future or stream is dropped at its next await, and nothing more is published for
//! it (a caller that aborted listens no more). Requests and aborts travel on different
//! topics, so an abort may arrive before its request; an abort for an id not running leaves a
//! tombstone, and a request whose id has a tombstone is never started (the tombstone is
//! consumed). Tombstones are bounded: past `TOMBSTONES` (4096) the oldest is forgotten, so an
//! abort that waits longer than that many others for its request is lost, and the request
//! runs until its deadline. The abort may also belong to a request another replica took:
//! its tombstone simply ages out.
//!
//! **No race between a request and its abort.** The request and the abort of one operation
//! are both handled by that operation's one receiving task (`serve_operation`), in turn, and
//! a request id belongs to one operation: the tombstone check and the insert into `running`
//! of `start` cannot interleave with `abort`. The loop polls requests before aborts (`biased`),
//! so when both are ready, an abort never overtakes a request published before it on a
//! transport that keeps order per topic.
//!
//! **Served operations.** `served` lists the operations this handler subscribed to, each with
//! the token that stops its task and a generation. Refreshes are serialized by `refreshing`
//! (a tokio mutex: it is held across the subscribe and unsubscribe awaits; the other locks
//! are `parking_lot` ones never held across an `.await`). An operation is listed before its
//! task starts, so a task whose subscription ends at once can unlist itself; a task unlists
//! only the entry of its own generation, never a newer one for the same id.
//!
//! **Shutdown.** Dropping the [`CallHandlerHandle`] cancels `shutdown`, the parent of every
//! operation's and every request's token: the loops end (dropping their subscriptions), and
//! requests still running are answered `call.error` `ABORTED`, unlike a caller's abort.
//!
//! **At most N at once.** `permits` holds [`with_max_in_flight`](CallHandler::with_max_in_flight)
//! permits ([`DEFAULT_MAX_IN_FLIGHT`]). An operation's loop takes a permit *before* it takes
//! the next request from its subscription, and the request's `RunningGuard` holds it until
//! the request ends (a request dropped at once, a duplicate or one with a tombstone, gives
//! it back at once). So at the limit no loop reads its subscription: the requests stay in the
//! transport (on Redis, in the stream, for this replica's next read or another replica),
//! not in this process. Aborts are still read while a loop waits for a permit.
//!
//! **Timing.** The one timing default, how often operations registered later are picked up,
//! is the builder's [`with_refresh_interval`](CallHandler::with_refresh_interval)
//! ([`DEFAULT_REFRESH_INTERVAL`]); a request's deadline comes from the caller.

mod operations;
mod requests;
#[cfg(feature = "signing")]
mod signed;

use super::pubsub::{PubSub, TransportError};
use crate::context::EnvBackend;
use crate::registry::OperationRegistry;
use parking_lot::Mutex;
pub use requests::CallProtocolRequest;
use requests::Tombstones;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often a serving [`CallHandler`] looks for operations registered or removed since.
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(1);

/// How many requests a [`CallHandler`] runs at once unless
/// [`with_max_in_flight`](CallHandler::with_max_in_flight) says otherwise.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// Serves the operations of a registry on a bus: the only publisher of `call.responded`.
///
/// For every request it receives it: looks the operation up (`OPERATION_NOT_FOUND`), checks
/// the access rule against the request's identity (`ACCESS_DENIED`: the handler never runs),
/// then dispatches on the kind through [`OperationRegistry::execute`] or
/// [`OperationRegistry::subscribe`] — which validate the input (`VALIDATION_ERROR`), run the
/// handler (a panic is `EXECUTION_ERROR`), enforce the request's deadline (`TIMEOUT`) and
/// finish every result in the shared pipeline. A query or mutation is answered with one
/// `call.responded` (an envelope with `meta.isError: true` included) or one `call.error`; a
/// subscription with one `call.responded` per item, then `call.completed`, or `call.error`
/// when an item fails. `call.aborted` cancels the request: its future or stream is dropped
/// and nothing more is published for it.
///
/// Each request runs in its own tokio task. Nested calls made by handlers (`ctx.env()`) go to
/// the local registry — the trusted path, without access checks — unless
/// [`with_env`](Self::with_env) sends them elsewhere (for example through a
/// [`PendingRequestMap`](super::PendingRequestMap) on the same bus).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use opkit::prelude::*;
/// use opkit::protocol::{CallHandler, MemoryPubSub, PendingRequestMap};
/// use serde_json::json;
/// use std::sync::Arc;
///
/// let registry = OperationRegistry::new();
/// registry.register(
///     OperationSpec::new("users", "delete", OperationKind::Mutation)
///         .access(AccessRule::scopes(["users:write"])),
///     Handler::unary(|_input, _ctx| async move { Ok(json!("deleted")) }),
/// ).unwrap();
/// let bus = Arc::new(MemoryPubSub::new());
/// let handle = CallHandler::new(registry, bus.clone()).spawn().await.unwrap();
/// assert_eq!(handle.operations(), ["users.delete"]);
///
/// let map = PendingRequestMap::connect(bus).await.unwrap();
/// let anonymous = OperationContext::default();
/// let denied = map.call("users.delete", json!({}), &anonymous).await.unwrap_err();
/// assert_eq!(denied.code, ErrorCode::AccessDenied);
/// let admin = OperationContext::default().with_identity(Identity::new("ann").with_scopes(["users:write"]));
/// assert_eq!(map.call("users.delete", json!({}), &admin).await.unwrap().data, json!("deleted"));
/// # });
/// ```
pub struct CallHandler {
    registry: OperationRegistry,
    pubsub: Arc<dyn PubSub>,
    env: Option<Arc<dyn EnvBackend>>,
    refresh_interval: Option<Duration>,
    query_redelivery: bool,
    max_in_flight: usize,
    #[cfg(feature = "signing")]
    identity_keys: Option<super::signing::IdentityKeys>,
    #[cfg(feature = "signing")]
    replay_capacity: usize,
}

impl fmt::Debug for CallHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallHandler")
            .field("registry", &self.registry)
            .field("has_env", &self.env.is_some())
            .field("refresh_interval", &self.refresh_interval)
            .field("query_redelivery", &self.query_redelivery)
            .field("max_in_flight", &self.max_in_flight)
            .finish()
    }
}

impl CallHandler {
    /// A handler serving `registry` on `pubsub`; nothing happens until [`spawn`](Self::spawn).
    pub fn new(registry: OperationRegistry, pubsub: Arc<dyn PubSub>) -> Self {
        Self {
            registry,
            pubsub,
            env: None,
            refresh_interval: Some(DEFAULT_REFRESH_INTERVAL),
            query_redelivery: true,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            #[cfg(feature = "signing")]
            identity_keys: None,
            #[cfg(feature = "signing")]
            replay_capacity: super::signing::DEFAULT_REPLAY_CAPACITY,
        }
    }

    /// Requires every request that states an identity to carry a signature one of `keys`
    /// verifies (see [`signing`](super::signing)): a request whose identity is unsigned,
    /// forged, expired or signed for another request (another input, deadline, parent,
    /// operation or subscription flag) is answered `ACCESS_DENIED` before the operation is
    /// looked at, and a signed request taken before is dropped. Requests without an identity
    /// are anonymous, as before.
    #[cfg(feature = "signing")]
    #[must_use]
    pub fn with_identity_keys(mut self, keys: super::signing::IdentityKeys) -> Self {
        self.identity_keys = Some(keys);
        self
    }

    /// How many signed request ids this handler remembers, each until its signature expires,
    /// to drop replays ([`DEFAULT_REPLAY_CAPACITY`](super::signing::DEFAULT_REPLAY_CAPACITY)
    /// unless set: about 100 bytes each). When that many are live a new signed request is
    /// refused with `UNAVAILABLE` (never is a live id forgotten); raise it for more signed
    /// calls per signature lifetime (a call's timeout plus a second).
    #[cfg(feature = "signing")]
    #[must_use]
    pub fn with_replay_capacity(mut self, capacity: usize) -> Self {
        self.replay_capacity = capacity;
        self
    }

    /// How many requests run at once, at most ([`DEFAULT_MAX_IN_FLIGHT`] unless set; `0` is
    /// read as `1`). At the limit the handler takes no more requests from the bus until one
    /// ends: they wait in the transport (on Redis, in the request stream, where another
    /// replica may take them) instead of in this process's memory.
    #[must_use]
    pub fn with_max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max.max(1);
        self
    }

    /// Where nested calls of the served handlers go (`ctx.env()`); the local registry unless set.
    #[must_use]
    pub fn with_env(mut self, env: Arc<dyn EnvBackend>) -> Self {
        self.env = Some(env);
        self
    }

    /// How often to pick up operations registered or removed after `spawn`
    /// ([`DEFAULT_REFRESH_INTERVAL`] unless set); `None` only refreshes on
    /// [`CallHandlerHandle::refresh`].
    #[must_use]
    pub fn with_refresh_interval(mut self, interval: Option<Duration>) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// Whether the request topics of `Query` operations are joined with
    /// [`PubSub::subscribe_group_idempotent`] (on unless set): on a transport that supports
    /// it, a query taken by a replica that dies is handed to another replica and answered
    /// before the caller's deadline, at the price of running twice when the first replica was
    /// only stalled. Mutations and subscriptions are always joined with
    /// [`PubSub::subscribe_group`] (at most once), whatever this says.
    #[must_use]
    pub fn with_query_redelivery(mut self, on: bool) -> Self {
        self.query_redelivery = on;
        self
    }

    /// Subscribes to the request and abort topics of every operation in the registry, then
    /// serves them in background tasks until the returned handle is dropped.
    ///
    /// First checks that the registry holds the application state its operations read
    /// ([`OperationRegistry::check_states`]): a replica that lacks one refuses to start,
    /// naming the operation and the type, instead of failing calls later.
    ///
    /// When this resolves the handler is listening: requests published afterwards reach it.
    /// Must run inside a tokio runtime.
    pub async fn spawn(self) -> Result<CallHandlerHandle, SpawnError> {
        self.registry.check_states()?;
        let shared = Arc::new(HandlerState {
            registry: self.registry,
            pubsub: self.pubsub,
            env: self.env,
            running: Mutex::new(HashMap::default()),
            tombstones: Mutex::new(Tombstones::default()),
            shutdown: CancellationToken::new(),
            served: Mutex::new(HashMap::new()),
            refreshing: tokio::sync::Mutex::new(()),
            generation: AtomicU64::new(0),
            query_redelivery: self.query_redelivery,
            permits: Arc::new(tokio::sync::Semaphore::new(self.max_in_flight)),
            #[cfg(feature = "signing")]
            identity_keys: self.identity_keys,
            #[cfg(feature = "signing")]
            replays: Mutex::new(super::signing::Replays::new(self.replay_capacity)),
        });
        let handle = CallHandlerHandle {
            shared: shared.clone(),
        };
        shared.refresh().await?;
        if let Some(interval) = self.refresh_interval {
            tokio::spawn(operations::refresh_periodically(shared, interval));
        }
        Ok(handle)
    }
}

/// Why a [`CallHandler`] did not start.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// Subscribing to the operations' topics failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// An operation reads application state the registry was not given.
    #[error(transparent)]
    Registry(#[from] crate::registry::RegistryError),
}

impl From<SpawnError> for crate::CallError {
    fn from(error: SpawnError) -> Self {
        match error {
            SpawnError::Transport(error) => error.into(),
            SpawnError::Registry(error) => crate::CallError::execution(error.to_string()),
        }
    }
}

/// A running [`CallHandler`]. Dropping it stops the handler: it unsubscribes, and requests
/// still running are cancelled and answered with `call.error` `ABORTED`.
pub struct CallHandlerHandle {
    shared: Arc<HandlerState>,
}

impl fmt::Debug for CallHandlerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallHandlerHandle")
            .field("operations", &self.operations())
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

impl Drop for CallHandlerHandle {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}

impl CallHandlerHandle {
    /// Serves the operations registered since the last refresh and stops serving the removed
    /// ones, now.
    pub async fn refresh(&self) -> Result<(), TransportError> {
        self.shared.refresh().await
    }

    /// How many requests are running.
    pub fn in_flight(&self) -> usize {
        self.shared.running.lock().len()
    }

    /// The ids of the operations served, sorted.
    pub fn operations(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.shared.served.lock().keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Stops the handler (the same as dropping the handle).
    pub fn stop(self) {}
}

/// The state a handler's tasks share (see the module docs for the invariants).
struct HandlerState {
    registry: OperationRegistry,
    pubsub: Arc<dyn PubSub>,
    env: Option<Arc<dyn EnvBackend>>,
    /// Running requests by id, with the token that cancels each.
    running: Mutex<HashMap<Arc<str>, CancellationToken, foldhash::fast::RandomState>>,
    /// `call.aborted` events for requests not (yet) running here.
    tombstones: Mutex<Tombstones>,
    /// Cancelled when the handle is dropped; the parent of every other token.
    shutdown: CancellationToken,
    /// Served operations by id.
    served: Mutex<HashMap<String, operations::Served>>,
    /// Serializes refreshes.
    refreshing: tokio::sync::Mutex<()>,
    /// The next generation of a served operation.
    generation: AtomicU64,
    /// Whether query request topics are joined with `subscribe_group_idempotent`.
    query_redelivery: bool,
    /// One permit per request that may run at once; never closed.
    permits: Arc<tokio::sync::Semaphore>,
    /// What verifies the identities of requests, when they must be signed.
    #[cfg(feature = "signing")]
    identity_keys: Option<super::signing::IdentityKeys>,
    /// The signed requests taken, until their signatures expire.
    #[cfg(feature = "signing")]
    replays: Mutex<super::signing::Replays>,
}
