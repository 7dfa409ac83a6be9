//! Response compression for the requests that ask for it. A request with an
//! `Accept-Encoding` header goes through `tower-http`'s compression; one without skips it
//! (its body wrapper, the response body boxed a second time, the encoding negotiation),
//! and its response still says `Vary: Accept-Encoding` wherever the compressed one would,
//! so a cache keeps the two apart. A response carrying [`Uncompressed`] (a route's
//! `compress = false`) is never compressed and says no `Vary` for it, nor is a body under
//! the server's minimum size ([`MinSize`], 1,400 bytes unless set): gzip costs a response a
//! fixed few µs and a ~300 KiB deflate state whatever its size, and a body that fits one TCP
//! segment saves no packet by it. A body held in memory is gzipped in one piece with a deflate
//! state kept per thread rather than a new one per response (see [`whole`]).

mod negotiate;
mod whole;

pub(crate) use negotiate::prefers_gzip;

use axum::body::Body;
use futures::TryFutureExt;
use futures::future::{Either, MapOk};
use http::{HeaderValue, Request, Response, header};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::compression::{CompressionBody, CompressionLayer, ResponseFuture};
use tower_layer::Layer;
use tower_service::Service;

/// Marks a response the compression leaves alone (in its extensions).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Uncompressed;

/// The smallest body compressed, in bytes (a body of unknown size always may be).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MinSize(pub(crate) u16);

impl MinSize {
    /// One TCP segment's payload on an Ethernet path, with room for TCP and TLS options: a
    /// body this small is sent in one segment compressed or not.
    pub(crate) const DEFAULT: Self = Self(1400);
}

/// How hard gzip works on a response ([`HttpServer::compression_level`]).
///
/// Measured on a 19 KB JSON list (`benches`' `gzip_level`, `flate2` on `zlib-rs`):
/// [`Fastest`](Self::Fastest) took ~17 µs and wrote 49% more bytes (3,390) than
/// [`Default`](Self::Default), which took ~63 µs (2,268 bytes); [`Best`](Self::Best) ~102 µs
/// for no fewer. On bodies of a few KB the levels cost a few µs each.
///
/// [`HttpServer::compression_level`]: super::HttpServer::compression_level
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CompressionLevel {
    /// gzip level 1 (nginx's default).
    Fastest,
    /// gzip level 6 (zlib's default, tower-http's and most servers').
    #[default]
    Default,
    /// gzip level 9.
    Best,
}

impl CompressionLevel {
    /// The gzip level.
    pub(crate) fn gzip(self) -> u32 {
        match self {
            Self::Fastest => 1,
            Self::Default => 6,
            Self::Best => 9,
        }
    }
}

/// How a server compresses: from which size, how hard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Compression {
    pub(crate) min_size: MinSize,
    pub(crate) level: CompressionLevel,
}

/// What may be compressed: what tower-http's `DefaultPredicate` compresses (not gRPC but
/// gRPC-Web, not an image but SVG, not an event stream) from `MinSize` bytes up rather than
/// from its 32, unless marked [`Uncompressed`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Allowed(MinSize);

impl Predicate for Allowed {
    fn should_compress<B: axum::body::HttpBody>(&self, response: &http::Response<B>) -> bool {
        response.extensions().get::<Uncompressed>().is_none()
            && SizeAbove::new(self.0.0)
                .and(NotForContentType::GRPC)
                .and(NotForContentType::IMAGES)
                .and(NotForContentType::SSE)
                .should_compress(response)
    }
}

/// The layer: gzip for the requests that accept an encoding, of bodies from the minimum size
/// up; nothing for the others.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CompressWhenAsked(pub(crate) Compression);

impl<S: Clone> Layer<S> for CompressWhenAsked {
    type Service = CompressWhenAskedService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CompressWhenAskedService {
            inner,
            compression: self.0,
        }
    }
}

/// A service behind [`CompressWhenAsked`]: the inner service, wrapped in tower-http's
/// compression for a request that accepts an encoding. It holds the inner service once:
/// axum clones a route's service for every request, and a second copy (a compressing one
/// kept beside the plain one) would be cloned and dropped with it every time.
#[derive(Clone)]
pub(crate) struct CompressWhenAskedService<S> {
    inner: S,
    compression: Compression,
}

type Compressed<F> = MapOk<
    ResponseFuture<whole::Whole<F>, Allowed>,
    fn(Response<CompressionBody<Body>>) -> Response<Body>,
>;

pin_project_lite::pin_project! {
    /// The inner service's future, its response given `Vary` where a compressed one would
    /// say it.
    pub(crate) struct Varied<F> {
        #[pin]
        inner: F,
        min_size: MinSize,
    }
}

impl<F> Future for Varied<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let min_size = *this.min_size;
        this.inner
            .poll(cx)
            .map_ok(|response| vary(response, min_size))
    }
}

impl<S> Service<Request<Body>> for CompressWhenAskedService<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Clone,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Either<Compressed<S::Future>, Varied<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if request.headers().contains_key(header::ACCEPT_ENCODING) {
            // The instance that was polled ready goes into the compression, a clone of it
            // stays (tower's idiom); the compression's own readiness is its inner one's.
            let clone = self.inner.clone();
            let ready = std::mem::replace(&mut self.inner, clone);
            let level = i32::try_from(self.compression.level.gzip()).unwrap_or(6);
            let mut compressing = CompressionLayer::new()
                .quality(tower_http::CompressionLevel::Precise(level))
                .compress_when(Allowed(self.compression.min_size))
                .layer(whole::GzipWhole {
                    inner: ready,
                    compression: self.compression,
                });
            let boxed: fn(Response<CompressionBody<Body>>) -> Response<Body> =
                |response| response.map(Body::new);
            Either::Left(compressing.call(request).map_ok(boxed))
        } else {
            Either::Right(Varied {
                inner: self.inner.call(request),
                min_size: self.compression.min_size,
            })
        }
    }
}

/// `Vary: Accept-Encoding` on a response the compression layer would have compressed for a
/// client that accepted gzip (what that layer adds to every such response).
fn vary(mut response: Response<Body>, min_size: MinSize) -> Response<Body> {
    let headers = Headers::of(response.headers());
    if compressible_with(&response, &headers, min_size) && !headers.varies {
        response
            .headers_mut()
            .append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

/// What [`vary`] reads of a response's headers, gathered in one pass over them (every
/// response without `Accept-Encoding` passes here; a response has a few headers, so a pass
/// costs less than a lookup of each).
struct Headers<'a> {
    /// `Content-Encoding` or `Content-Range` is set: the body is not compressed again.
    encoded: bool,
    /// The first `Content-Length`, as `HeaderMap::get` would give it.
    length: Option<&'a HeaderValue>,
    /// The first `Content-Type`.
    content_type: Option<&'a HeaderValue>,
    /// A `Vary: accept-encoding` is there already.
    varies: bool,
}

impl<'a> Headers<'a> {
    fn of(map: &'a http::HeaderMap) -> Self {
        let mut headers = Self {
            encoded: false,
            length: None,
            content_type: None,
            varies: false,
        };
        for (name, value) in map {
            if name == header::CONTENT_TYPE {
                headers.content_type.get_or_insert(value);
            } else if name == header::CONTENT_LENGTH {
                headers.length.get_or_insert(value);
            } else if name == header::VARY {
                headers.varies |= value.as_bytes().eq_ignore_ascii_case(b"accept-encoding");
            } else if name == header::CONTENT_ENCODING || name == header::CONTENT_RANGE {
                headers.encoded = true;
            }
        }
        headers
    }
}

/// [`compressible_with`], the headers read for it alone (what the test holds to `Allowed`).
#[cfg(test)]
fn compressible(response: &Response<Body>, min_size: MinSize) -> bool {
    compressible_with(response, &Headers::of(response.headers()), min_size)
}

/// What the compression layer would compress (`response`, whose headers `headers` read): not
/// already encoded or ranged, and what [`Allowed`] allows, decided as its predicates decide it
/// (`min_size` bytes or more, or of unknown size; not gRPC but gRPC-Web, not an image but SVG,
/// not an event stream). A test holds it to `Allowed`'s answer.
fn compressible_with(response: &Response<Body>, headers: &Headers<'_>, min_size: MinSize) -> bool {
    use axum::body::HttpBody;
    if headers.encoded || response.extensions().get::<Uncompressed>().is_some() {
        return false;
    }
    let size = response.body().size_hint().exact().or_else(|| {
        let length = headers.length?;
        length.to_str().ok()?.parse().ok()
    });
    if size.is_some_and(|size| size < u64::from(min_size.0)) {
        return false;
    }
    let content_type = headers
        .content_type
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
    fn a_response_varies_on_the_encoding_once() {
        let json = |vary: &[&'static str]| {
            let mut response = Response::new(Body::from(vec![b' '; 64]));
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            for value in vary {
                headers.append(header::VARY, HeaderValue::from_static(value));
            }
            response
        };
        let varies = |response: Response<Body>| -> Vec<String> {
            vary(response, MinSize(32))
                .headers()
                .get_all(header::VARY)
                .iter()
                .map(|value| value.to_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(varies(json(&[])), ["accept-encoding"]);
        assert_eq!(varies(json(&["origin"])), ["origin", "accept-encoding"]);
        assert_eq!(varies(json(&["Accept-Encoding"])), ["Accept-Encoding"]);
        assert_eq!(
            varies(json(&["origin", "accept-encoding"])),
            ["origin", "accept-encoding"]
        );
        // Too small to compress, or marked: no `Vary` added.
        let mut small = json(&[]);
        *small.body_mut() = Body::from("{}");
        assert!(varies(small).is_empty());
        let mut marked = json(&[]);
        marked.extensions_mut().insert(Uncompressed);
        assert!(varies(marked).is_empty());
    }

    #[test]
    fn what_is_compressible_is_what_the_compression_layer_compresses() {
        // At tower-http's own minimum, `Allowed` is its `DefaultPredicate` but for the mark;
        // at others, the same from that size up.
        for min_size in [32, 100, MinSize::DEFAULT.0] {
            holds_to_the_layer(MinSize(min_size));
        }
    }

    fn holds_to_the_layer(min_size: MinSize) {
        let bodies = [
            ("", None),
            ("short", None),
            ("x".repeat(31).leak() as &str, None),
            ("x".repeat(32).leak(), None),
            ("x".repeat(99).leak(), None),
            ("x".repeat(100).leak(), None),
            ("x".repeat(1399).leak(), None),
            ("x".repeat(1400).leak(), None),
            ("", Some("100")),
            ("", Some("31")),
            ("", Some("1400")),
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
                        let unencoded = !response.headers().contains_key(header::CONTENT_ENCODING)
                            && !response.headers().contains_key(header::CONTENT_RANGE);
                        let layer = unencoded && Allowed(min_size).should_compress(&response);
                        let context = format!(
                            "{} bytes {length:?} {content_type:?} {other:?} {marked} from {}",
                            body.len(),
                            min_size.0
                        );
                        assert_eq!(compressible(&make(), min_size), layer, "{context}");
                        if min_size.0 == 32 && !marked {
                            let default = unencoded
                                && tower_http::compression::predicate::DefaultPredicate::new()
                                    .should_compress(&response);
                            assert_eq!(layer, default, "{context}");
                        }
                    }
                }
            }
        }
    }
}
