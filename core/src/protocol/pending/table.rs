//! The table of pending requests: the state the callers and the listener share, and every
//! way an entry leaves it (see the [module docs](super) for who removes an entry when).

use crate::envelope::ResponseEnvelope;
use crate::error::{CallError, ErrorCode};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use tokio::sync::{mpsc, oneshot};

/// What a subscription's stream receives from the listener.
pub(super) enum StreamEvent {
    Item(ResponseEnvelope),
    /// `None`: `call.completed`; `Some`: `call.error` (or the map closed).
    End(Option<CallError>),
}

/// The receiving end of one pending request.
pub(super) enum Entry {
    /// A query or mutation: its one result.
    Call(oneshot::Sender<Result<ResponseEnvelope, CallError>>),
    /// A subscription: its items, then its end.
    Stream(mpsc::UnboundedSender<StreamEvent>),
}

impl Entry {
    pub(super) fn fail(self, error: CallError) {
        // A receiver that is gone was dropped by its call: nothing to tell.
        match self {
            Self::Call(sender) => drop(sender.send(Err(error))),
            Self::Stream(sender) => drop(sender.send(StreamEvent::End(Some(error)))),
        }
    }
}

/// What the table lock guards.
struct TableState {
    /// The pending requests by sequence number; an entry is removed exactly once.
    entries: HashMap<u64, Entry, foldhash::fast::RandomState>,
    /// Set once the reply subscription is gone: new calls fail with this error.
    closed: Option<CallError>,
}

/// The pending requests of one map.
pub(super) struct Table {
    /// `<callerId>:`: request ids of this caller start with it.
    prefix: String,
    /// The most entries the table holds (`PendingOptions::with_max_pending`).
    max_entries: usize,
    /// Held only for map operations and the send of a stream item (never across `.await`).
    state: Mutex<TableState>,
}

impl Table {
    pub(super) fn new(prefix: String, max_entries: usize) -> Self {
        Self {
            prefix,
            max_entries,
            state: Mutex::new(TableState {
                entries: HashMap::default(),
                closed: None,
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

    pub(super) fn respond(&self, request_id: &str, output: Value) -> Result<bool, CallError> {
        let envelope = ResponseEnvelope::from_value(output).map_err(|error| {
            CallError::new(
                ErrorCode::ValidationError,
                format!(
                    "refused the output for request `{request_id}`: it is not a ResponseEnvelope ({error})"
                ),
            )
            .with_details(json!({"requestId": request_id}))
        })?;
        Ok(self.deliver(request_id, envelope))
    }

    /// Hands a decoded result to the call or subscription waiting for it; `false` when none is.
    pub(super) fn deliver(&self, request_id: &str, envelope: ResponseEnvelope) -> bool {
        let Some(seq) = self.seq_of(request_id) else {
            return false;
        };
        let mut state = self.state.lock();
        match state.entries.get(&seq) {
            None => false,
            Some(Entry::Stream(sender)) => {
                // An error means the stream is being dropped; its guard removes the entry.
                sender.send(StreamEvent::Item(envelope)).is_ok()
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
            Entry::Stream(sender) => drop(sender.send(StreamEvent::End(None))),
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

/// `TRANSPORT_ERROR` for a call refused because `max` requests are already pending.
fn too_many_pending(max: usize) -> CallError {
    CallError::transport(format!(
        "{max} calls and subscriptions are already waiting for replies on this PendingRequestMap (the max_pending limit, PendingOptions::with_max_pending): the call was not sent"
    ))
    .with_details(json!({"limit": "maxPending", "max": max}))
}
