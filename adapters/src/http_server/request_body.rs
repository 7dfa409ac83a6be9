//! Request bodies read whole before the call: at most the body limit (`413` past it), within
//! the request timeout (`408`), JSON only where JSON is expected (`415`); and [`Rejection`],
//! the status and error of a request refused before the registry is called.

use super::state::error_with_status;
use super::status_of;
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, StatusCode, header};
use opkit::{CallError, ErrorCode};
use serde_json::{Value, json};
use std::task::Poll;
use std::time::Duration;

/// A request body's limit in bytes and the setting that gave it, named in the `413` past it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimit {
    pub(crate) bytes: usize,
    set_by: &'static str,
}

impl BodyLimit {
    /// The server's limit ([`HttpServer::body_limit`](super::HttpServer::body_limit)).
    pub(crate) fn server(bytes: usize) -> Self {
        Self {
            bytes,
            set_by: "HttpServer::body_limit",
        }
    }

    /// A REST route's own limit.
    pub(crate) fn route(bytes: usize) -> Self {
        Self {
            bytes,
            set_by: "the route's body_limit: `#[operation(http(body_limit = ..))]` or `HttpRoute::body_limit`",
        }
    }
}

/// Reads the body up to `limit` bytes.
///
/// A body that arrives as one chunk (most do: a small request's is read with its head) is
/// that chunk, shared rather than copied; one in several chunks is copied into one buffer.
async fn read_body(body: Body, limit: BodyLimit) -> Result<Bytes, Rejection> {
    let mut first = Bytes::new();
    // Empty until a second chunk arrives; then the whole body so far.
    let mut joined: Vec<u8> = Vec::new();
    let mut frames = body.into_data_stream();
    while let Some(frame) = frames.next().await {
        let chunk = frame.map_err(|error| {
            Rejection::from(CallError::new(
                ErrorCode::ValidationError,
                format!("the request body could not be read: {error}"),
            ))
        })?;
        if first.len() + joined.len() + chunk.len() > limit.bytes {
            return Err(too_large(limit));
        }
        if first.is_empty() && joined.is_empty() {
            first = chunk;
        } else {
            if joined.is_empty() {
                joined.extend_from_slice(&std::mem::take(&mut first));
            }
            joined.extend_from_slice(&chunk);
        }
    }
    Ok(if joined.is_empty() {
        first
    } else {
        Bytes::from(joined)
    })
}

/// The `details.limit` of an error a streamed request body ended with (`bodyLimit`,
/// `bodyTimeout`), which an operation reading it returns as its own.
pub(crate) fn body_limit_of(error: &CallError) -> Option<&str> {
    match error.code {
        ErrorCode::ValidationError | ErrorCode::Timeout => {
            error.details.as_ref()?["limit"].as_str()
        }
        _ => None,
    }
}

/// `413` with [`body_too_large`]'s error.
pub(crate) fn too_large(limit: BodyLimit) -> Rejection {
    Rejection {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        error: body_too_large(limit),
    }
}

/// The error of a request body past `limit` bytes, read first or streamed (`413`).
pub(crate) fn body_too_large(limit: BodyLimit) -> CallError {
    CallError::new(
        ErrorCode::ValidationError,
        format!(
            "the request body is larger than the limit of {} bytes ({})",
            limit.bytes, limit.set_by
        ),
    )
    .with_details(json!({"limit": "bodyLimit", "max": limit.bytes}))
}

/// A request refused before the registry is called: a status and a `CallError`.
#[derive(Debug)]
pub(crate) struct Rejection {
    status: StatusCode,
    error: CallError,
}

impl From<CallError> for Rejection {
    fn from(error: CallError) -> Self {
        Self {
            status: status_of(&error),
            error,
        }
    }
}

impl Rejection {
    /// The same error, answered with `status`.
    /// `408`: a request body that did not arrive before the request timeout (read whole, or
    /// as multipart fields).
    pub(crate) fn body_timeout() -> Self {
        Self {
            status: StatusCode::REQUEST_TIMEOUT,
            error: CallError::timeout("the request body did not arrive before the request timeout"),
        }
    }

    pub(crate) fn into_response(self) -> Response {
        error_with_status(self.status, &self.error)
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return true;
    };
    value.to_str().is_ok_and(is_json_media)
}

/// `true` for a JSON media type (`application/json`, `application/<x>+json`), whatever its
/// parameters and case.
pub(crate) fn is_json_media(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    // Compared without lower-casing a copy: this runs on every request with a body.
    let ends_with = |suffix: &str| {
        essence.len() >= suffix.len()
            && essence.as_bytes()[essence.len() - suffix.len()..]
                .eq_ignore_ascii_case(suffix.as_bytes())
    };
    let starts_with = |prefix: &str| {
        essence.len() >= prefix.len()
            && essence.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
    };
    (essence.len() == "application/json".len() && starts_with("application/json"))
        || (starts_with("application/") && ends_with("+json"))
}

/// The request body's bytes, at most `limit` of them (`413` past it, by `Content-Length`
/// or as it streams in). A body that does not arrive `within` (the request timeout) is `408`.
pub(crate) async fn read_bytes(
    headers: &HeaderMap,
    body: Body,
    limit: BodyLimit,
    within: Duration,
) -> Result<Bytes, Rejection> {
    refuse_declared_length(headers, limit)?;
    let mut reading = std::pin::pin!(read_body(body, limit));
    // A body that is here already (a small request's, read with its head) is taken at once,
    // with no timer: a timer's deadline is a read of the precise clock per request.
    if let Poll::Ready(result) = futures::poll!(reading.as_mut()) {
        return result;
    }
    // Boxed: a timer is large, and most bodies never need one.
    match Box::pin(tokio::time::timeout(within, reading)).await {
        Ok(result) => result,
        Err(_) => Err(Rejection::body_timeout()),
    }
}

/// `413` for a body whose `Content-Length` is past `limit`, before a byte of it is read.
pub(crate) fn refuse_declared_length(
    headers: &HeaderMap,
    limit: BodyLimit,
) -> Result<(), Rejection> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.parse::<u64>().ok());
    match declared {
        Some(length) if length > limit.bytes as u64 => Err(too_large(limit)),
        _ => Ok(()),
    }
}

/// The input of a POST: the JSON body (empty means `{}`), at most `limit` bytes (see
/// [`read_bytes`]).
pub(crate) async fn read_json_body(
    headers: &HeaderMap,
    body: Body,
    limit: BodyLimit,
    within: Duration,
) -> Result<Value, Rejection> {
    let bytes = read_bytes(headers, body, limit, within).await?;
    if bytes.is_empty() {
        return Ok(json!({}));
    }
    if !is_json(headers) {
        return Err(Rejection {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            error: CallError::new(
                ErrorCode::ValidationError,
                "the request body must be application/json",
            ),
        });
    }
    parse_json(&bytes)
}

/// The JSON of a body, its UTF-8 checked once, as a whole, rather than by `from_slice` string
/// by string; a body that is not UTF-8 is read by `from_slice`, for the error it always gave.
fn parse_json(bytes: &[u8]) -> Result<Value, Rejection> {
    let parsed = match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    };
    parsed.map_err(|error| {
        Rejection::from(CallError::new(
            ErrorCode::ValidationError,
            format!("the request body is not valid JSON: {error}"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::{BodyLimit, is_json_media, parse_json, read_body};
    use axum::body::Body;
    use bytes::Bytes;

    fn chunked(chunks: &[&'static [u8]]) -> Body {
        let chunks: Vec<Result<Bytes, std::io::Error>> = chunks
            .iter()
            .map(|chunk| Ok(Bytes::from_static(chunk)))
            .collect();
        Body::from_stream(futures::stream::iter(chunks))
    }

    #[tokio::test]
    async fn a_body_in_one_chunk_or_several_reads_whole_and_the_limit_counts_every_chunk() {
        let limit = BodyLimit::server(8);
        let read = |chunks: &[&'static [u8]]| read_body(chunked(chunks), limit);
        assert_eq!(read(&[]).await.unwrap(), Bytes::new());
        assert_eq!(read(&[b"12345678"]).await.unwrap(), &b"12345678"[..]);
        for chunks in [
            &[&b"1234"[..], b"5678"][..],
            &[b"", b"12", b"", b"345", b"678"],
            &[b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"8"],
        ] {
            assert_eq!(read(chunks).await.unwrap(), &b"12345678"[..], "{chunks:?}");
        }
        for chunks in [
            &[&b"123456789"[..]][..],
            &[b"1234", b"5678", b"9"],
            &[b"12345678", b"9"],
        ] {
            let refused = read(chunks).await.unwrap_err();
            assert_eq!(
                refused.status,
                http::StatusCode::PAYLOAD_TOO_LARGE,
                "{chunks:?}"
            );
        }
    }

    #[test]
    fn a_body_reads_as_from_slice_reads_it_and_text_that_is_not_utf8_is_named() {
        for body in [
            "{\"a\":\"caf\u{e9}\",\"b\":[1,2.5,null]}".as_bytes(),
            br#"{"a":"\u00e9"}"#,
        ] {
            let expected: serde_json::Value = serde_json::from_slice(body).unwrap();
            assert_eq!(parse_json(body).ok(), Some(expected));
        }
        for body in [
            &b"{\"a\":\"\xff\"}"[..],
            b"{\"a\":1}\xff",
            b"{\"a\":",
            b"{\"\xc3\":1}",
        ] {
            let error = parse_json(body).unwrap_err().error;
            let theirs = serde_json::from_slice::<serde_json::Value>(body).unwrap_err();
            assert_eq!(
                error.message,
                format!("the request body is not valid JSON: {theirs}")
            );
        }
        let error = parse_json(b"{\"a\":\"\xff\"}").unwrap_err().error;
        assert!(
            error.message.contains("invalid unicode code point"),
            "{}",
            error.message
        );
    }

    #[test]
    fn json_media_types_are_told_apart_whatever_their_case_and_parameters() {
        for json in [
            "application/json",
            "Application/JSON; charset=utf-8",
            " application/json ;q=1",
            "application/problem+json",
            "APPLICATION/VND.API+JSON",
            "application/+json",
        ] {
            assert!(is_json_media(json), "{json}");
        }
        for other in [
            "",
            "text/plain",
            "application/jsonl",
            "application/json-seq",
            "application/xml",
            "text/json",
            "application/ünï+jsön",
            "application",
            "+json",
        ] {
            assert!(!is_json_media(other), "{other}");
        }
    }
}
