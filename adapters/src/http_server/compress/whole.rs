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
use http::{HeaderMap, HeaderValue, Request, Response, header};
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
        let compression = prefers_gzip(request.headers()).then_some(self.compression);
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

/// `true` when tower-http's compression, offering gzip alone, picks it for a request with
/// these headers: among the `Accept-Encoding` items naming `gzip` (or `x-gzip`) or
/// `identity`, with no parameter or a well-formed weight as their one parameter, the one
/// with the highest nonzero weight is gzip (gzip winning a tie). A `*` is not taken for
/// either.
pub(super) fn prefers_gzip(headers: &HeaderMap) -> bool {
    let (mut gzip, mut identity) = (0, 0);
    let items = headers
        .get_all(header::ACCEPT_ENCODING)
        .into_iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','));
    for item in items {
        let (coding, weight) = match item.split_once(';') {
            Some((coding, weight)) => match qvalue(weight.trim()) {
                Some(weight) => (coding, weight),
                None => continue,
            },
            None => (item, 1000),
        };
        let coding = coding.trim();
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            gzip = gzip.max(weight);
        } else if coding.eq_ignore_ascii_case("identity") {
            identity = identity.max(weight);
        }
    }
    gzip > 0 && gzip >= identity
}

/// A weight parameter, `q=` and a qvalue (RFC 9110 §12.4.2, as tower-http reads it: a `0`
/// or `1`, then optionally `.` and up to three digits, at most 1), in thousandths.
fn qvalue(parameter: &str) -> Option<u16> {
    let value = parameter
        .strip_prefix("q=")
        .or_else(|| parameter.strip_prefix("Q="))?;
    let (whole, fraction) = match value.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (value, ""),
    };
    let whole: u16 = match whole {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    if fraction.len() > 3 || !fraction.bytes().all(|digit| digit.is_ascii_digit()) {
        return None;
    }
    let thousandths = fraction
        .bytes()
        .zip([100, 10, 1])
        .map(|(digit, scale)| u16::from(digit - b'0') * scale)
        .sum::<u16>();
    let weight = whole + thousandths;
    (weight <= 1000).then_some(weight)
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

    /// What tower-http's layer alone does with a compressible answer for these
    /// `Accept-Encoding` values: compress it or not.
    async fn layer_compresses(values: &[&'static str]) -> bool {
        let mut layered = axum::Router::new()
            .route("/", axum::routing::get(|| async { vec![b'x'; 2_000] }))
            .layer(tower_http::compression::CompressionLayer::new());
        let mut request = Request::new(Body::empty());
        for value in values {
            request
                .headers_mut()
                .append(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
        }
        std::future::poll_fn(|cx| Service::<Request<Body>>::poll_ready(&mut layered, cx))
            .await
            .unwrap();
        let response = layered.call(request).await.unwrap();
        response.headers().contains_key(header::CONTENT_ENCODING)
    }

    #[tokio::test]
    async fn gzip_is_picked_when_tower_http_picks_it() {
        let cases: &[&[&'static str]] = &[
            &[],
            &["gzip"],
            &["GZIP"],
            &["x-gzip"],
            &["gzip, deflate, br"],
            &["br;q=1.0, gzip;q=0.5"],
            &["gzip;q=0"],
            &["gzip;q=0.000"],
            &["gzip;q=0.001"],
            &["gzip; q=0.5"],
            &["gzip ;q=0.5"],
            &["gzip;q = 0.5"],
            &["gzip;Q=1"],
            &["gzip;q=1.000"],
            &["gzip;q=1.001"],
            &["gzip;q=0.5000"],
            &["gzip;q=.5"],
            &["gzip;q=0.5;level=1"],
            &["gzip;level=1"],
            &["gzip;q=0.5, identity"],
            &["gzip, identity"],
            &["gzip;q=0.5, identity;q=0.5"],
            &["gzip;q=0.5, identity;q=0.6"],
            &["identity;q=0, gzip;q=0.1"],
            &["identity"],
            &["*"],
            &["*;q=0.5, gzip;q=0"],
            &["deflate", "gzip;q=0.2"],
            &["gzip;q=0", "gzip"],
            &["gzip", "identity;q=1"],
            &[" gzip ,identity;q=0.9 "],
            &["gzip;q=0.9;", "identity;q=0.95"],
        ];
        for values in cases {
            let mut headers = HeaderMap::new();
            for value in *values {
                headers.append(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
            }
            assert_eq!(
                prefers_gzip(&headers),
                layer_compresses(values).await,
                "{values:?}"
            );
        }
    }

    #[test]
    fn qvalues_are_read_as_the_grammar_writes_them() {
        assert_eq!(qvalue("q=1"), Some(1000));
        assert_eq!(qvalue("q=0.25"), Some(250));
        assert_eq!(qvalue("Q=0.5"), Some(500));
        assert_eq!(qvalue("q=0."), Some(0));
        assert_eq!(qvalue("q=1.0"), Some(1000));
        for bad in [
            "q=2", "q=1.5", "q=0.1234", "q=", "q=-0", "q=0.a", "x=1", "q=00.5",
        ] {
            assert_eq!(qvalue(bad), None, "{bad}");
        }
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
