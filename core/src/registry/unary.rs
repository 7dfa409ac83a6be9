//! A unary call: its handler started under the guard ([`start`]), and [`Execution`], the
//! future `execute` returns once the handler has started.
//!
//! [`Execution`] is written by hand rather than as an `async` block: a call polls its handler's
//! boxed future in place, each poll under `catch_unwind`, and finishes the result in the
//! pipeline; nothing is moved between states. A bounded call (a deadline or a cancellation)
//! does the same on its first poll, and only when the handler is still pending then runs it
//! inside the race of [`guard::race`], boxed once: a handler that is done at once (most are)
//! costs no race, no timer and no box. The order is the guard's: work that is done wins.

use super::handler::HandlerFn;
use super::operation::{HeldOperation, Operation};
use super::output::{DataForm, Output};
use super::{guard, pipeline};
use crate::bounds::Bounds;
use crate::context::OperationContext;
use crate::envelope::ResponseEnvelope;
use crate::error::CallError;
use crate::middleware::Reply;
use futures::future::BoxFuture;
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A started unary call: its handler's future, guarded, then the pipeline; holding its
/// operation as `O` ([`HeldOperation`]: shared, or lent by the caller).
pub(crate) struct Execution<O = Arc<Operation>> {
    state: State<O>,
}

enum State<O> {
    /// No deadline or cancellation: the handler's future, polled here.
    Running {
        operation: O,
        handler: HandlerFuture,
    },
    /// A deadline or a cancellation, before the first poll: the handler is polled once in
    /// place, then raced against them when it is pending.
    Bounded {
        operation: O,
        handler: HandlerFuture,
        bounds: Bounds,
    },
    /// The handler pending after its first poll, raced against its bounds ([`guard::race`]).
    Raced { operation: O, race: HandlerFuture },
    /// Refused before the handler started (not found, invalid input, already stopped).
    Refused(CallError),
    /// Through the application's middleware: the chain's future, boxed.
    Layered(BoxFuture<'static, Result<Reply, CallError>>),
    /// The output was returned.
    Done,
}

/// A handler's boxed future, as a unary [`Handler`](super::Handler) returns it.
pub(crate) type HandlerFuture = BoxFuture<'static, Result<Output, CallError>>;

/// Starts `operation`'s unary handler on `input` under the guard; run the returned future with
/// [`Execution::new`].
///
/// `form` is what the caller makes of an `#[operation]` fn's data: [`DataForm::Value`] for a
/// call finished with [`Execution::envelope`], [`DataForm::Typed`] for one finished as a
/// [`Reply`].
///
/// The handler borrows the context, and takes it out only when it reads it: the context of a
/// handler that does not is never moved (it is ~128 bytes, copied at each move).
pub(crate) fn start(
    operation: &Operation,
    input: Value,
    ctx: &mut OperationContext,
    form: DataForm,
) -> Result<(HandlerFuture, Bounds), CallError> {
    let HandlerFn::Unary(handler) = &operation.handler.0 else {
        unreachable!("kinds are checked at registration")
    };
    let bounds = operation.bounds(ctx);
    guard::start_within(&operation.id, ctx, bounds, |ctx| handler(input, ctx, form))
}

impl<O: HeldOperation> Execution<O> {
    /// The call of `operation` whose handler made `handler`, guarded by `bounds`.
    pub(crate) fn new(operation: O, handler: HandlerFuture, bounds: Bounds) -> Self {
        let state = if bounds.is_unbounded() {
            State::Running { operation, handler }
        } else {
            State::Bounded {
                operation,
                handler,
                bounds,
            }
        };
        Self { state }
    }

    /// A call run through middleware (`running` is the chain, ending in the handler).
    pub(crate) fn layered(running: BoxFuture<'static, Result<Reply, CallError>>) -> Self {
        Self {
            state: State::Layered(running),
        }
    }

    /// A call refused before its handler started.
    pub(crate) fn refused(error: CallError) -> Self {
        Self {
            state: State::Refused(error),
        }
    }

    /// Polls the call: the handler's output is finished with `finish`, a reply of the
    /// middleware chain with `from_reply`.
    // Inlined always: see `Serving::poll` (door.rs).
    #[inline(always)]
    fn poll_with<R>(
        &mut self,
        cx: &mut Context<'_>,
        finish: fn(&Operation, Output) -> Result<R, CallError>,
        from_reply: fn(Reply) -> Result<R, CallError>,
    ) -> Poll<Result<R, CallError>> {
        // Every field is `Unpin` (the handler's future is boxed), so the state is moved freely.
        let state = &mut self.state;
        let (operation, result) = match state {
            State::Running { operation, handler } => match poll_guarded(handler, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(outcome) => {
                    (operation.get(), guard::finish(&operation.get().id, outcome))
                }
            },
            State::Bounded {
                operation, handler, ..
            } => match poll_guarded(handler, cx) {
                Poll::Ready(outcome) => {
                    (operation.get(), guard::finish(&operation.get().id, outcome))
                }
                Poll::Pending => {
                    // Still running: from now on it races its deadline and cancellation (the
                    // race polls it again first, which registers their timer and listener).
                    let State::Bounded {
                        operation,
                        mut handler,
                        bounds,
                    } = std::mem::replace(state, State::Done)
                    else {
                        unreachable!("matched above")
                    };
                    let id = operation.get().id.clone();
                    *state = State::Raced {
                        operation,
                        race: Box::pin(
                            async move { guard::race(id, handler.as_mut(), bounds).await },
                        ),
                    };
                    return self.poll_with(cx, finish, from_reply);
                }
            },
            State::Raced { operation, race } => match race.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(result) => (operation.get(), result),
            },
            State::Layered(running) => {
                let output = std::task::ready!(running.as_mut().poll(cx));
                self.state = State::Done;
                return Poll::Ready(output.and_then(from_reply));
            }
            State::Refused(_) => {
                let State::Refused(error) = std::mem::replace(state, State::Done) else {
                    unreachable!("matched above")
                };
                return Poll::Ready(Err(error));
            }
            State::Done => panic!("an execute future was polled after it completed"),
        };
        let output = result.and_then(|output| finish(operation, output));
        self.state = State::Done;
        Poll::Ready(output)
    }
}

impl Execution {
    /// This call finished as the envelope `execute` returns: an `#[operation]` fn's data,
    /// serialized by its handler when it was started with [`DataForm::Value`], is wrapped
    /// in place, with no [`Reply`] in between.
    pub(crate) fn envelope(self) -> Enveloped {
        Enveloped(self)
    }
}

impl<O: HeldOperation> Future for Execution<O> {
    type Output = Result<Reply, CallError>;

    // Inlined always: see `Serving::poll` (door.rs).
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.poll_with(
            cx,
            |operation, output| Ok(pipeline::finish(operation, output)),
            Ok,
        )
    }
}

/// A call's [`Execution`] finished as an envelope ([`Execution::envelope`]).
pub(crate) struct Enveloped(Execution);

impl Future for Enveloped {
    type Output = Result<ResponseEnvelope, CallError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0
            .poll_with(cx, pipeline::finish_envelope, Reply::into_envelope)
    }
}

/// One poll of a handler's future, a panic in it caught.
fn poll_guarded(
    handler: &mut HandlerFuture,
    cx: &mut Context<'_>,
) -> Poll<std::thread::Result<Result<Output, CallError>>> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| handler.as_mut().poll(cx))) {
        Ok(Poll::Pending) => Poll::Pending,
        Ok(Poll::Ready(result)) => Poll::Ready(Ok(result)),
        Err(payload) => Poll::Ready(Err(payload)),
    }
}
