//! Late receipts: answering a spoke's publish with the frames the hub sends it anyway.
//!
//! A spoke that says so in its handshake (the `opkit-receipts: late` header; [`WsSpoke`]s
//! do) has the receipts of two kinds of publishes held back (its queue's `held`, see
//! [`Outbound`]): a `call.requested` that reached a serving spoke, and a reply that ends its
//! call and reached the caller. Nothing waits on those receipts but the publishes
//! themselves: the caller waits for the reply, the serving spoke's handler is done. They go
//! out with the next frames written to the spoke (one `oks` frame first in the batch; the
//! reply to a call, the next request), so a call costs the four frames of a request and its
//! reply instead of six; when no frame goes to the spoke within [`RECEIPT_DELAY`], the sweep
//! here sends them alone. Every other answer is written at once: a publish that reached
//! nobody (what tells a caller at once that nobody serves its operation), a refusal, a
//! subscription's items (its handler waits for each receipt before the next item), plain
//! topics, aborts, subscribes.
//!
//! One sweep serves the whole hub: it sleeps until a queue holds receipts back, waits
//! [`RECEIPT_DELAY`], then asks every queue listed meanwhile to write what it still holds.
//!
//! [`WsSpoke`]: crate::websocket::WsSpoke

use super::outbound::Outbound;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How long a receipt is held back at most (plus the sweep's own delay to run).
pub(super) const RECEIPT_DELAY: Duration = Duration::from_millis(5);

/// The queues holding receipts back, for the sweep.
///
/// Invariant: a queue holding receipts is on `listed` (or its receipts are on their way to
/// the socket): the link lists it when [`Outbound::hold_receipt`] says it was not listed,
/// and the sweep takes the whole list, unlisting each queue before it looks at what the
/// queue holds.
/// `armed` is `true` from the moment a queue is listed while the sweep was not armed until the
/// sweep, after its delay, takes the list.
#[derive(Default)]
pub(super) struct LateReceipts {
    listed: Mutex<Vec<Outbound>>,
    armed: AtomicBool,
    wake: Notify,
}

impl LateReceipts {
    /// Puts a queue that started holding receipts back on the list of the next sweep.
    pub(super) fn list(&self, outbound: Outbound) {
        self.listed.lock().push(outbound);
        if !self.armed.swap(true, Ordering::AcqRel) {
            self.wake.notify_one();
        }
    }
}

/// The sweep: [`RECEIPT_DELAY`] after a queue was listed, every listed queue writes the
/// receipts it still holds. Runs until the hub shuts down.
pub(super) async fn sweep(late: Arc<LateReceipts>, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = late.wake.notified() => {}
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(RECEIPT_DELAY) => {}
        }
        late.armed.store(false, Ordering::Release);
        let listed = std::mem::take(&mut *late.listed.lock());
        for outbound in listed {
            outbound.release_receipts();
        }
    }
}
