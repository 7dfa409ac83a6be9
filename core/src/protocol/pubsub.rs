//! The transport seam: [`PubSub`], its [`Subscription`]s, [`Receipt`]s and [`TransportError`].

use crate::error::CallError;
use bytes::Bytes;
use futures::Stream;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Whether a failed publish may have delivered its message: what a caller may conclude
/// about a request whose publish failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Delivery {
    /// The message never left this process (nothing listening, no connection, refused before
    /// anything was written): nobody received it, and trying again cannot duplicate it.
    NotSent,
    /// The message may have been written to the network and delivered (the connection
    /// failed or went silent after the write, the answer never came): whoever received it
    /// may act on it.
    Unknown,
}

impl Delivery {
    /// The name used on the wire, in `details.delivery` of a `TRANSPORT_ERROR`: `notSent` or
    /// `unknown`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotSent => "notSent",
            Self::Unknown => "unknown",
        }
    }

    /// The `details` of an error that says this: `{"delivery": "notSent"}` or
    /// `{"delivery": "unknown"}`.
    pub fn details(self) -> serde_json::Value {
        serde_json::json!({ "delivery": self.as_str() })
    }
}

/// A transport failed: a publish or subscribe did not go through, or a connection was lost.
///
/// Becomes a `TRANSPORT_ERROR` [`CallError`]. A publish error says whether the message may
/// have been delivered ([`delivery`](Self::delivery)): [`TransportError::new`] is
/// [`Delivery::Unknown`], the safe assumption; a transport that knows nothing was written
/// says so with [`TransportError::not_sent`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("transport error: {message}")]
pub struct TransportError {
    message: String,
    delivery: Delivery,
}

impl TransportError {
    /// An error with a message saying what failed; whether a message being published was
    /// delivered is [unknown](Delivery::Unknown).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            delivery: Delivery::Unknown,
        }
    }

    /// An error of a publish that wrote nothing: the message was [not sent](Delivery::NotSent).
    /// Only for failures before any byte of the message could reach the network.
    pub fn not_sent(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            delivery: Delivery::NotSent,
        }
    }

    /// What failed.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the message being published may have been delivered.
    pub fn delivery(&self) -> Delivery {
        self.delivery
    }
}

impl From<TransportError> for CallError {
    fn from(error: TransportError) -> Self {
        CallError::transport(error.message)
    }
}

/// What a transport knows about who received a published message.
///
/// Transports that know how many subscribers a message reached (in-memory, Redis `PUBLISH`)
/// say so; the others (durable queues, a WebSocket hub without acks) return
/// [`Receipt::unknown`]. A known count of zero on a request topic lets a caller fail at once
/// with `OPERATION_NOT_FOUND` instead of waiting for its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Receipt {
    receivers: Option<usize>,
}

impl Receipt {
    /// The transport does not know who received the message.
    pub const fn unknown() -> Self {
        Self { receivers: None }
    }

    /// The message reached `receivers` subscribers (each group counts once).
    pub const fn delivered(receivers: usize) -> Self {
        Self {
            receivers: Some(receivers),
        }
    }

    /// How many subscribers the message reached, when known.
    pub const fn receivers(self) -> Option<usize> {
        self.receivers
    }

    /// `true` when the transport knows that nobody received the message.
    pub const fn reached_nobody(self) -> bool {
        matches!(self.receivers, Some(0))
    }
}

/// The messages of one subscription, in the order they were published. Dropping it
/// unsubscribes. The stream ends when the transport loses the subscription.
pub struct Subscription {
    messages: BoxStream<'static, Bytes>,
}

impl Subscription {
    /// Wraps a transport's stream of payloads; dropping the stream must unsubscribe.
    pub fn new(messages: impl Stream<Item = Bytes> + Send + 'static) -> Self {
        Self {
            messages: Box::pin(messages),
        }
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Subscription")
    }
}

impl Stream for Subscription {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.messages.as_mut().poll_next(cx)
    }
}

/// The transport seam of the call protocol: publish and subscribe by topic, with bytes as
/// payloads. Object-safe: the protocol holds an `Arc<dyn PubSub>`.
///
/// What a transport must provide:
/// - [`publish`](PubSub::publish) sends a payload to the topic's current subscribers, at most
///   once each; payloads from one publisher on one topic arrive in publish order.
/// - [`subscribe`](PubSub::subscribe): every subscriber of a topic gets every message (fan-out).
/// - [`subscribe_group`](PubSub::subscribe_group): the members of one group on a topic share its
///   messages, each message going to exactly one member (competing consumers, like NATS queue
///   groups or Redis Streams consumer groups). A group counts as one receiver of each message,
///   beside the plain subscribers.
/// - A subscription is live once its future resolves: every message published afterwards is
///   delivered to it. Dropping the [`Subscription`] unsubscribes.
///
/// [`MemoryPubSub`](super::MemoryPubSub) is the in-process implementation; the Redis and
/// WebSocket transports of `opkit-adapters` implement the same trait.
pub trait PubSub: Send + Sync + 'static {
    /// Publishes `payload` on `topic`.
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<Receipt, TransportError>>;

    /// Subscribes to every message of `topic`.
    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>>;

    /// Joins `group` on `topic`: each message of the topic goes to one member of the group.
    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>>;

    /// [`subscribe_group`](Self::subscribe_group) for messages that are safe to handle more
    /// than once (idempotent, such as read-only queries): a transport that can tell when a
    /// member died holding a message may hand that message to another member of the group, so
    /// that it is not lost. The [`CallHandler`](super::CallHandler) joins the request topics of
    /// `Query` operations this way (unless
    /// [`with_query_redelivery(false)`](super::CallHandler::with_query_redelivery)), never
    /// those of mutations or subscriptions.
    ///
    /// Transports without such redelivery need not implement it: the default is
    /// [`subscribe_group`](Self::subscribe_group) (at most once).
    fn subscribe_group_idempotent<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.subscribe_group(topic, group)
    }

    /// [`publish`](Self::publish) for a sender that does not read the [`Receipt`] but holds
    /// something until it is known (`keep`): the future resolves once the transport has the
    /// message, and the transport drops `keep` once the message's receipt, or its failure, is
    /// known. The [`CallHandler`](super::CallHandler) publishes its unary replies so: `keep`
    /// is the request's place among those it runs (its permit), held until the reply is
    /// confirmed, without a task waiting for the confirmation.
    ///
    /// `Err` when the message could not be published (`keep` is dropped). A failure known only
    /// later is the transport's to log. The default publishes, waits for the receipt, then
    /// drops `keep`: a transport whose receipts are a wait of their own (the WebSocket spoke
    /// waits for its hub's) answers at once and keeps `keep` with its record of the publish.
    fn publish_keeping<'a>(
        &'a self,
        topic: &'a str,
        payload: Bytes,
        keep: Box<dyn std::any::Any + Send>,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            let published = self.publish(topic, payload).await;
            drop(keep);
            published.map(drop)
        })
    }
}
