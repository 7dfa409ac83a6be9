//! MCP import against `adapters/peers/mcp/late_stream_server.py`, a Streamable HTTP server
//! with sessions that opens a session's `GET` stream only after a delay and asks its tool's
//! question there (dropping it when the stream is not open, as the TypeScript SDK's server
//! does): a call made as soon as `connect_http` returned is answered only if the connection
//! waited for the stream.
#![cfg(feature = "mcp")]

use crate::mcp_support;

use futures::future::BoxFuture;
use mcp_support::*;
use opkit::elicit::{ElicitAction, ElicitRequest, ElicitResponse, Elicitor};
use opkit::{CallError, OperationContext};
use opkit_adapters::mcp::{McpConnection, McpOptions};
use opkit_testkit::peers::PeerProcess;
use opkit_testkit::ports::accepts;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the server holds its stream's response headers back.
const STREAM_DELAY: Duration = Duration::from_millis(1500);

/// The caller's user: accepts with the form's defaults.
struct Defaults;

impl Elicitor for Defaults {
    fn elicit(
        &self,
        request: ElicitRequest,
    ) -> BoxFuture<'static, Result<ElicitResponse, CallError>> {
        let name = request.schema["properties"]["name"]["default"].clone();
        Box::pin(async move {
            Ok(ElicitResponse::new(
                ElicitAction::Accept,
                Some(json!({ "name": name })),
            ))
        })
    }
}

fn start_server() -> PeerProcess {
    let port = free_port();
    let mut command = std::process::Command::new(python());
    command
        .arg(peer_file("late_stream_server.py"))
        .arg(port.to_string())
        .arg(STREAM_DELAY.as_secs_f64().to_string());
    PeerProcess::start(command, port, "late_stream_server.py", accepts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_on_the_session_stream_about_the_first_call_is_answered() {
    let server = start_server();
    let started = Instant::now();
    let connection = McpConnection::connect_http(&server.mcp_url(), McpOptions::new("late"))
        .await
        .expect("connect to late_stream_server.py");
    // The connection waited for the stream (the handshake and listings take milliseconds).
    assert!(started.elapsed() >= STREAM_DELAY, "{:?}", started.elapsed());
    assert_ne!(connection.protocol_version().as_deref(), Some("2026-07-28"));

    let registry = registry_of(&connection);
    let ctx = OperationContext::new().with_elicitor(Arc::new(Defaults));
    let envelope = tokio::time::timeout(
        Duration::from_secs(20),
        registry.execute("late.ask", json!({}), &ctx),
    )
    .await
    .expect("the call ends")
    .expect("the call is served");
    assert!(!envelope.is_error(), "{envelope:?}");
    assert_eq!(
        envelope.data,
        json!({"action": "accept", "content": {"name": "Ada"}})
    );
    connection.close();
}
