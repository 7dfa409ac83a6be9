//! [`McpConnection`]: one MCP server, its tools as operations, kept up to date.
//!
//! One job per file: `options` and `error` are what users name; this file is the
//! connection facade; `imported` turns `tools/list` into operations, `refresh` keeps them
//! current; `process`, `stderr` and `handshake` start a server; `client`, `events` (the
//! rmcp client handler), `call` and `cancel` talk to it.

mod answers;
mod call;
mod cancel;
mod catalog;
mod client;
mod error;
mod events;
mod handshake;
mod http_client;
mod imported;
#[cfg(feature = "oauth-client")]
mod oauth;
mod options;
mod process;
mod refresh;
mod session_stream;
mod skills;
mod stderr;
mod task;

pub use error::McpError;
pub use options::{McpLifecycle, McpOptions};
pub use refresh::RefreshReport;
pub use skills::{LoadedSkill, SkillError, SkillFile};

use crate::mcp::names;
use client::Client;
use events::Events;
use imported::{ImportedTool, build_tools, tool_handler};
use opkit::{CallError, OperationContext, OperationRegistry, OperationSpec, ResponseEnvelope};
use parking_lot::{Mutex, RwLock};
use refresh::{refresh_state, spawn_auto_refresh};
use rmcp::RoleClient;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig,
};
use serde_json::Value;
use session_stream::{SessionStream, Watched};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fmt;
use std::sync::Arc;
use tokio::sync::watch;

/// A live connection to one MCP server whose tools are imported as operations.
///
/// Cloning is cheap; clones share the connection. The server stays connected while the
/// connection or any operation registered from it is alive; [`McpConnection::close`] ends it
/// at once (later calls fail with `TRANSPORT_ERROR`). See the [module docs](crate::mcp).
#[derive(Clone)]
pub struct McpConnection {
    state: Arc<State>,
}

struct State {
    client: Arc<Client>,
    namespace: String,
    tools: RwLock<Vec<ImportedTool>>,
    /// The server's resources, templates and prompts, listed when connecting and on each
    /// refresh.
    extras: RwLock<Vec<catalog::Imported>>,
    registries: Mutex<Vec<OperationRegistry>>,
    refresh_lock: tokio::sync::Mutex<()>,
    list_changes: watch::Receiver<u64>,
    /// Who may call the imported operations (applied on every listing).
    access: crate::ImportAccess,
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
        let (events, list_changes) = Events::new(&label);
        let (service, pid) = handshake::connect(
            events,
            options.lifecycle,
            &label,
            "starting the server again",
            || process::spawn(&cmd, &label, options.inherit_stderr),
        )
        .await?;
        let client = Client {
            service,
            label,
            pid,
            parse_json_text: options.parse_json_text,
        };
        Self::finish(client, options, list_changes).await
    }

    /// Talks MCP to the Streamable HTTP endpoint at `url` (e.g. `http://127.0.0.1:3001/mcp`),
    /// sending [`McpOptions::headers`] and [`McpOptions::bearer_token`] with every request;
    /// then lists its tools.
    ///
    /// Requests share kept-alive connections (a call does not open one of its own). A redirect
    /// is followed only to the same origin and only when it keeps the request's method and
    /// body (`307`, `308`), at most 10 in a row; any other is the request's answer.
    ///
    /// When the handshake gives a session, it returns once the session's own event stream is
    /// open (or the server refused or failed it), waiting at most 5 s for it: what the
    /// server sends on that stream about the first call (a question for its caller, say)
    /// has somewhere to go.
    pub async fn connect_http(url: &str, options: McpOptions) -> Result<Self, McpError> {
        check_namespace(&options.namespace)?;
        let label = options.label.clone().unwrap_or_else(|| url.to_owned());
        let headers = http_headers(&options.headers)?;
        let config = || {
            let mut config =
                StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers.clone());
            if let Some(token) = &options.bearer_token {
                config = config.auth_header(token.clone());
            }
            config
        };
        let (events, list_changes) = Events::new(&label);
        #[cfg(feature = "oauth-client")]
        if let Some(tokens) = Self::tokens(url, &options) {
            let client = oauth::TokenClient {
                http: http_client::client(),
                tokens,
            };
            let transport = || Ok(watched(client.clone(), config()));
            let (service, stream) = handshake::connect(
                events,
                options.lifecycle,
                &label,
                "connecting again",
                transport,
            )
            .await?;
            return Self::finish_http(service, label, options, list_changes, &stream).await;
        }
        let http = http_client::client();
        let transport = || Ok(watched(http.clone(), config()));
        let (service, stream) = handshake::connect(
            events,
            options.lifecycle,
            &label,
            "connecting again",
            transport,
        )
        .await?;
        Self::finish_http(service, label, options, list_changes, &stream).await
    }

    /// [`finish`](Self::finish) for a Streamable HTTP client, which is ready once its
    /// session's stream is (see [`SessionStream::ready`]).
    async fn finish_http(
        service: RunningService<RoleClient, Events>,
        label: String,
        options: McpOptions,
        list_changes: watch::Receiver<u64>,
        stream: &SessionStream,
    ) -> Result<Self, McpError> {
        let client = Client {
            service,
            label,
            pid: None,
            parse_json_text: options.parse_json_text,
        };
        let connection = Self::finish(client, options, list_changes).await?;
        stream.ready(connection.label()).await;
        Ok(connection)
    }

    /// Where the access tokens of a connection to `url` come from, when it signs in by
    /// itself: client credentials, else the authorization-code flow.
    #[cfg(feature = "oauth-client")]
    fn tokens(url: &str, options: &McpOptions) -> Option<Arc<dyn oauth::Tokens>> {
        if let Some(credentials) = &options.oauth {
            return Some(Arc::new(oauth::Credentials {
                credentials: credentials.clone(),
                resource: url.to_owned(),
            }));
        }
        let sign_in = options.sign_in.as_ref()?;
        match crate::oauth::client::sign_in::SignIn::new(sign_in.clone(), url) {
            Ok(sign_in) => Some(Arc::new(sign_in)),
            Err(error) => {
                tracing::warn!(target: "opkit_adapters::mcp", %error, "no DPoP key: signing in without DPoP");
                let mut plain = (**sign_in).clone();
                plain.dpop = false;
                crate::oauth::client::sign_in::SignIn::new(Arc::new(plain), url)
                    .ok()
                    .map(|sign_in| Arc::new(sign_in) as Arc<dyn oauth::Tokens>)
            }
        }
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
        let mut tools = build_tools(&options.namespace, &client.label, &raw, &HashMap::new());
        let mut extras = match catalog::list(&client, &options.namespace).await {
            Ok(extras) => extras,
            Err(error) => {
                tracing::warn!(target: "opkit_adapters::mcp", server = %client.label, %error,
                    "the server's resources or prompts could not be listed; only its tools are imported");
                Vec::new()
            }
        };
        imported::govern(
            &options.namespace,
            &options.access,
            tools
                .iter_mut()
                .map(|tool| &mut tool.spec)
                .chain(extras.iter_mut().map(|item| &mut item.spec)),
        );
        let state = Arc::new(State {
            client,
            namespace: options.namespace,
            tools: RwLock::new(tools),
            extras: RwLock::new(extras),
            registries: Mutex::new(Vec::new()),
            refresh_lock: tokio::sync::Mutex::new(()),
            list_changes,
            access: options.access,
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

    /// The specs of the imported operations (tools, then the resources, resource templates
    /// and prompts), sorted by id.
    pub fn specs(&self) -> Vec<OperationSpec> {
        let mut specs: Vec<OperationSpec> = self
            .tools()
            .into_iter()
            .map(|tool| tool.spec)
            .chain(
                self.state
                    .extras
                    .read()
                    .iter()
                    .map(|item| item.spec.clone()),
            )
            .collect();
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
        self.find_tool(
            |tool| tool.spec.id() == operation_id,
            |tool| tool.tool_name.clone(),
        )
    }

    /// The operation id that calls the tool named `tool_name`.
    pub fn operation_id(&self, tool_name: &str) -> Option<String> {
        self.find_tool(|tool| tool.tool_name == tool_name, |tool| tool.spec.id())
    }

    /// The spec of the operation that calls the tool named `tool_name`.
    pub fn spec_for_tool(&self, tool_name: &str) -> Option<OperationSpec> {
        self.find_tool(|tool| tool.tool_name == tool_name, |tool| tool.spec.clone())
    }

    fn tools(&self) -> Vec<ImportedTool> {
        self.state.tools.read().clone()
    }

    /// `read` of the first tool `which` picks, under the tools' lock: no other tool is copied.
    fn find_tool<R>(
        &self,
        which: impl Fn(&ImportedTool) -> bool,
        read: impl FnOnce(&ImportedTool) -> R,
    ) -> Option<R> {
        self.state
            .tools
            .read()
            .iter()
            .find(|tool| which(tool))
            .map(read)
    }

    /// Registers one operation per tool; all or nothing. Later [`refresh`](Self::refresh)es
    /// update this registry too (the connection keeps a handle on it for that). Returns the
    /// ids of the registered operations. A taken id fails with [`McpError::Registry`]
    /// naming both operations; pick another namespace in [`McpOptions::new`].
    pub fn register_into(&self, registry: &OperationRegistry) -> Result<Vec<String>, McpError> {
        let tools = self.tools();
        let extras = self.state.extras.read().clone();
        let client = &self.state.client;
        let operations = tools
            .iter()
            .map(|tool| (tool.spec.clone(), tool_handler(client, tool)))
            .chain(
                extras
                    .iter()
                    .map(|item| (item.spec.clone(), catalog::handler(client, item))),
            );
        let mut registered: Vec<String> = Vec::with_capacity(tools.len() + extras.len());
        for (spec, handler) in operations {
            let id = spec.id();
            if let Err(error) = registry.register(spec, handler) {
                for id in &registered {
                    registry.unregister(id);
                }
                return Err(error.into());
            }
            registered.push(id);
        }
        self.state.registries.lock().push(registry.clone());
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
        // What the call reads of the tool, two `Arc`s (the tools may be refreshed meanwhile).
        let (output_schema, wrapped) = self
            .find_tool(
                |tool| tool.tool_name == tool_name,
                |tool| (tool.output_schema.clone(), tool.wrapped.clone()),
            )
            .unwrap_or_default();
        self.state
            .client
            .call(
                tool_name,
                arguments,
                ctx,
                output_schema.as_ref().as_ref(),
                wrapped.as_deref(),
            )
            .await
    }

    /// Re-lists the tools, resources, resource templates and prompts and brings every
    /// registry the operations were registered into up to date: operations of vanished ones
    /// are removed, new ones added, changed ones replaced. Existing tools keep their
    /// operation names. When the resources or prompts cannot be listed (a warning), their
    /// operations stay as they were.
    pub async fn refresh(&self) -> Result<RefreshReport, McpError> {
        refresh_state(&self.state).await
    }

    /// A counter of the `list_changed` notifications (of tools, resources and prompts)
    /// received so far; `changed().await` on it waits for the next one.
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

/// A Streamable HTTP transport on `client`, and what it will learn of its session's stream.
fn watched<C: StreamableHttpClient + Sync>(
    client: C,
    config: StreamableHttpClientTransportConfig,
) -> (
    StreamableHttpClientTransport<Watched<C>>,
    Arc<SessionStream>,
) {
    let stream = SessionStream::new();
    let client = Watched {
        client,
        stream: stream.clone(),
    };
    (
        StreamableHttpClientTransport::with_client(client, config),
        stream,
    )
}

/// The options' headers as HTTP headers.
fn http_headers(
    headers: &[(String, String)],
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, McpError> {
    let mut out = HashMap::new();
    for (name, value) in headers {
        let invalid = |message: String| McpError::InvalidHeader {
            name: name.clone(),
            message,
        };
        let header_name = http::HeaderName::try_from(name.as_str())
            .map_err(|error| invalid(error.to_string()))?;
        let header_value = http::HeaderValue::try_from(value.as_str())
            .map_err(|error| invalid(error.to_string()))?;
        out.insert(header_name, header_value);
    }
    Ok(out)
}

fn check_namespace(namespace: &str) -> Result<(), McpError> {
    if !namespace.is_empty() && namespace.split('.').all(names::is_valid_name) {
        Ok(())
    } else {
        Err(McpError::InvalidNamespace(namespace.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_checked() {
        assert!(check_namespace("github").is_ok());
        assert!(check_namespace("org.github_2").is_ok());
        for bad in ["", "a-b", "a..b", "9x", "a.", "with space"] {
            assert!(check_namespace(bad).is_err(), "{bad:?}");
        }
    }
}
