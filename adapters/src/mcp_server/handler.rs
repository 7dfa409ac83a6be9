//! [`McpHandler`]: the rmcp [`ServerHandler`] of an [`McpServer`](super::McpServer) — tools
//! from the registry, calls into it, progress and logs back to the client; resources,
//! prompts and completion from the catalog (see `resources.rs`, `prompts.rs`).

use super::replies;
use super::report::{self};
use super::results;
use super::session::McpHandler;
use futures::StreamExt;
use opkit::middleware::{Outcome, Reply, ReplyStream};
use opkit::{CallError, OperationKind};
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    GetTaskParams, GetTaskResult, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Value, json};
use std::sync::Arc;

impl McpHandler {
    /// `tools/call`: the tool mapped to its operation and served through the registry's
    /// front door ([`OperationRegistry::serve`](opkit::OperationRegistry::serve)), the outcome
    /// mapped back to a tool result (or, when it asked a 2026-07-28 client a question, an
    /// input-required result).
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn keeps its parameters twice in its future (see the body)"
    )]
    fn call(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, McpError>> + Send + '_ {
        // Not an `async fn`: its parameters would be kept twice in its future (as captured
        // and as bound in its body), and rmcp keeps the whole future in each request's task.
        async move {
            let served = self.resolve(&request.name)?;
            let identity = match self.identity(&context).await {
                Ok(identity) => identity,
                Err(error) => return Ok(results::failure(&error).into()),
            };
            let modern = self.is_modern(&context);
            let rounds = self.rounds(
                &request.name,
                request.request_state.as_deref(),
                request.input_responses,
                &context,
                modern,
            )?;
            let input = Value::Object(request.arguments.unwrap_or_default());
            match super::tasks::support(&served.spec) {
                // A call of an `after_input` operation that brings no answers runs in the request
                // as a plain call (a question ends it with an input-required result); the call
                // that brings answers starts the task with them.
                Some(super::tasks::Support::AfterInput)
                    if super::tasks::negotiated(&context)
                        && rounds.as_ref().is_some_and(|rounds| !rounds.answered()) => {}
                Some(support) if super::tasks::negotiated(&context) => {
                    let answered = rounds.filter(|_| support == super::tasks::Support::AfterInput);
                    let ctx = self.call_context_as(identity, &context, modern);
                    return Ok(self.start_task(served, input, ctx, modern, answered).into());
                }
                Some(super::tasks::Support::Required) => return Err(super::tasks::required()),
                _ => {}
            }
            let subscription = served.spec.kind == OperationKind::Subscription;
            let registry = &self.inner.registry;
            // The operation the names were built with: they are current (`resolve` checks the
            // registry's revision), so it is the registry's. Lent to the call: `served` holds it.
            let found = served.found.as_ref();
            // A tool whose handler reads nothing from its context but its bounds (and that no
            // middleware covers) cannot report, log or ask, nor read its edge. A subscription's
            // items are its progress: it always has them.
            let lean = !subscription && found.is_some_and(|found| !registry.reads_context(found));
            let ctx = self.tool_context(identity, &mut context, modern, lean);
            // The request is owned here: its cancellation and its peer move into the call
            // (the peer shared by the reporter, the elicitor of an older client and a
            // subscription's progress), not cloned.
            let RequestContext { ct, peer, meta, .. } = context;
            let ctx = self.timed(ctx.with_cancellation(ct));
            let (ctx, forwarder, peer) = if lean {
                // Dropped now, not held by the future while the call runs.
                drop(peer);
                (ctx, None, None)
            } else {
                let (ctx, forwarder, peer) =
                    self.reporting(ctx, peer, &meta, subscription, modern, rounds.as_ref());
                (ctx, Some(forwarder), Some(peer))
            };
            // Awaited in place: the whole call's future is boxed once by rmcp's service.
            let outcome = match found {
                Some(found) => registry.serve_found_ref(found, input, ctx).await,
                None => registry.serve(&served.id, input, ctx).await,
            };
            let asked = rounds
                .as_ref()
                .and_then(|rounds| rounds.input_required(&self.inner.rounds, &request.name));
            let response = match (asked, outcome) {
                (Some(asked), _) => Ok(asked.into()),
                (None, Ok(Outcome::Unary(reply))) => {
                    Ok(replies::unary_result(&served, reply, modern, self.inner.local_meta).into())
                }
                (None, Ok(Outcome::Stream(items))) => {
                    let progress = meta.get_progress_token();
                    Ok(Box::pin(self.collect(items, peer.as_deref(), progress))
                        .await
                        .into())
                }
                // The operation needed a client capability the client did not declare.
                (None, Err(error)) => required_capability(&error)
                    .map_or_else(|| Ok(results::failure(&error).into()), Err),
            };
            // Once, after the response is made (its only await but a stream's collecting,
            // so the future keeps one state for it).
            if let Some(forwarder) = forwarder {
                forwarder.finish().await;
            }
            response
        }
    }

    /// `ctx` with the reporter that sends the call's progress and logs to the client (a
    /// subscription's are its items: only its logs go out) and the elicitor that asks its
    /// user; also the forwarder to finish once the call is done, and the client they share.
    fn reporting(
        &self,
        ctx: opkit::OperationContext,
        peer: Peer<RoleServer>,
        meta: &rmcp::model::RequestMetaObject,
        subscription: bool,
        modern: bool,
        rounds: Option<&Arc<super::elicitation::Rounds>>,
    ) -> (
        opkit::OperationContext,
        report::Forwarder,
        Arc<Peer<RoleServer>>,
    ) {
        let token = if subscription {
            None
        } else {
            meta.get_progress_token()
        };
        let gate = if modern {
            report::LogGate::Request(meta.log_level())
        } else {
            report::LogGate::Session(self.log_level.clone())
        };
        let peer = Arc::new(peer);
        let (reporter, forwarder) = report::start(peer.clone(), token, gate);
        let ctx = self.asking(ctx.with_reporter(reporter), rounds, || peer.clone());
        (ctx, forwarder, peer)
    }

    /// Runs a subscription to its end (or the item limit) and returns its items, sending
    /// each as a progress notification when the request carries a progress token.
    async fn collect(
        &self,
        mut stream: ReplyStream,
        peer: Option<&Peer<RoleServer>>,
        progress_token: Option<ProgressToken>,
    ) -> CallToolResult {
        let mut items = Vec::new();
        let mut truncated = false;
        while let Some(item) = stream.next().await {
            let envelope = match item.and_then(Reply::into_envelope) {
                Ok(envelope) => envelope,
                Err(error) => return results::failure(&error),
            };
            if let (Some(token), Some(peer)) = (&progress_token, peer) {
                let count = items.len() + 1;
                let notification = ProgressNotificationParam::new(token.clone(), count as f64)
                    .with_message(envelope.data.to_string());
                if let Err(error) = peer.notify_progress(notification).await {
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

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        let catalog = self
            .catalog()
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
        self.declare_skills(&mut capabilities);
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
        let names = self.catalog()?;
        let cursor = request.and_then(|request| request.cursor);
        let page = super::listing::page(&names, cursor.as_deref(), self.is_modern(&context));
        Ok(super::listing::cached(page, self.inner.list_cache))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.catalog().ok()?.served(name)?.definition(name, true)
    }

    /// The call's own future, not one awaiting it (which would hold the request and its
    /// context a second and a third time).
    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, McpError>> + Send + '_ {
        self.call(request, context)
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

    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CompleteResult, McpError>> + Send + '_ {
        // Boxed, as every rare request's large future here: see `listen`.
        Box::pin(async move { self.complete_argument(&request, &context).await })
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(super::listing::cached(
            super::prompts::list(&self.catalog()?.catalog, cursor(request.as_ref())),
            self.inner.list_cache,
        ))
    }

    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetPromptResponse, McpError>> + Send + '_ {
        Box::pin(async move { self.prompt(request, &context).await })
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let at = cursor(request.as_ref());
        let page = super::resources::list(&self.catalog()?.catalog, at);
        Ok(super::listing::cached(
            self.with_skill_resources(page, at.is_none()),
            self.inner.list_cache,
        ))
    }

    #[cfg(feature = "mcp-skills")]
    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, McpError> {
        let skills = self.skill_catalog::<rmcp::model::ListSkillsRequestMethod>()?;
        Ok(super::listing::cached(
            skills.list_skills(),
            self.inner.list_cache,
        ))
    }

    #[cfg(feature = "mcp-skills")]
    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, McpError> {
        let skill = self
            .skill_catalog::<rmcp::model::GetSkillRequestMethod>()?
            .get_skill(&request.uri)?;
        Ok(super::listing::cached(skill, self.inner.list_cache))
    }

    #[cfg(feature = "mcp-skills")]
    async fn read_resource_directory(
        &self,
        request: rmcp::model::ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceDirectoryResult, McpError> {
        let children = self
            .skill_catalog::<rmcp::model::ReadResourceDirectoryRequestMethod>()?
            .read_resource_directory(&request.uri)?;
        Ok(super::listing::cached(children, self.inner.list_cache))
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(super::listing::cached(
            super::resources::templates(&self.catalog()?.catalog, cursor(request.as_ref())),
            self.inner.list_cache,
        ))
    }

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceResponse, McpError>> + Send + '_ {
        Box::pin(async move {
            if let Some(file) = self.read_skill_file(&request.uri) {
                return Ok(file.into());
            }
            self.read(request, &context).await
        })
    }

    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        Box::pin(async move { self.watch(&request.uri, &context).await })
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.keep_era(&context.peer);
        self.notify_lists(context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.filter(requested)
    }

    /// Boxed. rmcp awaits each request's method inside one future per request (spawned as a
    /// task for a session or stdio, awaited by the stateless service), and a future is as
    /// large as its largest state: a subscription's (~3 KB), held inline, made the future of
    /// every `tools/call` ~5 KB (rmcp's own server's is ~3.4 KB). The rare requests' large
    /// futures are boxed when they are made; `tools/call`'s is not (`call`).
    fn listen(
        &self,
        subscription: SubscriptionContext,
    ) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        Box::pin(self.listen_to(subscription))
    }

    fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetTaskResult, McpError>> + Send + '_ {
        Box::pin(async move {
            self.task_of(&request.task_id, &context)
                .await?
                .get_task(&request.task_id)
                .map(GetTaskResult::new)
        })
    }

    fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        Box::pin(async move {
            self.task_of(&request.task_id, &context)
                .await?
                .update_task(&request.task_id, request.input_responses)
        })
    }

    fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        Box::pin(async move {
            self.task_of(&request.task_id, &context)
                .await?
                .cancel_task(&request.task_id)
        })
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

/// The cursor of a paginated list request.
fn cursor(request: Option<&PaginatedRequestParams>) -> Option<&str> {
    request.and_then(|request| request.cursor.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ClientRequest;

    /// The size of the future rmcp makes for each request to `handler` (never made here).
    fn request_future_size<H: ServerHandler>(handler: &H) -> usize {
        fn returned<R>(_: impl Fn(ClientRequest, RequestContext<RoleServer>) -> R) -> usize {
            size_of::<R>()
        }
        returned(|request, context| rmcp::Service::handle_request(handler, request, context))
    }

    /// An rmcp server with every method rmcp's default.
    struct Bare;

    impl ServerHandler for Bare {}

    /// The future of every request, `tools/call` among them, is as large as the largest of
    /// the methods' (rmcp spawns or awaits one per request): the large and rare ones are
    /// boxed, so that it is no larger than a bare rmcp server's.
    #[test]
    fn a_requests_future_is_no_larger_than_a_bare_rmcp_servers() {
        let handler = super::super::McpServer::new(opkit::OperationRegistry::new()).handler();
        let ours = request_future_size(&handler);
        let bare = request_future_size(&Bare);
        assert!(
            ours <= bare,
            "{ours} bytes a request, a bare server's {bare}"
        );
    }
}
