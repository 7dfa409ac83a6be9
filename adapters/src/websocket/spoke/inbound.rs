//! Frames from the hub: a message for a subscription (refused with `call.error` when a
//! group subscription is full), and the answers to publishes and subscribes (one by one, or
//! several late receipts at once).

use super::state::{Answer, SpokeShared, State};
use crate::websocket::frame::{self, Header};
use bytes::Bytes;
use opkit::CallError;
use opkit::protocol::{CallEvent, Delivery, topics};
use std::sync::atomic::Ordering;

/// Answers a request a full group subscription cannot take with `call.error`
/// (`TRANSPORT_ERROR`, not sent: it never ran), published without waiting for the hub's
/// acknowledgement; anything else is dropped with a warning.
fn refuse_request(inner: &SpokeShared, state: &State, payload: &Bytes) {
    let Some(link) = &state.link else { return };
    let Ok(CallEvent::Requested(request)) = CallEvent::from_slice(payload) else {
        tracing::warn!("dropping a message for a full group subscription");
        return;
    };
    let error = CallError::transport(format!(
        "the serving spoke is at its limit: {} bytes of requests wait for its handler (SpokeOptions::with_max_queued_bytes); `{}` was not run",
        inner.options.max_queued_bytes, request.operation_id
    ))
    .with_details(Delivery::NotSent.details());
    let topic = topics::reply_topic_for(&request.request_id);
    let Ok(reply) = CallEvent::error(request.request_id, error).to_bytes() else {
        return;
    };
    let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
    let header = Header::Publish { id, topic };
    let _ = link.send(frame::encode(&header, Some(&reply)));
}

/// Handles one frame from the hub; malformed frames are logged and dropped.
pub(super) fn handle(inner: &SpokeShared, data: &Bytes) {
    let (header, payload) = match frame::decode(data, usize::MAX) {
        Ok(decoded) => decoded,
        Err(error) => {
            tracing::warn!(%error, "dropping a malformed frame from the hub");
            return;
        }
    };
    match header {
        Header::Message { sub } => {
            let mut state = inner.state.lock();
            let full = state.subscriptions.get(&sub).is_some_and(|subscription| {
                subscription.group.is_some()
                    && subscription.queued.load(Ordering::Acquire) + payload.len()
                        > inner.options.max_queued_bytes
            });
            if full {
                refuse_request(inner, &state, &payload);
                return;
            }
            let delivered = state.subscriptions.get(&sub).is_some_and(|subscription| {
                // Counted before it is sent, so the subscriber's count never goes below zero.
                subscription
                    .queued
                    .fetch_add(payload.len(), Ordering::AcqRel);
                subscription.sender.send(payload).is_ok()
            });
            if !delivered && state.subscriptions.remove(&sub).is_none() {
                tracing::debug!(sub, "a message for a subscription that is gone");
            }
        }
        Header::Ok { id, receivers } => {
            if let Some(pending) = inner.state.lock().pending.remove(&id) {
                pending.answer(Answer::Done(receivers));
            }
        }
        Header::Oks { oks } => {
            let mut state = inner.state.lock();
            for (id, receivers) in oks {
                if let Some(pending) = state.pending.remove(&id) {
                    pending.answer(Answer::Done(Some(receivers)));
                }
            }
        }
        Header::Error {
            id: Some(id),
            message,
            unsent,
        } => {
            let pending = inner.state.lock().pending.remove(&id);
            match pending {
                Some(pending) => pending.answer(Answer::Refused(message, unsent)),
                None => tracing::warn!(id, message, "the hub refused a request"),
            }
        }
        Header::Error {
            id: None, message, ..
        } => {
            tracing::warn!(message, "the hub refused a frame");
        }
        Header::Welcome { .. } => {}
        other => tracing::warn!(frame = ?other, "dropping a frame hubs do not send"),
    }
}
