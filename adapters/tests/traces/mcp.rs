//! Trace context through MCP: the MCP import sends `traceparent`/`tracestate` in the
//! request's `_meta`, and the MCP server opens its span as a child of the import's client
//! span (both eras).
#![cfg(all(feature = "mcp", feature = "mcp-server"))]

use crate::serve_support;

use opkit::prelude::*;
use opkit::trace::TraceContext;
use opkit_adapters::mcp::{McpConnection, McpLifecycle, McpOptions};
use opkit_adapters::mcp_server::McpServer;
use opkit_testkit::trace::{INCOMING, echo_registry, spans_of};
use opkit_testkit::trace::{assert_parent, find};
use serde_json::json;
use serve_support::serve;

#[test]
fn the_mcp_import_and_server_link_their_spans() {
    for lifecycle in [McpLifecycle::Modern, McpLifecycle::Legacy] {
        let spans = spans_of(async {
            let served_registry = echo_registry("m");
            let served =
                serve(axum::Router::new().nest("/mcp", McpServer::new(served_registry).router()))
                    .await;
            let connection = McpConnection::connect_http(
                &served.url("/mcp"),
                McpOptions::new("remote").lifecycle(lifecycle),
            )
            .await
            .unwrap();
            let imported = OperationRegistry::new();
            connection.register_into(&imported).unwrap();
            let id = imported.specs()[0].id();
            let ctx = OperationContext::new()
                .with_trace(TraceContext::parse(INCOMING, Some("k=v")).unwrap());
            imported.execute(&id, json!({"x": 1}), &ctx).await.unwrap();
        });
        let client = spans
            .iter()
            .find(|span| span["opkit.path"] == "mcp")
            .unwrap_or_else(|| panic!("an mcp client span in {spans:#?}"));
        let server = find(&spans, "mcp_server", "m.echo");
        assert_eq!(client["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_parent(server, client);
        assert_eq!(server["otel.kind"], "server");
        // A served call has one span, the server's.
        assert!(
            spans
                .iter()
                .all(|span| !(span["opkit.path"] == "execute" && span["rpc.method"] == "m.echo")),
            "{spans:#?}"
        );
    }
}
