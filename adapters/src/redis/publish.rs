//! Publishing on a topic that may have groups (requests, and topics outside the protocol): the
//! publish script until the publisher has seen the topic served, then a transaction of plain
//! commands.
//!
//! The script (see `scripts.rs`) does everything in one atomic step: `PUBLISH` on the channel,
//! and `XADD` to the stream only when a group member's lease runs, so that a request nobody
//! serves is never stored where a member joining later could run it. Each `redis.call` in a
//! script costs Redis more than the command itself (the script cost ~13 µs of Redis' time per
//! request against ~3 µs for its commands alone), so once the script has said that a member is
//! live, the publisher sends
//!
//! `MULTI` · `GET live` · `PUBLISH channel payload` · `XADD stream MINID ~ <min> * p payload` · `EXEC`
//!
//! instead (one round trip, no script): the live key exists exactly while a member's lease
//! runs, and the transaction reads it atomically with the `XADD`. When `GET` finds it gone
//! (the last member left, or its lease ran out, since the publisher last looked), the entry is
//! in the stream already: the settle script decides as the publish script would have (it
//! keeps the entry when a member is live after all, else deletes it unless a group has been
//! handed it), the receipt counts what it reached, and the topic goes back to the script while
//! it is unserved. So a publish reports the same receivers, and leaves the same entries, as the
//! script alone would have: a request reported as reaching no group is never left for a
//! member to read.
//!
//! The transaction trims the stream (`MINID ~ <now - retention>`) at most once per
//! [`TRIM_EVERY`] per topic: the `MINID` argument costs an `XADD` ~1.2 µs of Redis' time even
//! when nothing is old enough to go (2.8 against 1.7 µs on Redis 7.0), so a stream holds at most
//! a retention and a second of entries (readers drop the older ones unread, as before). The
//! bound is Redis' clock (the script's last answer) carried forward by this process' clock:
//! trimming is approximate (`~`) in any case.
//!
//! On a cluster the same transaction (with `SPUBLISH`) goes to the topic's shard: its keys
//! share the topic's hash slot.

use super::conn::Conn;
use super::errors::is_refusal;
use super::scripts::{PUBLISH_SCRIPT, SETTLE_SCRIPT, SPUBLISH_SCRIPT};
use super::topics::TopicKeys;
use crate::seeded::Seeded;
use ::redis as redis_crate;
use bytes::Bytes;
use opkit::envelope::now_millis;
use parking_lot::Mutex;
use redis_crate::RedisError;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// How often a topic's stream is trimmed by the transaction, at most (ms).
const TRIM_EVERY: i64 = 1_000;

/// How many topics [`Published`] keeps.
const TOPICS_KEPT: usize = 1024;

/// What a publisher knows of the topics it published on: their names, whether each was seen
/// served, and Redis' clock against this process' own.
pub(super) struct Published {
    /// At most [`TOPICS_KEPT`]: the whole map is dropped when it is full.
    topics: Mutex<Seeded<String, Arc<PublishTopic>>>,
    /// Redis' clock minus this process' (ms), from the script's last answer.
    clock: AtomicI64,
}

/// One topic published on.
pub(super) struct PublishTopic {
    keys: TopicKeys,
    /// Set when the script found a live member, cleared when a transaction found none (or
    /// failed): whether the next publish may go without the script.
    served: AtomicBool,
    /// When a transaction last trimmed the stream (Redis' clock, ms; 0 before the first).
    trimmed: AtomicI64,
}

impl Default for Published {
    fn default() -> Self {
        Self {
            topics: Mutex::new(Seeded::default()),
            clock: AtomicI64::new(0),
        }
    }
}

impl Published {
    /// The topic's entry, made by `keys` the first time (within [`TOPICS_KEPT`]).
    pub(super) fn topic<E>(
        &self,
        topic: &str,
        keys: impl FnOnce() -> Result<TopicKeys, E>,
    ) -> Result<Arc<PublishTopic>, E> {
        if let Some(known) = self.topics.lock().get(topic) {
            return Ok(known.clone());
        }
        let made = Arc::new(PublishTopic {
            keys: keys()?,
            served: AtomicBool::new(false),
            trimmed: AtomicI64::new(0),
        });
        let mut kept = self.topics.lock();
        if kept.len() >= TOPICS_KEPT {
            kept.clear();
        }
        kept.insert(topic.to_owned(), made.clone());
        Ok(made)
    }

    /// Publishes `payload` on `topic` over `conn` (see the module docs); returns the number of
    /// receivers: channel subscribers plus groups with a live member.
    pub(super) async fn publish(
        &self,
        mut conn: Conn,
        topic: &PublishTopic,
        payload: Bytes,
        retention_ms: u64,
    ) -> Result<i64, RedisError> {
        let cluster = matches!(conn, Conn::Cluster(_));
        if topic.served.load(Ordering::Acquire) {
            return self
                .by_transaction(&mut conn, topic, &payload, retention_ms, cluster)
                .await;
        }
        let script = if cluster {
            &*SPUBLISH_SCRIPT
        } else {
            &*PUBLISH_SCRIPT
        };
        let keys = &topic.keys;
        // Boxed, as the settle script below: the script runs only until the topic is seen
        // served, and its future would make every publish's larger (moved, and allocated
        // past the allocator's small sizes).
        let (receivers, groups, now): (i64, i64, i64) = Box::pin(async {
            script
                .key(&keys.stream)
                .key(&keys.members)
                .key(&keys.channel)
                .key(&keys.live)
                .arg(payload.as_ref())
                .arg(retention_ms)
                .invoke_async(&mut conn)
                .await
        })
        .await?;
        self.learn(topic, groups, now);
        Ok(receivers)
    }

    /// What a script's answer tells: Redis' clock, and whether `topic` is served (`groups`
    /// with a live member), so whether its next publish may go without the script.
    fn learn(&self, topic: &PublishTopic, groups: i64, redis_now: i64) {
        self.clock.store(redis_now - local_now(), Ordering::Relaxed);
        topic.served.store(groups > 0, Ordering::Release);
    }

    /// The transaction (see the module docs), and the settle script when it found the topic
    /// no longer served.
    async fn by_transaction(
        &self,
        conn: &mut Conn,
        topic: &PublishTopic,
        payload: &[u8],
        retention_ms: u64,
        cluster: bool,
    ) -> Result<i64, RedisError> {
        let keys = &topic.keys;
        let publish: &[u8] = if cluster { b"SPUBLISH" } else { b"PUBLISH" };
        let retention = i64::try_from(retention_ms).unwrap_or(i64::MAX);
        let redis_now = local_now() + self.clock.load(Ordering::Relaxed);
        // Built in a block of its own: the commands are moved into the transaction's future,
        // and locals whose scope spans the `.await` would keep space in this one.
        let sending = {
            // Each command sized for its arguments up front (the payload is copied into two).
            let mut add = sized(&[b"XADD", keys.stream.as_bytes()], 28 + payload.len());
            if redis_now - topic.trimmed.load(Ordering::Relaxed) >= TRIM_EVERY {
                topic.trimmed.store(redis_now, Ordering::Relaxed);
                let min_id = redis_now.saturating_sub(retention).max(0);
                add.arg("MINID").arg("~").arg(min_id);
            }
            add.arg("*").arg("p").arg(payload);
            let mut transaction = redis_crate::Pipeline::with_capacity(3);
            transaction
                .atomic()
                .add_command(sized(&[b"GET", keys.live.as_bytes()], 0))
                .add_command(sized(&[publish, keys.channel.as_bytes(), payload], 0))
                .add_command(add);
            conn.transaction_at(keys.slot, transaction)
        };
        let sent: Result<(Option<i64>, i64, String), RedisError> = sending.await;
        let (groups, subscribers, id) = sent.inspect_err(|_| {
            topic.served.store(false, Ordering::Release);
        })?;
        if let Some(groups) = groups {
            return Ok(subscribers + groups);
        }
        topic.served.store(false, Ordering::Release);
        let (groups, now): (i64, i64) = Box::pin(async {
            SETTLE_SCRIPT
                .key(&keys.stream)
                .key(&keys.members)
                .key(&keys.live)
                .arg(&id)
                .invoke_async(conn)
                .await
        })
        .await
        .map_err(|error| {
            // The entry was added: a refusal now does not make the publish one that ran
            // nothing (which is what a refusal means to the caller of this fn).
            if is_refusal(&error) {
                RedisError::from((
                    redis_crate::ErrorKind::Client,
                    "an entry nobody may read could not be settled",
                    error.to_string(),
                ))
            } else {
                error
            }
        })?;
        self.learn(topic, groups, now);
        Ok(subscribers + groups)
    }
}

/// A command of `args`, with room for up to eight more arguments of `more` bytes in all.
fn sized(args: &[&[u8]], more: usize) -> redis_crate::Cmd {
    let bytes: usize = args.iter().map(|arg| arg.len()).sum();
    let mut command = redis_crate::Cmd::with_capacity(args.len() + 8, bytes + more);
    for arg in args {
        command.arg(*arg);
    }
    command
}

/// This process' clock in ms, as a signed number.
fn local_now() -> i64 {
    i64::try_from(now_millis()).unwrap_or(i64::MAX)
}
