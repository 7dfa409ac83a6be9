//! A spoke's outgoing queue at the hub, bounded in frames and in bytes: what keeps a spoke
//! that stopped reading from growing the hub's memory.

use super::options::HubOptions;
use super::state::SpokeState;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

/// A spoke's outgoing queue, bounded in frames and in bytes.
///
/// Invariant: `queued` is the total payload size of the frames sent into the channel and
/// not yet taken out by the writer ([`OutboundQueue::recv`] subtracts what it hands out).
/// A frame that would take it past the byte budget, or a full channel, disconnects the
/// spoke (the kick); when the connection ends the channel and every frame in it are
/// dropped, so a spoke that stopped reading costs at most its budget, and nothing after
/// it leaves.
#[derive(Clone)]
pub(super) struct Outbound {
    sender: mpsc::Sender<Message>,
    queued: Arc<AtomicUsize>,
    budget: usize,
    spoke: Arc<Mutex<SpokeState>>,
    kick: CancellationToken,
}

/// The writer's end of an [`Outbound`].
pub(super) struct OutboundQueue {
    receiver: mpsc::Receiver<Message>,
    queued: Arc<AtomicUsize>,
}

impl OutboundQueue {
    pub(super) async fn recv(&mut self) -> Option<Message> {
        let message = self.receiver.recv().await?;
        self.queued.fetch_sub(message.len(), Ordering::AcqRel);
        Some(message)
    }
}

impl Outbound {
    pub(super) fn new(
        options: &HubOptions,
        spoke: Arc<Mutex<SpokeState>>,
        kick: CancellationToken,
    ) -> (Self, OutboundQueue) {
        let (sender, receiver) = mpsc::channel(options.max_queued);
        let queued = Arc::new(AtomicUsize::new(0));
        let outbound = Self {
            sender,
            queued: queued.clone(),
            budget: options.max_queued_bytes,
            spoke,
            kick,
        };
        (outbound, OutboundQueue { receiver, queued })
    }

    /// Queues a frame; a spoke over its budget (frames or bytes) is disconnected.
    pub(super) fn send(&self, message: Message) -> bool {
        let size = message.len();
        let before = self.queued.fetch_add(size, Ordering::AcqRel);
        if before + size > self.budget {
            self.queued.fetch_sub(size, Ordering::AcqRel);
            self.overflow(format_args!(
                "{} bytes wait for it, and {size} more would pass the budget of {} (HubOptions::with_max_queued_bytes)",
                before, self.budget
            ));
            return false;
        }
        match self.sender.try_send(message) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.queued.fetch_sub(size, Ordering::AcqRel);
                self.overflow(format_args!(
                    "{} frames wait for it (HubOptions::with_max_queued)",
                    self.sender.max_capacity()
                ));
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.queued.fetch_sub(size, Ordering::AcqRel);
                false
            }
        }
    }

    fn overflow(&self, why: std::fmt::Arguments<'_>) {
        if !self.kick.is_cancelled() {
            tracing::warn!(spoke = %self.spoke.lock().name, "a spoke fell too far behind: disconnecting it; {why}");
        }
        self.kick.cancel();
    }
}
