//! The listener task: reads the map's reply topic and routes each reply to the table. It
//! owns the reply subscription; when the subscription ends it closes the table.

use super::table::Table;
use crate::error::{CallError, ErrorCode};
use crate::protocol::pubsub::{PubSub, Subscription};
use crate::protocol::topics;
use crate::protocol::wire::CallEvent;
use futures::StreamExt;
use serde_json::Value;
use std::sync::Arc;

/// Routes the replies until the subscription ends, then fails what is still pending. A
/// subscription its caller let overflow is aborted on `pubsub` (`call.aborted`).
pub(super) async fn listen(table: Arc<Table>, mut replies: Subscription, pubsub: Arc<dyn PubSub>) {
    while let Some(payload) = replies.next().await {
        table.route(&payload);
        for (operation_id, request_id) in table.take_overflowed() {
            let pubsub = pubsub.clone();
            tokio::spawn(async move {
                let topic = topics::abort_topic(&operation_id);
                let Ok(payload) = CallEvent::aborted(request_id.as_str()).to_bytes() else {
                    return;
                };
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

impl Table {
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
        let fields = match serde_json::from_slice(payload) {
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
