//! [`TypedCall`], the future of a typed `call` (`add::call(&ctx, ..)`): the fn's own future,
//! guarded in place.
//!
//! Written by hand rather than as an `async` block for the same reason as the registry's
//! `Execution`: the fn's future is made once, where the call starts, and polled where it lies;
//! nothing about it is moved between states, and the rare parts (a span something records, a
//! timer, a cancellation listener) are boxed so the common call stays small.
//!
//! The guard's rule holds as for a registry call: a call already stopped when first polled
//! does not run (its future is dropped unpolled; an `async fn`'s future does nothing until
//! polled), a panic is `EXECUTION_ERROR`, and work that is done wins over a deadline or a
//! cancellation: the fn is polled first on every wake-up, and the timer and listener are only
//! set up once it is pending.

use crate::bounds::{Bounds, Watch};
use crate::envelope::OperationId;
use crate::error::CallError;
use crate::registry::guard;
use crate::trace::CallSpan;
use crate::typed::TypedOperation;
use futures::future::BoxFuture;
use pin_project_lite::pin_project;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::layered::TypedResult;
use super::output::Produced;

pin_project! {
    /// The future of a typed call of operation `O` whose fn's future is `Fut`.
    #[project = StateProjection]
    pub(crate) enum TypedCall<O: TypedOperation, Fut> {
        /// The fn's future, guarded.
        Running {
            #[pin]
            handler: Fut,
            stage: Stage,
            // The call's span, when something records it.
            span: Option<Box<CallSpan>>,
            operation: PhantomData<fn() -> O>,
        },
        /// Through the application's middleware: the chain's future, boxed.
        Layered { running: BoxFuture<'static, TypedResult<O>> },
        /// Ended before the fn ran (it panicked while starting), or its result returned.
        Ended { error: Option<CallError> },
    }
}

/// Where a guarded call stands with its deadline and cancellation.
pub(crate) enum Stage {
    /// Neither: the fn's future is simply polled.
    Unbounded,
    /// Not polled yet; checked on the first poll (a call stopped by then does not run).
    Fresh(Bounds),
    /// Polled and pending: its timer and cancellation listener, polled after it.
    Watched(Watch),
}

impl<O: TypedOperation, Fut> TypedCall<O, Fut> {
    /// The call of the future `start` makes (at once, under `catch_unwind`), guarded by
    /// `bounds` and recorded by `span`.
    #[inline]
    pub(super) fn start(
        start: impl FnOnce() -> Fut,
        bounds: Bounds,
        mut span: Option<Box<CallSpan>>,
    ) -> Self {
        let started = {
            let _entered = span.as_ref().map(|span| span.span().enter());
            std::panic::catch_unwind(AssertUnwindSafe(start))
        };
        match started {
            Ok(handler) => Self::Running {
                handler,
                stage: if bounds.is_unbounded() {
                    Stage::Unbounded
                } else {
                    Stage::Fresh(bounds)
                },
                span,
                operation: PhantomData,
            },
            Err(payload) => {
                let error = guard::panicked(O::ID, &*payload);
                if let Some(span) = span.as_mut() {
                    span.finish(Err(&error));
                }
                Self::Ended { error: Some(error) }
            }
        }
    }

    /// The call through middleware (`running` is the chain, ending in the fn).
    pub(super) fn layered(running: BoxFuture<'static, TypedResult<O>>) -> Self {
        Self::Layered { running }
    }
}

impl<O, Fut> Future for TypedCall<O, Fut>
where
    O: TypedOperation,
    Fut: Future<Output = Result<Produced<O::Output>, CallError>>,
{
    type Output = TypedResult<O>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (result, span) = match self.as_mut().project() {
            StateProjection::Running {
                handler,
                stage,
                span,
                ..
            } => {
                let entered = span.as_ref().map(|span| span.span().enter());
                let result = match poll_guarded::<O, Fut>(handler, stage, cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(result) => result,
                };
                drop(entered);
                (result, span.take())
            }
            StateProjection::Layered { running } => {
                let result = std::task::ready!(running.as_mut().poll(cx));
                (result, None)
            }
            StateProjection::Ended { error } => match error.take() {
                Some(error) => (Err(error), None),
                None => panic!("a typed call was polled after it completed"),
            },
        };
        // The fn's future (or the chain) is dropped before the span records the end.
        self.set(Self::Ended { error: None });
        if let Some(mut span) = span {
            span.finish_with(&result);
        }
        Poll::Ready(result)
    }
}

/// One poll of the fn's future under the guard: `stage` says what may stop it.
fn poll_guarded<O, Fut>(
    handler: Pin<&mut Fut>,
    stage: &mut Stage,
    cx: &mut Context<'_>,
) -> Poll<TypedResult<O>>
where
    O: TypedOperation,
    Fut: Future<Output = Result<Produced<O::Output>, CallError>>,
{
    if let Stage::Fresh(bounds) = stage
        && let Err(stop) = bounds.check()
    {
        return Poll::Ready(Err(stop.error_for(O::ID)));
    }
    match std::panic::catch_unwind(AssertUnwindSafe(|| handler.poll(cx))) {
        Ok(Poll::Ready(result)) => {
            return Poll::Ready(
                result.map(|produced| produced.into_envelope(OperationId::from_static(O::ID))),
            );
        }
        Ok(Poll::Pending) => {}
        Err(payload) => return Poll::Ready(Err(guard::panicked(O::ID, &*payload))),
    }
    let watch = match stage {
        Stage::Unbounded => return Poll::Pending,
        Stage::Watched(watch) => watch,
        Stage::Fresh(bounds) => {
            *stage = Stage::Watched(std::mem::take(bounds).watch());
            let Stage::Watched(watch) = stage else {
                unreachable!("set above")
            };
            watch
        }
    };
    watch
        .poll_interrupted(cx)
        .map(|stop| Err(stop.error_for(O::ID)))
}
