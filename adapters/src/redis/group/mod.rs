//! Group subscriptions: each a consumer of the topic's stream in a Redis consumer group, with
//! its own reader connection ([`subscribe_group`]). `member` is what one consumer does
//! against Redis (join, read, acknowledge, claim); `reader` is the state machine that runs
//! it until the subscription is dropped.

mod member;
mod reader;

use super::errors::transport_error;
use super::state::RedisState;
use bytes::Bytes;
use member::Member;
use opkit::protocol::{Subscription, TransportError};
use reader::GroupReader;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;

/// How a group subscription's entries are delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Delivery {
    /// Read with `NOACK`: never pending, never redelivered (each entry reaches one member, at
    /// most once).
    AtMostOnce,
    /// Read without `NOACK`: pending until held for the retention, and claimed by a live member
    /// when this one's lease expires (see [`claim`](super::claim)).
    Redeliver,
}

/// The entries a group reader handed to its subscriber that the subscriber has not taken
/// yet. The reader reads no more while a batch of them waits (a subscriber that stopped
/// taking, like a `CallHandler` at its limit): the rest wait in the stream, for this reader
/// later or for another member. So a group subscription holds at most two batches (plus the
/// entries a heartbeat claims) in memory, whatever the stream holds.
#[derive(Default)]
pub(super) struct Queued {
    pub(super) count: AtomicUsize,
    pub(super) taken: tokio::sync::Notify,
}

/// A group subscription: counts what its subscriber takes.
fn group_subscription(
    mut receiver: mpsc::UnboundedReceiver<Bytes>,
    queued: Arc<Queued>,
) -> Subscription {
    Subscription::new(futures::stream::poll_fn(move |cx| {
        let polled = receiver.poll_recv(cx);
        if let std::task::Poll::Ready(Some(_)) = &polled {
            queued.count.fetch_sub(1, Ordering::AcqRel);
            queued.taken.notify_one();
        }
        polled
    }))
}

pub(super) async fn subscribe_group(
    inner: Arc<RedisState>,
    topic: &str,
    group: &str,
    delivery: Delivery,
) -> Result<Subscription, TransportError> {
    let reader = inner.next_consumer.fetch_add(1, Ordering::Relaxed);
    let consumer = format!("{}-{reader}", inner.instance);
    let member = Member {
        keys: inner.keys(topic)?,
        member: format!("{consumer}:{group}"),
        consumer,
        group: group.to_owned(),
        inner,
        delivery,
        reader,
        queued: Arc::default(),
    };
    let conn = member
        .connect()
        .await
        .map_err(|error| transport_error("joining a consumer group", error))?;
    let (sender, receiver) = mpsc::unbounded_channel();
    let queued = member.queued.clone();
    tokio::spawn(GroupReader::new(member, sender).run(conn));
    Ok(group_subscription(receiver, queued))
}
