//! Tool errors as the official SDK clients see them: the TypeScript SDK client
//! (`@modelcontextprotocol/sdk`, pinned in adapters/peers/conformance) lists the tools, then
//! calls each kind of failure. The SDK checks every `structuredContent` against the tool's
//! `outputSchema` once it has listed the tools, error results included, and turns a
//! mismatch into a protocol error (-32602); opkit's errors must come back as tool errors
//! with their message. (The Python SDK client does the same in `serve_peers.rs`.)
#![cfg(feature = "mcp-server")]

use crate::serve_support;
use serve_support::serve_fixtures;

use opkit_adapters::mcp_server::McpServer;
use serde_json::{Value, json};
use serve_fixtures::{fixture_registry, fixture_tokens};
use serve_support::{serve, ts_client};
use std::time::Duration;

#[tokio::test]
async fn the_typescript_sdk_client_gets_every_kind_of_error_as_a_tool_error() {
    let served = serve(
        axum::Router::new().nest(
            "/mcp",
            McpServer::new(fixture_registry(true))
                .identity_resolver(fixture_tokens())
                .call_timeout(Some(Duration::from_secs(2)))
                .router(),
        ),
    )
    .await;
    let calls = json!([
        {"name": "math.add", "arguments": {"a": 2, "b": 40}},
        {"name": "jobs.fail"},
        {"name": "math.add", "arguments": {"a": "two"}},
        {"name": "admin.stats"},
        {"name": "jobs.slow", "arguments": {"ms": 600000}},
        {"name": "jobs.panic"},
        {"name": "math.double", "arguments": {"n": 21}},
    ]);
    // The writer may not read admin.stats.
    let report = ts_client(&served.url("/mcp"), "writer-token", &calls).await;
    assert!(
        report["tools"]
            .as_array()
            .is_some_and(|tools| !tools.is_empty())
    );
    let call = |index: usize| -> &Value {
        let entry = &report["calls"][index];
        assert!(
            entry.get("error").is_none(),
            "call {index} threw in the TypeScript SDK client: {entry}"
        );
        &entry["result"]
    };
    assert_eq!(call(0)["structuredContent"], json!({"sum": 42}));
    assert_eq!(call(6)["structuredContent"], json!({"result": 42}));
    for (index, code) in [
        (1, "EXECUTION_ERROR"),
        (2, "VALIDATION_ERROR"),
        (3, "ACCESS_DENIED"),
        (4, "TIMEOUT"),
        (5, "EXECUTION_ERROR"),
    ] {
        let result = call(index);
        assert_eq!(result["isError"], true, "{result}");
        assert!(result.get("structuredContent").is_none(), "{result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with(code), "call {index}: {text}");
        assert_eq!(result["_meta"]["opkit/error"]["code"], code, "{result}");
    }
}
