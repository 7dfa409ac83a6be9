//! [`RedisOptions`]: every setting of a [`RedisPubSub`](super::RedisPubSub), with its
//! default.

use crate::backoff::Backoff;
use std::time::Duration;

/// Settings of a [`RedisPubSub`](super::RedisPubSub). Every setting has a default suited to a local or LAN Redis.
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
    pub(super) prefix: String,
    pub(super) connect_timeout: Duration,
    pub(super) command_timeout: Duration,
    pub(super) block: Duration,
    pub(super) lease: Duration,
    pub(super) retention: Duration,
    pub(super) batch: usize,
    /// The reconnection pauses.
    pub(super) backoff: Backoff,
    pub(super) rejoin_grace: Duration,
    pub(super) ping_interval: Duration,
    pub(super) pong_timeout: Duration,
    pub(super) tls: Option<super::RedisTls>,
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
            backoff: Backoff::new(Duration::from_millis(50), Duration::from_secs(1)),
            rejoin_grace: Duration::from_secs(30),
            ping_interval: Duration::from_secs(1),
            pong_timeout: Duration::from_secs(2),
            tls: None,
        }
    }
}

impl RedisOptions {
    /// TLS settings for a `rediss://` URL (or cluster nodes given as `rediss://`): a CA to
    /// trust, a client certificate ([`RedisTls`](super::RedisTls)). Without them a
    /// `rediss://` URL trusts the system's roots; with them a `redis://` URL is refused when
    /// connecting (the settings would be silently unused).
    #[must_use]
    pub fn with_tls(mut self, tls: super::RedisTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The prefix of every key and channel name (`opkit:` unless set). Buses with different
    /// prefixes on one Redis do not see each other.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The longest wait for a connection to Redis (1 s unless set). A publish that has no
    /// command connection within it (twice it on a cluster) fails as not sent
    /// ([`Delivery::NotSent`](opkit::protocol::Delivery::NotSent)).
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
    /// (`XADD .. MINID ~`, at most once a second per topic) and dropped unread by readers.
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
    /// (50 ms doubling up to 1 s unless set); the same option as the WebSocket spoke's
    /// `SpokeOptions::with_backoff`.
    #[must_use]
    pub fn with_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.backoff = Backoff::new(min, max);
        self
    }

    /// The old name of [`with_backoff`](Self::with_backoff).
    #[must_use]
    #[deprecated(
        since = "0.1.0",
        note = "renamed `with_backoff`, like the WebSocket spoke's option"
    )]
    pub fn with_reconnect_backoff(self, min: Duration, max: Duration) -> Self {
        self.with_backoff(min, max)
    }

    /// How often a connection that may sit idle is checked with a `PING`: the command
    /// connection and the connection of each plain subscription (1 s unless set; at least
    /// 10 ms). See [`with_pong_timeout`](Self::with_pong_timeout).
    #[must_use]
    pub fn with_ping_interval(mut self, interval: Duration) -> Self {
        self.ping_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// How long a `PING` (and a group reader's blocking read, past its block time) may go
    /// unanswered before its connection counts as dead and is replaced (2 s unless set; at
    /// least 10 ms). A connection that goes silent — no FIN, no RST: a network partition, a
    /// NAT or load balancer that forgot it, a host gone behind the same address — is noticed
    /// within the ping interval plus this, then re-opened with everything it was
    /// subscribed to (see `docs/limits.md`).
    #[must_use]
    pub fn with_pong_timeout(mut self, timeout: Duration) -> Self {
        self.pong_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// The old name of [`with_pong_timeout`](Self::with_pong_timeout).
    #[deprecated(
        since = "0.1.0",
        note = "renamed `with_pong_timeout`, like the WebSocket hub's and spoke's option"
    )]
    #[must_use]
    pub fn with_ping_timeout(self, timeout: Duration) -> Self {
        self.with_pong_timeout(timeout)
    }

    /// How often idle connections are checked.
    pub fn ping_interval(&self) -> Duration {
        self.ping_interval
    }

    /// How long a check may go unanswered.
    pub fn pong_timeout(&self) -> Duration {
        self.pong_timeout
    }

    /// The old name of [`pong_timeout`](Self::pong_timeout).
    #[deprecated(since = "0.1.0", note = "renamed `pong_timeout`")]
    pub fn ping_timeout(&self) -> Duration {
        self.pong_timeout
    }

    /// The longest a silent connection goes unnoticed: the ping interval plus the pong
    /// timeout (group readers: their block time plus the pong timeout, at most the same).
    pub fn silence_bound(&self) -> Duration {
        self.ping_interval.max(self.block_for()) + self.pong_timeout
    }

    /// The prefix of every key and channel name.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// How long after a request topic was last seen served a publish that reaches no replica
    /// fails with a [`TransportError`](opkit::protocol::TransportError) (`TRANSPORT_ERROR`, worth retrying: replicas are
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
    pub(super) fn heartbeat(&self) -> Duration {
        (self.lease / 3).max(Duration::from_millis(10))
    }

    /// How long one `XREADGROUP` blocks.
    pub(super) fn block_for(&self) -> Duration {
        self.block
            .min(self.heartbeat())
            .max(Duration::from_millis(1))
    }
}

/// Milliseconds as a Redis argument.
pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
