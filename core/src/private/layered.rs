//! Typed calls through the registry's middleware: the JSON views of a typed input and output
//! (found by deref probes where the expansion names the concrete types), and the endpoints
//! that run the fn once the chain is through.
//!
//! A typed call made with a context whose env is a registry with middleware covering the
//! operation passes through that middleware. Its input and result stay Rust values: they are
//! serialized only when a middleware reads them ([`Call::input`](crate::middleware::Call::input),
//! [`Reply::envelope`](crate::middleware::Reply::envelope)), and decoded back only when a
//! middleware replaced them (which needs `Deserialize`; without it that call is
//! `EXECUTION_ERROR`).
//!
//! On this path the input, the result's data and the fn are erased (`Box<dyn Any + Send>`
//! and boxed closures), so the chain, the endpoints and their guards are compiled once in
//! opkit: an operation adds only its views, its endpoint maker and the final downcast.

use super::*;
use crate::middleware::{
    Call, CallInput, Endpoint, Next, Outcome, Reply, TypedInput, TypedOrJson, TypedReply,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use std::any::Any;
use std::sync::Arc;

/// A typed value (a typed call's input, or its result's data), erased: the middleware path
/// below is compiled once in opkit, not once per operation.
type AnyValue = Box<dyn Any + Send>;
/// What a typed fn produced, erased.
type AnyProduced = Produced<AnyValue>;
/// A typed call's envelope, its data erased.
type AnyEnvelope = ResponseEnvelope<AnyValue>;
type ToJson = fn(&(dyn Any + Send)) -> Result<Value, serde_json::Error>;
type FromJson = fn(Value) -> Result<AnyValue, serde_json::Error>;
/// A type's JSON encoder and decoder, when it has them (each applies to that type only).
pub type JsonView = (Option<ToJson>, Option<FromJson>);
/// A typed call through middleware, or its input and fn back for the plain path.
type Layered<T, I, F> = Result<T, (I, F)>;
/// A typed call's result.
pub(super) type TypedResult<O> = Result<ResponseEnvelope<<O as TypedOperation>::Output>, CallError>;

/// The value `value` holds, known to be a `T`.
fn expect<T: 'static>(value: &(dyn Any + Send)) -> &T {
    value
        .downcast_ref()
        .unwrap_or_else(|| unreachable!("opkit: a typed view applied to another type"))
}

/// Whether `value` holds a `T`.
fn holds<T: 'static>(value: &(dyn Any + Send)) -> bool {
    value.is::<T>()
}

/// The `T` `value` holds, known to be one.
fn take<T: 'static>(value: AnyValue) -> T {
    *value
        .downcast()
        .unwrap_or_else(|_| unreachable!("opkit: a typed input checked before"))
}

/// Finds whether a type serializes and deserializes, where the expansion names it, by deref
/// specialization: `ViewProbe::<T>::new().ser_view()` is the inherent method below when `T`
/// serializes, else [`NoView::ser_view`] through `Deref` (no trait to import).
pub struct ViewProbe<T>(PhantomData<T>);

impl<T> ViewProbe<T> {
    /// The probe of `T`.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T: Serialize + 'static> ViewProbe<T> {
    /// `T: Serialize`: its JSON encoder.
    pub fn ser_view(&self) -> Option<ToJson> {
        Some(|value| serde_json::to_value(expect::<T>(value)))
    }
}

impl<T: DeserializeOwned + Send + 'static> ViewProbe<T> {
    /// `T: DeserializeOwned`: its JSON decoder.
    pub fn de_view(&self) -> Option<FromJson> {
        Some(|value| serde_json::from_value::<T>(value).map(|value| Box::new(value) as AnyValue))
    }
}

/// What a [`ViewProbe`] derefs to: no view, for a type without the trait.
pub struct NoView;

impl NoView {
    /// No encoder.
    pub fn ser_view(&self) -> Option<ToJson> {
        None
    }

    /// No decoder.
    pub fn de_view(&self) -> Option<FromJson> {
        None
    }
}

impl<T> std::ops::Deref for ViewProbe<T> {
    type Target = NoView;
    fn deref(&self) -> &NoView {
        &NoView
    }
}

/// The [`TypedViews`] of the typed operation `$op`, found by the probes where the expansion
/// names it (the types are concrete there): `typed_views!(Self)`.
#[doc(hidden)]
#[macro_export]
macro_rules! __opkit_typed_views {
    ($op:ty) => {
        $crate::__private::TypedViews::new(
            (
                $crate::__private::ViewProbe::<<$op as $crate::__private::TypedOperation>::Input>::new().ser_view(),
                $crate::__private::ViewProbe::<<$op as $crate::__private::TypedOperation>::Input>::new().de_view(),
            ),
            (
                $crate::__private::ViewProbe::<<$op as $crate::__private::TypedOperation>::Output>::new().ser_view(),
                $crate::__private::ViewProbe::<<$op as $crate::__private::TypedOperation>::Output>::new().de_view(),
            ),
        )
    };
}

/// Whether a typed call's fn can run behind middleware, found where the expansion names it:
/// `unary_endpoint!(Op, run)`. Its future must be `Send` (an operation's always is: the
/// registered handler already requires it, and says so in one error when it is not), so
/// the typed call itself asks for nothing more and a fn that is not `Send` is reported once.
#[doc(hidden)]
#[macro_export]
macro_rules! __opkit_unary_endpoint {
    ($op:ty, $run:ident) => {
        $crate::__private::EndpointProbe::<$op, _>::new(&$run).unary_endpoint()
    };
}

/// [`__opkit_unary_endpoint`] for a subscription: `stream_endpoint!(Op, start)`.
#[doc(hidden)]
#[macro_export]
macro_rules! __opkit_stream_endpoint {
    ($op:ty, $start:ident) => {
        $crate::__private::EndpointProbe::<$op, _>::new(&$start).stream_endpoint()
    };
}

/// The end of a typed call's chain, made from its fn (see [`EndpointProbe`]): the fn with
/// its input and output erased.
pub struct TypedEnd {
    /// Whether an input is the fn's input type.
    accepts: fn(&(dyn Any + Send)) -> bool,
    run: EndRun,
}

/// A typed fn, erased: it takes an input [`TypedEnd::accepts`].
enum EndRun {
    Unary(Box<dyn FnOnce(AnyValue, OperationContext) -> AnyFuture + Send>),
    Stream(Box<dyn FnOnce(AnyValue, OperationContext) -> AnyStream + Send>),
}

type AnyFuture = BoxFuture<'static, Result<AnyProduced, CallError>>;
type AnyStream = BoxStream<'static, Result<AnyProduced, CallError>>;

/// Makes a typed call's [`TypedEnd`] from its fn.
pub type MakeEnd<F> = fn(F) -> TypedEnd;

/// Finds whether the fn `F` of operation `O` can run behind middleware, by deref
/// specialization (as [`ViewProbe`]): the inherent makers below when the fn's future or
/// stream is `Send`, else [`NoEndpoint`]'s.
pub struct EndpointProbe<O, F>(PhantomData<Marker<O, F>>);

/// What [`EndpointProbe`] is about, without owning either.
type Marker<O, F> = (fn() -> O, fn() -> F);

impl<O, F> EndpointProbe<O, F> {
    /// The probe of `run`.
    pub fn new(_run: &F) -> Self {
        Self(PhantomData)
    }
}

impl<O, F, Fut> EndpointProbe<O, F>
where
    O: TypedOperation,
    F: for<'a> FnOnce(O::Input, ContextArg<'a>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Produced<O::Output>, CallError>> + Send + 'static,
{
    /// A fn whose future is `Send`: its endpoint maker.
    pub fn unary_endpoint(&self) -> Option<MakeEnd<F>> {
        Some(|run| TypedEnd {
            accepts: holds::<O::Input>,
            run: EndRun::Unary(Box::new(move |input, ctx| {
                Box::pin(
                    run(take(input), ContextArg::Owned(ctx))
                        .map(|produced| produced.map(erase::<O::Output>)),
                )
            })),
        })
    }
}

impl<O, F, S> EndpointProbe<O, F>
where
    O: TypedOperation,
    F: FnOnce(O::Input, OperationContext) -> S + Send + 'static,
    S: Stream<Item = Result<Produced<O::Output>, CallError>> + Send + 'static,
{
    /// A fn whose stream is `Send`: its endpoint maker.
    pub fn stream_endpoint(&self) -> Option<MakeEnd<F>> {
        Some(|start| TypedEnd {
            accepts: holds::<O::Input>,
            run: EndRun::Stream(Box::new(move |input, ctx| {
                Box::pin(start(take(input), ctx).map(|item| item.map(erase::<O::Output>)))
            })),
        })
    }
}

/// What an [`EndpointProbe`] derefs to: any other fn has no maker (its operation does not
/// compile; the handler's check says why).
pub struct NoEndpoint<F>(PhantomData<fn() -> F>);

impl<F> NoEndpoint<F> {
    /// No maker.
    pub fn unary_endpoint(&self) -> Option<MakeEnd<F>> {
        None
    }

    /// No maker.
    pub fn stream_endpoint(&self) -> Option<MakeEnd<F>> {
        None
    }
}

impl<O, F> std::ops::Deref for EndpointProbe<O, F> {
    type Target = NoEndpoint<F>;
    fn deref(&self) -> &NoEndpoint<F> {
        &NoEndpoint(PhantomData)
    }
}

/// What a typed fn produced, its data erased.
fn erase<D: Send + 'static>(produced: Produced<D>) -> AnyProduced {
    match produced {
        Produced::Data(data) => Produced::Data(Box::new(data)),
        Produced::Envelope(envelope) => Produced::Envelope(ResponseEnvelope {
            data: Box::new(envelope.data),
            meta: envelope.meta,
        }),
    }
}

/// The typed envelope of operation `id` back from its erased form.
fn typed_data<D: 'static>(
    id: &str,
    envelope: AnyEnvelope,
) -> Result<ResponseEnvelope<D>, CallError> {
    let data = envelope
        .data
        .downcast::<D>()
        .map_err(|_| cannot(id, "the result changed type"))?;
    Ok(ResponseEnvelope {
        data: *data,
        meta: envelope.meta,
    })
}

/// The JSON views of one typed operation's input and output.
#[derive(Clone, Copy)]
pub struct TypedViews {
    input_to: Option<ToJson>,
    input_from: Option<FromJson>,
    output_to: Option<ToJson>,
    output_from: Option<FromJson>,
}

impl TypedViews {
    /// The views the probes found.
    pub fn new(input: JsonView, output: JsonView) -> Self {
        Self {
            input_to: input.0,
            input_from: input.1,
            output_to: output.0,
            output_from: output.1,
        }
    }
}

/// What the middleware path needs to know of a typed operation, without its type.
#[derive(Clone, Copy)]
struct Facts {
    id: &'static str,
    shared_id: fn() -> Arc<str>,
    spec: fn() -> OperationSpec,
}

impl Facts {
    fn of<O: TypedOperation>() -> Self {
        Self {
            id: O::ID,
            shared_id: O::shared_id,
            spec: O::spec,
        }
    }
}

fn cannot(id: &str, what: &str) -> CallError {
    CallError::execution(format!("typed call of `{id}`: {what}"))
}

/// A typed call's input, for [`Call::input`].
struct Held {
    id: &'static str,
    value: AnyValue,
    to_json: Option<ToJson>,
}

impl TypedInput for Held {
    fn to_json(&self) -> Result<Value, CallError> {
        let encode = self.to_json.ok_or_else(|| {
            cannot(
                self.id,
                "a middleware read the input, but its type does not implement `Serialize`",
            )
        })?;
        encode(&*self.value)
            .map_err(|error| cannot(self.id, &format!("the input does not serialize: {error}")))
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self.value
    }
}

/// The input the fn gets: its own, or the one a middleware set, decoded.
fn take_input(
    id: &str,
    input: CallInput,
    accepts: fn(&(dyn Any + Send)) -> bool,
    views: TypedViews,
) -> Result<AnyValue, CallError> {
    match input {
        CallInput::Typed { value, .. } => {
            let value = value.into_any();
            if accepts(&*value) {
                Ok(value)
            } else {
                Err(cannot(id, "the input changed type"))
            }
        }
        CallInput::Json(value) => {
            let decode = views.input_from.ok_or_else(|| {
                cannot(id, "a middleware replaced the input, but its type does not implement `Deserialize`")
            })?;
            decode(value).map_err(|error| {
                cannot(
                    id,
                    &format!("the input a middleware set does not decode: {error}"),
                )
            })
        }
    }
}

/// A typed call's envelope, for [`Reply::envelope`].
struct Made {
    id: &'static str,
    envelope: AnyEnvelope,
    to_json: Option<ToJson>,
}

impl TypedReply for Made {
    fn to_json(&self) -> Result<ResponseEnvelope, CallError> {
        let encode = self.to_json.ok_or_else(|| {
            cannot(
                self.id,
                "a middleware read the result, but its type does not implement `Serialize`",
            )
        })?;
        let data = encode(&*self.envelope.data)
            .map_err(|error| cannot(self.id, &format!("the result does not serialize: {error}")))?;
        Ok(ResponseEnvelope {
            data,
            meta: self.envelope.meta.clone(),
        })
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

/// The envelope a reply holds: the fn's own, or the one a middleware made, decoded.
fn typed_reply(id: &str, reply: Reply, views: TypedViews) -> Result<AnyEnvelope, CallError> {
    match reply.into_typed()? {
        TypedOrJson::Typed(value) => value
            .downcast::<Made>()
            .map(|made| made.envelope)
            .map_err(|_| cannot(id, "the result changed type")),
        TypedOrJson::Json(envelope) => {
            let decode = views.output_from.ok_or_else(|| {
                cannot(id, "a middleware replaced the result, but its type does not implement `Deserialize`")
            })?;
            let data = decode(envelope.data).map_err(|error| {
                cannot(
                    id,
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

/// The end of a typed call's chain: the fn (or the subscription's start), guarded, with what
/// the middleware path knows of its operation.
struct End {
    facts: Facts,
    end: TypedEnd,
    views: TypedViews,
}

impl Endpoint for End {
    fn run(
        self: Box<Self>,
        input: CallInput,
        ctx: OperationContext,
    ) -> BoxFuture<'static, Result<Outcome, CallError>> {
        let End {
            facts,
            end: TypedEnd { accepts, run },
            views,
        } = *self;
        let input = take_input(facts.id, input, accepts, views);
        let made = move |envelope| {
            Reply::typed(Box::new(Made {
                id: facts.id,
                envelope,
                to_json: views.output_to,
            }))
        };
        match run {
            EndRun::Unary(run) => Box::pin(async move {
                let input = input?;
                let produced =
                    crate::registry::guard::call(facts.id, ctx, |ctx| run(input, ctx)).await?;
                let envelope =
                    produced.into_envelope(crate::envelope::OperationId::from_static(facts.id));
                Ok(Outcome::Unary(made(envelope)))
            }),
            EndRun::Stream(start) => {
                let started = input.and_then(|input| {
                    let id = crate::envelope::OperationId::from_static(facts.id);
                    crate::registry::guard::stream((facts.shared_id)(), ctx, move |ctx| {
                        Box::pin(
                            start(input, ctx)
                                .map(move |item| Ok(made(item?.into_envelope(id.clone())))),
                        )
                    })
                });
                Box::pin(std::future::ready(
                    started.map(|items| Outcome::Stream(Box::pin(items))),
                ))
            }
        }
    }
}

/// The chain a typed call made with `ctx` passes through and the spec its middleware sees;
/// `None` when no middleware covers it (the plain typed path).
fn chain_for(
    ctx: &OperationContext,
    facts: Facts,
) -> Option<(crate::middleware::Chain, Arc<OperationSpec>)> {
    let (layers, spec) = crate::registry::layers_of(&**ctx.env_backend()?, facts.id)?;
    let spec = spec.unwrap_or_else(|| Arc::new((facts.spec)()));
    let chain = layers.chain_for(facts.id, &spec)?;
    Some((chain, spec))
}

/// The call on `chain`, ending in `end`.
fn start(
    ctx: &OperationContext,
    facts: Facts,
    spec: Arc<OperationSpec>,
    input: AnyValue,
    views: TypedViews,
    end: TypedEnd,
) -> Call {
    let input = CallInput::Typed {
        value: Box::new(Held {
            id: facts.id,
            value: input,
            to_json: views.input_to,
        }),
        json: None,
    };
    let endpoint = Box::new(End { facts, end, views });
    Call::new((facts.shared_id)(), spec, ctx.clone(), input, endpoint)
}

/// A typed unary call through the middleware that covers it; `Err` gives the input and
/// the fn back for the plain path when none does (or the fn cannot run behind middleware).
pub(super) fn layered_unary<O, F>(
    ctx: &OperationContext,
    input: O::Input,
    views: TypedViews,
    make: Option<MakeEnd<F>>,
    run: F,
) -> Layered<BoxFuture<'static, TypedResult<O>>, O::Input, F>
where
    O: TypedOperation,
{
    let facts = Facts::of::<O>();
    let (Some(make), Some((chain, spec))) = (make, chain_for(ctx, facts)) else {
        return Err((input, run));
    };
    let call = start(ctx, facts, spec, Box::new(input), views, make(run));
    // One box: the reply future below is compiled once, only this `map` per operation.
    Ok(Box::pin(unary_reply(chain, call, facts.id, views).map(
        |reply| reply.and_then(|envelope| typed_data(O::ID, envelope)),
    )))
}

/// The reply of a typed unary call on `chain`.
async fn unary_reply(
    chain: crate::middleware::Chain,
    call: Call,
    id: &'static str,
    views: TypedViews,
) -> Result<AnyEnvelope, CallError> {
    let reply = Next::start(chain).run(call).await?.into_reply()?;
    typed_reply(id, reply, views)
}

/// A typed subscription through the middleware that covers it (as [`layered_unary`]).
pub(super) fn layered_stream<O, F>(
    ctx: &OperationContext,
    input: O::Input,
    views: TypedViews,
    make: Option<MakeEnd<F>>,
    start_stream: F,
) -> Layered<BoxStream<'static, TypedResult<O>>, O::Input, F>
where
    O: TypedOperation,
{
    let facts = Facts::of::<O>();
    let (Some(make), Some((chain, spec))) = (make, chain_for(ctx, facts)) else {
        return Err((input, start_stream));
    };
    let call = start(ctx, facts, spec, Box::new(input), views, make(start_stream));
    Ok(Box::pin(stream_replies(chain, call, facts.id, views).map(
        |item| item.and_then(|envelope| typed_data(O::ID, envelope)),
    )))
}

/// The replies of a typed subscription on `chain`.
fn stream_replies(
    chain: crate::middleware::Chain,
    call: Call,
    id: &'static str,
    views: TypedViews,
) -> BoxStream<'static, Result<AnyEnvelope, CallError>> {
    let items = async move {
        match Next::start(chain).run(call).await {
            Ok(outcome) => outcome
                .into_stream()
                .map(move |item| typed_reply(id, item?, views))
                .left_stream(),
            Err(error) => stream::once(async move { Err(error) }).right_stream(),
        }
    };
    Box::pin(stream::once(items).flatten())
}
