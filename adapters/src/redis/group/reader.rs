//! [`GroupReader`]: the task behind one group subscription, as an explicit state machine.
//!
//! ```text
//!             connect failed                        subscriber gone
//!            ┌──────────────┐                  ┌─────────────────────────► Done (leave the group)
//!            ▼              │                  │
//!      Disconnected ──── backoff, connect ──► Reading ──┐ renew the lease when due,
//!            ▲                                  │  ▲    │ wait while a batch is untaken,
//!            └── connection lost / read timed out ┘  └────┘ acknowledge + read, deliver
//! ```
//!
//! Each [`Phase`] method returns the next phase; the invariants are written where they are
//! kept.

use super::Delivery;
use super::member::{Member, bounded};
use crate::backoff::Backoff;
use crate::redis::claim::{Due, Held};
use crate::redis::conn::Conn;
use crate::redis::errors::is_connection_error;
use crate::redis::replies::Reply;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Where a group reader is.
enum Phase {
    /// No connection: wait out the backoff, then connect (which joins the group again).
    Disconnected,
    /// Connected and joined. `beat` is when the lease was last renewed (or a time one
    /// heartbeat ago, to renew and claim at once).
    Reading { conn: Conn, beat: Instant },
    /// The subscriber is gone: leave the group and stop.
    Done,
}

/// One consumer's reading of its group until the subscription is dropped.
pub(super) struct GroupReader {
    member: Member,
    sender: mpsc::UnboundedSender<Bytes>,
    /// Invariant: the entries handed to the subscriber and not yet acknowledged (redelivering
    /// groups only); an entry leaves it only once its `XACK` succeeded or it aged out.
    held: Held,
    backoff: Backoff,
    heartbeat: Duration,
}

impl GroupReader {
    pub(super) fn new(member: Member, sender: mpsc::UnboundedSender<Bytes>) -> Self {
        let options = &member.inner.options;
        Self {
            held: Held::new(member.inner.options.retention, member.reader),
            backoff: options.backoff.clone(),
            heartbeat: options.heartbeat(),
            member,
            sender,
        }
    }

    /// Runs from a connection just joined until the subscriber is gone, then leaves the group
    /// (exactly once: only `Done` ends the loop).
    pub(super) async fn run(mut self, conn: Conn) {
        let mut phase = Phase::Reading {
            conn,
            beat: Instant::now(),
        };
        loop {
            phase = match phase {
                Phase::Disconnected => self.reconnect().await,
                Phase::Reading { conn, beat } => self.read(conn, beat).await,
                Phase::Done => break,
            };
        }
        let member = &self.member;
        member.inner.answers.drop_reader(member.reader);
        member
            .inner
            .leave(
                &member.keys,
                &member.group,
                &member.member,
                &member.consumer,
            )
            .await;
    }

    fn stream(&self) -> &str {
        &self.member.keys.stream
    }

    /// `Disconnected`: after the backoff, a fresh connection (joined) or `Disconnected` again.
    async fn reconnect(&mut self) -> Phase {
        tokio::select! {
            () = self.sender.closed() => return Phase::Done,
            () = tokio::time::sleep(self.backoff.step()) => {}
        }
        match self.member.connect().await {
            Ok(conn) => {
                tracing::info!(stream = %self.stream(), consumer = %self.member.consumer, "redis group reader restored");
                self.backoff.reset();
                // Joined just now; renew and claim at once (a member may have died meanwhile).
                let beat = Instant::now()
                    .checked_sub(self.heartbeat)
                    .unwrap_or_else(Instant::now);
                Phase::Reading { conn, beat }
            }
            Err(error) => {
                tracing::debug!(%error, stream = %self.stream(), "redis is still unreachable");
                Phase::Disconnected
            }
        }
    }

    /// `Reading`: one round — renew the lease when due, wait while a batch is untaken, then
    /// acknowledge what was answered and read the next entries.
    async fn read(&mut self, mut conn: Conn, mut beat: Instant) -> Phase {
        if beat.elapsed() >= self.heartbeat {
            let options = &self.member.inner.options;
            let beating = self
                .member
                .heartbeat(&mut conn, &mut self.held, &self.sender);
            match bounded(options.command_timeout + options.pong_timeout, beating).await {
                Ok(true) => beat = Instant::now(),
                Ok(false) => return Phase::Done,
                Err(error) => {
                    tracing::warn!(%error, stream = %self.stream(), "could not renew a group lease");
                    if is_connection_error(&error) {
                        return Phase::Disconnected;
                    }
                    // Tried: the next attempt is a heartbeat from now.
                    return Phase::Reading {
                        conn,
                        beat: Instant::now(),
                    };
                }
            }
        }
        // Backpressure: while a batch handed over waits untaken, read no more (see `Queued`).
        // The wait ends by the next heartbeat, so the lease is still renewed on time.
        let queued = &self.member.queued;
        if queued.count.load(Ordering::Acquire) >= self.member.inner.options.batch {
            tokio::select! {
                () = self.sender.closed() => return Phase::Done,
                () = queued.taken.notified() => {}
                () = tokio::time::sleep_until(beat + self.heartbeat) => {}
            }
            return Phase::Reading { conn, beat };
        }
        // Let the tasks woken by the entries just delivered (the subscriber and the handler
        // it runs) go first: the replies they publish meanwhile are handed to this reader
        // and leave first in its next write (see `replies`), ahead of the acknowledgements
        // and the next read.
        let window = self.member.inner.replies.open(self.member.reader);
        tokio::task::yield_now().await;
        let replies = window.close();
        self.acknowledge_and_read(conn, beat, replies).await
    }

    /// Publishes the `replies` handed over, acknowledges the answered entries and reads the
    /// next ones, in one write.
    async fn acknowledge_and_read(
        &mut self,
        mut conn: Conn,
        mut beat: Instant,
        replies: Vec<Reply>,
    ) -> Phase {
        let due: Option<Due> = match self.member.delivery {
            Delivery::Redeliver => Some(self.held.due(&self.member.inner.answers)),
            Delivery::AtMostOnce => None,
        };
        let acks = due.as_ref().map_or(&[][..], |due| &due.ids[..]);
        let options = &self.member.inner.options;
        let (acked, read) = tokio::select! {
            () = self.sender.closed() => return Phase::Done,
            // Bounded here too, not only by the connection's response timeout: a cluster
            // connection retries and repairs itself and may wait past it.
            outcome = tokio::time::timeout(
                options.block_for() + options.pong_timeout,
                self.member.acknowledge_and_read(&mut conn, acks, replies),
            ) => match outcome {
                Ok(outcome) => outcome,
                Err(_) => {
                    tracing::warn!(stream = %self.stream(), "a group read went unanswered: reconnecting");
                    return Phase::Disconnected;
                }
            },
        };
        // `held` forgets acknowledged entries only once their `XACK` succeeded.
        match (&acked, &due) {
            (Ok(()), Some(due)) => self.held.acknowledged(due),
            (Err(error), _) => {
                tracing::warn!(%error, stream = %self.stream(), "could not acknowledge answered entries");
            }
            (Ok(()), None) => {}
        }
        let ack_lost_connection = acked.is_err_and(|error| is_connection_error(&error));
        // The entries read are delivered whatever became of the acknowledgement: they are
        // pending for this consumer now.
        let next = match read {
            Ok(entries) => {
                if !self.member.deliver(entries, &self.sender, &mut self.held) {
                    return Phase::Done;
                }
                Phase::Reading { conn, beat }
            }
            Err(error) if error.code() == Some("NOGROUP") => {
                // The stream or its group is gone (Redis restarted or the key was deleted):
                // join again, which recreates both.
                tracing::warn!(stream = %self.stream(), "the consumer group is gone: joining again");
                let member = &self.member;
                match member
                    .inner
                    .join(&mut conn, &member.keys, &member.group, &member.member)
                    .await
                {
                    Ok(()) => {
                        beat = Instant::now();
                        Phase::Reading { conn, beat }
                    }
                    Err(error) => {
                        tracing::warn!(%error, stream = %self.stream(), "could not re-create a consumer group");
                        Phase::Disconnected
                    }
                }
            }
            Err(error) => {
                if is_connection_error(&error) {
                    tracing::warn!(%error, stream = %self.stream(), "lost the redis group reader: reconnecting");
                } else {
                    tracing::warn!(%error, stream = %self.stream(), "a group read failed: reconnecting");
                }
                Phase::Disconnected
            }
        };
        if ack_lost_connection {
            return Phase::Disconnected;
        }
        next
    }
}
