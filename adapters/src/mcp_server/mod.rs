//! Serve a registry as an MCP server (feature `mcp-server`, built on the official Rust SDK
//! [`rmcp`]): operations become tools, resources, resource templates and prompts, over
//! **stdio** and **Streamable HTTP**; an operation can ask its user a question
//! (elicitation) and run as a task.
//!
//! The manual is `adapters/docs/mcp-server.md`, included below. Reading the code: `McpServer`
//! below builds the catalog (`catalog.rs`, `names.rs`); a session's requests are answered in
//! `handler.rs`, tool calls in `results.rs`, resources, prompts and tasks in their own files.
#![doc = "\n"]
#![doc = include_str!("../../docs/mcp-server.md")]

mod answered;
mod arguments;
mod catalog;
mod changes;
mod completion;
mod elicitation;
mod gate;
mod handler;
mod listing;
mod names;
mod naming;
mod options;
mod prompts;
mod replies;
mod report;
mod resources;
mod results;
mod session;
mod sessions;
mod skills;
mod streams;
mod tasks;
mod template;
mod tools;

pub use crate::mcp_meta::{META_ENVELOPE, META_ERROR, META_WRAPPED};
pub use listing::{LIST_PAGE_SIZE, TOOLS_PAGE_SIZE};
pub use naming::{ToolNameError, ToolNaming};
pub use options::{MCP_EDGE, McpEdgeOptions, McpSpec, TaskSupport};
#[cfg(feature = "mcp-skills")]
pub use rmcp::handler::server::skill_catalog::{SkillCatalog, SkillCatalogError};
pub use session::{McpHandler, McpSession};
pub use sessions::{
    DEFAULT_MAX_ANONYMOUS_SESSIONS_PER_ADDRESS, DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_IDENTITY, DEFAULT_SESSION_IDLE_TIMEOUT, SessionLimits,
};
#[cfg(feature = "mcp-skills")]
pub use skills::{MemorySkill, Skills, SkillsError};

use crate::http_server::{Authenticator, BearerAuth, IdentityResolver};
use axum::Router;
use axum::extract::Request;
use axum::middleware::Next;
use opkit::{Identity, OperationRegistry, RegistryError};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use std::time::Duration;

/// The identity of a Streamable HTTP request, resolved by [`McpServer::router`]'s middleware.
#[derive(Debug, Clone)]
pub(crate) struct RequestIdentity(pub(crate) Option<Identity>);

/// Serves an [`OperationRegistry`] as an MCP server; see the [module docs](self).
#[derive(Clone)]
pub struct McpServer {
    handler: McpServerState,
    http_config: Option<StreamableHttpServerConfig>,
    session_limits: SessionLimits,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.handler.name)
            .field("version", &self.handler.version)
            .field("registry", &self.handler.registry)
            .finish_non_exhaustive()
    }
}

#[derive(Clone)]
pub(crate) struct McpServerState {
    registry: OperationRegistry,
    name: String,
    version: String,
    instructions: Option<String>,
    authenticator: Option<Arc<dyn Authenticator>>,
    /// The authenticator makes this an OAuth resource server (it has Protected Resource
    /// Metadata): decided once, when the authenticator is given.
    oauth: bool,
    stdio_identity: Option<Identity>,
    call_timeout: Option<Duration>,
    max_items: usize,
    naming: ToolNaming,
    /// A local envelope's meta is written in its result's `_meta["opkit/meta"]`
    /// ([`McpServer::local_meta`]).
    local_meta: bool,
    names: names::NamesCache,
    /// Seals the `requestState` of calls that ask their user a question over several round
    /// trips (2026-07-28), so a client cannot forge the answers it echoes.
    rounds: Arc<rmcp::model::RequestStateCodec>,
    /// The tasks of operations that run as MCP tasks (server-wide: a client that reconnects
    /// polls the same task).
    tasks: tasks::Tasks,
    /// How long clients may keep the lists (`ttlMs`, `cacheScope` of 2026-07-28).
    list_cache: Option<opkit::middleware::CacheHint>,
    /// The request streams of [`router`](McpServer::router)'s sessions, which a call may
    /// close for its client to resume (`None` elsewhere).
    streams: Option<Arc<streams::StreamBook>>,
    /// The skills served beside the registry's operations (SEP-2640).
    #[cfg(feature = "mcp-skills")]
    skills: Option<Arc<Skills>>,
}

/// Why an [`McpServer`] cannot serve its registry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServerError {
    /// An operation reads application state the registry was not given.
    #[error(transparent)]
    State(#[from] RegistryError),
    /// Two operations would have one tool name, or a tool name is not valid.
    #[error(transparent)]
    ToolName(#[from] ToolNameError),
    /// An operation's `mcp(..)` options do not read as [`McpEdgeOptions`] (an unknown
    /// option, a `tool_meta` that is not an object, a `task` that is not one of its values).
    #[error(transparent)]
    Options(#[from] opkit::edge::EdgeOptionsError),
}

impl McpServer {
    /// A server for `registry`, named `opkit` with this crate's version.
    pub fn new(registry: OperationRegistry) -> Self {
        Self {
            handler: McpServerState {
                registry,
                name: "opkit".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                instructions: None,
                authenticator: None,
                oauth: false,
                stdio_identity: None,
                call_timeout: Some(Duration::from_secs(60)),
                max_items: 1000,
                naming: ToolNaming::OperationId,
                local_meta: false,
                names: names::NamesCache::default(),
                rounds: Arc::new(elicitation::random_codec()),
                tasks: tasks::Tasks::new(),
                list_cache: None,
                streams: None,
                #[cfg(feature = "mcp-skills")]
                skills: None,
            },
            http_config: None,
            session_limits: SessionLimits::default(),
        }
    }

    /// The `serverInfo.name` (default `opkit`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.handler.name = name.into();
        self
    }

    /// The `serverInfo.version` (default: this crate's version).
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.handler.version = version.into();
        self
    }

    /// Instructions for the client's model, sent with the server info.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.handler.instructions = Some(instructions.into());
        self
    }

    /// Serves `skills` (SEP-2640, feature `mcp-skills`): a [`Skills`] set (directories and
    /// skills in memory), or one directory's [`SkillCatalog`] (an `Arc` of it to keep a clone
    /// and [`reload`](SkillCatalog::reload) it while served). The server declares the
    /// `io.modelcontextprotocol/skills` extension with `directoryRead`, answers `skills/list`,
    /// `skills/get` and `resources/directory/read` from the set, lists each skill's `SKILL.md`
    /// among its resources and reads every skill file as a resource
    /// (`skill://<path>/<file>`), beside the registry's operations; a
    /// [dynamic](MemorySkill::dynamic) skill's other files are read from the operations'
    /// resources.
    ///
    /// ```no_run
    /// # fn demo(registry: opkit::OperationRegistry) -> Result<(), Box<dyn std::error::Error>> {
    /// use opkit_adapters::mcp_server::{McpServer, SkillCatalog};
    /// let server = McpServer::new(registry).skills(SkillCatalog::from_dir("./skills")?);
    /// # let _ = server;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "mcp-skills")]
    #[must_use]
    pub fn skills(mut self, skills: impl Into<Skills>) -> Self {
        self.handler.skills = Some(Arc::new(skills.into()));
        self
    }

    /// Resolves `Authorization: Bearer` tokens of Streamable HTTP requests (a
    /// [`BearerAuth`]).
    #[must_use]
    pub fn identity_resolver(self, resolver: impl IdentityResolver) -> Self {
        self.authenticator(BearerAuth::new(resolver))
    }

    /// Sets the bearer-token resolver from a shared one (to use the same as an
    /// [`HttpServer`](crate::http_server::HttpServer)).
    #[must_use]
    pub fn shared_identity_resolver(self, resolver: Arc<dyn IdentityResolver>) -> Self {
        self.authenticator(BearerAuth::shared(resolver))
    }

    /// Decides who is calling from the whole Streamable HTTP request (an API key, a session
    /// cookie, ...; see [`Authenticator`]), as the HTTP server does. An
    /// [`Identity`] the application's middleware put into the request's extensions is taken
    /// first.
    #[must_use]
    pub fn authenticator(self, authenticator: impl Authenticator) -> Self {
        self.shared_authenticator(Arc::new(authenticator))
    }

    /// [`authenticator`](Self::authenticator) from a shared one.
    #[must_use]
    pub fn shared_authenticator(mut self, authenticator: Arc<dyn Authenticator>) -> Self {
        self.handler.oauth = authenticator.protected_resource_metadata().is_some();
        self.handler.authenticator = Some(authenticator);
        self
    }

    /// The identity of calls over stdio (default: anonymous).
    #[must_use]
    pub fn stdio_identity(mut self, identity: Option<Identity>) -> Self {
        self.handler.stdio_identity = identity;
        self
    }

    /// The deadline of every call (default 60 s; `None` for no deadline).
    #[must_use]
    pub fn call_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.handler.call_timeout = timeout;
        self
    }

    /// How many items a subscription tool collects before it stops the stream (default 1000).
    #[must_use]
    pub fn max_subscription_items(mut self, items: usize) -> Self {
        self.handler.max_items = items.max(1);
        self
    }

    /// How operation ids become tool names (default [`ToolNaming::OperationId`]; an
    /// operation's own `mcp(tool_name = "..")` overrides it). Names that collide or break
    /// the chosen form are refused when the server starts ([`McpServerError::ToolName`]).
    #[must_use]
    pub fn tool_naming(mut self, naming: ToolNaming) -> Self {
        self.handler.naming = naming;
        self
    }

    /// The key that seals the `requestState` of a call asking its user questions over
    /// several round trips (MCP 2026-07-28; see [`opkit::elicit`]). By default a random key
    /// made when the server is built: give every replica behind one load balancer the same
    /// key (at least 32 bytes), or a round answered at another replica asks again.
    #[must_use]
    pub fn request_state_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.handler.rounds = Arc::new(rmcp::model::RequestStateCodec::new_unchecked(key));
        self
    }

    /// How long a 2026-07-28 client may treat the lists (`tools/list`, `resources/list`,
    /// `resources/templates/list`, `prompts/list`) as fresh, and who may reuse them: their
    /// `ttlMs` and `cacheScope` (default: none sent, rmcp's defaults apply). A list changing
    /// is announced (`list_changed`) whatever the hint says. A resource read's hint comes
    /// from its operation's [`Cache`](opkit::middleware::Cache) middleware instead.
    ///
    /// ```
    /// use opkit::OperationRegistry;
    /// use opkit::middleware::{CacheHint, CacheScope};
    /// use opkit_adapters::mcp_server::McpServer;
    /// use std::time::Duration;
    /// let server = McpServer::new(OperationRegistry::new()).list_cache(CacheHint {
    ///     ttl: Duration::from_secs(300),
    ///     scope: CacheScope::Public,
    /// });
    /// ```
    #[must_use]
    pub fn list_cache(mut self, hint: opkit::middleware::CacheHint) -> Self {
        self.handler.list_cache = Some(hint);
        self
    }

    /// Whether the result of a local operation carries its envelope's meta
    /// (`{"source":"local","operationId":..,"timestamp":..}`) in `_meta["opkit/meta"]`
    /// ([`META_ENVELOPE`]); default `false`.
    ///
    /// That meta says only that the operation ran in an opkit process, which one it was and
    /// when, which an MCP client knows from the tool it called. Writing it builds two
    /// `serde_json` maps and six strings per call (a fifth of an in-process `tools/call`'s
    /// time), so it is left out unless asked for. The meta of an imported HTTP API's
    /// envelope (its status and headers) is always written, and an MCP envelope's own
    /// `_meta` is always served.
    ///
    /// ```
    /// use opkit::OperationRegistry;
    /// use opkit_adapters::mcp_server::McpServer;
    /// let server = McpServer::new(OperationRegistry::new()).local_meta(true);
    /// ```
    #[must_use]
    pub fn local_meta(mut self, write: bool) -> Self {
        self.handler.local_meta = write;
        self
    }

    /// rmcp's Streamable HTTP settings (allowed hosts and origins, body limit, keep-alive,
    /// sessions). Without them, rmcp's defaults but one: a stateless (2026-07-28) request
    /// whose first message back is its answer is answered as `application/json`
    /// (`json_response`), not as an event stream of one event. Its connection is then free for
    /// the client's next request as soon as the body is read (an event stream ends only after
    /// the handler's task has), and no keep-alive timer is set for it. A call that reports
    /// progress or logs first is still answered with an event stream.
    #[must_use]
    pub fn http_config(mut self, config: StreamableHttpServerConfig) -> Self {
        self.http_config = Some(config);
        self
    }

    /// The bounds on Streamable HTTP sessions of [`router`](Self::router) and
    /// [`serve_http`](Self::serve_http): how many in all, per identity and per anonymous
    /// client address, and how long an idle one lives ([`SessionLimits`]; see
    /// `docs/limits.md`). Past a bound an `initialize` is refused with `503` and a JSON-RPC
    /// error naming it; no existing session is dropped for it.
    #[must_use]
    pub fn session_limits(mut self, limits: SessionLimits) -> Self {
        self.session_limits = limits;
        self
    }

    /// The rmcp handler.
    pub fn handler(&self) -> McpHandler {
        McpHandler::new(Arc::new(self.handler.clone()))
    }

    /// Serves over any byte stream pair (newline-delimited JSON-RPC) until the client closes
    /// it (an error, before serving, when [`check`](Self::check) fails).
    pub async fn serve_io<R, W>(self, read: R, write: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        self.check().map_err(std::io::Error::other)?;
        let running = self
            .handler()
            .serve((read, write))
            .await
            .map_err(std::io::Error::other)?;
        running.waiting().await.map_err(std::io::Error::other)?;
        Ok(())
    }

    /// Serves over this process's stdin and stdout until stdin closes. Nothing else may
    /// write to stdout meanwhile (log to stderr).
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        let (stdin, stdout) = rmcp::transport::stdio();
        self.serve_io(stdin, stdout).await
    }

    /// The Streamable HTTP endpoint as a tower service (mount it where you like; it does
    /// not turn refused credentials into 401s by itself — [`McpServer::router`] does — but
    /// calls still authenticate and check access). Its sessions are neither bound to their
    /// callers nor bounded beyond rmcp's keep-alive: serve [`router`](Self::router), which
    /// holds them to [`session_limits`](Self::session_limits), where clients you do not
    /// control connect.
    pub fn streamable_http_service(
        &self,
    ) -> StreamableHttpService<McpHandler, LocalSessionManager> {
        // One handler per session: each keeps its own `logging/setLevel`.
        let inner = Arc::new(self.handler.clone());
        StreamableHttpService::new(
            move || Ok(McpHandler::new(inner.clone())),
            Arc::new(LocalSessionManager::default()),
            self.config(),
        )
    }

    /// The Streamable HTTP settings in force (see [`http_config`](Self::http_config)).
    fn config(&self) -> StreamableHttpServerConfig {
        self.http_config
            .clone()
            .unwrap_or_else(|| StreamableHttpServerConfig::default().with_json_response(true))
    }

    /// The Streamable HTTP endpoint, root-relative like
    /// [`HttpServer::router`](crate::http_server::HttpServer::router): mount it with
    /// `Router::nest("/mcp", server.router())` to serve at `/mcp` beside the HTTP routes.
    /// Requests are authenticated first (an `Identity` in the extensions, else the
    /// [`Authenticator`]); refused credentials get `401`.
    ///
    /// # Panics
    ///
    /// When an operation reads application state the registry was not given, or tool names
    /// collide ([`try_router`](Self::try_router) returns that error instead).
    pub fn router(&self) -> Router {
        self.try_router()
            .unwrap_or_else(|error| panic!("McpServer::router: {error}"))
    }

    /// [`router`](Self::router), or why the registry cannot be served: the
    /// [`RegistryError::MissingState`] naming each operation whose application state the
    /// registry lacks, or a [`ToolNameError`].
    pub fn try_router(&self) -> Result<Router, McpServerError> {
        self.try_router_at("/")
    }

    /// [`try_router`](Self::try_router) with the endpoint at `path` rather than `/`, for an
    /// application to [`merge`](Router::merge) into its own router: what
    /// [`serve_http`](Self::serve_http) does with `/mcp`. Nesting the router of
    /// [`try_router`](Self::try_router) instead costs every request a prefix strip and a
    /// second route lookup.
    ///
    /// ```
    /// # use opkit::prelude::*;
    /// use opkit_adapters::mcp_server::McpServer;
    /// let app = axum::Router::new()
    ///     .merge(McpServer::new(OperationRegistry::new()).try_router_at("/mcp").unwrap());
    /// # let _ = app;
    /// ```
    pub fn try_router_at(&self, path: &str) -> Result<Router, McpServerError> {
        self.check()?;
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(self.session_limits.idle());
        let manager = Arc::new(manager);
        // Request streams are booked, so a call can close its own for the client to resume.
        let book = Arc::new(streams::StreamBook::new(manager.clone()));
        let mut state = self.handler.clone();
        state.streams = Some(book.clone());
        let inner = Arc::new(state);
        let service = StreamableHttpService::new(
            {
                let inner = inner.clone();
                move || Ok(McpHandler::new(inner.clone()))
            },
            Arc::new(streams::Resumable {
                inner: manager.clone(),
                book,
            }),
            self.config(),
        );
        // Sessions are held to their owners and bounds (after the gate has found the caller).
        let sessions = sessions::Sessions::new(self.session_limits, manager);
        let service = Router::new().route_service(
            path,
            sessions::Guarded {
                sessions,
                inner: service,
            },
        );
        if self.handler.authenticator.is_none() {
            // Without an authenticator nothing is refused, and each call finds its caller
            // (an `Identity` in the extensions, else none) by itself.
            return Ok(service);
        }
        Ok(service.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let inner = inner.clone();
                async move { gate::admit(&inner, request, next).await }
            },
        )))
    }

    /// The Protected Resource Metadata (RFC 9728) of an OAuth authenticator (see
    /// [`Authenticator::protected_resource_metadata`]) at
    /// `/.well-known/oauth-protected-resource` and at that path followed by the resource's
    /// path: routes to merge at the **root** of the site that serves the MCP endpoint (which
    /// is itself nested, at `/mcp` say). [`serve_http`](Self::serve_http) does this by itself.
    /// Empty without such an authenticator.
    pub fn well_known_router(&self) -> Router {
        self.handler
            .authenticator
            .as_ref()
            .and_then(|authenticator| authenticator.protected_resource_metadata())
            .map_or_else(Router::new, |document| {
                crate::http_server::well_known::protected_resource_router(document, true)
            })
    }

    /// Serves Streamable HTTP at `/mcp` on `listener` until the process ends (an error,
    /// before serving, when an operation lacks its application state or tool names
    /// collide).
    pub async fn serve_http(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let router = self.try_router_at("/mcp").map_err(std::io::Error::other)?;
        crate::http_server::serve_router(
            listener,
            router.merge(self.well_known_router()),
            crate::http_server::ConnectionLimits::default(),
            std::future::pending(),
        )
        .await
    }

    /// Checks that the registry can be served: its application state, every operation's
    /// `mcp(..)` options, and its tool names.
    pub fn check(&self) -> Result<(), McpServerError> {
        self.handler.registry.check_states()?;
        let specs = self.handler.registry.specs();
        for spec in &specs {
            spec.mcp_options()?;
        }
        names::ToolNames::build(&specs, self.handler.naming)?;
        if self.handler.naming == ToolNaming::OperationId
            && let Some(spec) = specs
                .iter()
                .find(|spec| naming::tool_name_of(spec, ToolNaming::OperationId).contains('.'))
        {
            tracing::info!(
                operation = %spec.id(),
                "MCP tool names contain `.`, which model providers' function calling rejects; serve them with ToolNaming::ProviderSafe if they go to such a host"
            );
        }
        Ok(())
    }
}
