//! The spoke's shared state ([`SpokeShared`], [`State`]) and its invariants, and the two
//! kinds of transport error it reports.

use super::options::SpokeOptions;
use crate::seeded::Seeded;
use bytes::Bytes;
use opkit::protocol::TransportError;
use parking_lot::Mutex;
use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

pub(super) type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// The hub's answer to a publish or a subscribe, or why none will come.
pub(super) enum Answer {
    /// Done: how many subscriptions a publish reached (`None` for a subscribe).
    Done(Option<usize>),
    /// Refused: the hub's reason, and whether what was refused reached nobody.
    Refused(String, bool),
    /// No answer will come: the connection ended, or the hub did not answer in time.
    Lost(&'static str),
}

/// A publish or subscribe waiting for the hub's answer.
pub(super) struct Pending {
    pub(super) ack: Ack,
    /// The connection's sweep count when it was sent (see [`State::sweeps`]).
    pub(super) since: u64,
}

/// Who learns the hub's answer.
pub(super) enum Ack {
    /// A caller waiting for it.
    Waiter(oneshot::Sender<Answer>),
    /// Nobody ([`PubSub::publish_keeping`](opkit::protocol::PubSub::publish_keeping)): what
    /// the publisher holds until the answer is dropped with it, and a failure is logged. It
    /// may be dropped under the state lock (the reader answers receipts holding it), so it
    /// must not take this spoke's lock when dropped (a call handler's guard takes only its
    /// handler's own).
    Keep(Box<dyn Any + Send>),
}

impl Pending {
    pub(super) fn answer(self, answer: Answer) {
        match self.ack {
            Ack::Waiter(waiter) => {
                let _ = waiter.send(answer);
            }
            Ack::Keep(keep) => {
                match answer {
                    Answer::Done(_) => {}
                    Answer::Refused(message, _) => {
                        tracing::warn!(message, "the hub refused a publish nobody waited on");
                    }
                    Answer::Lost(why) => {
                        tracing::warn!(
                            why,
                            "a publish nobody waited on may not have reached the hub"
                        );
                    }
                }
                drop(keep);
            }
        }
    }
}

pub(super) struct Sub {
    pub(super) topic: String,
    pub(super) group: Option<String>,
    pub(super) sender: mpsc::UnboundedSender<Bytes>,
    /// Bytes sent and not yet taken by the subscriber.
    pub(super) queued: Arc<AtomicUsize>,
}

/// The state of one spoke, behind `SpokeShared::state` (one lock, never held across an
/// `.await`).
///
/// Invariants, kept under the lock:
/// * `link` is `Some` exactly while a connection runs: [`start`](super::connection) sets it
///   with `name`, a new `connection` number and its `kick`; the end of that connection
///   clears `link` and `kick` in the same critical section that takes `pending`.
/// * Every entry of `pending` is answered once: by the hub's `ok`, `oks` or `error` frame,
///   with "did not answer in time" by the connection's sweep when it waited longer than the
///   request timeout (the sweep then drops the connection), or with "disconnected" when its
///   connection ends; a caller that stops waiting removes its own. `sweeps` counts the
///   current connection's sweeps: an entry sent at count `since` is overdue at count
///   `since + SWEEPS_PER_TIMEOUT + 1` (see `connection.rs`).
/// * `subscriptions` holds every live subscription under the id the hub knows it by; a new
///   connection subscribes each again under the same id before anything else is sent, and
///   dropping a subscription removes it here and tells the hub.
#[derive(Default)]
pub(super) struct State {
    /// The current connection's outgoing queue; `None` while disconnected.
    pub(super) link: Option<mpsc::UnboundedSender<Message>>,
    /// The hub's name for the current connection.
    pub(super) name: Option<String>,
    /// The number of the current connection (counts connections made) and the token that
    /// drops it; a request that times out drops the connection it was sent on, only.
    pub(super) connection: u64,
    pub(super) kick: Option<CancellationToken>,
    /// Publishes and subscribes waiting for the hub's answer, by id.
    pub(super) pending: Seeded<u64, Pending>,
    /// How many times the connections' sweeps ran.
    pub(super) sweeps: u64,
    pub(super) subscriptions: Seeded<u64, Sub>,
}

pub(super) struct SpokeShared {
    pub(super) url: String,
    pub(super) options: SpokeOptions,
    pub(super) state: Mutex<State>,
    pub(super) next_id: AtomicU64,
    pub(super) closed: CancellationToken,
}

/// Closes the connection when the last [`WsSpoke`] clone and subscription are gone.
pub(super) struct Handle {
    pub(super) inner: Arc<SpokeShared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.inner.closed.cancel();
    }
}

/// A failure after a frame may have been written: whether the hub acted on it is unknown.
pub(super) fn transport(message: impl fmt::Display) -> TransportError {
    TransportError::new(format!("websocket: {message}"))
}

/// A failure before anything was written, or a refusal of something that reached nobody.
pub(super) fn not_sent(message: impl fmt::Display) -> TransportError {
    TransportError::not_sent(format!("websocket: {message}"))
}
