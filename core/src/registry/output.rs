//! What a handler returned: JSON (a dynamic handler's `Value`, an envelope), or the data of an
//! `#[operation]` fn still in its own type, serialized once, straight into what the edge
//! sends, or into a `Value` when someone reads one (a middleware, an in-process `execute`).

use crate::middleware::{Data, typed_data};
use serde::Serialize;
use serde_json::Value;

/// One result of a handler, before the pipeline makes it a reply. Opaque: the handlers of
/// `#[operation]` fns make it (`__private::encode`), [`Handler::unary`](super::Handler::unary)
/// wraps a JSON one.
pub struct Output(pub(crate) Repr);

pub(crate) enum Repr {
    /// JSON: the data, or a whole envelope for the pipeline to detect.
    Json(Value),
    /// An `#[operation]` fn's data, not serialized yet.
    Data(Box<dyn Data>),
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
}
