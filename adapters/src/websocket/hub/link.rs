//! A connected spoke's side of the hub ([`Link`]): the frames it sends — subscribe,
//! unsubscribe, publish — and the answers to them.

use super::forward::Forwarder;
use super::outbound::Outbound;
use super::state::{HubState, SpokeState};
use crate::websocket::frame::{self, Header};
use bytes::Bytes;
use opkit::protocol::{Delivery, PubSub, Receipt};
use parking_lot::Mutex;
use std::sync::Arc;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

/// A connected spoke's side of the hub: its outgoing queue and its state.
pub(super) struct Link {
    pub(super) shared: Arc<HubState>,
    pub(super) spoke: Arc<Mutex<SpokeState>>,
    pub(super) outbound: Outbound,
}

impl Link {
    /// Queues a frame; a spoke too far behind is disconnected.
    pub(super) fn send(&self, message: Message) -> bool {
        self.outbound.send(message)
    }

    /// Answers the spoke's request `id`; a refusal says whether what was refused reached
    /// nobody (`unsent`).
    fn reply(&self, id: u64, result: Result<Option<usize>, (String, bool)>) {
        let header = match result {
            Ok(receivers) => Header::Ok { id, receivers },
            Err((message, unsent)) => Header::Error {
                id: Some(id),
                message,
                unsent,
            },
        };
        self.send(frame::encode(&header, None));
    }

    /// Handles one frame from the spoke; malformed frames are logged and dropped.
    pub(super) async fn handle(&self, data: &Bytes) {
        let (header, payload) = match frame::decode(data) {
            Ok(decoded) => decoded,
            Err(error) => {
                tracing::warn!(spoke = %self.spoke.lock().name, %error, "dropping a malformed frame from a spoke");
                self.send(frame::encode(
                    &Header::Error {
                        id: None,
                        message: format!("malformed frame: {error}"),
                        unsent: false,
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
                    .map_err(|error| {
                        let unsent = error.delivery() == Delivery::NotSent;
                        (error.message().to_owned(), unsent)
                    });
                self.reply(id, result);
            }
            other => {
                tracing::warn!(spoke = %self.spoke.lock().name, frame = ?other, "dropping a frame spokes do not send");
                self.send(frame::encode(
                    &Header::Error {
                        id: None,
                        message: "spokes do not send this frame".to_owned(),
                        unsent: false,
                    },
                    None,
                ));
            }
        }
    }

    /// Subscribes the spoke (within its limit) and starts the subscription's forwarder.
    async fn subscribe(&self, id: u64, topic: String, group: Option<String>) {
        let held = {
            let state = self.spoke.lock();
            if state.subscriptions.contains_key(&id) {
                drop(state);
                self.reply(id, Err((format!("subscription {id} exists already"), true)));
                return;
            }
            state.subscriptions.len()
        };
        let limit = self.shared.options.max_subscriptions;
        if held >= limit {
            tracing::warn!(spoke = %self.spoke.lock().name, limit, "refused a subscription over the spoke's limit");
            self.reply(
                id,
                Err((
                    format!(
                        "this spoke holds {held} subscriptions, the hub's limit (HubOptions::with_max_subscriptions): unsubscribe from one first"
                    ),
                    true,
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
                self.reply(id, Err((error.message().to_owned(), true)));
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
