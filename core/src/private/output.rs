//! The output side of an `#[operation]`: the shapes a fn may return (plain data, an envelope,
//! a `Result`) and the probes that tell them apart.

use super::*;
use crate::envelope::OperationId;

/// Output shape marker: plain data `T`.
pub struct Plain;
/// Output shape marker: a `ResponseEnvelope<T>`, passed through.
pub struct Envelope;
/// Output shape marker: a `Result<T, E>` whose `Ok` has shape `S`.
pub struct Fallible<S>(PhantomData<S>);

/// What a function returned, before it becomes an envelope.
pub enum Produced<T> {
    /// Data, to be wrapped in a local envelope.
    Data(T),
    /// An envelope, passed through.
    Envelope(ResponseEnvelope<T>),
}

impl<T> Produced<T> {
    /// The envelope: data is wrapped with `local_envelope`, an envelope passes through.
    pub fn into_envelope(self, id: impl Into<OperationId>) -> ResponseEnvelope<T> {
        match self {
            Self::Data(data) => local_envelope(data, id),
            Self::Envelope(envelope) => envelope,
        }
    }
}

/// What the run function of operation `O` makes for a query or mutation: a future of what
/// the fn produced. Named once here, so each expansion writes `impl RunFuture<op>` rather
/// than the whole `Future<Output = ..>` bound.
pub trait RunFuture<O: TypedOperation>:
    Future<Output = Result<Produced<O::Output>, CallError>>
{
}

impl<O, F> RunFuture<O> for F
where
    O: TypedOperation,
    F: Future<Output = Result<Produced<O::Output>, CallError>>,
{
}

/// [`RunFuture`] of a subscription: a stream of what the fn produced.
pub trait RunStream<O: TypedOperation>:
    Stream<Item = Result<Produced<O::Output>, CallError>>
{
}

impl<O, S> RunStream<O> for S
where
    O: TypedOperation,
    S: Stream<Item = Result<Produced<O::Output>, CallError>>,
{
}

/// A function's return type (or stream item type) in one of the shapes opkit understands.
///
/// The macro picks `Shape` from how the type is written: a last path segment `Result<..>` is
/// [`Fallible`], `ResponseEnvelope` is [`Envelope`], anything else [`Plain`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned by an operation",
    label = "unsupported output type",
    note = "an operation returns `T`, `Result<T, E>`, `opkit::ResponseEnvelope<T>` or `()`",
    note = "a return type whose last path segment is `Result<..>` is read as `std::result::Result` and one named `ResponseEnvelope` as `opkit::ResponseEnvelope`; rename a type of yours that shares those names"
)]
pub trait OperationOutput<Shape>: Sized {
    /// The data type.
    type Data;
    /// The error the fn may return (`Infallible` for plain data and envelopes).
    type Error;
    /// Splits the value into data or envelope, or the error, which `convert` turns into the
    /// call's error.
    fn into_produced<C>(self, convert: C) -> Result<Produced<Self::Data>, CallError>
    where
        C: FnOnce(Self::Error) -> CallError;
}

impl<T> OperationOutput<Plain> for T {
    type Data = T;
    type Error = std::convert::Infallible;
    fn into_produced<C>(self, _: C) -> Result<Produced<T>, CallError> {
        Ok(Produced::Data(self))
    }
}

impl<T> OperationOutput<Envelope> for ResponseEnvelope<T> {
    type Data = T;
    type Error = std::convert::Infallible;
    fn into_produced<C>(self, _: C) -> Result<Produced<T>, CallError> {
        Ok(Produced::Envelope(self))
    }
}

/// The error `E` is converted by the caller (see [`ErrorProbe`]); the error of a nested
/// `Result` in `T` must convert into `CallError`.
impl<T, E, S> OperationOutput<Fallible<S>> for Result<T, E>
where
    T: OperationOutput<S>,
    T::Error: Into<CallError>,
{
    type Data = T::Data;
    type Error = E;
    fn into_produced<C>(self, convert: C) -> Result<Produced<T::Data>, CallError>
    where
        C: FnOnce(E) -> CallError,
    {
        match self {
            Ok(value) => value.into_produced(Into::into),
            Err(error) => Err(convert(error)),
        }
    }
}

/// Output data must serialize.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the output of an operation: it does not implement `serde::Serialize`",
    label = "the operation's result is serialized from this type",
    note = "derive it on your type: `#[derive(serde::Serialize, schemars::JsonSchema)]`"
)]
pub trait OutputSerialize: Serialize {}
impl<T: Serialize> OutputSerialize for T {}

/// Output data must describe itself as a JSON Schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the output of an operation: it does not implement `schemars::JsonSchema`",
    label = "the operation's output schema is derived from this type",
    note = "derive it on your type: `#[derive(serde::Serialize, schemars::JsonSchema)]`",
    note = "for a type from another crate, enable the feature that implements `JsonSchema` for it: schemars' own (e.g. `schemars = {{ version = \"1\", features = [\"uuid1\"] }}` for `uuid::Uuid`, `chrono04` for chrono, `url2` for `url::Url`) or the type's crate's `schemars` feature, where it has one; or wrap it in a type of yours"
)]
pub trait OutputSchema: JsonSchema {}
impl<T: JsonSchema> OutputSchema for T {}

/// Probe for output types written as plain data that are really `Result` or `ResponseEnvelope`
/// behind an alias, by deref specialization: `Probe::<T>::new().verdict()` is the inherent
/// method below when `T` is [`Shaped`], else [`NotShaped::verdict`] through `Deref` (no trait to
/// import, so an expansion names no probe trait).
pub struct Probe<T>(PhantomData<T>);

impl<T> Probe<T> {
    /// A probe for `T`.
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T> Default for Probe<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Implemented by `Result` and `ResponseEnvelope`, the shapes that are not plain data.
pub trait Shaped {}
impl<T, E> Shaped for Result<T, E> {}
impl<T> Shaped for ResponseEnvelope<T> {}

/// The probe's verdict: plain data.
pub struct IsPlain;
/// The probe's verdict: a `Result` or `ResponseEnvelope` under another name.
pub struct HiddenShape;

impl<T: Shaped> Probe<T> {
    /// Chosen by method resolution when the probed type is a `Result` or `ResponseEnvelope`.
    pub fn verdict(&self) -> HiddenShape {
        HiddenShape
    }
}

/// What a [`Probe`] derefs to: its verdict when the inherent one does not apply.
pub struct NotShaped;

impl NotShaped {
    /// Chosen otherwise (one deref further): plain data.
    pub fn verdict(&self) -> IsPlain {
        IsPlain
    }
}

impl<T> std::ops::Deref for Probe<T> {
    type Target = NotShaped;
    fn deref(&self) -> &NotShaped {
        &NotShaped
    }
}

/// The probe must find plain data.
#[diagnostic::on_unimplemented(
    message = "this return type is a `Result` or a `ResponseEnvelope` behind another name",
    label = "opkit reads this type as plain data, but it is a `Result` or a `ResponseEnvelope`",
    note = "opkit tells output shapes apart by how the return type is written: spell it `Result<T, E>` (any path ending in `Result<..>`, e.g. `std::io::Result<T>`) or `ResponseEnvelope<T>`"
)]
pub trait PlainVerdict {}
impl PlainVerdict for IsPlain {}

/// Fails to compile unless the probe found plain data.
pub fn assert_plain<V: PlainVerdict>(_: V) {}

/// Splits what the fn returned: the one place the return type's shape is checked. The
/// macro's `convert` turns the fn's error into a `CallError` (see [`ErrorProbe`]).
pub fn produce<M, R, D, C>(returned: R, convert: C) -> Result<Produced<D>, CallError>
where
    R: OperationOutput<M, Data = D>,
    C: FnOnce(R::Error) -> CallError,
{
    returned.into_produced(convert)
}

/// [`produce`] on the output of the fn's future, once it is ready. The future is mapped
/// rather than awaited in an `async` block, whose state would hold the fn's arguments twice
/// (as captured, and inside the fn's future); the mapping closure is this fn's, so an
/// expansion has none of its own.
pub fn produce_future<M, Fut, D, C>(
    future: Fut,
    convert: C,
) -> impl Future<Output = Result<Produced<D>, CallError>>
where
    Fut: Future,
    Fut::Output: OperationOutput<M, Data = D>,
    C: FnOnce(<Fut::Output as OperationOutput<M>>::Error) -> CallError,
{
    map_once(future, move |returned: Fut::Output| {
        returned.into_produced(convert)
    })
}

/// [`produce`] for each item of a stream.
pub fn produce_stream<M, S, D, C>(
    items: S,
    convert: C,
) -> impl Stream<Item = Result<Produced<D>, CallError>>
where
    S: Stream,
    S::Item: OperationOutput<M, Data = D>,
    C: Fn(<S::Item as OperationOutput<M>>::Error) -> CallError,
{
    items.map(move |item| item.into_produced(&convert))
}
