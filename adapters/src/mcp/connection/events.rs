//! The rmcp client handler ([`Events`]): counts the `list_changed` notifications of tools,
//! resources and prompts, hands progress and log messages to the calls that listen, asks a
//! call's caller the questions the server asks in it, and offers the client's `initialize`
//! info (elicitation and tasks declared).

use opkit::OperationContext;
use opkit::report::{LogLevel, LogRecord};
// Logging is deprecated from 2026-07-28 (SEP-2577), yet legacy servers still send it.
use parking_lot::Mutex;
#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, Implementation,
    NumberOrString, ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestId,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::watch;

/// The client's notification handler: counts `list_changed`, hands progress and log
/// messages to the calls that listen (see [`Events::listen`]), logs the rest.
#[derive(Clone)]
pub(super) struct Events {
    label: Arc<str>,
    pub list_changed: Arc<watch::Sender<u64>>,
    /// The calls that listen to progress and logs, by progress token.
    listeners: Calls,
    /// The calls in flight, by request id: whom a question the server asks in a call goes to.
    askers: Calls,
}

/// Calls of the connection by a key (a progress token, a request id).
type Calls = Arc<Mutex<HashMap<String, OperationContext>>>;

/// A call's entry in one of [`Events`]' tables; removed on drop.
pub(super) struct Registered {
    calls: Calls,
    key: String,
}

impl Registered {
    fn new(calls: &Calls, key: String, ctx: &OperationContext) -> Self {
        calls.lock().insert(key.clone(), ctx.clone());
        Self {
            calls: calls.clone(),
            key,
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.calls.lock().remove(&self.key);
    }
}

/// A progress token as a map key (numbers and strings kept apart).
fn token_key(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::Number(number) => format!("n:{number}"),
        NumberOrString::String(text) => format!("s:{text}"),
    }
}

impl Events {
    pub(super) fn new(label: &str) -> (Self, watch::Receiver<u64>) {
        let (sender, receiver) = watch::channel(0);
        (
            Self {
                label: Arc::from(label),
                list_changed: Arc::new(sender),
                listeners: Arc::default(),
                askers: Arc::default(),
            },
            receiver,
        )
    }

    /// Registers a call whose context has a reporter: progress for its request's token goes
    /// to it, and so do log messages while it runs (MCP log messages name no request, so
    /// every listening call of the connection sees them).
    pub(super) fn listen(&self, ctx: &OperationContext, token: &ProgressToken) -> Registered {
        Registered::new(&self.listeners, token_key(token), ctx)
    }

    /// Registers a call in flight (request `id`): a question the server asks in it goes to
    /// its caller.
    pub(super) fn asking(&self, ctx: &OperationContext, id: &RequestId) -> Registered {
        Registered::new(&self.askers, id.to_string(), ctx)
    }

    /// The caller a question belongs to: the call whose response stream carried it, else the
    /// only call in flight (stdio does not say which call a request belongs to).
    fn asker(&self, context: &RequestContext<RoleClient>) -> Option<OperationContext> {
        let askers = self.askers.lock();
        if let Some(InboundStreamOrigin::OutboundRequest(id)) =
            context.extensions.get::<InboundStreamOrigin>()
        {
            return askers.get(&id.to_string()).cloned();
        }
        match askers.len() {
            1 => askers.values().next().cloned(),
            _ => None,
        }
    }

    /// Forwards a server's request in a call to that call's caller.
    async fn forward(
        &self,
        context: &RequestContext<RoleClient>,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, ErrorData> {
        let Some(ctx) = self.asker(context) else {
            return Err(ErrorData::internal_error(
                format!("`{method}` belongs to no call in flight of this client"),
                None,
            ));
        };
        ctx.client_request(opkit::elicit::ClientRequest::new(method, params))
            .await
            .map_err(|error| {
                ErrorData::internal_error(
                    format!("the importing operation's caller did not answer `{method}`: {error}"),
                    None,
                )
            })
    }

    fn listeners(&self) -> Vec<OperationContext> {
        self.listeners.lock().values().cloned().collect()
    }
}

impl ClientHandler for Events {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(target: "opkit_adapters::mcp", server = %self.label, "tools/list_changed");
        self.list_changed.send_modify(|count| *count += 1);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(target: "opkit_adapters::mcp", server = %self.label, "resources/list_changed");
        self.list_changed.send_modify(|count| *count += 1);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(target: "opkit_adapters::mcp", server = %self.label, "prompts/list_changed");
        self.list_changed.send_modify(|count| *count += 1);
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(target: "opkit_adapters::mcp", server = %self.label,
            level = ?params.level, logger = ?params.logger, "server log: {}", params.data);
        let Some(level) = serde_json::to_value(params.level)
            .ok()
            .and_then(|level| serde_json::from_value::<LogLevel>(level).ok())
        else {
            return;
        };
        let mut record = LogRecord::new(level, params.data);
        record.logger = params.logger;
        for ctx in self.listeners() {
            ctx.log_record(record.clone());
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::trace!(target: "opkit_adapters::mcp", server = %self.label,
            token = ?params.progress_token, progress = params.progress, total = ?params.total,
            "progress");
        let ctx = self
            .listeners
            .lock()
            .get(&token_key(&params.progress_token))
            .cloned();
        if let Some(ctx) = ctx {
            ctx.progress(params.progress, params.total, params.message.as_deref());
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(ctx) = self.asker(&context) else {
            return Err(ErrorData::internal_error(
                "the question belongs to no call in flight of this client",
                None,
            ));
        };
        let params = serde_json::to_value(&request)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        let answer = super::answers::ask(&ctx, None, &params)
            .await
            .map_err(|error| {
                ErrorData::internal_error(
                    format!("the importing operation's caller did not answer: {error}"),
                    None,
                )
            })?;
        serde_json::from_value(answer)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        let params = serde_json::to_value(&params)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        let result = self
            .forward(&context, "sampling/createMessage", params)
            .await?;
        serde_json::from_value(result)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        let result = self
            .forward(&context, "roots/list", serde_json::json!({}))
            .await?;
        serde_json::from_value(result)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))
    }

    fn get_info(&self) -> ClientConfig {
        // The version offered by `initialize` (Legacy, and Auto's fallback): one that has
        // the handshake. `server/discover` offers its own preferred versions. Questions (and
        // sampling and roots requests) are forwarded to the importing operation's caller, and
        // tasks are followed.
        let capabilities: ClientCapabilities = serde_json::from_value(serde_json::json!({
            "elicitation": {"form": {}},
            "sampling": {},
            "roots": {},
            "extensions": {(rmcp::model::TASKS_EXTENSION_ID): {}},
        }))
        .unwrap_or_default();
        ClientConfig::new(
            capabilities,
            Implementation::new("opkit", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}
