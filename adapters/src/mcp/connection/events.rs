//! The rmcp client handler ([`Events`]): counts `tools/list_changed`, hands progress and
//! log messages to the calls that listen, and offers the client's `initialize` info.

use opkit::OperationContext;
use opkit::report::{LogLevel, LogRecord};
// Logging is deprecated from 2026-07-28 (SEP-2577), yet legacy servers still send it.
use parking_lot::Mutex;
#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, NumberOrString, ProgressNotificationParam,
    ProgressToken, ProtocolVersion,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::watch;

/// The client's notification handler: counts `list_changed`, hands progress and log
/// messages to the calls that listen (see [`Events::listen`]), logs the rest.
#[derive(Clone)]
pub(super) struct Events {
    label: Arc<str>,
    pub list_changed: Arc<watch::Sender<u64>>,
    listeners: Arc<Mutex<HashMap<String, OperationContext>>>,
}

/// A progress token as a map key (numbers and strings kept apart).
fn token_key(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::Number(number) => format!("n:{number}"),
        NumberOrString::String(text) => format!("s:{text}"),
    }
}

/// A call's registration with [`Events`]; removed on drop.
pub(super) struct Listening {
    listeners: Arc<Mutex<HashMap<String, OperationContext>>>,
    token: String,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.listeners.lock().remove(&self.token);
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
            },
            receiver,
        )
    }

    /// Registers a call whose context has a reporter: progress for its request's token goes
    /// to it, and so do log messages while it runs (MCP log messages name no request, so
    /// every listening call of the connection sees them).
    pub(super) fn listen(&self, ctx: &OperationContext, token: &ProgressToken) -> Listening {
        let token = token_key(token);
        self.listeners.lock().insert(token.clone(), ctx.clone());
        Listening {
            listeners: self.listeners.clone(),
            token,
        }
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

    fn get_info(&self) -> ClientConfig {
        // The version offered by `initialize` (Legacy, and Auto's fallback): one that has
        // the handshake. `server/discover` offers its own preferred versions.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("opkit", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}
