//! What a handler returned: JSON (a dynamic handler's `Value`, an envelope), an envelope built
//! as one (an import's), or the data of an `#[operation]` fn still in its own type, serialized
//! once, straight into what the edge sends, or into a `Value` when someone reads one (a
//! middleware, an in-process `execute`).

use crate::envelope::ResponseEnvelope;
use crate::middleware::{Data, typed_data};
use serde::Serialize;
use serde_json::Value;

/// One result of a handler, before the pipeline makes it a reply. Opaque: the handlers of
/// `#[operation]` fns make it (`__private::encode`), [`Handler::unary`](super::Handler::unary)
/// wraps a JSON one, [`Handler::unary_envelope`](super::Handler::unary_envelope) an envelope.
pub struct Output(pub(crate) Repr);

pub(crate) enum Repr {
    /// JSON: the data, or a whole envelope for the pipeline to detect.
    Json(Value),
    /// An `#[operation]` fn's data, not serialized yet.
    Data(Box<dyn Data>),
    /// An `#[operation]` fn's data, serialized into a `Value` by its handler because the
    /// caller asked for one ([`DataForm::Value`]): wrapped as [`Data`](Repr::Data) is, with
    /// no box in between.
    Value(Value),
    /// A whole envelope, as built (not written as JSON for the pipeline to read back); boxed,
    /// so the common results stay small.
    Envelope(Box<ResponseEnvelope>),
}

/// What the caller of a unary handler makes of an `#[operation]` fn's data, so the handler
/// writes it in that form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataForm {
    /// Kept in its type until someone reads it: an edge writes it straight into its bytes, a
    /// middleware decodes a view of it.
    Typed,
    /// A `Value` at once: `execute` returns a `Value` envelope, so the handler serializes
    /// the data into one (no box for the typed data, no call through it later).
    Value,
}

impl Output {
    /// JSON a handler returned.
    pub(crate) fn json(value: Value) -> Self {
        Self(Repr::Json(value))
    }

    /// The data of an `#[operation]` fn, kept in its type until it is written.
    pub(crate) fn data<T: Serialize + Send + 'static>(data: T) -> Self {
        Self(Repr::Data(typed_data(data)))
    }

    /// The data of an `#[operation]` fn, already serialized into a `Value` (see
    /// [`DataForm::Value`]).
    pub(crate) fn data_value(data: Value) -> Self {
        Self(Repr::Value(data))
    }

    /// A whole envelope: passed through as a JSON envelope would be, without being written
    /// as one first.
    pub(crate) fn envelope(envelope: ResponseEnvelope) -> Self {
        Self(Repr::Envelope(Box::new(envelope)))
    }
}
