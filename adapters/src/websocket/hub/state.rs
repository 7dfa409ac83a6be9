//! The hub's shared state ([`HubState`], [`SpokeState`]) and what changes it as a whole: a
//! spoke going away, delivering replies, the periodic sweep. Publishing is `publish.rs`,
//! routing `router.rs`. The invariants are written on the structs.

use super::admission::Admission;
use super::auth::TokenVerifier;
use super::calls::{Call, Caller, Calls};
use super::grant::SpokeGrant;
use super::log_budget::LogBudget;
use super::options::HubOptions;
use super::receipts::LateReceipts;
use super::router::Router;
use bytes::Bytes;
use opkit::CallError;
use opkit::envelope::now_millis;
use opkit::protocol::{CallEvent, Delivery, topics};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// One connected spoke, as the hub sees it; behind its own lock (see [`HubState`] for the
/// order).
///
/// Invariant: `subscriptions` lists exactly the spoke's subscriptions in the hub's
/// [`Router`]: an entry is added once its target is in the router and removed (on
/// `unsubscribe`) together with it; [`HubState::spoke_gone`] takes them all and removes
/// their targets before it takes the calls routed to the spoke, so a request routed to the
/// spoke (recorded under the router's lock, see `publish.rs`) is among the calls it fails.
pub(in crate::websocket) struct SpokeState {
    pub(in crate::websocket) name: String,
    pub(super) grant: Arc<SpokeGrant>,
    /// Subscriptions by the spoke's id: topic and group.
    pub(super) subscriptions: HashMap<u64, (String, Option<String>)>,
}

/// The hub's state, shared by its accept and sweep tasks, each connection's task and
/// [`HubPubSub`](super::HubPubSub).
///
/// Invariants:
///
/// * `spokes` and `kicks` hold one entry per connected spoke, by connection id: both are
///   inserted once the handshake succeeded (before the welcome frame), both removed first
///   thing by [`spoke_gone`](Self::spoke_gone).
/// * `calls` holds a record of every request in flight through the hub (see
///   [`Calls`]): who made it, and the spoke it was routed to. Replies go to the caller's
///   connection only ([`Router::reply`]).
/// * `orphans` holds a request topic from the moment [`spoke_gone`](Self::spoke_gone)
///   removed the last group subscription on it until a participant subscribes to it again
///   ([`unorphan`](Self::unorphan)) or the sweep finds it older than the orphan grace. It
///   is read only when a publish reached nobody, to fail it instead of dropping it.
/// * Lock order: `spokes`, then one spoke's state, then the router's table, then `calls`.
///   `orphans`, `kicks`, the late receipts' list, each queue's held receipts and the locks
///   inside `admission` and the log budgets are leaves: no other lock is taken while one of
///   them is held. No lock is held across an `.await`.
pub(super) struct HubState {
    pub(super) router: Arc<Router>,
    pub(super) verifier: Arc<dyn TokenVerifier>,
    pub(super) options: HubOptions,
    pub(super) admission: Arc<Admission>,
    /// Refused handshakes and connections, logged at a bounded rate.
    pub(super) door_log: LogBudget,
    /// Refused frames, publishes and subscribes, logged at a bounded rate.
    pub(super) refusal_log: LogBudget,
    pub(super) spokes: Mutex<HashMap<u64, Arc<Mutex<SpokeState>>>>,
    pub(super) calls: Mutex<Calls>,
    /// Request topics whose last serving spoke disconnected: (its name, when).
    pub(super) orphans: Mutex<HashMap<String, (String, Instant)>>,
    /// Disconnects a spoke on demand, by connection id.
    pub(super) kicks: Mutex<HashMap<u64, CancellationToken>>,
    /// The queues holding receipts back (see `receipts.rs`).
    pub(super) late: Arc<LateReceipts>,
    pub(super) next_connection: AtomicU64,
    pub(super) shutdown: CancellationToken,
}

impl HubState {
    /// Any participant subscribed to `topic`: it is no orphan any more.
    pub(super) fn unorphan(&self, topic: &str) {
        self.orphans.lock().remove(topic);
    }

    /// Sends a reply on `topic` to the one caller it belongs to: a spoke's connection, or
    /// the hub's own process; returns how many subscriptions received it.
    pub(super) fn deliver(&self, caller: Caller, topic: &str, payload: &Bytes) -> usize {
        match caller {
            Caller::Spoke(connection) => self.router.reply(connection, topic, payload),
            Caller::Hub => self.router.publish(topic, payload, |_| {}),
        }
    }

    /// A spoke is gone: drop its subscriptions, fail the requests it was running, abort the
    /// ones it made (their replies cannot reach it any more).
    pub(super) fn spoke_gone(&self, id: u64, spoke: &Arc<Mutex<SpokeState>>) {
        self.spokes.lock().remove(&id);
        self.kicks.lock().remove(&id);
        let (name, subscriptions) = {
            let mut state = spoke.lock();
            (state.name.clone(), std::mem::take(&mut state.subscriptions))
        };
        let mut served_topics = Vec::new();
        for (sub, (topic, group)) in subscriptions {
            let reply = group.is_none() && super::topic::is_reply(&topic);
            self.router
                .remove_spoke(&topic, group.as_deref(), reply, id, sub);
            if group.is_some() {
                served_topics.push(topic);
            }
        }
        // Request topics nobody else serves become orphans.
        for topic in served_topics {
            if self.router.subscriber_count(&topic) == 0 {
                self.orphans
                    .lock()
                    .insert(topic, (name.clone(), Instant::now()));
            }
        }
        let (served, called) = {
            let mut calls = self.calls.lock();
            (calls.take_served_by(id), calls.take_called_by(id))
        };
        let now = now_millis();
        let failed = served.iter().filter(|(_, call)| call.is_live(now)).count();
        if failed > 0 {
            tracing::warn!(spoke = %name, requests = failed, "a spoke disconnected with requests in flight: failing them");
        }
        self.fail_calls(&name, served);
        self.abort_calls(called);
        tracing::info!(spoke = %name, "spoke disconnected");
    }

    /// Fails the `calls` that were running at the spoke `name` and whose deadline has not
    /// passed, with `TRANSPORT_ERROR` to their callers.
    pub(super) fn fail_calls(&self, name: &str, calls: Vec<(Arc<str>, Call)>) {
        let now = now_millis();
        for (request_id, call) in calls {
            if !call.is_live(now) {
                continue;
            }
            // The spoke had the request: it may have run it (and may still, if it only went
            // silent). The request is not sent elsewhere.
            let error = CallError::transport(format!(
                "the spoke `{name}` running this request disconnected: the request may have run"
            ))
            .with_details(Delivery::Unknown.details());
            let topic = topics::reply_topic_for(&request_id);
            match CallEvent::error(&*request_id, error).to_bytes() {
                Ok(payload) => {
                    self.deliver(call.caller, &topic, &payload);
                }
                Err(error) => tracing::error!(%error, "could not encode call.error"),
            }
        }
    }

    /// Aborts `calls` whose caller went away: their handlers stop, as when a caller gives up.
    fn abort_calls(&self, calls: Vec<(Arc<str>, Call)>) {
        let now = now_millis();
        for (request_id, call) in calls {
            if !call.is_live(now) {
                continue;
            }
            match CallEvent::aborted(&*request_id).to_bytes() {
                Ok(payload) => {
                    let topic = topics::abort_topic(&call.operation_id);
                    self.router.publish(&topic, &payload, |_| {});
                }
                Err(error) => tracing::error!(%error, "could not encode call.aborted"),
            }
        }
    }
}

/// Drops the calls whose deadline passed (their callers gave up), the orphaned request topics
/// past their grace, and the failed-token windows that ended.
pub(super) async fn sweep(shared: Arc<HubState>) {
    loop {
        tokio::select! {
            () = shared.shutdown.cancelled() => return,
            () = tokio::time::sleep(shared.options.sweep_interval) => {}
        }
        shared.calls.lock().expire(now_millis());
        let grace = shared.options.orphan_grace;
        shared
            .orphans
            .lock()
            .retain(|_, (_, since)| since.elapsed() < grace);
        shared.admission.sweep();
    }
}
