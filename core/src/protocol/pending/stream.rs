//! The stream a remote subscription's caller polls: the items the listener queued, ended by
//! the subscription's end, its deadline or cancellation, or its idle timeout.

use super::guard::PendingGuard;
use super::table::StreamEvent;
use crate::bounds::Watch;
use crate::envelope::ResponseEnvelope;
use crate::error::CallError;
use crate::trace::CallSpan;
use futures::Stream;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};

/// A remote subscription's envelopes. Dropping it while the subscription runs publishes
/// `call.aborted` (through its guard).
pub(super) struct RemoteStream {
    /// What the listener queued for this request, in the order the reply topic delivered it.
    pub(super) events: mpsc::UnboundedReceiver<StreamEvent>,
    /// The bytes queued in `events` (the listener adds, this stream subtracts what it yields).
    pub(super) queued: Arc<AtomicUsize>,
    /// `None` once the stream has ended.
    pub(super) guard: Option<PendingGuard>,
    /// The call's deadline and cancellation, polled before the events on every wake-up.
    pub(super) watch: Watch,
    /// Without a deadline: the longest wait for the next event, and its timer.
    pub(super) idle: Option<(Duration, Pin<Box<Sleep>>)>,
    /// The subscription's client span, open until the stream ends or is dropped.
    pub(super) span: Option<CallSpan>,
}

impl RemoteStream {
    /// Ends the stream; the guard removes the entry and, if still pending, aborts the request.
    fn end(
        &mut self,
        item: Option<Result<ResponseEnvelope, CallError>>,
    ) -> Poll<Option<<Self as Stream>::Item>> {
        self.guard = None;
        if let Some(mut span) = self.span.take() {
            match &item {
                Some(Err(error)) => span.finish(Err(error)),
                _ => span.finish(Ok(())),
            }
        }
        Poll::Ready(item)
    }
}

impl Stream for RemoteStream {
    type Item = Result<ResponseEnvelope, CallError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(guard) = &this.guard else {
            return Poll::Ready(None);
        };
        let operation_id = guard.operation_id.clone();
        if let Poll::Ready(stop) = this.watch.poll_interrupted(cx) {
            return this.end(Some(Err(stop.caller_error(&operation_id))));
        }
        match this.events.poll_recv(cx) {
            Poll::Ready(Some(StreamEvent::Item(envelope, cost))) => {
                this.queued.fetch_sub(cost, Ordering::AcqRel);
                if let Some((idle, sleep)) = this.idle.as_mut() {
                    sleep.as_mut().reset(Instant::now() + *idle);
                }
                return Poll::Ready(Some(Ok(envelope)));
            }
            Poll::Ready(Some(StreamEvent::End(None))) => return this.end(None),
            Poll::Ready(Some(StreamEvent::End(Some(error)))) => return this.end(Some(Err(error))),
            Poll::Ready(None) => {
                return this.end(Some(Err(CallError::transport(
                    "the PendingRequestMap closed before the subscription ended",
                ))));
            }
            Poll::Pending => {}
        }
        if let Some((idle, sleep)) = this.idle.as_mut()
            && sleep.as_mut().poll(cx).is_ready()
        {
            let error = CallError::timeout(format!(
                "`{operation_id}` sent nothing for {idle:?} (the subscription idle timeout)"
            ));
            return this.end(Some(Err(error)));
        }
        Poll::Pending
    }
}
