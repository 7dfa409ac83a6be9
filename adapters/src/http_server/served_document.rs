//! `GET /openapi.json` as served: the document built once per registry revision, not on every
//! request, with an `ETag` a client revalidates against (`If-None-Match`, answered `304`),
//! and gzipped once per mount point for the clients that accept it (when the server
//! compresses), not by the compression layer on every request.
//!
//! Building the document walks every operation's schemas (~1 ms per 10 operations of the
//! medium bench's size, ~110 ms at 500, seconds and a gigabyte for the largest imports), and
//! the route needs no credentials: built per request, it would cost whoever asks that much of
//! the server's. The one part of the document that depends on the request, its `servers`
//! entry (where a `nest` mounted the routes), is sent after the kept JSON as a second chunk:
//! the kept part is shared by every response, not copied.
//!
//! Invariants:
//! - A kept document was built from operations read after its revision was
//!   ([`OperationRegistry::revision`]): never older than its key, so a request that sees the
//!   revision it was kept under serves the registry as it was then or later, and one that sees
//!   another revision builds anew.
//! - One build at a time (`building`): requests that find the kept document stale wait for the
//!   build under way and serve its result, rather than each building the same document. The
//!   same lock serves the gzipped forms.
//! - A built document keeps its gzipped form for at most [`GZIPPED_MOUNTS`] mount points (the
//!   most recent ones): a router nested under a path variable has as many mount points as
//!   values, and each form is a copy of the document.

use super::compress::{Compression, CompressionLevel, Uncompressed, prefers_gzip};
use super::gzip::gzip;
use super::header_list;
use super::openapi::{DocumentInfo, document_without_servers, servers};
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use hyper::body::{Frame, SizeHint};
use opkit::{CallError, OperationRegistry};
use parking_lot::{Mutex, RwLock};
use std::convert::Infallible;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// How many mount points' gzipped documents a built document keeps.
const GZIPPED_MOUNTS: usize = 4;

/// The document a server serves, kept between requests.
#[derive(Default)]
pub(crate) struct ServedDocument {
    /// The last document built, with the revision it was built at.
    kept: RwLock<Option<Arc<Built>>>,
    /// Held while a document is built.
    building: tokio::sync::Mutex<()>,
}

/// A built document: its JSON without the `servers` entry and without the closing brace.
struct Built {
    revision: u64,
    head: Bytes,
    /// A digest of `head`, from which each mount point's `ETag` is made.
    digest: u64,
    /// The whole document gzipped, by mount point, most recent last.
    gzipped: Mutex<Vec<(String, Bytes)>>,
}

impl ServedDocument {
    /// What `/openapi.json` answers: the document of `registry` as it is now, for routes
    /// mounted at `base_path`, or `304 Not Modified` when `request` says (`If-None-Match`)
    /// the client holds it already; gzipped when the server compresses (`compression`), the
    /// document is at least its minimum size and the request picks gzip (as the compression
    /// layer reads `Accept-Encoding`: [`prefers_gzip`]). The response is
    /// marked for the compression layer to leave alone.
    pub(crate) async fn respond(
        &self,
        registry: &OperationRegistry,
        info: &DocumentInfo,
        base_path: &str,
        request: &HeaderMap,
        compression: Option<Compression>,
    ) -> Result<Response, CallError> {
        let built = self.built(registry, info).await?;
        // Sent gzipped to the clients that accept it: the answer varies on the header.
        let varies = compression.is_some_and(|Compression { min_size, .. }| {
            built.head.len() >= usize::from(min_size.0)
        });
        let gzip = varies && prefers_gzip(request);
        let etag = etag(built.digest, base_path, gzip);
        let (status, body) = if holds(request, &etag) {
            (StatusCode::NOT_MODIFIED, Body::empty())
        } else if let Some(Compression { level, .. }) = compression.filter(|_| gzip) {
            let body = self.gzipped(&built, base_path, level).await?;
            (StatusCode::OK, Body::from(body))
        } else {
            let tail = servers_tail(&built.head, base_path);
            (
                StatusCode::OK,
                Body::new(Spliced::new(built.head.clone(), tail)),
            )
        };
        let mut response = Response::new(body);
        *response.status_mut() = status;
        response.extensions_mut().insert(Uncompressed);
        let headers = response.headers_mut();
        if status == StatusCode::OK {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            if gzip {
                headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            }
        }
        if varies {
            headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        }
        headers.insert(header::ETAG, etag);
        // Kept by a client, revalidated before each use: a registry can change.
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        Ok(response)
    }

    /// `built` at `base_path`, gzipped: kept, or made now (one at a time).
    async fn gzipped(
        &self,
        built: &Arc<Built>,
        base_path: &str,
        level: CompressionLevel,
    ) -> Result<Bytes, CallError> {
        if let Some(body) = kept_gzip(built, base_path) {
            return Ok(body);
        }
        let _building = self.building.lock().await;
        if let Some(body) = kept_gzip(built, base_path) {
            return Ok(body);
        }
        let (document, base) = (built.clone(), base_path.to_owned());
        let body = tokio::task::spawn_blocking(move || {
            // What the compression layer would send.
            let body = gzip(
                &[&document.head, &servers_tail(&document.head, &base)],
                level.gzip(),
            )?;
            let mut gzipped = document.gzipped.lock();
            if gzipped.len() >= GZIPPED_MOUNTS {
                gzipped.remove(0);
            }
            gzipped.push((base, body.clone()));
            Ok::<_, std::io::Error>(body)
        })
        .await
        .map_err(|error| unbuilt(&error))?
        .map_err(|error| unbuilt(&error))?;
        Ok(body)
    }

    /// The kept document when it is current, else a new one.
    async fn built(
        &self,
        registry: &OperationRegistry,
        info: &DocumentInfo,
    ) -> Result<Arc<Built>, CallError> {
        if let Some(built) = self.current(registry.revision()) {
            return Ok(built);
        }
        let _building = self.building.lock().await;
        // Read before the operations are: see the module's invariants.
        let revision = registry.revision();
        if let Some(built) = self.current(revision) {
            return Ok(built);
        }
        let (registry, info) = (registry.clone(), info.clone());
        // ~110 ms of CPU at 500 operations (more for large imports): off the runtime's workers.
        let built = tokio::task::spawn_blocking(move || build(revision, &registry, &info))
            .await
            .map_err(|error| unbuilt(&error))??;
        let built = Arc::new(built);
        *self.kept.write() = Some(built.clone());
        Ok(built)
    }

    fn current(&self, revision: u64) -> Option<Arc<Built>> {
        self.kept
            .read()
            .as_ref()
            .filter(|built| built.revision == revision)
            .cloned()
    }
}

fn build(
    revision: u64,
    registry: &OperationRegistry,
    info: &DocumentInfo,
) -> Result<Built, CallError> {
    let document = document_without_servers(registry, info);
    let mut json = serde_json::to_vec(&document).map_err(|error| {
        CallError::new(
            opkit::ErrorCode::ExecutionError,
            format!("the OpenAPI document could not be written: {error}"),
        )
    })?;
    // An object's JSON ends with its closing brace, where `servers` goes.
    json.pop();
    let mut hasher = DefaultHasher::new();
    json.hash(&mut hasher);
    Ok(Built {
        revision,
        digest: hasher.finish(),
        head: Bytes::from(json),
        gzipped: Mutex::default(),
    })
}

/// The error of a document that could not be built or compressed.
fn unbuilt(error: &dyn std::fmt::Display) -> CallError {
    CallError::new(
        opkit::ErrorCode::ExecutionError,
        format!("the OpenAPI document could not be built: {error}"),
    )
}

fn kept_gzip(built: &Built, base_path: &str) -> Option<Bytes> {
    built
        .gzipped
        .lock()
        .iter()
        .find(|(base, _)| base == base_path)
        .map(|(_, body)| body.clone())
}

/// What follows the kept JSON `head` to make the whole document: the `servers` entry for
/// `base_path` and the closing brace. `servers` is the document's last key either way a
/// `serde_json::Map` orders them (sorted, or, with serde_json's `preserve_order`, as inserted:
/// [`document`](super::openapi::document) inserts it last), so the two are what serializing
/// the whole document writes.
fn servers_tail(head: &[u8], base_path: &str) -> Bytes {
    let mut tail = Vec::with_capacity(160);
    if head.len() > 1 {
        tail.push(b',');
    }
    tail.extend_from_slice(b"\"servers\":");
    // A `Value` of strings: its JSON cannot fail to be written.
    serde_json::to_writer(&mut tail, &servers(base_path)).unwrap_or_default();
    tail.push(b'}');
    Bytes::from(tail)
}

/// A body of the kept JSON and its tail, sent as two chunks with their exact length.
struct Spliced {
    /// The chunks not sent yet, in order.
    chunks: [Option<Bytes>; 2],
}

impl Spliced {
    fn new(head: Bytes, tail: Bytes) -> Self {
        Self {
            chunks: [Some(head), Some(tail)],
        }
    }
}

impl hyper::body::Body for Spliced {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.chunks.iter_mut().find_map(Option::take);
        Poll::Ready(next.map(|chunk| Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.iter().all(Option::is_none)
    }

    fn size_hint(&self) -> SizeHint {
        let length = self.chunks.iter().flatten().map(|chunk| chunk.len() as u64);
        SizeHint::with_exact(length.sum())
    }
}

/// The strong `ETag` of the document with digest `digest` served at `base_path`, gzipped or
/// not (two representations: two tags).
fn etag(digest: u64, base_path: &str, gzip: bool) -> HeaderValue {
    let mut hasher = DefaultHasher::new();
    digest.hash(&mut hasher);
    base_path.hash(&mut hasher);
    gzip.hash(&mut hasher);
    // A quoted hex string is always a header value.
    HeaderValue::from_str(&format!("\"{:016x}\"", hasher.finish()))
        .unwrap_or_else(|_| HeaderValue::from_static("\"\""))
}

/// `true` when the request's `If-None-Match` lists `etag` (compared weakly, as RFC 9110's
/// §13.1.2 asks) or is `*`.
fn holds(request: &HeaderMap, etag: &HeaderValue) -> bool {
    header_list::items(request, header::IF_NONE_MATCH)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request's headers: one `name` header per value.
    fn headers(name: http::HeaderName, values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(name.clone(), HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn if_none_match_lists_are_read_as_rfc_9110_says() {
        let etag = HeaderValue::from_static("\"abc\"");
        let asks = |values: &[&'static str]| holds(&headers(header::IF_NONE_MATCH, values), &etag);
        assert!(asks(&["\"abc\""]));
        assert!(asks(&["W/\"abc\""]));
        assert!(asks(&["\"x\", \"abc\""]));
        assert!(asks(&["\"x\"", "\"abc\""]));
        assert!(asks(&["*"]));
        assert!(!asks(&[]));
        assert!(!asks(&["\"abcd\""]));
        assert!(!asks(&["abc"]));
    }

    #[tokio::test]
    async fn the_servers_entry_closes_the_object() {
        let whole = |head: &'static [u8], base: &'static str| async move {
            let head = Bytes::from_static(head);
            let tail = servers_tail(&head, base);
            let body = Spliced::new(head, tail);
            let length = hyper::body::Body::size_hint(&body).exact();
            let bytes = axum::body::to_bytes(Body::new(body), usize::MAX)
                .await
                .unwrap();
            assert_eq!(length, Some(bytes.len() as u64));
            serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()
        };
        let value = whole(b"{\"a\":1", "/api").await;
        assert_eq!(value["a"], 1);
        assert_eq!(value["servers"][0]["url"], "/api");
        assert_eq!(whole(b"{", "").await["servers"][0]["url"], "/");
    }

    #[test]
    fn each_mount_point_and_encoding_has_its_own_tag() {
        assert_ne!(etag(1, "", false), etag(1, "/api", false));
        assert_ne!(etag(1, "", false), etag(2, "", false));
        assert_ne!(etag(1, "", false), etag(1, "", true));
        assert_eq!(etag(1, "/api", true), etag(1, "/api", true));
    }

    #[test]
    fn gzip_is_taken_when_named_with_a_weight_above_zero() {
        let accepts =
            |values: &[&'static str]| prefers_gzip(&headers(header::ACCEPT_ENCODING, values));
        assert!(accepts(&["gzip"]));
        assert!(accepts(&["gzip, deflate, br"]));
        assert!(accepts(&["br;q=1.0, GZIP;q=0.5"]));
        assert!(accepts(&["deflate", "x-gzip"]));
        assert!(accepts(&["gzip ; q=0.001"]));
        assert!(!accepts(&[]));
        assert!(!accepts(&["br, deflate"]));
        assert!(!accepts(&["gzip;q=0"]));
        assert!(!accepts(&["gzip;q=0.0, br"]));
        assert!(!accepts(&["*"]));
        assert!(!accepts(&["gzipped"]));
    }

    #[test]
    fn gzip_round_trips_at_each_level() {
        let body = br#"{"openapi":"3.1.0"}"#.repeat(100);
        for level in [
            CompressionLevel::Fastest,
            CompressionLevel::Default,
            CompressionLevel::Best,
        ] {
            let gzipped = gzip(&[&body[..10], &body[10..]], level.gzip()).unwrap();
            assert!(gzipped.len() < body.len() / 4);
            let mut decoded = Vec::new();
            let mut decoder = flate2::read::GzDecoder::new(&gzipped[..]);
            std::io::Read::read_to_end(&mut decoder, &mut decoded).unwrap();
            assert_eq!(decoded, body);
        }
    }
}
