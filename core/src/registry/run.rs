//! Running a handler safely: input validation, panics, deadlines and cancellation.

use super::execution::HandlerFuture;
use super::handler::Handler;
use super::operation::Operation;
use super::stream::{EnvelopeStream, GuardedStream, PipelineStream};
use crate::bounds::{Bounds, Interrupted};
use crate::context::OperationContext;
use crate::error::CallError;
use futures::FutureExt;
use serde_json::Value;
use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

/// Checks `input` against the operation's compiled input schema.
pub(crate) fn validate_input(operation: &Operation, input: &Value) -> Result<(), CallError> {
    match operation.input() {
        Some(schema) => schema
            .validate(input)
            .map_err(|violations| CallError::validation("input", violations)),
        None => Ok(()),
    }
}

/// The message of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&'static str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "a non-string payload"
    }
}

/// `EXECUTION_ERROR` for a handler that panicked.
pub(crate) fn panicked(id: &str, payload: &(dyn Any + Send)) -> CallError {
    CallError::execution(format!(
        "operation `{id}` panicked: {}",
        panic_message(payload)
    ))
    .with_details(serde_json::json!({"panicked": true}))
}

/// Starts a unary handler; run the returned future with [`guard`] (see [`start_checked`]).
pub(crate) fn start_unary(
    operation: &Operation,
    input: Value,
    ctx: OperationContext,
) -> Result<(HandlerFuture, Bounds), CallError> {
    let Handler::Unary(handler) = &operation.handler else {
        unreachable!("kinds are checked at registration")
    };
    start_checked(&operation.id, ctx, |ctx| handler(input, ctx))
}

/// Runs the future `start(ctx)` makes as operation `id`, guarded (see [`start_checked`] and
/// [`guard`]).
///
/// Shared by the registry (JSON handlers) and typed calls of `#[operation]` fns.
pub(crate) async fn run_guarded<T, F, Fut>(
    id: &'static str,
    ctx: OperationContext,
    start: F,
) -> Result<T, CallError>
where
    F: FnOnce(OperationContext) -> Fut,
    Fut: Future<Output = Result<T, CallError>>,
{
    let (future, bounds) = start_checked(id, ctx, start)?;
    guard(id, std::pin::pin!(future), bounds).await
}

/// Makes the future or stream `start(ctx)` for operation `id`: a call already cancelled or past
/// its deadline does not start, and a panic while starting is `EXECUTION_ERROR`.
pub(crate) fn start_checked<F, Started>(
    id: &str,
    ctx: OperationContext,
    start: F,
) -> Result<(Started, Bounds), CallError>
where
    F: FnOnce(OperationContext) -> Started,
{
    let bounds = ctx.bounds();
    bounds.check().map_err(|stop| stopped(id, stop))?;
    let started = std::panic::catch_unwind(AssertUnwindSafe(|| start(ctx)))
        .map_err(|payload| panicked(id, &*payload))?;
    Ok((started, bounds))
}

/// The error for a call that `bounds` stopped.
pub(crate) fn stopped(id: &str, stop: Interrupted) -> CallError {
    stop.error_for(id)
}

/// `future` with its panics, deadline and cancellation turned into errors.
///
/// A panic while polling is `EXECUTION_ERROR`; the deadline ends the call with `TIMEOUT`, a
/// cancellation with `ABORTED`. Without either, the future is awaited directly; the race is
/// only set up (in a box, so the common future stays small) when there is one.
pub(crate) async fn guard<T, Fut, I>(
    id: I,
    future: Pin<&mut Fut>,
    bounds: Bounds,
) -> Result<T, CallError>
where
    I: AsRef<str>,
    Fut: Future<Output = Result<T, CallError>> + ?Sized,
{
    if bounds.is_unbounded() {
        // The future stays where the caller pinned it: no copy of a large user future.
        let outcome = AssertUnwindSafe(future).catch_unwind().await;
        return caught(id.as_ref(), outcome);
    }
    Box::pin(race(id, future, bounds)).await
}

/// [`guard`] for a call with a deadline or a cancellation, unboxed: `future` raced against
/// `bounds`, with its panics turned into errors. For callers that box it themselves.
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
        .map_err(|stop| stopped(id.as_ref(), stop))?;
    caught(id.as_ref(), outcome)
}

/// The result of a handler run under `catch_unwind`: a panic is `EXECUTION_ERROR`.
pub(crate) fn caught<T>(
    id: &str,
    outcome: std::thread::Result<Result<T, CallError>>,
) -> Result<T, CallError> {
    outcome.unwrap_or_else(|payload| Err(panicked(id, &*payload)))
}

/// Starts a stream handler and wraps it in the pipeline.
pub(crate) fn start_stream(
    operation: Arc<Operation>,
    input: Value,
    ctx: OperationContext,
) -> Result<EnvelopeStream, CallError> {
    let Handler::Stream(handler) = &operation.handler else {
        unreachable!("kinds are checked at registration")
    };
    let items = start_guarded_stream(operation.id.clone(), ctx, |ctx| handler(input, ctx))?;
    Ok(Box::pin(PipelineStream::new(operation, items)))
}

/// Starts the stream `start(ctx)` makes as operation `id`, guarded like [`run_guarded`]: a call
/// already cancelled or past its deadline does not start, a panic while starting is
/// `EXECUTION_ERROR`, and the returned stream ends with an error on a panic while polling, the
/// deadline or a cancellation.
///
/// Shared by the registry (JSON handlers) and typed subscriptions of `#[operation]` fns.
pub(crate) fn start_guarded_stream<S, F>(
    id: Arc<str>,
    ctx: OperationContext,
    start: F,
) -> Result<GuardedStream<S>, CallError>
where
    F: FnOnce(OperationContext) -> S,
{
    let (items, bounds) = start_checked(&id, ctx, start)?;
    Ok(GuardedStream::new(id, items, bounds))
}
