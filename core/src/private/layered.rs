//! Typed calls through the registry's middleware: the JSON views of a typed input and output
//! (found by autoref probes where the expansion names the concrete types), and the endpoints
//! that run the fn once the chain is through.
//!
//! A typed call made with a context whose env is a registry with middleware covering the
//! operation passes through that middleware. Its input and result stay Rust values: they are
//! serialized only when a middleware reads them ([`Call::input`](crate::middleware::Call::input),
//! [`Reply::envelope`](crate::middleware::Reply::envelope)), and decoded back only when a
//! middleware replaced them (which needs `Deserialize`; without it that call is
//! `EXECUTION_ERROR`).

use super::*;
use crate::middleware::{Call, CallInput, Endpoint, Next, Outcome, Reply, TypedInput, TypedReply};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use std::any::Any;
use std::sync::Arc;

type ToJson<T> = fn(&T) -> Result<Value, serde_json::Error>;
/// A type's JSON encoder and decoder, when it has them.
pub type JsonView<T> = (Option<ToJson<T>>, Option<FromJson<T>>);
/// A typed call through middleware, or its input and fn back for the plain path.
type Layered<T, I, F> = Result<T, (I, F)>;
/// A typed call's result.
type TypedResult<O> = Result<ResponseEnvelope<<O as TypedOperation>::Output>, CallError>;
type FromJson<T> = fn(Value) -> Result<T, serde_json::Error>;

/// Finds whether a type serializes and deserializes, where the expansion names it:
/// `(&ViewProbe::<T>::new()).ser_view()` (with `SerView` and `NoSerView` in scope).
pub struct ViewProbe<T>(PhantomData<T>);

impl<T> ViewProbe<T> {
    /// The probe of `T`.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

/// `T: Serialize`: its JSON encoder.
pub trait SerView<T> {
    /// The encoder.
    fn ser_view(&self) -> Option<ToJson<T>>;
}

impl<T: Serialize> SerView<T> for ViewProbe<T> {
    fn ser_view(&self) -> Option<ToJson<T>> {
        Some(|value| serde_json::to_value(value))
    }
}

/// Any other `T`: none.
pub trait NoSerView<T> {
    /// No encoder.
    fn ser_view(&self) -> Option<ToJson<T>>;
}

impl<T> NoSerView<T> for &ViewProbe<T> {
    fn ser_view(&self) -> Option<ToJson<T>> {
        None
    }
}

/// `T: DeserializeOwned`: its JSON decoder.
pub trait DeView<T> {
    /// The decoder.
    fn de_view(&self) -> Option<FromJson<T>>;
}

impl<T: DeserializeOwned> DeView<T> for ViewProbe<T> {
    fn de_view(&self) -> Option<FromJson<T>> {
        Some(|value| serde_json::from_value(value))
    }
}

/// Any other `T`: none.
pub trait NoDeView<T> {
    /// No decoder.
    fn de_view(&self) -> Option<FromJson<T>>;
}

impl<T> NoDeView<T> for &ViewProbe<T> {
    fn de_view(&self) -> Option<FromJson<T>> {
        None
    }
}

/// The [`TypedViews`] of the typed operation `$op`, found by the probes where the expansion
/// names it (the types are concrete there): `typed_views!(Self)`.
#[doc(hidden)]
#[macro_export]
macro_rules! __opkit_typed_views {
    ($op:ty) => {{
        #[allow(unused_imports)]
        use $crate::__private::{DeView as _, NoDeView as _, NoSerView as _, SerView as _};
        type __I = <$op as $crate::__private::TypedOperation>::Input;
        type __O = <$op as $crate::__private::TypedOperation>::Output;
        $crate::__private::TypedViews::<$op>::new(
            (
                (&$crate::__private::ViewProbe::<__I>::new()).ser_view(),
                (&$crate::__private::ViewProbe::<__I>::new()).de_view(),
            ),
            (
                (&$crate::__private::ViewProbe::<__O>::new()).ser_view(),
                (&$crate::__private::ViewProbe::<__O>::new()).de_view(),
            ),
        )
    }};
}

/// Whether a typed call's fn can run behind middleware, found where the expansion names it:
/// `unary_endpoint!(Op, run)`. Its future must be `Send` (an operation's always is: the
/// registered handler already requires it, and says so in one error when it is not), so
/// the typed call itself asks for nothing more and a fn that is not `Send` is reported once.
#[doc(hidden)]
#[macro_export]
macro_rules! __opkit_unary_endpoint {
    ($op:ty, $run:ident) => {{
        #[allow(unused_imports)]
        use $crate::__private::{NoEndpoint as _, UnaryEndpoint as _};
        (&$crate::__private::EndpointProbe::<$op, _>::new(&$run)).unary_endpoint()
    }};
}

/// [`__opkit_unary_endpoint`] for a subscription: `stream_endpoint!(Op, start)`.
#[doc(hidden)]
#[macro_export]
macro_rules! __opkit_stream_endpoint {
    ($op:ty, $start:ident) => {{
        #[allow(unused_imports)]
        use $crate::__private::{NoEndpoint as _, StreamEndpoint as _};
        (&$crate::__private::EndpointProbe::<$op, _>::new(&$start)).stream_endpoint()
    }};
}

/// The end of a typed call's chain, made from its fn (see [`EndpointProbe`]).
pub struct TypedEnd(Box<dyn Endpoint>);

/// Makes a typed call's [`TypedEnd`] from its fn and views.
pub type MakeEnd<O, F> = fn(F, TypedViews<O>) -> TypedEnd;

/// Finds whether the fn `F` of operation `O` can run behind middleware.
pub struct EndpointProbe<O, F>(PhantomData<Marker<O, F>>);

/// What [`EndpointProbe`] is about, without owning either.
type Marker<O, F> = (fn() -> O, fn() -> F);

impl<O, F> EndpointProbe<O, F> {
    /// The probe of `run`.
    pub fn new(_run: &F) -> Self {
        Self(PhantomData)
    }
}

/// A fn whose future is `Send`: its endpoint maker.
pub trait UnaryEndpoint<O: TypedOperation, F> {
    /// The maker.
    fn unary_endpoint(&self) -> Option<MakeEnd<O, F>>;
}

impl<O, F, Fut> UnaryEndpoint<O, F> for EndpointProbe<O, F>
where
    O: TypedOperation,
    F: FnOnce(O::Input, OperationContext) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Produced<O::Output>, CallError>> + Send + 'static,
{
    fn unary_endpoint(&self) -> Option<MakeEnd<O, F>> {
        Some(|run, views| TypedEnd(Box::new(UnaryEnd::<O, F> { run, views })))
    }
}

/// A fn whose stream is `Send`: its endpoint maker.
pub trait StreamEndpoint<O: TypedOperation, F> {
    /// The maker.
    fn stream_endpoint(&self) -> Option<MakeEnd<O, F>>;
}

impl<O, F, S> StreamEndpoint<O, F> for EndpointProbe<O, F>
where
    O: TypedOperation,
    F: FnOnce(O::Input, OperationContext) -> S + Send + 'static,
    S: Stream<Item = Result<Produced<O::Output>, CallError>> + Send + 'static,
{
    fn stream_endpoint(&self) -> Option<MakeEnd<O, F>> {
        Some(|start, views| TypedEnd(Box::new(StreamEnd::<O, F> { start, views })))
    }
}

/// Any other fn: none (its operation does not compile; the handler's check says why).
pub trait NoEndpoint<O: TypedOperation, F> {
    /// No maker.
    fn unary_endpoint(&self) -> Option<MakeEnd<O, F>> {
        None
    }
    /// No maker.
    fn stream_endpoint(&self) -> Option<MakeEnd<O, F>> {
        None
    }
}

impl<O: TypedOperation, F> NoEndpoint<O, F> for &EndpointProbe<O, F> {}

/// The JSON views of one typed operation's input and output.
pub struct TypedViews<O: TypedOperation> {
    input_to: Option<ToJson<O::Input>>,
    input_from: Option<FromJson<O::Input>>,
    output_to: Option<ToJson<O::Output>>,
    output_from: Option<FromJson<O::Output>>,
}

impl<O: TypedOperation> Clone for TypedViews<O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O: TypedOperation> Copy for TypedViews<O> {}

impl<O: TypedOperation> TypedViews<O> {
    /// The views the probes found.
    pub fn new(input: JsonView<O::Input>, output: JsonView<O::Output>) -> Self {
        Self {
            input_to: input.0,
            input_from: input.1,
            output_to: output.0,
            output_from: output.1,
        }
    }
}

fn cannot(id: &str, what: &str) -> CallError {
    CallError::execution(format!("typed call of `{id}`: {what}"))
}

/// A typed call's input, for [`Call::input`].
struct Held<O: TypedOperation> {
    value: O::Input,
    views: TypedViews<O>,
}

impl<O: TypedOperation> TypedInput for Held<O> {
    fn to_json(&self) -> Result<Value, CallError> {
        let encode = self.views.input_to.ok_or_else(|| {
            cannot(
                O::ID,
                "a middleware read the input, but its type does not implement `Serialize`",
            )
        })?;
        encode(&self.value)
            .map_err(|error| cannot(O::ID, &format!("the input does not serialize: {error}")))
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        Box::new(self.value)
    }
}

/// The input the fn gets: its own, or the one a middleware set, decoded.
fn take_input<O: TypedOperation>(
    input: CallInput,
    views: TypedViews<O>,
) -> Result<O::Input, CallError> {
    match input {
        CallInput::Typed { value, .. } => value
            .into_any()
            .downcast::<O::Input>()
            .map(|input| *input)
            .map_err(|_| cannot(O::ID, "the input changed type")),
        CallInput::Json(value) => {
            let decode = views.input_from.ok_or_else(|| {
                cannot(O::ID, "a middleware replaced the input, but its type does not implement `Deserialize`")
            })?;
            decode(value).map_err(|error| {
                cannot(
                    O::ID,
                    &format!("the input a middleware set does not decode: {error}"),
                )
            })
        }
    }
}

/// A typed call's envelope, for [`Reply::envelope`].
struct Made<O: TypedOperation> {
    envelope: ResponseEnvelope<O::Output>,
    views: TypedViews<O>,
}

impl<O: TypedOperation> TypedReply for Made<O> {
    fn to_json(&self) -> Result<ResponseEnvelope, CallError> {
        let encode = self.views.output_to.ok_or_else(|| {
            cannot(
                O::ID,
                "a middleware read the result, but its type does not implement `Serialize`",
            )
        })?;
        let data = encode(&self.envelope.data)
            .map_err(|error| cannot(O::ID, &format!("the result does not serialize: {error}")))?;
        Ok(ResponseEnvelope {
            data,
            meta: self.envelope.meta.clone(),
        })
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        Box::new(self.envelope)
    }
}

/// The typed envelope a reply holds: the fn's own, or the one a middleware made, decoded.
pub(super) fn typed_reply<O: TypedOperation>(
    reply: Reply,
    views: TypedViews<O>,
) -> Result<ResponseEnvelope<O::Output>, CallError> {
    match reply.into_typed() {
        Ok(value) => value
            .downcast::<ResponseEnvelope<O::Output>>()
            .map(|envelope| *envelope)
            .map_err(|_| cannot(O::ID, "the result changed type")),
        Err(envelope) => {
            let envelope = *envelope;
            let decode = views.output_from.ok_or_else(|| {
                cannot(O::ID, "a middleware replaced the result, but its type does not implement `Deserialize`")
            })?;
            let data = decode(envelope.data).map_err(|error| {
                cannot(
                    O::ID,
                    &format!("the result a middleware made does not decode: {error}"),
                )
            })?;
            Ok(ResponseEnvelope {
                data,
                meta: envelope.meta,
            })
        }
    }
}

/// The end of a typed unary call's chain: the fn, guarded.
struct UnaryEnd<O: TypedOperation, F> {
    run: F,
    views: TypedViews<O>,
}

impl<O, F, Fut> Endpoint for UnaryEnd<O, F>
where
    O: TypedOperation,
    F: FnOnce(O::Input, OperationContext) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Produced<O::Output>, CallError>> + Send + 'static,
{
    fn run(
        self: Box<Self>,
        input: CallInput,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<Outcome, CallError>> {
        let UnaryEnd { run, views } = *self;
        Box::pin(async move {
            let input = take_input(input, views)?;
            let produced = crate::registry::guard::call(O::ID, ctx, |ctx| run(input, ctx)).await?;
            let envelope = produced.into_envelope(O::shared_id());
            Ok(Outcome::Unary(Reply::typed(Box::new(Made::<O> {
                envelope,
                views,
            }))))
        })
    }
}

/// The end of a typed subscription's chain: the fn's stream, guarded.
struct StreamEnd<O: TypedOperation, F> {
    start: F,
    views: TypedViews<O>,
}

impl<O, F, S> Endpoint for StreamEnd<O, F>
where
    O: TypedOperation,
    F: FnOnce(O::Input, OperationContext) -> S + Send + 'static,
    S: Stream<Item = Result<Produced<O::Output>, CallError>> + Send + 'static,
{
    fn run(
        self: Box<Self>,
        input: CallInput,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<Outcome, CallError>> {
        let StreamEnd { start, views } = *self;
        let started = take_input(input, views).and_then(|input| {
            let id = O::shared_id();
            crate::registry::guard::stream(id.clone(), ctx, move |ctx| {
                Box::pin(start(input, ctx).map(move |item| {
                    let envelope = item?.into_envelope(id.clone());
                    Ok(Reply::typed(Box::new(Made::<O> { envelope, views })))
                }))
            })
        });
        Box::pin(std::future::ready(
            started.map(|items| Outcome::Stream(Box::pin(items))),
        ))
    }
}

/// The chain a typed call of `O` made with `ctx` passes through and the spec its middleware
/// sees; `None` when no middleware covers it (the plain typed path).
fn chain_for<O: TypedOperation>(
    ctx: &OperationContext,
) -> Option<(crate::middleware::Chain, Arc<OperationSpec>)> {
    let backend = ctx.env_backend()?;
    if !backend.has_layers() {
        return None;
    }
    let found = backend.layers_for(O::ID)?;
    let found = found.downcast::<crate::registry::LayersFor>().ok()?;
    let spec = found.spec.unwrap_or_else(|| Arc::new(O::spec()));
    let chain = found.layers.chain_for(O::ID, &spec)?;
    Some((chain, spec))
}

/// The call of `O` on `chain`, ending in `endpoint`.
fn start<O: TypedOperation>(
    ctx: &OperationContext,
    spec: Arc<OperationSpec>,
    input: O::Input,
    views: TypedViews<O>,
    endpoint: Box<dyn Endpoint>,
) -> Call {
    let input = CallInput::Typed {
        value: Box::new(Held::<O> {
            value: input,
            views,
        }),
        json: None,
    };
    Call::new(O::shared_id(), spec, ctx.clone(), input, endpoint)
}

/// A typed unary call through the middleware that covers it; `Err` gives the input and
/// the fn back for the plain path when none does (or the fn cannot run behind middleware).
pub(super) fn layered_unary<O, F>(
    ctx: &OperationContext,
    input: O::Input,
    views: TypedViews<O>,
    make: Option<MakeEnd<O, F>>,
    run: F,
) -> Layered<BoxFuture<'static, TypedResult<O>>, O::Input, F>
where
    O: TypedOperation,
{
    let (Some(make), Some((chain, spec))) = (make, chain_for::<O>(ctx)) else {
        return Err((input, run));
    };
    let call = start::<O>(ctx, spec, input, views, make(run, views).0);
    Ok(Box::pin(async move {
        let reply = Next::start(chain).run(call).await?.into_reply()?;
        typed_reply(reply, views)
    }))
}

/// A typed subscription through the middleware that covers it (as [`layered_unary`]).
pub(super) fn layered_stream<O, F>(
    ctx: &OperationContext,
    input: O::Input,
    views: TypedViews<O>,
    make: Option<MakeEnd<O, F>>,
    start_stream: F,
) -> Layered<BoxStream<'static, TypedResult<O>>, O::Input, F>
where
    O: TypedOperation,
{
    let (Some(make), Some((chain, spec))) = (make, chain_for::<O>(ctx)) else {
        return Err((input, start_stream));
    };
    let call = start::<O>(ctx, spec, input, views, make(start_stream, views).0);
    let items = async move {
        match Next::start(chain).run(call).await {
            Ok(outcome) => outcome
                .into_stream()
                .map(move |item| typed_reply(item?, views))
                .left_stream(),
            Err(error) => stream::once(async move { Err(error) }).right_stream(),
        }
    };
    Ok(Box::pin(stream::once(items).flatten()))
}
