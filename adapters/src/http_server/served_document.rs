//! `GET /openapi.json` as served: the document built once per registry revision, not on every
//! request, with an `ETag` a client revalidates against (`If-None-Match`, answered `304`).
//!
//! Building the document walks every operation's schemas (~1 ms per 10 operations of the
//! medium bench's size, ~110 ms at 500), and the route needs no credentials: built per request,
//! it would cost whoever asks that much CPU of the server's. The one part of the document that
//! depends on the request, its `servers` entry (where a `nest` mounted the routes), is written
//! around the kept JSON per request.
//!
//! Invariants:
//! - A kept document was built from operations read after its revision was
//!   ([`OperationRegistry::revision`]): never older than its key, so a request that sees the
//!   revision it was kept under serves the registry as it was then or later, and one that sees
//!   another revision builds anew.
//! - One build at a time (`building`): requests that find the kept document stale wait for the
//!   build under way and serve its result, rather than each building the same document.

use super::openapi::{DocumentInfo, document_without_servers, servers};
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use opkit::{CallError, OperationRegistry};
use parking_lot::RwLock;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

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
}

/// What `/openapi.json` answers: the document, or `304 Not Modified` to a client that holds it.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) etag: HeaderValue,
    /// The document's JSON (empty for a `304`).
    pub(crate) body: Bytes,
}

impl ServedDocument {
    /// The document of `registry` as it is now, for routes mounted at `base_path`, or `304`
    /// when `request` says (`If-None-Match`) the client holds it already.
    pub(crate) async fn answer(
        &self,
        registry: &OperationRegistry,
        info: &DocumentInfo,
        base_path: &str,
        request: &HeaderMap,
    ) -> Result<Answer, CallError> {
        let built = self.built(registry, info).await?;
        let etag = etag(built.digest, base_path);
        if holds(request, &etag) {
            return Ok(Answer {
                status: StatusCode::NOT_MODIFIED,
                etag,
                body: Bytes::new(),
            });
        }
        Ok(Answer {
            status: StatusCode::OK,
            etag,
            body: with_servers(&built.head, base_path),
        })
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
        // Seconds of CPU for a large registry: off the runtime's workers.
        let built = tokio::task::spawn_blocking(move || build(revision, &registry, &info))
            .await
            .map_err(|error| {
                CallError::new(
                    opkit::ErrorCode::ExecutionError,
                    format!("the OpenAPI document could not be built: {error}"),
                )
            })??;
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
    })
}

/// The whole document: `head` with the `servers` entry for `base_path` and the closing brace.
/// The document's keys are in order (a `serde_json::Map` is sorted) and `servers` is the last
/// of them, so this is what serializing the whole document writes.
fn with_servers(head: &[u8], base_path: &str) -> Bytes {
    let servers = serde_json::to_vec(&servers(base_path)).unwrap_or_else(|_| b"[]".to_vec());
    let mut body = BytesMut::with_capacity(head.len() + servers.len() + 13);
    body.put_slice(head);
    if head.len() > 1 {
        body.put_u8(b',');
    }
    body.put_slice(b"\"servers\":");
    body.put_slice(&servers);
    body.put_u8(b'}');
    body.freeze()
}

/// The strong `ETag` of the document with digest `digest` served at `base_path`.
fn etag(digest: u64, base_path: &str) -> HeaderValue {
    let mut hasher = DefaultHasher::new();
    digest.hash(&mut hasher);
    base_path.hash(&mut hasher);
    // A quoted hex string is always a header value.
    HeaderValue::from_str(&format!("\"{:016x}\"", hasher.finish()))
        .unwrap_or_else(|_| HeaderValue::from_static("\"\""))
}

/// `true` when the request's `If-None-Match` lists `etag` (compared weakly, as RFC 9110's
/// §13.1.2 asks) or is `*`.
fn holds(request: &HeaderMap, etag: &HeaderValue) -> bool {
    request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_lists_are_read_as_rfc_9110_says() {
        let etag = HeaderValue::from_static("\"abc\"");
        let asks = |values: &[&'static str]| {
            let mut headers = HeaderMap::new();
            for value in values {
                headers.append(header::IF_NONE_MATCH, HeaderValue::from_static(value));
            }
            holds(&headers, &etag)
        };
        assert!(asks(&["\"abc\""]));
        assert!(asks(&["W/\"abc\""]));
        assert!(asks(&["\"x\", \"abc\""]));
        assert!(asks(&["\"x\"", "\"abc\""]));
        assert!(asks(&["*"]));
        assert!(!asks(&[]));
        assert!(!asks(&["\"abcd\""]));
        assert!(!asks(&["abc"]));
    }

    #[test]
    fn the_servers_entry_closes_the_object() {
        let head = b"{\"a\":1";
        let body = with_servers(head, "/api");
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["a"], 1);
        assert_eq!(value["servers"][0]["url"], "/api");
        let empty: serde_json::Value = serde_json::from_slice(&with_servers(b"{", "")).unwrap();
        assert_eq!(empty["servers"][0]["url"], "/");
    }

    #[test]
    fn each_mount_point_has_its_own_tag() {
        assert_ne!(etag(1, ""), etag(1, "/api"));
        assert_ne!(etag(1, ""), etag(2, ""));
        assert_eq!(etag(1, "/api"), etag(1, "/api"));
    }
}
