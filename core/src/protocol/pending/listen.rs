//! The listener task: reads the map's reply topic and routes each reply to the table. It
//! owns the reply subscription; when the subscription ends it closes the table.

use super::Keys;
use super::table::Table;
use crate::error::{CallError, ErrorCode};
use crate::protocol::pubsub::{PubSub, Subscription};
use crate::protocol::topics;
use crate::protocol::wire::CallEvent;
use futures::StreamExt;
use serde_json::Value;
use std::sync::Arc;

/// Routes the replies until the subscription ends, then fails what is still pending. A
/// subscription its caller let overflow is aborted on `pubsub` (`call.aborted`, signed with
/// `keys` when they sign). With `keys` that verify replies, only signed replies are routed.
pub(super) async fn listen(
    table: Arc<Table>,
    mut replies: Subscription,
    pubsub: Arc<dyn PubSub>,
    keys: Option<Keys>,
) {
    while let Some(payload) = replies.next().await {
        route(&table, keys.as_ref(), &payload);
        for (operation_id, request_id) in table.take_overflowed() {
            let pubsub = pubsub.clone();
            let Some(payload) =
                super::guard::abort_payload(keys.as_ref(), &request_id, &operation_id)
            else {
                continue;
            };
            tokio::spawn(async move {
                let topic = topics::abort_topic(&operation_id);
                if let Err(error) = pubsub.publish(&topic, payload).await {
                    tracing::warn!(%error, request_id, "could not publish call.aborted");
                }
            });
        }
    }
    table.close(CallError::transport(
        "the reply subscription ended: the transport lost it",
    ));
}

/// Routes one message of the reply topic: only a reply signed for its request when `keys`
/// verify replies.
fn route(table: &Table, keys: Option<&Keys>, payload: &[u8]) {
    #[cfg(feature = "signing")]
    if let Some(keys) = keys.filter(|keys| keys.verifies_replies()) {
        table.route_signed(keys, payload);
        return;
    }
    #[cfg(not(feature = "signing"))]
    let _ = keys;
    table.route(payload);
}

impl Table {
    /// Routes one message of the reply topic if it is a reply a handler signed for a request
    /// pending here (the item due next, for a subscription); anything else is dropped, and
    /// logged unless it belongs to no pending request (late and foreign replies are
    /// expected).
    #[cfg(feature = "signing")]
    fn route_signed(&self, keys: &Keys, payload: &[u8]) {
        use crate::protocol::signing::{Reply, ReplyKind, reply_body};
        let fields = match crate::protocol::wire::parse_json(payload) {
            Ok(Value::Object(fields)) => fields,
            Ok(_) => return tracing::warn!("ignoring a reply that is not a JSON object"),
            Err(error) => return tracing::warn!(%error, "ignoring a reply that cannot be read"),
        };
        let Some(Value::String(request_id)) = fields.get("requestId") else {
            return tracing::warn!("ignoring a reply without a request id");
        };
        let kind = match fields.get("type").and_then(Value::as_str) {
            Some("call.responded") => ReplyKind::Responded,
            Some("call.completed") => ReplyKind::Completed,
            Some("call.error") => ReplyKind::Error,
            other => return tracing::debug!(event = ?other, "ignoring an event on a reply topic"),
        };
        let Some(next) = self.next_index(request_id) else {
            return;
        };
        let reply = Reply {
            request_id,
            kind,
            body: &reply_body(&fields),
            index: next.filter(|_| kind == ReplyKind::Responded),
        };
        let signature = fields.get("signature").and_then(Value::as_str);
        if let Err(why) = keys.verify_reply(&reply, signature) {
            return tracing::warn!(
                request_id,
                "dropping a reply that is not the handler's: {why}"
            );
        }
        let request_id = request_id.clone();
        match CallEvent::from_value(Value::Object(fields)) {
            Ok(event) => self.handle(event, payload.len()),
            Err(error) => {
                self.fail(
                    &request_id,
                    CallError::new(
                        ErrorCode::ValidationError,
                        format!("a malformed reply arrived for request `{request_id}`: {error}"),
                    ),
                );
            }
        }
    }

    /// Acts on a decoded event of the reply topic (`size` bytes on the wire).
    fn handle(&self, event: CallEvent, size: usize) {
        match event {
            CallEvent::Responded(event) => {
                self.deliver(&event.request_id, event.output, size);
            }
            CallEvent::Completed(event) => {
                self.complete(&event.request_id);
            }
            CallEvent::Error(event) => {
                let request_id = event.request_id.clone();
                self.fail(&request_id, event.into_error());
            }
            other => {
                tracing::debug!(
                    event = other.type_name(),
                    "ignoring an event on a reply topic"
                );
            }
        }
    }

    /// Routes one message of the reply topic.
    fn route(&self, payload: &[u8]) {
        // What the fast path declines takes the slow path, which names what is wrong.
        if let Some(event) = crate::protocol::wire::decode_fast(payload) {
            self.handle(event, payload.len());
            return;
        }
        let fields = match crate::protocol::wire::parse_json(payload) {
            Ok(Value::Object(fields)) => fields,
            Ok(_) => {
                tracing::warn!("ignoring a reply that is not a JSON object");
                return;
            }
            Err(error) => {
                tracing::warn!(%error, "a reply that is not JSON arrived");
                if let Some(crate::protocol::wire::Peek { request_id, .. }) =
                    crate::protocol::wire::peek(payload)
                {
                    let error = CallError::new(
                        ErrorCode::ValidationError,
                        format!(
                            "the reply for request `{request_id}` could not be decoded: {error}"
                        ),
                    );
                    self.fail(&request_id, error);
                }
                return;
            }
        };
        let request_id = match fields.get("requestId") {
            Some(Value::String(request_id)) => Some(request_id.clone()),
            _ => None,
        };
        if let (Some(request_id), Some("call.responded")) =
            (&request_id, fields.get("type").and_then(Value::as_str))
        {
            let mut fields = fields;
            let result = match fields.remove("output") {
                Some(output) => self.respond_sized(request_id, output, payload.len()),
                None => Err(CallError::new(
                    ErrorCode::ValidationError,
                    format!("call.responded for request `{request_id}` has no `output`"),
                )),
            };
            if let Err(error) = result {
                tracing::warn!(%error, "a handler answered with something that is not an envelope");
                self.fail(request_id, error);
            }
            return;
        }
        match CallEvent::from_value(Value::Object(fields)) {
            Ok(event) => self.handle(event, payload.len()),
            Err(error) => {
                tracing::warn!(%error, "a malformed event arrived on a reply topic");
                if let Some(request_id) = request_id {
                    self.fail(
                        &request_id,
                        CallError::new(
                            ErrorCode::ValidationError,
                            format!(
                                "a malformed reply arrived for request `{request_id}`: {error}"
                            ),
                        ),
                    );
                }
            }
        }
    }
}
