//! Serve a registry over HTTP (feature `http-server`, built on axum): one route per
//! operation, subscriptions as server-sent events, and a generated OpenAPI 3.1 document.
//!
//! The manual is `adapters/docs/http-server.md`, included below. Reading the code: A call
//! enters at `handlers.rs` (`operation`, then `serve_call`, which REST routes in `rest.rs`
//! share); `state.rs` is what every handler reads, `request_body.rs` how a body is read,
//! `openapi.rs` the document.
#![doc = "\n"]
#![doc = include_str!("../../docs/http-server.md")]

mod byte_bodies;
mod coalesce;
mod compress;
mod explorer;
mod gzip;
mod handlers;
mod head_alarm;
mod head_timer;
mod header_list;
pub(crate) mod identity;
mod openapi;
mod query;
pub(crate) mod refs;
mod request_body;
mod rest;
mod route;
mod routed;
mod routes;
mod serve;
mod served_document;
mod shared_components;
mod sse;
mod state;
pub(crate) mod well_known;

pub use identity::{
    ApiKeyAuth, Authenticator, BearerAuth, IdentityResolver, StaticTokens, async_resolver,
};

pub use compress::CompressionLevel;
pub use handlers::HttpRequest;
pub use openapi::OpenApiVersion;
pub use rest::RouteError;
pub use route::{HTTP_EDGE, HttpRoute, HttpSpec};

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
use tower_layer::Layer;

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
    invalid_parameter_status: StatusCode,
    compression: bool,
    /// How it compresses, when `compression` is on.
    compress: compress::Compression,
    title: String,
    version: String,
    description: Option<String>,
    openapi_version: OpenApiVersion,
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
            invalid_parameter_status: StatusCode::BAD_REQUEST,
            compression: true,
            compress: compress::Compression {
                min_size: compress::MinSize::DEFAULT,
                level: CompressionLevel::Default,
            },
            title: "opkit".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            description: None,
            openapi_version: OpenApiVersion::default(),
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

    /// The status of a request body that parses but fails the operation's input schema:
    /// `400` by default (like every other `VALIDATION_ERROR`), or `422 Unprocessable
    /// Entity`, what FastAPI and axum's `Json` extractor answer. Malformed JSON stays `400`;
    /// path variables and query values have their own status
    /// ([`invalid_parameter_status`](Self::invalid_parameter_status)).
    #[must_use]
    pub fn invalid_input_status(mut self, status: StatusCode) -> Self {
        self.invalid_input_status = status;
        self
    }

    /// The status of path variables and query values that fail the operation's input schema
    /// (every violation in an input field the URL gave): `400` by default, what axum's `Path`
    /// and `Query` extractors answer, whatever
    /// [`invalid_input_status`](Self::invalid_input_status) says for bodies. A failure in
    /// both the URL and the body takes the body's status.
    #[must_use]
    pub fn invalid_parameter_status(mut self, status: StatusCode) -> Self {
        self.invalid_parameter_status = status;
        self
    }

    /// Whether responses are gzip-compressed for clients that accept it (`Accept-Encoding:
    /// gzip`); on by default. Event streams, images and bodies under
    /// [`compression_min_size`](Self::compression_min_size) are sent as they are.
    #[must_use]
    pub fn compression(mut self, on: bool) -> Self {
        self.compression = on;
        self
    }

    /// The smallest response body compressed, in bytes (default 1,400); a body whose size is
    /// not known ahead (a stream) is compressed whatever it comes to.
    ///
    /// gzip costs every response it compresses a fixed few microseconds and a deflate state
    /// of ~300 KiB, whatever the body's size, and a body that fits one TCP segment (~1,400
    /// bytes on an Ethernet path) is sent in one segment either way: below that it saves no
    /// packet, and an API's typical answer would cost several times its serving. Clients
    /// send `Accept-Encoding: gzip` by default (browsers, curl's `--compressed`, Python's
    /// `requests`, Node's `fetch`), so this is the common path. tower-http's
    /// `CompressionLayer`, which this wraps, compresses from 32 bytes.
    ///
    /// ```
    /// use opkit::OperationRegistry;
    /// use opkit_adapters::http_server::HttpServer;
    ///
    /// // Compress every answer of 256 bytes or more.
    /// let server = HttpServer::new(OperationRegistry::new()).compression_min_size(256);
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn compression_min_size(mut self, bytes: u16) -> Self {
        self.compress.min_size = compress::MinSize(bytes);
        self
    }

    /// How hard gzip works on the responses it compresses (default
    /// [`CompressionLevel::Default`], gzip's level 6; see [`CompressionLevel`] for what the
    /// levels cost).
    ///
    /// ```
    /// use opkit::OperationRegistry;
    /// use opkit_adapters::http_server::{CompressionLevel, HttpServer};
    ///
    /// let server =
    ///     HttpServer::new(OperationRegistry::new()).compression_level(CompressionLevel::Fastest);
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn compression_level(mut self, level: CompressionLevel) -> Self {
        self.compress.level = level;
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

    /// The interval of SSE keep-alive comments (default 15 s): a subscription's event stream
    /// sends one when no event went out for a whole interval, so an idle stream gets one
    /// between one and two intervals after its last event.
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

    /// The OpenAPI version of the document (3.1 unless set): with
    /// [`OpenApiVersion::V3_2`] a subscription's event stream is described by its
    /// `itemSchema`, the schema of one event, as OpenAPI 3.2 describes sequential media.
    #[must_use]
    pub fn openapi_version(mut self, version: OpenApiVersion) -> Self {
        self.openapi_version = version;
        self
    }

    fn document_info(&self) -> openapi::DocumentInfo {
        openapi::DocumentInfo {
            openapi: self.openapi_version,
            title: self.title.clone(),
            version: self.version.clone(),
            description: self.description.clone(),
            authenticated: self.authenticator.is_some(),
            security: self
                .authenticator
                .as_ref()
                .and_then(|authenticator| authenticator.security_scheme()),
            invalid_input: self.invalid_input_status.as_u16(),
            invalid_parameter: self.invalid_parameter_status.as_u16(),
        }
    }

    /// The OpenAPI document of the registry as it is now (what `/openapi.json` serves),
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
        let router = self.routes()?;
        Ok(if self.compression {
            router.layer(compress::CompressWhenAsked(self.compress))
        } else {
            router
        })
    }

    /// The routes without the compression layer, which [`serve`](Self::serve) puts around
    /// the whole router once (`Router::layer` wraps every route in it, two boxed services
    /// and two boxed futures more per request).
    fn routes(&self) -> Result<Router, HttpServerError> {
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
            document: Default::default(),
            compression: self.compression.then_some(self.compress),
            info: self.document_info(),
            invalid_input_status: self.invalid_input_status,
            invalid_parameter_status: self.invalid_parameter_status,
        });
        let mut router = Router::new()
            .route("/openapi.json", get(handlers::openapi))
            .route("/ops/{id}", any(handlers::operation));
        if let Some(explorer) = &self.explorer {
            router = router.route(&explorer.path, get(explorer::explorer));
        }
        // The operations registered by now each get their own route (a static path, matched
        // before `{id}`); one registered later is served by `/ops/{id}`, the same way.
        for spec in self.registry.specs() {
            let id = spec.id();
            let path = format!("/ops/{id}");
            if self
                .explorer
                .as_ref()
                .is_none_or(|explorer| explorer.path != path)
            {
                router = router.route_service(
                    &path,
                    routed::Routed::new(handlers::OperationAt {
                        shared: shared.clone(),
                        id: id.as_str().into(),
                    }),
                );
            }
        }
        let mut router = rest::add(router, &shared, &rest_routes)
            .fallback(handlers::fallback)
            .with_state(shared);
        if let Some(document) = self
            .authenticator
            .as_ref()
            .and_then(|authenticator| authenticator.protected_resource_metadata())
        {
            router = router.merge(well_known::protected_resource_router(document, true));
        }
        Ok(router)
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
        let router = self.routes().map_err(std::io::Error::other)?;
        if self.compression {
            let service = compress::CompressWhenAsked(self.compress).layer(router);
            serve::serve_service(listener, service, self.connections, shutdown).await
        } else {
            serve_router(listener, router, self.connections, shutdown).await
        }
    }
}
