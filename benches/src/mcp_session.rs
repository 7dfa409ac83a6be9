//! An MCP server on an in-memory duplex, its session as every legacy client's calls find
//! it: the client's `initialize` taken (a 2025-11-25 client) and its `initialized`
//! notification handled, so the benches call a server in the state a real session serves
//! its tool calls in.

use rmcp::ServerHandler;
use rmcp::model::{InitializeRequestParams, ProtocolVersion};
use rmcp::service::{RoleServer, RunningService, serve_directly};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, DuplexStream};

/// `service` serving an initialized 2025-11-25 session, with the client's end of its
/// transport (keep it: the session ends when it is dropped). Call it inside the runtime
/// that is to run the service.
pub async fn initialized<S: ServerHandler>(
    service: S,
) -> (RunningService<RoleServer, S>, DuplexStream) {
    let (server, mut client) = tokio::io::duplex(1 << 16);
    let info =
        InitializeRequestParams::default().with_protocol_version(ProtocolVersion::V_2025_11_25);
    let running = serve_directly(service, server, Some(info));
    client
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .expect("the notification is written");
    // The service handles it in its own task: give that task the runtime a while (nothing
    // outside the server shows when it is done).
    tokio::time::sleep(Duration::from_millis(50)).await;
    (running, client)
}
