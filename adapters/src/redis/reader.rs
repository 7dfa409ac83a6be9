//! The background tasks behind [`RedisPubSub`](super::RedisPubSub)'s subscriptions: one
//! connection each, reconnecting with backoff until the subscription is dropped.

use super::{Inner, TopicKeys, is_connection_error, millis, redis_crate, transport_error};
use bytes::Bytes;
use futures::StreamExt;
use opkit::protocol::{Subscription, TransportError};
use redis_crate::aio::{MultiplexedConnection, PubSubStream};
use redis_crate::streams::StreamReadReply;
use redis_crate::{RedisError, Value};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The field of a stream entry that holds the payload.
const PAYLOAD_FIELD: &str = "p";

fn subscription(mut receiver: mpsc::UnboundedReceiver<Bytes>) -> Subscription {
    Subscription::new(futures::stream::poll_fn(move |cx| receiver.poll_recv(cx)))
}

/// Doubles a backoff up to its maximum.
struct Backoff {
    next: Duration,
    min: Duration,
    max: Duration,
}

impl Backoff {
    fn new(inner: &Inner) -> Self {
        Self {
            next: inner.options.backoff_min,
            min: inner.options.backoff_min,
            max: inner.options.backoff_max,
        }
    }

    fn step(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(self.max);
        pause
    }

    fn reset(&mut self) {
        self.next = self.min;
    }
}

// ---------------------------------------------------------------------------------------------
// Plain subscriptions: a pub/sub connection per subscription.

/// A pub/sub connection subscribed to `channel` (bounded by the connect and command timeouts).
async fn open_channel(inner: &Inner, channel: &str) -> Result<PubSubStream, TransportError> {
    let bound = inner.options.connect_timeout * 2 + inner.options.command_timeout;
    let open = async {
        let mut pubsub = inner.client.get_async_pubsub().await?;
        pubsub.subscribe(channel).await?;
        Ok::<_, RedisError>(pubsub.into_on_message())
    };
    match tokio::time::timeout(bound, open).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(error)) => Err(transport_error("subscribing", error)),
        Err(_) => Err(transport_error("subscribing", "timed out")),
    }
}

pub(super) async fn subscribe(
    inner: Arc<Inner>,
    topic: String,
) -> Result<Subscription, TransportError> {
    let channel = inner.keys(&topic).channel;
    let messages = open_channel(&inner, &channel).await?;
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(forward_channel(inner, channel, messages, sender));
    Ok(subscription(receiver))
}

/// Forwards a channel's messages until the subscription is dropped; resubscribes after a lost
/// connection.
async fn forward_channel(
    inner: Arc<Inner>,
    channel: String,
    mut messages: PubSubStream,
    sender: mpsc::UnboundedSender<Bytes>,
) {
    let mut backoff = Backoff::new(&inner);
    loop {
        tokio::select! {
            () = sender.closed() => return,
            message = messages.next() => match message {
                Some(message) => {
                    if sender.send(Bytes::copy_from_slice(message.get_payload_bytes())).is_err() {
                        return;
                    }
                }
                None => {
                    tracing::warn!(channel, "lost the redis subscription: reconnecting");
                    loop {
                        tokio::select! {
                            () = sender.closed() => return,
                            () = tokio::time::sleep(backoff.step()) => {}
                        }
                        match open_channel(&inner, &channel).await {
                            Ok(stream) => {
                                tracing::info!(channel, "redis subscription restored");
                                messages = stream;
                                backoff.reset();
                                break;
                            }
                            Err(error) => tracing::debug!(%error, channel, "redis is still unreachable"),
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Group subscriptions: a consumer and a reader connection per subscription.

struct Member {
    inner: Arc<Inner>,
    keys: TopicKeys,
    group: String,
    consumer: String,
    /// `<consumer>:<group>`, the member's entry in the members set.
    member: String,
}

impl Member {
    /// A reader connection (no response timeout shorter than a blocking read) with the lease
    /// taken.
    async fn connect(&self) -> Result<MultiplexedConnection, RedisError> {
        let options = &self.inner.options;
        let mut conn = self
            .inner
            .connect(Some(options.block_for() + options.command_timeout))
            .await?;
        self.inner
            .join(&mut conn, &self.keys, &self.group, &self.member)
            .await?;
        Ok(conn)
    }

    async fn read(&self, conn: &mut MultiplexedConnection) -> Result<StreamReadReply, RedisError> {
        let options = &self.inner.options;
        let reply: Option<StreamReadReply> = redis_crate::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(&self.group)
            .arg(&self.consumer)
            .arg("COUNT")
            .arg(options.batch)
            .arg("BLOCK")
            .arg(millis(options.block_for()))
            .arg("NOACK")
            .arg("STREAMS")
            .arg(&self.keys.stream)
            .arg(">")
            .query_async(conn)
            .await?;
        Ok(reply.unwrap_or_default())
    }

    /// Hands the entries of one read to the subscriber; `false` once it is gone.
    fn deliver(&self, reply: StreamReadReply, sender: &mpsc::UnboundedSender<Bytes>) -> bool {
        let retention = millis(self.inner.options.retention);
        let now = now_millis();
        for key in reply.keys {
            for entry in key.ids {
                let age = entry_millis(&entry.id).map(|at| now.saturating_sub(at));
                if age.is_some_and(|age| age > retention) {
                    tracing::debug!(stream = %key.key, id = %entry.id, "dropping an entry older than the retention");
                    continue;
                }
                let payload = match entry.map.get(PAYLOAD_FIELD) {
                    Some(Value::BulkString(bytes)) => Bytes::copy_from_slice(bytes),
                    Some(Value::SimpleString(text)) => Bytes::copy_from_slice(text.as_bytes()),
                    _ => {
                        tracing::warn!(
                            stream = %key.key,
                            id = %entry.id,
                            "dropping a stream entry without a `p` payload field"
                        );
                        continue;
                    }
                };
                if sender.send(payload).is_err() {
                    tracing::debug!(stream = %key.key, id = %entry.id, "the subscription was dropped: an entry it read is lost");
                    return false;
                }
            }
        }
        true
    }
}

pub(super) async fn subscribe_group(
    inner: Arc<Inner>,
    topic: String,
    group: String,
) -> Result<Subscription, TransportError> {
    let consumer = format!(
        "{}-{}",
        inner.instance,
        inner.next_consumer.fetch_add(1, Ordering::Relaxed)
    );
    let member = Member {
        keys: inner.keys(&topic),
        member: format!("{consumer}:{group}"),
        consumer,
        group,
        inner,
    };
    let conn = member
        .connect()
        .await
        .map_err(|error| transport_error("joining a consumer group", error))?;
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(read_group(member, conn, sender));
    Ok(subscription(receiver))
}

/// Reads a group's entries for one consumer until the subscription is dropped, renewing the
/// lease; reconnects (and re-joins) after a lost connection. Leaves the group at the end.
async fn read_group(
    member: Member,
    conn: MultiplexedConnection,
    sender: mpsc::UnboundedSender<Bytes>,
) {
    let heartbeat = member.inner.options.heartbeat();
    let mut backoff = Backoff::new(&member.inner);
    let mut conn = Some(conn);
    let mut joined = Instant::now();
    loop {
        let Some(current) = conn.as_mut() else {
            tokio::select! {
                () = sender.closed() => break,
                () = tokio::time::sleep(backoff.step()) => {}
            }
            match member.connect().await {
                Ok(fresh) => {
                    tracing::info!(stream = %member.keys.stream, consumer = %member.consumer, "redis group reader restored");
                    conn = Some(fresh);
                    joined = Instant::now();
                    backoff.reset();
                }
                Err(error) => {
                    tracing::debug!(%error, stream = %member.keys.stream, "redis is still unreachable");
                }
            }
            continue;
        };
        if joined.elapsed() >= heartbeat {
            if let Err(error) = member
                .inner
                .join(current, &member.keys, &member.group, &member.member)
                .await
            {
                tracing::warn!(%error, stream = %member.keys.stream, "could not renew a group lease");
                if is_connection_error(&error) {
                    conn = None;
                }
                continue;
            }
            joined = Instant::now();
        }
        tokio::select! {
            () = sender.closed() => break,
            read = member.read(current) => match read {
                Ok(reply) => {
                    if !member.deliver(reply, &sender) {
                        break;
                    }
                }
                Err(error) if error.code() == Some("NOGROUP") => {
                    // The stream or its group is gone (Redis restarted or the key was deleted):
                    // join again, which recreates both.
                    tracing::warn!(stream = %member.keys.stream, "the consumer group is gone: joining again");
                    if let Err(error) = member.inner.join(current, &member.keys, &member.group, &member.member).await {
                        tracing::warn!(%error, stream = %member.keys.stream, "could not re-create a consumer group");
                        conn = None;
                    } else {
                        joined = Instant::now();
                    }
                }
                Err(error) => {
                    if is_connection_error(&error) {
                        tracing::warn!(%error, stream = %member.keys.stream, "lost the redis group reader: reconnecting");
                    } else {
                        tracing::warn!(%error, stream = %member.keys.stream, "a group read failed: reconnecting");
                    }
                    conn = None;
                }
            }
        }
    }
    drop(conn);
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

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, millis)
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
