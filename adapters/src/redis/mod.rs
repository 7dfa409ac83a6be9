//! The call protocol over Redis: [`RedisPubSub`], a [`PubSub`] transport built on Redis
//! Streams consumer groups (competing consumers) and Redis pub/sub (fan-out), on one Redis
//! server or on a Redis Cluster.
//!
//! Any number of processes connect to one Redis server (or one cluster); each runs a
//! [`CallHandler`](opkit::protocol::CallHandler) (a replica serving operations), a
//! [`PendingRequestMap`](opkit::protocol::PendingRequestMap) (a caller), or both. The protocol
//! code is unchanged: it only sees the [`PubSub`] trait.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use opkit::prelude::*;
//! use opkit::protocol::{CallHandler, PendingRequestMap};
//! use opkit_adapters::redis::RedisPubSub;
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! // A replica (usually its own process):
//! let registry = OperationRegistry::new();
//! registry.register(
//!     OperationSpec::new("math", "double", OperationKind::Query),
//!     Handler::unary(|input, _ctx| async move { Ok(json!(input["n"].as_i64().unwrap_or(0) * 2)) }),
//! )?;
//! let bus = Arc::new(RedisPubSub::connect("redis://127.0.0.1:6379/").await?);
//! // On a Redis Cluster (any of its nodes; the others are discovered):
//! // RedisPubSub::connect("redis+cluster://10.0.0.1:7000,10.0.0.2:7000/").await?
//! let _replica = CallHandler::new(registry, bus.clone()).spawn().await?;
//!
//! // A caller (anywhere that reaches the same Redis):
//! let env = OperationEnv::remote(PendingRequestMap::connect(bus).await?);
//! assert_eq!(env.call("math.double", json!({"n": 21})).await?.data, json!(42));
//! # Ok(())
//! # }
//! ```
//!
//! # Layout in Redis
//!
//! Every name starts with [`RedisOptions::with_prefix`] (default `opkit:`, written `P` below);
//! `T` is a protocol topic such as `opkit.request.math.add`.
//!
//! | one server | a cluster | Redis type | what it holds |
//! |---|---|---|---|
//! | `P` + `T` | `P` + `{T}` | pub/sub channel (sharded on a cluster) | every message of `T`, for plain [`subscribe`](PubSub::subscribe)rs (fan-out) |
//! | `P` + `stream:` + `T` | `P` + `stream:{T}` | stream, one consumer group per [`subscribe_group`](PubSub::subscribe_group) group | the messages of `T` for groups: field `p` = the payload bytes |
//! | `P` + `members:` + `T` | `P` + `members:{T}` | sorted set | the live group members of `T`: member `<consumer>:<group>`, score = lease expiry (ms, Redis clock) |
//!
//! **Publishing** runs one Lua script (atomic, one round trip): `PUBLISH` (`SPUBLISH` on a
//! cluster) on the channel, then, only if `T` has a live group member, `XADD` to the stream
//! with `MINID ~ now - retention` trimming. A topic nobody groups on (reply and abort topics)
//! never gets a stream. The [`Receipt`] counts the channel's subscribers plus the groups with
//! a live member, so a request for an operation no replica serves fails at once with
//! `OPERATION_NOT_FOUND`, and a subscription whose caller is gone is stopped by its handler.
//!
//! **A group subscription** is a consumer of its own (`<instance>-<n>`, one per subscription)
//! in the group, with a dedicated connection that loops on
//! `XREADGROUP GROUP <group> <consumer> COUNT <batch> BLOCK <block> NOACK STREAMS <stream> >`
//! (without `NOACK` for [`subscribe_group_idempotent`](PubSub::subscribe_group_idempotent), see
//! below). Joining creates the group (`XGROUP CREATE .. $ MKSTREAM`) and takes a lease in the
//! members set, in one script, before the subscription is handed out (so it is live when
//! [`subscribe_group`](PubSub::subscribe_group) resolves); the reader renews the lease every
//! third of [`RedisOptions::with_lease`]. Dropping the subscription deletes the consumer and its
//! lease. A plain subscription is a pub/sub connection of its own, `SUBSCRIBE`d to the channel
//! (on a cluster: see below).
//!
//! Why streams for groups and pub/sub for the rest: a consumer group hands each entry to exactly
//! one consumer, across processes, which is what competing replicas need; pub/sub reaches every
//! current subscriber and reports how many it reached, which is what replies and aborts need,
//! and it stores nothing for topics nobody listens to.
//!
//! # On a Redis Cluster
//!
//! [`RedisPubSub::connect_cluster`] (or a `redis+cluster://host:port,host:port/` URL) connects
//! through the `redis` crate's cluster client, which routes each command to the master of its
//! key's slot, follows `MOVED`/`ASK`, refreshes its slot map and reconnects by itself. Redis 7
//! or later (sharded pub/sub).
//!
//! - **One slot per topic.** The three names of a topic carry the hash tag `{T}`, so every
//!   script touches one slot, and each topic — its stream, its members and its channel —
//!   lives on one shard. Topics spread over the shards: the request streams of different
//!   operations and the reply channels of different callers land on different masters. (A
//!   topic that cannot be a hash tag — empty, or starting with `}` — is refused with a
//!   [`TransportError`], as is a prefix containing `{` or `}`.)
//! - **Sharded pub/sub.** Replies and aborts use `SPUBLISH`/`SSUBSCRIBE`: a message goes to the
//!   shard that owns its channel, not to every node as `PUBLISH` would. All plain
//!   subscriptions of one [`RedisPubSub`] share one RESP3 cluster connection (pushes are routed
//!   to each subscription by channel); each subscription subscribes its channel again every
//!   heartbeat (a no-op where it already is), which moves it to a slot's new master after a
//!   failover, and the shared connection is replaced after failing for a whole lease.
//! - **Group readers** have a cluster connection each; a lost node, a redirection left after
//!   the client's retries or `CLUSTERDOWN` makes them reconnect (fresh slot map) and join again.
//!
//! # Delivery guarantees
//!
//! Both modes give the same guarantees, except where a cluster's failover is named.
//!
//! - **Every message is delivered at most once** to each plain subscriber and to at most one
//!   member of each group (entries of dead members of idempotent groups aside, below). Nothing
//!   is retried: a publish that fails is reported (a [`TransportError`], which callers see as
//!   `TRANSPORT_ERROR`), never re-sent.
//! - **Mutations and subscriptions are executed at most once, never twice.** Their group
//!   entries are read with `NOACK`: Redis hands each entry to one consumer and never
//!   redelivers it (there is no pending entry to claim). When a replica serving the operation
//!   is up, each request reaches exactly one replica.
//! - **A replica that dies after taking a mutation or subscription** (crash, kill, network cut)
//!   takes the request with it: it is not executed again elsewhere and the caller gets
//!   `TIMEOUT` at its deadline (the protocol always sends one). Entries the dead replica had
//!   not read yet stay in the stream and go to the other replicas; its lease expires after at
//!   most [`RedisOptions::with_lease`], after which, with no replica left, calls fail at once
//!   with `OPERATION_NOT_FOUND` — except within [`RedisOptions::with_rejoin_grace`] (30 s) of
//!   the last time this caller's request on that operation reached a replica: then they fail
//!   with `TRANSPORT_ERROR` (transient: retry), because replicas are usually rejoining.
//! - **Queries survive a replica's death.** The [`CallHandler`](opkit::protocol::CallHandler)
//!   joins the request topics of `Query` operations with
//!   [`subscribe_group_idempotent`](PubSub::subscribe_group_idempotent) (unless
//!   [`with_query_redelivery(false)`](opkit::protocol::CallHandler::with_query_redelivery)).
//!   Their entries are read without `NOACK`, so each stays in the group's pending-entries list
//!   under the consumer that took it until that consumer acknowledges it — on its next read
//!   after its process published the call's final reply (`call.responded` or `call.error`), or
//!   after [`RedisOptions::with_retention`] for a call never answered (aborted). Every
//!   heartbeat (a third of the lease) each live member runs one script that claims
//!   (`XCLAIM`) the pending entries of the consumers whose lease is absent or expired, and
//!   deletes those consumers. So a query held by a replica that dies is run by another
//!   replica within about a lease and a heartbeat of the death (6 s + 2 s by default) and the
//!   caller gets the answer, if its deadline is further away (when it is not, the handler
//!   answers `TIMEOUT` without running it).
//!
//!   **Which queries may run twice**: exactly those whose consumer lost its lease while
//!   they were pending — (a) held by a replica that died, whether it had started, finished
//!   without its reply getting out, or not yet started them; (b) answered by a replica that
//!   then died or lost Redis before acknowledging (at most one read round, ≤ the block time);
//!   (c) held by a replica that did not renew its lease for a whole lease while alive
//!   (a pause longer than the lease, a network cut, Redis unreachable or failing over for
//!   that long): both it and the claimer run them, and the caller takes the first reply
//!   (later ones are ignored). Running a query again is safe because a query reads and
//!   changes nothing: its second run has no effect beyond its cost, and the caller receives
//!   one answer. Mutations never take part: an operation whose repetition matters must be a
//!   `Mutation`.
//! - **After a Redis restart** the members set is empty until the replicas' subscriptions
//!   reconnect and take their leases again (well under a second with the default backoff).
//!   Calls made meanwhile fail at once with `TRANSPORT_ERROR` (the rejoin grace above), never
//!   with `OPERATION_NOT_FOUND`, so retry logic keyed on transient errors retries them.
//! - **When a cluster master dies**, its shard is unreachable until a replica node takes over
//!   (`cluster-node-timeout` plus an election, a few seconds): publishes to its topics fail
//!   with `TRANSPORT_ERROR`, calls whose request or reply was on it end with `TRANSPORT_ERROR`
//!   or `TIMEOUT`, and the other shards keep serving (with
//!   `cluster-require-full-coverage no`). Writes the dead master had not yet replicated are
//!   lost (Redis replication is asynchronous): requests never delivered (the caller gets
//!   `TIMEOUT`) and, in a window of a few milliseconds, a group read whose effect (the group's
//!   last-delivered id) had not reached the replica — that entry can then be delivered again
//!   after the failover, so a mutation read in the instant of the master's death could run
//!   twice. No test run has shown it (see `docs/limits.md`); use `WAIT`-backed writes or a
//!   mutation id in your handler if that window matters.
//! - **Order**: one publisher's messages on one topic arrive in publish order (one connection,
//!   one script per publish, one reader per subscription).
//! - **Old requests**: stream entries older than [`RedisOptions::with_retention`] are trimmed
//!   and, if still read, dropped unread; a request read before its `deadline` but after it is
//!   answered `TIMEOUT` by the call handler without running (the handler checks the deadline).
//!
//! # Failures and reconnection
//!
//! - **While Redis is down**, `publish`, `subscribe` and `subscribe_group` fail fast with a
//!   [`TransportError`] (a refused connection is reported at once; connecting and each command
//!   are bounded by [`RedisOptions::with_connect_timeout`] and
//!   [`RedisOptions::with_command_timeout`]): calls made meanwhile end with `TRANSPORT_ERROR`.
//! - **Existing subscriptions survive a restart of Redis** (or a cluster failover): each
//!   reconnects with backoff ([`RedisOptions::with_reconnect_backoff`]), subscribes again, and
//!   (for groups) recreates its group and lease — so a
//!   [`PendingRequestMap`](opkit::protocol::PendingRequestMap) and a
//!   [`CallHandler`](opkit::protocol::CallHandler) keep working across the restart without being
//!   rebuilt. Messages published while a subscription was disconnected are lost; calls in
//!   flight across the outage end with `TIMEOUT` at their deadline (or an error event), never a
//!   hang. The subscription streams never end on their own; they end when dropped.
//! - **Bad input** (a stream entry without the `p` field or written by something else, bytes that
//!   are not a call event) is logged and dropped; the transport and the protocol keep running
//!   (malformed events are the protocol's to reject, see [`opkit::protocol`]).
//!
//! # Costs
//!
//! One multiplexed command connection per [`RedisPubSub`], plus one connection per group
//! subscription, plus (one server) one per plain subscription or (cluster) one shared RESP3
//! connection for all plain subscriptions; a cluster connection holds one socket per master.
//! A caller uses one subscription, a call handler two per operation it serves (requests and
//! aborts). Redis' default limit is 10,000 clients. Entries are read in batches of
//! [`RedisOptions::with_batch`]. Query redelivery costs one `XACK` per read round with answers
//! and one claim script per heartbeat per query reader; the pending-entries list holds a
//! query from its read to its reply.
//!
//! # Clocks
//!
//! Leases and trimming use the Redis server's clock; the age check when reading uses the
//! reader's. Like the protocol's deadlines, this assumes clocks that agree to well within a
//! second.

mod claim;
mod conn;
mod reader;
mod shard;

use bytes::Bytes;
use conn::{Backend, Conn};
use futures::FutureExt;
use futures::future::BoxFuture;
use opkit::protocol::{PubSub, Receipt, Subscription, TransportError};
use parking_lot::Mutex;
use redis_crate::{Client, RedisError, Script};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

// `redis` is both this module's name and the crate's: name the crate unambiguously.
use ::redis as redis_crate;

/// Settings of a [`RedisPubSub`]. Every setting has a default suited to a local or LAN Redis.
///
/// ```
/// use opkit_adapters::redis::RedisOptions;
/// use std::time::Duration;
/// let options = RedisOptions::default()
///     .with_prefix("billing:")
///     .with_command_timeout(Duration::from_secs(2));
/// assert_eq!(options.prefix(), "billing:");
/// ```
#[derive(Debug, Clone)]
pub struct RedisOptions {
    prefix: String,
    connect_timeout: Duration,
    command_timeout: Duration,
    block: Duration,
    lease: Duration,
    retention: Duration,
    batch: usize,
    backoff_min: Duration,
    backoff_max: Duration,
    rejoin_grace: Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            prefix: "opkit:".to_owned(),
            connect_timeout: Duration::from_secs(1),
            command_timeout: Duration::from_secs(5),
            block: Duration::from_secs(1),
            lease: Duration::from_secs(6),
            retention: Duration::from_secs(60),
            batch: 16,
            backoff_min: Duration::from_millis(50),
            backoff_max: Duration::from_secs(1),
            rejoin_grace: Duration::from_secs(30),
        }
    }
}

impl RedisOptions {
    /// The prefix of every key and channel name (`opkit:` unless set). Buses with different
    /// prefixes on one Redis do not see each other.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The longest wait for a connection to Redis (1 s unless set).
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The longest wait for the answer to one command (5 s unless set).
    #[must_use]
    pub fn with_command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// How long a group reader blocks in `XREADGROUP` before it looks again (1 s unless set;
    /// never more than a third of the lease).
    #[must_use]
    pub fn with_block(mut self, block: Duration) -> Self {
        self.block = block;
        self
    }

    /// How long a group member counts as live without renewing its lease (6 s unless set).
    /// Members renew every third of it. A replica that dies stops counting after at most this.
    #[must_use]
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How long group entries are kept (60 s unless set): older entries are trimmed on publish
    /// (`XADD .. MINID ~`) and dropped unread by readers.
    #[must_use]
    pub fn with_retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// How many group entries one `XREADGROUP` takes at most (16 unless set).
    #[must_use]
    pub fn with_batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// The first and the longest pause between reconnection attempts of a subscription
    /// (50 ms doubling up to 1 s unless set).
    #[must_use]
    pub fn with_reconnect_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.backoff_min = min;
        self.backoff_max = max.max(min);
        self
    }

    /// The prefix of every key and channel name.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// How long after a request topic was last seen served a publish that reaches no replica
    /// fails with a [`TransportError`] (`TRANSPORT_ERROR`, worth retrying: replicas are
    /// rejoining after a Redis restart or a redeploy) rather than `OPERATION_NOT_FOUND` (30 s
    /// unless set; zero turns it off).
    #[must_use]
    pub fn with_rejoin_grace(mut self, grace: Duration) -> Self {
        self.rejoin_grace = grace;
        self
    }

    /// The lease of group members.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// How long group entries are kept.
    pub fn retention(&self) -> Duration {
        self.retention
    }

    /// How often members renew their lease.
    fn heartbeat(&self) -> Duration {
        (self.lease / 3).max(Duration::from_millis(10))
    }

    /// How long one `XREADGROUP` blocks.
    fn block_for(&self) -> Duration {
        self.block
            .min(self.heartbeat())
            .max(Duration::from_millis(1))
    }
}

/// `PUBLISH` (`SPUBLISH` on a cluster) to the channel, then `XADD` to the stream when the topic
/// has a live group member. Returns the number of receivers: channel subscribers + groups with
/// a live member.
///
/// KEYS: stream, members, channel (declared so that a cluster checks its slot too).
/// ARGV: payload, retention ms.
static PUBLISH_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&PUBLISH_SOURCE.replace("PUBLISH_COMMAND", "PUBLISH")));

/// [`PUBLISH_SCRIPT`] with sharded pub/sub, for a cluster.
static SPUBLISH_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&PUBLISH_SOURCE.replace("PUBLISH_COMMAND", "SPUBLISH")));

const PUBLISH_SOURCE: &str = r"
local receivers = redis.call('PUBLISH_COMMAND', KEYS[3], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  -- Live members only (expired ones are pruned when leases are taken or renewed).
  local members = redis.call('ZRANGE', KEYS[2], '(' .. now, '+inf', 'BYSCORE')
  if #members > 0 then
    local count = 1
    if #members > 1 then
      local groups = {}
      count = 0
      for _, member in ipairs(members) do
        local colon = string.find(member, ':', 1, true)
        local group = colon and string.sub(member, colon + 1) or member
        if not groups[group] then
          groups[group] = true
          count = count + 1
        end
      end
    end
    local minid = now - ARGV[2]
    if minid < 0 then minid = 0 end
    redis.call('XADD', KEYS[1], 'MINID', '~', minid, '*', 'p', ARGV[1])
    receivers = receivers + count
  end
end
return receivers
";

/// Creates the group if needed (at `$`: it receives what is added from now on), prunes expired
/// leases and takes or renews a member's lease; keeps the stream and the members set from
/// outliving their members.
///
/// KEYS: stream, members. ARGV: group, member, lease ms, stream ttl ms.
static JOIN_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local created = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], '$', 'MKSTREAM')
if type(created) == 'table' and created.err and not string.find(created.err, 'BUSYGROUP') then
  return redis.error_reply(created.err)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[3]) * 2)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
return 1
",
    )
});

/// Gives a member's lease back and deletes its consumer.
///
/// KEYS: stream, members. ARGV: group, member, consumer.
static LEAVE_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
redis.call('ZREM', KEYS[2], ARGV[2])
redis.pcall('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[3])
return 1
",
    )
});

/// A [`PubSub`] on a Redis server (5.0 or later; tested with 7.0) or a Redis Cluster (7.0 or
/// later): Redis Streams consumer groups for [`subscribe_group`](PubSub::subscribe_group)
/// (and, redelivering the entries of dead members,
/// [`subscribe_group_idempotent`](PubSub::subscribe_group_idempotent)), pub/sub channels
/// (sharded on a cluster) for [`subscribe`](PubSub::subscribe). See the [module docs](self)
/// for the layout and the delivery guarantees.
///
/// Cloning is cheap; clones share the command connection.
#[derive(Clone)]
pub struct RedisPubSub {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    options: RedisOptions,
    /// This instance's random id: the prefix of its consumers' names.
    instance: String,
    next_consumer: AtomicU64,
    /// The multiplexed connection for publishing and housekeeping; `None` until connected or
    /// after it failed.
    command: Mutex<Option<Conn>>,
    /// Serializes reconnections of the command connection.
    connecting: tokio::sync::Mutex<()>,
    /// When each request topic this instance published on last reached a replica; pruned of
    /// entries older than the rejoin grace whenever it grows past [`SERVED_PRUNE_AT`].
    served: Mutex<HashMap<String, Instant>>,
    /// The sharded pub/sub connection and its subscribers (cluster only).
    shards: shard::Shards,
    /// The held requests of this instance's redelivering readers that it answered.
    answers: claim::Answers,
}

/// How many served topics are remembered before the stale ones are pruned.
const SERVED_PRUNE_AT: usize = 4096;

impl fmt::Debug for RedisPubSub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisPubSub")
            .field("instance", &self.inner.instance)
            .field("prefix", &self.inner.options.prefix)
            .finish_non_exhaustive()
    }
}

/// Whether an error means the connection is unusable (and a new one must be made). On a
/// cluster that includes a redirection or `CLUSTERDOWN` left after the client's own retries:
/// a new connection starts from a fresh slot map.
fn is_connection_error(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || error.is_timeout()
        || error.is_unrecoverable_error()
        || error.is_cluster_error()
}

fn transport_error(what: &str, error: impl fmt::Display) -> TransportError {
    TransportError::new(format!("redis: {what}: {error}"))
}

/// Milliseconds as a Redis argument.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The names a topic maps to.
#[derive(Debug, Clone)]
struct TopicKeys {
    channel: String,
    stream: String,
    members: String,
}

impl RedisPubSub {
    /// Connects to the Redis server at `url` (for example `redis://127.0.0.1:6379/`) with the
    /// default [`RedisOptions`]; fails when the server does not answer `PING`.
    ///
    /// A URL `redis+cluster://host:port,host:port/` connects to the Redis Cluster those nodes
    /// belong to instead, as [`connect_cluster`](Self::connect_cluster) does.
    pub async fn connect(url: &str) -> Result<Self, TransportError> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    /// [`connect`](Self::connect) with settings.
    pub async fn connect_with(url: &str, options: RedisOptions) -> Result<Self, TransportError> {
        if let Some(nodes) = cluster_nodes(url)? {
            return Self::connect_cluster_with(&nodes, options).await;
        }
        let client = Client::open(url).map_err(|error| transport_error("invalid URL", error))?;
        Self::start(Backend::Single(client), options).await
    }

    /// Connects to a Redis Cluster (Redis 7 or later: replies and aborts use sharded pub/sub)
    /// through any of its `nodes` (`redis://host:port` URLs; the others are discovered) with
    /// the default [`RedisOptions`]; fails when the cluster does not answer `PING`. The keys
    /// are hash-tagged by topic, so each topic lives on one shard and topics spread over the
    /// shards (see the layout in the [module docs](self)).
    pub async fn connect_cluster<S: AsRef<str>>(nodes: &[S]) -> Result<Self, TransportError> {
        Self::connect_cluster_with(nodes, RedisOptions::default()).await
    }

    /// [`connect_cluster`](Self::connect_cluster) with settings. The prefix must not contain
    /// `{` or `}` (it would change the keys' hash tags).
    pub async fn connect_cluster_with<S: AsRef<str>>(
        nodes: &[S],
        options: RedisOptions,
    ) -> Result<Self, TransportError> {
        if options.prefix.contains(['{', '}']) {
            return Err(TransportError::new(format!(
                "redis: the prefix `{}` contains `{{` or `}}`, which would break the keys' cluster hash tags",
                options.prefix
            )));
        }
        let nodes: Vec<String> = nodes.iter().map(|node| node.as_ref().to_owned()).collect();
        if nodes.is_empty() {
            return Err(TransportError::new(
                "redis: a cluster needs at least one node URL",
            ));
        }
        let backend =
            Backend::cluster(&nodes).map_err(|error| transport_error("invalid cluster", error))?;
        Self::start(backend, options).await
    }

    async fn start(backend: Backend, options: RedisOptions) -> Result<Self, TransportError> {
        let pubsub = Self {
            inner: Arc::new(Inner {
                backend,
                options,
                instance: opkit::protocol::topics::new_caller_id(),
                next_consumer: AtomicU64::new(1),
                command: Mutex::new(None),
                connecting: tokio::sync::Mutex::new(()),
                served: Mutex::new(HashMap::new()),
                shards: shard::Shards::default(),
                answers: claim::Answers::default(),
            }),
        };
        pubsub
            .inner
            .command("PING", |mut conn| async move {
                redis_crate::cmd("PING").query_async::<()>(&mut conn).await
            })
            .await?;
        Ok(pubsub)
    }

    /// Whether this transport is on a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.inner.backend.is_cluster()
    }

    /// This instance's random id (the prefix of the consumer names of its group subscriptions).
    pub fn instance_id(&self) -> &str {
        &self.inner.instance
    }

    /// The settings.
    pub fn options(&self) -> &RedisOptions {
        &self.inner.options
    }

    /// The pub/sub channel of `topic` (a sharded channel on a cluster).
    pub fn channel_name(&self, topic: &str) -> String {
        self.inner.names(topic).channel
    }

    /// The key of the stream that carries `topic` to its groups.
    pub fn stream_key(&self, topic: &str) -> String {
        self.inner.names(topic).stream
    }

    /// The key of the sorted set of `topic`'s live group members.
    pub fn members_key(&self, topic: &str) -> String {
        self.inner.names(topic).members
    }
}

/// The node URLs of a `redis+cluster://host:port,host:port/` URL; `None` for other URLs.
fn cluster_nodes(url: &str) -> Result<Option<Vec<String>>, TransportError> {
    let Some(rest) = url.strip_prefix("redis+cluster://") else {
        return Ok(None);
    };
    let (hosts, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let (credentials, hosts) = match hosts.rsplit_once('@') {
        Some((credentials, hosts)) => (format!("{credentials}@"), hosts),
        None => (String::new(), hosts),
    };
    let nodes: Vec<String> = hosts
        .split(',')
        .filter(|host| !host.is_empty())
        .map(|host| format!("redis://{credentials}{host}/{tail}"))
        .collect();
    if nodes.is_empty() {
        return Err(TransportError::new(format!(
            "redis: invalid URL: `{url}` names no cluster node (redis+cluster://host:port,host:port/)"
        )));
    }
    Ok(Some(nodes))
}

impl Inner {
    /// The names of `topic`; on a cluster, hash-tagged by the topic (`{T}`), so that the three
    /// names share one hash slot.
    fn names(&self, topic: &str) -> TopicKeys {
        let prefix = &self.options.prefix;
        if self.backend.is_cluster() {
            TopicKeys {
                channel: format!("{prefix}{{{topic}}}"),
                stream: format!("{prefix}stream:{{{topic}}}"),
                members: format!("{prefix}members:{{{topic}}}"),
            }
        } else {
            TopicKeys {
                channel: format!("{prefix}{topic}"),
                stream: format!("{prefix}stream:{topic}"),
                members: format!("{prefix}members:{topic}"),
            }
        }
    }

    /// [`names`](Self::names), refusing on a cluster a topic that cannot be a hash tag (empty,
    /// or starting with `}`: its names would hash to different slots).
    fn keys(&self, topic: &str) -> Result<TopicKeys, TransportError> {
        if self.backend.is_cluster() && (topic.is_empty() || topic.starts_with('}')) {
            return Err(TransportError::new(format!(
                "redis: the topic `{topic}` cannot be a cluster hash tag (it is empty or starts with `}}`)"
            )));
        }
        Ok(self.names(topic))
    }

    /// A new connection (bounded by the connect timeout).
    async fn connect(&self, response_timeout: Duration) -> Result<Conn, RedisError> {
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

    /// The command connection, connecting if there is none.
    async fn command_connection(&self) -> Result<Conn, RedisError> {
        if let Some(conn) = self.command.lock().clone() {
            return Ok(conn);
        }
        let _connecting = self.connecting.lock().await;
        if let Some(conn) = self.command.lock().clone() {
            return Ok(conn);
        }
        let conn = self.connect(self.options.command_timeout).await?;
        *self.command.lock() = Some(conn.clone());
        Ok(conn)
    }

    /// Runs `f` on the command connection; a connection failure drops the connection so the
    /// next command reconnects. Never retries: a failure is reported at once.
    async fn command<T, F, Fut>(&self, what: &str, f: F) -> Result<T, TransportError>
    where
        F: FnOnce(Conn) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        let bound = self.options.connect_timeout * 2 + self.options.command_timeout;
        let run = async {
            let conn = self.command_connection().await?;
            f(conn).await
        };
        match tokio::time::timeout(bound, run).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => {
                if is_connection_error(&error) {
                    *self.command.lock() = None;
                }
                Err(transport_error(what, error))
            }
            Err(_) => {
                *self.command.lock() = None;
                Err(transport_error(what, "timed out"))
            }
        }
    }

    /// Takes or renews a group member's lease on `conn` (creating the group if needed).
    async fn join(
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
            .arg(group)
            .arg(member)
            .arg(millis(self.options.lease))
            .arg(millis(stream_ttl))
            .invoke_async::<()>(conn)
            .await
    }

    /// Gives a member's lease back and deletes its consumer (best effort).
    async fn leave(&self, keys: &TopicKeys, group: &str, member: &str, consumer: &str) {
        let result = self
            .command("leaving a group", |mut conn| async move {
                LEAVE_SCRIPT
                    .key(&keys.stream)
                    .key(&keys.members)
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

    async fn publish(&self, topic: &str, payload: Bytes) -> Result<Receipt, TransportError> {
        let keys = self.keys(topic)?;
        let retention = millis(self.options.retention);
        let script = if self.backend.is_cluster() {
            &*SPUBLISH_SCRIPT
        } else {
            &*PUBLISH_SCRIPT
        };
        let published = payload.clone();
        let receivers: i64 = self
            .command("publishing", |mut conn| async move {
                script
                    .key(&keys.stream)
                    .key(&keys.members)
                    .key(&keys.channel)
                    .arg(payload.as_ref())
                    .arg(retention)
                    .invoke_async(&mut conn)
                    .await
            })
            .await?;
        let receivers = usize::try_from(receivers).unwrap_or(0);
        self.answers.note_published(topic, &published);
        self.note_served(topic, receivers)?;
        Ok(Receipt::delivered(receivers))
    }

    /// Remembers request topics that reached a replica; a publish on one that reaches nobody
    /// within the rejoin grace is a transport error, not "nobody serves it".
    fn note_served(&self, topic: &str, receivers: usize) -> Result<(), TransportError> {
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
            Some(seen) if seen.elapsed() < grace => Err(TransportError::new(format!(
                "no replica serves `{topic}` right now, though one did {} ms ago: replicas may be rejoining (after a Redis restart or a redeploy); retry",
                seen.elapsed().as_millis()
            ))),
            _ => Ok(()),
        }
    }
}

/// The prefix of the protocol's request topics.
static REQUEST_PREFIX: LazyLock<String> =
    LazyLock::new(|| opkit::protocol::topics::request_topic(""));

impl PubSub for RedisPubSub {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<Receipt, TransportError>> {
        self.inner.publish(topic, payload).boxed()
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        if self.inner.backend.is_cluster() {
            shard::subscribe(self.inner.clone(), topic.to_owned()).boxed()
        } else {
            reader::subscribe(self.inner.clone(), topic.to_owned()).boxed()
        }
    }

    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        reader::subscribe_group(
            self.inner.clone(),
            topic,
            group,
            reader::Delivery::AtMostOnce,
        )
        .boxed()
    }

    fn subscribe_group_idempotent<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        reader::subscribe_group(
            self.inner.clone(),
            topic,
            group,
            reader::Delivery::Redeliver,
        )
        .boxed()
    }
}
