//! MCP import against `adapters/peers/mcp/scripted_server.py`, a stdio server on the Python
//! standard library that does what SDK-built servers never do: one tool per `tools/list`
//! page with an empty-string cursor, tool names that sanitize alike, content block types no
//! SDK knows, `structuredContent: null`, a non-object `structuredContent`, and annotations on
//! every block type.
#![cfg(feature = "mcp")]

use crate::mcp_support;

use mcp_support::*;
use opkit::envelope::{Annotations, EmbeddedResource, McpContentBlock, Role};
use opkit::{ErrorCode, OperationContext, OperationKind};
use opkit_adapters::mcp::{McpConnection, McpOptions};
use serde_json::{Value, json};

async fn connect() -> (McpConnection, PidGuard) {
    let connection = McpConnection::connect_stdio(
        python(),
        [peer_file("scripted_server.py")],
        [("PYTHONUNBUFFERED", "1")],
        McpOptions::new("quirky").label("scripted"),
    )
    .await
    .expect("connect to scripted_server.py");
    let guard = PidGuard(connection.server_pid());
    (connection, guard)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pagination_names_and_odd_results() {
    let (connection, _guard) = connect().await;
    // A legacy-only server: the server/discover probe fell back to initialize.
    assert_ne!(connection.protocol_version().as_deref(), Some("2026-07-28"));

    // --- every page listed, including the one behind the "" cursor --------------------------
    assert_eq!(
        connection.tool_names(),
        [
            "a-b",
            "a.b",
            "a_b",
            "annotated",
            "future-blocks",
            "in-rounds",
            "null-structured",
            "scalar-structured"
        ]
    );

    // --- names that sanitize alike stay apart, and map back -----------------------------------
    let registry = registry_of(&connection);
    for (tool, id) in [
        ("a_b", "quirky.a_b"),
        ("a-b", "quirky.a_b_2"),
        ("a.b", "quirky.a_b_3"),
    ] {
        assert_eq!(connection.operation_id(tool).as_deref(), Some(id));
        assert_eq!(connection.tool_name(id).as_deref(), Some(tool));
        let spec = registry.spec(id).unwrap();
        assert_eq!(spec.extensions["mcp.toolName"], json!(tool));
        let envelope = registry
            .execute(id, json!({}), &OperationContext::default())
            .await
            .unwrap();
        assert_eq!(envelope.data, json!([{"type": "text", "text": tool}]));
    }
    assert_eq!(
        connection.operation_id("future-blocks").as_deref(),
        Some("quirky.future_blocks")
    );
    assert_eq!(
        registry.spec("quirky.future_blocks").unwrap().kind,
        OperationKind::Query
    );

    let ctx = OperationContext::default();
    // --- unknown block types become text blocks holding their JSON --------------------------
    let envelope = registry
        .execute("quirky.future_blocks", json!({}), &ctx)
        .await
        .expect("an unknown block type does not fail the result");
    let hologram =
        json!({"type": "hologram", "frames": [1, 2, 3], "annotations": {"priority": 0.5}});
    let mcp = meta(&envelope);
    assert_eq!(mcp.content.len(), 3);
    assert_eq!(mcp.content[0], McpContentBlock::text("before"));
    let McpContentBlock::Text { text, annotations } = &mcp.content[1] else {
        panic!("expected a text block, got {:?}", mcp.content[1]);
    };
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), hologram);
    assert_eq!(
        annotations,
        &Some(Annotations {
            priority: Some(0.5),
            ..Annotations::default()
        })
    );
    assert_eq!(mcp.content[2], McpContentBlock::text("after"));
    assert_eq!(mcp.meta, Some(json!({"example.com/trace": "t-1"})));

    // --- structuredContent: null counts as absent for the data -------------------------------
    let envelope = registry
        .execute("quirky.null_structured", json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(
        envelope.data,
        json!([{"type": "text", "text": "nothing structured"}])
    );
    assert_eq!(
        meta(&envelope).structured_content,
        None,
        "null reads as absent"
    );

    // --- a non-object structuredContent is the data -------------------------------------------
    let envelope = registry
        .execute("quirky.scalar_structured", json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!(42));
    assert_eq!(meta(&envelope).structured_content, Some(json!(42)));

    // --- annotations on every block type ----------------------------------------------------
    let envelope = registry
        .execute("quirky.annotated", json!({}), &ctx)
        .await
        .unwrap();
    let annotations = Some(Annotations {
        audience: Some(vec![Role::User]),
        priority: Some(0.25),
        last_modified: Some("2025-06-01T00:00:00Z".into()),
    });
    assert_eq!(
        meta(&envelope).content,
        vec![
            McpContentBlock::Text {
                text: "t".into(),
                annotations: annotations.clone()
            },
            McpContentBlock::Image {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
                annotations: annotations.clone()
            },
            McpContentBlock::Audio {
                data: "UklGRg==".into(),
                mime_type: "audio/wav".into(),
                annotations: annotations.clone()
            },
            McpContentBlock::Resource {
                resource: EmbeddedResource {
                    uri: "mem://blob".into(),
                    mime_type: Some("application/octet-stream".into()),
                    text: None,
                    blob: Some("AAEC".into()),
                },
                annotations,
            },
            McpContentBlock::ResourceLink {
                uri: "mem://doc".into(),
                name: "doc".into(),
                description: None,
                mime_type: None,
            },
        ]
    );

    // --- an input-required result in a 2025-era session is refused, not answered -----------
    // (the arguments are not kept for another round there)
    let error = connection
        .call_tool("in-rounds", json!({"kept": false}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert!(
        error
            .message
            .contains("input-required result in a session of the 2025 era"),
        "{error:?}"
    );

    // --- a JSON-RPC error keeps the server's message ----------------------------------------
    let error = connection
        .call_tool("no-such-tool", json!({}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ExecutionError);
    assert_eq!(error.message, "Unknown tool: no-such-tool");
    assert_eq!(error.details.unwrap()["code"], -32602);
    connection.close();
}
