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
/// not yet written to the socket: the writer takes frames out in batches and subtracts a
/// batch's size ([`OutboundQueue::written`]) only once the batch is flushed, so the frames
/// in its hands count too. A frame that would take it past the byte budget, or a full
/// channel, disconnects the spoke (the kick); when the connection ends the channel and
/// every frame in it are dropped, so a spoke that stopped reading costs at most its budget
/// (plus the socket's own buffers), and nothing after it leaves.
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
    /// The next frame, once there is one; `None` when every sender is gone. It still counts
    /// against the budget until [`written`](Self::written) says otherwise.
    pub(super) async fn recv(&mut self) -> Option<Message> {
        self.receiver.recv().await
    }

    /// A frame already queued, without waiting.
    pub(super) fn try_recv(&mut self) -> Option<Message> {
        self.receiver.try_recv().ok()
    }

    /// The writer flushed frames of `bytes` bytes (their [`Message::len`]) to the socket.
    pub(super) fn written(&self, bytes: usize) {
        self.queued.fetch_sub(bytes, Ordering::AcqRel);
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
