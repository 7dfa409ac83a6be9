//! Middleware registered once on a registry applies the same way on every edge that serves
//! it: in process, `POST /ops/<id>` (HTTP server), MCP `tools/call` (the official TypeScript
//! SDK client against the MCP server), a Redis call-protocol caller (a real `redis-server`)
//! and a WebSocket spoke. One rate limit is one budget for an identity whichever edge its
//! calls come through, and an audit middleware records the identity each edge established.
#![cfg(all(
    feature = "http-server",
    feature = "mcp-server",
    feature = "redis",
    feature = "websocket"
))]

mod redis_support;
mod serve_support;

use opkit::edge::Edge;
use opkit::middleware::{Audit, AuditRecord, RateLimit, RateLimitKey};
use opkit::prelude::*;
use opkit::protocol::{CallHandler, CallProtocolRequest, PendingRequestMap};
use opkit_adapters::http_server::{HttpRequest, HttpServer, StaticTokens};
use opkit_adapters::mcp_server::{McpServer, McpSession};
use opkit_adapters::websocket::{SpokeGrant, SpokeOptions, WsHub, WsSpoke};
use parking_lot::Mutex;
use redis_support::RedisServer;
use serde_json::{Value, json};
use serve_support::{serve, ts_client};
use std::sync::Arc;
use std::time::Duration;

/// The edge a call came through and what it knew, as the operation reads it.
#[operation(namespace = "edges")]
async fn whoami(ctx: &OperationContext) -> Value {
    let edge = ctx.edge();
    json!({
        "identity": ctx.identity().map(|identity| identity.id.clone()),
        "edge": edge.map(Edge::name),
        "httpMethod": edge.and_then(|edge| edge.fact::<HttpRequest>()).map(|http| http.method.to_string()),
        "accept": edge
            .and_then(|edge| edge.fact::<HttpRequest>())
            .and_then(|http| http.headers.get("accept")?.to_str().ok().map(str::to_owned)),
        "mcp": edge.and_then(|edge| edge.fact::<McpSession>()).is_some(),
        "caller": edge.and_then(|edge| edge.fact::<CallProtocolRequest>()).and_then(|call| call.caller.clone()),
    })
}

/// Counts its calls in the caller's session: what rmcp's `counter` example keeps per MCP
/// session, with the session id the client sent.
#[operation(namespace = "edges")]
async fn counter(ctx: &OperationContext) -> Value {
    let Some(session) = ctx.session() else {
        return json!({"session": null});
    };
    let count = session.get_or_insert_with(|| std::sync::atomic::AtomicU64::new(0));
    let mcp = ctx.edge().and_then(|edge| edge.fact::<McpSession>());
    json!({
        "session": session.key(),
        "sessionId": mcp.and_then(|mcp| mcp.session_id.clone()),
        "client": mcp.and_then(|mcp| mcp.client.as_ref()).map(|client| client.name.clone()),
        "count": count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1,
    })
}

/// The client the MCP server says the call came from.
#[operation(namespace = "edges")]
async fn client_name(ctx: &OperationContext) -> Option<String> {
    let mcp = ctx.edge().and_then(|edge| edge.fact::<McpSession>())?;
    mcp.client.as_ref().map(|client| client.name.clone())
}

const BUDGET: u32 = 5;

fn registry(records: &Arc<Mutex<Vec<AuditRecord>>>) -> OperationRegistry {
    let sink = records.clone();
    let registry = OperationRegistry::new()
        .with_middleware(Audit::new().with_sink(move |record| sink.lock().push(record.clone())))
        .with_middleware(
            RateLimit::new(BUDGET, Duration::from_secs(600)).keyed_by(RateLimitKey::Identity),
        );
    registry.register_operation(whoami).unwrap();
    registry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_rate_limit_and_one_audit_serve_every_edge_alike() {
    let records: Arc<Mutex<Vec<AuditRecord>>> = Arc::default();
    let registry = registry(&records);
    let tokens = StaticTokens::new().with("ann-token", Identity::new("ann"));

    // HTTP and MCP on one loopback server.
    let served = serve(
        axum::Router::new()
            .nest(
                "/api",
                HttpServer::new(registry.clone())
                    .identity_resolver(tokens.clone())
                    .router(),
            )
            .nest(
                "/mcp",
                McpServer::new(registry.clone())
                    .identity_resolver(tokens)
                    .router(),
            ),
    )
    .await;
    // The call protocol over a real redis-server ...
    let redis = RedisServer::start();
    let _redis_replica = CallHandler::new(registry.clone(), redis.bus("mw:").await)
        .spawn()
        .await
        .unwrap();
    let redis_caller = PendingRequestMap::connect(redis.bus("mw:").await)
        .await
        .unwrap();
    // ... and over a WebSocket hub, whose grant states the calling spoke's identity.
    let hub = WsHub::bind(
        "127.0.0.1:0",
        opkit_adapters::websocket::StaticTokens::new()
            .with_token("serve-token", SpokeGrant::service("server"))
            .with_token(
                "ann-spoke",
                SpokeGrant::new("kiosk").with_identity(Identity::new("ann")),
            ),
    )
    .await
    .unwrap();
    let serving = Arc::new(
        WsSpoke::connect_with(&hub.url(), SpokeOptions::new("serve-token"))
            .await
            .unwrap(),
    );
    let _ws_replica = CallHandler::new(registry.clone(), serving)
        .spawn()
        .await
        .unwrap();
    let calling = Arc::new(
        WsSpoke::connect_with(&hub.url(), SpokeOptions::new("ann-spoke"))
            .await
            .unwrap(),
    );
    let ws_caller = PendingRequestMap::connect(calling).await.unwrap();

    let ann = || {
        OperationContext::new()
            .with_identity(Identity::new("ann"))
            .with_timeout(Duration::from_secs(10))
    };
    let http = reqwest::Client::new();
    let post = || {
        http.post(served.url("/api/ops/edges.whoami"))
            .bearer_auth("ann-token")
            .json(&json!({}))
            .send()
    };

    // The budget of 5 is spent across five edges, one call each.
    let local = whoami::call(&registry.context().with_identity(Identity::new("ann")))
        .await
        .unwrap();
    assert_eq!(local.data["edge"], Value::Null);
    let response = post().await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["data"]["edge"], "http_server");
    assert_eq!(body["data"]["httpMethod"], "POST");
    assert_eq!(body["data"]["identity"], "ann");
    let report = ts_client(
        &served.url("/mcp"),
        "ann-token",
        &json!([{"name": "edges.whoami"}, {"name": "edges.whoami"}]),
    )
    .await;
    let first = &report["calls"][0]["result"];
    assert_eq!(
        first["structuredContent"]["result"]["edge"], "mcp_server",
        "{report}"
    );
    assert_eq!(
        first["structuredContent"]["result"]["mcp"], true,
        "{report}"
    );
    // Over Streamable HTTP the tool reads the request's method and headers as an HTTP
    // operation does.
    assert_eq!(
        first["structuredContent"]["result"]["httpMethod"], "POST",
        "{report}"
    );
    let accept = first["structuredContent"]["result"]["accept"]
        .as_str()
        .unwrap_or_default();
    assert!(accept.contains("text/event-stream"), "{report}");
    let over_redis = redis_caller
        .call("edges.whoami", json!({}), &ann())
        .await
        .unwrap();
    assert_eq!(over_redis.data["edge"], "call_handler");
    assert!(over_redis.data["caller"].is_string(), "{}", over_redis.data);
    let over_ws = ws_caller
        .call("edges.whoami", json!({}), &ann().with_identity_opt(None))
        .await;
    // Local, HTTP, MCP twice and Redis spent the budget of 5: the WebSocket call is refused.
    let refused_ws = over_ws.unwrap_err();
    assert_eq!(
        refused_ws.kind,
        Some(ErrorKind::RateLimited),
        "{refused_ws:?}"
    );

    // MCP's second call was the fourth: allowed. Everything after is refused, on every edge.
    assert_eq!(report["calls"][1]["result"]["isError"], false, "{report}");
    let error = whoami::call(&registry.context().with_identity(Identity::new("ann")))
        .await
        .unwrap_err();
    assert_eq!(error.kind, Some(ErrorKind::RateLimited));
    let response = post().await.unwrap();
    assert_eq!(response.status(), 429);
    let retry_after: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after >= 1);
    let report = ts_client(
        &served.url("/mcp"),
        "ann-token",
        &json!([{"name": "edges.whoami"}]),
    )
    .await;
    let refused = &report["calls"][0]["result"];
    assert_eq!(refused["isError"], true, "{report}");
    assert_eq!(
        refused["_meta"]["opkit/error"]["kind"], "RATE_LIMITED",
        "{report}"
    );
    let error = redis_caller
        .call("edges.whoami", json!({}), &ann())
        .await
        .unwrap_err();
    assert_eq!(error.kind, Some(ErrorKind::RateLimited));

    // Another identity has its own budget.
    let bob = OperationContext::new()
        .with_identity(Identity::new("bob"))
        .with_timeout(Duration::from_secs(10));
    assert!(
        redis_caller
            .call("edges.whoami", json!({}), &bob)
            .await
            .is_ok()
    );

    // The audit saw the identity each edge established, and where each call came from.
    let records = records.lock();
    let ann_records: Vec<(Option<&str>, Result<(), ErrorCode>)> = records
        .iter()
        .filter(|record| record.identity.as_deref() == Some("ann"))
        .map(|record| (record.edge, record.outcome))
        .collect();
    let ok = Ok(());
    let limited = Err(ErrorCode::ExecutionError);
    assert_eq!(
        ann_records,
        [
            (None, ok),
            (Some("http_server"), ok),
            (Some("mcp_server"), ok),
            (Some("mcp_server"), ok),
            (Some("call_handler"), ok),
            (Some("call_handler"), limited),
            (None, limited),
            (Some("http_server"), limited),
            (Some("mcp_server"), limited),
            (Some("call_handler"), limited),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_session_scopes_state_and_tells_its_id_and_client() {
    let registry = OperationRegistry::new();
    registry.register_operation(counter).unwrap();
    let served = serve(axum::Router::new().nest("/mcp", McpServer::new(registry).router())).await;
    let calls = json!([{"name": "edges.counter"}, {"name": "edges.counter"}]);
    let first = ts_client(&served.url("/mcp"), "", &calls).await;
    let second = ts_client(&served.url("/mcp"), "", &calls).await;
    let seen = |report: &Value, index: usize| {
        report["calls"][index]["result"]["structuredContent"]["result"].clone()
    };
    let (a1, a2, b1) = (seen(&first, 0), seen(&first, 1), seen(&second, 0));
    assert_eq!(
        (a1["count"].clone(), a2["count"].clone()),
        (json!(1), json!(2)),
        "{first}"
    );
    assert_eq!(b1["count"], 1, "a new session starts afresh: {second}");
    assert!(a1["sessionId"].is_string(), "{a1}");
    assert_eq!(a1["session"], a1["sessionId"]);
    assert_eq!(a1["sessionId"], a2["sessionId"]);
    assert_ne!(a1["sessionId"], b1["sessionId"]);
    assert_eq!(a1["client"], "opkit-ts-sdk-test");
}

/// A 2026-07-28 client sends no `initialize`: the client the operation is told of is the one
/// its request names in `_meta` (opkit's own MCP client here), not a default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_is_known_by_the_name_its_requests_carry() {
    use opkit_adapters::mcp::{McpConnection, McpOptions};
    let registry = OperationRegistry::new();
    registry.register_operation(client_name).unwrap();
    let served = serve(axum::Router::new().nest("/mcp", McpServer::new(registry).router())).await;
    let connection = McpConnection::connect_http(&served.url("/mcp"), McpOptions::new("edges"))
        .await
        .unwrap();
    assert_eq!(connection.protocol_version().as_deref(), Some("2026-07-28"));
    let envelope = connection
        .call_tool("edges.client_name", json!({}), &OperationContext::new())
        .await
        .unwrap();
    let seen = &envelope.data;
    let seen = seen.get("result").unwrap_or(seen);
    assert_eq!(seen, "opkit", "{envelope:?}");
}

#[tokio::test]
async fn the_http_server_sends_a_cached_replys_hint_as_cache_control() {
    let registry = OperationRegistry::new()
        .with_middleware(opkit::middleware::Cache::new(Duration::from_secs(30)));
    registry.register_operation(whoami).unwrap();
    let served = serve(axum::Router::new().nest("/api", HttpServer::new(registry).router())).await;
    let response = reqwest::get(served.url("/api/ops/edges.whoami"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "private, max-age=30");
}
