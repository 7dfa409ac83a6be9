//! The five wire events of the call protocol and their exact JSON.
//!
//! Encoding is serde's; decoding goes through [`CallEvent::from_value`], which names what is
//! wrong ([`WireError`]) instead of serde's generic "data did not match any variant".
//! Absent optional fields are omitted when encoding; when decoding, an optional field that is
//! `null` counts as absent, and unknown fields are ignored (forward compatibility).
//!
//! Bytes are read under one rule, whoever reads them: no object of an event repeats a key
//! ([`WireError::DuplicateKey`]; see `json.rs`). [`CallEvent::from_slice`], the call handler,
//! and [`peek`] all refuse such a payload, so no two readers can see two different events in
//! it.
//!
//! A transport that keeps track of calls reads only [`peek`]: the kind, the request id, the
//! deadline and the `subscription` flag, and [`EventKind::ends_call`] for when a call is over
//! ([`peek_head`]: the kind and request id from an event's first bytes, where the event's
//! receiver reads the rest).
//! A router that must refuse a malformed request before it forwards it reads
//! [`check_request`]: the checks of a handler's decoder, with nothing built.

mod check;
mod fast_decode;
mod fast_meta;
mod json;
mod outgoing;
mod peek;
mod scan;

pub use check::{RequestHead, check_request};
pub(crate) use fast_decode::decode_fast;
pub(crate) use json::parse as parse_json;
pub(crate) use outgoing::{RequestOut, responded};
pub use peek::{EventKind, Peek, peek, peek_head, peek_kind_and_id};

use crate::access::Identity;
use crate::bounds::Deadline;
use crate::envelope::{EnvelopeError, ResponseEnvelope};
use crate::error::{CallError, ErrorCode, ErrorKind};
use crate::schema::json_type_name;
use crate::trace::TraceContext;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Why bytes or a JSON value are not a valid call event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The payload is not JSON at all.
    #[error("a call event must be JSON: {0}")]
    NotJson(String),
    /// An object of the payload repeats a key (at any depth): readers could disagree on which
    /// occurrence counts, so the event is refused as a whole.
    #[error("a call event must not repeat a key in one object: `{key}` appears twice")]
    DuplicateKey {
        /// The repeated key.
        key: String,
    },
    /// The payload is JSON but not an object.
    #[error("a call event must be a JSON object, found {found}")]
    NotAnObject {
        /// The JSON type that was found.
        found: &'static str,
    },
    /// A required field is absent.
    #[error("`{event}` is missing the required field `{field}`")]
    MissingField {
        /// The event type (`"call event"` when the `type` itself is missing).
        event: &'static str,
        /// The missing field.
        field: &'static str,
    },
    /// `type` names no event of the protocol.
    #[error(
        "unknown call event type {0:?}: expected one of \"call.requested\", \"call.responded\", \"call.completed\", \"call.error\", \"call.aborted\""
    )]
    UnknownType(String),
    /// A field has the wrong JSON type or an invalid value.
    #[error("field `{field}` of `{event}` must be {expected}, found {found}")]
    InvalidField {
        /// The event type.
        event: &'static str,
        /// The offending field.
        field: &'static str,
        /// What the field must be.
        expected: &'static str,
        /// What was found (a JSON type, or serde's message).
        found: String,
    },
    /// The `output` of `call.responded` is not a [`ResponseEnvelope`].
    #[error("the `output` of `call.responded` is not a ResponseEnvelope: {0}")]
    OutputNotEnvelope(#[source] EnvelopeError),
    /// The event could not be encoded (not expected with opkit's own types).
    #[error("a call event could not be encoded: {0}")]
    Encode(String),
}

/// `value`'s JSON as bytes: written into this thread's scratch buffer, then copied into one
/// allocation of the exact length (which [`Bytes`] takes over as it is). Growing a fresh
/// buffer to an event's size and handing it to `Bytes` cost three allocations per event.
pub(crate) fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Bytes, WireError> {
    encode_with(|buffer| serde_json::to_writer(buffer, value))
        .map_err(|error| WireError::Encode(error.to_string()))
}

/// [`encode`] of the bytes `write` appends to an empty buffer (an event written by hand).
pub(crate) fn encode_with<E>(
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<Bytes, E> {
    /// Above this capacity, the scratch buffer is not kept for the next event.
    const KEPT: usize = 16 * 1024;
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|scratch| {
        // Taken (never borrowed across the writer), so a writer that itself encodes an event
        // finds an empty buffer rather than a borrowed one.
        let mut buffer = scratch.take();
        buffer.clear();
        let written = write(&mut buffer).map(|()| Bytes::copy_from_slice(&buffer));
        if buffer.capacity() <= KEPT {
            scratch.replace(buffer);
        }
        written
    })
}

impl From<WireError> for CallError {
    /// A malformed wire message is a `VALIDATION_ERROR`.
    fn from(error: WireError) -> Self {
        CallError::new(ErrorCode::ValidationError, error.to_string())
    }
}

/// `call.requested`: a caller asks for `operationId` to run on `input`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRequested {
    /// The request's id (`<callerId>:<n>` when minted by a `PendingRequestMap`).
    pub request_id: String,
    /// The operation to run.
    pub operation_id: String,
    /// The operation's input (any JSON value; usually an object).
    pub input: Value,
    /// The request this one was made from (nested calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_request_id: Option<String>,
    /// The caller's identity, which the handler checks the access rule against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// A signature binding `identity` to this request (a JWS; see `opkit::protocol::signing`,
    /// feature `signing`), for handlers that require one.
    /// An optional field: peers that do not know it ignore it; a value that is not a string is
    /// dropped when decoding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_token: Option<String>,
    /// When the caller gives up, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<u64>,
    /// The caller subscribes: its replies are `call.responded` items ended by
    /// `call.completed` (or `call.error`). Omitted (false) for a call, whose one
    /// `call.responded` is its end. An optional field that only transports read (see
    /// [`EventKind::ends_call`]): a value that is not `true` counts as false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub subscription: bool,
    /// The caller's span as a W3C `traceparent` (an optional field: peers that do not know
    /// it ignore it). Read it with [`trace_context`](Self::trace_context); a value that is
    /// not a string is dropped when decoding, an invalid string ignored when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The W3C `tracestate` that goes with `traceparent` (optional, like it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

impl CallRequested {
    /// A request with no parent, identity or deadline.
    pub fn new(
        request_id: impl Into<String>,
        operation_id: impl Into<String>,
        input: Value,
    ) -> Self {
        Self {
            request_id: request_id.into(),
            operation_id: operation_id.into(),
            input,
            parent_request_id: None,
            identity: None,
            identity_token: None,
            deadline: None,
            subscription: false,
            traceparent: None,
            tracestate: None,
        }
    }

    /// The caller's trace context, when `traceparent` is present and valid (an invalid one
    /// is ignored: the call starts a new trace).
    pub fn trace_context(&self) -> Option<TraceContext> {
        TraceContext::from_parts(self.traceparent.as_deref(), self.tracestate.as_deref())
    }

    /// Sets `traceparent` and `tracestate` from `trace`.
    #[must_use]
    pub fn with_trace_context(mut self, trace: Option<&TraceContext>) -> Self {
        self.traceparent = trace.map(TraceContext::traceparent);
        self.tracestate = trace.and_then(|trace| trace.tracestate().map(str::to_owned));
        self
    }

    /// The deadline as a [`Deadline`].
    pub fn deadline(&self) -> Option<Deadline> {
        self.deadline.map(Deadline::from_epoch_millis)
    }
}

/// `call.responded`: one result (one per item for subscriptions).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallResponded {
    /// The request answered.
    pub request_id: String,
    /// The result.
    pub output: ResponseEnvelope,
    /// A signature of the event by its sender (a JWS; see `opkit::protocol::signing`, feature
    /// `signing`), for receivers that take only signed replies and aborts. An optional field:
    /// peers that do not know it ignore it; a value that is not a string is dropped when
    /// decoding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// `call.completed`: a subscription ended normally.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallCompleted {
    /// The request that completed.
    pub request_id: String,
    /// A signature of the event by its sender (a JWS; see `opkit::protocol::signing`, feature
    /// `signing`), for receivers that take only signed replies and aborts. An optional field:
    /// peers that do not know it ignore it; a value that is not a string is dropped when
    /// decoding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// `call.error`: the request failed; for subscriptions, this ends the stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallFailed {
    /// The request that failed.
    pub request_id: String,
    /// What kind of failure.
    pub code: ErrorCode,
    /// A message for humans.
    pub message: String,
    /// Structured details.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// The application error kind (an optional field: peers that do not know it ignore it
    /// and act on `code`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
    /// A signature of the event by its sender (a JWS; see `opkit::protocol::signing`, feature
    /// `signing`), for receivers that take only signed replies and aborts. An optional field:
    /// peers that do not know it ignore it; a value that is not a string is dropped when
    /// decoding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl CallFailed {
    /// The event carrying `error` for `request_id`.
    pub fn from_error(request_id: impl Into<String>, error: CallError) -> Self {
        Self {
            request_id: request_id.into(),
            code: error.code,
            message: error.message,
            details: error.details,
            kind: error.kind,
            signature: None,
        }
    }

    /// The [`CallError`] this event carries.
    pub fn into_error(self) -> CallError {
        let error = CallError::new(self.code, self.message);
        let error = match self.details {
            Some(details) => error.with_details(details),
            None => error,
        };
        match self.kind {
            Some(kind) => error.with_kind(kind),
            None => error,
        }
    }
}

/// `call.aborted`: the caller gave up; the handler should stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallAborted {
    /// The request given up.
    pub request_id: String,
    /// A signature of the event by its sender (a JWS; see `opkit::protocol::signing`, feature
    /// `signing`), for receivers that take only signed replies and aborts. An optional field:
    /// peers that do not know it ignore it; a value that is not a string is dropped when
    /// decoding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// One event of the call protocol, as it travels on the bus.
///
/// The JSON is an object tagged by `type`, with camelCase fields:
///
/// ```
/// use opkit::protocol::{CallEvent, CallRequested};
/// use serde_json::json;
/// let event = CallEvent::Requested(CallRequested::new("c1:1", "math.add", json!({"a": 1})));
/// assert_eq!(
///     serde_json::to_value(&event).unwrap(),
///     json!({"type": "call.requested", "requestId": "c1:1", "operationId": "math.add", "input": {"a": 1}})
/// );
/// let back = CallEvent::from_slice(&event.to_bytes().unwrap()).unwrap();
/// assert_eq!(back, event);
/// let error = CallEvent::from_slice(br#"{"type": "call.done", "requestId": "x"}"#).unwrap_err();
/// assert!(error.to_string().contains("unknown call event type \"call.done\""));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum CallEvent {
    /// `call.requested`
    #[serde(rename = "call.requested")]
    Requested(CallRequested),
    /// `call.responded`
    #[serde(rename = "call.responded")]
    Responded(CallResponded),
    /// `call.completed`
    #[serde(rename = "call.completed")]
    Completed(CallCompleted),
    /// `call.error`
    #[serde(rename = "call.error")]
    Error(CallFailed),
    /// `call.aborted`
    #[serde(rename = "call.aborted")]
    Aborted(CallAborted),
}

const REQUESTED: &str = "call.requested";
pub(crate) const RESPONDED: &str = "call.responded";
const COMPLETED: &str = "call.completed";
const ERROR: &str = "call.error";
const ABORTED: &str = "call.aborted";

impl CallEvent {
    /// The wire `type` of the event, e.g. `"call.requested"`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Requested(_) => REQUESTED,
            Self::Responded(_) => RESPONDED,
            Self::Completed(_) => COMPLETED,
            Self::Error(_) => ERROR,
            Self::Aborted(_) => ABORTED,
        }
    }

    /// The id of the request the event belongs to.
    pub fn request_id(&self) -> &str {
        match self {
            Self::Requested(event) => &event.request_id,
            Self::Responded(event) => &event.request_id,
            Self::Completed(event) => &event.request_id,
            Self::Error(event) => &event.request_id,
            Self::Aborted(event) => &event.request_id,
        }
    }

    /// `call.responded` for `request_id`.
    pub fn responded(request_id: impl Into<String>, output: ResponseEnvelope) -> Self {
        Self::Responded(CallResponded {
            request_id: request_id.into(),
            output,
            signature: None,
        })
    }

    /// `call.completed` for `request_id`.
    pub fn completed(request_id: impl Into<String>) -> Self {
        Self::Completed(CallCompleted {
            request_id: request_id.into(),
            signature: None,
        })
    }

    /// `call.error` carrying `error` for `request_id`.
    pub fn error(request_id: impl Into<String>, error: CallError) -> Self {
        Self::Error(CallFailed::from_error(request_id, error))
    }

    /// `call.aborted` for `request_id`.
    pub fn aborted(request_id: impl Into<String>) -> Self {
        Self::Aborted(CallAborted {
            request_id: request_id.into(),
            signature: None,
        })
    }

    /// The event's signature, for the events that may carry one (`None` for
    /// `call.requested`, whose signature is its `identityToken`).
    pub fn signature(&self) -> Option<&str> {
        match self {
            Self::Requested(_) => None,
            Self::Responded(event) => event.signature.as_deref(),
            Self::Completed(event) => event.signature.as_deref(),
            Self::Error(event) => event.signature.as_deref(),
            Self::Aborted(event) => event.signature.as_deref(),
        }
    }

    /// Sets the event's signature (ignored for `call.requested`).
    pub fn set_signature(&mut self, signature: Option<String>) {
        match self {
            Self::Requested(_) => {}
            Self::Responded(event) => event.signature = signature,
            Self::Completed(event) => event.signature = signature,
            Self::Error(event) => event.signature = signature,
            Self::Aborted(event) => event.signature = signature,
        }
    }

    /// The event's wire JSON as bytes.
    pub fn to_bytes(&self) -> Result<Bytes, WireError> {
        encode(self)
    }

    /// The event's wire JSON.
    pub fn to_value(&self) -> Result<Value, WireError> {
        serde_json::to_value(self).map_err(|error| WireError::Encode(error.to_string()))
    }

    /// Decodes an event from its wire bytes. A payload that repeats a key in any object is
    /// refused ([`WireError::DuplicateKey`]).
    ///
    /// ```
    /// use opkit::protocol::{CallEvent, WireError};
    /// let twice = br#"{"type":"call.aborted","requestId":"c:1","requestId":"c:2"}"#;
    /// assert_eq!(
    ///     CallEvent::from_slice(twice),
    ///     Err(WireError::DuplicateKey { key: "requestId".into() })
    /// );
    /// ```
    pub fn from_slice(bytes: &[u8]) -> Result<Self, WireError> {
        if let Some(event) = fast_decode::decode_fast(bytes) {
            return Ok(event);
        }
        Self::from_value(json::parse(bytes)?)
    }

    /// Decodes an event from its wire JSON, naming what is wrong when it is not one.
    pub fn from_value(value: Value) -> Result<Self, WireError> {
        let Value::Object(map) = value else {
            return Err(WireError::NotAnObject {
                found: json_type_name(&value),
            });
        };
        let kind = match map.get("type") {
            None | Some(Value::Null) => {
                return Err(WireError::MissingField {
                    event: "call event",
                    field: "type",
                });
            }
            Some(Value::String(kind)) => kind.as_str(),
            Some(other) => {
                return Err(WireError::InvalidField {
                    event: "call event",
                    field: "type",
                    expected: "a string",
                    found: json_type_name(other).to_owned(),
                });
            }
        };
        let event = EventKind::of(kind)
            .ok_or_else(|| WireError::UnknownType(kind.to_owned()))?
            .as_str();
        let mut fields = Fields { event, map };
        let request_id = fields.required_string("requestId")?;
        Ok(match event {
            REQUESTED => Self::Requested(CallRequested {
                request_id,
                operation_id: fields.required_string("operationId")?,
                input: fields.required("input")?,
                parent_request_id: fields.optional_string("parentRequestId")?,
                identity: fields.optional_identity("identity")?,
                identity_token: fields.lenient_string("identityToken"),
                deadline: fields.optional_u64("deadline")?,
                subscription: fields.optional("subscription") == Some(Value::Bool(true)),
                traceparent: fields.lenient_string("traceparent"),
                tracestate: fields.lenient_string("tracestate"),
            }),
            RESPONDED => {
                let output = fields.required("output")?;
                let output =
                    ResponseEnvelope::from_value(output).map_err(WireError::OutputNotEnvelope)?;
                Self::Responded(CallResponded {
                    request_id,
                    output,
                    signature: fields.lenient_string("signature"),
                })
            }
            COMPLETED => Self::Completed(CallCompleted {
                request_id,
                signature: fields.lenient_string("signature"),
            }),
            ERROR => Self::Error(CallFailed {
                request_id,
                code: fields.required_code("code")?,
                message: fields.required_string("message")?,
                details: fields.optional("details"),
                kind: fields.optional("kind").and_then(error_kind),
                signature: fields.lenient_string("signature"),
            }),
            _ => Self::Aborted(CallAborted {
                request_id,
                signature: fields.lenient_string("signature"),
            }),
        })
    }
}

/// The `kind` of a `call.error`: a kind this version does not know (a newer peer's) is
/// dropped, so the error still arrives with its code.
pub(crate) fn error_kind(value: Value) -> Option<ErrorKind> {
    serde_json::from_value(value).ok()
}

impl<'de> Deserialize<'de> for CallEvent {
    /// Goes through [`CallEvent::from_value`], so serde users get the same messages.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_value(value).map_err(serde::de::Error::custom)
    }
}

/// The fields of one event, taken out one by one.
struct Fields {
    event: &'static str,
    map: Map<String, Value>,
}

impl Fields {
    /// A present field (`null` counts as present: `input` may be `null`).
    fn required(&mut self, field: &'static str) -> Result<Value, WireError> {
        self.map.remove(field).ok_or(WireError::MissingField {
            event: self.event,
            field,
        })
    }

    /// A field that is absent or `null` counts as absent.
    fn optional(&mut self, field: &'static str) -> Option<Value> {
        self.map.remove(field).filter(|value| !value.is_null())
    }

    fn invalid(&self, field: &'static str, expected: &'static str, found: String) -> WireError {
        WireError::InvalidField {
            event: self.event,
            field,
            expected,
            found,
        }
    }

    fn string(&self, field: &'static str, value: Value) -> Result<String, WireError> {
        match value {
            Value::String(text) => Ok(text),
            other => Err(self.invalid(field, "a string", json_type_name(&other).to_owned())),
        }
    }

    fn required_string(&mut self, field: &'static str) -> Result<String, WireError> {
        let value = self.required(field)?;
        self.string(field, value)
    }

    fn optional_string(&mut self, field: &'static str) -> Result<Option<String>, WireError> {
        self.optional(field)
            .map(|value| self.string(field, value))
            .transpose()
    }

    /// An optional field that is dropped, not refused, when it is not a string (trace
    /// context: a bad value must not fail the call).
    fn lenient_string(&mut self, field: &'static str) -> Option<String> {
        match self.optional(field) {
            Some(Value::String(text)) => Some(text),
            _ => None,
        }
    }

    fn optional_u64(&mut self, field: &'static str) -> Result<Option<u64>, WireError> {
        self.optional(field)
            .map(|value| {
                value.as_u64().ok_or_else(|| {
                    let found = match &value {
                        Value::Number(number) => format!("the number {number}"),
                        other => json_type_name(other).to_owned(),
                    };
                    self.invalid(
                        field,
                        "a non-negative integer (milliseconds since the Unix epoch)",
                        found,
                    )
                })
            })
            .transpose()
    }

    fn optional_identity(&mut self, field: &'static str) -> Result<Option<Identity>, WireError> {
        self.optional(field)
            .map(|value| {
                serde_json::from_value(value).map_err(|error| {
                    self.invalid(
                        field,
                        "an identity {\"id\": string, \"scopes\"?: [string], \"roles\"?: [string]}",
                        error.to_string(),
                    )
                })
            })
            .transpose()
    }

    fn required_code(&mut self, field: &'static str) -> Result<ErrorCode, WireError> {
        let value = self.required(field)?;
        let found = match &value {
            Value::String(code) => format!("{code:?}"),
            other => json_type_name(other).to_owned(),
        };
        serde_json::from_value(value).map_err(|_| {
            self.invalid(
                field,
                "an error code (OPERATION_NOT_FOUND, VALIDATION_ERROR, ACCESS_DENIED, EXECUTION_ERROR, TIMEOUT, ABORTED, TRANSPORT_ERROR)",
                found,
            )
        })
    }
}
