//! The call protocol: calling operations across processes over a pub/sub bus.
//!
//! A caller's [`PendingRequestMap`] publishes `call.requested`; a [`CallHandler`] serving the
//! operation runs it through its [`OperationRegistry`](crate::OperationRegistry) and answers
//! with `call.responded` (one per item for subscriptions), `call.completed` or `call.error`;
//! a caller that gives up publishes `call.aborted`. The events and their exact JSON are
//! [`CallEvent`]; the transport is any [`PubSub`] ([`MemoryPubSub`] in process; Redis and
//! WebSocket in `opkit-adapters`), carrying each event as the bytes of its JSON.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use futures::StreamExt;
//! use opkit::prelude::*;
//! use opkit::protocol::{CallHandler, MemoryPubSub, PendingRequestMap};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! let registry = OperationRegistry::new();
//! registry.register(
//!     OperationSpec::new("clock", "count", OperationKind::Subscription),
//!     Handler::stream(|input, _ctx| {
//!         let to = input["to"].as_u64().unwrap_or(0);
//!         futures::stream::iter((1..=to).map(|n| Ok(json!(n))))
//!     }),
//! ).unwrap();
//!
//! let bus = Arc::new(MemoryPubSub::new());
//! // Two replicas on one bus: each request is executed by exactly one of them.
//! let _a = CallHandler::new(registry.clone(), bus.clone()).spawn().await.unwrap();
//! let _b = CallHandler::new(registry, bus.clone()).spawn().await.unwrap();
//!
//! let env = OperationEnv::remote(PendingRequestMap::connect(bus).await.unwrap());
//! let items: Vec<_> = env.subscribe("clock.count", json!({"to": 3})).await.unwrap()
//!     .map(|item| item.unwrap().data)
//!     .collect().await;
//! assert_eq!(items, [json!(1), json!(2), json!(3)]);
//! # });
//! ```
//!
//! # Topic layout
//!
//! Each operation has a request topic and an abort topic, and each caller a reply topic: the
//! table of the topics, their events, publishers and listeners is in [`topics`].
//!
//! Why this layout:
//!
//! - **Requests per operation, in a consumer group.** Every [`CallHandler`] joins the group
//!   [`topics::HANDLER_GROUP`] on the request topic of each operation it serves, so N replicas
//!   share the work and each request is handed to exactly one of them (competing consumers,
//!   [`PubSub::subscribe_group`]). Per-operation topics let different services share one bus:
//!   a request only reaches processes that serve its operation. A handler picks up operations
//!   registered (or removed) later on its next refresh ([`DEFAULT_REFRESH_INTERVAL`], or
//!   [`CallHandlerHandle::refresh`]); a request that reaches a handler whose registry no longer
//!   has the operation is answered `OPERATION_NOT_FOUND`. When the transport can tell that
//!   nobody listens on the request topic ([`Receipt`]), the caller fails at once with
//!   `OPERATION_NOT_FOUND` instead of waiting for its deadline.
//! - **Replies per caller.** The five events' `call.requested` has no reply-to field (and its JSON
//!   must stay exact), so the caller travels in the request id: a [`PendingRequestMap`] mints
//!   ids as `<callerId>:<n>` and listens on `opkit.reply.<callerId>` only; the handler answers
//!   on the reply topic of the part before the last `:` ([`topics::reply_topic_for`]). A
//!   caller therefore receives the events of its own requests and nobody else's, and the
//!   cost of a reply does not grow with the number of callers. A request id without a valid
//!   caller part (`[A-Za-z0-9_-]{1,128}` before the last `:`) is answered on the shared
//!   fallback topic `opkit.reply`, for foreign clients that filter by request id.
//! - **Aborts per operation, broadcast.** The caller does not know which replica took its
//!   request, so `call.aborted` goes to every handler serving the operation; the one running
//!   the request cancels it, the others remember the id for a while (an abort may overtake its
//!   request on transports that do not order across topics) and drop the request if it comes.
//!
//! # Delivery guarantees
//!
//! - **Events are delivered at most once.** The protocol neither acknowledges nor retries: a
//!   message the transport loses stays lost ([`MemoryPubSub`] loses nothing while the
//!   subscriber lives). Events of one request from one publisher arrive in publish order on
//!   transports that keep per-topic order (the memory, Redis and WebSocket transports do),
//!   so a subscription's items arrive in order and before its `call.completed`.
//! - **Each request is executed at most once**: the request topic's group hands it to one
//!   handler, and a handler ignores a request id it is already running. Exactly once when a
//!   handler serving the operation is up and the transport delivers the request. The one
//!   exception is opt-out and limited to `Query` operations: their request topics are joined
//!   with [`PubSub::subscribe_group_idempotent`], and a transport that redelivers (Redis) may
//!   hand a query held by a replica it believes dead to another replica, so a query may run
//!   twice — harmless for a read — rather than be lost ([`CallHandler::with_query_redelivery`]).
//!   Mutations and subscriptions are never redelivered.
//! - **Every call ends, exactly once.** A call resolves with the first of: its reply, the
//!   deadline (`TIMEOUT`; a context without one gets the map's default timeout,
//!   [`DEFAULT_TIMEOUT`], which is sent on the wire so the handler stops too), its context's
//!   cancellation (`ABORTED`), a failed publish (`TRANSPORT_ERROR`, see below), nobody listening
//!   (`OPERATION_NOT_FOUND`, when the transport knows), or the loss of the reply subscription
//!   (`TRANSPORT_ERROR`). Later or duplicate replies for the request are ignored.
//! - **The publish of the request is bounded too.** A call's deadline (or cancellation)
//!   covers the publish of its `call.requested` as well as the wait for the reply, for calls
//!   and subscriptions alike: a transport whose connection went silent cannot hold a call
//!   past its deadline, whatever its own timeouts. A call stopped while its request was being
//!   published ends with `TIMEOUT` (or `ABORTED`) with `details: {"delivery": "unknown"}`,
//!   and `call.aborted` is published for it. The slack past the deadline is the scheduling
//!   of the caller's task (milliseconds).
//! - **A failed publish says whether the request may have run** ([`Delivery`], from the
//!   transport's [`TransportError::delivery`]). The error is `TRANSPORT_ERROR` either way
//!   (the wire is unchanged: the seven codes stay), with `details.delivery`:
//!
//!   | `details.delivery` | meaning | `call.aborted` | retry a mutation? |
//!   |---|---|---|---|
//!   | `"notSent"` | the request never left the process (no connection could be had, the transport refused it, it reached nobody): no handler can run it | not published | yes: it cannot run twice |
//!   | `"unknown"` | the request may have been written (the connection failed or went silent after the write, the answer never came): it may run, now or when the network heals | published, so a handler that gets the request later drops it (a handler remembers aborted ids, and checks the deadline before running) | only if running it twice is harmless (an idempotent mutation, or one carrying its own id) |
//!
//!   A transport that cannot tell reports `unknown` ([`TransportError::new`]); only a
//!   failure before anything was written is `notSent` ([`TransportError::not_sent`]).
//!   Queries and subscriptions are safe to retry either way. `TIMEOUT` always means the
//!   outcome is unknown. The other `TRANSPORT_ERROR`s that fail a call at once (`max_pending`, a
//!   map whose reply subscription is gone) fail it before anything is published.
//! - **A handler that dies mid-call** sends nothing more: the caller gets `TIMEOUT` at its
//!   deadline, never a hang. A subscription without a deadline ends with `TIMEOUT` after the
//!   idle timeout without an event ([`PendingOptions::with_subscription_idle_timeout`]).
//!   A handler that is stopped (its [`CallHandlerHandle`] dropped) answers its running
//!   requests with `ABORTED`.
//! - **Giving up is signalled.** Dropping a call's future or a subscription's stream before it
//!   ends, its deadline passing, or its context being cancelled removes the pending entry and
//!   publishes `call.aborted`; the handler then drops the handler's future or stream (so its
//!   `Drop` runs and nested calls it made are aborted in turn). A subscription whose replies
//!   reach nobody (the transport says so) is stopped by the handler as well.
//! - **Deadlines are absolute** (epoch milliseconds): caller and handler enforce the same
//!   instant, each with its own clock, so their clocks should agree to well within a timeout.
//! - **No pending entry outlives its call**: entries are removed on every path (reply, error,
//!   timeout, abort, drop), and [`PendingRequestMap::pending_count`] reaches zero.
//! - **Bounded waiting.** At most [`DEFAULT_MAX_PENDING`] calls and subscriptions wait on
//!   one map ([`PendingOptions::with_max_pending`]); past it a new call fails at once with
//!   `TRANSPORT_ERROR`. An input nested deeper than
//!   [`MAX_INPUT_DEPTH`](crate::limits::MAX_INPUT_DEPTH) fails with `VALIDATION_ERROR` before
//!   it is sent. An event too deeply nested to parse is answered with an error for its request
//!   id when the id can be read, so neither side waits for a deadline.
//! - **No flow control.** A handler publishes a subscription's items as fast as its stream
//!   yields them; the caller queues them (unbounded) until the stream is polled. Pace fast
//!   producers in the handler.
//!
//! # Access and trust
//!
//! Every request arriving through the protocol is checked against the operation's
//! [`AccessRule`](crate::AccessRule) with the request's `identity` before anything else runs;
//! [`OperationRegistry::execute`](crate::OperationRegistry::execute) stays the trusted
//! in-process path.
//!
//! **Who may state an identity.** Without signing keys, the `identity` of `call.requested`
//! is taken as stated: a [`CallHandler`] cannot tell who published a request, so *every peer
//! that can publish on the bus is trusted to say who the caller is*. With keys (feature
//! `signing`, `opkit::protocol::signing`) a handler given
//! `CallHandler::with_identity_keys` runs a request that states an identity only when the
//! identity is signed for that very request by a key it knows; callers sign with
//! `PendingOptions::with_identity_keys`, the WebSocket hub signs what it stamps with
//! `HubOptions::with_identity_keys`. What each transport guarantees:
//!
//! | transport | who can state an identity | with TLS | with signed identities |
//! |---|---|---|---|
//! | [`MemoryPubSub`] | code in the same process | — | the same, checked |
//! | Redis (`opkit_adapters::redis`) | every client that can connect to the Redis server (protect it with its ACLs and network rules as you would a database) | `rediss://` with `RedisTls`: inputs, outputs and identities are encrypted on the wire and the server is authenticated by its CA; with a client certificate (`--tls-auth-clients yes`) only holders of a certificate that CA signed connect | only holders of a signing key: a client that can publish but holds no key (a compromised or misconfigured service, anyone with the Redis password) can call only what anonymous callers may |
//! | WebSocket hub (`opkit_adapters::websocket`) | each spoke authenticates with a token at the hub and does only what its grant allows (the operations it calls and serves); the hub routes replies to the caller's connection only, takes answers only from the spoke serving the call and aborts only from its caller; a spoke whose grant carries an identity has it stamped on every request it publishes (the hub rewrites the request), so only spokes granted no identity state their own | `wss://` with `ServerTls` / `ClientTls`: tokens and traffic are encrypted and the hub is authenticated; with a client CA, spokes are too | stamped identities are signed by the hub; a spoke granted no identity must hold a signing key to state one |
//!
//! An edge that authenticates end users (the HTTP or MCP server, a gateway of yours) is
//! such a trusted publisher: it puts the identity it established into the context, and
//! [`PendingRequestMap`] sends it on (signed, with keys). Nested calls keep the caller's
//! identity.
//!
//! **Deploying across machines.** Certificates: give Redis (or each cluster node, with
//! `--tls-cluster yes --tls-replication yes`) and the hub a certificate for the name or
//! address clients use, signed by a CA the clients trust (`RedisTls::with_ca_pem`,
//! `ClientTls::from_pem`); for mutual TLS give each process a client certificate from a CA
//! the server requires. Keys: prefer an Ed25519 key pair per signing edge (gateways, the
//! hub) and give replicas only the public keys; HMAC secrets are simpler but let every
//! holder sign. Rotation: add the new public key to every replica
//! (`with_verifying_ed25519_pem` under a new key id), then switch the signers to it, then
//! remove the old key once no request signed with it can still be in flight (signatures
//! live until their request's deadline, at most five minutes).
//!
//! Application errors ([`ErrorKind`](crate::ErrorKind)) travel in `call.error` as the
//! optional `kind` field beside `code`, so a remote caller sees the same error as a local
//! one; peers that do not know `kind` act on `code`, and a kind this version does not know
//! is dropped (the error arrives with its code).
//!
//! Application state ([`State<T>`](crate::State)) never travels: each replica's
//! [`CallHandler`] runs calls through its own registry, with that registry's state, and
//! refuses to start when the registry lacks a state its operations read.
//!
//! # Trace context
//!
//! `call.requested` may carry two optional string fields beside its base ones
//! (`requestId`, `operationId`, `input`):
//!
//! | field | value |
//! |---|---|
//! | `traceparent` | the caller's client span, as a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`) |
//! | `tracestate` | the W3C `tracestate` that goes with it |
//!
//! Both are omitted when absent, so the JSON of a call without a trace is unchanged, and a
//! peer that does not know them ignores them (unknown fields are ignored). A
//! [`PendingRequestMap`] sends the trace context of its call's span; a [`CallHandler`] opens
//! its server span as a child of it. A value that is not a string is dropped when decoding,
//! and an invalid `traceparent` is ignored (the call starts a new trace): a bad trace
//! context never fails a call. See [`crate::trace`].
//!
//! # Subscriptions
//!
//! A [`PendingRequestMap`] marks the `call.requested` of a subscription with
//! `"subscription": true` (omitted for a call). Handlers do not need it (the operation's kind
//! decides); transports that track calls in flight do: a call ends with its one
//! `call.responded`, a subscription with `call.completed` (either with `call.error` or
//! `call.aborted`). [`wire::peek`] and [`wire::EventKind::ends_call`] are that rule, for
//! every transport.
//!
//! # Nested calls
//!
//! [`OperationEnv::remote`](crate::OperationEnv::remote) puts an env on a
//! [`PendingRequestMap`], with the same interface as
//! [`OperationEnv::local`](crate::OperationEnv::local). Calls made through `ctx.env()` inside
//! a served handler carry the handler's request id as `parentRequestId`, the caller's
//! identity and the remaining deadline (the same absolute deadline) — to the local registry
//! by default, or through the protocol with [`CallHandler::with_env`].

mod handler;
mod memory;
mod pending;
mod pubsub;
#[cfg(feature = "signing")]
pub mod signing;
pub mod topics;
pub mod wire;

pub use crate::limits::DEFAULT_MAX_PENDING;
pub use handler::{
    CallHandler, CallHandlerHandle, CallProtocolRequest, DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_REFRESH_INTERVAL, SpawnError,
};
pub use memory::MemoryPubSub;
pub use pending::{DEFAULT_TIMEOUT, PendingOptions, PendingRequestMap};
pub use pubsub::{Delivery, PubSub, Receipt, Subscription, TransportError};
#[cfg(feature = "signing")]
pub use signing::{IdentityKeyError, IdentityKeys};
pub use wire::{
    CallAborted, CallCompleted, CallEvent, CallFailed, CallRequested, CallResponded, WireError,
};
