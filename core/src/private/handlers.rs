//! The handlers an `#[operation]` registers (unary and stream), the stream forwarding that
//! lets a stream fn borrow its context, and the typed `call` / `subscribe`.

use super::*;

/// The context the run fn of a query or mutation is given: the registry's own, moved in, or
/// a typed call's caller's, lent (the run fn copies it only when the fn reads it). One run fn
/// serves both paths, so an expansion has one, not a closure per path.
pub enum ContextArg<'a> {
    /// The registry's context for this call.
    Owned(OperationContext),
    /// The caller's context of a typed call.
    Lent(&'a OperationContext),
}

impl ContextArg<'_> {
    /// The context, owned: moved out, or copied from the caller's.
    pub fn into_owned(self) -> OperationContext {
        match self {
            Self::Owned(ctx) => ctx,
            Self::Lent(ctx) => ctx.clone(),
        }
    }
}

/// The JSON handler of a query or mutation: decode the input, `run` the fn, encode.
pub fn unary_handler<O, F, Fut>(codec: Codec<O::Input, O::Output>, run: F) -> Handler
where
    O: TypedOperation,
    F: for<'a> Fn(O::Input, ContextArg<'a>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Produced<O::Output>, CallError>> + Send + 'static,
{
    // A combinator rather than an `async` block: a block holding the fn's future and awaiting
    // it keeps two copies of it in its state, and the boxed handler future would be twice
    // as large. Each branch is boxed on its own, so the one for an invalid input is the same
    // type for every operation.
    let facts = codec.facts(O::ID);
    let run = HandlerFn::Unary(Arc::new(move |input, ctx: &mut OperationContext, form| {
        match codec.decode(O::ID, input) {
            // A fn that reads its context takes it; one that does not is lent it, and its run
            // fn (whose future holds no borrow) leaves it where it is.
            Ok(input) => Box::pin(map_once(
                if codec.reads_context {
                    run(input, ContextArg::Owned(ctx.take()))
                } else {
                    run(input, ContextArg::Lent(ctx))
                },
                move |produced| codec.encode(O::ID, produced?, form),
            )),
            Err(error) => invalid(error),
        }
    }));
    Handler(run, facts)
}

/// The handler future of a call whose input did not decode.
fn invalid(error: CallError) -> futures::future::BoxFuture<'static, Result<Output, CallError>> {
    Box::pin(std::future::ready(Err(error)))
}

/// The JSON handler of a subscription: decode the input, `start` the stream, encode items.
pub fn stream_handler<O, F, S>(codec: Codec<O::Input, O::Output>, start: F) -> Handler
where
    O: TypedOperation,
    F: Fn(O::Input, OperationContext) -> S + Send + Sync + 'static,
    S: Stream<Item = Result<Produced<O::Output>, CallError>> + Send + 'static,
{
    let facts = codec.facts(O::ID);
    let start = HandlerFn::Stream(Arc::new(move |input, ctx| {
        match codec.decode(O::ID, input) {
            Ok(input) => start(input, ctx)
                .map(move |item| codec.encode(O::ID, item?, DataForm::Typed))
                .boxed(),
            Err(error) => stream::once(async move { Err(error) }).boxed(),
        }
    }));
    Handler(start, facts)
}

/// A stream made by an `async fn` returning `impl Stream`: the future, then its items.
pub fn flatten_stream<Fut>(start: Fut) -> impl Stream<Item = <Fut::Output as Stream>::Item>
where
    Fut: Future,
    Fut::Output: Stream,
{
    stream::once(start).flatten()
}

/// A stream whose items a future `drive` sends through a [`Sink`]: lets the future own
/// what the stream borrows (the context a stream fn takes by reference).
pub fn forward_stream<T, F, Fut>(drive: F) -> impl Stream<Item = T>
where
    F: FnOnce(Sink<T>) -> Fut,
    Fut: Future<Output = ()>,
{
    let slot = Arc::new(parking_lot::Mutex::new(None));
    let driver = Box::pin(drive(Sink { slot: slot.clone() }));
    Forward {
        driver: Some(driver),
        slot,
    }
}

/// Drives `items` into `sink`, one item per poll of the outer stream.
pub async fn forward<S: Stream>(items: S, sink: Sink<S::Item>) {
    let mut items = std::pin::pin!(items);
    while let Some(item) = items.next().await {
        sink.send(item).await;
    }
}

/// Where a [`forward_stream`] driver puts its items.
pub struct Sink<T> {
    slot: Arc<parking_lot::Mutex<Option<T>>>,
}

impl<T> Sink<T> {
    async fn send(&self, item: T) {
        *self.slot.lock() = Some(item);
        // Give control back so the outer stream can hand the item out.
        let mut yielded = false;
        std::future::poll_fn(|_| {
            if std::mem::replace(&mut yielded, true) {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await;
    }
}

struct Forward<T, Fut> {
    driver: Option<std::pin::Pin<Box<Fut>>>,
    slot: Arc<parking_lot::Mutex<Option<T>>>,
}

impl<T, Fut: Future<Output = ()>> Stream for Forward<T, Fut> {
    type Item = T;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        let this = &mut *self;
        let Some(driver) = this.driver.as_mut() else {
            return std::task::Poll::Ready(None);
        };
        let finished = driver.as_mut().poll(cx).is_ready();
        // The driver returns Pending right after sending, so an item is handed out at once
        // (no wake-up needed); Pending without an item means it waits on the inner stream.
        let item = this.slot.lock().take();
        if finished {
            this.driver = None;
        }
        match item {
            Some(item) => std::task::Poll::Ready(Some(item)),
            None if finished => std::task::Poll::Ready(None),
            None => std::task::Poll::Pending,
        }
    }
}

impl<T, Fut> Unpin for Forward<T, Fut> {}

/// The caller's context with the operation's own timeout (`#[operation(timeout = "..")]`),
/// when `O` has one; `None` when the caller's context is the one a typed call runs with.
fn timed_context<O: TypedOperation>(ctx: &OperationContext) -> Option<OperationContext> {
    O::TIMEOUT_MS.map(|ms| {
        ctx.clone()
            .with_timeout(std::time::Duration::from_millis(ms))
    })
}

/// The typed call of a query or mutation: the fn runs directly (no JSON), guarded like a
/// registry call (panic → `EXECUTION_ERROR`, deadline → `TIMEOUT`, cancellation →
/// `ABORTED`); data is wrapped with `local_envelope`, an envelope passes through. A context
/// whose registry has middleware covering the operation runs it through that middleware
/// (see the `layered` module).
///
/// `run` makes the fn's future from a lent context (the run fn copies it only for a fn that
/// reads it), so a call that neither changes the caller's context (the operation's own
/// timeout, a recorded span) nor hands it to its fn copies none.
pub fn call_unary<O, F, Fut>(
    ctx: &OperationContext,
    input: O::Input,
    views: TypedViews,
    layered: Option<MakeEnd<F>>,
    run: F,
) -> impl Future<Output = Result<ResponseEnvelope<O::Output>, CallError>> + use<O, F, Fut>
where
    O: TypedOperation,
    F: for<'a> FnOnce(O::Input, ContextArg<'a>) -> Fut,
    Fut: Future<Output = Result<Produced<O::Output>, CallError>>,
{
    let timed = timed_context::<O>(ctx);
    let ctx = timed.as_ref().unwrap_or(ctx);
    let (input, run) = match super::layered::layered_unary::<O, F>(ctx, input, views, layered, run)
    {
        Ok(layered) => return TypedCall::layered(layered),
        Err(plain) => plain,
    };
    // Only a span something records is kept (none is built when nothing listens).
    let span = CallSpan::wanted()
        .then(|| CallSpan::start(SpanKind::Internal, "typed", O::ID, ctx))
        .filter(CallSpan::is_active)
        .map(|span| {
            span.record_kind(O::KIND);
            Box::new(span)
        });
    let traced = span.as_ref().map(|span| span.apply(ctx.clone()));
    let ctx = traced.as_ref().unwrap_or(ctx);
    TypedCall::<O, Fut>::start(
        move || run(input, ContextArg::Lent(ctx)),
        ctx.bounds(),
        span,
    )
}

/// The typed subscription: the fn's stream, guarded like a registry subscription, one
/// envelope per item (through the middleware that covers it, as [`call_unary`]).
pub fn subscribe_typed<O, F, S>(
    ctx: &OperationContext,
    input: O::Input,
    views: TypedViews,
    layered: Option<MakeEnd<F>>,
    start: F,
) -> impl Stream<Item = Result<ResponseEnvelope<O::Output>, CallError>> + use<O, F, S>
where
    O: TypedOperation,
    F: FnOnce(O::Input, OperationContext) -> S,
    S: Stream<Item = Result<Produced<O::Output>, CallError>>,
{
    let ctx = timed_context::<O>(ctx).unwrap_or_else(|| ctx.clone());
    let (input, start) =
        match super::layered::layered_stream::<O, F>(&ctx, input, views, layered, start) {
            Ok(layered) => return layered.right_stream(),
            Err(plain) => plain,
        };
    // Only a span something records is kept (none is built when nothing listens).
    let mut span = CallSpan::wanted()
        .then(|| CallSpan::start(SpanKind::Internal, "typed", O::ID, &ctx))
        .filter(CallSpan::is_active);
    let ctx = match &span {
        Some(span) => span.apply(ctx),
        None => ctx,
    };
    let started = {
        let _entered = span.as_ref().map(|span| span.span().enter());
        // Each item's envelope names the compiled-in id (no count to keep per item).
        let items_id = crate::envelope::OperationId::from_static(O::ID);
        crate::registry::guard::stream(O::shared_id(), ctx, move |ctx| {
            Box::pin(start(input, ctx).map(move |item| Ok(item?.into_envelope(items_id.clone()))))
        })
    };
    let plain = match (started, span.take()) {
        (Ok(items), Some(span)) => {
            span.record_kind(O::KIND);
            crate::registry::TracedStream::new(items, span)
                .left_stream()
                .left_stream()
        }
        (Ok(items), None) => items.right_stream().left_stream(),
        (Err(error), span) => {
            if let Some(mut span) = span {
                span.finish(Err(&error));
            }
            stream::once(async move { Err(error) }).right_stream()
        }
    };
    plain.left_stream()
}
