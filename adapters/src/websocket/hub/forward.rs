//! Forwarding one subscription's messages to its spoke ([`Forwarder`]), recording the
//! requests routed there.

use super::outbound::Outbound;
use super::state::{HubState, SpokeState};
use crate::websocket::frame::{self, Header};
use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use opkit::protocol::Subscription;
use opkit::protocol::wire::{self, EventKind};
use parking_lot::Mutex;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Forwards one subscription's messages to the spoke; on group subscriptions, records the
/// requests it routes there.
pub(super) struct Forwarder {
    pub(super) spoke: Arc<Mutex<SpokeState>>,
    pub(super) shared: Arc<HubState>,
    pub(super) outbound: Outbound,
    pub(super) id: u64,
    pub(super) track: bool,
}

impl Forwarder {
    /// Forwards until `stop`, then what is already queued.
    pub(super) async fn run(self, mut subscription: Subscription, stop: CancellationToken) {
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

    /// Forwards one message, recording (or failing) a request routed to the spoke.
    async fn forward(&self, payload: Bytes) {
        if self.track
            && let Some(event) = wire::peek(&payload)
            && event.kind == EventKind::Requested
        {
            let request_id = event.request_id.into_owned();
            let dead_name = {
                let state = self.spoke.lock();
                if state.dead {
                    Some(state.name.clone())
                } else {
                    // Under the spoke's lock: see the `dead` invariant of `SpokeState`.
                    self.shared.calls.lock().route(&request_id, state.id);
                    None
                }
            };
            if let Some(name) = dead_name {
                // Routed to a spoke that just disconnected: fail it now.
                let call = self.shared.calls.lock().forget(&request_id);
                if let Some(call) = call {
                    self.shared
                        .fail_calls(&name, vec![(request_id, call)])
                        .await;
                }
                return;
            }
        }
        let message = frame::encode(&Header::Message { sub: self.id }, Some(&payload));
        self.outbound.send(message);
    }
}
