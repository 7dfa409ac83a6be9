//! MCP import against `@modelcontextprotocol/server-filesystem` (pinned in
//! adapters/peers/mcp/package-lock.json) over stdio.
#![cfg(feature = "mcp")]

use crate::mcp_support;

use mcp_support::*;
use opkit::envelope::McpContentBlock;
use opkit::{OperationContext, OperationKind};
use opkit_adapters::mcp::{McpConnection, McpOptions};
use opkit_testkit::dir::TempDir;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_over_stdio() {
    // The server resolves symlinks (/tmp may be one); compare against the real path.
    let scratch = TempDir::canonical("mcp-fs");
    std::fs::write(scratch.join("hello.txt"), "Hello, files!\n").unwrap();
    std::fs::write(scratch.join("tone.wav"), b"RIFF0000WAVEfmt ").unwrap();
    std::fs::write(scratch.join("dot.png"), b"\x89PNG\r\n\x1a\n").unwrap();

    let connection = McpConnection::connect_stdio(
        node(),
        [
            filesystem_js().into_os_string(),
            scratch.path().as_os_str().to_owned(),
        ],
        std::iter::empty::<(&str, &str)>(),
        McpOptions::new("fs").label("server-filesystem"),
    )
    .await
    .expect("connect to server-filesystem");
    let _guard = PidGuard(connection.server_pid());
    let registry = registry_of(&connection);
    let ctx = OperationContext::default();

    // --- every tool declares an outputSchema -------------------------------------------------
    let specs = registry.specs();
    assert!(specs.len() >= 10, "{} tools", specs.len());
    for spec in &specs {
        assert!(
            !spec.has_unknown_output(),
            "{} has no output schema",
            spec.id()
        );
        let annotations = &spec.extensions["mcp.annotations"];
        if annotations["readOnlyHint"] == json!(true) {
            assert_eq!(spec.kind, OperationKind::Query, "{}", spec.id());
        } else {
            assert_eq!(spec.kind, OperationKind::Mutation, "{}", spec.id());
        }
    }
    assert_eq!(
        registry.spec("fs.read_text_file").unwrap().kind,
        OperationKind::Query
    );
    assert_eq!(
        registry.spec("fs.write_file").unwrap().kind,
        OperationKind::Mutation
    );

    // --- structured text --------------------------------------------------------------------
    let path = scratch.join("hello.txt");
    let envelope = registry
        .execute("fs.read_text_file", json!({"path": path}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"content": "Hello, files!\n"}));
    let mcp = meta(&envelope);
    assert!(!mcp.is_error);
    assert_eq!(mcp.content, vec![McpContentBlock::text("Hello, files!\n")]);
    assert_eq!(
        mcp.structured_content,
        Some(json!({"content": "Hello, files!\n"}))
    );

    // --- audio and image blocks ---------------------------------------------------------------
    let envelope = registry
        .execute(
            "fs.read_media_file",
            json!({"path": scratch.join("tone.wav")}),
            &ctx,
        )
        .await
        .unwrap();
    let audio = McpContentBlock::Audio {
        data: "UklGRjAwMDBXQVZFZm10IA==".into(),
        mime_type: "audio/wav".into(),
        annotations: None,
    };
    assert_eq!(meta(&envelope).content, vec![audio]);
    assert_eq!(
        envelope.data,
        json!({"content": [{"type": "audio", "data": "UklGRjAwMDBXQVZFZm10IA==", "mimeType": "audio/wav"}]}),
        "structuredContent, cast to the output schema"
    );

    let envelope = registry
        .execute(
            "fs.read_media_file",
            json!({"path": scratch.join("dot.png")}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(
        meta(&envelope).content,
        vec![McpContentBlock::Image {
            data: "iVBORw0KGgo=".into(),
            mime_type: "image/png".into(),
            annotations: None,
        }]
    );

    // --- a denied path is an isError envelope without structuredContent ----------------------
    let envelope = registry
        .execute("fs.read_text_file", json!({"path": "/etc/hostname"}), &ctx)
        .await
        .expect("a denied path is an envelope, not an error");
    let mcp = meta(&envelope);
    assert!(mcp.is_error);
    assert_eq!(mcp.structured_content, None);
    assert_eq!(mcp.content.len(), 1);
    let McpContentBlock::Text { text, .. } = &mcp.content[0] else {
        panic!("expected a text block, got {:?}", mcp.content[0]);
    };
    assert!(text.contains("Access denied"), "{text}");
    assert_eq!(
        envelope.data,
        json!([{"type": "text", "text": text}]),
        "the data of an isError result without structuredContent is its content blocks"
    );

    // --- a mutation, then the change is visible ------------------------------------------------
    let new_file = scratch.join("new.txt");
    let envelope = registry
        .execute(
            "fs.write_file",
            json!({"path": new_file, "content": "written"}),
            &ctx,
        )
        .await
        .unwrap();
    assert!(!meta(&envelope).is_error);
    assert_eq!(std::fs::read_to_string(&new_file).unwrap(), "written");

    connection.close();
}
