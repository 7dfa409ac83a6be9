//! The call protocol over Redis: [`RedisPubSub`], a [`PubSub`] transport built on Redis
//! Streams consumer groups (competing consumers) and Redis pub/sub (fan-out), on one Redis
//! server or on a Redis Cluster.
//!
//! The manual is `adapters/docs/redis.md`, included below. Reading the code: start at
//! `RedisPubSub` below; `group/reader.rs` is the consumer-group reader (a state machine),
//! `claim.rs` what it acknowledges and reclaims, `state.rs` the state the clones share,
//! `publish.rs` publishing on a topic groups may read (a script, or plain commands once the
//! topic is seen served), `scripts.rs` the Lua scripts,
//! `channel.rs` and `shard.rs` the plain subscriptions on a server and on a cluster,
//! `topics.rs` the keys a topic maps to, `errors.rs` what a failure says about a call.
#![doc = "\n"]
#![doc = include_str!("../../docs/redis.md")]

mod channel;
mod claim;
mod conn;
mod entries;
mod errors;
mod group;
mod options;
mod publish;
mod replies;
mod scripts;
mod shard;
mod shards;
mod state;
mod tls;
mod topics;

pub use options::RedisOptions;
pub use tls::RedisTls;

use bytes::Bytes;
use conn::{Backend, Conn, cluster_nodes};
use errors::transport_error;
use futures::FutureExt;
use futures::future::BoxFuture;
use opkit::protocol::{PubSub, Receipt, Subscription, TransportError};
use parking_lot::Mutex;
use redis_crate::{Client, IntoConnectionInfo};
use state::{RedisState, check_command_connection_every_interval};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use topics::has_no_groups;

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
                served: Mutex::new(crate::seeded::Seeded::default()),
                shards: shards::Shards::default(),
                answers: claim::Answers::default(),
                replies: replies::Outboxes::default(),
                published: publish::Published::default(),
            }),
        };
        pubsub
            .inner
            .command("PING", |mut conn| async move {
                redis_crate::cmd("PING").query_async::<()>(&mut conn).await
            })
            .await?;
        tokio::spawn(check_command_connection_every_interval(Arc::downgrade(
            &pubsub.inner,
        )));
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

    /// The pub/sub channel of `topic` (a sharded channel on a cluster); a hook for tests
    /// (feature `testing`).
    #[cfg(feature = "testing")]
    pub fn channel_name(&self, topic: &str) -> String {
        self.inner.names(topic).channel
    }

    /// The key of the stream that carries `topic` to its groups; a hook for tests (feature
    /// `testing`).
    #[cfg(feature = "testing")]
    pub fn stream_key(&self, topic: &str) -> String {
        self.inner.names(topic).stream
    }

    /// The key of the sorted set of `topic`'s live group members; a hook for tests (feature
    /// `testing`).
    #[cfg(feature = "testing")]
    pub fn members_key(&self, topic: &str) -> String {
        self.inner.names(topic).members
    }

    /// The key that exists while a group member of `topic` holds a lease; a hook for tests
    /// (feature `testing`).
    #[cfg(feature = "testing")]
    pub fn live_key(&self, topic: &str) -> String {
        self.inner.names(topic).live
    }
}

impl RedisPubSub {
    /// A group subscription to `topic` delivering as `delivery` says.
    fn group_subscription<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
        delivery: group::Delivery,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        if has_no_groups(topic) {
            return futures::future::ready(Err(TransportError::not_sent(format!(
                "redis: `{topic}` is a reply or abort topic of the call protocol: it takes plain subscribers only, no groups"
            ))))
            .boxed();
        }
        group::subscribe_group(self.inner.clone(), topic, group, delivery).boxed()
    }
}

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
            channel::subscribe(self.inner.clone(), topic.to_owned()).boxed()
        }
    }

    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.group_subscription(topic, group, group::Delivery::AtMostOnce)
    }

    fn subscribe_group_idempotent<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.group_subscription(topic, group, group::Delivery::Redeliver)
    }
}
