//! A subscription: its handler's stream started under the guard ([`start`]), each item
//! finished by the pipeline ([`PipelineStream`]), and the span that traces it
//! ([`TracedStream`]).

use super::guard::{self, GuardedStream};
use super::handler::HandlerFn;
use super::operation::Operation;
use super::output::Output;
use super::pipeline::finish;
use crate::context::OperationContext;
use crate::error::CallError;
use crate::middleware::{Reply, ReplyStream};
use futures::Stream;
use futures::stream::BoxStream;
use serde_json::Value;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

pub use crate::context::EnvelopeStream;

/// Starts `operation`'s stream handler on `input` under the guard and wraps it in the
/// pipeline: one reply per item (its data written once, by whoever reads it).
pub(crate) fn start(
    operation: Arc<Operation>,
    input: Value,
    mut ctx: OperationContext,
) -> Result<ReplyStream, CallError> {
    let HandlerFn::Stream(handler) = &operation.handler.0 else {
        unreachable!("kinds are checked at registration")
    };
    let bounds = operation.bounds(&mut ctx);
    let items = guard::stream_within(operation.id.clone(), ctx, bounds, |ctx| handler(input, ctx))?;
    Ok(Box::pin(PipelineStream::new(operation, items)))
}

/// Wraps a handler's stream: pipeline per item, panics and the deadline end it with an error,
/// cancellation ends it with `ABORTED`. Dropping it drops the handler's stream.
pub(crate) struct PipelineStream {
    operation: Arc<Operation>,
    items: GuardedStream<BoxStream<'static, Result<Output, CallError>>>,
}

impl PipelineStream {
    fn new(
        operation: Arc<Operation>,
        items: GuardedStream<BoxStream<'static, Result<Output, CallError>>>,
    ) -> Self {
        Self { operation, items }
    }
}

impl Stream for PipelineStream {
    type Item = Result<Reply, CallError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match Pin::new(&mut this.items).poll_next(cx) {
            Poll::Ready(Some(Ok(output))) => Poll::Ready(Some(Ok(finish(&this.operation, output)))),
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(error))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
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
