//! Response compression for the requests that ask for it. A request with an
//! `Accept-Encoding` header goes through `tower-http`'s compression; one without skips it
//! (its body wrapper, the response body boxed a second time, the encoding negotiation),
//! and its response still says `Vary: Accept-Encoding` wherever the compressed one would,
//! so a cache keeps the two apart. A response carrying [`Uncompressed`] (a route's
//! `compress = false`) is never compressed and says no `Vary` for it.

use axum::body::Body;
use futures::TryFutureExt;
use futures::future::{Either, MapOk};
use http::{HeaderValue, Request, Response, header};
use std::convert::Infallible;
use std::task::{Context, Poll};
use tower_http::compression::predicate::{DefaultPredicate, Predicate};
use tower_http::compression::{Compression, CompressionBody, CompressionLayer, ResponseFuture};
use tower_layer::Layer;
use tower_service::Service;

/// Marks a response the compression leaves alone (in its extensions).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Uncompressed;

/// What may be compressed: what tower-http compresses by default, unless marked
/// [`Uncompressed`].
#[derive(Clone, Default)]
pub(crate) struct Allowed(DefaultPredicate);

impl Predicate for Allowed {
    fn should_compress<B: axum::body::HttpBody>(&self, response: &http::Response<B>) -> bool {
        response.extensions().get::<Uncompressed>().is_none() && self.0.should_compress(response)
    }
}

/// The layer: gzip for the requests that accept an encoding, nothing for the others.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CompressWhenAsked;

impl<S: Clone> Layer<S> for CompressWhenAsked {
    type Service = CompressWhenAskedService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CompressWhenAskedService {
            compressed: CompressionLayer::new()
                .compress_when(Allowed::default())
                .layer(inner.clone()),
            plain: inner,
        }
    }
}

/// A service behind [`CompressWhenAsked`]: the same inner service with and without
/// compression.
#[derive(Clone)]
pub(crate) struct CompressWhenAskedService<S> {
    compressed: Compression<S, Allowed>,
    plain: S,
}

type Compressed<F> =
    MapOk<ResponseFuture<F, Allowed>, fn(Response<CompressionBody<Body>>) -> Response<Body>>;
type Plain<F> = MapOk<F, fn(Response<Body>) -> Response<Body>>;

impl<S> Service<Request<Body>> for CompressWhenAskedService<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Clone,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Either<Compressed<S::Future>, Plain<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The two share one inner service's readiness (axum's routes are always ready);
        // `call` uses whichever the request needs.
        match self.plain.poll_ready(cx) {
            Poll::Ready(Ok(())) => self.compressed.poll_ready(cx),
            other => other,
        }
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if request.headers().contains_key(header::ACCEPT_ENCODING) {
            let boxed: fn(Response<CompressionBody<Body>>) -> Response<Body> =
                |response| response.map(Body::new);
            Either::Left(self.compressed.call(request).map_ok(boxed))
        } else {
            let varied: fn(Response<Body>) -> Response<Body> = vary;
            Either::Right(self.plain.call(request).map_ok(varied))
        }
    }
}

/// `Vary: Accept-Encoding` on a response the compression layer would have compressed for a
/// client that accepted gzip (what that layer adds to every such response).
fn vary(mut response: Response<Body>) -> Response<Body> {
    let varies = || {
        response
            .headers()
            .get_all(header::VARY)
            .iter()
            .any(|value| value.as_bytes().eq_ignore_ascii_case(b"accept-encoding"))
    };
    if compressible(&response) && !varies() {
        response
            .headers_mut()
            .append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

/// What the compression layer would compress: not already encoded or ranged, and what
/// [`Allowed`] allows, decided as tower-http's `DefaultPredicate` decides it (32 bytes or
/// more, or of unknown size; not gRPC but gRPC-Web, not an image but SVG, not an event
/// stream), reading the content type once rather than once per rule: every response
/// without `Accept-Encoding` passes here. A test holds it to `Allowed`'s answer.
fn compressible(response: &Response<Body>) -> bool {
    use axum::body::HttpBody;
    let headers = response.headers();
    if headers.contains_key(header::CONTENT_ENCODING)
        || headers.contains_key(header::CONTENT_RANGE)
        || response.extensions().get::<Uncompressed>().is_some()
    {
        return false;
    }
    let size = response.body().size_hint().exact().or_else(|| {
        let length = headers.get(header::CONTENT_LENGTH)?;
        length.to_str().ok()?.parse().ok()
    });
    if size.is_some_and(|size| size < 32) {
        return false;
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let excluded = |kind: &str, except: Option<&str>| {
        content_type.starts_with(kind) && !except.is_some_and(|it| content_type.starts_with(it))
    };
    !excluded("application/grpc", Some("application/grpc-web"))
        && !excluded("image/", Some("image/svg+xml"))
        && !excluded("text/event-stream", None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_compressible_is_what_the_compression_layer_compresses() {
        let bodies = [
            ("", None),
            ("short", None),
            ("x".repeat(31).leak() as &str, None),
            ("x".repeat(32).leak(), None),
            ("x".repeat(100).leak(), None),
            ("", Some("100")),
            ("", Some("31")),
            ("", Some("not a number")),
        ];
        let types = [
            None,
            Some("application/json"),
            Some("application/grpc"),
            Some("application/grpc+proto"),
            Some("application/grpc-web"),
            Some("image/png"),
            Some("image/svg+xml"),
            Some("text/event-stream"),
            Some("text/html; charset=utf-8"),
        ];
        let others = [
            None,
            Some(header::CONTENT_ENCODING),
            Some(header::CONTENT_RANGE),
        ];
        for (body, length) in bodies {
            for content_type in types {
                for other in &others {
                    for marked in [false, true] {
                        let make = || {
                            let mut response = Response::new(if length.is_some() {
                                Body::from_stream(futures::stream::iter([Ok::<_, Infallible>(
                                    body.as_bytes().to_vec(),
                                )]))
                            } else {
                                Body::from(body.as_bytes().to_vec())
                            });
                            let headers = response.headers_mut();
                            if let Some(length) = length {
                                headers.insert(header::CONTENT_LENGTH, length.parse().unwrap());
                            }
                            if let Some(content_type) = content_type {
                                headers.insert(header::CONTENT_TYPE, content_type.parse().unwrap());
                            }
                            if let Some(other) = other {
                                headers.insert(other.clone(), HeaderValue::from_static("x"));
                            }
                            if marked {
                                response.extensions_mut().insert(Uncompressed);
                            }
                            response
                        };
                        let response = make();
                        let layer = !response.headers().contains_key(header::CONTENT_ENCODING)
                            && !response.headers().contains_key(header::CONTENT_RANGE)
                            && Allowed::default().should_compress(&response);
                        assert_eq!(
                            compressible(&make()),
                            layer,
                            "{body:?} {length:?} {content_type:?} {other:?} {marked}"
                        );
                    }
                }
            }
        }
    }
}
