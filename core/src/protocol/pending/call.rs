//! Starting a call or a subscription: its entry, the guard that removes the entry and aborts
//! the request when the caller gives up, and the `call.requested` it publishes.

use super::MapInner;
use super::stream::RemoteStream;
use super::table::{Entry, StreamSender};
use crate::bounds::{Deadline, Interrupted};
use crate::context::{EnvelopeStream, OperationContext};
use crate::envelope::ResponseEnvelope;
use crate::error::{CallError, ErrorCode};
use crate::protocol::pubsub::{Delivery, TransportError};
use crate::protocol::topics;
use crate::protocol::wire::{CallEvent, CallRequested};
use crate::trace::{CallSpan, SpanKind};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

/// Removes its entry when dropped, and publishes `call.aborted` when the entry was still
/// pending (the caller gave up: dropped, timed out or cancelled).
pub(super) struct PendingGuard {
    inner: Arc<MapInner>,
    /// The key of the entry this guard removes.
    seq: u64,
    request_id: Arc<str>,
    pub(super) operation_id: Arc<str>,
    /// Cleared when the request never reached a handler: there is nothing to abort.
    publish_abort: bool,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if self.inner.table.remove(self.seq).is_some() && self.publish_abort {
            let pubsub = self.inner.pubsub.clone();
            let topic = topics::abort_topic(&self.operation_id);
            let Ok(payload) = CallEvent::aborted(&*self.request_id).to_bytes() else {
                return;
            };
            let request_id = self.request_id.clone();
            self.inner.runtime.spawn(async move {
                if let Err(error) = pubsub.publish(&topic, payload).await {
                    tracing::warn!(%error, request_id = %request_id, "could not publish call.aborted");
                }
            });
        }
    }
}

impl MapInner {
    /// Registers a new request and returns its guard.
    fn register(
        self: &Arc<Self>,
        operation_id: &str,
        entry: Entry,
    ) -> Result<PendingGuard, CallError> {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        self.table.insert(seq, entry)?;
        Ok(PendingGuard {
            inner: self.clone(),
            seq,
            request_id: request_id(&self.caller_id, seq),
            operation_id: Arc::from(operation_id),
            publish_abort: true,
        })
    }

    /// Publishes `call.requested`; `OPERATION_NOT_FOUND` when the transport knows nobody
    /// serves the operation.
    async fn publish_request(
        &self,
        guard: &mut PendingGuard,
        input: Value,
        ctx: &OperationContext,
        deadline: Option<Deadline>,
    ) -> Result<(), CallError> {
        let deadline = deadline.map(Deadline::epoch_millis);
        let identity = ctx.identity().cloned();
        #[cfg(feature = "signing")]
        let identity_token = match (&self.identity_keys, &identity) {
            (Some(keys), Some(identity)) => keys
                .sign(identity, &guard.request_id, &guard.operation_id, deadline)
                .inspect_err(|_| guard.publish_abort = false)?,
            _ => None,
        };
        #[cfg(not(feature = "signing"))]
        let identity_token = None;
        let event = CallEvent::Requested(
            CallRequested {
                request_id: guard.request_id.to_string(),
                operation_id: guard.operation_id.to_string(),
                input,
                parent_request_id: ctx.parent_request_id().map(str::to_owned),
                identity,
                identity_token,
                deadline,
                traceparent: None,
                tracestate: None,
            }
            .with_trace_context(ctx.trace()),
        );
        let payload = event
            .to_bytes()
            .inspect_err(|_| guard.publish_abort = false)?;
        let topic = topics::request_topic(&guard.operation_id);
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
    let error = stopped(operation_id, stop);
    let message = format!(
        "{} (it stopped while the request was being sent: the request may have reached a handler and run; call.aborted was sent for it)",
        error.message
    );
    CallError::new(error.code, message).with_details(Delivery::Unknown.details())
}

fn timed_out(operation_id: &str) -> CallError {
    CallError::timeout(format!(
        "`{operation_id}` did not answer before the call's deadline"
    ))
}

fn aborted(operation_id: &str) -> CallError {
    CallError::aborted(format!("the call to `{operation_id}` was cancelled"))
}

/// The error for a call its [`Bounds`](crate::Bounds) stopped.
pub(super) fn stopped(operation_id: &str, stop: Interrupted) -> CallError {
    match stop {
        Interrupted::Cancelled => aborted(operation_id),
        Interrupted::TimedOut => timed_out(operation_id),
    }
}

pub(super) async fn call(
    inner: Arc<MapInner>,
    operation_id: String,
    input: Value,
    ctx: OperationContext,
) -> Result<ResponseEnvelope, CallError> {
    let mut span = CallSpan::start(SpanKind::Client, "pending", &operation_id, &ctx);
    let ctx = span.apply(ctx);
    let calling = call_in(inner, operation_id, input, ctx, &span);
    let result = span.run_in(calling).await;
    span.finish_with(&result);
    result
}

async fn call_in(
    inner: Arc<MapInner>,
    operation_id: String,
    input: Value,
    ctx: OperationContext,
    span: &CallSpan,
) -> Result<ResponseEnvelope, CallError> {
    let input = crate::limits::admit_input(input)?;
    let bounds = ctx
        .bounds()
        .or_deadline(Deadline::after(inner.default_timeout));
    bounds
        .check()
        .map_err(|stop| stopped(&operation_id, stop))?;
    let (sender, receiver) = oneshot::channel();
    let mut guard = inner.register(&operation_id, Entry::Call(sender))?;
    span.record_request_id(&guard.request_id);
    // One bound over the publish and the wait for the reply: the call ends by its deadline
    // whatever the transport does. `sending` tells which of the two a stop interrupted.
    let mut sending = true;
    let deadline = bounds.deadline();
    let outcome = bounds
        .run(async {
            inner
                .publish_request(&mut guard, input, &ctx, deadline)
                .await?;
            sending = false;
            Ok::<_, CallError>(receiver.await)
        })
        .await;
    // When stopped, dropping the guard removes the entry and publishes `call.aborted`.
    let reply = match outcome {
        Ok(reply) => reply?,
        Err(stop) if sending => return Err(stopped_sending(&operation_id, stop)),
        Err(stop) => return Err(stopped(&operation_id, stop)),
    };
    reply.unwrap_or_else(|_| {
        Err(CallError::transport(
            "the PendingRequestMap closed before the reply arrived",
        ))
    })
}

pub(super) async fn subscribe(
    inner: Arc<MapInner>,
    operation_id: String,
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
    operation_id: String,
    input: Value,
    ctx: OperationContext,
    span: &mut Option<CallSpan>,
) -> Result<EnvelopeStream, CallError> {
    let input = crate::limits::admit_input(input)?;
    let bounds = ctx.bounds();
    bounds
        .check()
        .map_err(|stop| stopped(&operation_id, stop))?;
    let deadline = bounds.deadline();
    let (sender, receiver) = mpsc::unbounded_channel();
    let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let entry = Entry::Stream(StreamSender::new(
        sender,
        queued.clone(),
        Arc::from(operation_id.as_str()),
    ));
    let mut guard = inner.register(&operation_id, entry)?;
    if let Some(span) = span {
        span.record_request_id(&guard.request_id);
    }
    // The publish runs under the subscription's bounds: starting it ends by its deadline.
    let published = bounds
        .clone()
        .run(inner.publish_request(&mut guard, input, &ctx, deadline))
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

/// `<callerId>:<seq>`, written without the formatting machinery (once per call).
fn request_id(caller_id: &str, seq: u64) -> Arc<str> {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    let mut rest = seq;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut id = String::with_capacity(caller_id.len() + 1 + digits.len() - start);
    id.push_str(caller_id);
    id.push(':');
    id.extend(digits[start..].iter().map(|&digit| char::from(digit)));
    Arc::from(id)
}

#[cfg(test)]
mod request_id_tests {
    #[test]
    fn request_ids_are_caller_colon_sequence() {
        assert_eq!(&*super::request_id("c", 0), "c:0");
        assert_eq!(&*super::request_id("abc", 907), "abc:907");
        assert_eq!(
            &*super::request_id("x", u64::MAX),
            format!("x:{}", u64::MAX).as_str()
        );
    }
}
