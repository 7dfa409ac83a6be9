//! The subscription stream: each item of the handler's stream finished by the pipeline.

use super::operation::Operation;
use super::pipeline::finish;
use super::run::{aborted, panicked, timed_out};
use crate::context::Deadline;
use crate::envelope::ResponseEnvelope;
use crate::error::CallError;
use futures::Stream;
use futures::stream::BoxStream;
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// A subscription's results: one envelope (or error) per item of the handler's stream.
pub type EnvelopeStream =
    Pin<Box<dyn Stream<Item = Result<ResponseEnvelope, CallError>> + Send + 'static>>;

/// Wraps a handler's stream: pipeline per item, panics and the deadline end it with an error,
/// cancellation ends it with `ABORTED`. Dropping it drops the handler's stream.
pub(crate) struct PipelineStream {
    operation: Arc<Operation>,
    /// `None` once the stream has ended.
    items: Option<BoxStream<'static, Result<Value, CallError>>>,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    cancelled: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
}

impl PipelineStream {
    pub(crate) fn new(
        operation: Arc<Operation>,
        items: BoxStream<'static, Result<Value, CallError>>,
        deadline: Option<Deadline>,
        cancellation: Option<CancellationToken>,
    ) -> Self {
        Self {
            operation,
            items: Some(items),
            deadline: deadline.map(|deadline| Box::pin(tokio::time::sleep(deadline.remaining()))),
            cancelled: cancellation.map(|token| Box::pin(token.cancelled_owned())),
        }
    }

    /// Ends the stream with a final error.
    fn end_with(&mut self, error: CallError) -> Poll<Option<<Self as Stream>::Item>> {
        self.items = None;
        Poll::Ready(Some(Err(error)))
    }
}

impl Stream for PipelineStream {
    type Item = Result<ResponseEnvelope, CallError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(items) = this.items.as_mut() else {
            return Poll::Ready(None);
        };
        if let Some(cancelled) = this.cancelled.as_mut()
            && cancelled.as_mut().poll(cx).is_ready()
        {
            let error = aborted(&this.operation.id);
            return this.end_with(error);
        }
        if let Some(sleep) = this.deadline.as_mut()
            && sleep.as_mut().poll(cx).is_ready()
        {
            let error = timed_out(&this.operation.id);
            return this.end_with(error);
        }
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| items.as_mut().poll_next(cx)));
        match polled {
            Ok(Poll::Ready(Some(Ok(value)))) => {
                Poll::Ready(Some(Ok(finish(&this.operation, value))))
            }
            Ok(Poll::Ready(Some(Err(error)))) => Poll::Ready(Some(Err(error))),
            Ok(Poll::Ready(None)) => {
                this.items = None;
                Poll::Ready(None)
            }
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => {
                let error = panicked(&this.operation.id, &*payload);
                this.end_with(error)
            }
        }
    }
}
