//! The table of pending requests: the state the callers and the listener share, and every
//! way an entry leaves it (see the [module docs](super) for who removes an entry when).

use crate::envelope::ResponseEnvelope;
use crate::error::{CallError, ErrorCode};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{mpsc, oneshot};

/// What a subscription's stream receives from the listener.
pub(super) enum StreamEvent {
    /// An item and what it counts against the stream's buffer.
    Item(ResponseEnvelope, usize),
    /// `None`: `call.completed`; `Some`: `call.error` (or the map closed).
    End(Option<CallError>),
}

/// The receiving end of one pending request.
pub(super) enum Entry {
    /// A query or mutation: its one result.
    Call(oneshot::Sender<Result<ResponseEnvelope, CallError>>),
    /// A subscription: its items, then its end.
    Stream(StreamSender),
}

/// The listener's end of a subscription's queue, bounded in bytes: `queued` is what the
/// stream holds and has not yielded (the listener adds, the stream subtracts).
pub(super) struct StreamSender {
    pub(super) sender: mpsc::UnboundedSender<StreamEvent>,
    pub(super) queued: Arc<AtomicUsize>,
    /// How many items were delivered: the index the next one must have.
    delivered: u64,
    /// The subscribed operation: where `call.aborted` goes when the buffer overflows.
    operation_id: Arc<str>,
}

impl StreamSender {
    pub(super) fn new(
        sender: mpsc::UnboundedSender<StreamEvent>,
        queued: Arc<AtomicUsize>,
        operation_id: Arc<str>,
    ) -> Self {
        Self {
            sender,
            queued,
            delivered: 0,
            operation_id,
        }
    }
}

/// What an item counts against a stream's buffer on top of its wire size.
const ITEM_OVERHEAD: usize = 256;

impl Entry {
    pub(super) fn fail(self, error: CallError) {
        // A receiver that is gone was dropped by its call: nothing to tell.
        match self {
            Self::Call(sender) => drop(sender.send(Err(error))),
            Self::Stream(stream) => drop(stream.sender.send(StreamEvent::End(Some(error)))),
        }
    }
}

/// What the table lock guards.
struct TableState {
    /// The pending requests by sequence number; an entry is removed exactly once.
    entries: HashMap<u64, Entry, foldhash::fast::RandomState>,
    /// Set once the reply subscription is gone: new calls fail with this error.
    closed: Option<CallError>,
    /// Subscriptions ended because their caller let the buffer overflow, by operation and
    /// request id: the listener publishes their `call.aborted`.
    overflowed: Vec<(Arc<str>, String)>,
}

/// The pending requests of one map.
pub(super) struct Table {
    /// `<callerId>:`: request ids of this caller start with it.
    prefix: String,
    /// The most entries the table holds (`PendingOptions::with_max_pending`).
    max_entries: usize,
    /// The most bytes one subscription queues (`PendingOptions::with_max_stream_buffer`).
    max_stream_buffer: usize,
    /// Held only for map operations and the send of a stream item (never across `.await`).
    state: Mutex<TableState>,
}

impl Table {
    pub(super) fn new(prefix: String, max_entries: usize, max_stream_buffer: usize) -> Self {
        Self {
            prefix,
            max_entries,
            max_stream_buffer,
            state: Mutex::new(TableState {
                entries: HashMap::default(),
                closed: None,
                overflowed: Vec::new(),
            }),
        }
    }

    fn seq_of(&self, request_id: &str) -> Option<u64> {
        request_id.strip_prefix(&self.prefix)?.parse().ok()
    }

    pub(super) fn len(&self) -> usize {
        self.state.lock().entries.len()
    }

    pub(super) fn insert(&self, seq: u64, entry: Entry) -> Result<(), CallError> {
        let mut state = self.state.lock();
        if let Some(error) = &state.closed {
            return Err(error.clone());
        }
        if state.entries.len() >= self.max_entries {
            return Err(too_many_pending(self.max_entries));
        }
        state.entries.insert(seq, entry);
        Ok(())
    }

    pub(super) fn remove(&self, seq: u64) -> Option<Entry> {
        self.state.lock().entries.remove(&seq)
    }

    /// Delivers `output` to the pending request `request_id` (a test's hook).
    #[cfg(feature = "testing")]
    pub(super) fn respond(&self, request_id: &str, output: Value) -> Result<bool, CallError> {
        self.respond_sized(request_id, output, 0)
    }

    /// Delivers a reply of `size` bytes on the wire to the pending request `request_id`.
    pub(super) fn respond_sized(
        &self,
        request_id: &str,
        output: Value,
        size: usize,
    ) -> Result<bool, CallError> {
        let envelope = ResponseEnvelope::from_value(output).map_err(|error| {
            CallError::new(
                ErrorCode::ValidationError,
                format!(
                    "refused the output for request `{request_id}`: it is not a ResponseEnvelope ({error})"
                ),
            )
            .with_details(json!({"requestId": request_id}))
        })?;
        Ok(self.deliver(request_id, envelope, size))
    }

    /// Hands a decoded result (`size` bytes on the wire) to the call or subscription waiting
    /// for it; `false` when none is.
    pub(super) fn deliver(
        &self,
        request_id: &str,
        envelope: ResponseEnvelope,
        size: usize,
    ) -> bool {
        let Some(seq) = self.seq_of(request_id) else {
            return false;
        };
        let mut state = self.state.lock();
        match state.entries.get_mut(&seq) {
            None => false,
            Some(Entry::Stream(stream)) => {
                stream.delivered += 1;
                let cost = size + ITEM_OVERHEAD;
                let queued = stream.queued.fetch_add(cost, Ordering::AcqRel) + cost;
                if queued <= self.max_stream_buffer {
                    // An error means the stream is being dropped; its guard removes the entry.
                    return stream
                        .sender
                        .send(StreamEvent::Item(envelope, cost))
                        .is_ok();
                }
                // The stream yields what it holds, then this error. The entry leaves the table
                // here, so later items are dropped and its guard publishes nothing; the
                // listener publishes the `call.aborted` (see `take_overflowed`).
                stream.queued.fetch_sub(cost, Ordering::AcqRel);
                let Some(Entry::Stream(stream)) = state.entries.remove(&seq) else {
                    unreachable!("the entry was just seen")
                };
                let error = stream_buffer_full(request_id, self.max_stream_buffer);
                drop(stream.sender.send(StreamEvent::End(Some(error))));
                state
                    .overflowed
                    .push((stream.operation_id, request_id.to_owned()));
                true
            }
            Some(Entry::Call(_)) => {
                let Some(Entry::Call(sender)) = state.entries.remove(&seq) else {
                    unreachable!("the entry was just seen")
                };
                drop(state);
                sender.send(Ok(envelope)).is_ok()
            }
        }
    }

    /// Whether `request_id` is pending here and, for a subscription, the index its next
    /// item has (`Some(None)` for a query or mutation, `None` when nothing waits for it).
    #[cfg(feature = "signing")]
    pub(super) fn next_index(&self, request_id: &str) -> Option<Option<u64>> {
        let seq = self.seq_of(request_id)?;
        match self.state.lock().entries.get(&seq)? {
            Entry::Call(_) => Some(None),
            Entry::Stream(stream) => Some(Some(stream.delivered)),
        }
    }

    /// The subscriptions ended by an overflowing buffer since the last call, by operation and
    /// request id (see [`deliver`](Self::deliver)).
    pub(super) fn take_overflowed(&self) -> Vec<(Arc<str>, String)> {
        std::mem::take(&mut self.state.lock().overflowed)
    }

    /// Ends a pending request with `error`.
    pub(super) fn fail(&self, request_id: &str, error: CallError) -> bool {
        let entry = self.seq_of(request_id).and_then(|seq| self.remove(seq));
        entry.map(|entry| entry.fail(error)).is_some()
    }

    pub(super) fn complete(&self, request_id: &str) -> bool {
        let Some(entry) = self.seq_of(request_id).and_then(|seq| self.remove(seq)) else {
            return false;
        };
        match entry {
            Entry::Stream(stream) => drop(stream.sender.send(StreamEvent::End(None))),
            call @ Entry::Call(_) => call.fail(CallError::transport(format!(
                "request `{request_id}` got `call.completed` but it is a query or mutation: the handler sent no result"
            ))),
        }
        true
    }

    /// Fails every pending request and refuses new ones.
    pub(super) fn close(&self, error: CallError) {
        let entries = {
            let mut state = self.state.lock();
            state.closed.get_or_insert(error.clone());
            std::mem::take(&mut state.entries)
        };
        for entry in entries.into_values() {
            entry.fail(error.clone());
        }
    }
}

/// `TRANSPORT_ERROR` for a subscription whose caller let `max` bytes of items wait.
fn stream_buffer_full(request_id: &str, max: usize) -> CallError {
    CallError::transport(format!(
        "the subscription `{request_id}` was ended: its caller did not poll while {max} bytes of items waited (the max_stream_buffer limit, PendingOptions::with_max_stream_buffer)"
    ))
    .with_details(json!({"limit": "maxStreamBuffer", "max": max}))
}

/// `TRANSPORT_ERROR` for a call refused because `max` requests are already pending.
fn too_many_pending(max: usize) -> CallError {
    CallError::transport(format!(
        "{max} calls and subscriptions are already waiting for replies on this PendingRequestMap (the max_pending limit, PendingOptions::with_max_pending): the call was not sent"
    ))
    .with_details(json!({"limit": "maxPending", "max": max}))
}
