//! [`SpokeOptions`]: a spoke's token and its timing, TLS and queue settings.

use crate::backoff::Backoff;
use std::fmt;
use std::time::Duration;

/// Settings of a [`WsSpoke`](super::WsSpoke).
///
/// ```
/// use opkit_adapters::websocket::SpokeOptions;
/// use std::time::Duration;
/// let options = SpokeOptions::new("s3cret")
///     .with_backoff(Duration::from_millis(100), Duration::from_secs(10));
/// ```
#[derive(Clone)]
pub struct SpokeOptions {
    pub(super) token: String,
    /// The reconnection pauses.
    pub(super) backoff: Backoff,
    pub(super) request_timeout: Duration,
    pub(super) connect_timeout: Duration,
    pub(super) close_timeout: Duration,
    pub(super) ping_interval: Duration,
    pub(super) pong_timeout: Duration,
    pub(super) tls: Option<crate::websocket::ClientTls>,
    pub(super) max_queued_bytes: usize,
}

impl fmt::Debug for SpokeOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpokeOptions")
            .field("token", &"<redacted>")
            .field("backoff", &self.backoff)
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("close_timeout", &self.close_timeout)
            .field("ping_interval", &self.ping_interval)
            .field("pong_timeout", &self.pong_timeout)
            .field("tls", &self.tls.is_some())
            .field("max_queued_bytes", &self.max_queued_bytes)
            .finish()
    }
}

impl SpokeOptions {
    /// Settings with the token the spoke presents to the hub.
    pub fn new(token: impl Into<String>) -> Self {
        Self {
            token: token.into(),
            backoff: Backoff::new(Duration::from_millis(50), Duration::from_secs(5)),
            request_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            close_timeout: Duration::from_millis(200),
            ping_interval: Duration::from_secs(5),
            pong_timeout: Duration::from_secs(2),
            tls: None,
            max_queued_bytes: crate::websocket::DEFAULT_MAX_QUEUED_BYTES,
        }
    }

    /// How many bytes of requests one group subscription (a `CallHandler`'s request topic)
    /// may hold untaken ([`DEFAULT_MAX_QUEUED_BYTES`](crate::websocket::DEFAULT_MAX_QUEUED_BYTES),
    /// 64 MiB, unless set). A request past it is not queued: it is answered at once with
    /// `TRANSPORT_ERROR`, `details.delivery: "notSent"` (it never ran; the caller may retry),
    /// so a spoke whose handler is at its limit cannot grow without bound.
    #[must_use]
    pub fn with_max_queued_bytes(mut self, bytes: usize) -> Self {
        self.max_queued_bytes = bytes;
        self
    }

    /// TLS for a `wss://` hub URL: the CA to trust and the spoke's own certificate
    /// ([`ClientTls`](crate::websocket::ClientTls)); without it a `wss://` URL trusts the system's
    /// roots. With it, a `ws://` URL is refused before connecting: the token would cross in
    /// clear.
    #[must_use]
    pub fn with_tls(mut self, tls: crate::websocket::ClientTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// How often the spoke pings the hub (5 s unless set; at least 10 ms). See
    /// [`with_pong_timeout`](Self::with_pong_timeout).
    #[must_use]
    pub fn with_ping_interval(mut self, interval: Duration) -> Self {
        self.ping_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// How long after a ping the spoke waits to hear anything from the hub before it counts
    /// the connection as dead, drops it and reconnects (2 s unless set; at least 10 ms). A
    /// hub that went silent — no FIN, no RST: a network partition, a NAT or load balancer
    /// that forgot the connection — is noticed within the ping interval plus this.
    #[must_use]
    pub fn with_pong_timeout(mut self, timeout: Duration) -> Self {
        self.pong_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// The first and the longest pause between reconnection attempts (50 ms doubling up to
    /// 5 s unless set).
    #[must_use]
    pub fn with_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.backoff = Backoff::new(min, max);
        self
    }

    /// How long a publish or subscribe waits for the hub's answer (10 s unless set). A
    /// request left unanswered that long counts the connection as dead: it is dropped and
    /// made again. (A call's own deadline still ends it earlier.)
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long connecting (TCP, handshake, welcome) may take (5 s unless set).
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a closing connection lets its writer flush what is queued and the close
    /// frame (200 ms unless set).
    #[must_use]
    pub fn with_close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }
}
