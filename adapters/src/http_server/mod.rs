//! Serve a registry over HTTP (feature `http-server`, built on axum): one route per
//! operation, subscriptions as server-sent events, and a generated OpenAPI 3.1 document.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use opkit::{Handler, Identity, OperationKind, OperationRegistry, OperationSpec};
//! use opkit_adapters::http_server::{HttpServer, StaticTokens};
//! use serde_json::json;
//!
//! let registry = OperationRegistry::new();
//! registry
//!     .register(
//!         OperationSpec::new("math", "add", OperationKind::Query).input_schema(json!({
//!             "type": "object",
//!             "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
//!             "required": ["a", "b"]
//!         })),
//!         Handler::unary(|input, _ctx| async move {
//!             Ok(json!(input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0)))
//!         }),
//!     )
//!     .unwrap();
//! let server = HttpServer::new(registry)
//!     .identity_resolver(StaticTokens::new().with("s3cret", Identity::new("ann")));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! // GET  http://127.0.0.1:8080/ops/math.add?a=2&b=40
//! // POST http://127.0.0.1:8080/ops/math.add  {"a": 2, "b": 40}
//! // GET  http://127.0.0.1:8080/openapi.json
//! server.serve(listener).await
//! # }
//! ```
//!
//! # URL layout
//!
//! | route | what |
//! |---|---|
//! | `GET /openapi.json` | the OpenAPI 3.1 document, generated from the registry's current specs |
//! | `GET /explorer` (when enabled, at the path given to [`HttpServer::explorer`]) | the operations explorer, a page for people |
//! | `GET /ops/<id>?<params>` | a query or subscription, input from the query string (below) |
//! | `POST /ops/<id>` | any operation, input from the `application/json` body (an empty body is `{}`) |
//! | anything else | `404` with a `CallError` body |
//!
//! `<id>` is the operation id as is (`/ops/math.add`). Mutations take only `POST`; queries
//! and subscriptions take both `GET` and `POST`, except that `GET` needs an input schema
//! that spreads over query parameters — an object schema with `properties` and no
//! combinator at its root: each property is one parameter, primitives as plain values
//! (`?a=2&flag=true`), arrays of primitives as repeated keys (`?tag=x&tag=y`), anything else
//! as JSON (`?filter={"name":"ann"}`). Other methods get `405` with an `Allow` header.
//! The OpenAPI document describes every method the server answers. The canonical HTTP
//! operation of an opkit operation has `operationId` = the opkit id: `GET` when that is
//! possible for a query or subscription, `POST` otherwise; the `POST` twin of a `GET`
//! operation has `operationId` `<id>.post` and `x-opkit-alias: true` (an importer that wants
//! one operation per opkit operation skips aliases). Every documented operation carries
//! `x-opkit-id` and `x-opkit-kind`.
//!
//! **Importing what this server serves.** The document is a correct description for any
//! OpenAPI client: the body really is the envelope, the `POST` twin really is answered. opkit's
//! own OpenAPI import (`opkit_adapters::openapi`, feature `openapi`) recognises these
//! operations by `x-opkit-id`/`x-opkit-kind` and gives back the operations that were served:
//! aliases skipped, the kind from `x-opkit-kind`, the input schema as it is (the body is the
//! input), the envelope's `data` as the data and the `CallError` body as the error, the
//! `complete` event as the end of a stream. So importing an opkit server gives the same
//! operations, inputs, data and errors as calling its registry (see the OpenAPI import's
//! "Served by opkit" section).
//!
//! # REST routes
//!
//! An operation can also choose its HTTP shape, so existing clients of a REST API keep
//! working: `#[operation(http(method = "..", path = "..", ..))]` (or
//! [`OperationSpec::http`](opkit::OperationSpec::http) with an [`HttpRoute`](opkit::HttpRoute))
//! serves it at that method and path **beside** its RPC route, both through the same front
//! door:
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use opkit::prelude::*;
//! use opkit_adapters::http_server::HttpServer;
//!
//! #[derive(Clone, serde::Serialize, schemars::JsonSchema)]
//! struct Todo {
//!     id: String,
//!     text: String,
//!     completed: bool,
//! }
//!
//! /// Changes a todo: `PATCH /todos/{id}` (REST) and `POST /ops/todos.update` (RPC).
//! #[operation(namespace = "todos", mutation, http(method = "PATCH", path = "/todos/{id}"))]
//! async fn update(id: String, text: Option<String>, completed: Option<bool>) -> Todo {
//!     Todo { id, text: text.unwrap_or_default(), completed: completed.unwrap_or(false) }
//! }
//!
//! /// Creates a todo: `201 Created` with `Location: /todos/<id>`.
//! #[operation(
//!     namespace = "todos",
//!     mutation,
//!     http(method = "POST", path = "/todos", status = 201, location = "/todos/{id}")
//! )]
//! async fn create(text: String) -> Todo {
//!     Todo { id: opkit::new_request_id(), text, completed: false }
//! }
//!
//! let registry = OperationRegistry::new();
//! registry.register_operation(update).unwrap();
//! registry.register_operation(create).unwrap();
//! let server = HttpServer::new(registry)
//!     .invalid_input_status(http::StatusCode::UNPROCESSABLE_ENTITY);
//! // PATCH http://127.0.0.1:8080/todos/7  {"completed": true}  -> 200 {"id": "7", ..}
//! // POST  http://127.0.0.1:8080/ops/todos.update  {"id": "7", "completed": true}
//! //                                               -> 200 {"data": {..}, "meta": {..}}
//! server.serve(tokio::net::TcpListener::bind("127.0.0.1:8080").await?).await
//! # }
//! ```
//!
//! | part | what |
//! |---|---|
//! | `method`, `path` | `GET`, `POST`, `PUT`, `PATCH` or `DELETE`; each `{variable}` of the path is a whole segment and names a field of the input |
//! | the input | the path's variables, then the query string (`GET`, `DELETE`: read by the input schema, `?limit=5` is the integer 5) or the JSON body (`POST`, `PUT`, `PATCH`: an object; a path variable wins over a body field of the same name) |
//! | `status` | the status of a success, `200` unless given; `204` sends no body |
//! | `body` | `"data"` (the default): the body is the bare `data`, what REST clients expect, with the request id in `x-request-id` and the operation id in `x-opkit-operation`; `"envelope"`: the whole envelope, as on the RPC route |
//! | `location` | a `Location` header for a success, each `{name}` filled from the output's field of that name (`/todos/{id}` after a create) |
//! | `body_limit` | the route's own body limit (`"5MB"`, `"512KiB"`, bytes), instead of [`HttpServer::body_limit`] |
//! | `timeout = ".."` (beside `http(..)`) | the operation's own deadline, on every route and edge |
//!
//! **Bytes.** A route whose body is one [`Binary`](opkit::binary::Binary) field (the input's
//! only field besides the path's) reads the raw request body into it, whatever its content
//! type (under the route's `body_limit`); an operation whose output is `Binary` answers the
//! raw bytes as `application/octet-stream`; an operation whose output is `()` answers the
//! route's status with no body. On the RPC route, over MCP and the call protocol the same
//! bytes are a base64 string (the MCP server adds the bytes as an image, audio or blob
//! resource block, by the output's media type). A route whose body has a `Binary` field
//! among others also takes `multipart/form-data`: each file part fills its `Binary` field,
//! each other part is read by its field's schema like a query value (under the same limit).
//!
//! **Large bytes, streamed.** A `Binary` is held whole; for bodies too large for that, make
//! the field a [`ByteStream`](opkit::binary::ByteStream): the operation reads the request body
//! chunk by chunk while it arrives, never held whole. The route's `body_limit` still holds
//! as it streams (the stream ends with the `413` error, which the operation returns as its
//! own), and the body must arrive within the request timeout (else `408`); the call gets the
//! request timeout on top of that for its own work, as a body read first would. Middleware
//! reading such an input sees a token for the body (the body is handed to the operation in
//! this process; an operation served elsewhere cannot read it). In the other direction, a
//! stream operation whose items are `Binary` answers a REST route with one raw body written
//! chunk by chunk as the items come (an error before the first item gets its status; one
//! after it cuts the transfer short), instead of SSE.
//!
//! Errors keep the [`CallError`] body and its status (below). Malformed JSON is `400`; an
//! input that parses but fails its schema is `400` too unless
//! [`HttpServer::invalid_input_status`] makes it `422` (what axum's `Json` extractor and
//! FastAPI answer); a body that does not arrive within the request timeout is `408`, a
//! handler past its deadline `504`. Routes are checked when the router is built
//! ([`HttpServer::try_router`]): a path variable that names no input field, two routes on one
//! method and path, routes at one path naming their variables differently, or a route over
//! the RPC paths are a [`RouteError`]. REST routes are taken from the operations registered
//! when the router is built. The OpenAPI document describes each route (`operationId`
//! `<id>.rest`, `x-opkit-rest: true`, `x-opkit-alias: true`, so opkit's own OpenAPI import
//! keeps to the RPC form).
//!
//! # Responses
//!
//! **The whole [`ResponseEnvelope`](opkit::ResponseEnvelope) is the body**, so both the data
//! and the meta survive (an operation that returns its own HTTP or MCP envelope keeps it):
//! `200 {"data": .., "meta": {"source": "local", "operationId": .., "timestamp": ..}}`.
//! The status is the call's: an envelope whose meta says `statusCode: 404` or
//! `isError: true` is still a successful call and comes back with `200`.
//! Failures carry the [`CallError`] wire JSON `{code, message, details?, kind?}` with the
//! status from [`status_of`]: an application error's [`ErrorKind`] decides it when it has
//! one (`NOT_FOUND` 404, `CONFLICT` 409, `UNPROCESSABLE` 422, `RATE_LIMITED` 429,
//! `UNAUTHENTICATED` 401, `UNAVAILABLE` 503), else the code does ([`status_for`]):
//!
//! | code | status |
//! |---|---|
//! | `VALIDATION_ERROR` (input, query string, body JSON) | 400 (413 for a body over the limit, 415 for a non-JSON body, 422 for an input that fails its schema when [`HttpServer::invalid_input_status`] says so) |
//! | `ACCESS_DENIED` | 403; 401 (with the authenticator's `WWW-Authenticate` challenge) when an authenticator is configured and the caller is anonymous or its credentials are refused |
//! | `OPERATION_NOT_FOUND` | 404 |
//! | `EXECUTION_ERROR` | 500 |
//! | `TRANSPORT_ERROR` | 502 |
//! | `ABORTED` | 503 |
//! | `TIMEOUT` | 504 (408 when the request body did not arrive in time) |
//!
//! Every response to `/ops/<id>` carries the call's request id in `x-request-id` (a
//! request may choose it by sending that header). When the client of a query or mutation
//! disconnects before the answer, the call is dropped and its context's cancellation token
//! cancelled (so work the handler spawned can stop too).
//!
//! # Subscriptions
//!
//! A subscription answers `200` with `Content-Type: text/event-stream` (and
//! `Cache-Control: no-cache`, `X-Accel-Buffering: no`):
//!
//! ```text
//! id: 0
//! data: {"data":{"tick":0},"meta":{"source":"local","operationId":"clock.ticks","timestamp":1767225600000}}
//!
//! id: 1
//! data: {"data":{"tick":1},"meta":{..}}
//!
//! event: complete
//! data: {"requestId":"1b4e28ba-2fa1-11d2-883f-0016d3cca427"}
//! ```
//!
//! One unnamed event (type `message`, so `EventSource.onmessage` sees it) per envelope, then
//! either `event: complete` or — when the stream fails — `event: error` with a `CallError`,
//! and the response ends. Errors found before the stream starts (validation, access) are
//! ordinary JSON error responses. Comments (`:`) are sent as keep-alives. When the client
//! disconnects, the response body is dropped, which drops the registry stream (and the
//! handler's stream) and cancels the context's cancellation token.
//!
//! A client that wants the items alone asks for the compact encoding with a media type
//! parameter, `Accept: text/event-stream; opkit=data`. Each item event's data is then the
//! item's `data`, without its meta and without an `id:`, and the response's `Content-Type`
//! is `text/event-stream; opkit=data`. The meta a client needs once is in the `x-request-id`
//! header and the `complete` event; `error` and `complete` are the same in both encodings.
//! The envelope encoding stays the default, and opkit's own clients (the OpenAPI import of an
//! opkit server) use it. A generic SSE client that asks for nothing gets envelopes.
//!
//! ```text
//! data: {"tick":0}
//!
//! data: {"tick":1}
//!
//! event: complete
//! data: {"requestId":"1b4e28ba-2fa1-11d2-883f-0016d3cca427"}
//! ```
//!
//! # Identity and access
//!
//! The call's [`Identity`](opkit::Identity) is, in this order:
//! 1. an `Identity` the application's own middleware put into the request's extensions
//!    (`request.extensions_mut().insert(identity)` in a tower/axum layer that already
//!    authenticated the user: only server-side code can put it there, so it is trusted);
//! 2. what the configured [`Authenticator`] reads from the whole request — [`BearerAuth`]
//!    ([`HttpServer::identity_resolver`]: `Authorization: Bearer <token>`), [`ApiKeyAuth`]
//!    (an API-key header), or any closure over the request's parts (cookies, mTLS
//!    extensions, ...); credentials it refuses get `401`;
//! 3. anonymous.
//!
//! The server is an untrusted entry point: it serves each call through the registry's front
//! door, [`OperationRegistry::serve`](opkit::OperationRegistry::serve), which checks the
//! operation's [`AccessRule`](opkit::AccessRule) before anything runs: an authenticated
//! caller that lacks a scope or role gets `403`, an anonymous one `401` when an
//! authenticator is configured (so that it knows to authenticate), `403` otherwise. A `403`
//! for missing scopes carries the authenticator's
//! [`insufficient_scope`](Authenticator::insufficient_scope) challenge, when it has one.
//!
//! An authenticator that is an OAuth resource server (one that has
//! [`protected_resource_metadata`](Authenticator::protected_resource_metadata), like the
//! `oauth` feature's `OAuthAuthenticator`) also has its metadata document served at
//! `/.well-known/oauth-protected-resource` and at that path followed by the resource's path,
//! relative to where the router is mounted (merge it at the root, as RFC 9728 wants).
//!
//! # Middleware and what the operation sees of the request
//!
//! The registry's [middleware](opkit::middleware) runs around every call the server serves,
//! as it does for every other edge: a rate limit answers `429` with `Retry-After` (from the
//! error's `details.retryAfterMs`), a [`Cache`](opkit::middleware::Cache) hit comes with
//! `Cache-Control: private, max-age=<ttl>` (`public` for a shared cache). The call's context
//! carries an [`Edge`](opkit::edge::Edge) named `http_server` with an [`HttpRequest`] fact
//! (method, URI, headers), so an operation or a middleware reads the request without it
//! being part of the input schema:
//!
//! ```
//! use opkit::OperationContext;
//! use opkit_adapters::http_server::HttpRequest;
//!
//! /// The caller's `user-agent`, when the call came over HTTP.
//! fn user_agent(ctx: &OperationContext) -> Option<String> {
//!     let http = ctx.edge()?.fact::<HttpRequest>()?;
//!     Some(http.headers.get("user-agent")?.to_str().ok()?.to_owned())
//! }
//! # assert_eq!(user_agent(&OperationContext::new()), None);
//! ```
//!
//! # Mounting
//!
//! [`HttpServer::router`] is root-relative, like every axum router: `merge` it to serve at
//! the root, or `nest("/api", ..)` it to serve at `/api/ops/<id>` and `/api/openapi.json`.
//! The document's `servers` entry and the paths named in error hints follow the prefix the
//! router was reached through ([`HttpServer::base_path`] fixes it for a proxy that strips
//! one). [`McpServer::router`](crate::mcp_server::McpServer::router) is root-relative too,
//! so both mount alike:
//!
//! ```no_run
//! # fn demo(registry: opkit::OperationRegistry) {
//! use axum::Router;
//! use opkit_adapters::http_server::HttpServer;
//! use opkit_adapters::mcp_server::McpServer;
//! let app: Router = Router::new()
//!     .route("/health", axum::routing::get(|| async { "ok" }))
//!     .nest("/api", HttpServer::new(registry.clone()).router())
//!     .nest("/mcp", McpServer::new(registry).router());
//! # }
//! ```
//!
//! The routers carry their own axum state (they are `Router<()>`), so they mount into an
//! app whose own routes use another `State`: nest or merge them after the app's
//! `with_state(app_state)`, or, before it, turn them into the app's router type with
//! `.with_state(())` (`Router<()>::with_state` gives a `Router<S>` for any `S`).
//!
//! # Limits
//!
//! | setting | default | what |
//! |---|---|---|
//! | [`HttpServer::body_limit`] | [`DEFAULT_BODY_LIMIT`] (1 MiB) | a larger body (by `Content-Length` or as it streams in) gets `413` with a `VALIDATION_ERROR` naming the limit, `details: {"limit": "bodyLimit", "max": <bytes>}` |
//! | JSON nesting of a body | 127 levels (serde_json's parser), then [`MAX_INPUT_DEPTH`](opkit::limits::MAX_INPUT_DEPTH) (100) | `400` with a `VALIDATION_ERROR`: `recursion limit exceeded` from the parser, or the registry's depth violation |
//! | [`HttpServer::request_timeout`] | 30 s | the deadline of queries and mutations: `504`; and of reading the body: `408` |
//! | [`HttpServer::subscription_timeout`] | none | the deadline of subscriptions: an `error` event with `TIMEOUT` |
//! | [`HttpServer::keep_alive`] | 15 s | interval of SSE keep-alive comments |
//! | [`ConnectionLimits::header_read_timeout`] | [`DEFAULT_HEADER_READ_TIMEOUT`] (10 s) | a client slower to send its headers, or a kept-alive connection idle longer, is closed |
//! | [`ConnectionLimits::max_connections`] | [`DEFAULT_MAX_CONNECTIONS`] (10,000) | further connections wait in the listen backlog until one closes |
//!
//! The connection limits apply where the server accepts connections: [`HttpServer::serve`],
//! or [`serve_router`] for an application that mounts the routers in its own app (with
//! `axum::serve` instead, configure them there).
//!
//! # Tracing
//!
//! Each call to `/ops/{id}` runs in a server span (`opkit.path = "http_server"`, see
//! [`opkit::trace`]) whose parent is the caller's W3C `traceparent` header (with
//! `tracestate`); without one (or with an invalid one) the call starts a new trace. A
//! subscription's span lasts until its event stream ends. Requests refused before the call
//! reaches the front door (authentication, unknown operation, method, unreadable input) get
//! no span; an access denial or a middleware's refusal ends the span with its error.

mod byte_bodies;
mod explorer;
mod handlers;
pub(crate) mod identity;
mod openapi;
mod query;
pub(crate) mod refs;
mod request_body;
mod rest;
mod routes;
mod serve;
mod shared_components;
mod sse;
mod state;
pub(crate) mod well_known;

pub use identity::{
    ApiKeyAuth, Authenticator, BearerAuth, IdentityResolver, StaticTokens, async_resolver,
};

pub use handlers::HttpRequest;
pub use rest::RouteError;

/// Why an [`HttpServer`] cannot serve its registry: found when the router is built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpServerError {
    /// An operation reads application state the registry was not given.
    #[error(transparent)]
    MissingState(#[from] RegistryError),
    /// A REST route is invalid or collides with another.
    #[error(transparent)]
    Route(#[from] RouteError),
}
#[cfg(feature = "mcp-server")]
pub(crate) use identity::authenticate;
pub use serve::{
    ConnectionLimits, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_CONNECTIONS, serve_router,
};

use axum::Router;
use axum::routing::{any, get};
use http::StatusCode;
use opkit::{CallError, ErrorCode, ErrorKind, OperationRegistry, RegistryError};
use serde_json::Value;
use state::ServerState;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The HTTP status of a [`CallError`] code.
///
/// ```
/// use http::StatusCode;
/// use opkit::ErrorCode;
/// use opkit_adapters::http_server::status_for;
/// assert_eq!(status_for(ErrorCode::ValidationError), StatusCode::BAD_REQUEST);
/// assert_eq!(status_for(ErrorCode::Timeout), StatusCode::GATEWAY_TIMEOUT);
/// ```
pub fn status_for(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::ValidationError => StatusCode::BAD_REQUEST,
        ErrorCode::AccessDenied => StatusCode::FORBIDDEN,
        ErrorCode::OperationNotFound => StatusCode::NOT_FOUND,
        ErrorCode::ExecutionError => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::TransportError => StatusCode::BAD_GATEWAY,
        ErrorCode::Aborted => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Timeout => StatusCode::GATEWAY_TIMEOUT,
    }
}

/// The HTTP status of a [`CallError`]: its application [`ErrorKind`] when it has one
/// (`NOT_FOUND` 404, `CONFLICT` 409, `UNPROCESSABLE` 422, `RATE_LIMITED` 429,
/// `UNAUTHENTICATED` 401, `UNAVAILABLE` 503), else [`status_for`] its code.
///
/// ```
/// use http::StatusCode;
/// use opkit::CallError;
/// use opkit_adapters::http_server::status_of;
/// assert_eq!(status_of(&CallError::conflict("the title is taken")), StatusCode::CONFLICT);
/// assert_eq!(status_of(&CallError::execution("disk full")), StatusCode::INTERNAL_SERVER_ERROR);
/// ```
pub fn status_of(error: &CallError) -> StatusCode {
    match error.kind {
        Some(ErrorKind::NotFound) => StatusCode::NOT_FOUND,
        Some(ErrorKind::Conflict) => StatusCode::CONFLICT,
        Some(ErrorKind::Unprocessable) => StatusCode::UNPROCESSABLE_ENTITY,
        Some(ErrorKind::RateLimited) => StatusCode::TOO_MANY_REQUESTS,
        Some(ErrorKind::Unauthenticated) => StatusCode::UNAUTHORIZED,
        Some(ErrorKind::Unavailable) => StatusCode::SERVICE_UNAVAILABLE,
        _ => status_for(error.code),
    }
}

/// The response of a [`CallError`]: [`status_of`] the error, the wire JSON as the body.
pub fn error_response(error: &CallError) -> axum::response::Response {
    state::error_response(error)
}

/// The largest request body an [`HttpServer`] accepts unless [`HttpServer::body_limit`] says
/// otherwise: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

/// Serves an [`OperationRegistry`] over HTTP; see the [module docs](self) for the routes.
///
/// Operations registered or removed after the server started are served (and documented)
/// from then on.
#[derive(Clone)]
pub struct HttpServer {
    registry: OperationRegistry,
    authenticator: Option<Arc<dyn Authenticator>>,
    base_path: Option<String>,
    explorer: Option<state::Explorer>,
    connections: ConnectionLimits,
    body_limit: usize,
    request_timeout: Duration,
    subscription_timeout: Option<Duration>,
    keep_alive: Duration,
    invalid_input_status: StatusCode,
    compression: bool,
    title: String,
    version: String,
    description: Option<String>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("registry", &self.registry)
            .field("has_authenticator", &self.authenticator.is_some())
            .field("base_path", &self.base_path)
            .field("body_limit", &self.body_limit)
            .field("request_timeout", &self.request_timeout)
            .field("subscription_timeout", &self.subscription_timeout)
            .field("keep_alive", &self.keep_alive)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// A server for `registry` with the default limits, no identity resolver, and the
    /// document title `opkit`.
    pub fn new(registry: OperationRegistry) -> Self {
        Self {
            registry,
            authenticator: None,
            base_path: None,
            explorer: None,
            connections: ConnectionLimits::default(),
            body_limit: DEFAULT_BODY_LIMIT,
            request_timeout: Duration::from_secs(30),
            subscription_timeout: None,
            keep_alive: Duration::from_secs(15),
            invalid_input_status: StatusCode::BAD_REQUEST,
            compression: true,
            title: "opkit".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            description: None,
        }
    }

    /// Resolves `Authorization: Bearer` tokens into identities (a [`BearerAuth`]).
    #[must_use]
    pub fn identity_resolver(self, resolver: impl IdentityResolver) -> Self {
        self.authenticator(BearerAuth::new(resolver))
    }

    /// Decides who is calling from the whole request (see [`Authenticator`]): an API key, a
    /// session cookie, anything the application uses. An [`Identity`](opkit::Identity) that
    /// the application's middleware put into the request's extensions is taken first.
    #[must_use]
    pub fn authenticator(self, authenticator: impl Authenticator) -> Self {
        self.shared_authenticator(Arc::new(authenticator))
    }

    /// [`authenticator`](Self::authenticator) from a shared one (the same as an
    /// [`McpServer`](crate::mcp_server::McpServer)'s, say).
    #[must_use]
    pub fn shared_authenticator(mut self, authenticator: Arc<dyn Authenticator>) -> Self {
        self.authenticator = Some(authenticator);
        self
    }

    /// The path the routes are reachable at from outside (the document's `servers` entry
    /// and the paths named in error hints), for a server behind a proxy that strips a
    /// prefix. Without it the path the router is nested at (`Router::nest("/api", ..)`) is
    /// used, found from each request.
    #[must_use]
    pub fn base_path(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        self.base_path = Some(path.trim_end_matches('/').to_owned());
        self
    }

    /// Serves the operations explorer at `path` (relative to where the router is mounted, e.g.
    /// `"/explorer"`): a page where a person sees every operation grouped by namespace with
    /// its description, kind and access rule, fills a form generated from its input schema
    /// (or raw JSON, checked against the schema as it is typed), calls it with a token or API
    /// key and sees the whole envelope, and watches subscriptions item by item. It reads
    /// `openapi.json`, so it shows exactly what clients see. Off unless enabled: it is a
    /// developer's tool, and an API for machines need not serve a page.
    ///
    /// ```
    /// # let registry = opkit::OperationRegistry::new();
    /// use opkit_adapters::http_server::HttpServer;
    /// let server = HttpServer::new(registry).explorer("/explorer").explorer_mcp_link("/mcp");
    /// ```
    #[must_use]
    pub fn explorer(mut self, path: impl Into<String>) -> Self {
        let mut path = path.into();
        if !path.starts_with('/') {
            path.insert(0, '/');
        }
        let mcp = self.explorer.take().and_then(|explorer| explorer.mcp);
        self.explorer = Some(state::Explorer { path, mcp });
        self
    }

    /// The MCP endpoint the explorer links (a path from the site's root, like `/mcp`, or a
    /// URL), for a server that also serves MCP.
    #[must_use]
    pub fn explorer_mcp_link(mut self, mcp: impl Into<String>) -> Self {
        let explorer = self.explorer.get_or_insert_with(|| state::Explorer {
            path: "/explorer".to_owned(),
            mcp: None,
        });
        explorer.mcp = Some(mcp.into());
        self
    }

    /// The connection limits [`serve`](Self::serve) applies: header-read timeout and
    /// connection count (see [`ConnectionLimits`]). An application that serves
    /// [`router`](Self::router) itself applies them with [`serve_router`].
    #[must_use]
    pub fn connection_limits(mut self, limits: ConnectionLimits) -> Self {
        self.connections = limits;
        self
    }

    /// The largest request body accepted, in bytes (default [`DEFAULT_BODY_LIMIT`], 1 MiB).
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// The status of an input that parses but fails the operation's input schema: `400` by
    /// default (like every other `VALIDATION_ERROR`), or `422 Unprocessable Entity`, what
    /// FastAPI and axum's `Json` extractor answer. Malformed JSON stays `400`.
    #[must_use]
    pub fn invalid_input_status(mut self, status: StatusCode) -> Self {
        self.invalid_input_status = status;
        self
    }

    /// Whether responses are gzip-compressed for clients that accept it (`Accept-Encoding:
    /// gzip`); on by default. Event streams, images and bodies under 32 bytes are sent as
    /// they are.
    #[must_use]
    pub fn compression(mut self, on: bool) -> Self {
        self.compression = on;
        self
    }

    /// The deadline of queries and mutations, and of reading a request body (default 30 s).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The deadline of subscriptions (default none: they run until they end or the client
    /// disconnects).
    #[must_use]
    pub fn subscription_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.subscription_timeout = timeout;
        self
    }

    /// The interval of SSE keep-alive comments (default 15 s).
    #[must_use]
    pub fn keep_alive(mut self, interval: Duration) -> Self {
        self.keep_alive = interval;
        self
    }

    /// The document's `info.title` and `info.version`.
    #[must_use]
    pub fn info(mut self, title: impl Into<String>, version: impl Into<String>) -> Self {
        self.title = title.into();
        self.version = version.into();
        self
    }

    /// The document's `info.description`.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    fn document_info(&self) -> openapi::DocumentInfo {
        openapi::DocumentInfo {
            title: self.title.clone(),
            version: self.version.clone(),
            description: self.description.clone(),
            authenticated: self.authenticator.is_some(),
            security: self
                .authenticator
                .as_ref()
                .and_then(|authenticator| authenticator.security_scheme()),
            invalid_input: self.invalid_input_status.as_u16(),
        }
    }

    /// The OpenAPI 3.1 document of the registry as it is now (what `/openapi.json` serves),
    /// for routes mounted at [`base_path`](Self::base_path) (the root unless set).
    pub fn openapi(&self) -> Value {
        openapi::document(
            &self.registry,
            &self.document_info(),
            self.base_path.as_deref().unwrap_or(""),
        )
    }

    /// The routes, ready to serve, or to mount in a larger axum app with `nest` (at a
    /// prefix: `Router::new().nest("/api", server.router())` serves `/api/ops/<id>` and
    /// documents `servers: [{"url": "/api"}]`) or `merge` (at the root). They carry their
    /// own state, so they mount into an app whose routes use another `State`.
    ///
    /// # Panics
    ///
    /// When an operation reads application state the registry was not given (see
    /// [`try_router`](Self::try_router), which returns that error instead).
    pub fn router(&self) -> Router {
        self.try_router()
            .unwrap_or_else(|error| panic!("HttpServer::router: {error}"))
    }

    /// [`router`](Self::router), or why the registry cannot be served: the
    /// [`RegistryError::MissingState`] naming each operation whose application state the
    /// registry lacks, or a [`RouteError`] (a REST route whose path variable names no input
    /// field, two routes on one method and path).
    pub fn try_router(&self) -> Result<Router, HttpServerError> {
        self.registry.check_states()?;
        let rest_routes = rest::collect(&self.registry)?;
        let shared = Arc::new(ServerState {
            registry: self.registry.clone(),
            authenticator: self.authenticator.clone(),
            base_path: self.base_path.clone(),
            explorer: self.explorer.clone(),
            body_limit: self.body_limit,
            request_timeout: self.request_timeout,
            subscription_timeout: self.subscription_timeout,
            keep_alive: self.keep_alive,
            routes: Default::default(),
            info: self.document_info(),
            invalid_input_status: self.invalid_input_status,
        });
        let mut router = Router::new()
            .route("/openapi.json", get(handlers::openapi))
            .route("/ops/{id}", any(handlers::operation));
        if let Some(explorer) = &self.explorer {
            router = router.route(&explorer.path, get(explorer::explorer));
        }
        let mut router = rest::add(router, &rest_routes)
            .fallback(handlers::fallback)
            .with_state(shared);
        if let Some(document) = self
            .authenticator
            .as_ref()
            .and_then(|authenticator| authenticator.protected_resource_metadata())
        {
            router = router.merge(well_known::protected_resource_router(document, true));
        }
        Ok(if self.compression {
            router.layer(tower_http::compression::CompressionLayer::new())
        } else {
            router
        })
    }

    /// Serves on `listener` until the process ends (an error, before serving, when an
    /// operation lacks its application state).
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        self.serve_with_shutdown(listener, std::future::pending())
            .await
    }

    /// Serves on `listener` until `shutdown` completes, then finishes the open requests.
    pub async fn serve_with_shutdown(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let router = self.try_router().map_err(std::io::Error::other)?;
        serve_router(listener, router, self.connections, shutdown).await
    }
}
