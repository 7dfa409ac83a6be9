//! A connected spoke's side of the hub ([`Link`]): the frames it sends — subscribe,
//! unsubscribe, publish — what its grant lets it subscribe to, and the answers (late ones
//! held back, see `receipts.rs`).

use super::grant::SpokeGrant;
use super::outbound::Outbound;
use super::publish::Publisher;
use super::state::{HubState, SpokeState};
use super::topic::{TopicKind, check_name, classify};
use crate::websocket::frame::{self, Header};
use bytes::Bytes;
use opkit::protocol::Delivery;
use parking_lot::Mutex;
use std::sync::Arc;
use tokio_tungstenite::tungstenite::Message;

/// A connected spoke's side of the hub: its outgoing queue and its state.
pub(super) struct Link {
    pub(super) shared: Arc<HubState>,
    pub(super) spoke: Arc<Mutex<SpokeState>>,
    pub(super) outbound: Outbound,
    /// The connection id.
    pub(super) id: u64,
    pub(super) grant: Arc<SpokeGrant>,
    /// The spoke reads late receipts (`oks` frames; see `receipts.rs`).
    pub(super) late_receipts: bool,
}

/// Room in a frame header beside its topic and group names: a header up to twice the name
/// limit plus this is read (so a name over the limit is refused with the id of the frame that
/// gave it); a longer one is refused unread.
const HEADER_ROOM: usize = 64 * 1024;

impl Link {
    /// Queues a frame; a spoke too far behind is disconnected.
    pub(super) fn send(&self, message: Message) -> bool {
        self.outbound.send(message)
    }

    /// Answers the spoke's publish `id`, late when the spoke reads late receipts and `late`.
    fn receipt(&self, id: u64, receivers: usize, late: bool) {
        if late && self.late_receipts {
            if self.outbound.hold_receipt(id, receivers) {
                self.shared.late.list(self.outbound.clone());
            }
        } else {
            self.reply(id, Ok(Some(receivers)));
        }
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
    pub(super) fn handle(&self, data: &Bytes) {
        let max_head =
            (self.shared.options.max_topic_len.saturating_mul(2)).saturating_add(HEADER_ROOM);
        if let Some((id, topic, payload)) = frame::decode_publish(data, max_head) {
            self.publish(id, topic, payload);
            return;
        }
        let (header, payload) = match frame::decode(data, max_head) {
            Ok(decoded) => decoded,
            Err(error) => {
                if let Some(left_out) = self.shared.refusal_log.admit() {
                    tracing::warn!(spoke = %self.spoke.lock().name, %error, left_out, "dropping a malformed frame from a spoke");
                }
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
            Header::Subscribe { id, topic } => self.subscribe(id, topic, None),
            Header::SubscribeGroup { id, topic, group } => {
                self.subscribe(id, topic, Some(group));
            }
            Header::Unsubscribe { id } => {
                let removed = self.spoke.lock().subscriptions.remove(&id);
                if let Some((topic, group)) = removed {
                    let reply = group.is_none() && classify(&topic) == TopicKind::Reply;
                    self.shared
                        .router
                        .remove_spoke(&topic, group.as_deref(), reply, self.id, id);
                }
            }
            Header::Publish { id, topic } => self.publish(id, &topic, payload),
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

    /// Publishes for the spoke and answers with the receipt (or the refusal).
    fn publish(&self, id: u64, topic: &str, payload: Bytes) {
        let publisher = Publisher {
            id: self.id,
            grant: &self.grant,
        };
        match self.shared.publish(Some(publisher), topic, payload) {
            Ok(published) => self.receipt(id, published.receivers, published.late),
            Err(error) => {
                let unsent = error.delivery() == Delivery::NotSent;
                self.reply(id, Err((error.message().to_owned(), unsent)));
            }
        }
    }

    /// Subscribes the spoke (within its grant and its limit): from now on the router puts
    /// the topic's messages for it straight into its outgoing queue.
    fn subscribe(&self, id: u64, topic: String, group: Option<String>) {
        if let Err(refusal) = self.may_subscribe(&topic, group.as_deref()) {
            if let Some(left_out) = self.shared.refusal_log.admit() {
                tracing::warn!(spoke = %self.grant.name, %refusal, left_out, "refused a spoke's subscription");
            }
            self.reply(id, Err((refusal, true)));
            return;
        }
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
        // A spoke's reply subscriptions carry the replies to its own calls only.
        let reply = classify(&topic) == TopicKind::Reply;
        self.shared.unorphan(&topic);
        self.shared.router.add_spoke(
            &topic,
            group.as_deref(),
            reply,
            self.id,
            id,
            self.outbound.clone(),
        );
        self.spoke.lock().subscriptions.insert(id, (topic, group));
        self.reply(id, Ok(None));
    }

    /// What the spoke's grant says about subscribing to `topic` (in `group`).
    fn may_subscribe(&self, topic: &str, group: Option<&str>) -> Result<(), String> {
        let max = self.shared.options.max_topic_len;
        check_name("topic", topic, max)?;
        if let Some(group) = group {
            check_name("group", group, max)?;
        }
        let grant = &self.grant;
        match classify(topic) {
            TopicKind::Request(operation_id) | TopicKind::Abort(operation_id)
                if !grant.may_serve(operation_id) =>
            {
                Err(format!(
                    "the grant `{}` does not let this spoke serve `{operation_id}`, so it may not read `{topic}` (SpokeGrant::serving)",
                    grant.name
                ))
            }
            TopicKind::Reply if group.is_some() => Err(format!(
                "`{topic}` is a reply topic: a spoke subscribes to it alone, not in a group"
            )),
            TopicKind::Plain if !grant.may_use_topic(topic) => Err(format!(
                "the grant `{}` does not let this spoke subscribe to `{topic}`, a topic outside the call protocol (SpokeGrant::with_topics)",
                grant.name
            )),
            _ => Ok(()),
        }
    }
}
