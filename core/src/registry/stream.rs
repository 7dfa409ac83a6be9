//! The subscription stream: each item of the handler's stream finished by the pipeline.

use super::operation::Operation;
use super::pipeline::finish;
use super::run::{panicked, stopped};
use crate::bounds::{Bounds, Watch};
use crate::envelope::ResponseEnvelope;
use crate::error::CallError;
use futures::Stream;
use futures::stream::BoxStream;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

pub use crate::context::EnvelopeStream;

/// Wraps a handler's stream: pipeline per item, panics and the deadline end it with an error,
/// cancellation ends it with `ABORTED`. Dropping it drops the handler's stream.
pub(crate) struct PipelineStream {
    operation: Arc<Operation>,
    items: GuardedStream<BoxStream<'static, Result<Value, CallError>>>,
}

impl PipelineStream {
    pub(crate) fn new(
        operation: Arc<Operation>,
        items: GuardedStream<BoxStream<'static, Result<Value, CallError>>>,
    ) -> Self {
        Self { operation, items }
    }
}

impl Stream for PipelineStream {
    type Item = Result<ResponseEnvelope, CallError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match Pin::new(&mut this.items).poll_next(cx) {
            Poll::Ready(Some(Ok(value))) => Poll::Ready(Some(Ok(finish(&this.operation, value)))),
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(error))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A stream of results guarded for operation `id`: a panic while polling, the deadline and a
/// cancellation end it with a final error. Dropping it drops the inner stream.
pub(crate) struct GuardedStream<S> {
    id: Arc<str>,
    /// `None` once the stream has ended.
    items: Option<S>,
    /// The deadline and cancellation, polled before the items on every wake-up.
    watch: Watch,
}

impl<S> GuardedStream<S> {
    pub(crate) fn new(id: Arc<str>, items: S, bounds: Bounds) -> Self {
        Self {
            id,
            items: Some(items),
            watch: bounds.watch(),
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

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(items) = this.items.as_mut() else {
            return Poll::Ready(None);
        };
        if let Poll::Ready(stop) = this.watch.poll_interrupted(cx) {
            let error = stopped(&this.id, stop);
            return this.end_with(error);
        }
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(items).poll_next(cx)));
        match polled {
            Ok(Poll::Ready(None)) => {
                this.items = None;
                Poll::Ready(None)
            }
            Ok(poll) => poll,
            Err(payload) => {
                let error = panicked(&this.id, &*payload);
                this.end_with(error)
            }
        }
    }
}

/// A stream polled inside its call's span, which it finishes when the stream ends: `ok`
/// after the last item, `error` with the code of an error item, `cancelled` when dropped
/// early.
pub(crate) struct TracedStream<S> {
    items: S,
    span: Option<crate::trace::CallSpan>,
}

impl<S> TracedStream<S> {
    pub(crate) fn new(items: S, span: crate::trace::CallSpan) -> Self {
        Self {
            items,
            span: Some(span),
        }
    }
}

impl<S, T> Stream for TracedStream<S>
where
    S: Stream<Item = Result<T, CallError>> + Unpin,
{
    type Item = Result<T, CallError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(span) = &mut this.span else {
            return Poll::Ready(None);
        };
        let polled = {
            let _entered = span.span().enter();
            Pin::new(&mut this.items).poll_next(cx)
        };
        match &polled {
            Poll::Ready(None) => span.finish(Ok(())),
            Poll::Ready(Some(Err(error))) => span.finish(Err(error)),
            _ => {}
        }
        polled
    }
}
