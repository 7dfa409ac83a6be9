//! [`McpHandler`]: the rmcp [`ServerHandler`] of an [`McpServer`](super::McpServer) — tools
//! from the registry, calls into it, progress and logs back to the client; resources,
//! prompts and completion from the catalog (see `resources.rs`, `prompts.rs`).

use super::elicitation::{PeerElicitor, RoundElicitor, Rounds};
use super::names::{Served, ToolNames};
use super::report::{self, LevelCell};
use super::results;
use super::tools;
use super::{Inner, RequestIdentity};
use crate::http_server::authenticate;
use futures::StreamExt;
use opkit::edge::{Edge, Session};
use opkit::middleware::{Outcome, Reply, ReplyStream};
use opkit::trace::TraceContext;
use opkit::{CallError, Identity, OperationContext, OperationKind};
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    CompleteRequestParams, CompleteResult, ContentBlock, GetPromptRequestParams, GetPromptResponse,
    GetTaskParams, GetTaskResult, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ResourceContents,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
    UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock};

/// The [`rmcp::ServerHandler`] of an [`McpServer`](super::McpServer): tools from the
/// registry, calls into it.
///
/// Cloning is cheap; clones share the session's log level. Use it to serve over a transport
/// of your own (`handler.serve(transport)` with [`rmcp::ServiceExt`]).
#[derive(Clone)]
pub struct McpHandler {
    pub(super) inner: Arc<Inner>,
    pub(super) log_level: LevelCell,
    /// The session's state slot ([`OperationContext::session`]), made at its first call.
    session: Arc<OnceLock<Arc<Session>>>,
    /// The session's resource subscriptions (stopped when the last clone is dropped).
    pub(super) watches: Arc<super::resources::Watches>,
}

impl std::fmt::Debug for McpHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHandler")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

/// `true` for a client on protocol revision 2026-07-28 or later.
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The JSON-RPC error of tool names that cannot be served (the registry changed after the
/// server started).
fn names_error(error: &super::ToolNameError) -> McpError {
    McpError::internal_error(error.to_string(), None)
}

impl McpHandler {
    pub(super) fn new(inner: Arc<Inner>) -> Self {
        Self {
            inner,
            log_level: LevelCell::default(),
            session: Arc::default(),
            watches: Arc::default(),
        }
    }

    /// The tools, resources and prompts of the registry as it is now.
    pub(super) fn catalog(&self) -> Result<Arc<ToolNames>, McpError> {
        self.names()
    }

    fn names(&self) -> Result<Arc<ToolNames>, McpError> {
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

    /// The operation a tool call names, or the JSON-RPC error for an unknown tool.
    fn resolve(&self, tool: &str) -> Result<Arc<Served>, McpError> {
        let unknown = || McpError::invalid_params(format!("Unknown tool: {tool}"), None);
        let names = self.names()?;
        let served = names.served(tool).ok_or_else(unknown)?;
        if !served.takes_arguments {
            return Err(unknown());
        }
        Ok(served.clone())
    }

    /// The context of a tool call: the caller's identity, the request's cancellation, trace
    /// and deadline, and the [`McpSession`] edge with the session's state slot.
    pub(super) fn call_context(
        &self,
        identity: Option<Identity>,
        context: &RequestContext<RoleServer>,
    ) -> OperationContext {
        let trace = TraceContext::from_parts(
            context.meta.get_traceparent(),
            context.meta.get_tracestate(),
        );
        let ctx = OperationContext::new()
            .with_identity_opt(identity)
            .with_cancellation(context.ct.clone())
            .with_trace_opt(trace);
        let parts = context.extensions.get::<http::request::Parts>();
        let session_id = parts
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let fact = McpSession {
            session_id: session_id.clone(),
            client: context
                .peer
                .peer_info()
                .map(|info| info.client_info.clone()),
        };
        let mut edge = Edge::new(Edge::MCP).with_fact(fact);
        // One session per MCP session: this handler is made per Streamable HTTP session (and
        // per stdio connection); a stateless request has none.
        let key = match (session_id, parts) {
            (Some(id), _) => Some(id),
            (None, None) => Some("stdio".to_owned()),
            (None, Some(_)) => None,
        };
        if let Some(key) = key {
            let session = self
                .session
                .get_or_init(|| Arc::new(Session::new(key)))
                .clone();
            edge = edge.with_session(session);
        }
        ctx.with_edge(edge)
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
    ) -> Result<Option<Arc<Rounds>>, McpError> {
        if !is_modern(context) {
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

    /// `ctx` with the elicitor of this request: the rounds of a 2026-07-28 request, else the
    /// session's peer.
    pub(super) fn asking(
        &self,
        ctx: OperationContext,
        rounds: Option<&Arc<Rounds>>,
        context: &RequestContext<RoleServer>,
    ) -> OperationContext {
        match rounds {
            Some(rounds) => ctx.with_elicitor(Arc::new(RoundElicitor(rounds.clone()))),
            None => ctx.with_elicitor(Arc::new(PeerElicitor {
                peer: context.peer.clone(),
            })),
        }
    }

    /// `tools/call`: the tool mapped to its operation and served through the registry's
    /// front door ([`OperationRegistry::serve`](opkit::OperationRegistry::serve)), the outcome
    /// mapped back to a tool result (or, when it asked a 2026-07-28 client a question, an
    /// input-required result).
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let served = self.resolve(&request.name)?;
        let identity = match self.identity(&context).await {
            Ok(identity) => identity,
            Err(error) => return Ok(results::failure(&error).into()),
        };
        let rounds = self.rounds(
            &request.name,
            request.request_state.as_deref(),
            request.input_responses,
            &context,
        )?;
        let input = Value::Object(request.arguments.unwrap_or_default());
        let modern = is_modern(&context);
        match super::tasks::support(&served.spec) {
            Some(_) if super::tasks::negotiated(&context) => {
                let ctx = self.call_context(identity, &context);
                return Ok(self.start_task(served, input, ctx, modern).into());
            }
            Some(super::tasks::Support::Required) => return Err(super::tasks::required()),
            _ => {}
        }
        let subscription = served.spec.kind == OperationKind::Subscription;
        // Item counts are a subscription's progress; its handler's logs still go out.
        let token = if subscription {
            None
        } else {
            context.meta.get_progress_token()
        };
        let gate = if modern {
            report::LogGate::Request(context.meta.log_level())
        } else {
            report::LogGate::Session(self.log_level.clone())
        };
        let (reporter, forwarder) = report::start(context.peer.clone(), token, gate);
        let ctx = self
            .timed(self.call_context(identity, &context))
            .with_reporter(reporter);
        let ctx = self.asking(ctx, rounds.as_ref(), &context);
        // Boxed once: the call's future is large.
        let outcome = Box::pin(self.inner.registry.serve(&served.id, input, ctx)).await;
        if let Some(asked) = rounds
            .as_ref()
            .and_then(|rounds| rounds.input_required(&self.inner.rounds, &request.name))
        {
            forwarder.finish().await;
            return Ok(asked.into());
        }
        let result = match outcome {
            Ok(Outcome::Unary(reply)) => self.unary_result(&served, reply, modern),
            Ok(Outcome::Stream(items)) => Box::pin(self.collect(items, &context)).await,
            Err(error) => match required_capability(&error) {
                // The operation needed a client capability the client did not declare.
                Some(missing) => {
                    forwarder.finish().await;
                    return Err(missing);
                }
                None => results::failure(&error),
            },
        };
        forwarder.finish().await;
        Ok(result.into())
    }

    /// The tool result of a query's or mutation's reply, with its cache hint in `_meta`.
    pub(super) fn unary_result(
        &self,
        served: &Served,
        reply: Reply,
        modern: bool,
    ) -> CallToolResult {
        let hint = reply.cache_hint();
        let envelope = match reply.into_envelope() {
            Ok(envelope) => envelope,
            Err(error) => return results::failure(&error),
        };
        let form = served.forms[usize::from(modern)];
        // Only an error envelope's structured content is checked against the declared
        // output schema: it is built for that case alone, not on every call.
        let schema = envelope
            .is_error()
            .then(|| tools::output(&served.spec, modern).1)
            .flatten();
        let binary = binary_block(&served.spec, &envelope);
        let mut result = results::envelope_result(envelope, form, schema.as_ref(), !modern);
        if let Some(block) = binary {
            result.content.push(block);
        }
        if let Some(hint) = hint {
            let meta = result.meta.get_or_insert_with(Default::default);
            meta.insert(
                "ttlMs".to_owned(),
                json!(u64::try_from(hint.ttl.as_millis()).unwrap_or(u64::MAX)),
            );
            meta.insert("cacheScope".to_owned(), json!(hint.scope.as_str()));
        }
        result
    }

    /// Runs a subscription to its end (or the item limit) and returns its items, sending
    /// each as a progress notification when the request carries a progress token.
    async fn collect(
        &self,
        mut stream: ReplyStream,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let progress_token = context.meta.get_progress_token();
        let mut items = Vec::new();
        let mut truncated = false;
        while let Some(item) = stream.next().await {
            let envelope = match item.and_then(Reply::into_envelope) {
                Ok(envelope) => envelope,
                Err(error) => return results::failure(&error),
            };
            if let Some(token) = &progress_token {
                let count = items.len() + 1;
                let notification = ProgressNotificationParam::new(token.clone(), count as f64)
                    .with_message(envelope.data.to_string());
                if let Err(error) = context.peer.notify_progress(notification).await {
                    tracing::debug!(%error, "progress notification not delivered");
                }
            }
            items.push(envelope.data);
            if items.len() >= self.inner.max_items {
                truncated = true;
                break;
            }
        }
        drop(stream);
        CallToolResult::structured(json!({"items": items, "truncated": truncated}))
    }
}

/// The content block of a [`Binary`](opkit::binary::Binary) output: an image or audio block
/// when its media type says so, else an embedded blob resource (`opkit:<id>`), beside the
/// structured result (the base64 string).
fn binary_block(
    spec: &opkit::OperationSpec,
    envelope: &opkit::ResponseEnvelope,
) -> Option<ContentBlock> {
    if !opkit::binary::is_binary_schema(&spec.output_schema) || envelope.is_error() {
        return None;
    }
    let data = envelope.data.as_str()?;
    let mime = spec
        .output_schema
        .get("contentMediaType")
        .and_then(Value::as_str)
        .unwrap_or("application/octet-stream");
    Some(if mime.starts_with("image/") {
        ContentBlock::image(data, mime)
    } else if mime.starts_with("audio/") {
        ContentBlock::audio(data, mime)
    } else {
        ContentBlock::resource(
            ResourceContents::blob(data, format!("opkit:{}", spec.id())).with_mime_type(mime),
        )
    })
}

/// The `-32021` error of an operation that failed for want of a client capability
/// ([`opkit::elicit::missing_capability`]), naming it in `requiredCapabilities`.
fn required_capability(error: &CallError) -> Option<McpError> {
    let capability = error
        .details
        .as_ref()?
        .get("requiredCapability")?
        .as_str()?;
    let required = serde_json::from_value(json!({ capability: {} })).ok()?;
    Some(McpError::missing_required_client_capability(required))
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
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        let catalog = self
            .names()
            .map(|names| names.catalog.clone())
            .unwrap_or_default();
        #[allow(deprecated)]
        let mut capabilities = ServerCapabilities::builder()
            .enable_tasks()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .build();
        if let Some(resources) = capabilities.resources.as_mut() {
            resources.subscribe = Some(!catalog.watchers.is_empty() || catalog.has_resources());
        }
        let mut config = ServerConfig::new(capabilities).with_server_info(Implementation::new(
            self.inner.name.clone(),
            self.inner.version.clone(),
        ));
        if let Some(instructions) = &self.inner.instructions {
            config = config.with_instructions(instructions.clone());
        }
        config
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let names = self.names()?;
        let cursor = request.and_then(|request| request.cursor);
        Ok(super::listing::page(
            &names,
            cursor.as_deref(),
            is_modern(&context),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.names().ok()?.served(name)?.definition(name, true)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call(request, context).await
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self.log_level.write() = Some(request.level);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        self.complete_argument(&request)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(super::prompts::list(&self.names()?.catalog))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.prompt(request, &context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(super::resources::list(&self.names()?.catalog))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(super::resources::templates(&self.names()?.catalog))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.read(request, &context).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.watch(&request.uri, &context).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.notify_lists(context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.filter(requested)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), McpError> {
        self.listen_to(subscription).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.inner
            .tasks
            .get_task(&request.task_id)
            .map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.inner
            .tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.inner.tasks.cancel_task(&request.task_id)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.unwatch(&request.uri);
        Ok(())
    }
}
