//! A spoke's outgoing queue at the hub, bounded in frames and in bytes (what keeps a spoke
//! that stopped reading from growing the hub's memory), and the receipts held back for it
//! (late receipts: see `receipts.rs`).

use super::options::HubOptions;
use crate::websocket::frame::{self, Header};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

/// How many receipts one spoke's queue holds back at most: past it they are written at once.
const MAX_HELD_RECEIPTS: usize = 1024;

/// What the writer of a spoke's connection takes from its queue.
pub(super) enum Out {
    /// A frame to write.
    Frame(Message),
    /// Write the receipts held back, now (their delay is over, or there are many).
    Receipts,
}

/// A spoke's outgoing queue, bounded in frames and in bytes.
///
/// Invariants:
///
/// * `queued` is the total size of the frames sent into the channel and not yet written to
///   the socket: the writer takes frames out in batches and subtracts a batch's size
///   ([`OutboundQueue::written`]) only once the batch is flushed, so the frames in its hands
///   count too. A frame that would take it past the byte budget, or a full channel,
///   disconnects the spoke (the kick); when the connection ends the channel and every frame
///   in it are dropped, so a spoke that stopped reading costs at most its budget (plus the
///   socket's own buffers and [`MAX_HELD_RECEIPTS`] receipts), and nothing after it leaves.
/// * `held` holds the receipts (`[id, receivers]`) of publishes answered late, in the order
///   they were answered. The writer takes all of them before each batch it writes and sends
///   them first, in one `oks` frame; the late receipts' sweep asks for them ([`Out::Receipts`])
///   when they waited its delay. `listed` is `true` from when the queue was put on the
///   sweep's list until the sweep took it off ([`Outbound::release_receipts`]).
#[derive(Clone)]
pub(super) struct Outbound {
    sender: mpsc::Sender<Out>,
    shared: Arc<Shared>,
    kick: CancellationToken,
}

struct Shared {
    queued: AtomicUsize,
    budget: usize,
    /// The spoke's name, for the log.
    name: String,
    held: Mutex<Vec<(u64, usize)>>,
    listed: AtomicBool,
}

/// The writer's end of an [`Outbound`].
pub(super) struct OutboundQueue {
    receiver: mpsc::Receiver<Out>,
    shared: Arc<Shared>,
}

impl OutboundQueue {
    /// The next item, once there is one; `None` when every sender is gone. A frame still
    /// counts against the budget until [`written`](Self::written) says otherwise.
    pub(super) async fn recv(&mut self) -> Option<Out> {
        self.receiver.recv().await
    }

    /// A frame already queued (or the receipts held back, when asked for), without waiting.
    pub(super) fn try_recv(&mut self) -> Option<Message> {
        loop {
            match self.receiver.try_recv().ok()? {
                Out::Frame(message) => return Some(message),
                Out::Receipts => {
                    if let Some(receipts) = self.take_receipts() {
                        return Some(receipts);
                    }
                }
            }
        }
    }

    /// The receipts held back, as one `oks` frame (counted in the queue's bytes until
    /// written); `None` when there are none.
    pub(super) fn take_receipts(&self) -> Option<Message> {
        let oks = {
            let mut held = self.shared.held.lock();
            if held.is_empty() {
                return None;
            }
            std::mem::take(&mut *held)
        };
        let message = frame::encode(&Header::Oks { oks }, None);
        self.shared
            .queued
            .fetch_add(message.len(), Ordering::AcqRel);
        Some(message)
    }

    /// The writer flushed frames of `bytes` bytes (their [`Message::len`]) to the socket.
    pub(super) fn written(&self, bytes: usize) {
        self.shared.queued.fetch_sub(bytes, Ordering::AcqRel);
    }
}

impl Outbound {
    pub(super) fn new(
        options: &HubOptions,
        name: String,
        kick: CancellationToken,
    ) -> (Self, OutboundQueue) {
        let (sender, receiver) = mpsc::channel(options.max_queued);
        let shared = Arc::new(Shared {
            queued: AtomicUsize::new(0),
            budget: options.max_queued_bytes,
            name,
            held: Mutex::new(Vec::new()),
            listed: AtomicBool::new(false),
        });
        let outbound = Self {
            sender,
            shared: shared.clone(),
            kick,
        };
        (outbound, OutboundQueue { receiver, shared })
    }

    /// Queues a frame; a spoke over its budget (frames or bytes) is disconnected.
    pub(super) fn send(&self, message: Message) -> bool {
        let size = message.len();
        let queued = &self.shared.queued;
        let before = queued.fetch_add(size, Ordering::AcqRel);
        if before + size > self.shared.budget {
            queued.fetch_sub(size, Ordering::AcqRel);
            self.overflow(format_args!(
                "{} bytes wait for it, and {size} more would pass the budget of {} (HubOptions::with_max_queued_bytes)",
                before, self.shared.budget
            ));
            return false;
        }
        match self.sender.try_send(Out::Frame(message)) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                queued.fetch_sub(size, Ordering::AcqRel);
                self.overflow(format_args!(
                    "{} frames wait for it (HubOptions::with_max_queued)",
                    self.sender.max_capacity()
                ));
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                queued.fetch_sub(size, Ordering::AcqRel);
                false
            }
        }
    }

    /// Holds back the receipt of the spoke's publish `id`: it goes out with the next batch of
    /// frames written to the spoke, or when the sweep says it waited long enough. `true` when
    /// the caller is to put this queue on the sweep's list (it was not on it).
    #[must_use = "a queue that was not listed must be put on the sweep's list"]
    pub(super) fn hold_receipt(&self, id: u64, receivers: usize) -> bool {
        let count = {
            let mut held = self.shared.held.lock();
            held.push((id, receivers));
            held.len()
        };
        if count >= MAX_HELD_RECEIPTS {
            self.ask_for_receipts();
            false
        } else {
            !self.shared.listed.swap(true, Ordering::AcqRel)
        }
    }

    /// Taken off the sweep's list: the receipts held back go out now.
    pub(super) fn release_receipts(&self) {
        self.shared.listed.store(false, Ordering::Release);
        if !self.shared.held.lock().is_empty() {
            self.ask_for_receipts();
        }
    }

    fn ask_for_receipts(&self) {
        // A full channel leaves them to the writer's next batch, which is on its way.
        let _ = self.sender.try_send(Out::Receipts);
    }

    fn overflow(&self, why: std::fmt::Arguments<'_>) {
        if !self.kick.is_cancelled() {
            tracing::warn!(spoke = %self.shared.name, "a spoke fell too far behind: disconnecting it; {why}");
        }
        self.kick.cancel();
    }
}
