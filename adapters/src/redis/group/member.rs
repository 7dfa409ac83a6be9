//! [`Member`]: one consumer of a group, and what it does against Redis — join (taking its
//! lease), read, acknowledge, claim the entries of dead members — each bounded in time.

use super::{Delivery, Queued};
use crate::redis::claim::{self, Held};
use crate::redis::conn::{Conn, Slot};
use crate::redis::entries::{self, Entry};
use crate::redis::options::millis;
use crate::redis::replies::Reply;
use crate::redis::state::RedisState;
use crate::redis::topics::TopicKeys;
use ::redis as redis_crate;
use bytes::Bytes;
use opkit::envelope::now_millis;
use redis_crate::{RedisError, Value};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::mpsc;

/// A consumer of a group, with the lease it renews (see [`claim`](crate::redis::claim)).
pub(super) struct Member {
    pub(super) inner: Arc<RedisState>,
    pub(super) keys: TopicKeys,
    pub(super) group: String,
    pub(super) consumer: String,
    /// `<consumer>:<group>`, the member's entry in the members set.
    pub(super) member: String,
    pub(super) delivery: Delivery,
    /// This reader's number in its process (the consumer name's suffix).
    pub(super) reader: u64,
    /// What the subscriber has not taken yet.
    pub(super) queued: Arc<Queued>,
}

impl Member {
    /// A reader connection with the lease taken. Its response timeout is a blocking read's
    /// block time plus the ping timeout: a connection that goes silent fails its next read
    /// within that, and is replaced.
    pub(super) async fn connect(&self) -> Result<Conn, RedisError> {
        let options = &self.inner.options;
        let mut conn = self
            .inner
            .connect(options.block_for() + options.pong_timeout)
            .await?;
        bounded(
            options.command_timeout,
            self.inner
                .join(&mut conn, &self.keys, &self.group, &self.member),
        )
        .await?;
        Ok(conn)
    }

    pub(super) async fn read(&self, conn: &mut Conn) -> Result<Vec<Entry>, RedisError> {
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
        command.arg("STREAMS").arg(&self.keys.stream).arg(">");
        let reply: Value = conn.query_at(|| self.keys.slot, command).await?;
        entries::read_reply(reply)
    }

    /// Publishes `replies` (each answered to its publisher as soon as Redis answers it),
    /// acknowledges `acks` (when there are any) and reads the next entries. The commands are
    /// queued on the reader's connection before it is flushed, so they leave in one write and
    /// Redis runs them in that order (the replies before the `XACK` that may acknowledge their
    /// entries, both answered before the `XREADGROUP` blocks): neither costs a round trip of
    /// its own. The acknowledgement's outcome is returned apart from the read's, so that
    /// entries read are delivered even when it failed.
    pub(super) async fn acknowledge_and_read(
        &self,
        conn: &mut Conn,
        acks: &[String],
        replies: Vec<Reply>,
    ) -> (Result<(), RedisError>, Result<Vec<Entry>, RedisError>) {
        // A clone of a connection shares its socket (and, on one server, its order of
        // commands; on a cluster the replies go to their channels' masters).
        let command = if self.inner.backend.is_cluster() {
            "SPUBLISH"
        } else {
            "PUBLISH"
        };
        let publishing = futures::future::join_all(replies.into_iter().map(|reply| {
            let mut conn = conn.clone();
            async move {
                let mut publish = redis_crate::cmd(command);
                publish.arg(&reply.channel).arg(reply.payload.as_ref());
                let published = conn.query_at(|| Slot::of(&reply.channel), publish).await;
                let _ = reply.answer.send(published);
            }
        }));
        let mut ack_conn = conn.clone();
        let acknowledging = async {
            if acks.is_empty() {
                return Ok(());
            }
            claim::acknowledge(&mut ack_conn, &self.keys, &self.group, acks).await
        };
        // `join` polls in argument order: the replies are queued first, then the `XACK`.
        let (_, acked, read) = futures::join!(publishing, acknowledging, self.read(conn));
        (acked, read)
    }

    /// Hands entries to the subscriber (remembering them in `held` when redelivering);
    /// `false` once the subscriber is gone.
    pub(super) fn deliver(
        &self,
        entries: Vec<Entry>,
        sender: &mpsc::UnboundedSender<Bytes>,
        held: &mut Held,
    ) -> bool {
        let retention = millis(self.inner.options.retention);
        let now = now_millis();
        let stream = &self.keys.stream;
        for Entry { id, payload } in entries {
            if self.delivery == Delivery::Redeliver {
                let peeked = payload.as_deref().unwrap_or_default();
                held.push(&self.inner.answers, id.clone(), peeked);
            }
            let age = entry_millis(&id).map(|at| now.saturating_sub(at));
            if age.is_some_and(|age| age > retention) {
                tracing::debug!(%stream, %id, "dropping an entry older than the retention");
                continue;
            }
            let Some(payload) = payload else {
                tracing::warn!(%stream, %id, "dropping a stream entry without a `p` payload field");
                continue;
            };
            // Counted before it is sent, so the subscriber's count never goes below zero.
            self.queued.count.fetch_add(1, Ordering::AcqRel);
            if sender.send(payload).is_err() {
                tracing::debug!(%stream, %id, "the subscription was dropped: an entry it read is lost");
                return false;
            }
        }
        true
    }

    /// The periodic work of a member: renews its lease and, when redelivering, claims the
    /// entries of dead members (handed to the subscriber). `Ok(false)` once the subscriber is
    /// gone.
    pub(super) async fn heartbeat(
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

/// `future`'s output, or a timeout error after `bound`.
pub(super) async fn bounded<T>(
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
