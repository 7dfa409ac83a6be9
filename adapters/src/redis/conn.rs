//! The connections behind a [`RedisPubSub`](super::RedisPubSub): one Redis server or a Redis
//! Cluster, behind one connection type, so that the scripts and the readers are written once.
//!
//! On a cluster every connection is a `redis` crate cluster connection: it routes each
//! command by its first key (every command and script here touches one hash slot, see the
//! layout in the [module docs](super)), follows `MOVED`/`ASK` redirections, refreshes its
//! slot map and reconnects to nodes by itself. The commands of every call (a request's
//! commands, a reader's read and acknowledgement, a reply) name their slot instead
//! ([`Conn::query_at`], [`Conn::answers_at`]): the slot of a topic's keys is computed once.

use ::redis as redis_crate;
use opkit::protocol::TransportError;
use redis_crate::aio::{ConnectionLike, MultiplexedConnection};
use redis_crate::cluster::{ClusterClient, ClusterClientBuilder};
use redis_crate::cluster_async::ClusterConnection;
use redis_crate::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis_crate::io::tcp::TcpSettings;
use redis_crate::io::tcp::socket2::TcpKeepalive;
use redis_crate::{
    AsyncConnectionConfig, Client, Cmd, FromRedisValue, Pipeline, ProtocolVersion, RedisError,
    RedisFuture, RedisResult, Value, from_redis_value,
};
use std::time::Duration;

/// Where a [`RedisPubSub`](super::RedisPubSub) connects.
pub(super) enum Backend {
    /// One Redis server.
    Single(Box<Client>),
    /// A Redis Cluster: `resp2` for commands and group readers, `resp3` for the sharded
    /// pub/sub connection (the cluster client delivers `SSUBSCRIBE` messages as RESP3 pushes).
    Cluster {
        resp2: Box<ClusterClient>,
        resp3: Box<ClusterClient>,
    },
}

/// One connection: to the server, or to the cluster (which holds one per node).
#[derive(Clone)]
pub(super) enum Conn {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl Conn {
    /// Runs `cmd` and decodes its answer, as `cmd.query_async` would; on a cluster it goes to
    /// the master of the slot the caller names (`slot`, asked only there: the slot of the
    /// command's key, or of its channel), so the cluster client does not read the command
    /// again to find where it goes (it would copy the command and upper-case its name to look
    /// it up, on every call).
    pub(super) async fn query_at<T: FromRedisValue>(
        &mut self,
        slot: impl FnOnce() -> Slot,
        cmd: Cmd,
    ) -> RedisResult<T> {
        match self {
            Self::Single(conn) => cmd.query_async(conn).await,
            Self::Cluster(conn) => {
                // Boxed here (as redis-rs boxes a single connection's command): the cluster
                // client's future is over a KiB, which every publish would carry and move.
                let answer = Box::pin(conn.route_command(cmd, slot().route())).await?;
                Ok(from_redis_value(answer.extract_error()?)?)
            }
        }
    }

    /// Sends `pipeline` (its keys all in `slot`) and returns each command's answer as it came,
    /// a command's error among them as a [`Value::ServerError`], so that the caller can tell
    /// which commands ran. For a transaction (`MULTI` .. `EXEC`) those are what `EXEC` answers,
    /// and a transaction refused as a whole (`EXECABORT`) is the error. On a cluster it goes to
    /// the master of that slot, named here (see [`query_at`](Self::query_at)), and the
    /// pipeline is sent as it is rather than copied.
    pub(super) async fn answers_at(
        &mut self,
        slot: Slot,
        pipeline: Pipeline,
    ) -> RedisResult<Vec<Value>> {
        let transaction = pipeline.is_transaction();
        // A transaction's `MULTI` and its commands' `QUEUED` are skipped: `EXEC`'s answer is
        // the one kept.
        let (offset, count) = if transaction {
            (pipeline.len() + 1, 1)
        } else {
            (0, pipeline.len())
        };
        let mut answers = match self {
            Self::Single(conn) => conn.req_packed_commands(&pipeline, offset, count).await?,
            Self::Cluster(conn) => {
                Box::pin(conn.route_pipeline(pipeline, offset, count, slot.node())).await?
            }
        };
        if !transaction {
            return Ok(answers);
        }
        match answers.pop() {
            Some(Value::Array(answers)) => Ok(answers),
            Some(other) => {
                other.extract_error()?;
                Err(RedisError::from((
                    redis_crate::ErrorKind::UnexpectedReturnType,
                    "a transaction was answered with something other than its commands' answers",
                )))
            }
            None => Err(RedisError::from((
                redis_crate::ErrorKind::UnexpectedReturnType,
                "a transaction was not answered",
            ))),
        }
    }
}

/// Where a command on one key (or channel) goes on a cluster: the master of the key's hash
/// slot. Computed once for the keys of a topic (a hash of the key's tag), and ignored on one
/// server.
#[derive(Clone, Copy, Debug)]
pub(super) struct Slot(Route);

impl Slot {
    /// The slot of `key` (of its hash tag, when it has one).
    pub(super) fn of(key: &str) -> Self {
        Self(Route::with_key(key, SlotAddr::Master))
    }

    /// The slot's master, as a pipeline is routed.
    fn node(self) -> SingleNodeRoutingInfo {
        SingleNodeRoutingInfo::SpecificNode(self.0)
    }

    /// The slot's master, as a command is routed.
    fn route(self) -> RoutingInfo {
        RoutingInfo::SingleNode(self.node())
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(conn) => conn.req_packed_command(cmd),
            Self::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Self::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(conn) => conn.get_db(),
            Self::Cluster(conn) => conn.get_db(),
        }
    }
}

/// The TCP settings of every connection (otherwise the `redis` crate's defaults): the
/// kernel's own watch on a dead peer — keepalive probes after 5 s idle, then every second, and (on Linux)
/// `TCP_USER_TIMEOUT` of 10 s, which closes a connection whose data stays unacknowledged that
/// long. The transport's own `PING` checks notice silence sooner; these also release sockets
/// to a peer that is gone, and cover silence between a connection and its proxy.
pub(super) fn tcp_settings() -> TcpSettings {
    let keepalive = TcpKeepalive::new()
        .with_time(Duration::from_secs(5))
        .with_interval(Duration::from_secs(1));
    let settings = TcpSettings::default().set_keepalive(keepalive);
    #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
    let settings = settings.set_user_timeout(Duration::from_secs(10));
    settings
}

/// How many times the cluster client retries a command after a redirection or a lost node
/// before it reports the error (every command is also bounded by the transport's timeouts).
const CLUSTER_RETRIES: u32 = 4;

impl Backend {
    /// A cluster reached through any of `nodes` (`redis://host:port` URLs).
    /// With `tls`, nodes given as `rediss://` URLs use its CA and client certificate.
    pub(super) fn cluster(
        nodes: &[String],
        tls: Option<&super::RedisTls>,
    ) -> Result<Self, RedisError> {
        let builder = || {
            let builder = ClusterClientBuilder::new(nodes.to_vec())
                .tcp_settings(tcp_settings())
                .retries(CLUSTER_RETRIES)
                .min_retry_wait(20)
                .max_retry_wait(500);
            match tls {
                Some(tls) => builder.certs(tls.certificates()),
                None => builder,
            }
        };
        Ok(Self::Cluster {
            resp2: Box::new(builder().build()?),
            resp3: Box::new(builder().use_protocol(ProtocolVersion::RESP3).build()?),
        })
    }

    /// The client of a single server.
    pub(super) fn single_client(&self) -> Option<&Client> {
        match self {
            Self::Single(client) => Some(client),
            Self::Cluster { .. } => None,
        }
    }

    /// The client of the sharded pub/sub connection of a cluster.
    pub(super) fn cluster_resp3(&self) -> Option<&ClusterClient> {
        match self {
            Self::Single(_) => None,
            Self::Cluster { resp3, .. } => Some(resp3),
        }
    }

    pub(super) fn is_cluster(&self) -> bool {
        matches!(self, Self::Cluster { .. })
    }

    /// A new connection (not bounded here: callers bound it).
    pub(super) async fn connect(
        &self,
        connect_timeout: Duration,
        response_timeout: Duration,
    ) -> Result<Conn, RedisError> {
        match self {
            Self::Single(client) => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(connect_timeout))
                    .set_response_timeout(Some(response_timeout));
                client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await
                    .map(Conn::Single)
            }
            Self::Cluster { resp2, .. } => {
                let config = redis_crate::cluster::ClusterConfig::new()
                    .set_connection_timeout(connect_timeout)
                    .set_response_timeout(response_timeout);
                resp2
                    .get_async_connection_with_config(config)
                    .await
                    .map(Conn::Cluster)
            }
        }
    }
}

/// The node URLs of a `redis+cluster://host:port,host:port/` URL; `None` for other URLs.
pub(super) fn cluster_nodes(url: &str) -> Result<Option<Vec<String>>, TransportError> {
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
