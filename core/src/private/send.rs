//! The `Send` checks of an `#[operation]`'s future or stream, with messages that say what
//! to change.

use super::*;

/// Probe telling whether what the fn makes (the future of a query or mutation, the stream of
/// a subscription) is `Send`, by deref specialization: `Runner::new(run).unary(codec)` is the
/// inherent method below when its bounds hold, else [`NotSendRunner::unary`] through `Deref`
/// (no trait to import). Only a `Send` run function is handed to [`unary_handler`] or
/// [`stream_handler`], so a future or stream that is not `Send` is reported once, by
/// [`SendFuture`] or [`SendStream`], at the user's fn.
pub struct Runner<O, F>(F, PhantomData<O>);

impl<O, F> Runner<O, F> {
    /// The run function of operation `O`'s handler.
    pub fn new(run: F) -> Self {
        Self(run, PhantomData)
    }
}

/// The verdict: what the run function makes is `Send`; the handler is built.
pub struct IsSend(Handler);
/// The verdict: it is not.
pub struct NotSend;

impl<O, F, Fut> Runner<O, F>
where
    O: TypedOperation,
    F: for<'a> Fn(O::Input, ContextArg<'a>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Produced<O::Output>, CallError>> + Send + 'static,
{
    /// Chosen when the run function's future is `Send`: the JSON handler of a query or
    /// mutation.
    pub fn unary(&self, codec: Codec<O::Input, O::Output>) -> IsSend {
        IsSend(unary_handler::<O, F, Fut>(codec, self.0.clone()))
    }
}

impl<O, F, S> Runner<O, F>
where
    O: TypedOperation,
    F: Fn(O::Input, OperationContext) -> S + Clone + Send + Sync + 'static,
    S: Stream<Item = Result<Produced<O::Output>, CallError>> + Send + 'static,
{
    /// Chosen when the run function's stream is `Send`: the JSON handler of a subscription.
    pub fn streaming(&self, codec: Codec<O::Input, O::Output>) -> IsSend {
        IsSend(stream_handler::<O, F, S>(codec, self.0.clone()))
    }
}

/// What a [`Runner`] derefs to: its verdict when the inherent methods' bounds do not hold.
pub struct NotSendRunner;

impl NotSendRunner {
    /// No handler: the future is not `Send`.
    pub fn unary<I, D>(&self, _: Codec<I, D>) -> NotSend {
        NotSend
    }

    /// No handler: the stream is not `Send`.
    pub fn streaming<I, D>(&self, _: Codec<I, D>) -> NotSend {
        NotSend
    }
}

impl<O, F> std::ops::Deref for Runner<O, F> {
    type Target = NotSendRunner;
    fn deref(&self) -> &NotSendRunner {
        &NotSendRunner
    }
}

impl IsSend {
    /// The handler of a query or mutation.
    pub fn future<O>(self) -> Handler {
        self.0
    }

    /// The handler of a subscription.
    pub fn stream<O>(self) -> Handler {
        self.0
    }
}

impl NotSend {
    /// Does not compile: the future of operation `O` is not `Send`.
    pub fn future<O: SendFuture>(self) -> Handler {
        O::unreachable()
    }

    /// Does not compile: the stream of operation `O` is not `Send`.
    pub fn stream<O: SendStream>(self) -> Handler {
        O::unreachable()
    }
}

/// Implemented by no operation: required of one whose future is not `Send`.
#[diagnostic::on_unimplemented(
    message = "the future returned by operation `{Self}` is not `Send`: hold no `Rc`, `RefCell` borrow or `std::sync::MutexGuard` across an `.await`",
    label = "operations run on a multi-threaded runtime, so their futures must be `Send`",
    note = "the fn holds a value that is not `Send` across an `.await`, or takes a parameter that is not `Send`; the next error names it",
    note = "use `Arc` instead of `Rc` and `tokio::sync::Mutex` for a lock held across an `.await`, or end the value's scope before the `.await` (`{{ .. }}` or `drop(value)`)"
)]
pub trait SendFuture {
    /// Never called.
    fn unreachable() -> Handler;
}

/// Implemented by no operation: required of one whose stream is not `Send`.
#[diagnostic::on_unimplemented(
    message = "the stream returned by operation `{Self}` is not `Send`: return `impl Stream<Item = T> + Send + 'static`, holding no `Rc` or `RefCell`",
    label = "operations run on a multi-threaded runtime, so their streams must be `Send`",
    note = "the stream (or the future of the `async fn` that makes it) holds a value that is not `Send` (an `Rc`, a `RefCell`, a `std::sync::MutexGuard`, ...); the next error names it",
    note = "declare the return type `impl Stream<Item = T> + Send + 'static` (or `BoxStream<'static, T>`): the compiler then checks the fn's body and points at the value; use `Arc` instead of `Rc`"
)]
pub trait SendStream {
    /// Never called.
    fn unreachable() -> Handler;
}

#[diagnostic::do_not_recommend]
impl SendFuture for Unimplemented {
    fn unreachable() -> Handler {
        unreachable!()
    }
}

#[diagnostic::do_not_recommend]
impl SendStream for Unimplemented {
    fn unreachable() -> Handler {
        unreachable!()
    }
}

/// Names what is not `Send` when [`NotSend::future`] or [`NotSend::stream`] fails: the compiler
/// explains this bound with the value and the `.await` involved.
pub fn assert_send<T: Send>(_: T) {}

/// [`assert_send`] for an `async fn` that makes a stream: its future and the stream.
pub fn assert_send_output<F>(_: F)
where
    F: Future + Send,
    F::Output: Send,
{
}

/// A value of any type, for type-checking a call that never runs.
pub fn never<T>() -> T {
    unreachable!("opkit: a type check, never called")
}
