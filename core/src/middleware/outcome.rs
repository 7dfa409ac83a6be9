//! [`Outcome`]: what a call produced, as a middleware sees it — one [`Reply`] or a stream of
//! them — and the [`CacheHint`] an edge surfaces where its wire has one.

use crate::envelope::{LocalMeta, OperationId, ResponseEnvelope, ResponseMeta, now_millis_coarse};
use crate::error::CallError;
use futures::{Stream, StreamExt};
use serde_json::Value;
use std::any::Any;
use std::fmt;
use std::pin::Pin;
use std::time::Duration;

/// A subscription's replies, one per item.
pub type ReplyStream = Pin<Box<dyn Stream<Item = Result<Reply, CallError>> + Send + 'static>>;

/// What a call produced: the reply of a query or mutation, or a subscription's stream.
pub enum Outcome {
    /// A query's or mutation's reply.
    Unary(Reply),
    /// A subscription's replies.
    Stream(ReplyStream),
}

impl fmt::Debug for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unary(reply) => f.debug_tuple("Unary").field(reply).finish(),
            Self::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

impl From<ResponseEnvelope> for Outcome {
    fn from(envelope: ResponseEnvelope) -> Self {
        Self::Unary(Reply::new(envelope))
    }
}

impl Outcome {
    /// Applies `f` to each item of a subscription (a per-item hook); a unary reply is passed
    /// to it once.
    ///
    /// ```
    /// use opkit::middleware::{self, Outcome};
    /// // Counts the items every subscription sends.
    /// let count_items = middleware::from_fn(|call, next| async move {
    ///     let outcome = next.run(call).await?;
    ///     Ok(outcome.map_items(|item| {
    ///         tracing::debug!(ok = item.is_ok(), "item");
    ///         item
    ///     }))
    /// });
    /// # let _ = count_items;
    /// ```
    pub fn map_items<F>(self, mut f: F) -> Self
    where
        F: FnMut(Result<Reply, CallError>) -> Result<Reply, CallError> + Send + 'static,
    {
        match self {
            Self::Unary(reply) => match f(Ok(reply)) {
                Ok(reply) => Self::Unary(reply),
                Err(error) => Self::Stream(Box::pin(futures::stream::once(async { Err(error) }))),
            },
            Self::Stream(items) => Self::Stream(Box::pin(items.map(f))),
        }
    }

    /// The reply of a query or mutation; an `EXECUTION_ERROR` for a stream.
    pub fn into_reply(self) -> Result<Reply, CallError> {
        match self {
            Self::Unary(reply) => Ok(reply),
            Self::Stream(_) => Err(CallError::execution(
                "a middleware answered a query or mutation with a stream",
            )),
        }
    }

    /// A subscription's replies; a unary reply becomes a stream of that one reply.
    pub fn into_stream(self) -> ReplyStream {
        match self {
            Self::Unary(reply) => Box::pin(futures::stream::once(async { Ok(reply) })),
            Self::Stream(items) => items,
        }
    }
}

/// How long a result may be reused, and by whom: set by [`Cache`](super::Cache) (or any
/// middleware) on a [`Reply`]; the HTTP server sends it as `Cache-Control`, the MCP server in
/// the result's `_meta` (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// How long the result stays fresh.
    pub ttl: Duration,
    /// Who may reuse it.
    pub scope: CacheScope,
}

/// Who may reuse a cached result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// Only the caller it was made for (HTTP `private`).
    Private,
    /// Any caller (HTTP `public`).
    Public,
}

impl CacheScope {
    /// `"private"` or `"public"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Private => "private",
            Self::Public => "public",
        }
    }
}

/// Typed data, type-erased: written as JSON bytes or turned into a `Value`.
pub(crate) trait Data: Send {
    /// Appends the data's JSON to `out`.
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error>;
    /// The data as a `Value`.
    fn into_value(self: Box<Self>) -> Result<Value, serde_json::Error>;
}

struct Typed<T>(T);

impl<T: serde::Serialize + Send> Data for Typed<T> {
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        serde_json::to_writer(out, &self.0)
    }

    fn into_value(self: Box<Self>) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self.0)
    }
}

/// `data`, boxed as [`Data`].
pub(crate) fn typed_data<T: serde::Serialize + Send + 'static>(data: T) -> Box<dyn Data> {
    Box::new(Typed(data))
}

/// One result: an envelope, or the typed envelope of a typed call, turned into JSON only when
/// a middleware or an edge reads it.
///
/// A reply is moved through every future of a call (the handler's, the front door's, the
/// edge's), so it is kept small: a JSON envelope (what a middleware or a remote call makes)
/// is boxed; an `#[operation]` fn's data, the usual reply, is not.
pub struct Reply {
    value: ReplyValue,
    hint: Option<CacheHint>,
}

enum ReplyValue {
    Json(Box<ResponseEnvelope>),
    Typed {
        value: Box<dyn TypedReply>,
        json: Option<Box<ResponseEnvelope>>,
    },
    /// An `#[operation]` fn's data in a local envelope, not serialized yet.
    Data {
        data: Box<dyn Data>,
        operation_id: OperationId,
        timestamp: u64,
    },
}

/// What [`Reply::into_typed`] finds: a typed call's own value, or a JSON envelope.
pub(crate) enum TypedOrJson {
    /// The fn's own typed value, untouched.
    Typed(Box<dyn Any + Send>),
    /// An envelope a middleware made, or a registry call's data.
    Json(ResponseEnvelope),
}

impl ReplyValue {
    fn into_envelope(self) -> Result<ResponseEnvelope, CallError> {
        match self {
            Self::Json(envelope) => Ok(*envelope),
            Self::Typed {
                json: Some(json), ..
            } => Ok(*json),
            Self::Typed { value, json: None } => value.to_json(),
            Self::Data {
                data,
                operation_id,
                timestamp,
            } => Ok(ResponseEnvelope::new(
                data.into_value().map_err(unserializable)?,
                ResponseMeta::Local(LocalMeta {
                    operation_id,
                    timestamp,
                }),
            )),
        }
    }
}

/// The error of data that would not serialize (a `Serialize` impl that failed, a map with
/// keys that are not strings).
fn unserializable(error: serde_json::Error) -> CallError {
    CallError::execution(format!("the output could not be serialized: {error}"))
}

/// A typed call's envelope, type-erased.
pub(crate) trait TypedReply: Send {
    /// The envelope with its data as JSON.
    fn to_json(&self) -> Result<ResponseEnvelope, CallError>;
    /// The reply itself, for its maker to downcast (no copy, no new box).
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("Reply");
        match &self.value {
            ReplyValue::Json(envelope) => out.field("envelope", envelope),
            ReplyValue::Typed { json, .. } => out.field("typed", &json),
            ReplyValue::Data { operation_id, .. } => out.field("data of", operation_id),
        };
        out.field("hint", &self.hint).finish()
    }
}

impl From<ResponseEnvelope> for Reply {
    fn from(envelope: ResponseEnvelope) -> Self {
        Self::new(envelope)
    }
}

impl Reply {
    /// A reply holding `envelope` (what a middleware answers with, a cached result say).
    pub fn new(envelope: ResponseEnvelope) -> Self {
        Self {
            value: ReplyValue::Json(Box::new(envelope)),
            hint: None,
        }
    }

    pub(crate) fn typed(value: Box<dyn TypedReply>) -> Self {
        Self {
            value: ReplyValue::Typed { value, json: None },
            hint: None,
        }
    }

    /// The local envelope of an `#[operation]` fn's `data`, serialized only when read.
    pub(crate) fn data(data: Box<dyn Data>, operation_id: OperationId) -> Self {
        Self {
            value: ReplyValue::Data {
                data,
                operation_id,
                timestamp: now_millis_coarse(),
            },
            hint: None,
        }
    }

    /// The envelope. A typed call's is serialized here, on the first read, and the typed
    /// caller still gets its own value.
    pub fn envelope(&mut self) -> Result<&ResponseEnvelope, CallError> {
        if let ReplyValue::Data { operation_id, .. } = &self.value {
            // Data of no size in its place while it is taken out (a box of `()` allocates
            // nothing).
            let placeholder = ReplyValue::Data {
                data: typed_data(()),
                operation_id: operation_id.clone(),
                timestamp: 0,
            };
            let value = std::mem::replace(&mut self.value, placeholder);
            self.value = ReplyValue::Json(Box::new(value.into_envelope()?));
        }
        match &mut self.value {
            ReplyValue::Json(envelope) => Ok(envelope),
            ReplyValue::Typed { value, json } => {
                if json.is_none() {
                    *json = Some(Box::new(value.to_json()?));
                }
                Ok(json.as_ref().unwrap_or_else(|| unreachable!("set above")))
            }
            ReplyValue::Data { .. } => unreachable!("made JSON above"),
        }
    }

    /// `true` when the reply is an `#[operation]` fn's data in its local envelope, not
    /// serialized yet: its meta is `source: "local"` with the operation's id and the time, so
    /// an edge that does not send that meta may take the data alone
    /// ([`into_data`](Self::into_data)). `false` for every other reply (a middleware's, a
    /// remote call's, one already read as an envelope), whatever its meta.
    pub fn is_local_data(&self) -> bool {
        matches!(self.value, ReplyValue::Data { .. })
    }

    /// The envelope's data, taken out; its meta is not made (a local reply's) or is dropped.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use opkit::middleware::Outcome;
    /// use opkit::prelude::*;
    /// use serde_json::json;
    ///
    /// #[operation(namespace = "math")]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// let registry = OperationRegistry::new();
    /// registry.register_operation(add).unwrap();
    /// let found = registry.lookup("math.add").unwrap();
    /// let outcome = registry.serve_found(found, json!({"a": 2, "b": 3}), OperationContext::new()).await;
    /// let Ok(Outcome::Unary(reply)) = outcome else { panic!("a query answers once") };
    /// assert!(reply.is_local_data());
    /// assert_eq!(reply.into_data().unwrap(), json!(5));
    /// # });
    /// ```
    pub fn into_data(self) -> Result<Value, CallError> {
        match self.value {
            ReplyValue::Data { data, .. } => data.into_value().map_err(unserializable),
            value => Ok(value.into_envelope()?.data),
        }
    }

    /// The envelope, taken out.
    pub fn into_envelope(self) -> Result<ResponseEnvelope, CallError> {
        self.value.into_envelope()
    }

    /// The envelope's JSON (`{"data": .., "meta": ..}`), written once: an `#[operation]` fn's
    /// data is serialized from its own type straight into these bytes.
    pub fn to_json_bytes(self) -> Result<Vec<u8>, CallError> {
        let mut out = Vec::with_capacity(128);
        self.write_json(&mut out)?;
        Ok(out)
    }

    /// [`to_json_bytes`](Self::to_json_bytes), appended to `out`: an edge whose frame carries
    /// the envelope (a protocol event, an SSE event) writes it in place, not copied from bytes
    /// of its own. On an error `out` may hold part of the JSON: a caller drops what it wrote.
    ///
    /// ```
    /// use opkit::envelope::local_envelope;
    /// use opkit::middleware::Reply;
    /// use serde_json::json;
    /// let mut frame = b"data: ".to_vec();
    /// Reply::new(local_envelope(json!(1), "a.b")).write_json(&mut frame).unwrap();
    /// assert!(frame.starts_with(br#"data: {"data":1,"meta":{"source":"local""#));
    /// ```
    pub fn write_json(self, out: &mut Vec<u8>) -> Result<(), CallError> {
        match self.value {
            ReplyValue::Data {
                data,
                operation_id,
                timestamp,
            } => {
                out.extend_from_slice(b"{\"data\":");
                data.write_json(out).map_err(unserializable)?;
                out.extend_from_slice(b",\"meta\":");
                let meta = LocalMeta {
                    operation_id,
                    timestamp,
                };
                meta.write_json(out).map_err(unserializable)?;
                out.push(b'}');
            }
            value => {
                serde_json::to_writer(out, &value.into_envelope()?).map_err(unserializable)?;
            }
        }
        Ok(())
    }

    /// The data's JSON alone (what a client that asked for the data without its meta gets),
    /// written once as [`to_json_bytes`](Self::to_json_bytes) writes the envelope.
    pub fn data_json_bytes(self) -> Result<Vec<u8>, CallError> {
        let mut out = Vec::with_capacity(64);
        self.write_data_json(&mut out)?;
        Ok(out)
    }

    /// [`data_json_bytes`](Self::data_json_bytes), appended to `out` (as
    /// [`write_json`](Self::write_json) appends the envelope's).
    pub fn write_data_json(self, out: &mut Vec<u8>) -> Result<(), CallError> {
        match self.value {
            ReplyValue::Data { data, .. } => data.write_json(out).map_err(unserializable),
            value => {
                serde_json::to_writer(out, &value.into_envelope()?.data).map_err(unserializable)
            }
        }
    }

    /// The typed value of a typed call's own reply, or the JSON envelope of one a middleware
    /// made (or of a registry call's data).
    pub(crate) fn into_typed(self) -> Result<TypedOrJson, CallError> {
        match self.value {
            ReplyValue::Typed { value, .. } => Ok(TypedOrJson::Typed(value.into_any())),
            other => other.into_envelope().map(TypedOrJson::Json),
        }
    }

    /// How long this result may be reused, when a middleware said so.
    pub fn cache_hint(&self) -> Option<CacheHint> {
        self.hint
    }

    /// Sets how long this result may be reused (see [`CacheHint`]).
    #[must_use]
    pub fn with_cache_hint(mut self, hint: CacheHint) -> Self {
        self.hint = Some(hint);
        self
    }
}
