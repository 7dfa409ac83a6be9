//! MCP import against a small server on the official Python SDK (`mcp`, pinned in
//! adapters/peers/mcp/requirements.txt): structured output, tool errors and JSON-RPC
//! errors, cancellation and deadlines reaching the server, notifications arriving mid-call,
//! a tool list that changes, a server that exits, and both protocol eras.
#![cfg(feature = "mcp")]

use crate::mcp_support;

use mcp_support::*;
use opkit::envelope::McpContentBlock;
use opkit::{ErrorCode, OperationContext, OperationKind, OperationRegistry};
use opkit_adapters::mcp::{McpConnection, McpLifecycle, McpOptions};
use serde_json::json;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Polls `check` (bounded: 100 × 100 ms) until it holds.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _attempt in 0..100 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 10 s");
}

/// The tags the server's `slow` tool recorded as `"started"` or `"cancelled"`.
async fn slow_calls(registry: &OperationRegistry, which: &str) -> Vec<String> {
    let envelope = call(registry, "py.slow_calls", json!({})).await;
    serde_json::from_value(envelope.data[which].clone()).unwrap_or_default()
}

async fn check_structured_output(connection: &McpConnection) {
    let registry = registry_of(connection);

    // A bare int is wrapped by the SDK as {"result": ...} with a matching outputSchema.
    let add = registry.spec("py.add").unwrap();
    assert_eq!(add.kind, OperationKind::Query);
    assert_eq!(add.output_schema["properties"]["result"]["type"], "integer");
    let envelope = call(&registry, "py.add", json!({"a": 2, "b": 40})).await;
    assert_eq!(envelope.data, json!({"result": 42}));
    let mcp = meta(&envelope);
    assert!(!mcp.is_error);
    assert_eq!(mcp.structured_content, Some(json!({"result": 42})));
    assert_eq!(mcp.content, vec![McpContentBlock::text("42")]);

    // A pydantic model; the tool name `get-weather` is sanitized.
    assert_eq!(
        connection.tool_name("py.get_weather").as_deref(),
        Some("get-weather")
    );
    let envelope = call(&registry, "py.get_weather", json!({"city": "Oslo"})).await;
    let weather =
        json!({"city": "Oslo", "temperature": 21.5, "conditions": "Sunny", "humidity": 40});
    assert_eq!(envelope.data, weather);
    assert_eq!(meta(&envelope).structured_content, Some(weather));

    // A TypedDict; `make.point` becomes `make_point`.
    assert_eq!(
        connection.operation_id("make.point").as_deref(),
        Some("py.make_point")
    );
    let spec = registry.spec("py.make_point").unwrap();
    assert_eq!(spec.kind, OperationKind::Mutation, "no readOnlyHint");
    let envelope = call(&registry, "py.make_point", json!({"x": 1, "y": 2})).await;
    assert_eq!(envelope.data, json!({"x": 1, "y": 2}));

    // A ToolError is an isError envelope without structuredContent.
    let envelope = call(&registry, "py.fail", json!({"message": "nope"})).await;
    let mcp = meta(&envelope);
    assert!(mcp.is_error);
    assert_eq!(mcp.structured_content, None);
    assert_eq!(
        mcp.content,
        vec![McpContentBlock::text("Error executing tool fail: nope")]
    );
    assert_eq!(
        envelope.data,
        json!([{"type": "text", "text": "Error executing tool fail: nope"}])
    );

    // A JSON-RPC error is a CallError with the server's message and code.
    let error = registry
        .execute(
            "py.protocol_error",
            json!({"message": "the server says no"}),
            &OperationContext::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert!(error.message.contains("the server says no"), "{error}");
    let details = error.details.expect("details");
    assert_eq!(details["code"], -32001);
    assert_eq!(details["data"], json!({"hint": "protocol"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_structured_output_over_stdio() {
    let (connection, _guard) = python_stdio(McpOptions::new("py")).await;
    check_structured_output(&connection).await;
    connection.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_structured_output_over_streamable_http() {
    let server = start_python_http();
    assert_loopback_only(server.port);
    let connection = McpConnection::connect_http(&server.mcp_url(), McpOptions::new("py"))
        .await
        .expect("connect over Streamable HTTP");
    check_structured_output(&connection).await;
    connection.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_protocol_eras_are_spoken() {
    for (lifecycle, expected) in [
        (McpLifecycle::Legacy, "2025-11-25"),
        (McpLifecycle::Modern, "2026-07-28"),
        (McpLifecycle::Auto, "2026-07-28"),
    ] {
        let (connection, _guard) = python_stdio(McpOptions::new("py").lifecycle(lifecycle)).await;
        assert_eq!(
            connection.protocol_version().as_deref(),
            Some(expected),
            "{lifecycle:?}"
        );
        let envelope = connection
            .call_tool("add", json!({"a": 1, "b": 2}), &OperationContext::default())
            .await
            .unwrap();
        assert_eq!(envelope.data, json!({"result": 3}), "{lifecycle:?}");
        connection.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_and_deadlines_reach_the_server_over_stdio() {
    let (connection, _guard) = python_stdio(McpOptions::new("py")).await;
    check_cancellation(&connection).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_and_deadlines_reach_the_server_over_streamable_http() {
    let server = start_python_http();
    let connection = McpConnection::connect_http(&server.mcp_url(), McpOptions::new("py"))
        .await
        .expect("connect over Streamable HTTP");
    check_cancellation(&connection).await;
}

async fn check_cancellation(connection: &McpConnection) {
    let registry = registry_of(connection);
    let has = |which: &'static str, tag: &'static str| {
        let registry = registry.clone();
        async move { slow_calls(&registry, which).await.contains(&tag.to_owned()) }
    };

    // Cancelling the context aborts the call and tells the server.
    let token = CancellationToken::new();
    let ctx = OperationContext::new().with_cancellation(token.clone());
    let pending = {
        let registry = registry.clone();
        tokio::spawn(async move {
            registry
                .execute("py.slow", json!({"seconds": 60, "tag": "cancelled"}), &ctx)
                .await
        })
    };
    eventually("the server starting the call", || {
        has("started", "cancelled")
    })
    .await;
    token.cancel();
    let error = pending.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Aborted, "{error}");
    eventually("the server seeing the cancellation", || {
        has("cancelled", "cancelled")
    })
    .await;

    // A deadline ends the call with TIMEOUT and tells the server (3 s: long enough for the
    // server to have started the call, on a loaded machine too).
    let ctx = OperationContext::new().with_timeout(Duration::from_secs(3));
    let error = registry
        .execute("py.slow", json!({"seconds": 60, "tag": "deadline"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Timeout, "{error}");
    assert!(has("started", "deadline").await);
    eventually("the server seeing the deadline's cancellation", || {
        has("cancelled", "deadline")
    })
    .await;

    // The connection is still fine afterwards.
    let envelope = call(&registry, "py.add", json!({"a": 1, "b": 1})).await;
    assert_eq!(envelope.data, json!({"result": 2}));
    connection.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_mid_call_and_a_changing_tool_list() {
    let (connection, _guard) =
        python_stdio(McpOptions::new("py").lifecycle(McpLifecycle::Legacy)).await;
    let registry = registry_of(&connection);
    let mut changes = connection.tool_list_changes();
    let seen = *changes.borrow_and_update();

    // Progress, log messages and a list_changed arrive while the call runs.
    let envelope = call(&registry, "py.chatty", json!({"steps": 3})).await;
    assert_eq!(envelope.data, json!({"result": "done after 3 steps"}));
    tokio::time::timeout(Duration::from_secs(10), changes.changed())
        .await
        .expect("a tools/list_changed notification")
        .unwrap();
    assert!(*changes.borrow() > seen);

    // A tool appears: refresh() registers it.
    call(&registry, "py.add_tool", json!({"name": "shout-back"})).await;
    assert!(!registry.contains("py.shout_back"));
    let report = connection.refresh().await.unwrap();
    assert_eq!(report.added, vec!["py.shout_back".to_owned()]);
    assert!(
        report.removed.is_empty() && report.changed.is_empty(),
        "{report:?}"
    );
    assert_eq!(
        connection.tool_name("py.shout_back").as_deref(),
        Some("shout-back")
    );
    let envelope = call(&registry, "py.shout_back", json!({"text": "hey"})).await;
    assert_eq!(envelope.data, json!({"result": "hey"}));

    // It disappears: refresh() unregisters it; the others keep their ids.
    call(&registry, "py.remove_tool", json!({"name": "shout-back"})).await;
    let report = connection.refresh().await.unwrap();
    assert_eq!(report.removed, vec!["py.shout_back".to_owned()]);
    assert!(!registry.contains("py.shout_back"));
    assert!(registry.contains("py.get_weather"));
    assert!(connection.refresh().await.unwrap().is_empty());
    connection.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_refresh_follows_list_changed_in_both_eras() {
    // Legacy: list_changed arrives unasked; modern: on a subscriptions/listen stream.
    for lifecycle in [McpLifecycle::Legacy, McpLifecycle::Modern] {
        let (connection, _guard) = python_stdio(
            McpOptions::new("py")
                .lifecycle(lifecycle)
                .auto_refresh(true),
        )
        .await;
        let registry = registry_of(&connection);
        call(&registry, "py.add_tool", json!({"name": "late_tool"})).await;
        eventually("the new tool being registered", || async {
            registry.contains("py.late_tool")
        })
        .await;
        let envelope = call(&registry, "py.late_tool", json!({"text": "late"})).await;
        assert_eq!(envelope.data, json!({"result": "late"}), "{lifecycle:?}");
        connection.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_fails_pending_and_later_calls() {
    let (connection, _guard) = python_stdio(McpOptions::new("py")).await;
    let registry = registry_of(&connection);
    let error = registry
        .execute("py.exit_now", json!({}), &OperationContext::default())
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError, "{error}");
    eventually("the connection being closed", || async {
        connection.is_closed()
    })
    .await;
    let error = registry
        .execute(
            "py.add",
            json!({"a": 1, "b": 2}),
            &OperationContext::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError, "{error}");
    assert!(connection.refresh().await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_dies_fails_the_call() {
    let mut server = start_python_http();
    let connection = McpConnection::connect_http(&server.mcp_url(), McpOptions::new("py"))
        .await
        .expect("connect over Streamable HTTP");
    let registry = registry_of(&connection);
    let pending = {
        let registry = registry.clone();
        tokio::spawn(async move {
            let ctx = OperationContext::new().with_timeout(Duration::from_secs(60));
            registry
                .execute("py.slow", json!({"seconds": 60, "tag": "doomed"}), &ctx)
                .await
        })
    };
    eventually("the server starting the call", || {
        let registry = registry.clone();
        async move {
            slow_calls(&registry, "started")
                .await
                .contains(&"doomed".to_owned())
        }
    })
    .await;
    server.kill();
    let error = pending.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError, "{error}");
    let ctx = OperationContext::new().with_timeout(Duration::from_secs(60));
    let error = registry
        .execute("py.add", json!({"a": 1, "b": 2}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::TransportError, "{error}");
}
