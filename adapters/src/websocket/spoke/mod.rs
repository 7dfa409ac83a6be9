//! The spoke: a [`PubSub`] that talks to a [`WsHub`](super::WsHub) over one WebSocket,
//! reconnecting with backoff.

use super::frame::{self, Header};
use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use opkit::protocol::{PubSub, Receipt, Subscription, TransportError};
use parking_lot::Mutex;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

mod connection;
mod inbound;
mod options;
mod state;
mod subscription;

pub use options::SpokeOptions;

use connection::{open, start, supervise};
use state::{Ack, Answer, Handle, Pending, SpokeShared, State, Sub, not_sent, transport};
use subscription::{SpokeSubscription, subscribe_header};

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

    /// Records a publish or subscribe under `id` (`ack` learns the hub's answer; a subscribe
    /// also records its subscription) and queues its frame. When the frame cannot be queued
    /// nothing stays recorded, and the `ack` comes back with the error, to be dropped outside
    /// the lock (a kept value may run code when dropped).
    fn record_and_send(
        &self,
        id: u64,
        message: Message,
        ack: Ack,
        subscription: Option<Sub>,
    ) -> Result<(), (TransportError, Option<Ack>)> {
        let mut state = self.handle.inner.state.lock();
        let Some(link) = state.link.clone() else {
            return Err((not_sent("not connected to the hub"), Some(ack)));
        };
        if let Some(subscription) = subscription {
            state.subscriptions.insert(id, subscription);
        }
        let since = state.sweeps;
        state.pending.insert(id, Pending { ack, since });
        if link.send(message).is_err() {
            let record = state.pending.remove(&id);
            state.subscriptions.remove(&id);
            return Err((
                not_sent("the connection to the hub closed"),
                record.map(|record| record.ack),
            ));
        }
        Ok(())
    }

    async fn request(
        &self,
        id: u64,
        message: Message,
        subscription: Option<Sub>,
    ) -> Result<Option<usize>, TransportError> {
        let inner = &self.handle.inner;
        let (ack, answer) = oneshot::channel();
        self.record_and_send(id, message, Ack::Waiter(ack), subscription)
            .map_err(|(error, _)| error)?;
        // From here the frame may be on its way: a caller that stops waiting (its deadline)
        // forgets the request and, for a subscribe, unsubscribes what the hub may have made.
        // No timer per request: the connection's sweep answers one the hub leaves unanswered
        // for the request timeout, and drops the connection (see `connection.rs`).
        let mut waiting = Waiting {
            inner,
            id,
            done: false,
        };
        let result = match answer.await {
            Ok(Answer::Done(receivers)) => {
                waiting.done = true;
                return Ok(receivers);
            }
            Ok(Answer::Refused(message, true)) => {
                Err(not_sent(format!("the hub refused: {message}")))
            }
            Ok(Answer::Refused(message, false)) => {
                Err(transport(format!("the hub refused: {message}")))
            }
            Ok(Answer::Lost(why)) => Err(transport(why)),
            Err(_) => Err(transport("disconnected from the hub before it answered")),
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

impl PubSub for WsSpoke {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<Receipt, TransportError>> {
        async move {
            let id = self.handle.inner.next_id.fetch_add(1, Ordering::Relaxed);
            let frame = frame::encode_publish(id, topic, &payload);
            let receivers = self.request(id, frame, None).await?;
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

    /// The frame is queued with a record of the publish that holds `keep` until the hub's
    /// receipt (or refusal) arrives, or the connection's sweep or end answers it, as for a
    /// publish a caller waits on: the same bounds, and the same timeout that drops a silent
    /// connection, without a task waiting.
    fn publish_keeping<'a>(
        &'a self,
        topic: &'a str,
        payload: Bytes,
        keep: Box<dyn std::any::Any + Send>,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        let id = self.handle.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let frame = frame::encode_publish(id, topic, &payload);
        // A record taken back is dropped with the error, outside the lock.
        let result = self
            .record_and_send(id, frame, Ack::Keep(keep), None)
            .map_err(|(error, _)| error);
        std::future::ready(result).boxed()
    }

    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.subscribe_to(topic, Some(group)).boxed()
    }
}
