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
//! # TLS
//!
//! A `rediss://` URL (`rediss+cluster://host:port,host:port/`, or `rediss://` node URLs, for
//! a cluster) connects over TLS (rustls). It trusts the system's roots unless
//! [`RedisOptions::with_tls`] names a CA ([`RedisTls::with_ca_pem`]), and presents a client
//! certificate when given one ([`RedisTls::with_client_cert_pem`]; a server started with
//! `--tls-auth-clients yes` requires it). A certificate the client does not trust fails the
//! connection with a `TRANSPORT_ERROR` naming it. On a cluster, start the nodes with
//! `--tls-cluster yes` so their bus is encrypted too.
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
//!   [`RedisOptions::with_command_timeout`]): calls made meanwhile end with `TRANSPORT_ERROR`
//!   (`details.delivery: "notSent"` when no connection could be made).
//! - **Existing subscriptions survive a restart of Redis** (or a cluster failover): each
//!   reconnects with backoff ([`RedisOptions::with_reconnect_backoff`]), subscribes again, and
//!   (for groups) recreates its group and lease — so a
//!   [`PendingRequestMap`](opkit::protocol::PendingRequestMap) and a
//!   [`CallHandler`](opkit::protocol::CallHandler) keep working across the restart without being
//!   rebuilt. Messages published while a subscription was disconnected are lost; calls in
//!   flight across the outage end with `TIMEOUT` at their deadline (or an error event), never a
//!   hang. The subscription streams never end on their own; they end when dropped.
//! - **Connections that go silent** (no FIN, no RST: a network partition, a NAT or load
//!   balancer that forgot the connection, a host gone behind the same address) are noticed
//!   within a bound and replaced, like closed ones: the command connection and each plain
//!   subscription's pub/sub connection get a `PING` every [`RedisOptions::with_ping_interval`]
//!   (1 s) that must be answered within [`RedisOptions::with_ping_timeout`] (2 s); a group
//!   reader's blocking `XREADGROUP` must be answered within its block time plus the ping
//!   timeout; a cluster's sharded subscriptions are renewed every heartbeat within the ping
//!   timeout. A replaced connection subscribes again to everything it held (reply and abort
//!   channels, group membership and lease, sharded channels). Only the connection that failed
//!   is replaced: its number is compared first, so a late failure of an older connection
//!   never drops the one that replaced it (no reconnection storm).
//! - **A failed publish says whether it may have been delivered**
//!   ([`Delivery`](opkit::protocol::Delivery)): `NotSent` when no connection could be had (so
//!   nothing was written) or the publish reached nobody within the rejoin grace; `Unknown`
//!   when the command was written and its answer did not come (a mutation may run: the
//!   protocol publishes `call.aborted` for it). A call never waits for a publish past its own
//!   deadline.
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
//! (sent in the same write as that round's `XREADGROUP`, so it adds no round trip) and one
//! claim script per heartbeat per query reader; the pending-entries list holds a
//! query from its read to its reply.
//!
//! # Clocks
//!
//! Leases and trimming use the Redis server's clock; the age check when reading uses the
//! reader's. Like the protocol's deadlines, this assumes clocks that agree to well within a
//! second.

mod claim;
mod conn;
mod options;
mod reader;
mod scripts;
mod shard;
mod state;
mod tls;

pub use options::RedisOptions;
pub use tls::RedisTls;

use bytes::Bytes;
use conn::{Backend, Conn};
use futures::FutureExt;
use futures::future::BoxFuture;
use opkit::protocol::{PubSub, Receipt, Subscription, TransportError};
use parking_lot::Mutex;
use redis_crate::{Client, IntoConnectionInfo, RedisError};
use state::RedisState;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

// `redis` is both this module's name and the crate's: name the crate unambiguously.
use ::redis as redis_crate;

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
    inner: Arc<RedisState>,
}

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

/// A server's answer that refuses a command before running it (the command had no effect).
fn is_refusal(error: &RedisError) -> bool {
    use redis_crate::{ErrorKind, ServerErrorKind};
    matches!(
        error.kind(),
        ErrorKind::AuthenticationFailed
            | ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::ReadOnly
                    | ServerErrorKind::NoPerm
                    | ServerErrorKind::Moved
                    | ServerErrorKind::Ask
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::CrossSlot
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::ExecAbort
            )
    )
}

/// A failure after a command may have been written: whether it ran is unknown.
fn transport_error(what: &str, error: impl fmt::Display) -> TransportError {
    TransportError::new(format!("redis: {what}: {error}"))
}

/// A failure before anything was written (no connection could be had).
fn transport_not_sent(what: &str, error: impl fmt::Display) -> TransportError {
    TransportError::not_sent(format!("redis: {what}: {error}"))
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
    /// belong to instead, as [`connect_cluster`](Self::connect_cluster) does
    /// (`rediss+cluster://` over TLS).
    pub async fn connect(url: &str) -> Result<Self, TransportError> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    /// [`connect`](Self::connect) with settings.
    pub async fn connect_with(url: &str, options: RedisOptions) -> Result<Self, TransportError> {
        if let Some(nodes) = cluster_nodes(url)? {
            return Self::connect_cluster_with(&nodes, options).await;
        }
        let info = url
            .into_connection_info()
            .map_err(|error| transport_error("invalid URL", error))?
            .set_tcp_settings(conn::tcp_settings());
        let client = match &options.tls {
            Some(tls) => Client::build_with_tls(info, tls.certificates()),
            None => Client::open(info),
        }
        .map_err(|error| transport_error("invalid URL", error))?;
        Self::start(Backend::Single(Box::new(client)), options).await
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
        let backend = Backend::cluster(&nodes, options.tls.as_ref())
            .map_err(|error| transport_error("invalid cluster", error))?;
        Self::start(backend, options).await
    }

    async fn start(backend: Backend, options: RedisOptions) -> Result<Self, TransportError> {
        let pubsub = Self {
            inner: Arc::new(RedisState {
                backend,
                options,
                instance: opkit::protocol::topics::new_caller_id(),
                next_consumer: AtomicU64::new(1),
                command: Mutex::new(None),
                next_command: AtomicU64::new(1),
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
        tokio::spawn(check_command_connection(Arc::downgrade(&pubsub.inner)));
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

/// Checks the command connection every ping interval until the transport is dropped.
async fn check_command_connection(inner: std::sync::Weak<RedisState>) {
    loop {
        let Some(interval) = inner.upgrade().map(|inner| inner.options.ping_interval) else {
            return;
        };
        tokio::time::sleep(interval).await;
        let Some(inner) = inner.upgrade() else { return };
        inner.check_command_connection().await;
    }
}

/// The node URLs of a `redis+cluster://host:port,host:port/` URL; `None` for other URLs.
fn cluster_nodes(url: &str) -> Result<Option<Vec<String>>, TransportError> {
    let (scheme, rest) = match (
        url.strip_prefix("redis+cluster://"),
        url.strip_prefix("rediss+cluster://"),
    ) {
        (Some(rest), _) => ("redis", rest),
        (None, Some(rest)) => ("rediss", rest),
        (None, None) => return Ok(None),
    };
    let (hosts, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let (credentials, hosts) = match hosts.rsplit_once('@') {
        Some((credentials, hosts)) => (format!("{credentials}@"), hosts),
        None => (String::new(), hosts),
    };
    let nodes: Vec<String> = hosts
        .split(',')
        .filter(|host| !host.is_empty())
        .map(|host| format!("{scheme}://{credentials}{host}/{tail}"))
        .collect();
    if nodes.is_empty() {
        return Err(TransportError::new(format!(
            "redis: invalid URL: `{url}` names no cluster node (redis+cluster://host:port,host:port/)"
        )));
    }
    Ok(Some(nodes))
}

impl RedisPubSub {
    /// A group subscription to `topic` delivering as `delivery` says.
    fn group_subscription<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
        delivery: reader::Delivery,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        reader::subscribe_group(self.inner.clone(), topic, group, delivery).boxed()
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
        self.group_subscription(topic, group, reader::Delivery::AtMostOnce)
    }

    fn subscribe_group_idempotent<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.group_subscription(topic, group, reader::Delivery::Redeliver)
    }
}
