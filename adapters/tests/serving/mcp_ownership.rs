//! MCP sessions and tasks belong to whoever opened them, and sessions are bounded, tried as
//! an attacker would over raw Streamable HTTP and rmcp's client:
//!
//! - a second identity (or an anonymous caller) presenting Alice's `mcp-session-id` gets the
//!   `404` of an unknown session, for a call and for `DELETE`, and Alice's session goes on;
//!   an anonymous session stays anonymous (a token on it gets `404`);
//! - a second identity cannot read, answer or cancel Alice's task (`-32602`, as for an
//!   unknown task), and Alice still can;
//! - one anonymous client opening sessions is refused past its bound with `503` and an error
//!   naming it, the server's memory stays flat while it keeps trying, and an idle session
//!   expires and gives its place back.
#![cfg(all(feature = "mcp-server", feature = "mcp"))]

use crate::serve_support::{Served, parse_sse, serve};
use opkit::prelude::*;
use opkit_adapters::http_server::StaticTokens;
use opkit_adapters::mcp_server::{McpServer, SessionLimits};
use serde_json::{Value, json};
use std::time::Duration;

/// Who is calling.
#[operation(namespace = "own")]
async fn whoami(ctx: &OperationContext) -> String {
    ctx.identity()
        .map_or_else(|| "anonymous".to_owned(), |identity| identity.id.clone())
}

/// Waits until cancelled: a task.
#[operation(namespace = "own", mutation, mcp(task))]
async fn linger(ctx: &OperationContext) -> Result<String, CallError> {
    if let Some(token) = ctx.cancellation() {
        token.cancelled().await;
    }
    Err(CallError::aborted("cancelled"))
}

fn tokens() -> StaticTokens {
    StaticTokens::new()
        .with("alice-token", Identity::new("alice"))
        .with("bob-token", Identity::new("bob"))
}

async fn server(limits: SessionLimits) -> Served {
    let registry = OperationRegistry::new();
    registry.register_typed::<whoami>().unwrap();
    registry.register_typed::<linger>().unwrap();
    let server = McpServer::new(registry)
        .identity_resolver(tokens())
        .session_limits(limits);
    serve(axum::Router::new().nest("/mcp", server.router())).await
}

/// One raw Streamable HTTP exchange: the status, the session id answered, the JSON-RPC
/// message (from JSON or the SSE body) or the text.
async fn send(
    served: &Served,
    method: reqwest::Method,
    token: Option<&str>,
    session: Option<&str>,
    body: Option<Value>,
) -> (u16, Option<String>, Value) {
    static CLIENT: std::sync::LazyLock<reqwest::Client> =
        std::sync::LazyLock::new(reqwest::Client::new);
    let mut request = CLIENT
        .request(method, served.url("/mcp"))
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("mcp-session-id")
        .map(|value| value.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    let message = serde_json::from_str(&text).unwrap_or_else(|_| {
        parse_sse(&text)
            .into_iter()
            .filter_map(|event| serde_json::from_str::<Value>(&event.data).ok())
            .find(|message| message.get("id").is_some())
            .unwrap_or(Value::String(text))
    });
    (status, id, message)
}

/// Opens a 2025-11-25 session as `token`: the status and its id.
async fn initialize(served: &Served, token: Option<&str>) -> (u16, Option<String>, Value) {
    let opened = send(
        served,
        reqwest::Method::POST,
        token,
        None,
        Some(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "attacker", "version": "1"},
            }}),
        ),
    )
    .await;
    if let Some(session) = &opened.1 {
        send(
            served,
            reqwest::Method::POST,
            token,
            Some(session),
            Some(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
        )
        .await;
    }
    opened
}

async fn whoami_in(served: &Served, token: Option<&str>, session: &str) -> (u16, Value) {
    let (status, _, message) = send(
        served,
        reqwest::Method::POST,
        token,
        Some(session),
        Some(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "own.whoami", "arguments": {}}})),
    )
    .await;
    (status, message)
}

#[tokio::test]
async fn a_session_answers_only_the_identity_that_opened_it() {
    let served = server(SessionLimits::default()).await;
    let (status, session, _) = initialize(&served, Some("alice-token")).await;
    assert_eq!(status, 200);
    let alice = session.expect("a session id");
    let (status, message) = whoami_in(&served, Some("alice-token"), &alice).await;
    assert_eq!(status, 200);
    assert_eq!(
        message["result"]["content"][0]["text"], "alice",
        "{message}"
    );

    // Bob, and an anonymous caller, on Alice's session: an unknown session to them.
    for token in [Some("bob-token"), None] {
        let (status, message) = whoami_in(&served, token, &alice).await;
        assert_eq!(status, 404, "{token:?}: {message}");
        let (status, _, _) =
            send(&served, reqwest::Method::DELETE, token, Some(&alice), None).await;
        assert_eq!(status, 404, "{token:?} cannot end Alice's session");
        let (status, _, _) = send(&served, reqwest::Method::GET, token, Some(&alice), None).await;
        assert_eq!(status, 404, "{token:?} cannot listen on Alice's session");
    }
    let (status, message) = whoami_in(&served, Some("alice-token"), &alice).await;
    assert_eq!(
        (status, &message["result"]["content"][0]["text"]),
        (200, &json!("alice"))
    );

    // An anonymous session stays anonymous.
    let (_, anonymous, _) = initialize(&served, None).await;
    let anonymous = anonymous.expect("a session id");
    assert_eq!(
        whoami_in(&served, Some("alice-token"), &anonymous).await.0,
        404
    );
    let (status, message) = whoami_in(&served, None, &anonymous).await;
    assert_eq!(
        (status, &message["result"]["content"][0]["text"]),
        (200, &json!("anonymous"))
    );

    // Alice ends her own.
    let (status, _, _) = send(
        &served,
        reqwest::Method::DELETE,
        Some("alice-token"),
        Some(&alice),
        None,
    )
    .await;
    assert!((200..300).contains(&status), "{status}");
    assert_eq!(whoami_in(&served, Some("alice-token"), &alice).await.0, 404);
}

mod tasks {
    use super::*;
    use crate::task_client::{Follower, poll};
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, ProtocolVersion,
        UpdateTaskParams,
    };
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    async fn client(served: &Served, token: &str) -> RunningService<RoleClient, Follower> {
        let config = StreamableHttpClientTransportConfig::with_uri(served.url("/mcp"))
            .auth_header(token.to_owned());
        Follower
            .serve_with_lifecycle(
                StreamableHttpClientTransport::from_config(config),
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("connects")
    }

    #[tokio::test]
    async fn a_task_answers_only_the_identity_that_started_it() {
        let served = server(SessionLimits::default()).await;
        let alice = client(&served, "alice-token").await;
        let bob = client(&served, "bob-token").await;
        let id = match alice
            .peer()
            .call_tool_once(CallToolRequestParams::new("own.linger".to_owned()))
            .await
            .expect("tools/call")
        {
            CallToolResponse::Task(created) => created.task.task_id.clone(),
            other => panic!("a task: {other:?}"),
        };
        poll(&alice, &id, |task| task["status"] == "working").await;

        let unknown = |error: rmcp::service::ServiceError| {
            let text = format!("{error:?}");
            assert!(
                text.contains("-32602") || text.contains("unknown task"),
                "{text}"
            );
        };
        unknown(
            bob.peer()
                .get_task(GetTaskParams::new(&id))
                .await
                .unwrap_err(),
        );
        unknown(
            bob.peer()
                .update_task(UpdateTaskParams::new(id.clone(), Default::default()))
                .await
                .unwrap_err(),
        );
        unknown(
            bob.peer()
                .cancel_task(CancelTaskParams::new(id.clone()))
                .await
                .unwrap_err(),
        );
        // Untouched: still working, and Alice ends it.
        poll(&alice, &id, |task| task["status"] == "working").await;
        alice
            .peer()
            .cancel_task(CancelTaskParams::new(id.clone()))
            .await
            .expect("Alice cancels her task");
        poll(&alice, &id, |task| task["status"] == "cancelled").await;
        alice.cancel().await.expect("closes");
        bob.cancel().await.expect("closes");
    }
}

/// This process's resident memory, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn one_anonymous_client_is_refused_past_its_bound_and_memory_stays_flat() {
    let served = server(
        SessionLimits::default()
            .anonymous_per_address(8)
            .per_identity(2),
    )
    .await;
    let mut opened = Vec::new();
    let mut refused = None;
    for _ in 0..50 {
        let (status, session, message) = initialize(&served, None).await;
        match (status, session) {
            (200, Some(session)) => opened.push(session),
            (503, None) => {
                refused = Some(message);
                break;
            }
            other => panic!("{other:?}: {message}"),
        }
    }
    assert_eq!(opened.len(), 8, "the bound per anonymous address");
    let refused = refused.expect("refused past the bound");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("anonymous sessions per address"),
        "{message}"
    );
    assert!(message.contains("session_limits"), "{message}");

    // Keep trying: nothing more is held.
    let before = rss_kib();
    for _ in 0..2_000 {
        assert_eq!(initialize(&served, None).await.0, 503);
    }
    let grown = rss_kib().saturating_sub(before);
    assert!(
        grown < 16 * 1024,
        "memory grew by {grown} KiB over 2,000 refused sessions"
    );

    // The sessions already open are untouched, and an identity has its own bound.
    for session in &opened {
        assert_eq!(whoami_in(&served, None, session).await.0, 200);
    }
    assert_eq!(initialize(&served, Some("alice-token")).await.0, 200);
    assert_eq!(initialize(&served, Some("alice-token")).await.0, 200);
    let (status, _, message) = initialize(&served, Some("alice-token")).await;
    assert_eq!(status, 503, "{message}");
    assert!(
        message.to_string().contains("sessions per identity"),
        "{message}"
    );

    // Closing one gives its place back.
    let (status, _, _) = send(
        &served,
        reqwest::Method::DELETE,
        None,
        Some(&opened[0]),
        None,
    )
    .await;
    assert!((200..300).contains(&status));
    assert_eq!(initialize(&served, None).await.0, 200);
}

#[tokio::test]
async fn an_idle_session_expires_and_gives_its_place_back() {
    let served = server(
        SessionLimits::default()
            .anonymous_per_address(1)
            .idle_timeout(Duration::from_secs(1)),
    )
    .await;
    let (_, session, _) = initialize(&served, None).await;
    let session = session.expect("a session");
    assert_eq!(initialize(&served, None).await.0, 503);
    // The sweeper runs every second: within 10 s the idle session is gone (bounded wait).
    let mut reopened = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if initialize(&served, None).await.0 == 200 {
            reopened = true;
            break;
        }
    }
    assert!(reopened, "the idle session expired");
    assert_eq!(whoami_in(&served, None, &session).await.0, 404);
}
