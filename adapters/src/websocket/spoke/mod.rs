//! The spoke: a [`PubSub`] that talks to a [`WsHub`](super::WsHub) over one WebSocket,
//! reconnecting with backoff.

use super::frame::{self, Header};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::{SplitSink, SplitStream};
use futures::{FutureExt, SinkExt, Stream, StreamExt};
use opkit::CallError;
use opkit::protocol::{CallEvent, Delivery, PubSub, Receipt, Subscription, TransportError, topics};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderValue, header};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

mod options;

pub use options::SpokeOptions;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// The hub's refusal of a request: its message, and whether what was refused reached nobody.
type Refusal = (String, bool);

type Ack = oneshot::Sender<Result<Option<usize>, Refusal>>;

struct Sub {
    topic: String,
    group: Option<String>,
    sender: mpsc::UnboundedSender<Bytes>,
    /// Bytes sent and not yet taken by the subscriber.
    queued: Arc<AtomicUsize>,
}

#[derive(Default)]
struct State {
    /// The current connection's outgoing queue; `None` while disconnected.
    link: Option<mpsc::UnboundedSender<Message>>,
    /// The hub's name for the current connection.
    name: Option<String>,
    /// The number of the current connection (counts connections made) and the token that
    /// drops it; a request that times out drops the connection it was sent on, only.
    connection: u64,
    kick: Option<CancellationToken>,
    /// Publishes and subscribes waiting for the hub's answer, by id.
    pending: HashMap<u64, Ack>,
    subscriptions: HashMap<u64, Sub>,
}

struct SpokeShared {
    url: String,
    options: SpokeOptions,
    state: Mutex<State>,
    next_id: AtomicU64,
    closed: CancellationToken,
}

/// Closes the connection when the last [`WsSpoke`] clone and subscription are gone.
struct Handle {
    inner: Arc<SpokeShared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.inner.closed.cancel();
    }
}

/// A spoke of a [`WsHub`](super::WsHub): a [`PubSub`] whose messages the hub routes. See the
/// [module docs](super) for the frames and the delivery guarantees.
///
/// Cloning is cheap; clones share the connection. The connection closes when every clone and
/// every subscription made through it are dropped, or on [`close`](Self::close).
#[derive(Clone)]
pub struct WsSpoke {
    handle: Arc<Handle>,
}

impl fmt::Debug for WsSpoke {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WsSpoke")
            .field("url", &self.handle.inner.url)
            .field("name", &self.name())
            .field("connected", &self.is_connected())
            .finish()
    }
}

/// A failure after a frame may have been written: whether the hub acted on it is unknown.
fn transport(message: impl fmt::Display) -> TransportError {
    TransportError::new(format!("websocket: {message}"))
}

/// A failure before anything was written, or a refusal of something that reached nobody.
fn not_sent(message: impl fmt::Display) -> TransportError {
    TransportError::not_sent(format!("websocket: {message}"))
}

/// A request waiting for the hub's answer. Dropped before the answer (the caller stopped
/// waiting, or the answer was a failure), it forgets the request and, for a subscribe,
/// tells the hub to drop the subscription it may have made.
struct Waiting<'a> {
    inner: &'a SpokeShared,
    id: u64,
    done: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut state = self.inner.state.lock();
        state.pending.remove(&self.id);
        if state.subscriptions.remove(&self.id).is_some()
            && let Some(link) = &state.link
        {
            let _ = link.send(frame::encode(&Header::Unsubscribe { id: self.id }, None));
        }
    }
}

impl WsSpoke {
    /// Connects to the hub at `url` (`ws://host:port/`) with `token` and the default settings.
    /// Fails when the hub cannot be reached or refuses the token.
    pub async fn connect(url: &str, token: &str) -> Result<Self, TransportError> {
        Self::connect_with(url, SpokeOptions::new(token)).await
    }

    /// [`connect`](Self::connect) with settings.
    pub async fn connect_with(url: &str, options: SpokeOptions) -> Result<Self, TransportError> {
        let inner = Arc::new(SpokeShared {
            url: url.to_owned(),
            options,
            state: Mutex::new(State::default()),
            next_id: AtomicU64::new(1),
            closed: CancellationToken::new(),
        });
        let (socket, name) = open(&inner).await?;
        // Connected before this returns: publishing works at once.
        let running = start(&inner, socket, name);
        tokio::spawn(supervise(inner.clone(), running));
        Ok(Self {
            handle: Arc::new(Handle { inner }),
        })
    }

    /// `true` while connected to the hub.
    pub fn is_connected(&self) -> bool {
        self.handle.inner.state.lock().link.is_some()
    }

    /// The hub's name for the current connection (`<grant name>#<n>`), while connected.
    pub fn name(&self) -> Option<String> {
        let state = self.handle.inner.state.lock();
        state.link.as_ref().and(state.name.clone())
    }

    /// Closes the connection for good: publishing and subscribing fail from now on.
    pub fn close(&self) {
        self.handle.inner.closed.cancel();
    }

    async fn request(
        &self,
        id: u64,
        message: Message,
        subscription: Option<Sub>,
    ) -> Result<Option<usize>, TransportError> {
        let inner = &self.handle.inner;
        let (ack, answer) = oneshot::channel();
        let connection = {
            let mut state = inner.state.lock();
            let Some(link) = state.link.clone() else {
                return Err(not_sent("not connected to the hub"));
            };
            if let Some(subscription) = subscription {
                state.subscriptions.insert(id, subscription);
            }
            state.pending.insert(id, ack);
            if link.send(message).is_err() {
                state.pending.remove(&id);
                state.subscriptions.remove(&id);
                return Err(not_sent("the connection to the hub closed"));
            }
            state.connection
        };
        // From here the frame may be on its way: a caller that stops waiting (its deadline)
        // forgets the request and, for a subscribe, unsubscribes what the hub may have made.
        let mut waiting = Waiting {
            inner,
            id,
            done: false,
        };
        let result = match tokio::time::timeout(inner.options.request_timeout, answer).await {
            Ok(Ok(Ok(receivers))) => {
                waiting.done = true;
                return Ok(receivers);
            }
            Ok(Ok(Err((message, true)))) => Err(not_sent(format!("the hub refused: {message}"))),
            Ok(Ok(Err((message, false)))) => Err(transport(format!("the hub refused: {message}"))),
            Ok(Err(_)) => Err(transport("disconnected from the hub before it answered")),
            Err(_) => {
                // A silent link: drop it (if it is still the one this went out on) so the
                // spoke reconnects instead of timing out every request.
                let state = inner.state.lock();
                if state.connection == connection
                    && let Some(kick) = &state.kick
                {
                    tracing::warn!(hub = %inner.url, "the hub did not answer a request in time: reconnecting");
                    kick.cancel();
                }
                Err(transport("the hub did not answer in time"))
            }
        };
        drop(waiting);
        result
    }

    async fn subscribe_to(
        &self,
        topic: &str,
        group: Option<&str>,
    ) -> Result<Subscription, TransportError> {
        let id = self.handle.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = mpsc::unbounded_channel();
        let header = subscribe_header(id, topic, group);
        let queued = Arc::new(AtomicUsize::new(0));
        let sub = Sub {
            topic: topic.to_owned(),
            group: group.map(str::to_owned),
            sender,
            queued: queued.clone(),
        };
        self.request(id, frame::encode(&header, None), Some(sub))
            .await?;
        Ok(Subscription::new(SpokeSubscription {
            receiver,
            id,
            handle: self.handle.clone(),
            queued,
        }))
    }
}

fn subscribe_header(id: u64, topic: &str, group: Option<&str>) -> Header {
    match group {
        Some(group) => Header::SubscribeGroup {
            id,
            topic: topic.to_owned(),
            group: group.to_owned(),
        },
        None => Header::Subscribe {
            id,
            topic: topic.to_owned(),
        },
    }
}

impl PubSub for WsSpoke {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<Receipt, TransportError>> {
        async move {
            let id = self.handle.inner.next_id.fetch_add(1, Ordering::Relaxed);
            let header = Header::Publish {
                id,
                topic: topic.to_owned(),
            };
            let receivers = self
                .request(id, frame::encode(&header, Some(&payload)), None)
                .await?;
            Ok(receivers.map_or(Receipt::unknown(), Receipt::delivered))
        }
        .boxed()
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.subscribe_to(topic, None).boxed()
    }

    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.subscribe_to(topic, Some(group)).boxed()
    }
}

/// One subscription's messages; dropping it unsubscribes.
struct SpokeSubscription {
    receiver: mpsc::UnboundedReceiver<Bytes>,
    id: u64,
    handle: Arc<Handle>,
    /// Shared with the subscription's `Sub`: what was sent and not taken yet.
    queued: Arc<AtomicUsize>,
}

impl Stream for SpokeSubscription {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let polled = self.receiver.poll_recv(cx);
        if let Poll::Ready(Some(payload)) = &polled {
            self.queued.fetch_sub(payload.len(), Ordering::AcqRel);
        }
        polled
    }
}

impl Drop for SpokeSubscription {
    fn drop(&mut self) {
        let mut state = self.handle.inner.state.lock();
        if state.subscriptions.remove(&self.id).is_some()
            && let Some(link) = &state.link
        {
            let _ = link.send(frame::encode(&Header::Unsubscribe { id: self.id }, None));
        }
    }
}

/// Connects, authenticates and waits for the hub's welcome (bounded by the connect timeout).
async fn open(inner: &SpokeShared) -> Result<(Socket, String), TransportError> {
    let mut request = inner
        .url
        .as_str()
        .into_client_request()
        .map_err(|error| transport(format!("invalid hub URL: {error}")))?;
    let bearer = HeaderValue::from_str(&format!("Bearer {}", inner.options.token))
        .map_err(|_| transport("the token is not a valid header value"))?;
    request.headers_mut().insert(header::AUTHORIZATION, bearer);
    let connect = async {
        // `TCP_NODELAY` (the last argument): a frame the hub does not answer on this socket
        // must not wait for its delayed ACK (Nagle's algorithm), about 40 ms on Linux.
        let connector =
            super::tls::connector(request.uri().scheme_str(), inner.options.tls.as_ref())
                .map_err(transport)?;
        let (mut socket, _) =
            tokio_tungstenite::connect_async_tls_with_config(request, None, true, Some(connector))
                .await
                .map_err(|error| match error {
                    tungstenite::Error::Http(response) => transport(format!(
                        "the hub refused the connection: {}",
                        response.status()
                    )),
                    other => transport(format!("could not connect to the hub: {other}")),
                })?;
        while let Some(message) = socket.next().await {
            let message = message.map_err(|error| transport(format!("hub handshake: {error}")))?;
            let Some(data) = frame::data_of(message) else {
                continue;
            };
            return match frame::decode(&data) {
                Ok((Header::Welcome { spoke }, _)) => Ok((socket, spoke)),
                Ok((other, _)) => Err(transport(format!(
                    "the hub sent {other:?} instead of a welcome"
                ))),
                Err(error) => Err(transport(format!(
                    "the hub sent a malformed welcome: {error}"
                ))),
            };
        }
        Err(transport(
            "the hub closed the connection during the handshake",
        ))
    };
    match tokio::time::timeout(inner.options.connect_timeout, connect).await {
        Ok(result) => result,
        Err(_) => Err(transport("connecting to the hub timed out")),
    }
}

/// Runs connections one after the other until the spoke is closed.
async fn supervise(inner: Arc<SpokeShared>, running: Running) {
    let mut connection = Some(running);
    let mut backoff = inner.options.backoff();
    loop {
        if let Some(running) = connection.take() {
            run(&inner, running).await;
            if inner.closed.is_cancelled() {
                return;
            }
            tracing::warn!(hub = %inner.url, "lost the connection to the hub: reconnecting");
        }
        tokio::select! {
            () = inner.closed.cancelled() => return,
            () = tokio::time::sleep(backoff.step()) => {}
        }
        match open(&inner).await {
            Ok((socket, name)) => {
                tracing::info!(hub = %inner.url, spoke = %name, "reconnected to the hub");
                connection = Some(start(&inner, socket, name));
                backoff.reset();
            }
            Err(error) => {
                tracing::debug!(%error, "the hub is still unreachable");
            }
        }
    }
}

/// A connection in use.
struct Running {
    source: SplitStream<Socket>,
    outbound: mpsc::UnboundedSender<Message>,
    writer: tokio::task::JoinHandle<()>,
    /// Cancelled to drop this connection (a request it carried went unanswered).
    kick: CancellationToken,
}

/// Puts a fresh connection in use: subscribes again to every live subscription (under the
/// same ids), then lets publishes and subscribes through.
fn start(inner: &SpokeShared, socket: Socket, name: String) -> Running {
    let (sink, source) = socket.split();
    let (outbound, queue) = mpsc::unbounded_channel::<Message>();
    let writer = tokio::spawn(write(sink, queue));
    let mut state = inner.state.lock();
    for (id, sub) in &state.subscriptions {
        let header = subscribe_header(*id, &sub.topic, sub.group.as_deref());
        let _ = outbound.send(frame::encode(&header, None));
    }
    let kick = inner.closed.child_token();
    state.link = Some(outbound.clone());
    state.name = Some(name);
    state.connection += 1;
    state.kick = Some(kick.clone());
    Running {
        source,
        outbound,
        writer,
        kick,
    }
}

/// Reads one connection until it ends: closed by either side, failed, dropped by a request
/// that went unanswered, or silent — a ping every ping interval, and nothing heard within
/// the pong timeout after one (while a ping is unanswered, `awaiting` holds when it was sent).
async fn run(inner: &SpokeShared, running: Running) {
    let Running {
        mut source,
        outbound,
        writer,
        kick,
    } = running;
    let mut ping = tokio::time::interval(inner.options.ping_interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut awaiting: Option<Instant> = None;
    loop {
        let silence = async {
            match awaiting {
                Some(sent) => tokio::time::sleep_until(sent + inner.options.pong_timeout).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = inner.closed.cancelled() => {
                let _ = outbound.send(Message::Close(None));
                break;
            }
            () = kick.cancelled() => break,
            () = silence => {
                tracing::warn!(hub = %inner.url, "the hub went silent: reconnecting");
                break;
            }
            _ = ping.tick() => {
                awaiting.get_or_insert_with(Instant::now);
                let _ = outbound.send(Message::Ping(Bytes::new()));
            }
            message = source.next() => match message {
                Some(Ok(message)) => {
                    awaiting = None;
                    if matches!(message, Message::Close(_)) {
                        break;
                    }
                    if let Some(data) = frame::data_of(message) {
                        handle(inner, &data);
                    }
                }
                Some(Err(error)) => {
                    tracing::debug!(%error, "the connection to the hub failed");
                    break;
                }
                None => break,
            }
        }
    }
    let pending = {
        let mut state = inner.state.lock();
        state.link = None;
        state.kick = None;
        std::mem::take(&mut state.pending)
    };
    for (_, ack) in pending {
        let _ = ack.send(Err(("disconnected from the hub".to_owned(), false)));
    }
    drop(outbound);
    // Let the writer flush a close frame, but not for long; a silent link never flushes it.
    let mut writer = writer;
    if tokio::time::timeout(inner.options.close_timeout, &mut writer)
        .await
        .is_err()
    {
        writer.abort();
    }
}

async fn write(mut sink: SplitSink<Socket, Message>, mut queue: mpsc::UnboundedReceiver<Message>) {
    while let Some(message) = queue.recv().await {
        let closing = matches!(message, Message::Close(_));
        if sink.send(message).await.is_err() || closing {
            break;
        }
    }
    let _ = sink.close().await;
}

/// Answers a request a full group subscription cannot take with `call.error`
/// (`TRANSPORT_ERROR`, not sent: it never ran), published without waiting for the hub's
/// acknowledgement; anything else is dropped with a warning.
fn refuse_request(inner: &SpokeShared, state: &State, payload: &Bytes) {
    let Some(link) = &state.link else { return };
    let Ok(CallEvent::Requested(request)) = CallEvent::from_slice(payload) else {
        tracing::warn!("dropping a message for a full group subscription");
        return;
    };
    let error = CallError::transport(format!(
        "the serving spoke is at its limit: {} bytes of requests wait for its handler (SpokeOptions::with_max_queued_bytes); `{}` was not run",
        inner.options.max_queued_bytes, request.operation_id
    ))
    .with_details(Delivery::NotSent.details());
    let topic = topics::reply_topic_for(&request.request_id);
    let Ok(reply) = CallEvent::error(request.request_id, error).to_bytes() else {
        return;
    };
    let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
    let header = Header::Publish { id, topic };
    let _ = link.send(frame::encode(&header, Some(&reply)));
}

/// Handles one frame from the hub; malformed frames are logged and dropped.
fn handle(inner: &SpokeShared, data: &Bytes) {
    let (header, payload) = match frame::decode(data) {
        Ok(decoded) => decoded,
        Err(error) => {
            tracing::warn!(%error, "dropping a malformed frame from the hub");
            return;
        }
    };
    match header {
        Header::Message { sub } => {
            let mut state = inner.state.lock();
            let full = state.subscriptions.get(&sub).is_some_and(|subscription| {
                subscription.group.is_some()
                    && subscription.queued.load(Ordering::Acquire) + payload.len()
                        > inner.options.max_queued_bytes
            });
            if full {
                refuse_request(inner, &state, &payload);
                return;
            }
            let delivered = state.subscriptions.get(&sub).is_some_and(|subscription| {
                // Counted before it is sent, so the subscriber's count never goes below zero.
                subscription
                    .queued
                    .fetch_add(payload.len(), Ordering::AcqRel);
                subscription.sender.send(payload).is_ok()
            });
            if !delivered && state.subscriptions.remove(&sub).is_none() {
                tracing::debug!(sub, "a message for a subscription that is gone");
            }
        }
        Header::Ok { id, receivers } => {
            if let Some(ack) = inner.state.lock().pending.remove(&id) {
                let _ = ack.send(Ok(receivers));
            }
        }
        Header::Error {
            id: Some(id),
            message,
            unsent,
        } => {
            let ack = inner.state.lock().pending.remove(&id);
            match ack {
                Some(ack) => drop(ack.send(Err((message, unsent)))),
                None => tracing::warn!(id, message, "the hub refused a request"),
            }
        }
        Header::Error {
            id: None, message, ..
        } => {
            tracing::warn!(message, "the hub refused a frame");
        }
        Header::Welcome { .. } => {}
        other => tracing::warn!(frame = ?other, "dropping a frame hubs do not send"),
    }
}
