//! Responses: the headers snapshot, the transport error of a request that got none, and turning a response into an
//! `http_envelope` (or an `EXECUTION_ERROR` for a non-2xx status).
//!
//! Data by media type (the essence, ignoring parameters and case):
//! * JSON (`application/json`, any `+json` such as `application/problem+json`): parsed;
//!   a body that does not parse is kept as a string (with a warning);
//! * text (`text/*`, and the textual `application/xml`, `+xml`, `application/yaml`,
//!   `application/javascript`, `application/x-www-form-urlencoded`): a string, decoded by
//!   the `charset` parameter (UTF-8 by default);
//! * an empty body (204, HEAD, `Content-Length: 0`): `null`;
//! * anything else (`application/octet-stream`, `image/png`, ...): the bytes as a **base64
//!   string** (standard alphabet, padded), so envelopes stay JSON.

use base64::Engine;
use opkit::CallError;
use opkit::envelope::{ResponseEnvelope, http_envelope};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::media::MediaType;

/// `TRANSPORT_ERROR` (or `TIMEOUT`) for a reqwest failure.
pub(crate) fn transport_error(label: &str, error: &reqwest::Error) -> CallError {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        source = inner.source();
    }
    if error.is_timeout() {
        CallError::timeout(format!("{label} timed out: {message}"))
    } else {
        CallError::transport(format!("{label} failed: {message}"))
    }
}

/// Response headers: lower-cased names, several values joined with `", "`.
pub(crate) fn headers_snapshot(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        out.entry(name.as_str().to_owned())
            .and_modify(|existing| {
                existing.push_str(", ");
                existing.push_str(&value);
            })
            .or_insert(value);
    }
    out
}

/// The data of a body, by its `Content-Type`.
pub(crate) fn decode_body(bytes: &[u8], content_type: &str) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    let media = MediaType::parse(content_type);
    if media.is_json() {
        match serde_json::from_slice(bytes) {
            Ok(value) => return value,
            Err(error) => {
                tracing::warn!(%error, content_type, "a JSON response body does not parse; keeping it as text");
                return Value::String(decode_text(bytes, &media));
            }
        }
    }
    if media.is_text() || media.essence.is_empty() && std::str::from_utf8(bytes).is_ok() {
        return Value::String(decode_text(bytes, &media));
    }
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Decodes text by its `charset` (UTF-8 with replacement; ISO-8859-1/Latin-1 and US-ASCII
/// byte by byte).
fn decode_text(bytes: &[u8], media: &MediaType) -> String {
    match media
        .param("charset")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("iso-8859-1" | "latin1" | "latin-1" | "us-ascii" | "ascii") => {
            bytes.iter().map(|&b| char::from(b)).collect()
        }
        _ => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Reads a response: an `http_envelope` (as JSON, for the pipeline to detect) on 2xx, an
/// `EXECUTION_ERROR` with the status, headers and body in `details` otherwise. For an
/// operation served by opkit, the data is the served envelope's `data` and a failure the
/// served `CallError` (see [`super::served_replies`]).
pub(crate) async fn into_result(
    response: reqwest::Response,
    plan: &super::mapping::OperationPlan,
    normalizer: Option<&super::normalize::Normalizer>,
    max_bytes: usize,
) -> Result<ResponseEnvelope, CallError> {
    let label = plan.label.as_str();
    let status = response.status();
    let headers = headers_snapshot(response.headers());
    let content_type = headers.get("content-type").cloned().unwrap_or_default();
    let bytes = read_bounded(response, label, max_bytes).await?;
    let mut data = decode_body(&bytes, &content_type);
    if !status.is_success() {
        if plan.served
            && let Some(error) = super::served_replies::error(&data)
        {
            return Err(error);
        }
        return Err(status_error(label, status, headers, &content_type, data));
    }
    if plan.served {
        data = opkit::envelope::unwrap_value(data);
    }
    let data = match normalizer {
        Some(normalizer) => normalizer.apply(data),
        None => data,
    };
    Ok(http_envelope(data, status.as_u16(), headers, content_type))
}

/// The body of `response`, at most `max` bytes: past it (declared or as it arrives) an
/// `EXECUTION_ERROR` naming the limit, and the rest is not read.
async fn read_bounded(
    mut response: reqwest::Response,
    label: &str,
    max: usize,
) -> Result<Vec<u8>, CallError> {
    let too_large = || {
        CallError::execution(format!(
            "{label} answered a body larger than {max} bytes (OpenApiOptions::max_response_bytes): it was not read"
        ))
        .with_details(serde_json::json!({"limit": "maxResponseBytes", "max": max}))
    };
    if response
        .content_length()
        .is_some_and(|length| length > max as u64)
    {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| transport_error(label, &error))?
    {
        if bytes.len() + chunk.len() > max {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// `EXECUTION_ERROR` for a non-2xx status.
pub(crate) fn status_error(
    label: &str,
    status: reqwest::StatusCode,
    headers: BTreeMap<String, String>,
    content_type: &str,
    body: Value,
) -> CallError {
    let reason = status.canonical_reason().unwrap_or("");
    let summary = match &body {
        Value::String(text) if !text.is_empty() => format!(": {}", shorten(text)),
        Value::Null => String::new(),
        other => format!(": {}", shorten(&other.to_string())),
    };
    CallError::execution(format!(
        "{label} returned HTTP {} {reason}{summary}",
        status.as_u16()
    ))
    .with_details(json!({
        "status": status.as_u16(),
        "headers": headers,
        "contentType": content_type,
        "body": body,
    }))
}

fn shorten(text: &str) -> String {
    const MAX: usize = 300;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    #[test]
    fn media_types_with_parameters_are_recognised() {
        let sse = MediaType::parse("Text/Event-Stream; charset=utf-8");
        assert!(sse.is_event_stream());
        assert_eq!(sse.param("charset"), Some("utf-8"));
        assert!(MediaType::parse("application/json; charset=utf-8").is_json());
        assert!(MediaType::parse("application/problem+json").is_json());
        assert!(MediaType::parse("application/vnd.api+json;v=2").is_json());
        assert!(MediaType::parse("text/plain;charset=\"ISO-8859-1\"").is_text());
        assert!(!MediaType::parse("application/octet-stream").is_text());
    }

    #[test]
    fn bodies_decode_by_media_type() {
        assert_eq!(
            decode_body(b"{\"a\":1}", "application/json; charset=utf-8"),
            json!({"a": 1})
        );
        assert_eq!(
            decode_body(b"{\"title\":\"x\"}", "application/problem+json"),
            json!({"title": "x"})
        );
        assert_eq!(
            decode_body(b"not json", "application/json"),
            json!("not json")
        );
        assert_eq!(
            decode_body(b"hello", "text/plain; charset=utf-8"),
            json!("hello")
        );
        assert_eq!(
            decode_body(b"caf\xe9", "text/plain; charset=ISO-8859-1"),
            json!("café")
        );
        assert_eq!(decode_body(b"<a/>", "application/xml"), json!("<a/>"));
        assert_eq!(
            decode_body(b"\x00\x01\xff", "application/octet-stream"),
            json!("AAH/")
        );
        assert_eq!(decode_body(b"", "application/json"), Value::Null);
    }

    #[test]
    fn headers_are_lower_cased_and_joined() {
        let mut headers = HeaderMap::new();
        headers.append(
            HeaderName::from_static("x-multi"),
            HeaderValue::from_static("a"),
        );
        headers.append(
            HeaderName::from_static("x-multi"),
            HeaderValue::from_static("b"),
        );
        headers.append(
            HeaderName::from_static("content-type"),
            HeaderValue::from_static("text/plain"),
        );
        let snapshot = headers_snapshot(&headers);
        assert_eq!(snapshot["x-multi"], "a, b");
        assert_eq!(snapshot["content-type"], "text/plain");
    }
}
