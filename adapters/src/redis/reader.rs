//! The background tasks behind [`RedisPubSub`](super::RedisPubSub)'s group subscriptions (on
//! a server or a cluster) and plain subscriptions (on a server; see [`shard`](super::shard)
//! for a cluster's): one connection each, reconnecting with backoff until the subscription is
//! dropped.

use super::claim::{self, Held};
use super::conn::Conn;
use super::{RedisState, TopicKeys, is_connection_error, millis, redis_crate, transport_error};
use bytes::Bytes;
use futures::StreamExt;
use opkit::envelope::now_millis;
use opkit::protocol::{Subscription, TransportError};
use redis_crate::aio::{PubSubSink, PubSubStream};
use redis_crate::streams::{StreamId, StreamReadReply};
use redis_crate::{RedisError, Value};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The field of a stream entry that holds the payload.
const PAYLOAD_FIELD: &str = "p";

pub(super) fn subscription(mut receiver: mpsc::UnboundedReceiver<Bytes>) -> Subscription {
    Subscription::new(futures::stream::poll_fn(move |cx| receiver.poll_recv(cx)))
}

/// The entries a group reader handed to its subscriber that the subscriber has not taken
/// yet. The reader reads no more while a batch of them waits (a subscriber that stopped
/// taking, like a `CallHandler` at its limit): the rest wait in the stream, for this reader
/// later or for another member. So a group subscription holds at most two batches (plus the
/// entries a heartbeat claims) in memory, whatever the stream holds.
#[derive(Default)]
struct Queued {
    count: AtomicUsize,
    taken: tokio::sync::Notify,
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

// ---------------------------------------------------------------------------------------------
// Plain subscriptions: a pub/sub connection per subscription.

/// A pub/sub connection subscribed to `channel`, split into the sink its checks are sent on
/// and the stream of its messages (bounded by the connect and command timeouts).
async fn open_channel(
    inner: &RedisState,
    channel: &str,
) -> Result<(PubSubSink, PubSubStream), TransportError> {
    let bound = inner.options.connect_timeout * 2 + inner.options.command_timeout;
    let open = async {
        let client = inner.backend.single_client().ok_or_else(|| {
            RedisError::from((
                redis_crate::ErrorKind::Client,
                "plain channels are for a single server",
            ))
        })?;
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(channel).await?;
        Ok::<_, RedisError>(pubsub.split())
    };
    match tokio::time::timeout(bound, open).await {
        Ok(Ok(halves)) => Ok(halves),
        Ok(Err(error)) => Err(transport_error("subscribing", error)),
        Err(_) => Err(transport_error("subscribing", "timed out")),
    }
}

pub(super) async fn subscribe(
    inner: Arc<RedisState>,
    topic: String,
) -> Result<Subscription, TransportError> {
    let channel = inner.keys(&topic)?.channel;
    let connection = open_channel(&inner, &channel).await?;
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(forward_channel(inner, channel, connection, sender));
    Ok(subscription(receiver))
}

/// After the ping interval, a `PING` on a pub/sub connection; `Err` when it is not answered
/// within the ping timeout.
async fn check_channel(inner: Arc<RedisState>, mut sink: PubSubSink) -> Result<(), String> {
    tokio::time::sleep(inner.options.ping_interval).await;
    match tokio::time::timeout(inner.options.ping_timeout, sink.ping::<Value>()).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("no answer to PING in time".to_owned()),
    }
}

/// Forwards a channel's messages until the subscription is dropped. The connection is checked
/// every ping interval (a `PING` answered within the ping timeout), so one that went silent
/// is noticed as surely as one that closed; either is re-opened and subscribed again.
///
/// Invariant: exactly one connection (and one check of it) is held at a time; a lost one is
/// dropped before the next is opened.
async fn forward_channel(
    inner: Arc<RedisState>,
    channel: String,
    connection: (PubSubSink, PubSubStream),
    sender: mpsc::UnboundedSender<Bytes>,
) {
    let mut backoff = inner.options.backoff();
    let mut connection = Some(connection);
    loop {
        if let Some((sink, mut messages)) = connection.take() {
            let mut check = Box::pin(check_channel(inner.clone(), sink.clone()));
            let lost = loop {
                tokio::select! {
                    () = sender.closed() => return,
                    message = messages.next() => match message {
                        Some(message) => {
                            if sender.send(Bytes::copy_from_slice(message.get_payload_bytes())).is_err() {
                                return;
                            }
                        }
                        None => break "the connection closed".to_owned(),
                    },
                    checked = &mut check => match checked {
                        Ok(()) => check = Box::pin(check_channel(inner.clone(), sink.clone())),
                        Err(error) => break error,
                    },
                }
            };
            tracing::warn!(channel, %lost, "lost the redis subscription: reconnecting");
        }
        tokio::select! {
            () = sender.closed() => return,
            () = tokio::time::sleep(backoff.step()) => {}
        }
        match open_channel(&inner, &channel).await {
            Ok(opened) => {
                tracing::info!(channel, "redis subscription restored");
                connection = Some(opened);
                backoff.reset();
            }
            Err(error) => tracing::debug!(%error, channel, "redis is still unreachable"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Group subscriptions: a consumer and a reader connection per subscription.

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

struct Member {
    inner: Arc<RedisState>,
    keys: TopicKeys,
    group: String,
    consumer: String,
    /// `<consumer>:<group>`, the member's entry in the members set.
    member: String,
    delivery: Delivery,
    /// This reader's number in its process (the consumer name's suffix).
    reader: u64,
    /// What the subscriber has not taken yet.
    queued: Arc<Queued>,
}

impl Member {
    /// A reader connection with the lease taken. Its response timeout is a blocking read's
    /// block time plus the ping timeout: a connection that goes silent fails its next read
    /// within that, and is replaced.
    async fn connect(&self) -> Result<Conn, RedisError> {
        let options = &self.inner.options;
        let mut conn = self
            .inner
            .connect(options.block_for() + options.ping_timeout)
            .await?;
        bounded(
            options.command_timeout,
            self.inner
                .join(&mut conn, &self.keys, &self.group, &self.member),
        )
        .await?;
        Ok(conn)
    }

    async fn read(&self, conn: &mut Conn) -> Result<StreamReadReply, RedisError> {
        let options = &self.inner.options;
        let mut command = redis_crate::cmd("XREADGROUP");
        command
            .arg("GROUP")
            .arg(&self.group)
            .arg(&self.consumer)
            .arg("COUNT")
            .arg(options.batch)
            .arg("BLOCK")
            .arg(millis(options.block_for()));
        if self.delivery == Delivery::AtMostOnce {
            command.arg("NOACK");
        }
        let reply: Option<StreamReadReply> = command
            .arg("STREAMS")
            .arg(&self.keys.stream)
            .arg(">")
            .query_async(conn)
            .await?;
        Ok(reply.unwrap_or_default())
    }

    /// Acknowledges `acks` (when there are any) and reads the next entries. Both commands are
    /// queued on the reader's connection before it is flushed, so they leave in one write and
    /// Redis runs them in that order (the `XACK` is answered before the `XREADGROUP` blocks):
    /// the acknowledgement costs no round trip of its own. Its outcome is returned apart from
    /// the read's, so that entries read are delivered even when it failed.
    async fn acknowledge_and_read(
        &self,
        conn: &mut Conn,
        acks: &[String],
    ) -> (Result<(), RedisError>, Result<StreamReadReply, RedisError>) {
        if acks.is_empty() {
            return (Ok(()), self.read(conn).await);
        }
        // A clone of a connection shares its socket (and, on one server, its order of
        // commands; on a cluster either order is correct).
        let mut ack_conn = conn.clone();
        let acknowledging = claim::acknowledge(&mut ack_conn, &self.keys, &self.group, acks);
        // `join` polls in argument order: the `XACK` is queued first.
        futures::join!(acknowledging, self.read(conn))
    }

    /// Hands entries to the subscriber (remembering them in `held` when redelivering);
    /// `false` once the subscriber is gone.
    fn deliver(
        &self,
        entries: Vec<StreamId>,
        sender: &mpsc::UnboundedSender<Bytes>,
        held: &mut Held,
    ) -> bool {
        let retention = millis(self.inner.options.retention);
        let now = now_millis();
        let stream = &self.keys.stream;
        for entry in entries {
            let payload = match entry.map.get(PAYLOAD_FIELD) {
                Some(Value::BulkString(bytes)) => Some(Bytes::copy_from_slice(bytes)),
                Some(Value::SimpleString(text)) => Some(Bytes::copy_from_slice(text.as_bytes())),
                _ => None,
            };
            if self.delivery == Delivery::Redeliver {
                let peeked = payload.as_deref().unwrap_or_default();
                held.push(&self.inner.answers, entry.id.clone(), peeked);
            }
            let age = entry_millis(&entry.id).map(|at| now.saturating_sub(at));
            if age.is_some_and(|age| age > retention) {
                tracing::debug!(%stream, id = %entry.id, "dropping an entry older than the retention");
                continue;
            }
            let Some(payload) = payload else {
                tracing::warn!(%stream, id = %entry.id, "dropping a stream entry without a `p` payload field");
                continue;
            };
            // Counted before it is sent, so the subscriber's count never goes below zero.
            self.queued.count.fetch_add(1, Ordering::AcqRel);
            if sender.send(payload).is_err() {
                tracing::debug!(%stream, id = %entry.id, "the subscription was dropped: an entry it read is lost");
                return false;
            }
        }
        true
    }

    /// The periodic work of a member: renews its lease and, when redelivering, claims the
    /// entries of dead members (handed to the subscriber). `Ok(false)` once the subscriber is
    /// gone.
    async fn heartbeat(
        &self,
        conn: &mut Conn,
        held: &mut Held,
        sender: &mpsc::UnboundedSender<Bytes>,
    ) -> Result<bool, RedisError> {
        self.inner
            .join(conn, &self.keys, &self.group, &self.member)
            .await?;
        if self.delivery == Delivery::AtMostOnce {
            return Ok(true);
        }
        let claimed = claim::claim(conn, &self.keys, &self.group, &self.consumer).await?;
        if !claimed.is_empty() {
            tracing::info!(
                stream = %self.keys.stream,
                consumer = %self.consumer,
                entries = claimed.len(),
                "claimed the entries of a group member whose lease expired"
            );
        }
        Ok(self.deliver(claimed, sender, held))
    }
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
    tokio::spawn(read_group(member, conn, sender));
    Ok(group_subscription(receiver, queued))
}

/// Reads a group's entries for one consumer until the subscription is dropped, renewing the
/// lease (and, when redelivering, acknowledging and claiming); reconnects (and re-joins) after
/// a lost connection. Leaves the group at the end.
async fn read_group(member: Member, conn: Conn, sender: mpsc::UnboundedSender<Bytes>) {
    let heartbeat = member.inner.options.heartbeat();
    let mut backoff = member.inner.options.backoff();
    let mut held = Held::new(&member.inner, member.reader);
    let mut conn = Some(conn);
    let mut beat = Instant::now();
    let stream = member.keys.stream.clone();
    loop {
        let Some(current) = conn.as_mut() else {
            tokio::select! {
                () = sender.closed() => break,
                () = tokio::time::sleep(backoff.step()) => {}
            }
            match member.connect().await {
                Ok(fresh) => {
                    tracing::info!(%stream, consumer = %member.consumer, "redis group reader restored");
                    conn = Some(fresh);
                    // Joined just now; claim at once (a member may have died meanwhile).
                    beat = Instant::now()
                        .checked_sub(heartbeat)
                        .unwrap_or_else(Instant::now);
                    backoff.reset();
                }
                Err(error) => tracing::debug!(%error, %stream, "redis is still unreachable"),
            }
            continue;
        };
        if beat.elapsed() >= heartbeat {
            let options = &member.inner.options;
            let beating = member.heartbeat(current, &mut held, &sender);
            match bounded(options.command_timeout + options.ping_timeout, beating).await {
                Ok(true) => beat = Instant::now(),
                Ok(false) => break,
                Err(error) => {
                    tracing::warn!(%error, %stream, "could not renew a group lease");
                    if is_connection_error(&error) {
                        conn = None;
                    } else {
                        beat = Instant::now();
                    }
                    continue;
                }
            }
        }
        // Backpressure: while a batch handed over waits untaken, read no more (see `Queued`);
        // the lease is still renewed on time.
        if member.queued.count.load(Ordering::Acquire) >= member.inner.options.batch {
            tokio::select! {
                () = sender.closed() => break,
                () = member.queued.taken.notified() => {}
                () = tokio::time::sleep_until(beat + heartbeat) => {}
            }
            continue;
        }
        // Let the tasks woken by the entries just delivered (the subscriber and the handler
        // it runs) go first, so the reply they publish is not queued behind this reader's
        // next read on a busy thread: the read is off the call's critical path, the reply is
        // on it.
        tokio::task::yield_now().await;
        let due = match member.delivery {
            Delivery::Redeliver => Some(held.due(&member.inner.answers)),
            Delivery::AtMostOnce => None,
        };
        let acks = due.as_ref().map_or(&[][..], |due| &due.ids[..]);
        let (acked, read) = tokio::select! {
            () = sender.closed() => break,
            // Bounded here too, not only by the connection's response timeout: a cluster
            // connection retries and repairs itself and may wait past it.
            outcome = tokio::time::timeout(
                member.inner.options.block_for() + member.inner.options.ping_timeout,
                member.acknowledge_and_read(current, acks),
            ) => match outcome {
                Ok(outcome) => outcome,
                Err(_) => {
                    tracing::warn!(%stream, "a group read went unanswered: reconnecting");
                    conn = None;
                    continue;
                }
            },
        };
        match (&acked, &due) {
            (Ok(()), Some(due)) => held.acknowledged(due),
            (Err(error), _) => {
                tracing::warn!(%error, %stream, "could not acknowledge answered entries");
            }
            (Ok(()), None) => {}
        }
        // The entries read are delivered whatever became of the acknowledgement: they are
        // pending for this consumer now.
        match read {
            Ok(reply) => {
                let entries = reply.keys.into_iter().flat_map(|key| key.ids).collect();
                if !member.deliver(entries, &sender, &mut held) {
                    break;
                }
            }
            Err(error) if error.code() == Some("NOGROUP") => {
                // The stream or its group is gone (Redis restarted or the key was deleted):
                // join again, which recreates both.
                tracing::warn!(%stream, "the consumer group is gone: joining again");
                if let Err(error) = member
                    .inner
                    .join(current, &member.keys, &member.group, &member.member)
                    .await
                {
                    tracing::warn!(%error, %stream, "could not re-create a consumer group");
                    conn = None;
                } else {
                    beat = Instant::now();
                }
            }
            Err(error) => {
                if is_connection_error(&error) {
                    tracing::warn!(%error, %stream, "lost the redis group reader: reconnecting");
                } else {
                    tracing::warn!(%error, %stream, "a group read failed: reconnecting");
                }
                conn = None;
            }
        }
        if acked.is_err_and(|error| is_connection_error(&error)) {
            conn = None;
        }
    }
    drop(conn);
    member.inner.answers.drop_reader(member.reader);
    member
        .inner
        .leave(
            &member.keys,
            &member.group,
            &member.member,
            &member.consumer,
        )
        .await;
}

/// `future`'s output, or a timeout error after `bound`.
async fn bounded<T>(
    bound: Duration,
    future: impl Future<Output = Result<T, RedisError>>,
) -> Result<T, RedisError> {
    tokio::time::timeout(bound, future)
        .await
        .unwrap_or_else(|_| {
            Err(RedisError::from(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "redis did not answer in time",
            )))
        })
}

/// The millisecond part of a stream entry id (`<ms>-<seq>`).
fn entry_millis(id: &str) -> Option<u64> {
    id.split_once('-').map_or(id, |(ms, _)| ms).parse().ok()
}

#[cfg(test)]
mod tests {
    use super::entry_millis;

    #[test]
    fn entry_ids_carry_milliseconds() {
        assert_eq!(entry_millis("1712345678901-7"), Some(1_712_345_678_901));
        assert_eq!(entry_millis("12"), Some(12));
        assert_eq!(entry_millis("x-1"), None);
    }
}
