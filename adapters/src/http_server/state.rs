//! [`ServerState`]: what every route handler of an [`HttpServer`](super::HttpServer) reads,
//! and the answers that depend only on it (an error response with its challenge, the base path
//! the routes are reached at).

use super::compress::Compression;
use super::identity::Authenticator;
use super::openapi::DocumentInfo;
use super::routes::Routes;
use super::served_document::ServedDocument;
use super::status_of;
use axum::extract::OriginalUri;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, Uri, header};
use opkit::{CallError, OperationRegistry};
use std::sync::Arc;
use std::time::Duration;

/// What the route handlers of one server share.
pub(crate) struct ServerState {
    pub(crate) registry: OperationRegistry,
    pub(crate) authenticator: Option<Arc<dyn Authenticator>>,
    /// Where the routes are reachable from outside, when configured
    /// ([`HttpServer::base_path`](super::HttpServer::base_path)).
    pub(crate) base_path: Option<String>,
    /// The explorer page, when enabled.
    pub(crate) explorer: Option<Explorer>,
    pub(crate) body_limit: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) subscription_timeout: Option<Duration>,
    pub(crate) keep_alive: Duration,
    /// Each operation's methods and query shape, derived once per spec.
    pub(crate) routes: Routes,
    /// `/openapi.json`, built once per registry revision.
    pub(crate) document: ServedDocument,
    /// How bodies are gzipped for the clients that accept them, when the server compresses.
    pub(crate) compression: Option<Compression>,
    pub(crate) info: DocumentInfo,
    /// The status of a body that parsed but fails its schema (400 unless configured).
    pub(crate) invalid_input_status: StatusCode,
    /// The status of path variables and query values that fail the schema (400 unless
    /// configured).
    pub(crate) invalid_parameter_status: StatusCode,
}

/// Where the explorer is served and what it links.
#[derive(Debug, Clone)]
pub(crate) struct Explorer {
    /// Its path, relative to where the router is mounted (`/explorer`).
    pub(crate) path: String,
    /// The MCP endpoint to link (a path or URL), when there is one.
    pub(crate) mcp: Option<String>,
}

/// A `CallError` as an HTTP response: the mapped status and the wire JSON as the body.
pub(crate) fn error_response(error: &CallError) -> Response {
    error_with_status(status_of(error), error)
}

pub(crate) fn error_with_status(status: StatusCode, error: &CallError) -> Response {
    (status, axum::Json(error)).into_response()
}

impl ServerState {
    /// A `CallError` as a response, with the authenticator's `WWW-Authenticate` challenge on
    /// a `401` (`refused`: credentials were presented and refused).
    pub(crate) fn error_response(
        &self,
        status: StatusCode,
        error: &CallError,
        refused: bool,
    ) -> Response {
        let mut response = error_with_status(status, error);
        if status == StatusCode::UNAUTHORIZED
            && let Some(challenge) = self
                .authenticator
                .as_ref()
                .and_then(|authenticator| authenticator.challenge(refused))
        {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, challenge);
        }
        response
    }

    /// The prefix the routes are reached at: the configured base path, else what the
    /// request's original URI has before the path the router saw.
    pub(crate) fn base_path(&self, original: &Uri, seen: &Uri) -> String {
        if let Some(base) = &self.base_path {
            return base.clone();
        }
        mount_prefix(original.path(), seen.path())
    }
}

/// The URI the request arrived with, before any `nest` stripped a prefix (the URI the
/// router saw when it was not nested).
pub(crate) fn original_uri(original: Option<axum::Extension<OriginalUri>>, seen: &Uri) -> Uri {
    original.map_or_else(|| seen.clone(), |axum::Extension(OriginalUri(uri))| uri)
}

/// `original` without its suffix `seen` (the prefix a nested router was mounted at), or `""`.
fn mount_prefix(original: &str, seen: &str) -> String {
    original
        .strip_suffix(seen)
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::mount_prefix;

    #[test]
    fn mount_prefix_is_what_the_original_path_has_before_the_seen_one() {
        assert_eq!(mount_prefix("/api/openapi.json", "/openapi.json"), "/api");
        assert_eq!(mount_prefix("/openapi.json", "/openapi.json"), "");
        assert_eq!(mount_prefix("/a/b/ops/x", "/ops/x"), "/a/b");
        assert_eq!(mount_prefix("/elsewhere", "/openapi.json"), "");
    }
}
