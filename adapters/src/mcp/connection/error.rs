//! Errors: [`McpError`] for connecting, listing and importing, and the mapping of a
//! failed or stopped tool call to the [`CallError`] its caller sees.

use opkit::{CallError, Interrupted, RegistryError};
use rmcp::ServiceError;
use serde_json::json;

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

/// The error for the call of `tool` on the server `label` that its
/// [`Bounds`](opkit::Bounds) stopped.
pub(super) fn stopped(label: &str, tool: &str, stop: Interrupted) -> CallError {
    match stop {
        Interrupted::Cancelled => CallError::aborted(format!(
            "the call of MCP tool `{tool}` on `{label}` was cancelled"
        )),
        Interrupted::TimedOut => CallError::timeout(format!(
            "MCP tool `{tool}` on `{label}` did not answer before the deadline"
        )),
    }
}

/// The error for the call of `tool` on the server `label` that rmcp failed.
pub(super) fn service_error(label: &str, tool: &str, error: ServiceError) -> CallError {
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
