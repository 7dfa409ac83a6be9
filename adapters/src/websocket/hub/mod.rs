//! The hub: accepts authenticated spokes and routes their messages.

use super::frame::{self, Header};
use super::outbound::Outbound;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, SinkExt, StreamExt};
use opkit::protocol::{
    CallEvent, MemoryPubSub, PubSub, Receipt, Subscription, TransportError, topics,
};
use opkit::{CallError, Identity};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{StatusCode, header};
use tokio_util::sync::CancellationToken;

/// What a verified token grants a spoke.
#[derive(Debug, Clone, PartialEq)]
pub struct SpokeGrant {
    /// The spoke's name, in logs and [`WsHub::operations`].
    pub name: String,
    /// When set, the hub stamps this identity on every `call.requested` the spoke publishes.
    pub identity: Option<Identity>,
}

impl SpokeGrant {
    /// A grant for a spoke named `name` whose requests carry the identities it puts in them.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            identity: None,
        }
    }

    /// Binds the spoke's requests to `identity` (the hub overwrites theirs).
    #[must_use]
    pub fn with_identity(mut self, identity: Identity) -> Self {
        self.identity = Some(identity);
        self
    }
}

/// Checks the token a spoke presents in its handshake (`Authorization: Bearer <token>`).
///
/// Implemented by [`StaticTokens`] and by any `Fn(&str) -> Option<SpokeGrant>`.
pub trait TokenVerifier: Send + Sync + 'static {
    /// The spoke's grant, or `None` to refuse the connection (HTTP 401).
    fn verify(&self, token: &str) -> Option<SpokeGrant>;
}

impl<F> TokenVerifier for F
where
    F: Fn(&str) -> Option<SpokeGrant> + Send + Sync + 'static,
{
    fn verify(&self, token: &str) -> Option<SpokeGrant> {
        self(token)
    }
}

/// A fixed table of tokens.
///
/// ```
/// use opkit_adapters::websocket::{SpokeGrant, StaticTokens, TokenVerifier};
/// let tokens = StaticTokens::new().with_token("s3cret", SpokeGrant::new("billing"));
/// assert_eq!(tokens.verify("s3cret").unwrap().name, "billing");
/// assert!(tokens.verify("guess").is_none());
/// ```
#[derive(Clone, Default)]
pub struct StaticTokens {
    tokens: HashMap<String, SpokeGrant>,
}

impl fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the tokens themselves.
        f.debug_struct("StaticTokens")
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

impl StaticTokens {
    /// No tokens: every spoke is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `token`, granting `grant`.
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>, grant: SpokeGrant) -> Self {
        self.tokens.insert(token.into(), grant);
        self
    }
}

impl TokenVerifier for StaticTokens {
    fn verify(&self, token: &str) -> Option<SpokeGrant> {
        self.tokens.get(token).cloned()
    }
}

/// How many bytes of frames may wait for one spoke unless
/// [`HubOptions::with_max_queued_bytes`] says otherwise: 64 MiB.
pub const DEFAULT_MAX_QUEUED_BYTES: usize = 64 * 1024 * 1024;

/// How many subscriptions one spoke may hold unless
/// [`HubOptions::with_max_subscriptions`] says otherwise: 4,096 (a spoke serving an
/// operation holds two: its request and abort topics).
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 4096;

/// Settings of a [`WsHub`]. Every bound and timing of the hub is here.
#[derive(Debug, Clone)]
pub struct HubOptions {
    ping_interval: Duration,
    silent_intervals: u32,
    handshake_timeout: Duration,
    orphan_grace: Duration,
    pub(super) max_queued: usize,
    pub(super) max_queued_bytes: usize,
    max_subscriptions: usize,
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            ping_interval: Duration::from_secs(5),
            silent_intervals: 3,
            handshake_timeout: Duration::from_secs(10),
            orphan_grace: Duration::from_secs(60),
            max_queued: 65_536,
            max_queued_bytes: DEFAULT_MAX_QUEUED_BYTES,
            max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
        }
    }
}

impl HubOptions {
    /// How often the hub pings each spoke (5 s unless set); a spoke silent for
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
}

/// A request routed to a spoke and not finished yet.
struct InFlight {
    reply_topic: String,
    deadline: Option<u64>,
}

/// One connected spoke, as the hub sees it.
pub(super) struct SpokeState {
    pub(super) name: String,
    grant: SpokeGrant,
    /// Subscriptions by the spoke's id: (topic, group, the task forwarding them).
    subscriptions: HashMap<u64, (String, Option<String>, CancellationToken)>,
    in_flight: HashMap<String, InFlight>,
    dead: bool,
}

struct Shared {
    bus: MemoryPubSub,
    verifier: Arc<dyn TokenVerifier>,
    options: HubOptions,
    spokes: Mutex<HashMap<u64, Arc<Mutex<SpokeState>>>>,
    /// Request topics whose last serving spoke disconnected: (its name, when).
    orphans: Mutex<HashMap<String, (String, Instant)>>,
    /// Disconnects a spoke on demand, by connection id.
    kicks: Mutex<HashMap<u64, CancellationToken>>,
    next_connection: AtomicU64,
    shutdown: CancellationToken,
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

/// A WebSocket hub: accepts spokes that present a valid token and routes the call protocol
/// between them (and in-process participants, through [`pubsub`](Self::pubsub)). See the
/// [module docs](super) for the frames and the delivery guarantees.
///
/// Dropping the hub stops accepting and disconnects every spoke (the listening socket is
/// closed by the hub's accept task, shortly after the drop).
pub struct WsHub {
    shared: Arc<Shared>,
    address: SocketAddr,
}

impl fmt::Debug for WsHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WsHub")
            .field("address", &self.address)
            .field("spokes", &self.spokes())
            .finish()
    }
}

impl Drop for WsHub {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}

impl WsHub {
    /// Listens on `address` (use a loopback address such as `127.0.0.1:0` unless spokes
    /// connect from elsewhere) with the default [`HubOptions`].
    pub async fn bind(
        address: impl ToSocketAddrs,
        verifier: impl TokenVerifier,
    ) -> std::io::Result<Self> {
        Self::bind_with(address, verifier, HubOptions::default()).await
    }

    /// [`bind`](Self::bind) with settings.
    pub async fn bind_with(
        address: impl ToSocketAddrs,
        verifier: impl TokenVerifier,
        options: HubOptions,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            bus: MemoryPubSub::new(),
            verifier: Arc::new(verifier),
            options,
            spokes: Mutex::new(HashMap::new()),
            orphans: Mutex::new(HashMap::new()),
            kicks: Mutex::new(HashMap::new()),
            next_connection: AtomicU64::new(1),
            shutdown: CancellationToken::new(),
        });
        tokio::spawn(accept(shared.clone(), listener));
        tokio::spawn(sweep(shared.clone()));
        Ok(Self { shared, address })
    }

    /// The address the hub listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The URL spokes connect to (`ws://<address>/`).
    pub fn url(&self) -> String {
        format!("ws://{}/", self.address)
    }

    /// A [`PubSub`] on the hub itself, for callers and handlers in the hub's process.
    pub fn pubsub(&self) -> HubPubSub {
        HubPubSub {
            shared: self.shared.clone(),
        }
    }

    /// The names of the connected spokes (`<grant name>#<connection>`), sorted.
    pub fn spokes(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .shared
            .spokes
            .lock()
            .values()
            .map(|spoke| spoke.lock().name.clone())
            .collect();
        names.sort();
        names
    }

    /// The operations spokes announced (by joining their request topics), with the spokes
    /// serving each.
    pub fn operations(&self) -> BTreeMap<String, Vec<String>> {
        let prefix = topics::request_topic("");
        let mut operations: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for spoke in self.shared.spokes.lock().values() {
            let spoke = spoke.lock();
            for (topic, group, _) in spoke.subscriptions.values() {
                if group.is_some()
                    && let Some(id) = topic.strip_prefix(&prefix)
                {
                    let serving = operations.entry(id.to_owned()).or_default();
                    if !serving.contains(&spoke.name) {
                        serving.push(spoke.name.clone());
                        serving.sort();
                    }
                }
            }
        }
        operations
    }

    /// Disconnects the spokes named `name` (by grant name or full name); they reconnect with
    /// backoff. Returns how many were disconnected.
    pub fn disconnect(&self, name: &str) -> usize {
        let ids: Vec<u64> = self
            .shared
            .spokes
            .lock()
            .iter()
            .filter(|(_, spoke)| {
                let spoke = spoke.lock();
                spoke.name == name || spoke.grant.name == name
            })
            .map(|(id, _)| *id)
            .collect();
        let kicks = self.shared.kicks.lock();
        for id in &ids {
            if let Some(kick) = kicks.get(id) {
                kick.cancel();
            }
        }
        ids.len()
    }
}

/// The hub's [`PubSub`] for in-process participants (see [`WsHub::pubsub`]). Cheap to clone.
#[derive(Clone)]
pub struct HubPubSub {
    shared: Arc<Shared>,
}

impl fmt::Debug for HubPubSub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HubPubSub")
    }
}

impl PubSub for HubPubSub {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<Receipt, TransportError>> {
        self.shared.publish(None, topic, payload).boxed()
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        async move {
            self.shared.unorphan(topic);
            self.shared.bus.subscribe(topic).await
        }
        .boxed()
    }

    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        async move {
            self.shared.unorphan(topic);
            self.shared.bus.subscribe_group(topic, group).await
        }
        .boxed()
    }
}

impl Shared {
    fn unorphan(&self, topic: &str) {
        self.orphans.lock().remove(topic);
    }

    /// Publishes on the bus, keeping track of requests in flight to spokes.
    async fn publish(
        &self,
        origin: Option<&Arc<Mutex<SpokeState>>>,
        topic: &str,
        payload: Bytes,
    ) -> Result<Receipt, TransportError> {
        let mut payload = payload;
        if let Some(event) = frame::peek(&payload) {
            let request_id = event.request_id.as_deref().unwrap_or_default();
            match event.kind.as_deref() {
                Some("call.completed" | "call.error") => {
                    if let Some(origin) = origin {
                        origin.lock().in_flight.remove(request_id);
                    }
                }
                Some("call.aborted") => {
                    for spoke in self.spokes.lock().values() {
                        spoke.lock().in_flight.remove(request_id);
                    }
                }
                Some("call.requested") => {
                    if let Some(identity) =
                        origin.and_then(|origin| origin.lock().grant.identity.clone())
                    {
                        payload = stamp_identity(&payload, &identity).unwrap_or(payload);
                    }
                }
                _ => {}
            }
        }
        let receipt = self.bus.publish(topic, payload).await?;
        if receipt.reached_nobody()
            && let Some((spoke, since)) = self.orphans.lock().get(topic).cloned()
            && since.elapsed() < self.options.orphan_grace
        {
            return Err(TransportError::new(format!(
                "the spoke `{spoke}` that served `{topic}` disconnected and no other serves it (yet)"
            )));
        }
        Ok(receipt)
    }

    /// A spoke is gone: drop its subscriptions, fail the requests it was running.
    async fn spoke_gone(&self, id: u64, spoke: &Arc<Mutex<SpokeState>>) {
        self.spokes.lock().remove(&id);
        self.kicks.lock().remove(&id);
        let (name, subscriptions, in_flight) = {
            let mut state = spoke.lock();
            state.dead = true;
            (
                state.name.clone(),
                std::mem::take(&mut state.subscriptions),
                std::mem::take(&mut state.in_flight),
            )
        };
        // Request topics nobody else serves become orphans.
        let mut ours: HashMap<String, usize> = HashMap::new();
        for (topic, group, _) in subscriptions.values() {
            if group.is_some() {
                *ours.entry(topic.clone()).or_default() += 1;
            }
        }
        for (topic, count) in ours {
            if self.bus.subscriber_count(&topic) <= count {
                self.orphans
                    .lock()
                    .insert(topic, (name.clone(), Instant::now()));
            }
        }
        // The forwarders fail what is still queued for the spoke, then unsubscribe.
        for (_, _, stop) in subscriptions.into_values() {
            stop.cancel();
        }
        let now = now_millis();
        let failed = in_flight
            .values()
            .filter(|request| request.deadline.is_none_or(|deadline| deadline > now))
            .count();
        if failed > 0 {
            tracing::warn!(spoke = %name, requests = failed, "a spoke disconnected with requests in flight: failing them");
        }
        self.fail_requests(&name, in_flight).await;
        tracing::info!(spoke = %name, "spoke disconnected");
    }

    async fn fail_requests(&self, name: &str, in_flight: HashMap<String, InFlight>) {
        let now = now_millis();
        for (request_id, request) in in_flight {
            if request.deadline.is_some_and(|deadline| deadline <= now) {
                continue;
            }
            let error = CallError::transport(format!(
                "the spoke `{name}` running this request disconnected"
            ));
            match CallEvent::error(request_id.as_str(), error).to_bytes() {
                Ok(payload) => {
                    let _ = self.bus.publish(&request.reply_topic, payload).await;
                }
                Err(error) => tracing::error!(%error, "could not encode call.error"),
            }
        }
    }
}

/// Replaces the `identity` of a `call.requested` payload.
fn stamp_identity(payload: &[u8], identity: &Identity) -> Option<Bytes> {
    let mut value: Value = serde_json::from_slice(payload).ok()?;
    let fields = value.as_object_mut()?;
    fields.insert("identity".to_owned(), serde_json::to_value(identity).ok()?);
    serde_json::to_vec(&value).ok().map(Bytes::from)
}

async fn accept(shared: Arc<Shared>, listener: TcpListener) {
    loop {
        let accepted = tokio::select! {
            () = shared.shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                tokio::spawn(connection(shared.clone(), stream, peer));
            }
            Err(error) => {
                tracing::warn!(%error, "the hub could not accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Drops in-flight entries whose deadline passed (the caller gave up on them).
async fn sweep(shared: Arc<Shared>) {
    loop {
        tokio::select! {
            () = shared.shutdown.cancelled() => return,
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        let now = now_millis();
        let spokes: Vec<_> = shared.spokes.lock().values().cloned().collect();
        for spoke in spokes {
            spoke
                .lock()
                .in_flight
                .retain(|_, request| request.deadline.is_none_or(|deadline| deadline > now));
        }
        let grace = shared.options.orphan_grace;
        shared
            .orphans
            .lock()
            .retain(|_, (_, since)| since.elapsed() < grace);
    }
}

fn bearer_token(request: &Request) -> Option<&str> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn refuse(message: &str) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(message.to_owned()));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response
}

/// Serves one spoke connection from handshake to disconnection.
// The handshake callback's error type is tungstenite's HTTP response.
#[allow(clippy::result_large_err)]
async fn connection(shared: Arc<Shared>, stream: TcpStream, peer: SocketAddr) {
    let mut grant = None;
    let verifier = shared.verifier.clone();
    let handshake =
        tokio_tungstenite::accept_hdr_async(stream, |request: &Request, response: Response| {
            match bearer_token(request) {
                None => Err(refuse("missing bearer token")),
                Some(token) => match verifier.verify(token) {
                    Some(granted) => {
                        grant = Some(granted);
                        Ok(response)
                    }
                    None => Err(refuse("invalid token")),
                },
            }
        });
    let socket = match tokio::time::timeout(shared.options.handshake_timeout, handshake).await {
        Ok(Ok(socket)) => socket,
        Ok(Err(error)) => {
            tracing::warn!(%peer, %error, "refused a spoke connection");
            return;
        }
        Err(_) => {
            tracing::warn!(%peer, "a spoke handshake timed out");
            return;
        }
    };
    let Some(grant) = grant else { return };
    let id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
    let name = format!("{}#{id}", grant.name);
    let spoke = Arc::new(Mutex::new(SpokeState {
        name: name.clone(),
        grant,
        subscriptions: HashMap::new(),
        in_flight: HashMap::new(),
        dead: false,
    }));
    let kick = shared.shutdown.child_token();
    shared.spokes.lock().insert(id, spoke.clone());
    shared.kicks.lock().insert(id, kick.clone());
    tracing::info!(spoke = %name, %peer, "spoke connected");

    let (mut sink, mut source) = socket.split();
    let (outbound, mut queue) = Outbound::new(&shared.options, spoke.clone(), kick.clone());
    let writer_stop = kick.clone();
    let writer = tokio::spawn(async move {
        while let Some(message) = queue.recv().await {
            if sink.send(message).await.is_err() {
                break;
            }
        }
        writer_stop.cancel();
        let _ = sink.close().await;
    });
    let link = Link {
        shared: shared.clone(),
        spoke: spoke.clone(),
        outbound,
    };
    link.send(frame::encode(
        &Header::Welcome {
            spoke: name.clone(),
        },
        None,
    ));

    let ping_interval = shared.options.ping_interval;
    let mut ping = tokio::time::interval(ping_interval);
    let mut last_heard = Instant::now();
    loop {
        tokio::select! {
            () = kick.cancelled() => break,
            _ = ping.tick() => {
                if last_heard.elapsed() > ping_interval * shared.options.silent_intervals {
                    tracing::warn!(spoke = %name, "a spoke went silent: disconnecting it");
                    break;
                }
                link.send(Message::Ping(Bytes::new()));
            }
            message = source.next() => match message {
                Some(Ok(message)) => {
                    last_heard = Instant::now();
                    if matches!(message, Message::Close(_)) {
                        break;
                    }
                    if let Some(data) = frame::data_of(message) {
                        link.handle(&data).await;
                    }
                }
                Some(Err(error)) => {
                    tracing::debug!(spoke = %name, %error, "a spoke connection failed");
                    break;
                }
                None => break,
            }
        }
    }
    kick.cancel();
    writer.abort();
    shared.spoke_gone(id, &spoke).await;
}

/// A connected spoke's side of the hub: its outgoing queue and its state.
struct Link {
    shared: Arc<Shared>,
    spoke: Arc<Mutex<SpokeState>>,
    outbound: Outbound,
}

impl Link {
    /// Queues a frame; a spoke too far behind is disconnected.
    fn send(&self, message: Message) -> bool {
        self.outbound.send(message)
    }

    fn reply(&self, id: u64, result: Result<Option<usize>, String>) {
        let header = match result {
            Ok(receivers) => Header::Ok { id, receivers },
            Err(message) => Header::Error {
                id: Some(id),
                message,
            },
        };
        self.send(frame::encode(&header, None));
    }

    /// Handles one frame from the spoke; malformed frames are logged and dropped.
    async fn handle(&self, data: &Bytes) {
        let (header, payload) = match frame::decode(data) {
            Ok(decoded) => decoded,
            Err(error) => {
                tracing::warn!(spoke = %self.spoke.lock().name, %error, "dropping a malformed frame from a spoke");
                self.send(frame::encode(
                    &Header::Error {
                        id: None,
                        message: format!("malformed frame: {error}"),
                    },
                    None,
                ));
                return;
            }
        };
        match header {
            Header::Subscribe { id, topic } => self.subscribe(id, topic, None).await,
            Header::SubscribeGroup { id, topic, group } => {
                self.subscribe(id, topic, Some(group)).await;
            }
            Header::Unsubscribe { id } => {
                if let Some((_, _, stop)) = self.spoke.lock().subscriptions.remove(&id) {
                    stop.cancel();
                }
            }
            Header::Publish { id, topic } => {
                let result = self
                    .shared
                    .publish(Some(&self.spoke), &topic, payload)
                    .await
                    .map(Receipt::receivers)
                    .map_err(|error| error.message().to_owned());
                self.reply(id, result);
            }
            other => {
                tracing::warn!(spoke = %self.spoke.lock().name, frame = ?other, "dropping a frame spokes do not send");
                self.send(frame::encode(
                    &Header::Error {
                        id: None,
                        message: "spokes do not send this frame".to_owned(),
                    },
                    None,
                ));
            }
        }
    }

    async fn subscribe(&self, id: u64, topic: String, group: Option<String>) {
        let held = {
            let state = self.spoke.lock();
            if state.subscriptions.contains_key(&id) {
                drop(state);
                self.reply(id, Err(format!("subscription {id} exists already")));
                return;
            }
            state.subscriptions.len()
        };
        let limit = self.shared.options.max_subscriptions;
        if held >= limit {
            tracing::warn!(spoke = %self.spoke.lock().name, limit, "refused a subscription over the spoke's limit");
            self.reply(
                id,
                Err(format!(
                    "this spoke holds {held} subscriptions, the hub's limit (HubOptions::with_max_subscriptions): unsubscribe from one first"
                )),
            );
            return;
        }
        self.shared.unorphan(&topic);
        let subscription = match &group {
            Some(group) => self.shared.bus.subscribe_group(&topic, group).await,
            None => self.shared.bus.subscribe(&topic).await,
        };
        let subscription = match subscription {
            Ok(subscription) => subscription,
            Err(error) => {
                self.reply(id, Err(error.message().to_owned()));
                return;
            }
        };
        let stop = CancellationToken::new();
        let forwarder = Forwarder {
            spoke: self.spoke.clone(),
            shared: self.shared.clone(),
            outbound: self.outbound.clone(),
            id,
            track: group.is_some(),
        };
        tokio::spawn(forwarder.run(subscription, stop.clone()));
        self.spoke
            .lock()
            .subscriptions
            .insert(id, (topic, group, stop));
        self.reply(id, Ok(None));
    }
}

/// Forwards one subscription's messages to the spoke; on group subscriptions, records the
/// requests it routes there.
struct Forwarder {
    spoke: Arc<Mutex<SpokeState>>,
    shared: Arc<Shared>,
    outbound: Outbound,
    id: u64,
    track: bool,
}

impl Forwarder {
    async fn run(self, mut subscription: Subscription, stop: CancellationToken) {
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                payload = subscription.next() => match payload {
                    Some(payload) => self.forward(payload).await,
                    None => return,
                },
            }
        }
        // Stopped (unsubscribed, or the spoke is gone): what is already queued still gets its
        // answer — forwarded, or failed when the spoke is gone.
        while let Some(Some(payload)) = subscription.next().now_or_never() {
            self.forward(payload).await;
        }
    }

    async fn forward(&self, payload: Bytes) {
        if self.track
            && let Some(event) = frame::peek(&payload)
            && event.kind.as_deref() == Some("call.requested")
        {
            let request_id = event.request_id.as_deref().unwrap_or_default().to_owned();
            let request = InFlight {
                reply_topic: topics::reply_topic_for(&request_id),
                deadline: event.deadline,
            };
            let dead_name = {
                let mut state = self.spoke.lock();
                if state.dead {
                    Some(state.name.clone())
                } else {
                    state.in_flight.insert(request_id.clone(), request);
                    None
                }
            };
            if let Some(name) = dead_name {
                // Routed to a spoke that just disconnected: fail it now.
                let request = InFlight {
                    reply_topic: topics::reply_topic_for(&request_id),
                    deadline: event.deadline,
                };
                self.shared
                    .fail_requests(&name, HashMap::from([(request_id, request)]))
                    .await;
                return;
            }
        }
        let message = frame::encode(&Header::Message { sub: self.id }, Some(&payload));
        self.outbound.send(message);
    }
}
