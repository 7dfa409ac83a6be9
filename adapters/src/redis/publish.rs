//! Publishing on a topic that may have groups (requests, and topics outside the protocol): the
//! publish script until the publisher has seen the topic served, then three plain commands.
//!
//! The script (see `scripts.rs`) does everything in one atomic step: `PUBLISH` on the channel,
//! and `XADD` to the stream only when a group member's lease runs, so that a request nobody
//! serves is never stored where a member joining later could run it. Each `redis.call` in a
//! script costs Redis more than the command itself (the script cost ~13 µs of Redis' time per
//! request against ~3 µs for its commands alone), so once the script has said that a member is
//! live, the publisher sends
//!
//! `GET live` · `PUBLISH channel payload` · `XADD stream MINID ~ <min> * p payload`
//!
//! instead, in one write (one round trip, no script): the live key exists exactly while a
//! member's lease runs. When `GET` finds it gone (the last member left, or its lease ran out,
//! since the publisher last looked), the entry is in the stream already: the settle script
//! decides as the publish script would have (it keeps the entry when a member is live after
//! all, else deletes it unless a group has been handed it), the receipt counts what it reached,
//! and the topic goes back to the script while it is unserved. The settle script runs after the
//! `XADD` (one connection runs its commands in order) and atomically, so a publish reports the
//! same receivers, and leaves the same entries, as the script alone would have: a request
//! reported as reaching no group is never left for a member to read.
//!
//! The three need not be one transaction: other clients' commands may run between the `GET`
//! and the `XADD`, and what they can do there is what they could do right after a transaction
//! (a last member leaving after `GET` found it live leaves the entry for the group, as it would
//! had it left after the `XADD`; a member joining after `GET` found none is found by the settle
//! script). Without `MULTI` .. `EXEC` a request costs Redis two commands and the client two
//! answers fewer. What a transaction did give is all or nothing, which the answers say
//! instead: each command is answered on its own, and the publish counts as refused (so not
//! sent) only when both the `PUBLISH` and the `XADD` were refused; when one of them ran, a
//! failure of the other is an error of unknown outcome (a replica refuses `XADD` with
//! `READONLY` but runs `PUBLISH`).
//!
//! The `XADD` trims the stream (`MINID ~ <now - retention>`) at most once per [`TRIM_EVERY`]
//! per topic: the `MINID` argument costs an `XADD` ~1.2 µs of Redis' time even when nothing is
//! old enough to go (2.8 against 1.7 µs on Redis 7.0), so a stream holds at most a retention
//! and a second of entries (readers drop the older ones unread, as before). The bound is Redis'
//! clock (the script's last answer) carried forward by this process' clock: trimming is
//! approximate (`~`) in any case.
//!
//! On a cluster the same commands (with `SPUBLISH`) go to the topic's shard (its keys share the
//! topic's hash slot) as one transaction: the cluster client follows a `MOVED` or `ASK` by
//! sending again, which a transaction refused as a whole makes safe, where plain commands
//! could be run twice.

use super::conn::Conn;
use super::errors::is_refusal;
use super::scripts::{PUBLISH_SCRIPT, SETTLE_SCRIPT, SPUBLISH_SCRIPT};
use super::topics::TopicKeys;
use crate::seeded::Seeded;
use ::redis as redis_crate;
use bytes::Bytes;
use opkit::envelope::now_millis;
use parking_lot::Mutex;
use redis_crate::{RedisError, Value, from_redis_value};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// How often a topic's stream is trimmed by the plain commands' `XADD`, at most (ms).
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
    /// Set when the script found a live member, cleared when the plain commands found none (or
    /// failed): whether the next publish may go without the script.
    served: AtomicBool,
    /// When the plain commands last trimmed the stream (Redis' clock, ms; 0 before the first).
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
                .by_commands(&mut conn, topic, &payload, retention_ms, cluster)
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

    /// The plain commands (see the module docs), and the settle script when they found the
    /// topic no longer served.
    async fn by_commands(
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
        // Built in a block of its own: the commands are moved into the sending future, and
        // locals whose scope spans the `.await` would keep space in this one.
        let sending = {
            // Each command sized for its arguments up front (the payload is copied into two).
            let mut add = sized(&[b"XADD", keys.stream.as_bytes()], 28 + payload.len());
            if redis_now - topic.trimmed.load(Ordering::Relaxed) >= TRIM_EVERY {
                topic.trimmed.store(redis_now, Ordering::Relaxed);
                let min_id = redis_now.saturating_sub(retention).max(0);
                add.arg("MINID").arg("~").arg(min_id);
            }
            add.arg("*").arg("p").arg(payload);
            let mut commands = redis_crate::Pipeline::with_capacity(3);
            if cluster {
                commands.atomic();
            }
            commands
                .add_command(sized(&[b"GET", keys.live.as_bytes()], 0))
                .add_command(sized(&[publish, keys.channel.as_bytes(), payload], 0))
                .add_command(add);
            conn.answers_at(keys.slot, commands)
        };
        let sent = sending.await.and_then(read_answers);
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

/// What the `GET`, `PUBLISH` and `XADD` of [`Published::by_commands`] answered: the live
/// key's group count (`None` when the key is gone, or could not be read: the settle script
/// then decides), the channel's subscribers and the entry's id.
///
/// A refusal (see [`is_refusal`]) is returned as such only when nothing ran: the `XADD` was
/// refused and the `PUBLISH` was too, or reached no subscriber (a replica runs `PUBLISH` for
/// its own subscribers and refuses `XADD` with `READONLY`). Any other failure is an error that
/// is not a refusal: the request may have reached someone.
fn read_answers(answers: Vec<Value>) -> Result<(Option<i64>, i64, String), RedisError> {
    let Ok([live, published, added]) = <[Value; 3]>::try_from(answers) else {
        return Err(RedisError::from((
            redis_crate::ErrorKind::UnexpectedReturnType,
            "a publish was not answered with one answer per command",
        )));
    };
    let published = published
        .extract_error()
        .and_then(|published| Ok(from_redis_value::<i64>(published)?));
    let (subscribers, id) = match (published, added.extract_error()) {
        (Ok(subscribers), Ok(added)) => (subscribers, from_redis_value::<String>(added)?),
        (Ok(0), Err(refused)) if is_refusal(&refused) => return Err(refused),
        (Err(published), Err(refused)) if is_refusal(&published) && is_refusal(&refused) => {
            return Err(refused);
        }
        (Err(error), _) | (_, Err(error)) => {
            return Err(RedisError::from((
                redis_crate::ErrorKind::Client,
                "a request was only partly published (it may have run)",
                error.to_string(),
            )));
        }
    };
    let live = match live {
        Value::ServerError(_) => None,
        live => from_redis_value(live)?,
    };
    Ok((live, subscribers, id))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A Redis answer from its RESP bytes.
    fn answer(resp: &str) -> Value {
        redis_crate::parse_redis_value(resp.as_bytes()).unwrap()
    }

    const READONLY: &str = "-READONLY You can't write against a read only replica.\r\n";

    #[test]
    fn answers_of_a_served_and_an_unserved_topic() {
        let served = read_answers(vec![
            answer("$1\r\n2\r\n"),
            answer(":1\r\n"),
            answer("$3\r\n1-0\r\n"),
        ]);
        assert_eq!(served.unwrap(), (Some(2), 1, "1-0".to_owned()));
        let gone = read_answers(vec![
            answer("$-1\r\n"),
            answer(":0\r\n"),
            answer("$3\r\n1-1\r\n"),
        ]);
        assert_eq!(gone.unwrap(), (None, 0, "1-1".to_owned()));
        // A live key that cannot be read is left to the settle script.
        let unread = read_answers(vec![
            answer("-NOPERM no\r\n"),
            answer(":0\r\n"),
            answer("$3\r\n1-2\r\n"),
        ]);
        assert_eq!(unread.unwrap(), (None, 0, "1-2".to_owned()));
    }

    #[test]
    fn a_refusal_only_when_nothing_ran() {
        // A replica: `PUBLISH` runs (nobody subscribed there), `XADD` is refused.
        let replica = read_answers(vec![answer("$-1\r\n"), answer(":0\r\n"), answer(READONLY)]);
        assert!(is_refusal(&replica.unwrap_err()));
        // Both refused.
        let loading = "-LOADING Redis is loading the dataset in memory\r\n";
        let both = read_answers(vec![answer(loading), answer(loading), answer(loading)]);
        assert!(is_refusal(&both.unwrap_err()));
        // `PUBLISH` reached a subscriber: the request may have run.
        let reached = read_answers(vec![answer("$-1\r\n"), answer(":1\r\n"), answer(READONLY)]);
        let error = reached.unwrap_err();
        assert!(!is_refusal(&error), "{error}");
        assert!(error.to_string().contains("may have run"), "{error}");
        // The entry was added though `PUBLISH` failed: a member may run it.
        let added = read_answers(vec![
            answer("$-1\r\n"),
            answer(READONLY),
            answer("$3\r\n1-0\r\n"),
        ]);
        assert!(!is_refusal(&added.unwrap_err()));
        // A command that failed otherwise.
        let failed = read_answers(vec![
            answer("$-1\r\n"),
            answer(":0\r\n"),
            answer("-OOM no memory\r\n"),
        ]);
        assert!(!is_refusal(&failed.unwrap_err()));
    }

    #[test]
    fn answers_of_another_shape_are_an_error() {
        let error = read_answers(vec![answer(":1\r\n")]).unwrap_err();
        assert!(
            error.to_string().contains("one answer per command"),
            "{error}"
        );
        assert!(
            read_answers(vec![
                answer("$-1\r\n"),
                answer("$1\r\nx\r\n"),
                answer("$1\r\n1\r\n")
            ])
            .is_err()
        );
    }
}
