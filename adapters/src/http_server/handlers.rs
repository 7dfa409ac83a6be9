//! The axum handlers: `/ops/{id}`, `/openapi.json` and the 404 fallback.

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
use opkit::trace::{CallSpan, SpanKind, TraceContext};
use opkit::{CallError, ErrorCode, OperationContext, OperationRegistry};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

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

fn too_large(limit: usize) -> Rejection {
    Rejection {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        error: CallError::new(
            ErrorCode::ValidationError,
            format!(
                "the request body is larger than the limit of {limit} bytes (HttpServer::body_limit)"
            ),
        )
        .with_details(json!({"limit": "bodyLimit", "max": limit})),
    }
}

/// A request refused before the registry is called: a status and a `CallError`.
struct Rejection {
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
    fn into_response(self) -> Response {
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

/// The input of a POST: the JSON body (empty means `{}`).
async fn body_input(shared: &Shared, headers: &HeaderMap, body: Body) -> Result<Value, Rejection> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.parse::<u64>().ok());
    if declared.is_some_and(|length| length > shared.body_limit as u64) {
        return Err(too_large(shared.body_limit));
    }
    let bytes = match tokio::time::timeout(
        shared.request_timeout,
        read_body(body, shared.body_limit),
    )
    .await
    {
        Ok(result) => result?,
        Err(_) => {
            return Err(Rejection::from(CallError::timeout(
                "the request body did not arrive before the request timeout",
            )));
        }
    };
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

fn with_request_id(mut response: Response, ctx: &OperationContext) -> Response {
    if let Ok(value) = HeaderValue::from_str(ctx.request_id()) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    response
}

/// `/ops/{id}`, any method.
pub(crate) async fn operation(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let (method, uri, headers) = (&parts.method, &parts.uri, &parts.headers);
    let identity = match authenticate(shared.authenticator.as_deref(), &parts).await {
        Ok(identity) => identity,
        Err(error) => {
            let status = match status_of(&error) {
                StatusCode::FORBIDDEN => StatusCode::UNAUTHORIZED,
                status => status,
            };
            return shared.error_response(status, &error, true);
        }
    };
    let Some(route) = shared.routes.get(&shared.registry, &id) else {
        return error_response(&CallError::operation_not_found(&id));
    };
    let spec = &route.spec;
    if !route.methods.contains(method) {
        return method_not_allowed(&id, method, &route.methods);
    }
    if let Err(error) = spec.access.check(identity.as_ref()) {
        return if identity.is_none() && shared.authenticator.is_some() {
            shared.error_response(StatusCode::UNAUTHORIZED, &error, false)
        } else {
            error_response(&error)
        };
    }
    let input = if method == Method::GET {
        query_input(&route, uri)
    } else {
        body_input(&shared, headers, body).await
    };
    let input = match input {
        Ok(input) => input,
        Err(rejection) => return rejection.into_response(),
    };
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
    let mut span = CallSpan::start(SpanKind::Server, "http_server", &id, &ctx);
    span.record_kind(spec.kind);
    let ctx = span.apply(ctx);
    if spec.kind.is_stream() {
        let mut ctx = ctx;
        if let Some(timeout) = shared.subscription_timeout {
            ctx = ctx.with_timeout(timeout);
        }
        let token = CancellationToken::new();
        let ctx = ctx.with_cancellation(token.clone());
        let subscribing = shared.registry.subscribe(&id, input, &ctx);
        let subscribed = if span.is_active() {
            subscribing.instrument(span.span().clone()).await
        } else {
            subscribing.await
        };
        let response = match subscribed {
            Ok(stream) => {
                let encoding = SseEncoding::requested(headers);
                let events = sse::events(
                    stream,
                    encoding,
                    token.drop_guard(),
                    ctx.request_id().to_owned(),
                    span,
                );
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
                span.finish(Err(&error));
                shared.error_response(status_of(&error), &error, false)
            }
        };
        with_request_id(response, &ctx)
    } else {
        // A client that disconnects drops this future: the guard then cancels the context
        // (for work the handler spawned); a finished call disarms it.
        let token = CancellationToken::new();
        let ctx = ctx
            .with_timeout(shared.request_timeout)
            .with_cancellation(token.clone());
        let guard = token.drop_guard();
        let executing = shared.registry.execute(&id, input, &ctx);
        let result = if span.is_active() {
            executing.instrument(span.span().clone()).await
        } else {
            executing.await
        };
        span.finish_with(&result);
        guard.disarm();
        let response = match result {
            Ok(envelope) => axum::Json(envelope).into_response(),
            Err(error) => shared.error_response(status_of(&error), &error, false),
        };
        with_request_id(response, &ctx)
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
