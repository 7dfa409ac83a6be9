//! [`HubOptions`]: every bound and timing of a hub, with its default.

use std::time::Duration;

/// How many bytes of frames may wait for one spoke unless
/// [`HubOptions::with_max_queued_bytes`] says otherwise: 64 MiB.
pub const DEFAULT_MAX_QUEUED_BYTES: usize = 64 * 1024 * 1024;

/// How many subscriptions one spoke may hold unless
/// [`HubOptions::with_max_subscriptions`] says otherwise: 4,096 (a spoke serving an
/// operation holds two: its request and abort topics).
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 4096;

/// The longest topic name, group name or request id a spoke may give the hub unless
/// [`HubOptions::with_max_topic_len`] says otherwise: 1,024 bytes.
pub const DEFAULT_MAX_TOPIC_LEN: usize = 1024;

/// How many connections may hold one token at once unless
/// [`HubOptions::with_max_connections_per_token`] says otherwise: 128.
pub const DEFAULT_MAX_CONNECTIONS_PER_TOKEN: usize = 128;

/// How many connections may come from one IP address at once (handshakes included) unless
/// [`HubOptions::with_max_connections_per_address`] says otherwise: 256.
pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: usize = 256;

/// How many failed token attempts one IP address may make within
/// [`DEFAULT_FAILED_TOKEN_WINDOW`] before its connections are refused until the window ends,
/// unless [`HubOptions::with_max_failed_tokens`] says otherwise: 10.
pub const DEFAULT_MAX_FAILED_TOKENS: u32 = 10;

/// The window [`DEFAULT_MAX_FAILED_TOKENS`] counts in: 60 s.
pub const DEFAULT_FAILED_TOKEN_WINDOW: Duration = Duration::from_secs(60);

/// How many calls one spoke may have in flight through the hub unless
/// [`HubOptions::with_max_calls_per_spoke`] says otherwise: 65,536.
pub const DEFAULT_MAX_CALLS_PER_SPOKE: usize = 65_536;

/// Settings of a [`WsHub`](super::WsHub). Every bound and timing of the hub is here.
#[derive(Debug, Clone)]
pub struct HubOptions {
    pub(super) ping_interval: Duration,
    pub(super) silent_intervals: u32,
    pub(super) pong_timeout: Duration,
    pub(super) handshake_timeout: Duration,
    pub(super) orphan_grace: Duration,
    pub(in crate::websocket) max_queued: usize,
    pub(in crate::websocket) max_queued_bytes: usize,
    pub(super) max_subscriptions: usize,
    pub(super) max_topic_len: usize,
    pub(super) max_connections_per_token: usize,
    pub(super) max_connections_per_address: usize,
    pub(super) max_failed_tokens: u32,
    pub(super) failed_token_window: Duration,
    pub(super) max_calls_per_spoke: usize,
    pub(super) sweep_interval: Duration,
    pub(super) accept_retry_delay: Duration,
    pub(super) tls: Option<crate::websocket::ServerTls>,
    #[cfg(feature = "signing")]
    pub(super) identity_keys: Option<opkit::protocol::IdentityKeys>,
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            ping_interval: Duration::from_secs(5),
            silent_intervals: 3,
            pong_timeout: Duration::from_secs(2),
            handshake_timeout: Duration::from_secs(10),
            orphan_grace: Duration::from_secs(60),
            max_queued: 65_536,
            max_queued_bytes: DEFAULT_MAX_QUEUED_BYTES,
            max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
            max_topic_len: DEFAULT_MAX_TOPIC_LEN,
            max_connections_per_token: DEFAULT_MAX_CONNECTIONS_PER_TOKEN,
            max_connections_per_address: DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
            max_failed_tokens: DEFAULT_MAX_FAILED_TOKENS,
            failed_token_window: DEFAULT_FAILED_TOKEN_WINDOW,
            max_calls_per_spoke: DEFAULT_MAX_CALLS_PER_SPOKE,
            sweep_interval: Duration::from_secs(1),
            accept_retry_delay: Duration::from_millis(50),
            tls: None,
            #[cfg(feature = "signing")]
            identity_keys: None,
        }
    }
}

impl HubOptions {
    /// Serves only TLS (`wss://`) with `tls`'s certificate, requiring spokes' certificates
    /// when it names a client CA ([`ServerTls`](crate::websocket::ServerTls)). A TLS handshake
    /// counts against the handshake timeout.
    #[must_use]
    pub fn with_tls(mut self, tls: crate::websocket::ServerTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Signs the identity the hub stamps on a spoke's `call.requested` (a
    /// [`SpokeGrant::with_identity`](super::SpokeGrant::with_identity)) with `keys`, so call
    /// handlers that require signed identities
    /// ([`CallHandler::with_identity_keys`](opkit::CallHandler::with_identity_keys)) accept
    /// it. Without keys a stamped identity carries no signature (a spoke's own is dropped
    /// with the identity it signed).
    #[cfg(feature = "signing")]
    #[must_use]
    pub fn with_identity_keys(mut self, keys: opkit::protocol::IdentityKeys) -> Self {
        self.identity_keys = Some(keys);
        self
    }

    /// How often the hub pings each spoke (5 s unless set; at least 10 ms); a spoke silent for
    /// [`with_silent_intervals`](Self::with_silent_intervals) intervals is disconnected.
    #[must_use]
    pub fn with_ping_interval(mut self, interval: Duration) -> Self {
        self.ping_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// How many ping intervals a spoke may stay silent before it is disconnected (3 unless
    /// set).
    #[must_use]
    pub fn with_silent_intervals(mut self, intervals: u32) -> Self {
        self.silent_intervals = intervals.max(1);
        self
    }

    /// How long after a ping the hub waits to hear anything from a spoke before it
    /// disconnects it (2 s unless set; at least 10 ms): a spoke whose connection went silent
    /// stops getting requests within the ping interval plus this, and the requests go to the
    /// other spokes serving the operation; the ones it was running fail with
    /// `TRANSPORT_ERROR`.
    #[must_use]
    pub fn with_pong_timeout(mut self, timeout: Duration) -> Self {
        self.pong_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// How long a connecting spoke may take to complete the WebSocket handshake (10 s unless
    /// set).
    #[must_use]
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// How many bytes of frames may wait for one spoke that does not read them
    /// ([`DEFAULT_MAX_QUEUED_BYTES`], 64 MiB, unless set). A spoke that goes over is
    /// disconnected with a logged reason; the requests it was running fail with
    /// `TRANSPORT_ERROR`, and its queue is freed.
    #[must_use]
    pub fn with_max_queued_bytes(mut self, bytes: usize) -> Self {
        self.max_queued_bytes = bytes.max(1);
        self
    }

    /// How many subscriptions one spoke may hold ([`DEFAULT_MAX_SUBSCRIPTIONS`] unless set);
    /// one more is refused with an error naming the limit (the spoke's `subscribe` fails with
    /// a transport error).
    #[must_use]
    pub fn with_max_subscriptions(mut self, subscriptions: usize) -> Self {
        self.max_subscriptions = subscriptions.max(1);
        self
    }

    /// The longest topic name, group name or request id a spoke may give
    /// ([`DEFAULT_MAX_TOPIC_LEN`] unless set): a `subscribe` or `publish` naming a longer one
    /// is refused with an error naming the limit, before the hub keeps anything of it. A
    /// frame header longer than twice this plus 64 KiB is refused unread (answered by an
    /// `error` frame without an id).
    #[must_use]
    pub fn with_max_topic_len(mut self, bytes: usize) -> Self {
        self.max_topic_len = bytes.max(1);
        self
    }

    /// How many connections may hold one token at once
    /// ([`DEFAULT_MAX_CONNECTIONS_PER_TOKEN`] unless set): one more is refused in the handshake
    /// with HTTP `429`, naming the limit.
    #[must_use]
    pub fn with_max_connections_per_token(mut self, connections: usize) -> Self {
        self.max_connections_per_token = connections.max(1);
        self
    }

    /// How many connections may come from one IP address at once, handshakes included
    /// ([`DEFAULT_MAX_CONNECTIONS_PER_ADDRESS`] unless set): one more is closed as soon as it
    /// is accepted (logged at a bounded rate).
    #[must_use]
    pub fn with_max_connections_per_address(mut self, connections: usize) -> Self {
        self.max_connections_per_address = connections.max(1);
        self
    }

    /// How many failed token attempts (a missing or unknown token) one IP address may make
    /// within `window` ([`DEFAULT_MAX_FAILED_TOKENS`] in [`DEFAULT_FAILED_TOKEN_WINDOW`]
    /// unless set): past them, that address's handshakes are refused with HTTP `429` until the
    /// window ends, whatever token they carry. Refused handshakes are logged at most once a
    /// second, with a count of the ones left out.
    #[must_use]
    pub fn with_max_failed_tokens(mut self, attempts: u32, window: Duration) -> Self {
        self.max_failed_tokens = attempts.max(1);
        self.failed_token_window = window;
        self
    }

    /// How many calls one spoke may have in flight through the hub
    /// ([`DEFAULT_MAX_CALLS_PER_SPOKE`] unless set): the hub remembers who made each request
    /// until it ends, to route its replies; one more `call.requested` is refused (the call
    /// fails with `TRANSPORT_ERROR`, not sent) with an error naming the limit.
    #[must_use]
    pub fn with_max_calls_per_spoke(mut self, calls: usize) -> Self {
        self.max_calls_per_spoke = calls.max(1);
        self
    }

    /// How long after the last spoke serving a request topic disconnected publishing on it
    /// fails with a transport error rather than reaching nobody (60 s unless set).
    #[must_use]
    pub fn with_orphan_grace(mut self, grace: Duration) -> Self {
        self.orphan_grace = grace;
        self
    }

    /// How many frames may wait for one spoke before it is disconnected (65,536 unless set;
    /// [`with_max_queued_bytes`](Self::with_max_queued_bytes) bounds their size).
    #[must_use]
    pub fn with_max_queued(mut self, frames: usize) -> Self {
        self.max_queued = frames.max(1);
        self
    }

    /// How often the hub drops the in-flight requests whose deadline passed, the orphaned
    /// request topics past their [grace](Self::with_orphan_grace) and the failed-token windows
    /// that ended (1 s unless set; at least 10 ms).
    #[must_use]
    pub fn with_sweep_interval(mut self, interval: Duration) -> Self {
        self.sweep_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// How long the hub waits before accepting again after accepting a connection failed
    /// (for example when the process is out of file descriptors; 50 ms unless set).
    #[must_use]
    pub fn with_accept_retry_delay(mut self, delay: Duration) -> Self {
        self.accept_retry_delay = delay;
        self
    }
}
