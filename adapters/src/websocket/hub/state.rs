//! The hub's shared state ([`HubState`], [`SpokeState`]) and what changes it as a whole:
//! publishing (tracking requests in flight), a spoke going away, the periodic sweep. The
//! invariants are written on the structs.

use super::auth::{SpokeGrant, TokenVerifier};
use super::options::HubOptions;
use bytes::Bytes;
use opkit::envelope::now_millis;
use opkit::protocol::wire::{self, EventKind};
use opkit::protocol::{CallEvent, Delivery, MemoryPubSub, PubSub, Receipt, TransportError};
use opkit::{CallError, Identity};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A request routed to a spoke and not finished yet.
pub(super) struct InFlight {
    pub(super) reply_topic: String,
    pub(super) deadline: Option<u64>,
    /// A subscription, which its items do not end (see [`EventKind::ends_call`]).
    pub(super) subscription: bool,
}

/// One connected spoke, as the hub sees it; behind its own lock (see [`HubState`] for the
/// order).
///
/// Invariants, kept under this lock:
///
/// * `in_flight` holds the requests a forwarder of one of this spoke's group subscriptions
///   routed to it and that are not answered yet. An entry is removed when this spoke
///   publishes the reply that ends the call ([`EventKind::ends_call`]: a call's
///   `call.responded`, a subscription's `call.completed`, or `call.error`); when anyone
///   publishes its
///   `call.aborted` (from every spoke, *before* the abort goes out on the bus, so a spoke
///   that disconnects afterwards does not add a transport error to an aborted call); by the
///   sweep once its deadline passed; or all at once by [`HubState::spoke_gone`], which fails
///   the ones still live with `TRANSPORT_ERROR`.
/// * `dead` is the tombstone: [`HubState::spoke_gone`] sets it in the same critical section
///   that takes `subscriptions` and `in_flight`, and the state lives on while forwarders
///   and the link hold it. A forwarder checks `dead` under the lock before inserting into
///   `in_flight`, so a request routed to the spoke is either in the map `spoke_gone` took
///   (and failed there) or sees `dead` (and is failed by the forwarder): never lost, never
///   failed twice.
/// * `subscriptions` gains an entry once the bus subscription exists and its forwarder
///   runs; one is removed on `unsubscribe`, or all are taken by `spoke_gone`. Cancelling
///   an entry's token stops its forwarder, which still forwards (or fails) what was
///   already queued for it.
pub(in crate::websocket) struct SpokeState {
    pub(in crate::websocket) name: String,
    pub(super) grant: SpokeGrant,
    /// Subscriptions by the spoke's id: (topic, group, the task forwarding them).
    pub(super) subscriptions: HashMap<u64, (String, Option<String>, CancellationToken)>,
    pub(super) in_flight: HashMap<String, InFlight>,
    pub(super) dead: bool,
}

/// The hub's state, shared by its accept and sweep tasks, each connection's task, the
/// forwarders and [`HubPubSub`](super::HubPubSub).
///
/// Invariants:
///
/// * `spokes` and `kicks` hold one entry per connected spoke, by connection id: both are
///   inserted once the handshake succeeded (before the welcome frame), both removed first
///   thing by [`spoke_gone`](Self::spoke_gone). A spoke's [`SpokeState`] outlives its
///   entry as a tombstone (see there).
/// * `orphans` holds a request topic from the moment [`spoke_gone`](Self::spoke_gone)
///   removed the last group subscription on it until a participant subscribes to it again
///   ([`unorphan`](Self::unorphan)) or the sweep finds it older than the orphan grace. It
///   is read only when a publish reached nobody, to fail it instead of dropping it.
/// * Lock order: `spokes`, then one spoke's state. `orphans` and `kicks` are leaves: no
///   other lock is taken while one of them is held. No lock is held across an `.await`.
pub(super) struct HubState {
    pub(super) bus: MemoryPubSub,
    pub(super) verifier: Arc<dyn TokenVerifier>,
    pub(super) options: HubOptions,
    pub(super) spokes: Mutex<HashMap<u64, Arc<Mutex<SpokeState>>>>,
    /// Request topics whose last serving spoke disconnected: (its name, when).
    pub(super) orphans: Mutex<HashMap<String, (String, Instant)>>,
    /// Disconnects a spoke on demand, by connection id.
    pub(super) kicks: Mutex<HashMap<u64, CancellationToken>>,
    pub(super) next_connection: AtomicU64,
    pub(super) shutdown: CancellationToken,
}

impl HubState {
    /// Any participant subscribed to `topic`: it is no orphan any more.
    pub(super) fn unorphan(&self, topic: &str) {
        self.orphans.lock().remove(topic);
    }

    /// Publishes on the bus, keeping track of requests in flight to spokes.
    pub(super) async fn publish(
        &self,
        origin: Option<&Arc<Mutex<SpokeState>>>,
        topic: &str,
        payload: Bytes,
    ) -> Result<Receipt, TransportError> {
        let mut payload = payload;
        if let Some(event) = wire::peek(&payload) {
            let request_id = &*event.request_id;
            match event.kind {
                EventKind::Aborted => {
                    for spoke in self.spokes.lock().values() {
                        spoke.lock().in_flight.remove(request_id);
                    }
                }
                EventKind::Requested => {
                    if let Some(identity) =
                        origin.and_then(|origin| origin.lock().grant.identity.clone())
                    {
                        payload = self.stamp_identity(&payload, &identity).unwrap_or(payload);
                    }
                }
                reply => {
                    if let Some(origin) = origin {
                        let mut origin = origin.lock();
                        if origin
                            .in_flight
                            .get(request_id)
                            .is_some_and(|request| reply.ends_call(request.subscription))
                        {
                            origin.in_flight.remove(request_id);
                        }
                    }
                }
            }
        }
        let receipt = self.bus.publish(topic, payload).await?;
        if receipt.reached_nobody()
            && let Some((spoke, since)) = self.orphans.lock().get(topic).cloned()
            && since.elapsed() < self.options.orphan_grace
        {
            return Err(TransportError::not_sent(format!(
                "the spoke `{spoke}` that served `{topic}` disconnected and no other serves it (yet)"
            )));
        }
        Ok(receipt)
    }

    /// A spoke is gone: drop its subscriptions, fail the requests it was running.
    pub(super) async fn spoke_gone(&self, id: u64, spoke: &Arc<Mutex<SpokeState>>) {
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

    /// Fails the requests `in_flight` at the spoke `name` whose deadline has not passed.
    pub(super) async fn fail_requests(&self, name: &str, in_flight: HashMap<String, InFlight>) {
        let now = now_millis();
        for (request_id, request) in in_flight {
            if request.deadline.is_some_and(|deadline| deadline <= now) {
                continue;
            }
            // The spoke had the request: it may have run it (and may still, if it only went
            // silent). The request is not sent elsewhere.
            let error = CallError::transport(format!(
                "the spoke `{name}` running this request disconnected: the request may have run"
            ))
            .with_details(Delivery::Unknown.details());
            match CallEvent::error(request_id.as_str(), error).to_bytes() {
                Ok(payload) => {
                    let _ = self.bus.publish(&request.reply_topic, payload).await;
                }
                Err(error) => tracing::error!(%error, "could not encode call.error"),
            }
        }
    }
}

impl HubState {
    /// Replaces the `identity` of a `call.requested` payload, and its signature: dropped (it
    /// signed another identity), or made anew with the hub's keys when it has them.
    fn stamp_identity(&self, payload: &[u8], identity: &Identity) -> Option<Bytes> {
        let CallEvent::Requested(mut request) = CallEvent::from_slice(payload).ok()? else {
            return None;
        };
        request.identity = Some(identity.clone());
        request.identity_token = None;
        #[cfg(feature = "signing")]
        if let Some(keys) = &self.options.identity_keys {
            request.identity_token = keys.sign_request(&request).ok().flatten();
        }
        CallEvent::Requested(request).to_bytes().ok()
    }
}

/// Drops in-flight entries whose deadline passed (the caller gave up on them).
pub(super) async fn sweep(shared: Arc<HubState>) {
    loop {
        tokio::select! {
            () = shared.shutdown.cancelled() => return,
            () = tokio::time::sleep(shared.options.sweep_interval) => {}
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
