//! The guard around a running handler: the one place where a panic, a deadline or a
//! cancellation becomes the call's error.
//!
//! The rule, for futures and streams alike:
//! - a call already cancelled or past its deadline does not start ([`start`]);
//! - a panic while starting or while polling is `EXECUTION_ERROR` with
//!   `details.panicked: true` ([`panicked`]);
//! - the deadline ends the call with `TIMEOUT`, a cancellation with `ABORTED`
//!   ([`Interrupted::error_for`](crate::bounds::Interrupted::error_for)).
//!
//! [`call`] runs a future under the rule and [`stream`] wraps a stream in it; [`future`] and
//! [`race`] guard a future already started, and [`finish`] reads the outcome of one poll
//! under `catch_unwind`. The registry's JSON handlers come through here; the two futures
//! written by hand that poll a handler in place (the registry's `Execution` and the typed
//! call's `TypedCall`) keep the same rule with [`panicked`], [`finish`] and
//! [`Bounds::watch`](crate::bounds::Bounds::watch) or [`race`].

use crate::bounds::{Bounds, Watch};
use crate::context::OperationContext;
use crate::error::CallError;
use futures::{FutureExt, Stream};
use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The message of a panic payload.
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&'static str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "a non-string payload"
    }
}

/// `EXECUTION_ERROR` for operation `id`, whose handler panicked with `payload`.
pub(crate) fn panicked(id: &str, payload: &(dyn Any + Send)) -> CallError {
    CallError::execution(format!(
        "operation `{id}` panicked: {}",
        panic_message(payload)
    ))
    .with_details(serde_json::json!({"panicked": true}))
}

/// Makes the future or stream `start(ctx)` for operation `id` under the rule: a call already
/// stopped does not start, and a panic while starting is an error. Returns what `start` made
/// and the bounds to run it under.
pub(crate) fn start<F, Started>(
    id: &str,
    ctx: OperationContext,
    start: F,
) -> Result<(Started, Bounds), CallError>
where
    F: FnOnce(OperationContext) -> Started,
{
    let bounds = ctx.bounds();
    start_within(id, ctx, bounds, start)
}

/// [`start`] with the bounds already taken (see `Operation::bounds`); `ctx` is the context,
/// or a borrow of it for a start that takes it only when it reads it.
#[inline]
pub(crate) fn start_within<C, F, Started>(
    id: &str,
    ctx: C,
    bounds: Bounds,
    start: F,
) -> Result<(Started, Bounds), CallError>
where
    F: FnOnce(C) -> Started,
{
    bounds.check().map_err(|stop| stop.error_for(id))?;
    let started = std::panic::catch_unwind(AssertUnwindSafe(|| start(ctx)))
        .map_err(|payload| panicked(id, &*payload))?;
    Ok((started, bounds))
}

/// Runs the future `start(ctx)` makes as operation `id`, guarded from start to end.
pub(crate) async fn call<T, F, Fut>(
    id: &'static str,
    ctx: OperationContext,
    start: F,
) -> Result<T, CallError>
where
    F: FnOnce(OperationContext) -> Fut,
    Fut: Future<Output = Result<T, CallError>>,
{
    let (started, bounds) = self::start(id, ctx, start)?;
    future(id, std::pin::pin!(started), bounds).await
}

/// Starts the stream `start(ctx)` makes as operation `id`, guarded from start to end: the
/// returned stream ends with an error on a panic while polling, the deadline or a
/// cancellation.
pub(crate) fn stream<S, F>(
    id: Arc<str>,
    ctx: OperationContext,
    start: F,
) -> Result<GuardedStream<S>, CallError>
where
    F: FnOnce(OperationContext) -> S,
{
    let bounds = ctx.bounds();
    stream_within(id, ctx, bounds, start)
}

/// [`stream`] with the bounds already taken (see `Operation::bounds`).
pub(crate) fn stream_within<S, F>(
    id: Arc<str>,
    ctx: OperationContext,
    bounds: Bounds,
    start: F,
) -> Result<GuardedStream<S>, CallError>
where
    F: FnOnce(OperationContext) -> S,
{
    let (items, bounds) = start_within(&id, ctx, bounds, start)?;
    Ok(GuardedStream::new(id, items, bounds))
}

/// An already started `future`, guarded. Without a deadline or a cancellation it is awaited
/// where the caller pinned it (no copy of a large user future); the race is only set up, in
/// a box so the common future stays small, when there is one.
pub(crate) async fn future<T, Fut, I>(
    id: I,
    future: Pin<&mut Fut>,
    bounds: Bounds,
) -> Result<T, CallError>
where
    I: AsRef<str>,
    Fut: Future<Output = Result<T, CallError>> + ?Sized,
{
    if bounds.is_unbounded() {
        let outcome = AssertUnwindSafe(future).catch_unwind().await;
        return finish(id.as_ref(), outcome);
    }
    Box::pin(race(id, future, bounds)).await
}

/// [`future`] for a call with a deadline or a cancellation, unboxed: `future` raced against
/// `bounds`. For callers that box it themselves.
pub(crate) async fn race<T, Fut, I>(
    id: I,
    future: Pin<&mut Fut>,
    bounds: Bounds,
) -> Result<T, CallError>
where
    I: AsRef<str>,
    Fut: Future<Output = Result<T, CallError>> + ?Sized,
{
    let outcome = bounds
        .run(AssertUnwindSafe(future).catch_unwind())
        .await
        .map_err(|stop| stop.error_for(id.as_ref()))?;
    finish(id.as_ref(), outcome)
}

/// The result of a handler run (or polled) under `catch_unwind`: a panic is an error.
pub(crate) fn finish<T>(
    id: &str,
    outcome: std::thread::Result<Result<T, CallError>>,
) -> Result<T, CallError> {
    outcome.unwrap_or_else(|payload| Err(panicked(id, &*payload)))
}

/// Items a guarded stream yields in a row, without waiting, between two polls of its watch.
const WATCH_EVERY: u8 = 16;

/// A stream of results guarded for operation `id` (made by [`stream`]): a panic while
/// polling, the deadline and a cancellation end it with a final error. Dropping it drops the
/// inner stream.
///
/// The watch (a cancellation listener, a timer) is polled before the items on every wake-up,
/// after the items whenever they are not ready (so that it holds the waker of the poll that
/// waits), and before every [`WATCH_EVERY`]th item of a run of items that were ready: a
/// stream that never waits still ends within that many items of its cancellation or
/// deadline, and its items do not each pay the listener's two locks.
pub(crate) struct GuardedStream<S> {
    id: Arc<str>,
    /// `None` once the stream has ended.
    items: Option<S>,
    /// The deadline and cancellation.
    watch: Watch,
    /// Items yielded since the watch was last polled; 0 after a poll that waited.
    ready_run: u8,
}

impl<S> GuardedStream<S> {
    fn new(id: Arc<str>, items: S, bounds: Bounds) -> Self {
        Self {
            id,
            items: Some(items),
            watch: bounds.watch(),
            ready_run: 0,
        }
    }

    /// Ends the stream with a final error.
    fn end_with<T>(&mut self, error: CallError) -> Poll<Option<Result<T, CallError>>> {
        self.items = None;
        Poll::Ready(Some(Err(error)))
    }
}

impl<S, T> Stream for GuardedStream<S>
where
    S: Stream<Item = Result<T, CallError>> + Unpin,
{
    type Item = Result<T, CallError>;

    // Inlined into the stream that polls it: a typed subscription's per-item cost is ~30%
    // higher when this call stays out of line (benches/compare.rs `opkit_typed_subscribe`).
    #[inline]
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(items) = this.items.as_mut() else {
            return Poll::Ready(None);
        };
        if this.ready_run.is_multiple_of(WATCH_EVERY) {
            this.ready_run = 0;
            if let Poll::Ready(stop) = this.watch.poll_interrupted(cx) {
                let error = stop.error_for(&this.id);
                return this.end_with(error);
            }
        }
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(items).poll_next(cx)));
        match polled {
            Ok(Poll::Ready(None)) => {
                this.items = None;
                Poll::Ready(None)
            }
            Ok(Poll::Ready(Some(item))) => {
                this.ready_run += 1;
                Poll::Ready(Some(item))
            }
            Ok(Poll::Pending) => {
                // The watch holds this poll's waker (the stream may have moved to another
                // task since it last waited), and the next poll is a wake-up.
                this.ready_run = 0;
                match this.watch.poll_interrupted(cx) {
                    Poll::Ready(stop) => {
                        let error = stop.error_for(&this.id);
                        this.end_with(error)
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
            Err(payload) => {
                let error = panicked(&this.id, &*payload);
                this.end_with(error)
            }
        }
    }
}
