//! The lifecycle handshake (`initialize` or `server/discover`) on a fresh transport, and
//! the `Auto` lifecycle's retry with `initialize` on a new one.

use super::error::McpError;
use super::events::Events;
use super::options::McpLifecycle;
use rmcp::model::ProtocolVersion;
use rmcp::service::RunningService;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};

/// A failed start, and whether a legacy retry on a fresh transport may help.
pub(super) struct StartError {
    pub message: String,
    pub retry_legacy: bool,
}

impl StartError {
    pub(super) fn into_mcp(self, label: &str) -> McpError {
        McpError::Connect {
            label: label.to_owned(),
            message: self.message,
        }
    }
}

/// Runs the lifecycle handshake on `transport`.
pub(super) async fn start<T, E, A>(
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

/// Starts the client on a transport made by `transport`; under [`McpLifecycle::Auto`], a
/// failed `server/discover` probe is retried with the `initialize` handshake on a fresh
/// transport (`again` says what that means, for the log). Returns the running service and
/// what `transport` gave beside the transport (a stdio server's pid).
pub(super) async fn connect<T, E, A, X>(
    events: Events,
    lifecycle: McpLifecycle,
    label: &str,
    again: &str,
    mut transport: impl FnMut() -> Result<(T, X), McpError>,
) -> Result<(RunningService<RoleClient, Events>, X), McpError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let (first, extra) = transport()?;
    match start(events.clone(), first, lifecycle).await {
        Ok(service) => Ok((service, extra)),
        Err(error) if lifecycle == McpLifecycle::Auto && error.retry_legacy => {
            tracing::debug!(target: "opkit_adapters::mcp", server = %label, error = %error.message,
                "server/discover probe failed; {again} with the initialize handshake");
            let (fresh, extra) = transport()?;
            let service = start(events, fresh, McpLifecycle::Legacy)
                .await
                .map_err(|error| error.into_mcp(label))?;
            Ok((service, extra))
        }
        Err(error) => Err(error.into_mcp(label)),
    }
}
