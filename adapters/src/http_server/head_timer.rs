//! The header-read timeout of HTTP/1 connections, kept with one timer per connection.
//!
//! hyper asks its [`Timer`] for a new sleep each time a connection starts reading a request's
//! head, and drops it once the head is read. With tokio's timer that is an allocation, one
//! entry put into the timer wheel and one taken out, for every request: on the tiny HTTP
//! bench about a third of a microsecond of the server's CPU per request. Here each
//! connection's future is wrapped in a [`HeadDeadline`], which owns one tokio sleep (its
//! alarm). hyper's sleeps ([`HeadSleep`], a zero-sized type: no allocation) hold nothing. They
//! find the deadline of the head being read in a thread-local slot, which the wrapper fills
//! while it polls its connection and empties after. The alarm only moves when it would ring
//! after that deadline, or has rung already. On a busy kept-alive connection that is about
//! once per timeout, not once per request.
//!
//! Invariants, kept in [`HeadDeadline::poll`] and relied on by [`HeadSleep::poll`]:
//! - the slot is `active` only while a `HeadDeadline` polls its connection on this thread, and
//!   holds that connection's deadline (what it held before is put back after the poll);
//! - a [`HeadSleep`] is made and polled only by hyper inside that poll, so the deadline it
//!   reads is its own connection's (a sleep asked for outside one gets tokio's timer);
//! - when a poll ends with a head waiting for its deadline `d`, the alarm is set to ring at a
//!   moment that has not passed and is not after `d`. The ring wakes the task, whose next
//!   poll either sees `d` passed (the head is too late: hyper ends the connection) or sets the
//!   alarm again.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::rt::{Sleep, Timer};

/// What the connection being polled on this thread says of its head's deadline.
#[derive(Clone, Copy)]
struct Slot {
    /// A [`HeadDeadline`] is polling its connection.
    active: bool,
    /// The deadline of the connection's current head: the last one hyper asked a sleep for.
    deadline: Option<Instant>,
    /// When a [`HeadSleep`] found its deadline not yet passed (the time it read), in this poll.
    waiting_since: Option<Instant>,
}

impl Slot {
    const IDLE: Self = Self {
        active: false,
        deadline: None,
        waiting_since: None,
    };
}

thread_local! {
    static SLOT: Cell<Slot> = const { Cell::new(Slot::IDLE) };
}

/// The [`Timer`] of the HTTP/1 connections' header-read timeout: sleeps asked for while a
/// [`HeadDeadline`] polls its connection are [`HeadSleep`]s; others are tokio sleeps.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct HeadTimer;

impl Timer for HeadTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        match Instant::now().checked_add(duration) {
            Some(deadline) => self.sleep_until(deadline),
            // Beyond what an `Instant` holds: never rings.
            None => Box::pin(Tokio(Box::pin(tokio::time::sleep(duration)))),
        }
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        let mut slot = SLOT.get();
        if slot.active {
            slot.deadline = Some(deadline);
            SLOT.set(slot);
            Box::pin(HeadSleep)
        } else {
            Box::pin(Tokio(Box::pin(tokio::time::sleep_until(deadline.into()))))
        }
    }
}

/// A head's timeout: ready once the deadline of the connection polling it has passed.
struct HeadSleep;

impl Future for HeadSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        let mut slot = SLOT.get();
        // Outside its connection's poll (which the invariants rule out) nothing can wake it:
        // it stays pending rather than ring at a wrong time.
        debug_assert!(slot.active, "a HeadSleep polled outside its HeadDeadline");
        let Some(deadline) = slot.deadline.filter(|_| slot.active) else {
            return Poll::Pending;
        };
        let now = Instant::now();
        if now >= deadline {
            return Poll::Ready(());
        }
        slot.waiting_since = Some(now);
        SLOT.set(slot);
        Poll::Pending
    }
}

impl Sleep for HeadSleep {}

/// A sleep asked for outside a connection's poll: tokio's.
struct Tokio(Pin<Box<tokio::time::Sleep>>);

impl Future for Tokio {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl Sleep for Tokio {}

pin_project_lite::pin_project! {
    /// A connection's future with the alarm of its header-read timeout (see the module's
    /// invariants).
    pub(super) struct HeadDeadline<F> {
        #[pin]
        connection: F,
        // The deadline of the connection's current head, kept between polls.
        deadline: Option<Instant>,
        // Made at the first head that waits; reused after.
        alarm: Option<Pin<Box<tokio::time::Sleep>>>,
        // When the alarm rings, if it is set.
        rings_at: Option<Instant>,
    }
}

impl<F> HeadDeadline<F> {
    pub(super) fn new(connection: F) -> Self {
        Self {
            connection,
            deadline: None,
            alarm: None,
            rings_at: None,
        }
    }
}

impl<F: Future> Future for HeadDeadline<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let outer = SLOT.replace(Slot {
            active: true,
            deadline: *this.deadline,
            waiting_since: None,
        });
        let polled = this.connection.poll(cx);
        let slot = SLOT.replace(outer);
        *this.deadline = slot.deadline;
        if polled.is_pending()
            && let (Some(now), Some(deadline)) = (slot.waiting_since, slot.deadline)
        {
            let in_time = this
                .rings_at
                .is_some_and(|rings_at| rings_at > now && rings_at <= deadline);
            if !in_time {
                let alarm = match this.alarm {
                    Some(alarm) => {
                        alarm.as_mut().reset(deadline.into());
                        alarm
                    }
                    None => this
                        .alarm
                        .insert(Box::pin(tokio::time::sleep_until(deadline.into()))),
                };
                *this.rings_at = Some(deadline);
                // Registers this task with the alarm. Ready only if the deadline passed since
                // the head's sleep looked: poll again at once, and the head's sleep rings.
                if alarm.as_mut().poll(cx).is_ready() {
                    cx.waker().wake_by_ref();
                }
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A connection as hyper drives one: it asks the timer for a head's sleep (once, or again
    /// with a later deadline after `renew_after`) and ends when the sleep rings.
    struct Head {
        sleep: Option<Pin<Box<dyn Sleep>>>,
        timeout: Duration,
        renew_after: Option<Instant>,
    }

    impl Future for Head {
        type Output = Instant;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Instant> {
            let timeout = self.timeout;
            if self.renew_after.is_some_and(|at| Instant::now() >= at) {
                self.renew_after = None;
                self.sleep = None;
            }
            let sleep = self
                .sleep
                .get_or_insert_with(|| HeadTimer.sleep_until(Instant::now() + timeout));
            match sleep.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Instant::now()),
                Poll::Pending => {
                    if self.renew_after.is_some() {
                        // Polled again soon, as a connection is by its reads.
                        let waker = cx.waker().clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            waker.wake();
                        });
                    }
                    Poll::Pending
                }
            }
        }
    }

    /// `connection`'s end, within 10 s (a lost wake-up fails the test rather than hangs it).
    async fn ended(connection: impl Future<Output = Instant>) -> Instant {
        tokio::time::timeout(Duration::from_secs(10), connection)
            .await
            .expect("the head's sleep rang")
    }

    #[tokio::test]
    async fn a_heads_sleep_rings_at_its_deadline_through_the_connections_alarm() {
        let started = Instant::now();
        let rang = ended(HeadDeadline::new(Head {
            sleep: None,
            timeout: Duration::from_millis(100),
            renew_after: None,
        }))
        .await;
        assert!(rang >= started + Duration::from_millis(100));
    }

    /// The alarm set for the first head rings before the second head's deadline: the second
    /// head is not cut off then, but at its own deadline.
    #[tokio::test]
    async fn a_later_heads_deadline_is_kept_when_an_earlier_alarm_rings() {
        let started = Instant::now();
        let rang = ended(HeadDeadline::new(Head {
            sleep: None,
            timeout: Duration::from_millis(200),
            renew_after: Some(started + Duration::from_millis(100)),
        }))
        .await;
        assert!(
            rang >= started + Duration::from_millis(300),
            "rang after {:?}",
            rang - started
        );
    }

    #[tokio::test]
    async fn a_sleep_asked_for_outside_a_connection_is_tokios() {
        let started = Instant::now();
        HeadTimer.sleep(Duration::from_millis(50)).await;
        assert!(started.elapsed() >= Duration::from_millis(50));
        // Beyond what an `Instant` holds: pending, not a panic.
        let mut forever = HeadTimer.sleep(Duration::MAX);
        assert!(futures::poll!(forever.as_mut()).is_pending());
    }
}
