//! Serve a registry as an MCP server (feature `mcp-server`, built on the official Rust SDK
//! [`rmcp`]): operations become tools, resources, resource templates and prompts, over
//! **stdio** and **Streamable HTTP**; an operation can ask its user a question
//! (elicitation) and run as a task.
//!
//! ```no_run
//! # async fn demo(registry: opkit::OperationRegistry) -> std::io::Result<()> {
//! use opkit_adapters::mcp_server::McpServer;
//!
//! // Streamable HTTP at http://127.0.0.1:8081/mcp (or mount `McpServer::router()` in your
//! // axum app with `.nest("/mcp", ..)`) ...
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8081").await?;
//! tokio::spawn(McpServer::new(registry.clone()).serve_http(listener));
//! // ... and stdio (until the client closes stdin).
//! McpServer::new(registry).name("calculator").serve_stdio().await
//! # }
//! ```
//!
//! # Tools
//!
//! | tool field | from the operation |
//! |---|---|
//! | `name` | per [`McpServer::tool_naming`]: the operation id as is (`math.add`: MCP allows `[A-Za-z0-9_.-]`) or [`ToolNaming::ProviderSafe`] (`math_add`, what model providers' function calling accepts); an operation's [`EXT_TOOL_NAME`] extension (`#[operation(tool_name = "..")]`) overrides it |
//! | `description` | the spec's description (or `"<kind> <id>"`) |
//! | `inputSchema` | the input schema, with `"type": "object"` added at the root when it has no `type` (an input that cannot be an object is not exposed) |
//! | `outputSchema` | see below |
//! | `annotations` | `readOnlyHint: true` for queries and subscriptions, `false` for mutations |
//! | `_meta` | the operation's [`EXT_TOOL_META`] object (`#[operation(tool_meta = r#"{..}"#)]` or the spec extension), plus opkit's own `opkit/operationId`, `opkit/kind` (`QUERY`…) and, when restricted, `opkit/access` (which win over the same keys there) |
//!
//! The list is the registry's at the time of the request, in id order, in pages of
//! [`TOOLS_PAGE_SIZE`] tools (`nextCursor` names where the next page starts); each page's
//! definitions are built for it and not kept, so listing an imported API of thousands of
//! operations holds one page of self-contained schemas at a time. Calls
//! find their operation by the same mapping. Two operations with one tool name, or a name
//! that breaks the chosen form, are refused when the server starts ([`McpServer::check`],
//! [`McpServerError::ToolName`]); an operation registered later that collides makes
//! `tools/list` and `tools/call` answer an internal error naming the two operations.
//!
//! An imported MCP tool (a spec of the MCP import) without an output schema declares no
//! `outputSchema`: its results are its content blocks.
//!
//! ## Tool names and model providers
//!
//! The function-calling APIs of the major model providers accept only tool names matching
//! `^[a-zA-Z0-9_-]{1,64}$`, and a host that hands MCP tools to a model as they are listed
//! fails (or renames them) on a dot. When your tools go to such a host, serve them with
//! [`ToolNaming::ProviderSafe`] (`math.add` is served as `math_add`; names that would
//! collide, such as `a.b_c` and `a_b.c`, or exceed 64 characters, are refused when the
//! server starts, and `#[operation(tool_name = "..")]` settles either):
//!
//! ```no_run
//! # async fn demo(registry: opkit::OperationRegistry) -> std::io::Result<()> {
//! use opkit_adapters::mcp_server::{McpServer, ToolNaming};
//! McpServer::new(registry).tool_naming(ToolNaming::ProviderSafe).serve_stdio().await
//! # }
//! ```
//!
//! The default stays [`ToolNaming::OperationId`], the operation id as it is: MCP itself
//! allows the dot, the tool name is then the id every other edge uses (the HTTP routes, the
//! call protocol, logs and traces, opkit's MCP import of another opkit server), and changing
//! the default would rename every tool of every deployed server under its clients (hosts
//! keep per-tool permissions and allow-lists by name). The server logs (at `info`) when it
//! serves a name a model provider would refuse under the default naming.
//!
//! # Results
//!
//! A call runs [`OperationRegistry::execute`] and answers `structuredContent` plus one text
//! block holding the same JSON; the envelope's meta travels in the result's
//! `_meta["opkit/meta"]` ([`META_ENVELOPE`]). An MCP envelope
//! ([`mcp_envelope`](opkit::envelope::mcp_envelope): what an imported MCP tool returns, or
//! an operation that builds content blocks) is served as it is: its blocks (text, image,
//! audio, resource, resource_link), its `isError`, its `structuredContent` (in the output
//! form below; on an error result only when it matches the declared `outputSchema`) and its
//! `_meta`. Clients of protocol revisions before 2026-07-28 accept only
//! objects as `structuredContent`, so for them an operation whose output schema is not
//! `type: "object"` (or is Unknown) is declared with the output schema
//! `{"type":"object","properties":{"result": <output schema>},"required":["result"]}` and
//! answers `{"result": <data>}` (the tool's `_meta["opkit/wrapped"]` ([`META_WRAPPED`]) is
//! then `"result"`, so opkit's MCP import reads the data back from under it); clients of 2026-07-28 or later get the data and the
//! output schema as they are (an Unknown output declares no `outputSchema`).
//!
//! A [`CallError`](opkit::CallError) (validation, access, execution, timeout, or an application error such as
//! [`CallError::not_found`](opkit::CallError::not_found)) is a tool error: `isError: true`, the message
//! (`CODE: message`) as the only text block, **no** `structuredContent` (the official SDK
//! clients check it against the tool's `outputSchema`, error results included, and fail the
//! call on a mismatch), and the `CallError` wire JSON `{code, message, details?, kind?}` in
//! `_meta["opkit/error"]` ([`META_ERROR`]), where opkit's MCP import finds it again
//! (`opkit_adapters::mcp::call_error`, feature `mcp`). An unknown tool name is a
//! JSON-RPC error (`-32602`), as the MCP spec asks. Unknown methods get `-32601`, which is
//! what clients of the 2026-07-28 revision need to fall back to the `initialize` handshake;
//! rmcp also answers `server/discover`, so both protocol eras are served.
//!
//! # Middleware and sessions
//!
//! Each `tools/call` is served through the registry's front door,
//! [`OperationRegistry::serve`](opkit::OperationRegistry::serve), so the registry's
//! [middleware](opkit::middleware) runs around it as around every other edge's calls (a
//! refusal is a tool error, `isError: true`, with the `CallError` in `_meta["opkit/error"]`);
//! a [`Cache`](opkit::middleware::Cache) hit carries `_meta.ttlMs` and `_meta.cacheScope`.
//! The call's context carries an [`Edge`](opkit::edge::Edge) named `mcp_server` with an
//! [`McpSession`] fact (the `Mcp-Session-Id` and the client's name and version), and a
//! [`Session`](opkit::edge::Session) per MCP session (per stdio connection; none for a
//! stateless request), where an operation keeps state for the session
//! ([`OperationContext::session`](opkit::OperationContext::session)).
//!
//! # Capabilities
//!
//! `tools`, `resources` (with `subscribe`), `prompts`, `completions`, `logging`, and the
//! `io.modelcontextprotocol/tasks` extension.
//!
//! # Resources, prompts and completion
//!
//! An operation is served as a resource instead of a tool when its spec has the
//! [`EXT_MCP_RESOURCE`](opkit::OperationSpec::EXT_MCP_RESOURCE) extension
//! (`#[operation(resource = "notes://{id}")]`): a fixed URI is listed by `resources/list`,
//! a URI template (RFC 6570 `{var}` and `{+var}`, each variable an input field) by
//! `resources/templates/list`. `resources/read` runs the query whose URI matches with the
//! variables as input (read as the input schema's types) and returns its data as contents:
//! a string as `text/plain` text, other JSON as `application/json` text, a
//! [`Binary`](opkit::binary::Binary) output as a blob, an MCP envelope's blocks as they are;
//! a `NotFound` error is "resource not found". A subscription with the same URI backs
//! `resources/subscribe`: each item it yields sends `notifications/resources/updated`.
//!
//! An operation with the [`EXT_MCP_PROMPT`](opkit::OperationSpec::EXT_MCP_PROMPT) extension
//! (`#[operation(prompt)]`) is a prompt: its input fields are the prompt's arguments, and its
//! data the messages (a list of [`PromptMessage`](opkit::envelope::PromptMessage)s, or a
//! string as one user message). `completion/complete` offers the values a prompt argument's
//! or template variable's schema lists (`enum`, `const`s), filtered by what was typed.
//!
//! Resources and prompts are not also tools; every other edge serves them as operations.
//!
//! # Elicitation
//!
//! [`OperationContext::elicit`](opkit::OperationContext::elicit) asks the user a question
//! whose answer has a derived schema. A client before 2026-07-28 is asked in the call
//! (`elicitation/create`); a 2026-07-28 client gets an input-required result with a sealed
//! `requestState` and calls again with the answer, and the operation runs again from the
//! start with the answers given so far (see [`opkit::elicit`]); a client that did not declare
//! the capability gets `UNAVAILABLE` in the operation. Tools, prompts and resource reads can
//! ask. Give replicas one [`McpServer::request_state_key`].
//!
//! # Tasks
//!
//! An operation with the [`EXT_MCP_TASK`](opkit::OperationSpec::EXT_MCP_TASK) extension
//! (`#[operation(task)]`, or `task = "required"`) runs as a task for a client that
//! negotiated the tasks extension: `tools/call` answers with the task at once, `tasks/get`
//! reports its status (progress messages as the status message) and inlines its result,
//! `tasks/update` answers its questions, `tasks/cancel` reaches its cancellation. A
//! `required` operation refuses other clients with `-32021`.

//! # Progress and logs
//!
//! An operation reports progress with [`OperationContext::progress`](opkit::OperationContext::progress)
//! and logs with [`OperationContext::log`](opkit::OperationContext::log). They become
//! `notifications/progress` for the request's `progressToken` (none without a token; a
//! report that does not increase `progress` is dropped) and `notifications/message`
//! (for a client before 2026-07-28 filtered by the session's `logging/setLevel`, everything
//! until the client sets a level; a 2026-07-28 client gets them only at or above the level
//! its request carries in `_meta["io.modelcontextprotocol/logLevel"]`, and none when it
//! carries none), sent in order and before the call's result. Over Streamable HTTP progress rides the
//! request's SSE stream and log messages the session's GET stream (they name no request).
//!
//! # Subscriptions
//!
//! MCP has no streamed tool results, so a subscription becomes a tool whose call runs the
//! stream to its end and returns `{"items": [<data>, ..], "truncated": false}` (output
//! schema accordingly). When the request carries a `progressToken`, every item is also sent
//! at once as a `notifications/progress` whose `progress` counts the items and whose
//! `message` is the item's JSON (the handler's own progress reports are not sent; its log
//! records are). The stream stops after [`McpServer::max_subscription_items`]
//! items (`truncated: true`) or at the call timeout (a `TIMEOUT` tool error); a client that
//! cancels the request (`notifications/cancelled`, or closing the HTTP response) drops the
//! stream.
//!
//! # Identity and access
//!
//! Over Streamable HTTP the caller is found as by the HTTP server: an
//! [`Identity`] the application's middleware put into the request's extensions, else the
//! configured [`Authenticator`] ([`McpServer::identity_resolver`] for bearer tokens,
//! [`ApiKeyAuth`](crate::http_server::ApiKeyAuth), or any closure over the request); refused
//! credentials get HTTP `401`; none is an anonymous call — except with an OAuth authenticator
//! (one with [`protected_resource_metadata`](Authenticator::protected_resource_metadata),
//! like the `oauth` feature's `OAuthAuthenticator`), where a request without a token gets
//! `401` with the challenge that points an MCP client to the metadata, and a `tools/call` of
//! a tool whose operation needs scopes the token lacks gets `403` with
//! `error="insufficient_scope"` (the body is read to find the tool, up to rmcp's 4 MiB
//! limit). [`McpServer::serve_http`] serves the metadata document at the site's root;
//! [`McpServer::well_known_router`] gives it to an application that mounts the endpoint
//! itself. Over stdio the caller is whoever started the process:
//! the identity is [`McpServer::stdio_identity`] (anonymous by default). Each call checks
//! the operation's [`AccessRule`](opkit::AccessRule) first; a denial is a tool error with
//! `ACCESS_DENIED`. The tool list is the same for everyone.
//!
//! # Limits
//!
//! [`McpServer::call_timeout`] (default 60 s) is every call's deadline. The Streamable HTTP
//! transport keeps rmcp's defaults (configurable with [`McpServer::http_config`]): a 4 MiB
//! body limit, loopback-only `Host` names (set `allowed_hosts` to serve other names), SSE
//! keep-alives every 15 s, sessions for clients before 2026-07-28.
//!
//! # Tracing
//!
//! Each `tools/call` runs in a server span (`opkit.path = "mcp_server"`, see
//! [`opkit::trace`]) whose parent is the W3C trace context in the request's
//! `_meta.traceparent` / `_meta.tracestate`, when present and valid.

mod arguments;
mod catalog;
mod changes;
mod elicitation;
mod gate;
mod handler;
mod listing;
mod names;
mod naming;
mod prompts;
mod replies;
mod report;
mod resources;
mod results;
mod session;
mod tasks;
mod template;
mod tools;

pub use crate::mcp_meta::{META_ENVELOPE, META_ERROR, META_WRAPPED};
pub use listing::TOOLS_PAGE_SIZE;
pub use naming::{EXT_TOOL_META, EXT_TOOL_NAME, ToolNameError, ToolNaming};
pub use session::{McpHandler, McpSession};

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
    names: names::NamesCache,
    /// Seals the `requestState` of calls that ask their user a question over several round
    /// trips (2026-07-28), so a client cannot forge the answers it echoes.
    rounds: Arc<rmcp::model::RequestStateCodec>,
    /// The tasks of operations that run as MCP tasks (server-wide: a client that reconnects
    /// polls the same task).
    tasks: tasks::Tasks,
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
    /// An operation's [`EXT_TOOL_META`] extension is not a JSON object.
    #[error(
        "operation `{operation}`: the tool _meta (spec extension `{EXT_TOOL_META}`) must be a JSON object"
    )]
    ToolMeta {
        /// The operation's id.
        operation: String,
    },
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
                names: names::NamesCache::default(),
                rounds: Arc::new(elicitation::random_codec()),
                tasks: tasks::Tasks::new(),
            },
            http_config: None,
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
    /// operation's [`EXT_TOOL_NAME`] extension overrides it). Names that collide or break
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

    /// rmcp's Streamable HTTP settings (allowed hosts and origins, body limit, keep-alive,
    /// sessions); rmcp's defaults otherwise.
    #[must_use]
    pub fn http_config(mut self, config: StreamableHttpServerConfig) -> Self {
        self.http_config = Some(config);
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
    /// calls still authenticate and check access).
    pub fn streamable_http_service(
        &self,
    ) -> StreamableHttpService<McpHandler, LocalSessionManager> {
        // One handler per session: each keeps its own `logging/setLevel`.
        let inner = Arc::new(self.handler.clone());
        StreamableHttpService::new(
            move || Ok(McpHandler::new(inner.clone())),
            Arc::new(LocalSessionManager::default()),
            self.http_config.clone().unwrap_or_default(),
        )
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
        self.check()?;
        let service = Router::new().route_service("/", self.streamable_http_service());
        if self.handler.authenticator.is_none() {
            // Without an authenticator nothing is refused, and each call finds its caller
            // (an `Identity` in the extensions, else none) by itself: no middleware needed.
            return Ok(service);
        }
        let inner = Arc::new(self.handler.clone());
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
        let router = self.try_router().map_err(std::io::Error::other)?;
        crate::http_server::serve_router(
            listener,
            Router::new()
                .nest("/mcp", router)
                .merge(self.well_known_router()),
            crate::http_server::ConnectionLimits::default(),
            std::future::pending(),
        )
        .await
    }

    /// Checks that the registry can be served: its application state, its tool names and
    /// the tools' [`EXT_TOOL_META`].
    pub fn check(&self) -> Result<(), McpServerError> {
        self.handler.registry.check_states()?;
        let specs = self.handler.registry.specs();
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
        if let Some(spec) = specs.iter().find(|spec| {
            spec.extensions
                .get(EXT_TOOL_META)
                .is_some_and(|meta| !meta.is_object())
        }) {
            return Err(McpServerError::ToolMeta {
                operation: spec.id(),
            });
        }
        Ok(())
    }
}
