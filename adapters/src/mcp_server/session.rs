//! [`McpHandler`]: one MCP session's handler state — the server it belongs to, the
//! session's log level, state slot and resource subscriptions — and what every request
//! kind needs of it: the caller's identity, the call's context, its deadline and how the
//! caller is asked questions. The rmcp [`ServerHandler`](rmcp::ServerHandler) methods are
//! in `handler.rs`; each feature's (`resources.rs`, `prompts.rs`, `tasks.rs`, `changes.rs`)
//! are `impl McpHandler` blocks of their own that use these.

use super::elicitation::{PeerElicitor, RoundElicitor, Rounds};
use super::names::{Served, ToolNames};
use super::report::LevelCell;
use super::{McpServerState, RequestIdentity};
use crate::http_server::{HttpRequest, authenticate};
use opkit::edge::{Edge, Session};
use opkit::trace::TraceContext;
use opkit::{CallError, Identity, OperationContext};
use parking_lot::Mutex;
use rmcp::ErrorData as McpError;
use rmcp::model::{Implementation, ProtocolVersion};
use rmcp::service::{RequestContext, RoleServer};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

/// The [`rmcp::ServerHandler`] of an [`McpServer`](super::McpServer): tools from the
/// registry, calls into it.
///
/// Cloning is cheap; clones share the session's log level. Use it to serve over a transport
/// of your own (`handler.serve(transport)` with [`rmcp::ServiceExt`]).
#[derive(Clone)]
pub struct McpHandler {
    pub(super) inner: Arc<McpServerState>,
    pub(super) log_level: LevelCell,
    /// The session's state slot ([`OperationContext::session`]), made at its first call.
    session: Arc<OnceLock<Arc<Session>>>,
    /// The context every call of a stdio connection from a client before 2026-07-28 starts
    /// from (its edge, nothing else), made at its first call (see
    /// [`McpHandler::context_on`]).
    stdio_base: Arc<OnceLock<OperationContext>>,
    /// The session's resource subscriptions (stopped when the last clone is dropped).
    pub(super) watches: Arc<Watches>,
    /// Whether the session's client is on 2026-07-28 or later, as its `initialize` said: kept
    /// when the client says `initialized`, so that its calls do not read the peer's info (a
    /// lock every call of the session shares, and a reference count) each time.
    era: Arc<OnceLock<bool>>,
}

impl std::fmt::Debug for McpHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHandler")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

/// The request `_meta` key under which a 2026-07-28 client names its protocol revision
/// (the one [`RequestContext::protocol_version`] reads).
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Whether the revision a request names in its `_meta` is 2026-07-28 or later; `None` when
/// it names none. Read in place: [`RequestContext::protocol_version`] decodes the string
/// into a new one on every call.
fn request_era(context: &RequestContext<RoleServer>) -> Option<bool> {
    match context.meta.get(META_PROTOCOL_VERSION) {
        Some(serde_json::Value::String(version)) => Some(modern_version(version)),
        _ => None,
    }
}

/// Whether the revision of the peer's `initialize` is 2026-07-28 or later; `None` before
/// one (a read lock on the peer's info, and a reference count).
fn peer_era(peer: &rmcp::Peer<RoleServer>) -> Option<bool> {
    peer.peer_info()
        .map(|info| modern_version(info.protocol_version.as_str()))
}

/// `true` for protocol revision 2026-07-28 or later.
fn modern_version(version: &str) -> bool {
    version >= ProtocolVersion::V_2026_07_28.as_str()
}

/// `true` for a call whose edge is its stdio connection's, one for every call: a client
/// before 2026-07-28 not over Streamable HTTP, whose edge has no session id, no HTTP request,
/// the client its `initialize` named (which precedes every call) and the connection's
/// session.
fn shares_stdio_edge(context: &RequestContext<RoleServer>, modern: bool) -> bool {
    !modern && context.extensions.get::<http::request::Parts>().is_none()
}

/// The JSON-RPC error of tool names that cannot be served (the registry changed after the
/// server started).
fn names_error(error: &super::ToolNameError) -> McpError {
    McpError::internal_error(error.to_string(), None)
}

impl McpHandler {
    pub(super) fn new(inner: Arc<McpServerState>) -> Self {
        Self {
            inner,
            log_level: LevelCell::default(),
            session: Arc::default(),
            stdio_base: Arc::default(),
            watches: Arc::default(),
            era: Arc::default(),
        }
    }

    /// `true` for a request from a client on protocol revision 2026-07-28 or later: the
    /// revision in its `_meta`, else its session's (kept at `initialized`, see
    /// [`keep_era`](Self::keep_era)), else the peer's `initialize`, else not.
    pub(super) fn is_modern(&self, context: &RequestContext<RoleServer>) -> bool {
        request_era(context)
            .or_else(|| self.era.get().copied())
            .or_else(|| peer_era(&context.peer))
            .unwrap_or(false)
    }

    /// Keeps the session's era from its `initialize` (the peer's info, final once the client
    /// says `initialized`).
    pub(super) fn keep_era(&self, peer: &rmcp::Peer<RoleServer>) {
        if let Some(modern) = peer_era(peer) {
            let _ = self.era.set(modern);
        }
    }

    /// The tools, resources and prompts of the registry as it is now.
    pub(super) fn catalog(&self) -> Result<Arc<ToolNames>, McpError> {
        self.inner
            .names
            .get(&self.inner.registry, self.inner.naming)
            .map_err(|error| names_error(&error))
    }

    /// The caller: the HTTP request's identity (found by
    /// [`McpServer::router`](super::McpServer::router)'s middleware, or authenticated here
    /// when the service is mounted on its own), or the stdio identity.
    pub(super) async fn identity(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<Identity>, CallError> {
        match context.extensions.get::<http::request::Parts>() {
            Some(parts) => {
                if let Some(RequestIdentity(identity)) = parts.extensions.get::<RequestIdentity>() {
                    return Ok(identity.clone());
                }
                authenticate(self.inner.authenticator.as_deref(), parts).await
            }
            None => Ok(self.inner.stdio_identity.clone()),
        }
    }

    /// [`identity`](Self::identity), its failure as a JSON-RPC error.
    pub(super) async fn caller(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<Identity>, McpError> {
        self.identity(context)
            .await
            .map_err(|error| super::replies::rpc_error(&error))
    }

    /// The operation a tool call names, or the JSON-RPC error for an unknown tool.
    pub(super) fn resolve(&self, tool: &str) -> Result<Arc<Served>, McpError> {
        let unknown = || McpError::invalid_params(format!("Unknown tool: {tool}"), None);
        self.inner
            .names
            .read(&self.inner.registry, self.inner.naming, |names| {
                names.served(tool).cloned()
            })
            .map_err(|error| names_error(&error))?
            .filter(|served| served.takes_arguments)
            .ok_or_else(unknown)
    }

    /// The context of a tool call: the caller's identity, the request's cancellation, trace
    /// and deadline, and the [`McpSession`] edge with the session's state slot.
    pub(super) fn call_context(
        &self,
        identity: Option<Identity>,
        context: &RequestContext<RoleServer>,
    ) -> OperationContext {
        self.call_context_as(identity, context, self.is_modern(context))
    }

    /// [`call_context`](Self::call_context) for a request whose era (`modern`:
    /// 2026-07-28 or later, see [`is_modern`](Self::is_modern)) the caller already read.
    pub(super) fn call_context_as(
        &self,
        identity: Option<Identity>,
        context: &RequestContext<RoleServer>,
        modern: bool,
    ) -> OperationContext {
        let edge = (!shares_stdio_edge(context, modern)).then(|| {
            let parts = context.extensions.get::<http::request::Parts>();
            self.edge(context, modern, parts.map(HttpRequest::of))
        });
        self.context_on(identity, context, edge)
            .with_cancellation(context.ct.clone())
    }

    /// The context of a tool call whose request `context` it owns, without the request's
    /// cancellation (the caller moves its token in: a clone of a token costs a lock): as
    /// [`call_context_as`](Self::call_context_as), but the HTTP request moves
    /// into the edge (it is not copied), and a `lean` call (its handler reads nothing of its
    /// context and no middleware covers it, so nothing can read the edge but its name, which
    /// names the call's span) gets the bare [`Edge::MCP`]: no copy of the request's headers,
    /// no session fact, no session state, each made and dropped for every call otherwise.
    pub(super) fn tool_context(
        &self,
        identity: Option<Identity>,
        context: &mut RequestContext<RoleServer>,
        modern: bool,
        lean: bool,
    ) -> OperationContext {
        let edge = if shares_stdio_edge(context, modern) {
            None
        } else if lean {
            Some(Edge::new(Edge::MCP))
        } else {
            let parts = context.extensions.remove::<http::request::Parts>();
            Some(self.edge(context, modern, parts.map(HttpRequest::from_parts)))
        };
        self.context_on(identity, context, edge)
    }

    /// A call's context on `edge`, with the caller's identity and the request's trace;
    /// `None` for a call on the stdio connection's shared edge (see [`shares_stdio_edge`]),
    /// which starts from a clone of one context holding it (reference counts, not a new
    /// allocation for the edge) with a fresh request id.
    fn context_on(
        &self,
        identity: Option<Identity>,
        context: &RequestContext<RoleServer>,
        edge: Option<Edge>,
    ) -> OperationContext {
        let trace = TraceContext::from_parts(
            context.meta.get_traceparent(),
            context.meta.get_tracestate(),
        );
        let ctx = match edge {
            Some(edge) => OperationContext::new().with_edge(edge),
            None => self
                .stdio_base
                .get_or_init(|| OperationContext::new().with_edge(self.edge(context, false, None)))
                .clone()
                .with_fresh_request_id(),
        };
        ctx.with_identity_opt(identity).with_trace_opt(trace)
    }

    /// The [`Edge::MCP`] of a request: its [`McpSession`] fact, its HTTP request's over
    /// Streamable HTTP (`request`), and the MCP session's state slot.
    fn edge(
        &self,
        context: &RequestContext<RoleServer>,
        modern: bool,
        request: Option<HttpRequest>,
    ) -> Edge {
        let session_id = request
            .as_ref()
            .and_then(|request| request.headers.get(super::sessions::SESSION_HEADER))
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let stream = match (&self.inner.streams, &session_id) {
            (Some(book), Some(session)) => Some(CallStream {
                book: book.clone(),
                session: session.clone(),
                request: context.id.clone(),
            }),
            _ => None,
        };
        let fact = McpSession {
            stream,
            session_id: session_id.clone(),
            // A 2026-07-28 client names itself in each request's `_meta` (it sends no
            // `initialize`); an older one in its `initialize`.
            client: if modern {
                context.meta.client_info()
            } else {
                context
                    .peer
                    .peer_info()
                    .map(|info| info.client_info.clone())
            },
        };
        let mut edge = Edge::new(Edge::MCP).with_fact(fact);
        // Over Streamable HTTP, the request's method, URI and headers, as the HTTP server
        // gives its operations.
        let over_http = request.is_some();
        if let Some(request) = request {
            edge = edge.with_fact(request);
        }
        // One session per MCP session: this handler is made per Streamable HTTP session (and
        // per stdio connection); a stateless request has none.
        let key = match (session_id, over_http) {
            (Some(id), _) => Some(id),
            (None, false) => Some("stdio".to_owned()),
            (None, true) => None,
        };
        if let Some(key) = key {
            let session = self
                .session
                .get_or_init(|| Arc::new(Session::new(key)))
                .clone();
            edge = edge.with_session(session);
        }
        edge
    }

    /// `ctx` with the server's call timeout (a request's; not a task's or a resource
    /// subscription's).
    pub(super) fn timed(&self, ctx: OperationContext) -> OperationContext {
        match self.inner.call_timeout {
            Some(timeout) => ctx.with_timeout(timeout),
            None => ctx,
        }
    }

    /// The rounds of a 2026-07-28 request that may ask its user questions (`None` for an
    /// older client, which is asked in the call).
    pub(super) fn rounds(
        &self,
        subject: &str,
        request_state: Option<&str>,
        input_responses: Option<rmcp::model::InputResponses>,
        context: &RequestContext<RoleServer>,
        modern: bool,
    ) -> Result<Option<Arc<Rounds>>, McpError> {
        if !modern {
            return Ok(None);
        }
        let declared = context
            .client_capabilities()
            .map(|capabilities| {
                [
                    ("elicitation", capabilities.elicitation.is_some()),
                    ("sampling", capabilities.sampling.is_some()),
                    ("roots", capabilities.roots.is_some()),
                ]
                .into_iter()
                .filter_map(|(name, declared)| declared.then_some(name))
                .collect()
            })
            .unwrap_or_default();
        Rounds::open(
            &self.inner.rounds,
            subject,
            request_state,
            input_responses,
            declared,
        )
        .map(|rounds| Some(Arc::new(rounds)))
    }

    /// Serves operation `id` for a prompt or a resource read (`subject` names it in the
    /// sealed state): the caller's identity and context, asked by this request's means; the
    /// outcome, or the input-required result of a 2026-07-28 request that asked.
    pub(super) async fn serve_asking(
        &self,
        id: &str,
        input: serde_json::Value,
        subject: &str,
        request_state: Option<&str>,
        input_responses: Option<rmcp::model::InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Asked, McpError> {
        let identity = self
            .identity(context)
            .await
            .map_err(|error| super::replies::rpc_error(&error))?;
        let modern = self.is_modern(context);
        let rounds = self.rounds(subject, request_state, input_responses, context, modern)?;
        let ctx = self.timed(self.call_context_as(identity, context, modern));
        let ctx = self.asking(ctx, rounds.as_ref(), || Arc::new(context.peer.clone()));
        let outcome = Box::pin(self.inner.registry.serve(id, input, ctx)).await;
        if let Some(asked) = rounds
            .as_ref()
            .and_then(|rounds| rounds.input_required(&self.inner.rounds, subject))
        {
            return Ok(Asked::Input(asked));
        }
        Ok(Asked::Done(outcome))
    }

    /// `ctx` with the elicitor of this request: the rounds of a 2026-07-28 request, else the
    /// session's peer.
    pub(super) fn asking(
        &self,
        ctx: OperationContext,
        rounds: Option<&Arc<Rounds>>,
        peer: impl FnOnce() -> Arc<rmcp::Peer<RoleServer>>,
    ) -> OperationContext {
        match rounds {
            Some(rounds) => ctx.with_elicitor(Arc::new(RoundElicitor(rounds.clone()))),
            None => ctx.with_elicitor(Arc::new(PeerElicitor { peer: peer() })),
        }
    }
}

/// What [`McpHandler::serve_asking`] gives: the call's outcome, or the questions a 2026-07-28
/// client is to answer first.
pub(crate) enum Asked {
    Done(Result<opkit::middleware::Outcome, CallError>),
    Input(rmcp::model::InputRequiredResult),
}

/// What the MCP server knows about a call it serves, for operations and middleware to read
/// through the context's [`Edge`]: `ctx.edge().and_then(|edge| edge.fact::<McpSession>())`.
/// The session's state slot is [`OperationContext::session`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct McpSession {
    /// The `Mcp-Session-Id` of a Streamable HTTP session (`None` over stdio and for
    /// stateless requests).
    pub session_id: Option<String>,
    /// The client's name and version from its `initialize` request, when it sent one.
    pub client: Option<Implementation>,
    /// The call's own SSE stream, when it has one that can be closed for the client to
    /// resume.
    stream: Option<CallStream>,
}

/// The SSE stream of one call in a session of [`McpServer::router`](super::McpServer::router).
#[derive(Clone)]
struct CallStream {
    book: Arc<super::streams::StreamBook>,
    session: String,
    request: rmcp::model::RequestId,
}

impl std::fmt::Debug for CallStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallStream")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

impl McpSession {
    /// Closes this call's SSE stream now (SEP-1699), telling the client to reconnect after
    /// `retry`: the call goes on, and what it sends next (its progress, its result) reaches
    /// the client when it resumes the stream with `Last-Event-ID`. `false` when there is no
    /// such stream to close: over stdio, for a stateless request, a response sent as plain
    /// JSON, a server mounted from [`McpServer::streamable_http_service`](super::McpServer::streamable_http_service)
    /// instead of [`router`](super::McpServer::router), or a stream already closed.
    pub async fn close_sse_stream(&self, retry: std::time::Duration) -> bool {
        match &self.stream {
            Some(stream) => {
                stream
                    .book
                    .close(&stream.session, &stream.request, retry)
                    .await
            }
            None => false,
        }
    }
}

/// The session's resource subscriptions: URI → the token that stops its subscription.
/// Dropped with the session's last handler, which stops them all.
#[derive(Debug, Default)]
pub(crate) struct Watches {
    pub(crate) running: Mutex<HashMap<String, CancellationToken>>,
    /// Cancelled when the session ends: stops its list-changed notifications.
    pub(crate) closed: CancellationToken,
}

impl Drop for Watches {
    fn drop(&mut self) {
        for token in self.running.get_mut().values() {
            token.cancel();
        }
        self.closed.cancel();
    }
}
