//! [`Bounds`]: the deadline ([`Deadline`]) and cancellation signal a call must respect, and
//! the one race between a call's work and them.
//!
//! Every place that waits on a call's behalf (the registry running a handler, the
//! [`PendingRequestMap`](crate::PendingRequestMap) waiting for a reply, the MCP and OpenAPI
//! imports waiting for a remote answer) stops the same way: when the cancellation signal
//! fires, or when the deadline passes, whichever comes first, and always lets work that has
//! already finished win. [`Bounds::run`] does it for a future, [`Bounds::watch`] for a
//! stream polled by hand. What a stop means (the error code and message) is the caller's
//! choice: the [`Interrupted`] value says only why.
//!
//! ```
//! use opkit::{Bounds, Interrupted, OperationContext};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let ctx = OperationContext::default().with_timeout(Duration::from_millis(10));
//! let never = std::future::pending::<()>();
//! assert_eq!(ctx.bounds().run(never).await, Err(Interrupted::TimedOut));
//! assert_eq!(ctx.bounds().run(async { 7 }).await, Ok(7));
//! # }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// How far from the coarse wall clock a deadline must be for [`Deadline::is_expired`] to
/// answer `false` without the precise clock: ten times the longest kernel tick (4 ms), so
/// that a coarse clock a few ticks late (a busy or idle-tickless machine) is still covered.
const COARSE_SLACK_MS: u64 = 40;

/// An absolute point in time by which a call must finish, in milliseconds since the Unix epoch
/// (the wire form of `call.requested.deadline`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline {
    /// The milliseconds plus one (saturating: `u64::MAX` and one less are the same deadline,
    /// 584 million years from 1970): never zero, so an `Option<Deadline>`, which every
    /// context holds, takes eight bytes rather than sixteen.
    after_epoch: std::num::NonZeroU64,
}

impl std::fmt::Debug for Deadline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deadline")
            .field("epoch_millis", &self.epoch_millis())
            .finish()
    }
}

impl Deadline {
    /// The deadline at `epoch_millis` milliseconds since the Unix epoch.
    pub const fn from_epoch_millis(epoch_millis: u64) -> Self {
        Self {
            after_epoch: std::num::NonZeroU64::MIN.saturating_add(epoch_millis),
        }
    }

    /// The deadline `timeout` from now.
    ///
    /// A timeout of a second or more (a server's default call timeout) is counted from the
    /// coarse wall clock ([`now_millis_coarse`](crate::envelope::now_millis_coarse)), which
    /// is read without touching the hardware clock: it may end at most one kernel tick (1 to
    /// 4 ms, under 0.4% of the timeout) early. A shorter one is counted from the precise
    /// clock.
    pub fn after(timeout: Duration) -> Self {
        let now = if timeout >= Duration::from_secs(1) {
            crate::envelope::now_millis_coarse()
        } else {
            crate::envelope::now_millis()
        };
        let timeout = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        Self::from_epoch_millis(now.saturating_add(timeout))
    }

    /// Milliseconds since the Unix epoch.
    pub const fn epoch_millis(self) -> u64 {
        self.after_epoch.get() - 1
    }

    /// Time left until the deadline (zero once it has passed).
    pub fn remaining(self) -> Duration {
        Duration::from_millis(
            self.epoch_millis()
                .saturating_sub(crate::envelope::now_millis()),
        )
    }

    /// `true` once the deadline has passed.
    ///
    /// A deadline more than 40 ms ahead of the coarse wall clock
    /// ([`now_millis_coarse`](crate::envelope::now_millis_coarse)) has not passed, and is
    /// answered without reading the precise clock (tens of ns on a virtual machine, once per
    /// call at its start): the coarse clock is never ahead of the precise one, and behind it
    /// by at most one kernel tick (1 to 4 ms). A nearer deadline is read precisely.
    pub fn is_expired(self) -> bool {
        let coarse = crate::envelope::now_millis_coarse();
        if self.epoch_millis() > coarse.saturating_add(COARSE_SLACK_MS) {
            return false;
        }
        self.remaining().is_zero()
    }

    /// The earlier of two deadlines.
    #[must_use]
    pub fn min(self, other: Self) -> Self {
        if other.after_epoch < self.after_epoch {
            other
        } else {
            self
        }
    }
}

/// Why [`Bounds`] stopped a call before its work finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Interrupted {
    /// The call's cancellation signal fired.
    Cancelled,
    /// The call's deadline passed.
    TimedOut,
}

impl Interrupted {
    /// The error of operation `id` stopped this way: `ABORTED` for a cancellation, `TIMEOUT`
    /// for a deadline.
    pub fn error_for(self, id: &str) -> crate::error::CallError {
        match self {
            Self::Cancelled => {
                crate::error::CallError::aborted(format!("operation `{id}` was cancelled"))
            }
            Self::TimedOut => crate::error::CallError::timeout(format!(
                "operation `{id}` did not finish before its deadline"
            )),
        }
    }

    /// The error a caller waiting on operation `id` gets when its call is stopped this way:
    /// `ABORTED` for a cancellation, `TIMEOUT` for a deadline.
    pub fn caller_error(self, id: &str) -> crate::error::CallError {
        match self {
            Self::Cancelled => {
                crate::error::CallError::aborted(format!("the call to `{id}` was cancelled"))
            }
            Self::TimedOut => crate::error::CallError::timeout(format!(
                "`{id}` did not answer before the call's deadline"
            )),
        }
    }
}

/// The deadline and cancellation signal of one call: see the [module docs](self).
///
/// Taken from a context with [`OperationContext::bounds`](crate::OperationContext::bounds);
/// cloning is cheap.
#[derive(Debug, Clone, Default)]
pub struct Bounds {
    deadline: Option<Deadline>,
    cancellation: Option<CancellationToken>,
}

impl Bounds {
    /// Bounds with this deadline and cancellation signal (either may be absent).
    pub fn new(deadline: Option<Deadline>, cancellation: Option<CancellationToken>) -> Self {
        Self {
            deadline,
            cancellation,
        }
    }

    /// The same bounds with `deadline` when none was set (an earlier one is kept).
    #[must_use]
    pub fn or_deadline(mut self, deadline: Deadline) -> Self {
        self.deadline.get_or_insert(deadline);
        self
    }

    /// The deadline, when there is one.
    pub fn deadline(&self) -> Option<Deadline> {
        self.deadline
    }

    /// `true` when neither a deadline nor a cancellation signal is set: nothing can stop the
    /// call, and [`run`](Self::run) awaits the future directly.
    pub fn is_unbounded(&self) -> bool {
        self.deadline.is_none() && self.cancellation.is_none()
    }

    /// `Err` when the call must not start: it was cancelled, or its deadline has passed.
    /// Cancellation is reported first.
    pub fn check(&self) -> Result<(), Interrupted> {
        if self
            .cancellation
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
        {
            return Err(Interrupted::Cancelled);
        }
        if self.deadline.is_some_and(Deadline::is_expired) {
            return Err(Interrupted::TimedOut);
        }
        Ok(())
    }

    /// `future`'s output, unless the call is cancelled or its deadline passes first.
    ///
    /// Polled in this order: the future (work that is done wins), the cancellation signal,
    /// the deadline. Without bounds the future is polled directly, with no timer.
    pub fn run<F: Future>(self, future: F) -> Run<F> {
        Run {
            future,
            bounds: Some(self),
            cancelled: None,
            passed: None,
        }
    }

    /// A timer and a cancellation listener to poll alongside a stream (see [`Watch`]).
    pub fn watch(self) -> Watch {
        Watch {
            deadline: self
                .deadline
                .map(|deadline| Box::pin(tokio::time::sleep(deadline.remaining()))),
            cancelled: self
                .cancellation
                .map(|token| Box::pin(token.cancelled_owned())),
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`Bounds::run`]: `future`'s output, or why the bounds stopped it.
    ///
    /// Written by hand rather than as an `async fn`, which kept `future` twice (its argument
    /// and the race it awaited) in a state every caller embeds. The timer and the listener
    /// live inside it (no box of their own) and start on the first poll, as the bounds are
    /// read then; a bound that is absent costs nothing.
    #[must_use = "futures do nothing unless polled"]
    pub struct Run<F> {
        #[pin]
        future: F,
        // The bounds until the first poll; `None` after.
        bounds: Option<Bounds>,
        #[pin]
        cancelled: Option<WaitForCancellationFutureOwned>,
        #[pin]
        passed: Option<tokio::time::Sleep>,
    }
}

impl<F: Future> Future for Run<F> {
    type Output = Result<F::Output, Interrupted>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        if let Some(Bounds {
            deadline,
            cancellation,
        }) = this.bounds.take()
        {
            if let Some(token) = cancellation {
                this.cancelled.set(Some(token.cancelled_owned()));
            }
            if let Some(deadline) = deadline {
                this.passed
                    .set(Some(tokio::time::sleep(deadline.remaining())));
            }
        }
        if let Some(cancelled) = this.cancelled.as_pin_mut()
            && cancelled.poll(cx).is_ready()
        {
            return Poll::Ready(Err(Interrupted::Cancelled));
        }
        if let Some(passed) = this.passed.as_pin_mut()
            && passed.poll(cx).is_ready()
        {
            return Poll::Ready(Err(Interrupted::TimedOut));
        }
        Poll::Pending
    }
}

impl<F> std::fmt::Debug for Run<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run").finish_non_exhaustive()
    }
}

/// [`Bounds`] made pollable, for a stream or future written by hand: poll
/// [`poll_interrupted`](Self::poll_interrupted) before (or after) the work on every wake-up.
///
/// The timer exists only when there is a deadline, the listener only when there is a
/// cancellation signal; each is boxed so the owner stays small and `Unpin`.
#[derive(Debug)]
pub struct Watch {
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    cancelled: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
}

impl Watch {
    /// `Ready` with the reason once the call is cancelled or its deadline passed (cancellation
    /// first); `Pending` otherwise, with the waker registered on both.
    pub fn poll_interrupted(&mut self, cx: &mut Context<'_>) -> Poll<Interrupted> {
        if let Some(cancelled) = self.cancelled.as_mut()
            && cancelled.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Interrupted::Cancelled);
        }
        if let Some(sleep) = self.deadline.as_mut()
            && sleep.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Interrupted::TimedOut);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn finished_work_wins_over_a_fired_signal() {
        let token = CancellationToken::new();
        token.cancel();
        let bounds = Bounds::new(None, Some(token));
        assert_eq!(bounds.check(), Err(Interrupted::Cancelled));
        assert_eq!(bounds.run(async { 1 }).await, Ok(1));
    }

    #[tokio::test]
    async fn cancellation_stops_pending_work() {
        let token = CancellationToken::new();
        let bounds = Bounds::new(
            Some(Deadline::after(Duration::from_secs(60))),
            Some(token.clone()),
        );
        let running = tokio::spawn(bounds.run(std::future::pending::<()>()));
        token.cancel();
        assert_eq!(running.await.unwrap(), Err(Interrupted::Cancelled));
    }

    #[tokio::test]
    async fn a_passed_deadline_is_reported_before_starting() {
        let bounds = Bounds::new(Some(Deadline::from_epoch_millis(1)), None);
        assert_eq!(bounds.check(), Err(Interrupted::TimedOut));
        assert_eq!(
            bounds.run(std::future::pending::<()>()).await,
            Err(Interrupted::TimedOut)
        );
    }

    #[test]
    fn expiry_is_exact_near_the_deadline_and_far_from_it() {
        let now = crate::envelope::now_millis();
        // Within the coarse clock's slack: read precisely, to the millisecond.
        assert!(Deadline::from_epoch_millis(now - 1).is_expired());
        assert!(Deadline::from_epoch_millis(now.saturating_sub(COARSE_SLACK_MS)).is_expired());
        // Far from it, either way (a minute: no stall of this thread reaches it).
        assert!(!Deadline::from_epoch_millis(now + 60_000).is_expired());
        assert!(!Deadline::from_epoch_millis(u64::MAX - 1).is_expired());
        assert!(Deadline::from_epoch_millis(0).is_expired());
        // What the shortcut rests on, in orders where a stall between the reads cannot
        // break it: the coarse clock is never ahead of the precise one, and a coarse read
        // after a precise one is within the slack of it.
        let (coarse, precise) = (
            crate::envelope::now_millis_coarse(),
            crate::envelope::now_millis(),
        );
        assert!(coarse <= precise, "{coarse} > {precise}");
        let (precise, coarse) = (
            crate::envelope::now_millis(),
            crate::envelope::now_millis_coarse(),
        );
        assert!(coarse + COARSE_SLACK_MS > precise, "{precise} - {coarse}");
    }

    #[test]
    fn an_earlier_deadline_is_kept() {
        let early = Deadline::from_epoch_millis(10);
        let bounds = Bounds::new(Some(early), None).or_deadline(Deadline::from_epoch_millis(20));
        assert_eq!(bounds.deadline(), Some(early));
        assert!(Bounds::default().or_deadline(early).deadline() == Some(early));
        assert!(Bounds::default().is_unbounded());
    }

    #[test]
    fn a_deadline_keeps_its_milliseconds_and_order_in_eight_bytes() {
        for millis in [0, 1, 1_700_000_000_123, u64::MAX - 1] {
            assert_eq!(Deadline::from_epoch_millis(millis).epoch_millis(), millis);
        }
        let (early, late) = (
            Deadline::from_epoch_millis(0),
            Deadline::from_epoch_millis(5),
        );
        assert!(early < late);
        assert_eq!(early.min(late), early);
        assert_eq!(
            format!("{late:?}"),
            "Deadline { epoch_millis: 5 }",
            "its Debug shows the milliseconds"
        );
        assert_eq!(std::mem::size_of::<Option<Deadline>>(), 8);
    }
}
