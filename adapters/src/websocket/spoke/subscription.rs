//! A spoke's subscriptions: the frame that asks the hub for one, and the stream of its
//! messages ([`SpokeSubscription`]), which unsubscribes when dropped.

use super::state::Handle;
use crate::websocket::frame::{self, Header};
use bytes::Bytes;
use futures::Stream;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use tokio::sync::mpsc;

pub(super) fn subscribe_header(id: u64, topic: &str, group: Option<&str>) -> Header {
    match group {
        Some(group) => Header::SubscribeGroup {
            id,
            topic: topic.to_owned(),
            group: group.to_owned(),
        },
        None => Header::Subscribe {
            id,
            topic: topic.to_owned(),
        },
    }
}

/// One subscription's messages; dropping it unsubscribes.
pub(super) struct SpokeSubscription {
    pub(super) receiver: mpsc::UnboundedReceiver<Bytes>,
    pub(super) id: u64,
    pub(super) handle: Arc<Handle>,
    /// Shared with the subscription's `Sub`: what was sent and not taken yet.
    pub(super) queued: Arc<AtomicUsize>,
}

impl Stream for SpokeSubscription {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let polled = self.receiver.poll_recv(cx);
        if let Poll::Ready(Some(payload)) = &polled {
            self.queued.fetch_sub(payload.len(), Ordering::AcqRel);
        }
        polled
    }
}

impl Drop for SpokeSubscription {
    fn drop(&mut self) {
        let mut state = self.handle.inner.state.lock();
        if state.subscriptions.remove(&self.id).is_some()
            && let Some(link) = &state.link
        {
            let _ = link.send(frame::encode(&Header::Unsubscribe { id: self.id }, None));
        }
    }
}
