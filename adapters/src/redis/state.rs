//! [`RedisState`]: the state one [`RedisPubSub`](super::RedisPubSub) and its clones share — the
//! command connection and its reconnection, the names of a topic, publishing, joining and
//! leaving groups, and the served-topics memory behind the rejoin grace.

use super::conn::{Backend, Conn, Slot};
use super::errors::{is_connection_error, is_refusal, transport_error, transport_not_sent};
use super::options::RedisOptions;
use super::options::millis;
use super::publish::Published;
use super::scripts::{JOIN_SCRIPT, LEAVE_SCRIPT};
use super::topics::{REQUEST_PREFIX, TopicKeys, has_no_groups, is_reply_topic};
use super::{claim, replies, shards};
use crate::seeded::Seeded;
use ::redis as redis_crate;
use bytes::Bytes;
use opkit::protocol::{Receipt, TransportError};
use parking_lot::Mutex;
use redis_crate::RedisError;
use redis_crate::cluster_routing::{MultipleNodeRoutingInfo, ResponsePolicy, RoutingInfo};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub(super) struct RedisState {
    pub(super) backend: Backend,
    pub(super) options: RedisOptions,
    /// This instance's random id: the prefix of its consumers' names.
    pub(super) instance: String,
    pub(super) next_consumer: AtomicU64,
    /// The multiplexed connection for publishing and housekeeping, with its number; `None`
    /// until connected or after it failed. Only the failure of the connection a command ran
    /// on drops it (compared by number), so a late failure of a replaced connection never
    /// drops its successor.
    pub(super) command: Mutex<Option<(u64, Conn)>>,
    /// The number of the next command connection.
    pub(super) next_command: AtomicU64,
    /// Serializes reconnections of the command connection.
    pub(super) connecting: tokio::sync::Mutex<()>,
    /// When each request topic this instance published on last reached a replica; pruned of
    /// entries older than the rejoin grace whenever it grows past [`SERVED_PRUNE_AT`].
    pub(super) served: Mutex<Seeded<String, Instant>>,
    /// The sharded pub/sub connection and its subscribers (cluster only).
    pub(super) shards: shards::Shards,
    /// The held requests of this instance's redelivering readers that it answered.
    pub(super) answers: claim::Answers,
    /// The group readers about to write, which take the replies published meanwhile.
    pub(super) replies: replies::Outboxes,
    /// The topics published on with groups possible: their names and whether each was seen
    /// served (see [`publish`](super::publish)).
    pub(super) published: Published,
}

/// A topic as it stands in its names: itself, or on a cluster its hash tag `{T}`.
struct Tag<'a> {
    topic: &'a str,
    cluster: bool,
}

impl fmt::Display for Tag<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.cluster {
            write!(f, "{{{}}}", self.topic)
        } else {
            f.write_str(self.topic)
        }
    }
}

/// How many served topics are remembered before the stale ones are pruned.
const SERVED_PRUNE_AT: usize = 4096;

impl RedisState {
    /// The names of `topic`; on a cluster, hash-tagged by the topic (`{T}`), so that all of
    /// them share one hash slot.
    pub(super) fn names(&self, topic: &str) -> TopicKeys {
        let prefix = &self.options.prefix;
        let tag = self.tag(topic);
        let channel = format!("{prefix}{tag}");
        TopicKeys {
            slot: Slot::of(&channel),
            channel,
            stream: format!("{prefix}stream:{tag}"),
            members: format!("{prefix}members:{tag}"),
            live: format!("{prefix}live:{tag}"),
        }
    }

    /// `topic` as it stands in its names (written where it is formatted, no string of its own).
    fn tag<'a>(&self, topic: &'a str) -> Tag<'a> {
        Tag {
            topic,
            cluster: self.backend.is_cluster(),
        }
    }

    /// Refuses on a cluster a topic that cannot be a hash tag (empty, or starting with `}`: its
    /// names would hash to different slots).
    fn check_tag(&self, topic: &str) -> Result<(), TransportError> {
        if self.backend.is_cluster() && (topic.is_empty() || topic.starts_with('}')) {
            return Err(TransportError::not_sent(format!(
                "redis: the topic `{topic}` cannot be a cluster hash tag (it is empty or starts with `}}`)"
            )));
        }
        Ok(())
    }

    /// The pub/sub channel of `topic` (see [`names`](Self::names)), refused as
    /// [`keys`](Self::keys) are.
    pub(super) fn channel(&self, topic: &str) -> Result<String, TransportError> {
        self.check_tag(topic)?;
        Ok(format!("{}{}", self.options.prefix, self.tag(topic)))
    }

    /// [`names`](Self::names), refusing on a cluster a topic that cannot be a hash tag.
    pub(super) fn keys(&self, topic: &str) -> Result<TopicKeys, TransportError> {
        self.check_tag(topic)?;
        Ok(self.names(topic))
    }

    /// A new connection (bounded by the connect timeout).
    pub(super) async fn connect(&self, response_timeout: Duration) -> Result<Conn, RedisError> {
        match tokio::time::timeout(
            self.options.connect_timeout * 2,
            self.backend
                .connect(self.options.connect_timeout, response_timeout),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(RedisError::from(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "connecting to redis timed out",
            ))),
        }
    }

    /// The command connection and its number, connecting if there is none.
    pub(super) async fn command_connection(&self) -> Result<(u64, Conn), RedisError> {
        if let Some(cached) = self.command.lock().clone() {
            return Ok(cached);
        }
        let _connecting = self.connecting.lock().await;
        if let Some(cached) = self.command.lock().clone() {
            return Ok(cached);
        }
        let conn = self.connect(self.options.command_timeout).await?;
        let number = self.next_command.fetch_add(1, Ordering::Relaxed);
        *self.command.lock() = Some((number, conn.clone()));
        Ok((number, conn))
    }

    /// Drops the command connection `number` if it is still the cached one (the next command
    /// connects afresh); a newer connection is kept.
    pub(super) fn drop_command_connection(&self, number: u64) {
        let mut command = self.command.lock();
        if command
            .as_ref()
            .is_some_and(|(cached, _)| *cached == number)
        {
            *command = None;
        }
    }

    /// Runs `f` on the command connection; a failure of that connection drops it so the next
    /// command reconnects. Never retries: a failure is reported at once, as
    /// [`Delivery::NotSent`](opkit::protocol::Delivery::NotSent) when no connection was
    /// had (nothing was written), else as unknown.
    pub(super) async fn command<T, F, Fut>(&self, what: &str, f: F) -> Result<T, TransportError>
    where
        F: FnOnce(Conn) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        let cluster = self.backend.is_cluster();
        let cached = self.command.lock().clone();
        // On one server a connection's own response timeout (the command timeout) bounds each
        // command on it: with a connection at hand, no timer is needed. Otherwise getting the
        // connection (waiting for another caller's attempt included) is bounded on its own: a
        // publish that cannot get one soon fails as not sent, before a caller's deadline turns
        // it into a timeout of unknown outcome. A cluster connects to several nodes: it gets
        // twice as long. Connecting and the command together are bounded by that and the
        // command timeout (always on a cluster, whose client retries past its own timeout).
        let connecting = if cluster {
            self.options.connect_timeout * 2
        } else {
            self.options.connect_timeout
        };
        let deadline = (cluster || cached.is_none())
            .then(|| tokio::time::Instant::now() + connecting + self.options.command_timeout);
        let (number, conn) = match cached {
            Some(cached) => cached,
            // Boxed: connecting is rare, and its future is larger than the rest of this one,
            // which every publish carries (and the allocator serves fastest under a KiB).
            None => {
                match tokio::time::timeout(connecting, Box::pin(self.command_connection())).await {
                    Ok(Ok(connected)) => connected,
                    Ok(Err(error)) => return Err(transport_not_sent(what, error)),
                    Err(_) => {
                        return Err(transport_not_sent(
                            what,
                            "no connection to redis could be made in time",
                        ));
                    }
                }
            }
        };
        // One future for the command, awaited bare or under the bound (boxed with its timer,
        // which a connection at hand on one server does not need).
        let run = f(conn);
        let outcome = match deadline {
            None => Ok(run.await),
            Some(deadline) => Box::pin(tokio::time::timeout_at(deadline, run)).await,
        };
        match outcome {
            Ok(Ok(value)) => Ok(value),
            // A single server that answers with a refusal (`READONLY`, `LOADING`, `NOPERM`,
            // ...) ran nothing: a publish is one script or one command, or its plain commands
            // report a refusal only when none of them ran (`publish.rs`). A cluster client may
            // have written an earlier attempt before the refusal it reports, so there it stays
            // unknown.
            Ok(Err(error)) if !cluster && is_refusal(&error) => {
                Err(transport_not_sent(what, error))
            }
            Ok(Err(error)) => {
                if is_connection_error(&error) {
                    self.drop_command_connection(number);
                }
                Err(transport_error(what, error))
            }
            Err(_) => {
                self.drop_command_connection(number);
                Err(transport_error(what, "timed out"))
            }
        }
    }

    /// Checks the command connection (when there is one) with a `PING` answered within the
    /// ping timeout, and drops it when it is not: a connection that goes silent is noticed
    /// even when every caller gave up on its commands before their own timeout. On a cluster
    /// the `PING` goes to every master (each has a socket of its own), and only silence
    /// counts: a node failing over answers with errors, which are the cluster client's to
    /// handle.
    pub(super) async fn check_command_connection(&self) {
        let Some((number, conn)) = self.command.lock().clone() else {
            return;
        };
        let ping = async move {
            match conn {
                Conn::Single(mut conn) => {
                    redis_crate::cmd("PING").query_async::<()>(&mut conn).await
                }
                Conn::Cluster(mut conn) => {
                    let every_master = RoutingInfo::MultiNode((
                        MultipleNodeRoutingInfo::AllMasters,
                        Some(ResponsePolicy::AllSucceeded),
                    ));
                    conn.route_command(redis_crate::cmd("PING"), every_master)
                        .await
                        .map(drop)
                }
            }
        };
        let cluster = self.backend.is_cluster();
        let failure = match tokio::time::timeout(self.options.pong_timeout, ping).await {
            Ok(Ok(())) => return,
            Ok(Err(error))
                if cluster || !(error.is_io_error() || error.is_connection_dropped()) =>
            {
                return;
            }
            Ok(Err(error)) => error.to_string(),
            Err(_) => "no answer to PING in time".to_owned(),
        };
        tracing::warn!(%failure, "the redis command connection failed its check: replacing it");
        self.drop_command_connection(number);
    }

    /// Takes or renews a group member's lease on `conn` (creating the group if needed).
    pub(super) async fn join(
        &self,
        conn: &mut Conn,
        keys: &TopicKeys,
        group: &str,
        member: &str,
    ) -> Result<(), RedisError> {
        let stream_ttl = self.options.retention + self.options.lease * 2;
        JOIN_SCRIPT
            .key(&keys.stream)
            .key(&keys.members)
            .key(&keys.live)
            .arg(group)
            .arg(member)
            .arg(millis(self.options.lease))
            .arg(millis(stream_ttl))
            .invoke_async::<()>(conn)
            .await
    }

    /// Gives a member's lease back and deletes its consumer (best effort).
    pub(super) async fn leave(&self, keys: &TopicKeys, group: &str, member: &str, consumer: &str) {
        let result = self
            .command("leaving a group", |mut conn| async move {
                LEAVE_SCRIPT
                    .key(&keys.stream)
                    .key(&keys.members)
                    .key(&keys.live)
                    .arg(group)
                    .arg(member)
                    .arg(consumer)
                    .invoke_async::<()>(&mut conn)
                    .await
            })
            .await;
        if let Err(error) = result {
            tracing::debug!(%error, group, consumer, "could not leave a group (its lease will expire)");
        }
    }

    /// Publishes `payload` on `topic`: by a plain `PUBLISH` on a reply or abort topic (which
    /// has no groups), else as [`publish`](super::publish) says.
    pub(super) async fn publish(
        &self,
        topic: &str,
        payload: Bytes,
    ) -> Result<Receipt, TransportError> {
        if has_no_groups(topic) {
            return self.publish_plain(topic, payload).await;
        }
        let published = self.published.topic(topic, || self.keys(topic))?;
        let retention = millis(self.options.retention);
        let receivers: i64 = self
            .command("publishing", |conn| {
                self.published.publish(conn, &published, payload, retention)
            })
            .await?;
        let receivers = usize::try_from(receivers).unwrap_or(0);
        self.note_served(topic, receivers)?;
        Ok(Receipt::delivered(receivers))
    }

    /// A `PUBLISH` (`SPUBLISH` on a cluster) on the channel of a topic without groups. A reply
    /// goes out with the next read of a group reader about to write (see
    /// [`replies`](super::replies)) when there is one, else on the command connection; the
    /// reply that ends a held request's call marks it answered (acknowledged by its reader).
    async fn publish_plain(&self, topic: &str, payload: Bytes) -> Result<Receipt, TransportError> {
        let channel = self.channel(topic)?;
        let reply = is_reply_topic(topic);
        let ending = if reply {
            self.answers.ending(&payload)
        } else {
            None
        };
        let handed = if reply {
            let holder = ending.as_ref().map(|ending| ending.reader);
            self.replies.offer(holder, channel, payload)
        } else {
            Err((channel, payload))
        };
        let receivers: i64 = match handed {
            Ok((reader, answer)) => {
                // Its reader acknowledges the entry in the write that carries the reply.
                let same_write = ending.as_ref().filter(|ending| ending.reader == reader);
                if let Some(ending) = same_write {
                    self.answers.answered(ending);
                }
                let published = answer
                    .await
                    .unwrap_or_else(|_| {
                        Err(RedisError::from(std::io::Error::other(
                            "the group reader carrying the reply stopped",
                        )))
                    })
                    .map_err(|error| transport_error("publishing", error))?;
                if let Some(ending) = ending.filter(|ending| ending.reader != reader) {
                    self.answers.answered(&ending);
                }
                published
            }
            Err((channel, payload)) => {
                let command = if self.backend.is_cluster() {
                    "SPUBLISH"
                } else {
                    "PUBLISH"
                };
                let published = self
                    .command("publishing", |mut conn| async move {
                        let sending = {
                            let mut publish = redis_crate::cmd(command);
                            publish.arg(&channel).arg(payload.as_ref());
                            conn.query_at(|| Slot::of(&channel), publish)
                        };
                        sending.await
                    })
                    .await?;
                if let Some(ending) = &ending {
                    self.answers.answered(ending);
                }
                published
            }
        };
        Ok(Receipt::delivered(usize::try_from(receivers).unwrap_or(0)))
    }

    /// Remembers request topics that reached a replica; a publish on one that reaches nobody
    /// within the rejoin grace is a transport error, not "nobody serves it".
    pub(super) fn note_served(&self, topic: &str, receivers: usize) -> Result<(), TransportError> {
        let grace = self.options.rejoin_grace;
        if grace.is_zero() || !topic.starts_with(REQUEST_PREFIX.as_str()) {
            return Ok(());
        }
        let mut served = self.served.lock();
        if receivers > 0 {
            if let Some(seen) = served.get_mut(topic) {
                *seen = Instant::now();
            } else {
                if served.len() >= SERVED_PRUNE_AT {
                    served.retain(|_, seen| seen.elapsed() < grace);
                }
                served.insert(topic.to_owned(), Instant::now());
            }
            return Ok(());
        }
        match served.get(topic) {
            // Nobody received it: no subscriber, and no live member (so no stream entry).
            Some(seen) if seen.elapsed() < grace => Err(TransportError::not_sent(format!(
                "no replica serves `{topic}` right now, though one did {} ms ago: replicas may be rejoining (after a Redis restart or a redeploy); retry",
                seen.elapsed().as_millis()
            ))),
            _ => Ok(()),
        }
    }
}

/// Checks the command connection every ping interval until the transport is dropped.
pub(super) async fn check_command_connection_every_interval(inner: std::sync::Weak<RedisState>) {
    loop {
        let Some(interval) = inner.upgrade().map(|inner| inner.options.ping_interval) else {
            return;
        };
        tokio::time::sleep(interval).await;
        let Some(inner) = inner.upgrade() else { return };
        inner.check_command_connection().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future an async fn of `RedisState` taking a topic and a payload returns.
    fn future_size<'a, Fut>(_: impl Fn(&'a RedisState, &'a str, Bytes) -> Fut) -> usize {
        std::mem::size_of::<Fut>()
    }

    /// Every publish boxes this future: it stays under 1 KiB (the allocator's small sizes, and
    /// bytes every publish moves) by boxing what is rare (connecting, the publish and settle
    /// scripts, a cluster client's futures) and by scoping what is moved into a command's
    /// future. It was 3,256 bytes.
    #[test]
    fn a_publish_future_stays_small() {
        let size = future_size(RedisState::publish);
        assert!(size <= 1024, "RedisState::publish's future is {size} bytes");
    }
}
