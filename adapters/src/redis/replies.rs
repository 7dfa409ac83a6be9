//! Replies that leave with a group reader's next read ([`Outboxes`]).
//!
//! A group reader hands the entries it read to its subscriber (a call handler), lets the
//! handler run (it yields once), then acknowledges what was answered and reads again, in one
//! write. A reply the handler publishes in that window — it answers at once, most do — is
//! handed to the reader instead of going out on the command connection: the reader writes it
//! first, then its `XACK` (the reply's own entry among them when the reader holds it), then
//! the next `XREADGROUP`, all in one write, and Redis runs them in that order, so an entry is
//! never acknowledged before its reply is published. One `PUBLISH` of the reply, no round
//! trip of its own. A reply published while no reader is in that window goes out on the
//! command connection as before.
//!
//! Invariant (under the one lock, a leaf): a reader's outbox is open from just before it
//! yields to the handler until it takes the replies handed to it, right before it writes;
//! a reply is handed only to an open outbox, so every reply handed over is written by that
//! reader's next write, or its publish fails (the reader stopped: its [`Window`] drops the
//! replies, and each publisher learns that the reply may or may not have left).

use crate::seeded::Seeded;
use bytes::Bytes;
use parking_lot::Mutex;
use redis::RedisError;
use tokio::sync::oneshot;

/// A reply handed to a reader: the channel and payload of its `PUBLISH`, and where its
/// answer goes.
pub(super) struct Reply {
    pub(super) channel: String,
    pub(super) payload: Bytes,
    pub(super) answer: oneshot::Sender<Result<i64, RedisError>>,
}

/// Where the answer to a handed reply's `PUBLISH` comes (its receivers).
pub(super) type Answer = oneshot::Receiver<Result<i64, RedisError>>;

/// The open outboxes of this instance's group readers, by reader.
#[derive(Default)]
pub(super) struct Outboxes {
    open: Mutex<Seeded<u64, Vec<Reply>>>,
}

/// A reader's open outbox; [`close`](Window::close) takes what was handed to it. Dropped
/// without being closed (the reader stopped), it closes and drops the replies.
pub(super) struct Window<'a> {
    outboxes: &'a Outboxes,
    reader: u64,
}

impl Outboxes {
    /// Opens the outbox of `reader` (see the module docs).
    pub(super) fn open(&self, reader: u64) -> Window<'_> {
        self.open.lock().insert(reader, Vec::new());
        Window {
            outboxes: self,
            reader,
        }
    }

    /// Hands a reply to an open outbox — `holder`'s when it is open (the reader holding the
    /// request the reply answers), else any — and returns that reader and where the answer
    /// to the `PUBLISH` will come; the reply back when no outbox is open.
    pub(super) fn offer(
        &self,
        holder: Option<u64>,
        channel: String,
        payload: Bytes,
    ) -> Result<(u64, Answer), (String, Bytes)> {
        let mut open = self.open.lock();
        let reader = match holder.filter(|holder| open.contains_key(holder)) {
            Some(holder) => holder,
            None => match open.keys().next() {
                Some(any) => *any,
                None => return Err((channel, payload)),
            },
        };
        let (answer, answered) = oneshot::channel();
        if let Some(replies) = open.get_mut(&reader) {
            replies.push(Reply {
                channel,
                payload,
                answer,
            });
        }
        Ok((reader, answered))
    }
}

impl Window<'_> {
    /// Closes the outbox: the replies handed to it, to write now.
    pub(super) fn close(self) -> Vec<Reply> {
        let replies = self
            .outboxes
            .open
            .lock()
            .remove(&self.reader)
            .unwrap_or_default();
        std::mem::forget(self);
        replies
    }
}

impl Drop for Window<'_> {
    fn drop(&mut self) {
        self.outboxes.open.lock().remove(&self.reader);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_go_to_the_holder_when_open_else_to_any_open_outbox() {
        let outboxes = Outboxes::default();
        assert!(outboxes.offer(Some(1), "c".into(), Bytes::new()).is_err());
        let one = outboxes.open(1);
        let two = outboxes.open(2);
        let offer = |holder| outboxes.offer(holder, "c".into(), Bytes::new()).unwrap().0;
        assert_eq!(offer(Some(2)), 2);
        assert_eq!(offer(Some(1)), 1);
        assert!([1, 2].contains(&offer(Some(9))));
        assert_eq!(one.close().len() + two.close().len(), 3);
        assert!(outboxes.offer(Some(1), "c".into(), Bytes::new()).is_err());
        // A reader that stops with its outbox open drops what was handed to it.
        let (_, answered) = {
            let _window = outboxes.open(3);
            outboxes.offer(None, "c".into(), Bytes::new()).unwrap()
        };
        assert!(answered.blocking_recv().is_err());
    }
}
