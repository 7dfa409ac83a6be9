//! The axum handlers: `/ops/{id}`, `/openapi.json` and the 404 fallback, and
//! [`serve_call`], which the REST routes share.

use super::byte_bodies;
use super::identity::authenticate;
use super::query::QueryShape;
use super::request_body::{BodyLimit, Rejection, body_limit_of, read_json_body};
use super::routed::RouteTarget;
use super::routes::Route;
use super::sse::{self, SseEncoding};
use super::state::{ServerState, error_response, error_with_status, original_uri};
use super::status_of;
use axum::extract::{OriginalUri, Path, Request, State};
use axum::response::Response;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use opkit::edge::Edge;
use opkit::middleware::Outcome;
use opkit::trace::TraceContext;
use opkit::{CallError, ErrorCode, FoundOperation, OperationContext};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::{CancellationToken, DropGuard};

/// The response header carrying the request id of the call.
pub(crate) const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The W3C trace context headers, named once (a header looked up by its text is parsed on
/// every lookup).
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

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
    State(shared): State<Arc<ServerState>>,
    original: Option<axum::Extension<OriginalUri>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let original = original_uri(original, &uri);
    let base = shared.base_path(&original, &uri);
    shared
        .document
        .respond(
            &shared.registry,
            &shared.info,
            &base,
            &headers,
            shared.compression,
        )
        .await
        .unwrap_or_else(|error| error_response(&error))
}

/// Anything that is not a route.
pub(crate) async fn fallback(
    State(shared): State<Arc<ServerState>>,
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

/// What a call's context takes from the request's headers: the caller's W3C trace context
/// (`traceparent`, and `tracestate`, several of which are one list; absent or invalid gives
/// `None`) and the request id the client chose (`x-request-id`, up to 128 bytes).
///
/// Found in one pass over the headers: none of the three is a standard header, and looking
/// up such a name hashes it, which costs more than a walk over a request's few headers.
fn context_headers(headers: &HeaderMap) -> (Option<TraceContext>, Option<&str>) {
    let mut traceparent = None;
    let mut states: Vec<&str> = Vec::new();
    let mut request_id = None;
    for (name, value) in headers {
        // The first value of a repeated `traceparent` or `x-request-id`, as `get` reads it.
        if *name == TRACEPARENT {
            traceparent.get_or_insert(value);
        } else if *name == TRACESTATE {
            states.extend(value.to_str().ok());
        } else if *name == REQUEST_ID {
            request_id.get_or_insert(value);
        }
    }
    let trace = traceparent
        .and_then(|value| value.to_str().ok())
        .and_then(|traceparent| {
            let tracestate = (!states.is_empty()).then(|| states.join(","));
            TraceContext::from_parts(Some(traceparent), tracestate.as_deref())
        });
    let request_id = request_id
        .and_then(|value| value.to_str().ok())
        .filter(|text| !text.is_empty() && text.len() <= 128);
    (trace, request_id)
}

/// Disarms the call's cancellation guard, if it has one: the call finished.
fn disarm(guard: Option<DropGuard>) {
    if let Some(guard) = guard {
        guard.disarm();
    }
}

fn with_request_id(mut response: Response, request_id: Option<HeaderValue>) -> Response {
    if let Some(value) = request_id {
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

impl HttpRequest {
    /// What `parts` say, copied (for an edge that serves over HTTP through another server, as
    /// the MCP server's Streamable HTTP transport does).
    #[cfg(feature = "mcp-server")]
    pub(crate) fn of(parts: &http::request::Parts) -> Self {
        Self {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            headers: parts.headers.clone(),
        }
    }

    /// [`of`](Self::of), the parts moved in (their extensions are dropped).
    pub(crate) fn from_parts(parts: http::request::Parts) -> Self {
        Self {
            method: parts.method,
            uri: parts.uri,
            headers: parts.headers,
        }
    }
}

/// The context of a call from `parts`: the identity, the trace context, the request id the
/// client chose (`x-request-id`, up to 128 bytes), and the [`HttpRequest`] edge; a `lean`
/// call's edge (its handler reads nothing of its context and no middleware covers it, so
/// nothing can read the edge but its name, which names the call's span) is the bare
/// [`Edge::HTTP`], without the request moved into a fact of its own.
fn call_context(
    parts: http::request::Parts,
    identity: Option<opkit::Identity>,
    lean: bool,
) -> OperationContext {
    let (trace, request_id) = context_headers(&parts.headers);
    let mut ctx = OperationContext::new()
        .with_identity_opt(identity)
        .with_trace_opt(trace);
    if let Some(request_id) = request_id {
        ctx = ctx.with_request_id(request_id);
    }
    if lean {
        return ctx.with_edge(Edge::new(Edge::HTTP));
    }
    // The request's parts move into the edge: the server needs nothing of them afterwards.
    ctx.with_edge(Edge::new(Edge::HTTP).with_fact(HttpRequest::from_parts(parts)))
}

/// `Retry-After` (whole seconds, rounded up) for an error whose details say when to retry.
fn retry_after(error: &CallError) -> Option<HeaderValue> {
    let millis = error.details.as_ref()?.get("retryAfterMs")?.as_u64()?;
    HeaderValue::from_str(&millis.div_ceil(1000).max(1).to_string()).ok()
}

/// A `200` whose body is `json` (`Content-Type: application/json`).
///
/// Built as it is sent: a body turned into a response through `IntoResponse` is first typed
/// `application/octet-stream`, a header then replaced (two header writes per call).
pub(crate) fn json_response(json: Vec<u8>) -> Response {
    let mut response = Response::new(axum::body::Body::from(json));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
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

impl ServerState {
    /// The response of a served call's error: `401` with the challenge for a caller without
    /// an identity refused by an access rule, `Retry-After` on a rate limit, and the
    /// configured status for an input that parsed but fails the schema (the parameters' when
    /// every violation is in a field `from_url`).
    fn call_error_response(
        &self,
        found: &FoundOperation,
        error: &CallError,
        identity: Option<&opkit::Identity>,
        from_url: FromUrl<'_>,
    ) -> Response {
        if error.code == ErrorCode::AccessDenied
            && error.kind.is_none()
            && let Some(identity) = identity
            && let Some(response) = self.insufficient_scope(found, identity, error)
        {
            return response;
        }
        let status = match status_of(error) {
            StatusCode::FORBIDDEN if identity.is_none() && self.authenticator.is_some() => {
                StatusCode::UNAUTHORIZED
            }
            _ if body_limit_of(error) == Some("bodyLimit") => StatusCode::PAYLOAD_TOO_LARGE,
            _ if body_limit_of(error) == Some(byte_bodies::BODY_TIMEOUT) => {
                StatusCode::REQUEST_TIMEOUT
            }
            StatusCode::BAD_REQUEST if error.code == ErrorCode::ValidationError => {
                if from_url.has_all(error) {
                    self.invalid_parameter_status
                } else {
                    self.invalid_input_status
                }
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
    /// scopes the operation `found` needs.
    fn insufficient_scope(
        &self,
        found: &FoundOperation,
        identity: &opkit::Identity,
        error: &CallError,
    ) -> Option<Response> {
        let authenticator = self.authenticator.as_ref()?;
        let needed = &found.spec().access.scopes;
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

    /// The caller's identity when no authenticator has to look at the request: the one a
    /// layer in front put in its extensions, or none on a server without an authenticator
    /// (what [`identify`](Self::identify) answers then, without a future to poll); `None`
    /// when the authenticator must be asked.
    pub(crate) fn identity_at_hand(
        &self,
        parts: &http::request::Parts,
    ) -> Option<Option<opkit::Identity>> {
        if let Some(identity) = parts.extensions.get::<opkit::Identity>() {
            return Some(Some(identity.clone()));
        }
        self.authenticator.is_none().then_some(None)
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
/// Which input fields a request's URL gave (path variables, query values): a call failing
/// only in them is answered with the server's `invalid_parameter_status`.
#[derive(Clone, Copy)]
pub(crate) enum FromUrl<'a> {
    /// None: the input is the body.
    Nothing,
    /// All of them (a `GET`'s or a `DELETE`'s).
    Everything,
    /// These (a REST route's path variables beside its body).
    Fields(&'a [String]),
}

impl FromUrl<'_> {
    /// Whether every violation of a `VALIDATION_ERROR` is in a field the URL gave.
    fn has_all(&self, error: &CallError) -> bool {
        let fields = match self {
            FromUrl::Nothing => return false,
            FromUrl::Everything => return true,
            FromUrl::Fields(fields) => fields,
        };
        let Some(violations) = error.details.as_ref().and_then(Value::as_array) else {
            return false;
        };
        !violations.is_empty()
            && violations.iter().all(|violation| {
                let path = violation["path"].as_str().unwrap_or_default();
                let first = path
                    .strip_prefix('/')
                    .map(|rest| rest.split('/').next().unwrap_or_default())
                    .map(opkit::schema::pointer::unescape);
                first.is_some_and(|field| fields.iter().any(|name| *name == field))
            })
    }
}

pub(crate) struct Shape<'a> {
    /// The response of a unary success's reply (an error: one that would not serialize).
    pub(crate) unary: &'a (dyn Fn(opkit::middleware::Reply) -> Result<Response, CallError> + Sync),
    /// A stream of `Binary` items answered as one raw body with this status and content type
    /// (see [`byte_bodies::response_stream`]), instead of SSE.
    pub(crate) raw_stream: Option<(StatusCode, HeaderValue)>,
    /// Time the call gets on top of the request timeout: the time its body may take to
    /// stream in (a body read before the call had it already).
    pub(crate) body_time: Duration,
    /// The input fields the URL gave.
    pub(crate) from_url: FromUrl<'a>,
}

/// Serves a call of the operation `found` (looked up once, by the route) whose input was
/// read: the context from the request, the registry's front door
/// ([`OperationRegistry::serve_found_ref`]: the route lends it the operation), and its
/// outcome as a response (the RPC shape, or the one `shape` makes).
///
/// The call is prepared here and only its outcome awaited: the returned future holds what
/// the response needs (not the request's parts, identity and input, which an `async fn`
/// would keep beside the call it awaits), and is moved the fewer bytes.
///
/// [`OperationRegistry::serve_found_ref`]: opkit::OperationRegistry::serve_found_ref
pub(crate) fn serve_call<'a>(
    shared: &'a ServerState,
    found: &'a FoundOperation,
    parts: http::request::Parts,
    identity: Option<opkit::Identity>,
    input: Value,
    shape: Option<&'a Shape<'a>>,
) -> impl Future<Output = Response> + Send + 'a {
    let stream = found.spec().kind.is_stream();
    let from_url = match shape {
        Some(shape) => shape.from_url,
        None if parts.method == Method::GET => FromUrl::Everything,
        None => FromUrl::Nothing,
    };
    // Read here, not for every call: only a stream is answered in an SSE encoding.
    let encoding = stream.then(|| SseEncoding::requested(&parts.headers));
    let lean = !stream && !shared.registry.reads_context(found);
    let body_time = shape.map_or(Duration::ZERO, |shape| shape.body_time);
    let (ctx, guard) = bounded(
        call_context(parts, identity, lean),
        shared,
        stream,
        lean,
        body_time,
    );
    // Written for the header alone: the context keeps no copy of a fresh id's text.
    let request_id = ctx.with_request_id_text(|id| HeaderValue::from_str(id).ok());
    let events = encoding.map(|encoding| (encoding, ctx.request_id().to_owned()));
    // An error response reads the caller's identity only when the server authenticates
    // (`insufficient_scope`, 401 for a call without one): the context is kept for it then,
    // boxed (the future of every call would hold room for it).
    let caller = shared.authenticator.as_ref().map(|_| Box::new(ctx.clone()));
    // The front door's future, made here and polled in place below (it is `Unpin`): the
    // context and the input move into it now, not into this future first.
    let mut serving = shared.registry.serve_found_ref(found, input, ctx);
    async move {
        let identity = caller.as_deref().and_then(OperationContext::identity);
        // Every outcome but a raw body's is answered in this block. The outcome lives only
        // in it, so the raw body's future (boxed: a raw stream is rare, and its future would
        // make every call's larger) is awaited after it with nothing of the outcome kept.
        let raw_body = 'answered: {
            let outcome = (&mut serving).await;
            let response = match outcome {
                Ok(Outcome::Unary(reply)) => {
                    disarm(guard);
                    unary_response(reply, shape).unwrap_or_else(|error| {
                        shared.call_error_response(found, &error, identity, from_url)
                    })
                }
                Ok(Outcome::Stream(items)) => match shape.and_then(|s| s.raw_stream.clone()) {
                    Some(raw) => {
                        break 'answered Box::pin(byte_bodies::response_stream(items, guard, raw));
                    }
                    None => {
                        let (encoding, request_id) = events
                            .expect("a stream's encoding and request id were read before the call");
                        sse_response(shared, encoding, request_id, items, guard)
                    }
                },
                Err(error) => {
                    disarm(guard);
                    shared.call_error_response(found, &error, identity, from_url)
                }
            };
            return with_request_id(response, request_id);
        };
        let response = raw_body
            .await
            .unwrap_or_else(|error| shared.call_error_response(found, &error, identity, from_url));
        with_request_id(response, request_id)
    }
}

/// `ctx` bounded as a call of this server: its deadline (the request timeout plus
/// `body_time`, the time its body may stream in; a stream's own timeout, if the server sets
/// one) and, unless `lean`, a cancellation token fired by the returned guard.
///
/// A client that disconnects drops the call's future (or its event stream): the guard then
/// cancels the context; a finished unary call disarms it. A `lean` call (a query or mutation
/// whose handler reads nothing of its context) needs no token: dropping its future drops its
/// handler's, and nothing else could see the cancellation.
fn bounded(
    mut ctx: OperationContext,
    shared: &ServerState,
    stream: bool,
    lean: bool,
    body_time: Duration,
) -> (OperationContext, Option<DropGuard>) {
    let mut guard = None;
    if !lean {
        let token = CancellationToken::new();
        ctx = ctx.with_cancellation(token.clone());
        guard = Some(token.drop_guard());
    }
    let ctx = match (stream, shared.subscription_timeout) {
        (false, _) => ctx.with_timeout(shared.request_timeout + body_time),
        (true, Some(timeout)) => ctx.with_timeout(timeout),
        (true, None) => ctx,
    };
    (ctx, guard)
}

/// The response of a unary call's reply, with its cache hint: the RPC route sends the
/// envelope's JSON as the reply writes it (an `#[operation]` fn's data serialized once, into
/// these bytes); a REST route (`shape`) shapes the envelope. An error is the reply's (an
/// output that would not serialize).
fn unary_response(
    reply: opkit::middleware::Reply,
    shape: Option<&Shape<'_>>,
) -> Result<Response, CallError> {
    let hint = reply.cache_hint();
    let mut response = match shape {
        Some(shape) => (shape.unary)(reply)?,
        None => json_response(reply.to_json_bytes()?),
    };
    if let Some(value) = hint.and_then(cache_control) {
        response.headers_mut().insert(header::CACHE_CONTROL, value);
    }
    Ok(response)
}

/// The SSE response of a stream of replies, one event each in `encoding` (the one the
/// request asked for), holding the call's cancellation `guard` as long as the stream lives.
fn sse_response(
    shared: &ServerState,
    encoding: SseEncoding,
    request_id: String,
    items: opkit::middleware::ReplyStream,
    guard: Option<DropGuard>,
) -> Response {
    // The events keep the connection alive themselves (see `sse::Events`).
    let events = sse::events(items, encoding, guard, request_id, shared.keep_alive);
    let mut response = Response::new(axum::body::Body::new(events));
    let headers = response.headers_mut();
    let media_type = match encoding {
        SseEncoding::Envelope => HeaderValue::from_static("text/event-stream"),
        SseEncoding::Data => sse::DATA_CONTENT_TYPE,
    };
    headers.insert(header::CONTENT_TYPE, media_type);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    response
}

/// `/ops/{id}`, any method: the wire mapped to the registry's front door
/// ([`OperationRegistry::serve`]) and its outcome back.
pub(crate) fn operation(
    State(shared): State<Arc<ServerState>>,
    Path(id): Path<String>,
    request: Request,
) -> impl Future<Output = Response> + Send {
    serve_operation(Target::Path(shared, id), request)
}

/// The route `/ops/<id>` of the operation `id`, any method: what [`operation`] serves, for
/// an operation the registry had when the router was built, without matching, decoding and
/// allocating the path's variable on every request, and as a
/// [`Routed`](super::routed::Routed) service (no handler's clones per request). The id is
/// still looked up per request: the operation may have been replaced or removed since.
pub(crate) struct OperationAt {
    pub(crate) shared: Arc<ServerState>,
    pub(crate) id: Box<str>,
}

impl RouteTarget for OperationAt {
    fn serve(self: Arc<Self>, request: Request) -> impl Future<Output = Response> + Send + 'static {
        serve_operation(Target::Route(self), request)
    }
}

/// The server and the operation's id a request to `/ops/<id>` is for, owned by its future.
enum Target {
    /// A route of the operation's own ([`OperationAt`]).
    Route(Arc<OperationAt>),
    /// `/ops/{id}`, the id read from the path.
    Path(Arc<ServerState>, String),
}

impl Target {
    fn parts(&self) -> (&ServerState, &str) {
        match self {
            Self::Route(route) => (&route.shared, &route.id),
            Self::Path(shared, id) => (shared, id),
        }
    }
}

/// Serves a request to `/ops/<id>`. The request is split before the future is made, so the
/// future holds its parts once (an `async fn` would keep the request beside them).
///
/// The future is the one boxed per request (by [`Routed`](super::routed::Routed), or by axum
/// for `/ops/{id}`): it owns what it needs (no wrapper holding the request a second time), and
/// a call's own future is awaited within it.
fn serve_operation(target: Target, request: Request) -> impl Future<Output = Response> + Send {
    let (parts, body) = request.into_parts();
    async move {
        let (shared, id) = target.parts();
        let identity = match shared.identity_at_hand(&parts) {
            Some(identity) => identity,
            None => match shared.identify(&parts).await {
                Ok(identity) => identity,
                Err(response) => return response,
            },
        };
        let Some(found) = shared.registry.lookup(id) else {
            return error_response(&CallError::operation_not_found(id));
        };
        let route = shared.routes.get(&shared.registry, &found);
        if !route.methods.contains(&parts.method) {
            return method_not_allowed(id, &parts.method, &route.methods);
        }
        // Read in a block of its own: the read's result is gone (not kept beside the call)
        // while the call is awaited.
        let input = {
            let read = if parts.method == Method::GET {
                query_input(&route, &parts.uri)
            } else {
                read_json_body(
                    &parts.headers,
                    body,
                    BodyLimit::server(shared.body_limit),
                    shared.request_timeout,
                )
                .await
            };
            match read {
                Ok(input) => input,
                Err(rejection) => return rejection.into_response(),
            }
        };
        serve_call(shared, &found, parts, identity, input, None).await
    }
}

#[cfg(test)]
mod tests {
    use super::{REQUEST_ID, TRACEPARENT, TRACESTATE, context_headers};
    use http::{HeaderMap, HeaderValue};

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn headers(pairs: &[(&http::HeaderName, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_bytes(value).unwrap());
        }
        map.append(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        map
    }

    #[test]
    fn the_trace_and_request_id_are_read_as_lookups_would_read_them() {
        let map = headers(&[
            (&TRACESTATE, b"a=1"),
            (&REQUEST_ID, b"first"),
            (&TRACEPARENT, PARENT.as_bytes()),
            (&REQUEST_ID, b"second"),
            (&TRACESTATE, b"b=2"),
            (
                &TRACEPARENT,
                b"00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01",
            ),
        ]);
        let (trace, request_id) = context_headers(&map);
        let trace = trace.expect("a trace context");
        assert_eq!(trace.traceparent(), PARENT, "the first traceparent");
        assert_eq!(
            trace.tracestate(),
            Some("a=1,b=2"),
            "every tracestate, in order"
        );
        assert_eq!(request_id, Some("first"), "the first x-request-id");
    }

    #[test]
    fn absent_empty_overlong_or_unreadable_values_are_none() {
        assert_eq!(context_headers(&HeaderMap::new()), (None, None));
        let long = "x".repeat(129);
        for value in [&b""[..], long.as_bytes(), b"caf\xc3\xa9"] {
            let map = headers(&[(&REQUEST_ID, value)]);
            assert_eq!(context_headers(&map).1, None, "{value:?}");
        }
        let longest = "x".repeat(128);
        let map = headers(&[(&REQUEST_ID, longest.as_bytes())]);
        assert_eq!(context_headers(&map).1, Some(&*longest));
        let (trace, _) = context_headers(&headers(&[(&TRACESTATE, b"a=1")]));
        assert_eq!(trace, None, "no traceparent, no trace");
        let (trace, _) = context_headers(&headers(&[(&TRACEPARENT, b"not a traceparent")]));
        assert_eq!(trace, None, "an invalid traceparent");
    }
}
