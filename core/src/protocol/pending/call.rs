//! Starting a call or a subscription: its entry (held by a [`PendingGuard`]) and the
//! `call.requested` it publishes.

use super::MapInner;
use super::guard::PendingGuard;
use super::stream::RemoteStream;
use super::table::{Entry, StreamSender};
use crate::bounds::{Deadline, Interrupted};
use crate::context::{EnvelopeStream, OperationContext};
use crate::envelope::ResponseEnvelope;
use crate::error::{CallError, ErrorCode};
use crate::protocol::pubsub::{Delivery, TransportError};
use crate::protocol::topics;
use crate::protocol::wire::RequestOut;
use crate::trace::{CallSpan, SpanKind};
use crate::trace_context::TraceContext;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

impl MapInner {
    /// Publishes `call.requested` (carrying `trace`, the call's span's or its context's);
    /// `OPERATION_NOT_FOUND` when the transport knows nobody serves the operation.
    async fn publish_request(
        &self,
        guard: &mut PendingGuard,
        input: Value,
        (ctx, trace): (&OperationContext, Option<&TraceContext>),
        deadline: Option<Deadline>,
        subscription: bool,
    ) -> Result<(), CallError> {
        let deadline = deadline.map(Deadline::epoch_millis);
        // Signed: built whole (the input moved in), the token binding every other field's
        // final value.
        #[cfg(feature = "signing")]
        let payload = match &self.identity_keys {
            Some(keys) => signed_request(keys, guard, input, (ctx, trace), deadline, subscription),
            None => unsigned_request(guard, &input, (ctx, trace), deadline, subscription),
        };
        #[cfg(not(feature = "signing"))]
        let payload = unsigned_request(guard, &input, (ctx, trace), deadline, subscription);
        let payload = payload.inspect_err(|_| guard.publish_abort = false)?;
        let topic = topics::TopicName::request(&guard.operation_id);
        match self.pubsub.publish(&topic, payload).await {
            Ok(receipt) if receipt.reached_nobody() => {
                guard.publish_abort = false;
                Err(CallError::new(
                    ErrorCode::OperationNotFound,
                    format!(
                        "no call handler serves `{}` on this bus (nobody listens on `{topic}`)",
                        guard.operation_id
                    ),
                ))
            }
            Ok(_) => Ok(()),
            Err(error) => Err(publish_failed(guard, &error)),
        }
    }
}

/// The bytes of the `call.requested` a caller publishes, written from what it holds.
fn unsigned_request(
    guard: &PendingGuard,
    input: &Value,
    (ctx, trace): (&OperationContext, Option<&TraceContext>),
    deadline: Option<u64>,
    subscription: bool,
) -> Result<bytes::Bytes, CallError> {
    let request = RequestOut {
        parent_request_id: ctx.parent_request_id(),
        identity: ctx.identity(),
        deadline,
        subscription,
        ..RequestOut::new(&guard.request_id, &guard.operation_id, input)
    }
    .with_trace(trace);
    Ok(request.to_bytes()?)
}

/// The bytes of the same request signed with `keys`: the owned event (the same JSON, pinned by
/// `wire/outgoing.rs`'s test), its `identityToken` set last.
#[cfg(feature = "signing")]
fn signed_request(
    keys: &crate::protocol::signing::IdentityKeys,
    guard: &PendingGuard,
    input: Value,
    (ctx, trace): (&OperationContext, Option<&TraceContext>),
    deadline: Option<u64>,
    subscription: bool,
) -> Result<bytes::Bytes, CallError> {
    use crate::protocol::wire::{CallEvent, CallRequested};
    let mut request = CallRequested {
        parent_request_id: ctx.parent_request_id().map(str::to_owned),
        identity: ctx.identity().cloned(),
        deadline,
        subscription,
        ..CallRequested::new(&*guard.request_id, &*guard.operation_id, input)
    }
    .with_trace_context(trace);
    request.identity_token = keys.sign_request(&request)?;
    Ok(CallEvent::Requested(request).to_bytes()?)
}

/// The error of a failed publish of `call.requested`, telling whether the request may have
/// run. When it may have (the transport cannot say it wrote nothing), the guard keeps
/// `publish_abort`, so `call.aborted` is published for the request when the call ends.
fn publish_failed(guard: &mut PendingGuard, error: &TransportError) -> CallError {
    let operation_id = &guard.operation_id;
    let delivery = error.delivery();
    let message = match delivery {
        Delivery::NotSent => {
            guard.publish_abort = false;
            format!(
                "the request for `{operation_id}` was not sent: {} (nothing ran: safe to retry)",
                error.message()
            )
        }
        Delivery::Unknown => format!(
            "could not publish the request for `{operation_id}`: {}; the request may have reached a handler and run (outcome unknown: call.aborted was sent for it; retry a mutation only if running it twice is harmless)",
            error.message()
        ),
    };
    CallError::transport(message).with_details(delivery.details())
}

/// The error of a call its bounds stopped while its request was being published: the
/// request may have left, so it may run (`call.aborted` is published for it).
fn stopped_sending(operation_id: &str, stop: Interrupted) -> CallError {
    let error = stop.caller_error(operation_id);
    let message = format!(
        "{} (it stopped while the request was being sent: the request may have reached a handler and run; call.aborted was sent for it)",
        error.message
    );
    CallError::new(error.code, message).with_details(Delivery::Unknown.details())
}

/// One call: its request published and its reply awaited within its bounds, under a client
/// span. `ctx` is owned (an env's call, boxed `'static`) or borrowed
/// ([`PendingRequestMap::call`](super::PendingRequestMap::call): the context is not copied).
///
/// Neither this nor [`call_in`] is an `async fn`: an `async fn` keeps each parameter twice in
/// its future (as captured and as bound in its body), the context's 128 bytes among them, and
/// the future is a caller's (held in its own, or boxed by an env).
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps its parameters twice in its future (see the docs)"
)]
pub(super) fn call<C>(
    inner: Arc<MapInner>,
    operation_id: Arc<str>,
    input: Value,
    ctx: C,
) -> impl Future<Output = Result<ResponseEnvelope, CallError>> + Send
where
    C: std::borrow::Borrow<OperationContext> + Send,
{
    async move {
        let ctx = ctx.borrow();
        let mut span = CallSpan::start(SpanKind::Client, "pending", &operation_id, ctx);
        // The span's trace goes into the request as it is written (`call_in`): nothing else
        // of the call reads the context's, which is not copied to carry it.
        let calling = call_in(&inner, &operation_id, input, ctx, &span);
        let result = span.run_in(calling).await;
        span.finish_with(&result);
        result
    }
}

#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps its parameters twice in its future (see `call`)"
)]
fn call_in<'a>(
    inner: &'a Arc<MapInner>,
    operation_id: &'a Arc<str>,
    input: Value,
    ctx: &'a OperationContext,
    span: &'a CallSpan,
) -> impl Future<Output = Result<ResponseEnvelope, CallError>> + Send + 'a {
    async move {
        let input = crate::limits::admit_input(input)?;
        let bounds = ctx
            .bounds()
            .or_deadline(Deadline::after(inner.default_timeout));
        bounds
            .check()
            .map_err(|stop| stop.caller_error(operation_id))?;
        let (sender, receiver) = oneshot::channel();
        let mut guard = inner.register(operation_id.clone(), Entry::Call(sender))?;
        span.record_request_id(&guard.request_id);
        // One bound over the publish and the wait for the reply: the call ends by its deadline
        // whatever the transport does. `sending` tells which of the two a stop interrupted.
        let mut sending = true;
        let deadline = bounds.deadline();
        let outcome = bounds
            .run(async {
                inner
                    .publish_request(
                        &mut guard,
                        input,
                        (ctx, span.trace().or(ctx.trace())),
                        deadline,
                        false,
                    )
                    .await?;
                sending = false;
                Ok::<_, CallError>(receiver.await)
            })
            .await;
        // When stopped, dropping the guard removes the entry and publishes `call.aborted`.
        let reply = match outcome {
            Ok(reply) => reply?,
            Err(stop) if sending => return Err(stopped_sending(operation_id, stop)),
            Err(stop) => return Err(stop.caller_error(operation_id)),
        };
        reply.unwrap_or_else(|_| {
            Err(CallError::transport(
                "the PendingRequestMap closed before the reply arrived",
            ))
        })
    }
}

pub(super) async fn subscribe(
    inner: Arc<MapInner>,
    operation_id: Arc<str>,
    input: Value,
    ctx: OperationContext,
) -> Result<EnvelopeStream, CallError> {
    let span = CallSpan::start(SpanKind::Client, "pending", &operation_id, &ctx);
    let ctx = span.apply(ctx);
    let entered = span.span().clone();
    let mut span = Some(span);
    let starting = subscribe_in(inner, operation_id, input, ctx, &mut span);
    let result = if entered.is_disabled() {
        starting.await
    } else {
        starting.instrument(entered).await
    };
    if let (Err(error), Some(span)) = (&result, span.as_mut()) {
        span.finish(Err(error));
    }
    result
}

async fn subscribe_in(
    inner: Arc<MapInner>,
    operation_id: Arc<str>,
    input: Value,
    ctx: OperationContext,
    span: &mut Option<CallSpan>,
) -> Result<EnvelopeStream, CallError> {
    let input = crate::limits::admit_input(input)?;
    let bounds = ctx.bounds();
    bounds
        .check()
        .map_err(|stop| stop.caller_error(&operation_id))?;
    let deadline = bounds.deadline();
    let (sender, receiver) = mpsc::unbounded_channel();
    let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let entry = Entry::Stream(StreamSender::new(
        sender,
        queued.clone(),
        operation_id.clone(),
    ));
    let mut guard = inner.register(operation_id.clone(), entry)?;
    if let Some(span) = span {
        span.record_request_id(&guard.request_id);
    }
    // The publish runs under the subscription's bounds: starting it ends by its deadline.
    let published = bounds
        .clone()
        .run(inner.publish_request(&mut guard, input, (&ctx, ctx.trace()), deadline, true))
        .await;
    match published {
        Ok(result) => result?,
        Err(stop) => return Err(stopped_sending(&operation_id, stop)),
    }
    let idle = match deadline {
        Some(_) => None,
        None => inner
            .idle_timeout
            .map(|idle| (idle, Box::pin(tokio::time::sleep(idle)))),
    };
    Ok(Box::pin(RemoteStream {
        events: receiver,
        queued,
        guard: Some(guard),
        watch: bounds.watch(),
        idle,
        span: span.take(),
    }))
}
