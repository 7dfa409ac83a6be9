//! Envelope detection: the one rule that decides whether a JSON value is an envelope.

use super::{ResponseEnvelope, ResponseMeta};
use crate::error::CallError;
use crate::schema::json_type_name;
use serde::Deserialize;
use serde_json::Value;

/// Why a JSON value is not a [`ResponseEnvelope`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// The value is not a JSON object.
    #[error("an envelope must be a JSON object, found {found}")]
    NotAnObject {
        /// The JSON type that was found.
        found: &'static str,
    },
    /// The object has no `data` key.
    #[error("an envelope must have a `data` key")]
    MissingData,
    /// The object has no `meta` key.
    #[error("an envelope must have a `meta` key")]
    MissingMeta,
    /// `meta` is not an object.
    #[error("an envelope's `meta` must be an object, found {found}")]
    MetaNotAnObject {
        /// The JSON type that was found.
        found: &'static str,
    },
    /// `meta.source` is missing or not a string.
    #[error("an envelope's `meta.source` must be one of \"local\", \"http\", \"mcp\"")]
    MissingSource,
    /// `meta.source` names no known source.
    #[error("unknown envelope source {0:?}: expected one of \"local\", \"http\", \"mcp\"")]
    UnknownSource(String),
    /// `meta` does not have the fields its source requires.
    #[error("an envelope's `meta` (source {source_name:?}) is malformed: {message}")]
    InvalidMeta {
        /// The declared source.
        source_name: String,
        /// What serde found wrong.
        message: String,
    },
}

impl From<EnvelopeError> for CallError {
    fn from(error: EnvelopeError) -> Self {
        CallError::new(crate::ErrorCode::ValidationError, error.to_string())
    }
}

/// Checks the meta half of a would-be envelope.
fn parse_meta(meta: &Value) -> Result<ResponseMeta, EnvelopeError> {
    let Value::Object(fields) = meta else {
        return Err(EnvelopeError::MetaNotAnObject {
            found: json_type_name(meta),
        });
    };
    let source = match fields.get("source") {
        Some(Value::String(source)) => source,
        _ => return Err(EnvelopeError::MissingSource),
    };
    if !ResponseMeta::SOURCES.contains(&source.as_str()) {
        return Err(EnvelopeError::UnknownSource(source.clone()));
    }
    ResponseMeta::deserialize(meta).map_err(|error| EnvelopeError::InvalidMeta {
        source_name: source.clone(),
        message: error.to_string(),
    })
}

/// Checks whether `value` is an envelope and says why not.
pub(crate) fn check_envelope(value: &Value) -> Result<ResponseMeta, EnvelopeError> {
    let Value::Object(fields) = value else {
        return Err(EnvelopeError::NotAnObject {
            found: json_type_name(value),
        });
    };
    if !fields.contains_key("data") {
        return Err(EnvelopeError::MissingData);
    }
    let meta = fields.get("meta").ok_or(EnvelopeError::MissingMeta)?;
    parse_meta(meta)
}

/// `true` when `value` is an envelope: an object with a `data` key and a `meta` object whose
/// `source` is a known source and whose fields match that source.
///
/// This is the only way opkit detects envelopes.
///
/// ```
/// use opkit::envelope::is_response_envelope;
/// use serde_json::json;
/// let local = json!({"data": 1, "meta": {"source": "local", "operationId": "a.b", "timestamp": 0}});
/// assert!(is_response_envelope(&local));
/// assert!(!is_response_envelope(&json!({"data": 1, "meta": null})));
/// assert!(!is_response_envelope(&json!({"data": 1, "meta": {"source": "ftp"}})));
/// assert!(!is_response_envelope(&json!([1, 2])));
/// ```
pub fn is_response_envelope(value: &Value) -> bool {
    // Fast exit for the common case of plain data.
    match value {
        Value::Object(fields)
            if fields.len() >= 2 && fields.contains_key("data") && fields.contains_key("meta") =>
        {
            check_envelope(value).is_ok()
        }
        _ => false,
    }
}

/// Takes an envelope value apart without copying its data.
pub(crate) fn split_envelope(value: Value) -> Result<ResponseEnvelope, EnvelopeError> {
    let meta = check_envelope(&value)?;
    let Value::Object(mut fields) = value else {
        unreachable!("check_envelope accepted a non-object")
    };
    let data = fields.remove("data").unwrap_or(Value::Null);
    Ok(ResponseEnvelope { data, meta })
}

/// The data of an envelope, its meta dropped: `unwrap(envelope)` at the call sites that only
/// need the data (and a name to search for where the meta is thrown away).
///
/// ```
/// use opkit::envelope::{local_envelope, unwrap};
/// let envelope = local_envelope(vec![1, 2], "list.numbers");
/// let numbers: Vec<i32> = unwrap(envelope);
/// assert_eq!(numbers, [1, 2]);
/// ```
pub fn unwrap<T>(envelope: ResponseEnvelope<T>) -> T {
    envelope.data
}

/// The data of `value` if it is an envelope's JSON, otherwise `value` unchanged: the lenient
/// form of [`unwrap`] for JSON that may or may not be an envelope.
///
/// ```
/// use opkit::envelope::unwrap_value;
/// use serde_json::json;
/// assert_eq!(unwrap_value(json!(5)), json!(5));
/// assert_eq!(unwrap_value(json!({"data": 5, "meta": {"source": "local", "operationId": "a.b", "timestamp": 0}})), json!(5));
/// ```
pub fn unwrap_value(value: Value) -> Value {
    if is_response_envelope(&value) {
        match value {
            Value::Object(mut fields) => fields.remove("data").unwrap_or(Value::Null),
            other => other,
        }
    } else {
        value
    }
}
