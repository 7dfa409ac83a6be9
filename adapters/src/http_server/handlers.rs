//! The axum handlers: `/ops/{id}`, `/openapi.json` and the 404 fallback.

use super::byte_bodies;
use super::identity::{Authenticator, authenticate};
use super::openapi::{DocumentInfo, document};
use super::query::QueryShape;
use super::routes::{Route, Routes};
use super::sse::{self, SseEncoding};
use super::status_of;
use axum::body::Body;
use axum::extract::{OriginalUri, Path, Request, State};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use opkit::edge::Edge;
use opkit::middleware::Outcome;
use opkit::trace::TraceContext;
use opkit::{CallError, ErrorCode, OperationContext, OperationRegistry, ResponseEnvelope};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The response header carrying the request id of the call.
pub(crate) const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Everything the handlers share.
pub(crate) struct Shared {
    pub(crate) registry: OperationRegistry,
    pub(crate) authenticator: Option<Arc<dyn Authenticator>>,
    /// Where the routes are reachable from outside, when configured
    /// ([`HttpServer::base_path`](super::HttpServer::base_path)).
    pub(crate) base_path: Option<String>,
    /// The explorer page, when enabled.
    pub(crate) explorer: Option<super::explorer::Explorer>,
    pub(crate) body_limit: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) subscription_timeout: Option<Duration>,
    pub(crate) keep_alive: Duration,
    /// Each operation's methods and query shape, derived once per spec.
    pub(crate) routes: Routes,
    pub(crate) info: DocumentInfo,
    /// The status of an input that parsed but fails its schema (400 unless configured).
    pub(crate) invalid_input_status: StatusCode,
}

/// A `CallError` as an HTTP response: the mapped status and the wire JSON as the body.
pub(crate) fn error_response(error: &CallError) -> Response {
    error_with_status(status_of(error), error)
}

fn error_with_status(status: StatusCode, error: &CallError) -> Response {
    (status, axum::Json(error)).into_response()
}

impl Shared {
    /// A `CallError` as a response, with the authenticator's `WWW-Authenticate` challenge on
    /// a `401` (`refused`: credentials were presented and refused).
    fn error_response(&self, status: StatusCode, error: &CallError, refused: bool) -> Response {
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

fn method_not_allowed(id: &str, method: &Method, allowed: &[Method]) -> Response {
    let names: Vec<&str> = allowed.iter().map(Method::as_str).collect();
    let error = CallError::new(
        ErrorCode::ValidationError,
        format!(
            "`{id}` does not take {method} requests; use {}",
            names.join(" or ")
        ),
    );
    let mut response = error_with_status(StatusCode::METHOD_NOT_ALLOWED, &error);
    if let Ok(value) = HeaderValue::from_str(&names.join(", ")) {
        response.headers_mut().insert(header::ALLOW, value);
    }
    response
}

/// `GET /openapi.json`.
pub(crate) async fn openapi(
    State(shared): State<Arc<Shared>>,
    original: Option<axum::Extension<OriginalUri>>,
    uri: Uri,
) -> Response {
    let original = original_uri(original, &uri);
    let base = shared.base_path(&original, &uri);
    axum::Json(document(&shared.registry, &shared.info, &base)).into_response()
}

/// Anything that is not a route.
pub(crate) async fn fallback(
    State(shared): State<Arc<Shared>>,
    original: Option<axum::Extension<OriginalUri>>,
    method: Method,
    uri: Uri,
) -> Response {
    let original = original_uri(original, &uri);
    let base = shared.base_path(&original, &uri);
    let error = CallError::new(
        ErrorCode::OperationNotFound,
        format!(
            "no route for {method} {}; operations are served at {base}/ops/<id>, the API is described at {base}/openapi.json",
            original.path()
        ),
    );
    error_response(&error)
}

/// Reads the body up to `limit` bytes.
async fn read_body(body: Body, limit: usize) -> Result<Vec<u8>, Rejection> {
    let mut bytes = Vec::new();
    let mut frames = body.into_data_stream();
    while let Some(frame) = frames.next().await {
        let chunk = frame.map_err(|error| {
            Rejection::from(CallError::new(
                ErrorCode::ValidationError,
                format!("the request body could not be read: {error}"),
            ))
        })?;
        if bytes.len() + chunk.len() > limit {
            return Err(too_large(limit));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The `details.limit` of an error a streamed request body ended with (`bodyLimit`,
/// `bodyTimeout`), which an operation reading it returns as its own.
fn body_limit_of(error: &CallError) -> Option<&str> {
    match error.code {
        ErrorCode::ValidationError | ErrorCode::Timeout => {
            error.details.as_ref()?["limit"].as_str()
        }
        _ => None,
    }
}

fn too_large(limit: usize) -> Rejection {
    Rejection {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        error: body_too_large(limit),
    }
}

/// The error of a request body past `limit` bytes, read first or streamed (`413`).
pub(crate) fn body_too_large(limit: usize) -> CallError {
    CallError::new(
        ErrorCode::ValidationError,
        format!(
            "the request body is larger than the limit of {limit} bytes (HttpServer::body_limit)"
        ),
    )
    .with_details(json!({"limit": "bodyLimit", "max": limit}))
}

/// A request refused before the registry is called: a status and a `CallError`.
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
    pub(crate) fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    pub(crate) fn into_response(self) -> Response {
        error_with_status(self.status, &self.error)
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return true;
    };
    let Ok(text) = value.to_str() else {
        return false;
    };
    let essence = text
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The request body's bytes, at most `limit` of them (`413` past it, by `Content-Length`
/// or as it streams in). A body that does not arrive within the request timeout is `408`.
pub(crate) async fn read_bytes(
    shared: &Shared,
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Vec<u8>, Rejection> {
    refuse_declared_length(headers, limit)?;
    match tokio::time::timeout(shared.request_timeout, read_body(body, limit)).await {
        Ok(result) => result,
        Err(_) => Err(Rejection {
            status: StatusCode::REQUEST_TIMEOUT,
            error: CallError::timeout("the request body did not arrive before the request timeout"),
        }),
    }
}

/// `413` for a body whose `Content-Length` is past `limit`, before a byte of it is read.
pub(crate) fn refuse_declared_length(headers: &HeaderMap, limit: usize) -> Result<(), Rejection> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.parse::<u64>().ok());
    match declared {
        Some(length) if length > limit as u64 => Err(too_large(limit)),
        _ => Ok(()),
    }
}

/// The input of a POST: the JSON body (empty means `{}`), at most `limit` bytes (see
/// [`read_bytes`]).
pub(crate) async fn read_json_body(
    shared: &Shared,
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Value, Rejection> {
    let bytes = read_bytes(shared, headers, body, limit).await?;
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
    serde_json::from_slice(&bytes).map_err(|error| {
        Rejection::from(CallError::new(
            ErrorCode::ValidationError,
            format!("the request body is not valid JSON: {error}"),
        ))
    })
}

/// The input of a GET: the query string, spread over the input schema's properties.
fn query_input(route: &Route, uri: &Uri) -> Result<Value, Rejection> {
    let none = QueryShape { params: Vec::new() };
    let shape = route.query.as_ref().unwrap_or(&none);
    let pairs: Vec<(String, String)> =
        match axum::extract::Query::<Vec<(String, String)>>::try_from_uri(uri) {
            Ok(axum::extract::Query(pairs)) => pairs,
            Err(error) => {
                return Err(Rejection::from(CallError::new(
                    ErrorCode::ValidationError,
                    format!("the query string cannot be decoded: {error}"),
                )));
            }
        };
    shape.decode(pairs).map_err(Rejection::from)
}

/// The caller's W3C trace context from the `traceparent` and `tracestate` headers (several
/// `tracestate` headers are one list); absent or invalid gives `None`.
pub(crate) fn trace_from_headers(headers: &HeaderMap) -> Option<TraceContext> {
    let traceparent = headers.get("traceparent")?.to_str().ok()?;
    let states: Vec<&str> = headers
        .get_all("tracestate")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect();
    let tracestate = (!states.is_empty()).then(|| states.join(","));
    TraceContext::from_parts(Some(traceparent), tracestate.as_deref())
}

fn with_request_id(mut response: Response, request_id: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    response
}

/// What the HTTP server knows about a call it serves, for operations and middleware to read
/// through the context's [`Edge`]: `ctx.edge().and_then(|edge| edge.fact::<HttpRequest>())`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpRequest {
    /// The request's method.
    pub method: Method,
    /// The request's URI, as the server's router saw it.
    pub uri: Uri,
    /// The request's headers.
    pub headers: HeaderMap,
}

/// The context of a call from `parts`: the identity, the trace context, the request id the
/// client chose (`x-request-id`, up to 128 bytes), and the [`HttpRequest`] edge.
fn call_context(
    parts: http::request::Parts,
    identity: Option<opkit::Identity>,
) -> OperationContext {
    let headers = &parts.headers;
    let mut ctx = OperationContext::new()
        .with_identity_opt(identity)
        .with_trace_opt(trace_from_headers(headers));
    if let Some(request_id) = headers
        .get(REQUEST_ID)
        .and_then(|value| value.to_str().ok())
        .filter(|text| !text.is_empty() && text.len() <= 128)
    {
        ctx = ctx.with_request_id(request_id);
    }
    // The request's parts move into the edge: the server needs nothing of them afterwards.
    ctx.with_edge(Edge::new(Edge::HTTP).with_fact(HttpRequest {
        method: parts.method,
        uri: parts.uri,
        headers: parts.headers,
    }))
}

/// `Retry-After` (whole seconds, rounded up) for an error whose details say when to retry.
fn retry_after(error: &CallError) -> Option<HeaderValue> {
    let millis = error.details.as_ref()?.get("retryAfterMs")?.as_u64()?;
    HeaderValue::from_str(&millis.div_ceil(1000).max(1).to_string()).ok()
}

/// `Cache-Control` from a reply's cache hint.
fn cache_control(hint: opkit::middleware::CacheHint) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!(
        "{}, max-age={}",
        hint.scope.as_str(),
        hint.ttl.as_secs()
    ))
    .ok()
}

impl Shared {
    /// The response of a served call's error: `401` with the challenge for a caller without
    /// an identity refused by an access rule, `Retry-After` on a rate limit, and the
    /// configured status for an input that parsed but fails the schema.
    fn call_error_response(&self, id: &str, error: &CallError, ctx: &OperationContext) -> Response {
        if error.code == ErrorCode::AccessDenied
            && error.kind.is_none()
            && let Some(identity) = ctx.identity()
            && let Some(response) = self.insufficient_scope(id, identity, error)
        {
            return response;
        }
        let status = match status_of(error) {
            StatusCode::FORBIDDEN if ctx.identity().is_none() && self.authenticator.is_some() => {
                StatusCode::UNAUTHORIZED
            }
            _ if body_limit_of(error) == Some("bodyLimit") => StatusCode::PAYLOAD_TOO_LARGE,
            _ if body_limit_of(error) == Some(byte_bodies::BODY_TIMEOUT) => {
                StatusCode::REQUEST_TIMEOUT
            }
            StatusCode::BAD_REQUEST if error.code == ErrorCode::ValidationError => {
                self.invalid_input_status
            }
            status => status,
        };
        let mut response = self.error_response(status, error, false);
        if let Some(value) = retry_after(error) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }

    /// `403` with the authenticator's `insufficient_scope` challenge, when `identity` lacks
    /// scopes the operation `id` needs.
    fn insufficient_scope(
        &self,
        id: &str,
        identity: &opkit::Identity,
        error: &CallError,
    ) -> Option<Response> {
        let authenticator = self.authenticator.as_ref()?;
        let spec = self.registry.spec(id)?;
        let needed = &spec.access.scopes;
        if needed.iter().all(|scope| identity.scopes.contains(scope)) {
            return None;
        }
        let challenge = authenticator.insufficient_scope(needed)?;
        let mut response = error_with_status(StatusCode::FORBIDDEN, error);
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
        Some(response)
    }

    /// The caller's identity, or the `401` (or other) response refusing its credentials.
    pub(crate) async fn identify(
        &self,
        parts: &http::request::Parts,
    ) -> Result<Option<opkit::Identity>, Response> {
        authenticate(self.authenticator.as_deref(), parts)
            .await
            .map_err(|error| {
                let status = match status_of(&error) {
                    StatusCode::FORBIDDEN => StatusCode::UNAUTHORIZED,
                    status => status,
                };
                self.error_response(status, &error, true)
            })
    }
}

/// How a REST route shapes a success into its response (the RPC route sends the envelope as
/// it is, and a stream as SSE).
pub(crate) struct Shape<'a> {
    /// The response of a unary success's envelope.
    pub(crate) unary: &'a (dyn Fn(ResponseEnvelope) -> Response + Sync),
    /// A stream of `Binary` items answered as one raw body with this status and content type
    /// (see [`byte_bodies::response_stream`]), instead of SSE.
    pub(crate) raw_stream: Option<(StatusCode, HeaderValue)>,
    /// Time the call gets on top of the request timeout: the time its body may take to
    /// stream in (a body read before the call had it already).
    pub(crate) body_time: Duration,
}

/// Serves a call whose input was read: the context from the request, the registry's front
/// door ([`OperationRegistry::serve`]), and its outcome as a response (the RPC shape, or the
/// one `shape` makes).
pub(crate) async fn serve_call(
    shared: &Shared,
    id: &str,
    stream: bool,
    parts: http::request::Parts,
    identity: Option<opkit::Identity>,
    input: Value,
    shape: Option<Shape<'_>>,
) -> Response {
    let encoding = SseEncoding::requested(&parts.headers);
    // A client that disconnects drops this future (or the event stream): the guard then
    // cancels the context; a finished unary call disarms it.
    let token = CancellationToken::new();
    let mut ctx = call_context(parts, identity).with_cancellation(token.clone());
    let body_time = shape
        .as_ref()
        .map_or(Duration::ZERO, |shape| shape.body_time);
    ctx = match (stream, shared.subscription_timeout) {
        (false, _) => ctx.with_timeout(shared.request_timeout + body_time),
        (true, Some(timeout)) => ctx.with_timeout(timeout),
        (true, None) => ctx,
    };
    let guard = token.drop_guard();
    let request_id = ctx.request_id().to_owned();
    let response = match shared.registry.serve(id, input, ctx.clone()).await {
        Ok(Outcome::Unary(reply)) => {
            guard.disarm();
            let hint = reply.cache_hint();
            match reply.into_envelope() {
                Ok(envelope) => {
                    let mut response = match &shape {
                        Some(shape) => (shape.unary)(envelope),
                        None => axum::Json(envelope).into_response(),
                    };
                    if let Some(value) = hint.and_then(cache_control) {
                        response.headers_mut().insert(header::CACHE_CONTROL, value);
                    }
                    response
                }
                Err(error) => shared.call_error_response(id, &error, &ctx),
            }
        }
        Ok(Outcome::Stream(items)) if shape.as_ref().is_some_and(|s| s.raw_stream.is_some()) => {
            let (status, content_type) = shape
                .and_then(|shape| shape.raw_stream)
                .expect("the guard checked a raw stream");
            match byte_bodies::response_stream(items, guard, status, content_type).await {
                Ok(response) => response,
                Err(error) => shared.call_error_response(id, &error, &ctx),
            }
        }
        Ok(Outcome::Stream(items)) => {
            let events = sse::events(items, encoding, guard, request_id.clone());
            let mut response = Sse::new(events)
                .keep_alive(KeepAlive::new().interval(shared.keep_alive))
                .into_response();
            response.headers_mut().insert(
                HeaderName::from_static("x-accel-buffering"),
                HeaderValue::from_static("no"),
            );
            if encoding == SseEncoding::Data {
                response
                    .headers_mut()
                    .insert(header::CONTENT_TYPE, sse::DATA_CONTENT_TYPE);
            }
            response
        }
        Err(error) => {
            guard.disarm();
            shared.call_error_response(id, &error, &ctx)
        }
    };
    with_request_id(response, &request_id)
}

/// `/ops/{id}`, any method: the wire mapped to the registry's front door
/// ([`OperationRegistry::serve`]) and its outcome back.
pub(crate) async fn operation(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let identity = match shared.identify(&parts).await {
        Ok(identity) => identity,
        Err(response) => return response,
    };
    let Some(route) = shared.routes.get(&shared.registry, &id) else {
        return error_response(&CallError::operation_not_found(&id));
    };
    if !route.methods.contains(&parts.method) {
        return method_not_allowed(&id, &parts.method, &route.methods);
    }
    let input = if parts.method == Method::GET {
        query_input(&route, &parts.uri)
    } else {
        read_json_body(&shared, &parts.headers, body, shared.body_limit).await
    };
    match input {
        Ok(input) => {
            let stream = route.spec.kind.is_stream();
            serve_call(&shared, &id, stream, parts, identity, input, None).await
        }
        Err(rejection) => rejection.into_response(),
    }
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
