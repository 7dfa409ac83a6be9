//! [`McpHandler`]: the rmcp [`ServerHandler`] of an [`McpServer`](super::McpServer) — tools
//! from the registry, calls into it, progress and logs back to the client, and `-32601` for
//! every capability opkit does not offer.

use super::names::{Served, ToolNames};
use super::report::{self, LevelCell};
use super::results;
use super::tools;
use super::{Inner, RequestIdentity};
use crate::http_server::authenticate;
use futures::StreamExt;
use opkit::trace::{CallSpan, SpanKind, TraceContext};
use opkit::{CallError, Identity, OperationContext, OperationKind};
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestMethod,
    CompleteRequestParams, CompleteResult, Implementation, ListPromptsRequestMethod,
    ListPromptsResult, ListResourceTemplatesRequestMethod, ListResourceTemplatesResult,
    ListResourcesRequestMethod, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Value, json};
use std::sync::Arc;
use tracing::Instrument;

/// The [`rmcp::ServerHandler`] of an [`McpServer`](super::McpServer): tools from the
/// registry, calls into it.
///
/// Cloning is cheap; clones share the session's log level. Use it to serve over a transport
/// of your own (`handler.serve(transport)` with [`rmcp::ServiceExt`]).
#[derive(Clone)]
pub struct McpHandler {
    pub(super) inner: Arc<Inner>,
    pub(super) log_level: LevelCell,
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
        }
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
    async fn identity(
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

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let served = self.resolve(&request.name)?;
        let (id, spec) = (&served.id, &served.spec);
        let identity = match self.identity(&context).await {
            Ok(identity) => identity,
            Err(error) => return Ok(results::failure(&error)),
        };
        if let Err(error) = spec.access.check(identity.as_ref()) {
            return Ok(results::failure(&error));
        }
        let input = Value::Object(request.arguments.unwrap_or_default());
        let trace = TraceContext::from_parts(
            context.meta.get_traceparent(),
            context.meta.get_tracestate(),
        );
        let mut ctx = OperationContext::new()
            .with_identity_opt(identity)
            .with_cancellation(context.ct.clone())
            .with_trace_opt(trace);
        if let Some(timeout) = self.inner.call_timeout {
            ctx = ctx.with_timeout(timeout);
        }
        let mut span = CallSpan::start(SpanKind::Server, "mcp_server", id, &ctx);
        span.record_kind(spec.kind);
        let ctx = span.apply(ctx);
        // Boxed once: the call's future is large, and moving it through the span's
        // instrumentation and the caller's futures would copy it each time.
        let serving = Box::pin(self.serve(&served, input, ctx, context));
        let (result, error) = if span.is_active() {
            serving.instrument(span.span().clone()).await
        } else {
            serving.await
        };
        span.finish(error.as_ref().map_or(Ok(()), Err));
        Ok(result)
    }

    /// Runs a call of a resolved, access-checked tool; the error, if the call failed, beside
    /// the result that reports it.
    async fn serve(
        &self,
        served: &Served,
        input: Value,
        ctx: OperationContext,
        context: RequestContext<RoleServer>,
    ) -> (CallToolResult, Option<CallError>) {
        let (id, spec) = (&*served.id, &*served.spec);
        let modern = is_modern(&context);
        let form = served.forms[usize::from(modern)];
        let token = context.meta.get_progress_token();
        if spec.kind == OperationKind::Subscription {
            // Item counts are the progress of a subscription; the handler's logs still go out.
            let (reporter, forwarder) =
                report::start(context.peer.clone(), None, self.log_level.clone());
            // Boxed: a subscription's future is large, and inline it would make every
            // call's future (copied when boxed in `call`) as large.
            let ctx = ctx.with_reporter(reporter);
            let result = Box::pin(self.collect(id, input, &ctx, &context)).await;
            forwarder.finish().await;
            return result;
        }
        // The peer moves into the reporter: nothing else here needs it.
        let (reporter, forwarder) = report::start(context.peer, token, self.log_level.clone());
        let ctx = ctx.with_reporter(reporter);
        let outcome = self.inner.registry.execute(id, input, &ctx).await;
        drop(ctx);
        forwarder.finish().await;
        match outcome {
            Ok(envelope) => {
                // Only an error envelope's structured content is checked against the declared
                // output schema: it is built for that case alone, not on every call.
                let schema = envelope
                    .is_error()
                    .then(|| tools::output(spec, modern).1)
                    .flatten();
                (
                    results::envelope_result(envelope, form, schema.as_ref(), !modern),
                    None,
                )
            }
            Err(error) => (results::failure(&error), Some(error)),
        }
    }

    /// Runs a subscription to its end (or the item limit) and returns its items, sending
    /// each as a progress notification when the request carries a progress token.
    async fn collect(
        &self,
        id: &str,
        input: Value,
        ctx: &OperationContext,
        context: &RequestContext<RoleServer>,
    ) -> (CallToolResult, Option<CallError>) {
        let mut stream = match self.inner.registry.subscribe(id, input, ctx).await {
            Ok(stream) => stream,
            Err(error) => return (results::failure(&error), Some(error)),
        };
        let progress_token = context.meta.get_progress_token();
        let mut items = Vec::new();
        let mut truncated = false;
        while let Some(item) = stream.next().await {
            let envelope = match item {
                Ok(envelope) => envelope,
                Err(error) => return (results::failure(&error), Some(error)),
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
        (
            CallToolResult::structured(json!({"items": items, "truncated": truncated})),
            None,
        )
    }
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        #[allow(deprecated)]
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
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
        self.call(request, context)
            .await
            .map(CallToolResponse::from)
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
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        Err(McpError::method_not_found::<CompleteRequestMethod>())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Err(McpError::method_not_found::<ListPromptsRequestMethod>())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Err(McpError::method_not_found::<ListResourcesRequestMethod>())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Err(McpError::method_not_found::<
            ListResourceTemplatesRequestMethod,
        >())
    }
}
