//! [`McpConnection`]: one MCP server, its tools as operations, kept up to date.

use super::content::envelope_of;
use super::names;
use super::tools::{self, tool_spec};
use opkit::report::{LogLevel, LogRecord};
use opkit::schema::CompiledSchema;
use opkit::trace::{CallSpan, SpanKind};
use opkit::{
    CallError, ErrorCode, Handler, Interrupted, OperationContext, OperationRegistry, OperationSpec,
    RegistryError, ResponseEnvelope,
};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, CustomResult, Implementation, ListToolsRequest, NumberOrString,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestId,
    ServerNotification, ServerResult, SubscriptionFilter,
};
// Logging is deprecated from 2026-07-28 (SEP-2577), yet legacy servers still send it.
#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient, ServiceError};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsStr;
use std::fmt;
use std::process::Stdio;
use std::sync::{Arc, Mutex, RwLock, Weak};
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;
use tracing::Instrument;

/// Pages of `tools/list` followed before giving up (a server that never ends its listing).
const MAX_LIST_PAGES: usize = 1000;

/// Which MCP lifecycle the client uses (see the [module docs](super#protocol-eras)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum McpLifecycle {
    /// Probe `server/discover` (2026-07-28) and fall back to the `initialize` handshake.
    #[default]
    Auto,
    /// The `initialize` handshake only (protocol revisions up to 2025-11-25).
    Legacy,
    /// `server/discover` only (2026-07-28, stateless); a legacy server is an error.
    Modern,
}

/// How to import an MCP server: the namespace of its operations and connection settings.
///
/// ```
/// use opkit_adapters::mcp::{McpLifecycle, McpOptions};
/// let options = McpOptions::new("github")
///     .bearer_token("ghp_secret")
///     .header("X-Team", "tools")
///     .lifecycle(McpLifecycle::Legacy)
///     .auto_refresh(true);
/// assert_eq!(options.namespace, "github");
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct McpOptions {
    /// Namespace of the imported operations (`seg(.seg)*`, each `[A-Za-z_][A-Za-z0-9_]*`).
    pub namespace: String,
    /// A name for the server in logs, errors and `spec.origin` (default: the command or URL).
    pub label: Option<String>,
    /// Extra HTTP headers sent with every Streamable HTTP request.
    pub headers: Vec<(String, String)>,
    /// Bearer token for Streamable HTTP (`Authorization: Bearer <token>`).
    pub bearer_token: Option<String>,
    /// Which protocol era to speak.
    pub lifecycle: McpLifecycle,
    /// Re-list the tools and update the registries when the server says its list changed.
    pub auto_refresh: bool,
    /// Let a stdio server's stderr through to this process's stderr (default: to `tracing`).
    pub inherit_stderr: bool,
    /// Read a lone JSON text block as the data when a result has no `structuredContent`
    /// (default `false`; see [`McpOptions::parse_json_text`]).
    pub parse_json_text: bool,
}

impl fmt::Debug for McpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("McpOptions")
            .field("namespace", &self.namespace)
            .field("label", &self.label)
            .field("headers", &header_names)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("lifecycle", &self.lifecycle)
            .field("auto_refresh", &self.auto_refresh)
            .field("inherit_stderr", &self.inherit_stderr)
            .field("parse_json_text", &self.parse_json_text)
            .finish()
    }
}

impl McpOptions {
    /// Options with the operations' namespace and defaults for everything else.
    pub fn new(namespace: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            label: None,
            headers: Vec::new(),
            bearer_token: None,
            lifecycle: McpLifecycle::Auto,
            auto_refresh: false,
            inherit_stderr: false,
            parse_json_text: false,
        }
    }

    /// Names the server in logs, errors and `spec.origin`.
    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Adds an HTTP header sent with every request (Streamable HTTP only).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the bearer token (Streamable HTTP only); give the token without `Bearer `.
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Chooses the protocol era.
    #[must_use]
    pub fn lifecycle(mut self, lifecycle: McpLifecycle) -> Self {
        self.lifecycle = lifecycle;
        self
    }

    /// Refreshes automatically on `notifications/tools/list_changed`.
    #[must_use]
    pub fn auto_refresh(mut self, enabled: bool) -> Self {
        self.auto_refresh = enabled;
        self
    }

    /// Passes a stdio server's stderr through instead of logging it with `tracing`.
    #[must_use]
    pub fn inherit_stderr(mut self, enabled: bool) -> Self {
        self.inherit_stderr = enabled;
        self
    }

    /// Many servers send their data `JSON.stringify`'d in a text block instead of
    /// `structuredContent`. With this on, a successful result without `structuredContent`
    /// whose only block is a text block holding JSON has that JSON as its data, cast to the
    /// tool's output schema when it has one; `meta.content` keeps the original block. Off by
    /// default: a text that happens to be JSON is then still text.
    #[must_use]
    pub fn parse_json_text(mut self, enabled: bool) -> Self {
        self.parse_json_text = enabled;
        self
    }
}

/// Why connecting to, listing or importing an MCP server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The namespace breaks the naming rules.
    #[error(
        "invalid MCP import namespace {0:?}: use segments of [A-Za-z_][A-Za-z0-9_]* separated by `.`"
    )]
    InvalidNamespace(String),
    /// A header name or value is not valid HTTP.
    #[error("invalid HTTP header {name:?}: {message}")]
    InvalidHeader {
        /// The header's name.
        name: String,
        /// What is wrong with it.
        message: String,
    },
    /// The server process could not be started.
    #[error("could not start MCP server `{label}`: {source}")]
    Spawn {
        /// The server's label.
        label: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The lifecycle handshake (`initialize` or `server/discover`) failed.
    #[error("could not connect to MCP server `{label}`: {message}")]
    Connect {
        /// The server's label.
        label: String,
        /// What went wrong.
        message: String,
    },
    /// A request to the server failed (transport or JSON-RPC error, malformed answer).
    #[error("MCP server `{label}` failed: {message}")]
    Request {
        /// The server's label.
        label: String,
        /// What went wrong.
        message: String,
    },
    /// An imported operation could not be registered (for example, its id is taken).
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// What a [`McpConnection::refresh`] changed, by operation id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RefreshReport {
    /// Operations of new tools.
    pub added: Vec<String>,
    /// Operations of tools that are gone.
    pub removed: Vec<String>,
    /// Operations whose tool definition changed (re-registered).
    pub changed: Vec<String>,
}

impl RefreshReport {
    /// `true` when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// One imported tool: its real name and the spec of its operation.
#[derive(Clone)]
struct ImportedTool {
    tool_name: String,
    spec: OperationSpec,
}

/// A live connection to one MCP server whose tools are imported as operations.
///
/// Cloning is cheap; clones share the connection. The server stays connected while the
/// connection or any operation registered from it is alive; [`McpConnection::close`] ends it
/// at once (later calls fail with `TRANSPORT_ERROR`). See the [module docs](super).
#[derive(Clone)]
pub struct McpConnection {
    state: Arc<State>,
}

struct State {
    client: Arc<Client>,
    namespace: String,
    tools: RwLock<Vec<ImportedTool>>,
    registries: Mutex<Vec<OperationRegistry>>,
    refresh_lock: tokio::sync::Mutex<()>,
    list_changes: watch::Receiver<u64>,
}

impl fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpConnection")
            .field("server", &self.state.client.label)
            .field("namespace", &self.state.namespace)
            .field("tools", &self.tool_names())
            .finish()
    }
}

impl McpConnection {
    /// Starts `command` with `args` (and `env` added to this process's environment) and talks
    /// MCP to it over its stdin/stdout; then lists its tools.
    ///
    /// The child's stderr goes to `tracing` (target `opkit_adapters::mcp`) unless
    /// [`McpOptions::inherit_stderr`] is set. The child is stopped when the connection (and
    /// every operation registered from it) is dropped, or on [`McpConnection::close`].
    pub async fn connect_stdio<A, K, V>(
        command: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = A>,
        env: impl IntoIterator<Item = (K, V)>,
        options: McpOptions,
    ) -> Result<Self, McpError>
    where
        A: AsRef<OsStr>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        check_namespace(&options.namespace)?;
        let label = options
            .label
            .clone()
            .unwrap_or_else(|| command.as_ref().to_string_lossy().into_owned());
        let mut cmd = tokio::process::Command::new(command.as_ref());
        cmd.args(args).envs(env);
        let spawn = |cmd: &tokio::process::Command| {
            let mut fresh = tokio::process::Command::new(cmd.as_std().get_program());
            // rmcp kills the child from a spawned task; if the runtime is already gone, this
            // makes dropping the child kill it all the same.
            fresh.args(cmd.as_std().get_args()).kill_on_drop(true);
            for (key, value) in cmd.as_std().get_envs() {
                match value {
                    Some(value) => fresh.env(key, value),
                    None => fresh.env_remove(key),
                };
            }
            let stderr = if options.inherit_stderr {
                Stdio::inherit()
            } else {
                Stdio::piped()
            };
            let (transport, stderr) = TokioChildProcess::builder(fresh)
                .stderr(stderr)
                .spawn()
                .map_err(|source| McpError::Spawn {
                    label: label.clone(),
                    source,
                })?;
            if let Some(stderr) = stderr {
                forward_stderr(label.clone(), stderr);
            }
            let pid = transport.id();
            Ok::<_, McpError>((transport, pid))
        };
        let (events, list_changes) = Events::new(&label);
        let (transport, pid) = spawn(&cmd)?;
        let service = match start(events.clone(), transport, options.lifecycle).await {
            Ok(service) => (service, pid),
            Err(error) if options.lifecycle == McpLifecycle::Auto && error.retry_legacy => {
                tracing::debug!(target: "opkit_adapters::mcp", server = %label, error = %error.message,
                    "server/discover probe failed; starting the server again with the initialize handshake");
                let (transport, pid) = spawn(&cmd)?;
                let service = start(events, transport, McpLifecycle::Legacy)
                    .await
                    .map_err(|error| error.into_mcp(&label))?;
                (service, pid)
            }
            Err(error) => return Err(error.into_mcp(&label)),
        };
        let client = Client {
            service: service.0,
            label,
            pid: service.1,
            parse_json_text: options.parse_json_text,
        };
        Self::finish(client, options, list_changes).await
    }

    /// Talks MCP to the Streamable HTTP endpoint at `url` (e.g. `http://127.0.0.1:3001/mcp`),
    /// sending [`McpOptions::headers`] and [`McpOptions::bearer_token`] with every request;
    /// then lists its tools.
    pub async fn connect_http(url: &str, options: McpOptions) -> Result<Self, McpError> {
        check_namespace(&options.namespace)?;
        let label = options.label.clone().unwrap_or_else(|| url.to_owned());
        let mut headers = HashMap::new();
        for (name, value) in &options.headers {
            let invalid = |message: String| McpError::InvalidHeader {
                name: name.clone(),
                message,
            };
            let header_name = http::HeaderName::try_from(name.as_str())
                .map_err(|error| invalid(error.to_string()))?;
            let header_value = http::HeaderValue::try_from(value.as_str())
                .map_err(|error| invalid(error.to_string()))?;
            headers.insert(header_name, header_value);
        }
        let transport = || {
            let mut config =
                StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers.clone());
            if let Some(token) = &options.bearer_token {
                config = config.auth_header(token.clone());
            }
            StreamableHttpClientTransport::from_config(config)
        };
        let (events, list_changes) = Events::new(&label);
        let service = match start(events.clone(), transport(), options.lifecycle).await {
            Ok(service) => service,
            Err(error) if options.lifecycle == McpLifecycle::Auto && error.retry_legacy => {
                tracing::debug!(target: "opkit_adapters::mcp", server = %label, error = %error.message,
                    "server/discover probe failed; connecting again with the initialize handshake");
                start(events, transport(), McpLifecycle::Legacy)
                    .await
                    .map_err(|error| error.into_mcp(&label))?
            }
            Err(error) => return Err(error.into_mcp(&label)),
        };
        let client = Client {
            service,
            label,
            pid: None,
            parse_json_text: options.parse_json_text,
        };
        Self::finish(client, options, list_changes).await
    }

    /// Lists the tools of a freshly connected client and builds the connection.
    async fn finish(
        client: Client,
        options: McpOptions,
        list_changes: watch::Receiver<u64>,
    ) -> Result<Self, McpError> {
        let client = Arc::new(client);
        client.listen_for_list_changes();
        let raw = client.list_tools().await?;
        let tools = build_tools(&options.namespace, &client.label, &raw, &HashMap::new());
        let state = Arc::new(State {
            client,
            namespace: options.namespace,
            tools: RwLock::new(tools),
            registries: Mutex::new(Vec::new()),
            refresh_lock: tokio::sync::Mutex::new(()),
            list_changes,
        });
        if options.auto_refresh {
            spawn_auto_refresh(Arc::downgrade(&state), state.list_changes.clone());
        }
        Ok(Self { state })
    }

    /// The server's label (from [`McpOptions::label`], else the command or URL).
    pub fn label(&self) -> &str {
        &self.state.client.label
    }

    /// The namespace of the imported operations.
    pub fn namespace(&self) -> &str {
        &self.state.namespace
    }

    /// The process id of a stdio server (`None` over HTTP or once it was reaped).
    pub fn server_pid(&self) -> Option<u32> {
        self.state.client.pid
    }

    /// What the server said about itself: `{protocolVersion, capabilities, serverInfo?,
    /// instructions?}` from the `initialize` or `server/discover` answer.
    pub fn server_info(&self) -> Option<Value> {
        let info = self.state.client.service.peer().peer_info()?;
        serde_json::to_value(&*info).ok()
    }

    /// The negotiated protocol revision, e.g. `"2025-11-25"` or `"2026-07-28"`.
    pub fn protocol_version(&self) -> Option<String> {
        let info = self.state.client.service.peer().peer_info()?;
        Some(info.protocol_version.to_string())
    }

    /// The specs of the imported operations, sorted by id.
    pub fn specs(&self) -> Vec<OperationSpec> {
        let mut specs: Vec<OperationSpec> =
            self.tools().into_iter().map(|tool| tool.spec).collect();
        specs.sort_by_key(OperationSpec::id);
        specs
    }

    /// The real names of the server's tools, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .tools()
            .into_iter()
            .map(|tool| tool.tool_name)
            .collect();
        names.sort();
        names
    }

    /// The real MCP tool name behind operation `operation_id` (`namespace.name`).
    pub fn tool_name(&self, operation_id: &str) -> Option<String> {
        self.tools()
            .into_iter()
            .find(|tool| tool.spec.id() == operation_id)
            .map(|tool| tool.tool_name)
    }

    /// The operation id that calls the tool named `tool_name`.
    pub fn operation_id(&self, tool_name: &str) -> Option<String> {
        self.tools()
            .into_iter()
            .find(|tool| tool.tool_name == tool_name)
            .map(|tool| tool.spec.id())
    }

    /// The spec of the operation that calls the tool named `tool_name`.
    pub fn spec_for_tool(&self, tool_name: &str) -> Option<OperationSpec> {
        self.tools()
            .into_iter()
            .find(|tool| tool.tool_name == tool_name)
            .map(|tool| tool.spec)
    }

    fn tools(&self) -> Vec<ImportedTool> {
        self.state
            .tools
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Registers one operation per tool; all or nothing. Later [`refresh`](Self::refresh)es
    /// update this registry too (the connection keeps a handle on it for that). Returns the
    /// ids of the registered operations. A taken id fails with [`McpError::Registry`]
    /// naming both operations; pick another namespace in [`McpOptions::new`].
    pub fn register_into(&self, registry: &OperationRegistry) -> Result<Vec<String>, McpError> {
        let tools = self.tools();
        let mut registered: Vec<String> = Vec::with_capacity(tools.len());
        for tool in &tools {
            let handler = tool_handler(&self.state.client, tool);
            if let Err(error) = registry.register(tool.spec.clone(), handler) {
                for id in &registered {
                    registry.unregister(id);
                }
                return Err(error.into());
            }
            registered.push(tool.spec.id());
        }
        self.state
            .registries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(registry.clone());
        Ok(registered)
    }

    /// Calls the tool named `tool_name` directly (no registry, no input validation): the
    /// envelope a registered operation would return.
    pub async fn call_tool(
        &self,
        tool_name: &str,
        arguments: Value,
        ctx: &OperationContext,
    ) -> Result<ResponseEnvelope, CallError> {
        let spec = self.spec_for_tool(tool_name);
        let output_schema = spec
            .as_ref()
            .map(|spec| &*spec.output_schema)
            .filter(|schema| !opkit::schema::is_unknown(schema));
        let wrapped = spec.as_ref().and_then(wrapped_key);
        self.state
            .client
            .call(tool_name, arguments, ctx, output_schema, wrapped)
            .await
    }

    /// Re-lists the tools and brings every registry the operations were registered into up
    /// to date: operations of vanished tools are removed, new ones added, changed ones
    /// replaced. Existing tools keep their operation names.
    pub async fn refresh(&self) -> Result<RefreshReport, McpError> {
        refresh_state(&self.state).await
    }

    /// A counter of `notifications/tools/list_changed` received so far; `changed().await`
    /// on it waits for the next one.
    pub fn tool_list_changes(&self) -> watch::Receiver<u64> {
        self.state.list_changes.clone()
    }

    /// `true` once the connection is closed (the server exited, the transport failed, or
    /// [`close`](Self::close) was called).
    pub fn is_closed(&self) -> bool {
        self.state.client.service.is_closed()
            || self.state.client.service.peer().is_transport_closed()
    }

    /// Closes the connection (a stdio server is stopped). Pending and later calls fail with
    /// `TRANSPORT_ERROR`; registered operations stay registered.
    pub fn close(&self) {
        self.state.client.service.cancellation_token().cancel();
    }
}

fn check_namespace(namespace: &str) -> Result<(), McpError> {
    if !namespace.is_empty() && namespace.split('.').all(names::is_valid_name) {
        Ok(())
    } else {
        Err(McpError::InvalidNamespace(namespace.to_owned()))
    }
}

/// Builds the imported tools from a raw `tools/list`, keeping previous operation names.
fn build_tools(
    namespace: &str,
    label: &str,
    raw: &[Value],
    previous: &HashMap<String, String>,
) -> Vec<ImportedTool> {
    let mut by_name: BTreeMap<&str, &Value> = BTreeMap::new();
    for tool in raw {
        match tools::tool_name(tool) {
            Some(name) if !by_name.contains_key(name) => {
                by_name.insert(name, tool);
            }
            Some(name) => {
                tracing::warn!(target: "opkit_adapters::mcp", server = %label, tool = %name,
                "the server lists this tool twice; the first definition is used")
            }
            None => tracing::warn!(target: "opkit_adapters::mcp", server = %label, tool = %tool,
                "skipping a tool without a name"),
        }
    }
    let assigned = names::assign(by_name.keys().copied(), previous);
    by_name
        .into_iter()
        .map(|(tool_name, tool)| {
            let spec = tool_spec(namespace, &assigned[tool_name], label, tool);
            ImportedTool {
                tool_name: tool_name.to_owned(),
                spec: usable_schemas(spec, label),
            }
        })
        .collect()
}

/// Replaces a schema the validator cannot compile by an open one (the server still checks).
fn usable_schemas(mut spec: OperationSpec, label: &str) -> OperationSpec {
    let tool = spec
        .extensions
        .get(tools::EXT_TOOL_NAME)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if let Err(error) = CompiledSchema::compile(&spec.input_schema) {
        tracing::warn!(target: "opkit_adapters::mcp", server = %label, tool = %tool, %error,
            "the tool's inputSchema does not compile; the operation accepts any object");
        let original = std::mem::replace(&mut spec.input_schema, json!({"type": "object"}).into());
        spec = spec.extension("mcp.inputSchema", original.into_value());
    }
    if !opkit::schema::is_unknown(&spec.output_schema)
        && let Err(error) = CompiledSchema::compile(&spec.output_schema)
    {
        tracing::warn!(target: "opkit_adapters::mcp", server = %label, tool = %tool, %error,
            "the tool's outputSchema does not compile; the operation's output is Unknown");
        let original = std::mem::replace(&mut spec.output_schema, Value::Bool(true).into());
        spec = spec.extension("mcp.outputSchema", original.into_value());
    }
    spec
}

/// The `structuredContent` property holding a wrapped tool's data (see `tools`).
fn wrapped_key(spec: &OperationSpec) -> Option<&str> {
    spec.extensions
        .get(tools::EXT_WRAPPED)
        .and_then(Value::as_str)
}

/// The handler of one tool's operation.
fn tool_handler(client: &Arc<Client>, tool: &ImportedTool) -> Handler {
    let client = client.clone();
    let tool_name: Arc<str> = Arc::from(tool.tool_name.as_str());
    let output_schema: Arc<Option<Value>> = Arc::new(
        Some(tool.spec.output_schema.clone().into_value())
            .filter(|schema| !opkit::schema::is_unknown(schema)),
    );
    let wrapped: Option<Arc<str>> = wrapped_key(&tool.spec).map(Arc::from);
    let operation_id: Arc<str> = Arc::from(tool.spec.id().as_str());
    Handler::unary(move |input, ctx: OperationContext| {
        let client = client.clone();
        let tool_name = tool_name.clone();
        let operation_id = operation_id.clone();
        let output_schema = output_schema.clone();
        let wrapped = wrapped.clone();
        async move {
            let mut span = CallSpan::start(SpanKind::Client, "mcp", &operation_id, &ctx);
            let ctx = span.apply(ctx);
            let calling = client.call(
                &tool_name,
                input,
                &ctx,
                output_schema.as_ref().as_ref(),
                wrapped.as_deref(),
            );
            let result = if span.is_active() {
                calling.instrument(span.span().clone()).await
            } else {
                calling.await
            };
            span.finish_with(&result);
            serde_json::to_value(result?).map_err(|error| {
                CallError::execution(format!("could not serialize the envelope: {error}"))
            })
        }
    })
}

async fn refresh_state(state: &State) -> Result<RefreshReport, McpError> {
    let _one_at_a_time = state.refresh_lock.lock().await;
    let raw = state.client.list_tools().await?;
    let old: Vec<ImportedTool> = state
        .tools
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let previous: HashMap<String, String> = old
        .iter()
        .map(|tool| (tool.tool_name.clone(), tool.spec.name.clone()))
        .collect();
    let new = build_tools(&state.namespace, &state.client.label, &raw, &previous);
    let old_by_id: HashMap<String, &ImportedTool> =
        old.iter().map(|tool| (tool.spec.id(), tool)).collect();
    let new_by_id: HashMap<String, &ImportedTool> =
        new.iter().map(|tool| (tool.spec.id(), tool)).collect();
    let mut report = RefreshReport::default();
    for id in old_by_id.keys() {
        if !new_by_id.contains_key(id) {
            report.removed.push(id.clone());
        }
    }
    for (id, tool) in &new_by_id {
        match old_by_id.get(id) {
            None => report.added.push(id.clone()),
            Some(before) if before.spec != tool.spec => report.changed.push(id.clone()),
            Some(_) => {}
        }
    }
    report.added.sort();
    report.removed.sort();
    report.changed.sort();
    let registries = state
        .registries
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    for registry in &registries {
        for id in report.removed.iter().chain(&report.changed) {
            registry.unregister(id);
        }
        for id in report.added.iter().chain(&report.changed) {
            let tool = new_by_id[id];
            if let Err(error) =
                registry.register(tool.spec.clone(), tool_handler(&state.client, tool))
            {
                tracing::warn!(target: "opkit_adapters::mcp", server = %state.client.label, %error,
                    "refresh could not register an operation");
            }
        }
    }
    *state
        .tools
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = new;
    Ok(report)
}

/// Refreshes on every `list_changed` until the connection is gone.
fn spawn_auto_refresh(state: Weak<State>, mut changes: watch::Receiver<u64>) {
    tokio::spawn(async move {
        // Ends when the client (the sender) is dropped or the connection state is gone.
        while changes.changed().await.is_ok() {
            let Some(state) = state.upgrade() else { break };
            if let Err(error) = refresh_state(&state).await {
                tracing::warn!(target: "opkit_adapters::mcp", server = %state.client.label, %error,
                    "refresh after notifications/tools/list_changed failed");
            }
        }
    });
}

/// Logs a stdio server's stderr line by line.
fn forward_stderr(label: String, stderr: tokio::process::ChildStderr) {
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        // Ends at EOF, when the child exits.
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(target: "opkit_adapters::mcp", server = %label, "stderr: {line}");
        }
    });
}

// ----- the rmcp client --------------------------------------------------------------------

/// The client's notification handler: counts `list_changed`, hands progress and log
/// messages to the calls that listen (see [`Events::listen`]), logs the rest.
#[derive(Clone)]
struct Events {
    label: Arc<str>,
    list_changed: Arc<watch::Sender<u64>>,
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
struct Listening {
    listeners: Arc<Mutex<HashMap<String, OperationContext>>>,
    token: String,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.listeners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.token);
    }
}

impl Events {
    fn new(label: &str) -> (Self, watch::Receiver<u64>) {
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
    fn listen(&self, ctx: &OperationContext, token: &ProgressToken) -> Listening {
        let token = token_key(token);
        self.listeners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(token.clone(), ctx.clone());
        Listening {
            listeners: self.listeners.clone(),
            token,
        }
    }

    fn listeners(&self) -> Vec<OperationContext> {
        self.listeners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
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
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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

/// A failed start, and whether a legacy retry on a fresh transport may help.
struct StartError {
    message: String,
    retry_legacy: bool,
}

impl StartError {
    fn into_mcp(self, label: &str) -> McpError {
        McpError::Connect {
            label: label.to_owned(),
            message: self.message,
        }
    }
}

/// Runs the lifecycle handshake on `transport`.
async fn start<T, E, A>(
    events: Events,
    transport: T,
    lifecycle: McpLifecycle,
) -> Result<RunningService<RoleClient, Events>, StartError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let mode = match lifecycle {
        McpLifecycle::Legacy => ClientLifecycleMode::Initialize,
        McpLifecycle::Modern => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        McpLifecycle::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        },
    };
    events
        .serve_with_lifecycle(transport, mode)
        .await
        .map_err(|error| {
            use rmcp::service::ClientInitializeError as Init;
            // Errors that say nothing about the era (the server is unreachable, the start was
            // cancelled, the server needs authorization) are not retried.
            let era_related = !matches!(error, Init::Cancelled | Init::ConnectionClosed(_))
                && !error.is_authorization_required();
            StartError {
                message: error.to_string(),
                retry_legacy: era_related,
            }
        })
}

/// The rmcp client of one connection; shared by the connection and its operations.
struct Client {
    service: RunningService<RoleClient, Events>,
    label: String,
    pid: Option<u32>,
    parse_json_text: bool,
}

impl Client {
    fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// In the 2026-07-28 era a server sends `tools/list_changed` only on a
    /// `subscriptions/listen` stream: open one (when the server announces `listChanged`) and
    /// count its notifications like the legacy ones. Legacy servers send them unasked.
    fn listen_for_list_changes(&self) {
        let Some(info) = self.peer().peer_info() else {
            return;
        };
        let announces = info
            .capabilities
            .tools
            .as_ref()
            .and_then(|tools| tools.list_changed)
            .unwrap_or(false);
        if info.protocol_version.has_initialize() || !announces {
            return;
        }
        let peer = self.peer().clone();
        let counter = self.service.service().list_changed.clone();
        let label = self.label.clone();
        tokio::spawn(async move {
            let filter = SubscriptionFilter::builder().tools_list_changed().build();
            let mut subscription = match peer.listen(filter).await {
                Ok(subscription) => subscription,
                Err(error) => {
                    tracing::debug!(target: "opkit_adapters::mcp", server = %label, %error,
                        "subscriptions/listen failed; tool list changes will not be noticed");
                    return;
                }
            };
            // Ends with the subscription, at the latest when the connection closes.
            while let Ok(Some(notification)) = subscription.next().await {
                if matches!(
                    notification,
                    ServerNotification::ToolListChangedNotification(_)
                ) {
                    tracing::debug!(target: "opkit_adapters::mcp", server = %label, "tools/list_changed (listen)");
                    counter.send_modify(|count| *count += 1);
                }
            }
        });
    }

    /// Every tool of the server as raw JSON, following `nextCursor`.
    async fn list_tools(&self) -> Result<Vec<Value>, McpError> {
        let failed = |message: String| McpError::Request {
            label: self.label.clone(),
            message,
        };
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen: HashSet<String> = HashSet::new();
        for _page in 0..MAX_LIST_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
            let result = self
                .peer()
                .send_request(request)
                .await
                .map_err(|error| failed(format!("tools/list: {error}")))?;
            let page = match result {
                ServerResult::ListToolsResult(result) => serde_json::to_value(result)
                    .map_err(|error| failed(format!("tools/list: {error}")))?,
                ServerResult::CustomResult(CustomResult(raw)) => raw,
                other => {
                    return Err(failed(format!(
                        "tools/list: unexpected answer {}",
                        serde_json::to_string(&other).unwrap_or_default()
                    )));
                }
            };
            let Some(listed) = page.get("tools").and_then(Value::as_array) else {
                return Err(failed(format!("tools/list: no `tools` array in {page}")));
            };
            tools.extend(listed.iter().cloned());
            match page.get("nextCursor") {
                Some(Value::String(next)) => {
                    if !seen.insert(next.clone()) {
                        return Err(failed(format!(
                            "tools/list: the server repeated the cursor {next:?}"
                        )));
                    }
                    cursor = Some(next.clone());
                }
                _ => return Ok(tools),
            }
        }
        Err(failed(format!(
            "tools/list: more than {MAX_LIST_PAGES} pages"
        )))
    }

    /// Calls one tool and builds its envelope (see the module docs for errors).
    async fn call(
        &self,
        tool: &str,
        arguments: Value,
        ctx: &OperationContext,
        output_schema: Option<&Value>,
        wrapped: Option<&str>,
    ) -> Result<ResponseEnvelope, CallError> {
        let arguments = match arguments {
            Value::Object(arguments) => Some(arguments),
            Value::Null => None,
            other => {
                return Err(CallError::new(
                    ErrorCode::ValidationError,
                    format!(
                        "the arguments of MCP tool `{tool}` must be a JSON object, found {other}"
                    ),
                ));
            }
        };
        let bounds = ctx.bounds();
        bounds.check().map_err(|stop| self.stopped(tool, stop))?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        if let Some(trace) = ctx.trace() {
            // W3C trace context in `_meta` (the MCP convention, SEP-414).
            let mut meta = rmcp::model::MetaObject::new();
            meta.set_traceparent(trace.traceparent());
            if let Some(state) = trace.tracestate() {
                meta.set_tracestate(state);
            }
            params.meta = Some(rmcp::model::RequestMetaObject(meta));
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = self
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|error| self.service_error(tool, error))?;
        // A caller that listens to progress and logs gets the server's (see `Events`); rmcp
        // gives every request a progress token.
        let _listening = ctx
            .has_reporter()
            .then(|| self.service.service().listen(ctx, &handle.progress_token));
        // From here on, leaving early (cancellation, deadline, the future dropped) tells the server.
        let mut guard = CancelOnDrop {
            peer: self.peer().clone(),
            id: Some(handle.id.clone()),
        };
        let response = bounds
            .run(handle.await_response())
            .await
            .map_err(|stop| self.stopped(tool, stop))?;
        guard.disarm();
        let raw = match response.map_err(|error| self.service_error(tool, error))? {
            ServerResult::CallToolResult(result) => serde_json::to_value(result)
                .map_err(|error| CallError::execution(format!("MCP tool `{tool}`: {error}")))?,
            ServerResult::CustomResult(CustomResult(raw)) => raw,
            ServerResult::EmptyResult(_) => json!({}),
            ServerResult::InputRequiredResult(_) => {
                return Err(CallError::execution(format!(
                    "MCP tool `{tool}` asked for more input (`input_required`), which the MCP import does not provide"
                )));
            }
            ServerResult::CreateTaskResult(_) => {
                return Err(CallError::execution(format!(
                    "MCP tool `{tool}` answered with a task handle; tasks are not supported"
                )));
            }
            other => {
                return Err(CallError::execution(format!(
                    "MCP tool `{tool}`: the server's answer is not a tool result: {}",
                    serde_json::to_string(&other).unwrap_or_default()
                )));
            }
        };
        if !raw.is_object() {
            return Err(CallError::execution(format!(
                "MCP tool `{tool}`: the server's answer is not a tool result: {raw}"
            )));
        }
        if let Some(kind) = raw.get("resultType").and_then(Value::as_str)
            && kind != "complete"
        {
            return Err(CallError::execution(format!(
                "MCP tool `{tool}`: unsupported result type {kind:?}"
            )));
        }
        Ok(envelope_of(
            &raw,
            output_schema,
            self.parse_json_text,
            wrapped,
        ))
    }

    /// The error for a call its [`Bounds`](opkit::Bounds) stopped.
    fn stopped(&self, tool: &str, stop: Interrupted) -> CallError {
        let label = &self.label;
        match stop {
            Interrupted::Cancelled => CallError::aborted(format!(
                "the call of MCP tool `{tool}` on `{label}` was cancelled"
            )),
            Interrupted::TimedOut => CallError::timeout(format!(
                "MCP tool `{tool}` on `{label}` did not answer before the deadline"
            )),
        }
    }

    fn service_error(&self, tool: &str, error: ServiceError) -> CallError {
        let label = &self.label;
        match error {
            ServiceError::McpError(error) => {
                let mut details = json!({"code": error.code.0, "tool": tool});
                if let Some(data) = error.data {
                    details["data"] = data;
                }
                CallError::execution(error.message.into_owned()).with_details(details)
            }
            ServiceError::TransportClosed => CallError::transport(format!(
                "the connection to MCP server `{label}` is closed (calling `{tool}`)"
            )),
            ServiceError::TransportSend(error) => CallError::transport(format!(
                "could not send the call of `{tool}` to MCP server `{label}`: {error}"
            )),
            ServiceError::Cancelled { reason } => CallError::aborted(format!(
                "the call of `{tool}` on MCP server `{label}` was cancelled: {}",
                reason.unwrap_or_default()
            )),
            ServiceError::Timeout { timeout } => CallError::timeout(format!(
                "MCP tool `{tool}` on `{label}` did not answer within {timeout:?}"
            )),
            other => CallError::execution(format!(
                "MCP tool `{tool}` on `{label}`: protocol error: {other}"
            )),
        }
    }
}

/// Sends `notifications/cancelled` for a request when dropped before [`disarm`](Self::disarm).
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let notice = CancelledNotificationParam::new(
                Some(id),
                Some("the caller stopped waiting (cancelled or past its deadline)".to_owned()),
            );
            if let Err(error) = peer.notify_cancelled(notice).await {
                tracing::debug!(target: "opkit_adapters::mcp", %error, "could not send notifications/cancelled");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tools: &[ImportedTool]) -> Vec<(String, String)> {
        tools
            .iter()
            .map(|tool| (tool.tool_name.clone(), tool.spec.id()))
            .collect()
    }

    #[test]
    fn builds_one_spec_per_named_tool() {
        let raw = vec![
            json!({"name": "get-sum", "inputSchema": {"type": "object"}}),
            json!({"name": "get-sum", "inputSchema": {"type": "object", "title": "again"}}),
            json!({"inputSchema": {"type": "object"}}),
            json!({"name": "echo", "inputSchema": {"type": "object"}}),
        ];
        let tools = build_tools("ns", "server", &raw, &HashMap::new());
        assert_eq!(
            names(&tools),
            [
                ("echo".to_owned(), "ns.echo".to_owned()),
                ("get-sum".to_owned(), "ns.get_sum".to_owned())
            ]
        );
        // The first of two definitions with one name wins.
        assert_eq!(tools[1].spec.input_schema, json!({"type": "object"}));
        assert_eq!(
            tools[1].spec.origin.as_deref(),
            Some("mcp server tool get-sum")
        );
    }

    #[test]
    fn keeps_operation_names_across_a_refresh() {
        let first = build_tools(
            "ns",
            "s",
            &[json!({"name": "a.b", "inputSchema": {"type": "object"}})],
            &HashMap::new(),
        );
        let previous: HashMap<String, String> = first
            .iter()
            .map(|tool| (tool.tool_name.clone(), tool.spec.name.clone()))
            .collect();
        let second = build_tools(
            "ns",
            "s",
            &[
                json!({"name": "a-b", "inputSchema": {"type": "object"}}),
                json!({"name": "a.b", "inputSchema": {"type": "object"}}),
            ],
            &previous,
        );
        assert_eq!(
            names(&second),
            [
                ("a-b".to_owned(), "ns.a_b_2".to_owned()),
                ("a.b".to_owned(), "ns.a_b".to_owned())
            ]
        );
    }

    #[test]
    fn schemas_that_do_not_compile_are_opened_up_and_kept() {
        let bad_input = json!({"type": "object", "properties": {"n": {"type": 5}}});
        let bad_output = json!({"type": "nonsense"});
        let tools = build_tools(
            "ns",
            "s",
            &[json!({"name": "t", "inputSchema": bad_input, "outputSchema": bad_output})],
            &HashMap::new(),
        );
        let spec = &tools[0].spec;
        assert_eq!(spec.input_schema, json!({"type": "object"}));
        assert!(spec.has_unknown_output());
        assert_eq!(spec.extensions["mcp.inputSchema"], bad_input);
        assert_eq!(spec.extensions["mcp.outputSchema"], bad_output);
        // And the result registers.
        let registry = OperationRegistry::new();
        registry
            .register(
                spec.clone(),
                Handler::unary(|_, _| async { Ok(Value::Null) }),
            )
            .unwrap();
    }

    #[test]
    fn namespaces_are_checked() {
        assert!(check_namespace("github").is_ok());
        assert!(check_namespace("org.github_2").is_ok());
        for bad in ["", "a-b", "a..b", "9x", "a.", "with space"] {
            assert!(check_namespace(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn options_debug_redacts_secrets() {
        let options = McpOptions::new("ns")
            .bearer_token("s3cret")
            .header("X-Api-Key", "k3y");
        let debug = format!("{options:?}");
        assert!(
            !debug.contains("s3cret") && !debug.contains("k3y"),
            "{debug}"
        );
        assert!(debug.contains("X-Api-Key"));
    }
}
