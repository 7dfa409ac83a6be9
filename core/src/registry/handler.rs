//! `Handler`: the type-erased function behind an operation, unary or streaming.

use super::output::{DataForm, Output};
use crate::context::OperationContext;
use crate::envelope::ResponseEnvelope;
use crate::error::CallError;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, Stream, StreamExt};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// A unary handler: the input, the context, and the form its caller takes the data of an
/// `#[operation]` fn in (a JSON handler's results are JSON whatever is asked).
///
/// The context is lent: a handler takes it out (`OperationContext::take`) only when it reads
/// it.
pub(crate) type UnaryFn = dyn Fn(Value, &mut OperationContext, DataForm) -> BoxFuture<'static, Result<Output, CallError>>
    + Send
    + Sync;
pub(crate) type StreamFn =
    dyn Fn(Value, OperationContext) -> BoxStream<'static, Result<Output, CallError>> + Send + Sync;

/// The function behind an operation, taking the JSON input and the context.
///
/// A handler's `Value` may itself be an envelope: the pipeline detects it and passes it through
/// ([`unary_envelope`](Self::unary_envelope) takes one as built). Cloning is cheap.
///
/// ```
/// use opkit::{CallError, Handler};
/// use serde_json::json;
/// let double = Handler::unary(|input, _ctx| async move {
///     let n = input["n"].as_i64().ok_or_else(|| CallError::execution("n is missing"))?;
///     Ok(json!(n * 2))
/// });
/// let count = Handler::stream(|_input, _ctx| {
///     futures::stream::iter((0..3).map(|i| Ok(json!(i))))
/// });
/// assert!(!double.is_stream() && count.is_stream());
/// ```
#[derive(Clone)]
pub struct Handler(pub(crate) HandlerFn, pub(crate) HandlerFacts);

/// What an `#[operation]`'s handler says of itself, read by `register_typed` only (a handler
/// registered with a spec of the caller's gets the defaults: the spec may describe another
/// output, and the registry then validates what the handler returns).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HandlerFacts {
    /// Its results are serialized from the type its output schema is derived from.
    pub(crate) output_from_type: bool,
    /// It reads its context beyond the call's deadline and cancellation.
    pub(crate) reads_context: bool,
    /// The id the fn was compiled with: its results' envelopes name it without a count when
    /// it is the id the operation is registered under.
    pub(crate) id: Option<&'static str>,
}

impl HandlerFacts {
    /// A handler written by hand: its JSON is checked, and it gets the registry's context.
    pub(crate) const DYNAMIC: Self = Self {
        output_from_type: false,
        reads_context: true,
        id: None,
    };
}

/// The function behind a [`Handler`]: its results are [`Output`]s, JSON or the typed data of
/// an `#[operation]` fn.
#[derive(Clone)]
pub(crate) enum HandlerFn {
    /// Returns one result (queries and mutations).
    Unary(Arc<UnaryFn>),
    /// Returns a stream of results (subscriptions).
    Stream(Arc<StreamFn>),
}

impl fmt::Debug for Handler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            HandlerFn::Unary(_) => "Handler::Unary",
            HandlerFn::Stream(_) => "Handler::Stream",
        })
    }
}

impl Handler {
    /// A handler for a query or mutation.
    pub fn unary<F, Fut>(f: F) -> Self
    where
        F: Fn(Value, OperationContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, CallError>> + Send + 'static,
    {
        Self::unary_of(f, Output::json)
    }

    /// A handler for a query or mutation that returns whole envelopes, with their meta (an
    /// import's: the remote answer's status and headers, an MCP result's content blocks).
    ///
    /// The envelope is passed on as built: what [`unary`](Self::unary) does with an envelope
    /// written as a `Value`, without writing it and reading it back. Its data is normalized
    /// and validated against the operation's output schema like any handler's, unless its
    /// meta reports an error.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use opkit::envelope::{ResponseMeta, http_envelope};
    /// use opkit::prelude::*;
    /// use serde_json::json;
    ///
    /// let registry = OperationRegistry::new();
    /// let remote = Handler::unary_envelope(|input, _ctx| async move {
    ///     // What an import answers: the remote's data and its HTTP status and headers.
    ///     Ok(http_envelope(input, 200, Default::default(), "application/json"))
    /// });
    /// let spec = OperationSpec::new("remote", "echo", OperationKind::Query);
    /// registry.register(spec, remote).unwrap();
    /// let envelope = registry
    ///     .execute("remote.echo", json!({"n": 1}), &OperationContext::new())
    ///     .await
    ///     .unwrap();
    /// assert_eq!(envelope.data, json!({"n": 1}));
    /// assert!(matches!(envelope.meta, ResponseMeta::Http(_)));
    /// # });
    /// ```
    pub fn unary_envelope<F, Fut>(f: F) -> Self
    where
        F: Fn(Value, OperationContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResponseEnvelope, CallError>> + Send + 'static,
    {
        Self::unary_of(f, Output::envelope)
    }

    /// A hand-written unary handler whose results `output` (a fn item: called directly) makes
    /// outputs of.
    fn unary_of<F, Fut, T, O>(f: F, output: O) -> Self
    where
        F: Fn(Value, OperationContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, CallError>> + Send + 'static,
        O: Fn(T) -> Output + Copy + Send + Sync + 'static,
    {
        Self(
            HandlerFn::Unary(Arc::new(move |input, ctx, _form| {
                f(input, ctx.take())
                    .map(move |result| result.map(output))
                    .boxed()
            })),
            HandlerFacts::DYNAMIC,
        )
    }

    /// A handler for a subscription.
    pub fn stream<F, S>(f: F) -> Self
    where
        F: Fn(Value, OperationContext) -> S + Send + Sync + 'static,
        S: Stream<Item = Result<Value, CallError>> + Send + 'static,
    {
        Self::stream_of(f, Output::json)
    }

    /// A handler for a subscription whose items are whole envelopes (see
    /// [`unary_envelope`](Self::unary_envelope)).
    pub fn stream_envelope<F, S>(f: F) -> Self
    where
        F: Fn(Value, OperationContext) -> S + Send + Sync + 'static,
        S: Stream<Item = Result<ResponseEnvelope, CallError>> + Send + 'static,
    {
        Self::stream_of(f, Output::envelope)
    }

    /// A hand-written stream handler whose items `output` (a fn item) makes outputs of.
    fn stream_of<F, S, T, O>(f: F, output: O) -> Self
    where
        F: Fn(Value, OperationContext) -> S + Send + Sync + 'static,
        S: Stream<Item = Result<T, CallError>> + Send + 'static,
        O: Fn(T) -> Output + Copy + Send + Sync + 'static,
    {
        Self(
            HandlerFn::Stream(Arc::new(move |input, ctx| {
                f(input, ctx).map(move |item| item.map(output)).boxed()
            })),
            HandlerFacts::DYNAMIC,
        )
    }

    /// `true` for stream handlers.
    pub fn is_stream(&self) -> bool {
        matches!(self.0, HandlerFn::Stream(_))
    }
}
