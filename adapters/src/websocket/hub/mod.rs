//! The hub: accepts authenticated spokes and routes their messages.
//!
//! [`WsHub`] and [`HubPubSub`] are here; [`HubOptions`] in `options`, what a spoke may do
//! in `grant`, authentication in `auth`, the limits at the door in `admission`, the shared
//! state and its invariants in `state`, the calls in flight in `calls`, publishing (the
//! checks on the call protocol's topics, stamping) in `publish`, who receives what in
//! `router`, topic names in `topic`, connections in `connection`, a spoke's frames in
//! `link`, its outgoing queue in `outbound`, the receipts held back in `receipts`.

mod admission;
mod auth;
mod calls;
mod connection;
mod grant;
mod link;
mod log_budget;
mod options;
mod outbound;
mod publish;
mod receipts;
mod router;
mod state;
mod topic;

pub use auth::{StaticTokens, TokenVerifier};
pub use grant::{Names, SpokeGrant};
pub use options::{
    DEFAULT_FAILED_TOKEN_WINDOW, DEFAULT_MAX_CALLS_PER_SPOKE, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    DEFAULT_MAX_CONNECTIONS_PER_TOKEN, DEFAULT_MAX_FAILED_TOKENS, DEFAULT_MAX_QUEUED_BYTES,
    DEFAULT_MAX_SUBSCRIPTIONS, DEFAULT_MAX_TOPIC_LEN, HubOptions,
};

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use opkit::protocol::{PubSub, Receipt, Subscription, TransportError, topics};
use parking_lot::Mutex;
use state::HubState;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio_util::sync::CancellationToken;

/// How often the hub logs refusals an outsider can repeat at will (at most one line per this
/// interval, with a count of the ones left out).
const LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// A WebSocket hub: accepts spokes that present a valid token and routes the call protocol
/// between them (and in-process participants, through [`pubsub`](Self::pubsub)). See the
/// [module docs](crate::websocket) for the frames and the delivery guarantees.
///
/// Dropping the hub stops accepting and disconnects every spoke (the listening socket is
/// closed by the hub's accept task, shortly after the drop).
pub struct WsHub {
    shared: Arc<HubState>,
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
        let shared = Arc::new(HubState {
            router: Arc::default(),
            verifier: Arc::new(verifier),
            admission: Arc::new(admission::Admission::new(&options)),
            options,
            door_log: log_budget::LogBudget::new(LOG_EVERY),
            refusal_log: log_budget::LogBudget::new(LOG_EVERY),
            spokes: Mutex::new(HashMap::new()),
            calls: Mutex::new(calls::Calls::default()),
            orphans: Mutex::new(HashMap::new()),
            kicks: Mutex::new(HashMap::new()),
            late: Arc::default(),
            next_connection: AtomicU64::new(1),
            shutdown: CancellationToken::new(),
        });
        tokio::spawn(connection::accept(shared.clone(), listener));
        tokio::spawn(state::sweep(shared.clone()));
        tokio::spawn(receipts::sweep(
            shared.late.clone(),
            shared.shutdown.clone(),
        ));
        Ok(Self { shared, address })
    }

    /// The address the hub listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The URL spokes connect to: `ws://<address>/`, or `wss://<address>/` when the hub serves
    /// TLS ([`HubOptions::with_tls`]).
    pub fn url(&self) -> String {
        let scheme = if self.shared.options.tls.is_some() {
            "wss"
        } else {
            "ws"
        };
        format!("{scheme}://{}/", self.address)
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
            for (topic, group) in spoke.subscriptions.values() {
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

    /// How many requests routed to spokes are still in flight: not yet ended by the reply
    /// that ends their call (see [`opkit::protocol::wire::EventKind::ends_call`]), aborted, or
    /// past their deadline. These are the calls a spoke's disconnection would fail.
    pub fn calls_in_flight(&self) -> usize {
        self.shared
            .calls
            .lock()
            .routed_live(opkit::envelope::now_millis())
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
    shared: Arc<HubState>,
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
        let published = self.shared.publish(None, topic, payload);
        futures::future::ready(published.map(|published| Receipt::delivered(published.receivers)))
            .boxed()
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.shared.unorphan(topic);
        futures::future::ready(Ok(self.shared.router.subscribe_local(topic, None))).boxed()
    }

    fn subscribe_group<'a>(
        &'a self,
        topic: &'a str,
        group: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        self.shared.unorphan(topic);
        futures::future::ready(Ok(self.shared.router.subscribe_local(topic, Some(group)))).boxed()
    }
}
