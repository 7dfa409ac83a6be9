//! The call protocol over WebSocket, hub and spoke: a [`WsHub`] process routes messages
//! between authenticated [`WsSpoke`]s, each a [`PubSub`](opkit::protocol::PubSub) transport.
//!
//! A spoke that serves operations runs a [`CallHandler`](opkit::protocol::CallHandler) on its
//! [`WsSpoke`]; subscribing to an operation's request topic is how it announces that it serves
//! it (the hub lists them: [`WsHub::operations`]). Callers anywhere — other spokes, or code in
//! the hub's process through [`WsHub::pubsub`] — reach those operations by id with a
//! [`PendingRequestMap`](opkit::protocol::PendingRequestMap). The protocol code is unchanged.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use opkit::prelude::*;
//! use opkit::protocol::{CallHandler, PendingRequestMap};
//! use opkit_adapters::websocket::{SpokeGrant, StaticTokens, WsHub, WsSpoke};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! // The hub (its own process, usually):
//! let tokens = StaticTokens::new()
//!     .with_token("math-token", SpokeGrant::new("math-service"))
//!     .with_token("web-token", SpokeGrant::new("web"));
//! let hub = WsHub::bind("127.0.0.1:0", tokens).await?;
//!
//! // A spoke serving operations:
//! let registry = OperationRegistry::new();
//! registry.register(
//!     OperationSpec::new("math", "double", OperationKind::Query),
//!     Handler::unary(|input, _ctx| async move { Ok(json!(input["n"].as_i64().unwrap_or(0) * 2)) }),
//! )?;
//! let math = Arc::new(WsSpoke::connect(&hub.url(), "math-token").await?);
//! let _serving = CallHandler::new(registry, math).spawn().await?;
//!
//! // A calling spoke:
//! let web = Arc::new(WsSpoke::connect(&hub.url(), "web-token").await?);
//! let env = OperationEnv::remote(PendingRequestMap::connect(web).await?);
//! assert_eq!(env.call("math.double", json!({"n": 21})).await?.data, json!(42));
//! # Ok(())
//! # }
//! ```
//!
//! # Authentication and identity
//!
//! A spoke sends its token in the WebSocket handshake, as `Authorization: Bearer <token>`. The
//! hub asks its [`TokenVerifier`] (for example [`StaticTokens`]); an unknown or missing token
//! is refused with HTTP `401` before any frame is exchanged, so an unauthenticated spoke can
//! neither publish nor subscribe. The verifier returns the spoke's [`SpokeGrant`]: its name,
//! and optionally an [`Identity`](opkit::Identity) the hub **stamps** on every `call.requested`
//! the spoke publishes (replacing any identity the spoke put there), for spokes that must not
//! speak for anyone else. Without one, the identity the caller put in `call.requested` travels
//! unchanged (a trusted service calling on behalf of its users). Either way the access rule of
//! the operation is checked against that identity by the
//! [`CallHandler`](opkit::protocol::CallHandler) of the spoke that runs it.
//!
//! # Frames
//!
//! Every WebSocket message is one frame: a JSON header object with an `op` field, optionally
//! followed by a newline (`\n`) and the payload's raw bytes (for `publish` and `message`; such
//! frames are sent as binary messages, the others as text). JSON never contains a raw newline,
//! so the first `\n` ends the header, and payloads are carried as they are, any bytes.
//!
//! | from | `op` | fields | meaning |
//! |---|---|---|---|
//! | hub | `welcome` | `spoke` | the handshake succeeded; the hub's name for this connection |
//! | spoke | `subscribe` | `id`, `topic` | subscribe to every message of `topic`; `id` names the subscription |
//! | spoke | `subscribe_group` | `id`, `topic`, `group` | join `group` on `topic` (each message to one member) |
//! | spoke | `unsubscribe` | `id` | drop subscription `id` (no answer) |
//! | spoke | `publish` | `id`, `topic` + payload | publish the payload on `topic` |
//! | hub | `ok` | `id`, `receivers`? | the request `id` succeeded (`receivers`: how many subscribers and groups a publish reached) |
//! | hub | `error` | `id`?, `message`, `unsent`? | the request `id` failed (or, without `id`, a frame was refused); `unsent: true`: what was refused reached nobody |
//! | hub | `message` | `sub` + payload | a message for subscription `sub` |
//!
//! For example `{"op":"publish","id":7,"topic":"opkit.request.math.add"}` + `\n` +
//! `{"type":"call.requested",...}`, answered `{"op":"ok","id":7,"receivers":1}`.
//! A frame the hub cannot read (not JSON, an unknown `op`, a missing field) is logged and
//! dropped — the connection stays up.
//!
//! # Routing and delivery guarantees
//!
//! The hub routes with a [`MemoryPubSub`](opkit::protocol::MemoryPubSub): plain subscribers of
//! a topic get every message; the members of a group share them round robin, each message to
//! exactly one member — across spokes and in-process subscribers alike.
//!
//! - **At most once.** Nothing is stored or retried: a message is handed to the connections
//!   subscribed when it is published; a message published on a topic nobody subscribes to is
//!   dropped (the receipt says `0`, so a call to an operation nobody serves fails at once with
//!   `OPERATION_NOT_FOUND`). One publisher's messages on one topic arrive in order.
//! - **Each request is executed at most once**, by the one spoke its group handed it to, and
//!   exactly once while a spoke serving the operation is connected.
//! - **A spoke that disconnects** (closed, crashed, network cut: the hub pings every
//!   [`HubOptions::with_ping_interval`] and drops a spoke that does not answer within
//!   [`HubOptions::with_pong_timeout`], or is silent for three intervals) loses its
//!   subscriptions at once. For every request the hub routed to it that had not finished
//!   (`call.completed`, `call.error` or `call.aborted` not seen, deadline not passed), the hub
//!   publishes `call.error` with `TRANSPORT_ERROR` and `details: {"delivery": "unknown"}` to
//!   the caller — so the call fails at once instead of waiting for its deadline (the request is
//!   not sent elsewhere: it may have run).
//!   Queries answered just before the drop may get this late error too, which callers ignore.
//!   For [`HubOptions::with_orphan_grace`] afterwards, publishing on a request topic that only
//!   that spoke served fails with a [`TransportError`](opkit::protocol::TransportError) (the
//!   caller sees `TRANSPORT_ERROR`, not `OPERATION_NOT_FOUND`): the spoke may be reconnecting.
//! - **Silence is noticed on both sides.** A connection that passes no byte (no FIN, no RST)
//!   is dropped by the hub when a spoke answers nothing within [`HubOptions::with_pong_timeout`]
//!   (2 s) of a ping (every [`HubOptions::with_ping_interval`], 5 s): from then on its
//!   requests go to the other spokes serving the operation. The spoke pings the hub too
//!   ([`SpokeOptions::with_ping_interval`], [`SpokeOptions::with_pong_timeout`]), and a
//!   publish or subscribe the hub leaves unanswered for [`SpokeOptions::with_request_timeout`]
//!   drops the connection as well; either way the spoke reconnects, and
//!   [`WsSpoke::is_connected`] is `false` until it has.
//! - **A failed publish says whether it may have been delivered**
//!   ([`Delivery`](opkit::protocol::Delivery)): `NotSent` while disconnected, or when the hub
//!   answers that the message reached nobody (an `error` frame with `"unsent": true`);
//!   `Unknown` when the frame went out and no answer came. A call never waits for the hub's
//!   answer past its own deadline.
//! - **Spokes reconnect** with exponential backoff ([`SpokeOptions::with_backoff`]) and
//!   subscribe again under the same subscription ids; their [`Subscription`]s stay open across
//!   the reconnection (messages published meanwhile are lost). While a spoke is disconnected
//!   its `publish` and `subscribe` fail at once with a `TransportError` (calls made then end
//!   with `TRANSPORT_ERROR`); calls it had in flight end with an error or `TIMEOUT` at their
//!   deadline, never a hang.
//! - **Backpressure**: each spoke's outgoing queue holds at most
//!   [`HubOptions::with_max_queued_bytes`] bytes ([`DEFAULT_MAX_QUEUED_BYTES`], 64 MiB) and
//!   [`HubOptions::with_max_queued`] frames; a spoke that falls further behind (it stopped
//!   reading) is disconnected with a logged reason — its requests fail with `TRANSPORT_ERROR`
//!   as above and its queue is freed — rather than letting the hub's memory grow without
//!   bound. One spoke holds at most [`HubOptions::with_max_subscriptions`]
//!   ([`DEFAULT_MAX_SUBSCRIPTIONS`]) subscriptions; one more fails with a `TransportError`
//!   naming the limit.
//!
//! [`Subscription`]: opkit::protocol::Subscription

mod frame;
mod hub;
mod spoke;
mod tls;

pub use hub::{
    DEFAULT_MAX_QUEUED_BYTES, DEFAULT_MAX_SUBSCRIPTIONS, HubOptions, HubPubSub, SpokeGrant,
    StaticTokens, TokenVerifier, WsHub,
};
pub use spoke::{SpokeOptions, WsSpoke};
pub use tls::{ClientTls, ServerTls, TlsError};
