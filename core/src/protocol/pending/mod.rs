//! `PendingRequestMap`: the caller's side of the call protocol.
//!
//! A map publishes `call.requested` for each call or subscription and routes what arrives on
//! its own reply topic back to the one waiting for it. It is split by responsibility:
//!
//! - this module: [`PendingOptions`] and the public [`PendingRequestMap`];
//! - `table`: the pending entries, the only state shared between the callers and the listener;
//! - `listen`: the listener task, which decodes the reply topic and acts on the table;
//! - `call`: starting a call or subscription (the entry, its guard, `call.requested`);
//! - `stream`: the stream a remote subscription's caller polls.
//!
//! # Invariants
//!
//! **One outcome per request, decided by whoever removes its entry.** An entry is keyed by
//! the request's sequence number (`<callerId>:<seq>`) and is inserted *before*
//! `call.requested` is published, so a reply that overtakes the publish finds it. It leaves
//! the table exactly once, under the table lock, by one of:
//!
//! - the listener, on the reply that ends the request (`call.responded` of a query or
//!   mutation, `call.completed`, `call.error`, an undecodable reply naming the request);
//! - [`Table::close`](table::Table::close), when the reply subscription ends or the map is
//!   dropped: every entry is taken out and failed with `TRANSPORT_ERROR`, and the table
//!   refuses new entries from then on (`closed` is never cleared);
//! - the request's `PendingGuard`, when the caller stops waiting (its future or stream is
//!   dropped, its deadline passes, its context is cancelled) or its stream has ended.
//!
//! Whoever removes the entry owns the outcome: the listener sends it to the waiting caller
//! (after releasing the lock); the guard, **only when it was the one to remove the entry**,
//! publishes `call.aborted`. So `call.aborted` is never published for a request whose
//! outcome already arrived, and a caller never sees a reply after it gave up. The guard does
//! not publish it either when the request cannot have reached a handler (encoding failed,
//! the publish failed as "not sent" or reached nobody): `publish_abort` is cleared on those
//! paths, and only there. A publish that failed otherwise, or that the call's bounds stopped
//! half-way, may have delivered the request, so its guard keeps `publish_abort`.
//!
//! **The publish runs under the call's bounds.** `call_in` runs the publish and the wait for
//! the reply inside one [`Bounds::run`](crate::Bounds::run) (one timer), so a call ends by
//! its deadline whatever the transport does; `subscribe_in` bounds its publish the same way.
//!
//! **`call.aborted` is published from a spawned task**, on the runtime the map was connected
//! on (a guard may drop outside any runtime context): the caller's error is returned before
//! the abort is on the bus, and a failed publish is only logged. The handler ends a request
//! on its own deadline too, so nothing depends on the abort arriving.
//!
//! **Order of a subscription's items.** One listener task reads the reply topic, and an
//! item is queued to its stream while the table lock is held, so a stream yields the items
//! in the order the reply topic delivered them. Its channel is unbounded (no flow control:
//! see the [protocol docs](super)). A stream entry stays in the table across items; only its
//! end (or its guard) removes it.
//!
//! **Who owns what.** The listener task owns the reply subscription and is aborted when the
//! last [`PendingRequestMap`] clone and the last guard are gone (each guard keeps the map's
//! inner state alive, so a waiting call always has its listener). Callers own their entry's
//! receiving end and their guard. Sequence numbers come from one atomic counter (`Relaxed`:
//! only uniqueness matters).
//!
//! **Timing.** Every timing default is a field of [`PendingOptions`]: the timeout of a call
//! whose context has no deadline ([`DEFAULT_TIMEOUT`], also sent on the wire so the handler
//! stops at the same instant) and the idle timeout of a subscription without a deadline
//! (the same default). A context's own deadline always wins.

mod call;
mod guard;
mod listen;
mod stream;
mod table;

use super::pubsub::{PubSub, TransportError};
use super::topics;
use crate::context::{EnvBackend, EnvelopeStream, OperationContext};
use crate::env::OperationEnv;
use crate::envelope::ResponseEnvelope;
use crate::error::CallError;
use crate::limits::DEFAULT_MAX_PENDING;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use table::Table;

/// The keys a map signs requests and aborts with and verifies replies with.
#[cfg(feature = "signing")]
type Keys = super::signing::IdentityKeys;
/// Without the `signing` feature there are no keys.
#[cfg(not(feature = "signing"))]
#[derive(Clone)]
enum Keys {}

/// How long a call may take when its context has no deadline.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings of a [`PendingRequestMap`].
///
/// ```
/// use opkit::protocol::PendingOptions;
/// use std::time::Duration;
/// let options = PendingOptions::default()
///     .with_default_timeout(Duration::from_secs(5))
///     .with_subscription_idle_timeout(None)
///     .with_caller_id("billing-1")
///     .with_max_pending(1_000);
/// assert_eq!(options.default_timeout(), Duration::from_secs(5));
/// assert_eq!(options.max_pending(), 1_000);
/// ```
#[derive(Debug, Clone)]
pub struct PendingOptions {
    default_timeout: Duration,
    subscription_idle_timeout: Option<Duration>,
    caller_id: Option<String>,
    max_pending: usize,
    max_stream_buffer: usize,
    #[cfg(feature = "signing")]
    identity_keys: Option<super::signing::IdentityKeys>,
}

impl Default for PendingOptions {
    fn default() -> Self {
        Self {
            default_timeout: DEFAULT_TIMEOUT,
            subscription_idle_timeout: Some(DEFAULT_TIMEOUT),
            caller_id: None,
            max_pending: DEFAULT_MAX_PENDING,
            max_stream_buffer: crate::limits::DEFAULT_MAX_STREAM_BUFFER,
            #[cfg(feature = "signing")]
            identity_keys: None,
        }
    }
}

impl PendingOptions {
    /// How long a query or mutation may take when its context has no deadline
    /// ([`DEFAULT_TIMEOUT`] unless set). The resulting deadline is also sent on the wire, so
    /// the handler stops at the same time.
    #[must_use]
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// For subscriptions whose context has no deadline: the longest wait for the next event
    /// before the stream ends with `TIMEOUT` (so a handler that died cannot leave the caller
    /// waiting forever). `None` waits forever; the default is [`DEFAULT_TIMEOUT`].
    #[must_use]
    pub fn with_subscription_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.subscription_idle_timeout = timeout;
        self
    }

    /// The caller id request ids are minted from (a random one unless set).
    ///
    /// # Panics
    ///
    /// When `caller_id` is not 1 to 128 characters of `[A-Za-z0-9_-]`
    /// (see [`topics::is_valid_caller_id`]).
    #[must_use]
    pub fn with_caller_id(mut self, caller_id: impl Into<String>) -> Self {
        let caller_id = caller_id.into();
        assert!(
            topics::is_valid_caller_id(&caller_id),
            "invalid caller id {caller_id:?}: use 1 to {} characters of [A-Za-z0-9_-]",
            topics::MAX_CALLER_ID_LEN
        );
        self.caller_id = Some(caller_id);
        self
    }

    /// How many calls and subscriptions may wait for replies at once ([`DEFAULT_MAX_PENDING`]
    /// unless set). A call or subscription started while that many are pending fails at once
    /// with `TRANSPORT_ERROR` (the request is not published); the pending ones are
    /// unaffected. `0` refuses every call.
    #[must_use]
    pub fn with_max_pending(mut self, max_pending: usize) -> Self {
        self.max_pending = max_pending;
        self
    }

    /// The default timeout of queries and mutations.
    pub fn default_timeout(&self) -> Duration {
        self.default_timeout
    }

    /// The most calls and subscriptions that may wait for replies at once.
    pub fn max_pending(&self) -> usize {
        self.max_pending
    }

    /// How many bytes of one remote subscription's items may wait for a caller that does not
    /// poll its stream ([`DEFAULT_MAX_STREAM_BUFFER`](crate::limits::DEFAULT_MAX_STREAM_BUFFER)
    /// unless set). Past it the stream yields what it holds, then ends with
    /// `TRANSPORT_ERROR` naming the limit, and the subscription is aborted: a caller that
    /// stops polling cannot grow without bound.
    #[must_use]
    pub fn with_max_stream_buffer(mut self, bytes: usize) -> Self {
        self.max_stream_buffer = bytes;
        self
    }

    /// Signs the identity of every request with `keys`' signing key (see
    /// [`signing`](super::signing)), so that handlers that require signed identities accept
    /// it, and every `call.aborted` it publishes (so that they cancel a signed request).
    /// Requests without an identity carry no signature. When `keys` verify replies (an HMAC
    /// secret, or a replica's reply key), only replies signed by a handler are taken: a reply
    /// that is unsigned, forged or out of turn is dropped (logged), and the call goes on
    /// waiting for the genuine one.
    #[cfg(feature = "signing")]
    #[must_use]
    pub fn with_identity_keys(mut self, keys: super::signing::IdentityKeys) -> Self {
        self.identity_keys = Some(keys);
        self
    }

    /// The idle timeout of subscriptions without a deadline.
    pub fn subscription_idle_timeout(&self) -> Option<Duration> {
        self.subscription_idle_timeout
    }
}

/// The caller's side of the call protocol: publishes `call.requested`, routes the replies
/// that arrive on this caller's reply topic to the waiting calls and subscriptions.
///
/// Every call ends in exactly one outcome (see the [module docs](super) for the guarantees),
/// and its entry is removed on every path. Cloning is cheap; clones share the map. Implements
/// [`EnvBackend`], so [`OperationEnv::remote`](crate::OperationEnv::remote) offers remote
/// operations through the same interface as a local registry.
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
///     OperationSpec::new("math", "double", OperationKind::Query),
///     Handler::unary(|input, _ctx| async move { Ok(json!(input["n"].as_i64().unwrap_or(0) * 2)) }),
/// ).unwrap();
/// let bus = Arc::new(MemoryPubSub::new());
/// let _handler = CallHandler::new(registry, bus.clone()).spawn().await.unwrap();
///
/// let map = PendingRequestMap::connect(bus).await.unwrap();
/// let envelope = map.call("math.double", json!({"n": 21}), &OperationContext::default()).await.unwrap();
/// assert_eq!(envelope.data, json!(42));
/// let missing = map.call("math.nope", json!({}), &OperationContext::default()).await.unwrap_err();
/// assert_eq!(missing.code, ErrorCode::OperationNotFound);
/// assert_eq!(map.pending_count(), 0);
/// # });
/// ```
#[derive(Clone)]
pub struct PendingRequestMap {
    inner: Arc<MapInner>,
}

/// What every clone of a map, and every pending request's guard, shares.
struct MapInner {
    /// The bus requests and aborts are published on.
    pubsub: Arc<dyn PubSub>,
    caller_id: String,
    reply_topic: String,
    next_seq: AtomicU64,
    /// The pending entries, shared with the listener task (see the module docs).
    table: Arc<Table>,
    default_timeout: Duration,
    idle_timeout: Option<Duration>,
    /// The runtime `call.aborted` is published on (a guard may drop outside of one).
    runtime: tokio::runtime::Handle,
    /// What signs the identities of requests.
    #[cfg(feature = "signing")]
    identity_keys: Option<super::signing::IdentityKeys>,
    /// The listener task, aborted when this is dropped (no request is pending any more).
    listener: tokio::task::AbortHandle,
}

impl MapInner {
    /// The keys this map signs with, if any.
    fn keys(&self) -> Option<&Keys> {
        #[cfg(feature = "signing")]
        return self.identity_keys.as_ref();
        #[cfg(not(feature = "signing"))]
        None
    }
}

impl Drop for MapInner {
    fn drop(&mut self) {
        self.listener.abort();
        self.table
            .close(CallError::transport("the PendingRequestMap was dropped"));
    }
}

impl fmt::Debug for PendingRequestMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingRequestMap")
            .field("caller_id", &self.inner.caller_id)
            .field("pending", &self.pending_count())
            .finish()
    }
}

impl PendingRequestMap {
    /// Subscribes to a fresh reply topic on `pubsub` and starts routing replies.
    ///
    /// Must run inside a tokio runtime (the reply listener is a task on it).
    pub async fn connect(pubsub: Arc<dyn PubSub>) -> Result<Self, TransportError> {
        Self::connect_with(pubsub, PendingOptions::default()).await
    }

    /// [`connect`](Self::connect) with settings.
    pub async fn connect_with(
        pubsub: Arc<dyn PubSub>,
        options: PendingOptions,
    ) -> Result<Self, TransportError> {
        let caller_id = options.caller_id.unwrap_or_else(topics::new_caller_id);
        let reply_topic = topics::reply_topic(&caller_id);
        let replies = pubsub.subscribe(&reply_topic).await?;
        let table = Arc::new(Table::new(
            format!("{caller_id}:"),
            options.max_pending,
            options.max_stream_buffer,
        ));
        #[cfg(feature = "signing")]
        let keys = options.identity_keys.clone();
        #[cfg(not(feature = "signing"))]
        let keys: Option<Keys> = None;
        let listener = tokio::spawn(listen::listen(table.clone(), replies, pubsub.clone(), keys))
            .abort_handle();
        Ok(Self {
            inner: Arc::new(MapInner {
                pubsub,
                caller_id,
                reply_topic,
                next_seq: AtomicU64::new(1),
                table,
                default_timeout: options.default_timeout,
                idle_timeout: options.subscription_idle_timeout,
                runtime: tokio::runtime::Handle::current(),
                listener,
                #[cfg(feature = "signing")]
                identity_keys: options.identity_keys,
            }),
        })
    }

    /// Calls a query or mutation and waits for its envelope or its error.
    ///
    /// `ctx` is the context of this call: its identity, deadline (or the default timeout) and
    /// parent request id travel on the wire, and cancelling it aborts the call. The protocol
    /// request id is minted here (`<callerId>:<n>`), not taken from `ctx`. Dropping the future
    /// before it resolves publishes `call.aborted`.
    ///
    /// Nothing is published, and the call fails at once, when the input nests deeper than
    /// [`MAX_INPUT_DEPTH`](crate::limits::MAX_INPUT_DEPTH) (`VALIDATION_ERROR`) or when
    /// [`max_pending`](PendingOptions::with_max_pending) requests are already waiting
    /// (`TRANSPORT_ERROR`). The same holds for [`subscribe`](Self::subscribe).
    pub fn call<'a>(
        &self,
        id: &str,
        input: Value,
        ctx: &'a OperationContext,
    ) -> impl Future<Output = Result<ResponseEnvelope, CallError>> + Send + use<'a> {
        // Not an `async fn`: its future would hold the arguments beside the call's future
        // that takes them (the context borrowed, not copied).
        call::call(self.inner.clone(), Arc::from(id), input, ctx)
    }

    /// Starts a subscription: resolves once the request is published (errors of the handler,
    /// including `OPERATION_NOT_FOUND`, `ACCESS_DENIED` and `VALIDATION_ERROR`, arrive as the
    /// stream's one and last item). The stream yields one envelope per `call.responded` and
    /// ends after `call.completed`, after an error item, or with `TIMEOUT` / `ABORTED` items.
    /// Dropping it before it ends publishes `call.aborted`.
    pub async fn subscribe(
        &self,
        id: &str,
        input: Value,
        ctx: &OperationContext,
    ) -> Result<EnvelopeStream, CallError> {
        call::subscribe(self.inner.clone(), Arc::from(id), input, ctx.clone()).await
    }

    /// The inbound half, for tests: delivers `output` to the pending request `request_id` as
    /// the reply listener does for every `call.responded` (feature `testing`).
    ///
    /// Refuses (with a `VALIDATION_ERROR` naming what is wrong) any `output` that
    /// [`is_response_envelope`](crate::envelope::is_response_envelope) rejects. Returns
    /// `Ok(false)` when no such request is pending here (it finished, timed out, was aborted,
    /// or belongs to another caller): late and duplicate replies are expected and ignored.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use opkit::protocol::{MemoryPubSub, PendingRequestMap};
    /// let map = PendingRequestMap::connect(std::sync::Arc::new(MemoryPubSub::new())).await.unwrap();
    /// let refused = map.respond("x:1", serde_json::json!({"data": 1})).unwrap_err();
    /// assert_eq!(refused.code, opkit::ErrorCode::ValidationError);
    /// assert!(refused.message.contains("must have a `meta` key"));
    /// # });
    /// ```
    #[cfg(feature = "testing")]
    pub fn respond(&self, request_id: &str, output: Value) -> Result<bool, CallError> {
        self.inner.table.respond(request_id, output)
    }

    /// How many calls and subscriptions are waiting for replies.
    pub fn pending_count(&self) -> usize {
        self.inner.table.len()
    }

    /// This caller's id: the prefix of every request id it mints.
    pub fn caller_id(&self) -> &str {
        &self.inner.caller_id
    }

    /// The topic this caller receives its replies on (`opkit.reply.<callerId>`).
    pub fn reply_topic(&self) -> &str {
        &self.inner.reply_topic
    }

    /// The timeout of calls whose context has no deadline.
    pub fn default_timeout(&self) -> Duration {
        self.inner.default_timeout
    }
}

impl OperationEnv {
    /// An env over the call protocol: calls go out through `map` and are served by whichever
    /// [`CallHandler`](crate::protocol::CallHandler) serves the operation (access-checked there).
    pub fn remote(map: PendingRequestMap) -> Self {
        Self::new(Arc::new(map))
    }
}

impl EnvBackend for PendingRequestMap {
    fn call(
        &self,
        id: &str,
        input: Value,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<ResponseEnvelope, CallError>> {
        call::call(self.inner.clone(), Arc::from(id), input, ctx).boxed()
    }

    fn subscribe(
        &self,
        id: &str,
        input: Value,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<EnvelopeStream, CallError>> {
        call::subscribe(self.inner.clone(), Arc::from(id), input, ctx).boxed()
    }
}
