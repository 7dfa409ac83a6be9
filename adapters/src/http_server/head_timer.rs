//! The header-read timeout of HTTP/1 connections, kept outside hyper with one alarm per
//! connection.
//!
//! hyper keeps its own header-read timeout with a sleep asked of its timer for each request's
//! head, and, to start it at once, goes round its dispatcher's loop once more after every
//! response (about a thousand instructions a request on the tiny HTTP bench, tokio's timer
//! wheel aside). Here hyper has no timeout. Each connection's future is wrapped in a
//! [`HeadDeadline`] which sees, inside its poll, the two moments that bound the wait for a
//! head: a head read (the connection's service is called: [`head_read`]) and a response's end
//! (hyper drops its body: [`Answer`]). Between a response's end (or the connection's start)
//! and the next head, the connection waits for a head, and is closed once it has waited for
//! the timeout. One alarm per connection wakes it, kept by the process's watchdog thread
//! rather than tokio's timer (see [`super::head_alarm`] for why); the alarm moves only when it
//! has rung or would ring after the deadline, so on a busy connection about once per timeout,
//! not once per request.
//!
//! Invariants, kept by [`HeadDeadline::poll`] and relied on by [`head_read`] and [`Answer`]'s
//! drop:
//! - the thread-local slot is `active` only while a `HeadDeadline` polls its connection, and
//!   what was there before is put back after: a head read or an answer dropped while it is
//!   active belongs to that connection (HTTP/1 calls its service and drops its bodies in the
//!   connection's own task; one dropped elsewhere, as when the connection's future is dropped
//!   whole, counts for nothing);
//! - HTTP/1 answers its requests in order, so heads read minus answers ended is the count of
//!   requests in flight, and the connection waits for a head exactly when it is zero;
//! - an HTTP/2 connection runs its streams, and calls its service, in tasks of their own: its
//!   first head sets its [`Http2`] flag, and it is not timed from then on (hyper did not time
//!   HTTP/2 heads either). Until then it is timed as any connection waiting for its first
//!   head;
//! - when a poll ends with the connection waiting for a head, the alarm is set, has not rung,
//!   and rings by the deadline: the ring wakes the task, whose next poll either finds that it
//!   rang for the deadline itself (the connection ends) or sets it again. The clock is read
//!   once per wait, when it starts; whether the alarm has rung is the alarm's own state.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::head_alarm::Alarm;
use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Frame, SizeHint};

/// What the connection being polled on this thread did during the poll.
#[derive(Clone, Copy)]
struct Slot {
    /// A [`HeadDeadline`] is polling its connection.
    active: bool,
    /// Heads read (service calls).
    heads: u32,
    /// Answers whose body hyper dropped.
    answers: u32,
}

impl Slot {
    const IDLE: Self = Self {
        active: false,
        heads: 0,
        answers: 0,
    };
}

thread_local! {
    static SLOT: Cell<Slot> = const { Cell::new(Slot::IDLE) };
}

/// Whether a connection turned out to be HTTP/2: set by its service (HTTP/2 calls it in each
/// stream's own task), read by its [`HeadDeadline`].
#[derive(Clone, Default)]
pub(super) struct Http2(Arc<AtomicBool>);

impl Http2 {
    fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Tells the connection being polled that a request's head was read (its service is called
/// with the request: in the connection's task for HTTP/1, in the stream's for HTTP/2, which
/// `http2` then records).
pub(super) fn head_read(version: http::Version, http2: &Http2) {
    if version == http::Version::HTTP_2 {
        http2.0.store(true, Ordering::Relaxed);
        return;
    }
    record(|slot| slot.heads += 1);
}

/// Counts an event in the slot, when a [`HeadDeadline`] is polling its connection.
fn record(count: impl FnOnce(&mut Slot)) {
    let mut slot = SLOT.get();
    if slot.active {
        count(&mut slot);
        SLOT.set(slot);
    }
}

/// A response's body, which tells the connection being polled when hyper is done with it.
pub(super) struct Answer {
    body: Body,
}

impl Answer {
    pub(super) fn new(body: Body) -> Self {
        Self { body }
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        record(|slot| slot.answers += 1);
    }
}

impl hyper::body::Body for Answer {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

pin_project_lite::pin_project! {
    /// A connection's future with its header-read timeout (see the module's invariants).
    pub(super) struct HeadDeadline<F> {
        #[pin]
        connection: F,
        timeout: Duration,
        // Requests whose head was read and whose answer hyper has not dropped yet.
        in_flight: u32,
        // When the wait for a head ends: `None` while a request is in flight (or when the
        // wait outlasts what an `Instant` holds).
        deadline: Option<Instant>,
        http2: Http2,
        // Set at the first wait, and again when it rang; its own instant is when it rings
        // (see `head_alarm`: not tokio's timer).
        alarm: Alarm,
    }
}

impl<F> HeadDeadline<F> {
    /// `connection`, which waits for its first head from now on (its service records in
    /// `http2` whether it is HTTP/2).
    pub(super) fn new(connection: F, timeout: Duration, http2: Http2) -> Self {
        Self {
            connection,
            timeout,
            in_flight: 0,
            deadline: Instant::now().checked_add(timeout),
            http2,
            alarm: Alarm::default(),
        }
    }
}

impl<F, E> Future for HeadDeadline<F>
where
    F: Future<Output = Result<(), E>>,
{
    type Output = Result<(), E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let outer = SLOT.replace(Slot {
            active: true,
            ..Slot::IDLE
        });
        let polled = this.connection.poll(cx);
        let slot = SLOT.replace(outer);
        if polled.is_ready() || this.http2.is_set() {
            return polled;
        }
        if slot.heads != 0 || slot.answers != 0 {
            *this.in_flight = (*this.in_flight + slot.heads).saturating_sub(slot.answers);
            *this.deadline = if *this.in_flight == 0 {
                Instant::now().checked_add(*this.timeout)
            } else {
                None
            };
        }
        let Some(deadline) = *this.deadline else {
            return polled;
        };
        // No clock is read here: whether the alarm has rung is its own state.
        if let Some(rings_at) = this.alarm.rings_at() {
            match this.alarm.rang() {
                // Set, and it rings by the deadline: it wakes this task in time.
                false if rings_at <= deadline => return polled,
                // It rang for this very deadline: the wait is over.
                true if rings_at == deadline => {
                    tracing::debug!(
                        timeout = ?this.timeout,
                        "an HTTP connection sent no request head within the header-read timeout: closed"
                    );
                    return Poll::Ready(Ok(()));
                }
                _ => {}
            }
        }
        // Set (or set again) to ring at the deadline; it rings at once if that has passed.
        this.alarm.set(deadline, cx.waker());
        polled
    }
}
