//! Whole bodies gzipped in one piece, before tower-http's compression sees them.
//!
//! tower-http's compression streams: it makes a deflate state for every response it
//! compresses (~300 KiB) and feeds it the body frame by frame, sending what comes out
//! chunked. Most answers of this server are one frame held in memory (an operation's
//! envelope, a REST route's JSON): for them a kept state saves the making of one (see
//! [`gzip`](crate::http_server::gzip)), and the answer says its length. [`GzipWhole`] sits
//! inside tower-http's layer: when the request picks gzip (as tower-http reads its
//! `Accept-Encoding`) and the response may be compressed, a body whose one frame of its
//! exact size is ready with the response, and no larger than [`WHOLE_MAX`], is gzipped
//! at once with the thread's kept deflate state ([`gzip`](crate::http_server::gzip)) and
//! marked `Content-Encoding: gzip`, which tower-http then leaves alone. Any other body (a
//! stream, a body not ready yet, a larger one) goes on to tower-http as it came, its first
//! frame put back in front if it was read.

use super::{Compression, Headers, compressible_with};
use crate::http_server::gzip::gzip;
use axum::body::{Body, HttpBody};
use bytes::Bytes;
use http::{HeaderValue, Request, Response, header};
use hyper::body::{Frame, SizeHint};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tower_service::Service;

/// The largest body gzipped in one piece: ~0.9 ms of a worker's time at the default level
/// (JSON compresses at ~300 MB/s there), ~0.2 ms at the fastest. A larger one is compressed
/// by tower-http as it streams, a piece per poll.
pub(super) const WHOLE_MAX: u64 = 256 << 10;

/// The service inside tower-http's compression (see the module docs).
#[derive(Clone)]
pub(super) struct GzipWhole<S> {
    pub(super) inner: S,
    pub(super) compression: Compression,
}

impl<S> Service<Request<Body>> for GzipWhole<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Whole<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let compression = super::prefers_gzip(request.headers()).then_some(self.compression);
        Whole {
            inner: self.inner.call(request),
            compression,
        }
    }
}

pin_project_lite::pin_project! {
    /// The inner service's future, its response gzipped whole where it can be.
    pub(crate) struct Whole<F> {
        #[pin]
        inner: F,
        // `None` when the request did not pick gzip.
        compression: Option<Compression>,
    }
}

impl<F> Future for Whole<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = ready!(this.inner.poll(cx))?;
        Poll::Ready(Ok(match *this.compression {
            Some(compression) => gzip_whole(response, compression, cx),
            None => response,
        }))
    }
}

/// `response` gzipped in one piece when it may be compressed and its body is one frame of its
/// exact size (at most [`WHOLE_MAX`]) ready now; otherwise as it came (what was read of its
/// body put back).
fn gzip_whole(
    response: Response<Body>,
    compression: Compression,
    cx: &mut Context<'_>,
) -> Response<Body> {
    let varies = {
        let headers = Headers::of(response.headers());
        if !compressible_with(&response, &headers, compression.min_size) {
            return response;
        }
        headers.varies
    };
    let Some(size) = response
        .body()
        .size_hint()
        .exact()
        .filter(|size| *size <= WHOLE_MAX)
    else {
        return response;
    };
    let (mut parts, mut body) = response.into_parts();
    // Polled with the response's task: a body that is not ready wakes it, once, for nothing.
    let whole = match Pin::new(&mut body).poll_frame(cx) {
        Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
            Ok(data) if data.len() as u64 == size && body.is_end_stream() => data,
            Ok(data) => return put_back(parts, Ok(Frame::data(data)), body),
            Err(frame) => return put_back(parts, Ok(frame), body),
        },
        Poll::Ready(Some(Err(error))) => return put_back(parts, Err(error), body),
        Poll::Ready(None) => Bytes::new(),
        Poll::Pending => return Response::from_parts(parts, body),
    };
    match gzip(&[&whole], compression.level.gzip()) {
        Ok(gzipped) => {
            // What tower-http does to a response it compresses (the length is the new body's).
            let headers = &mut parts.headers;
            headers.remove(header::ACCEPT_RANGES);
            headers.remove(header::CONTENT_LENGTH);
            headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            if !varies {
                headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
            }
            Response::from_parts(parts, Body::from(gzipped))
        }
        Err(error) => {
            // Not expected of an in-memory deflate; tower-http compresses the body instead.
            tracing::warn!(%error, "a response body could not be gzipped whole");
            Response::from_parts(parts, Body::from(whole))
        }
    }
}

/// A response of `parts` whose body is `first` (read already), then `rest`.
fn put_back(
    parts: http::response::Parts,
    first: Result<Frame<Bytes>, axum::Error>,
    rest: Body,
) -> Response<Body> {
    Response::from_parts(
        parts,
        Body::new(PutBack {
            first: Some(first),
            rest,
        }),
    )
}

/// A body whose first frame was read: that frame, then the rest of the body.
struct PutBack {
    first: Option<Result<Frame<Bytes>, axum::Error>>,
    rest: Body,
}

impl HttpBody for PutBack {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        match self.first.take() {
            Some(first) => Poll::Ready(Some(first)),
            None => Pin::new(&mut self.rest).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let first = match &self.first {
            Some(Ok(frame)) => frame.data_ref().map_or(0, |data| data.len() as u64),
            _ => 0,
        };
        let rest = self.rest.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(rest.lower().saturating_add(first));
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper.saturating_add(first));
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    async fn bytes(body: Body) -> Bytes {
        axum::body::to_bytes(body, usize::MAX).await.unwrap()
    }

    fn compression() -> Compression {
        Compression {
            min_size: super::super::MinSize(100),
            level: super::super::CompressionLevel::Default,
        }
    }

    fn gunzip(body: &[u8]) -> Vec<u8> {
        let mut decoded = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(body), &mut decoded).unwrap();
        decoded
    }

    /// `response` through [`gzip_whole`] (its body, when gzipped whole, is not read again).
    fn through(response: Response<Body>) -> Response<Body> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        gzip_whole(response, compression(), &mut cx)
    }

    #[tokio::test]
    async fn a_body_in_memory_is_gzipped_whole() {
        let json = br#"{"data":[1,2,3],"meta":{}}"#.repeat(20);
        let mut response = Response::new(Body::from(json.clone()));
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(json.len()));
        headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        headers.insert(header::VARY, HeaderValue::from_static("origin"));
        let response = through(response);
        let headers = response.headers();
        assert_eq!(headers[header::CONTENT_ENCODING], "gzip");
        assert!(!headers.contains_key(header::CONTENT_LENGTH));
        assert!(!headers.contains_key(header::ACCEPT_RANGES));
        let vary: Vec<_> = headers.get_all(header::VARY).iter().collect();
        assert_eq!(vary, ["origin", "accept-encoding"]);
        assert_eq!(gunzip(&bytes(response.into_body()).await), json);
    }

    #[tokio::test]
    async fn other_bodies_go_on_as_they_came() {
        let chunk = || Ok::<_, Infallible>(Bytes::from(vec![b'a'; 300]));
        // A body of two frames and an exact size: the first frame is read, and put back.
        let two = Response::new(Body::new(PutBack {
            first: Some(Ok(Frame::data(Bytes::from(vec![b'a'; 300])))),
            rest: Body::from(vec![b'b'; 300]),
        }));
        // A stream whose frame is not ready (its size is unknown too).
        let (sender, receiver) = futures::channel::mpsc::unbounded::<Result<Bytes, Infallible>>();
        let waiting = Response::new(Body::from_stream(receiver));
        // Under the minimum, and larger than the most gzipped whole.
        let small = Response::new(Body::from(vec![b'a'; 99]));
        let large = Response::new(Body::from(vec![b'a'; WHOLE_MAX as usize + 1]));
        for (response, length) in [(two, 600), (small, 99), (large, WHOLE_MAX as usize + 1)] {
            let response = through(response);
            assert!(!response.headers().contains_key(header::CONTENT_ENCODING));
            let body = bytes(response.into_body()).await;
            assert_eq!(body.len(), length);
            assert!(length != 600 || body.starts_with(b"aaa") && body.ends_with(b"bbb"));
        }
        let response = through(waiting);
        assert!(!response.headers().contains_key(header::CONTENT_ENCODING));
        sender.unbounded_send(chunk()).unwrap();
        drop(sender);
        let frames: Vec<_> = response.into_body().into_data_stream().collect().await;
        assert_eq!(frames.len(), 1);
    }

    #[test]
    fn a_put_back_body_says_its_size() {
        let body = PutBack {
            first: Some(Ok(Frame::data(Bytes::from_static(b"abc")))),
            rest: Body::from("defg"),
        };
        assert_eq!(body.size_hint().exact(), Some(7));
        assert!(!body.is_end_stream());
    }
}
