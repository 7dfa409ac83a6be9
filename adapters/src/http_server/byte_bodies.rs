//! Bodies of raw bytes that are never held whole: a request body read as a
//! [`ByteStream`] while the operation runs, and a stream of `Binary` items answered as one
//! raw response body, chunk by chunk.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::{HeaderValue, StatusCode, header};
use opkit::binary::ByteStream;
use opkit::middleware::{Reply, ReplyStream};
use opkit::{CallError, ErrorCode};
use serde_json::json;
use std::time::Duration;
use tokio_util::sync::DropGuard;

/// The `details.limit` of a streamed body that stalled: answered `408`.
pub(crate) const BODY_TIMEOUT: &str = "bodyTimeout";

/// `body` as a [`ByteStream`]: it ends with a `VALIDATION_ERROR` (`details.limit:
/// "bodyLimit"`, answered `413`) once more than `limit` bytes arrived, and with a `TIMEOUT`
/// (`details.limit: "bodyTimeout"`, answered `408`) when the whole body has not arrived
/// within `within` from now (the request timeout, as for a body read before the call; the
/// call gets that much longer, see [`Shape::body_time`](super::handlers::Shape)). Nothing past
/// the error is read.
pub(crate) fn request_stream(
    body: Body,
    limit: super::request_body::BodyLimit,
    within: Duration,
) -> ByteStream {
    let deadline = tokio::time::Instant::now() + within;
    struct Reading {
        frames: Option<axum::body::BodyDataStream>,
        seen: usize,
    }
    let state = Reading {
        frames: Some(body.into_data_stream()),
        seen: 0,
    };
    ByteStream::new(futures::stream::unfold(
        state,
        move |mut state| async move {
            let frames = state.frames.as_mut()?;
            let item = match tokio::time::timeout_at(deadline, frames.next()).await {
            Err(_) => Err(CallError::timeout(format!(
                "the request body did not arrive within {within:?} (HttpServer::request_timeout)"
            ))
            .with_details(json!({"limit": BODY_TIMEOUT, "max": within.as_millis() as u64}))),
            Ok(None) => return None,
            Ok(Some(Err(error))) => Err(CallError::new(
                ErrorCode::ValidationError,
                format!("the request body could not be read: {error}"),
            )),
            Ok(Some(Ok(chunk))) if state.seen + chunk.len() > limit.bytes => {
                Err(super::request_body::body_too_large(limit))
            }
            Ok(Some(Ok(chunk))) => {
                state.seen += chunk.len();
                return Some((Ok(chunk), state));
            }
        };
            state.frames = None;
            Some((item, state))
        },
    ))
}

/// The bytes of one item of a `Binary` stream (its data is a base64 string).
fn chunk_of(reply: Reply) -> Result<Bytes, CallError> {
    use base64::Engine;
    let envelope = reply.into_envelope()?;
    envelope
        .data
        .as_str()
        .and_then(|text| base64::engine::general_purpose::STANDARD.decode(text).ok())
        .map(Bytes::from)
        .ok_or_else(|| CallError::execution("an item of a byte stream is not base64 bytes"))
}

/// A stream operation's `Binary` items as one raw body, with `status` and `content_type`. The
/// first item is awaited before answering, so an operation that fails at once gets its error
/// status (`Err` with the error); an error after that ends the body early (the client sees the
/// transfer cut, not a complete body). The guard (the call's cancellation) lives as long as
/// the body.
pub(crate) async fn response_stream(
    mut items: ReplyStream,
    guard: Option<DropGuard>,
    (status, content_type): (StatusCode, HeaderValue),
) -> Result<Response, CallError> {
    let first = match items.next().await {
        Some(item) => Some(chunk_of(item?)?),
        None => None,
    };
    let rest = items.map(|item| item.and_then(chunk_of));
    let chunks = futures::stream::iter(first.map(Ok))
        .chain(rest)
        .map(|item| item.map_err(|error| std::io::Error::other(error.to_string())));
    let body = Body::from_stream(Guarded {
        chunks: Box::pin(chunks),
        _guard: guard,
    });
    Ok((status, [(header::CONTENT_TYPE, content_type)], body).into_response())
}

/// A body stream holding the call's cancellation guard: dropping the body (the client went
/// away) cancels the call.
struct Guarded<S> {
    chunks: std::pin::Pin<Box<S>>,
    _guard: Option<DropGuard>,
}

impl<S: Stream> Stream for Guarded<S> {
    type Item = S::Item;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<S::Item>> {
        self.chunks.as_mut().poll_next(cx)
    }
}
