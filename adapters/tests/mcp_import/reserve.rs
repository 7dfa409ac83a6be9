//! Imported MCP tools served again through opkit's MCP server keep their content: the blocks
//! of server-everything (image, embedded text and blob resources, resource links) and
//! server-filesystem (audio, image) come back to an MCP client (rmcp's) as they were sent,
//! with their `isError`; server-everything's progress reaches the client through the
//! re-serving operation's context.
#![cfg(all(feature = "mcp", feature = "mcp-server"))]

use crate::mcp_support;
use crate::serve_support::ProgressRecorder;

use mcp_support::*;
use opkit::envelope::{McpMeta, ResponseMeta};
use opkit::{AccessRule, OperationContext, OperationRegistry};
use opkit_adapters::mcp::{McpConnection, McpOptions, map_content_block};
use opkit_adapters::mcp_server::McpServer;
use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressToken};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// An rmcp client of an opkit MCP server serving `registry`, over an in-process pipe.
async fn reserve(registry: OperationRegistry) -> RunningService<RoleClient, ProgressRecorder> {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(McpServer::new(registry).serve_io(read, write));
    ProgressRecorder::default()
        .serve(client_io)
        .await
        .expect("client connects")
}

fn mcp_meta(envelope: &opkit::ResponseEnvelope) -> &McpMeta {
    match &envelope.meta {
        ResponseMeta::Mcp(meta) => meta,
        other => panic!("expected an MCP envelope, got {other:?}"),
    }
}

/// Calls `tool` directly on the import and through the re-serving server; both must give
/// the same blocks and `isError`. Returns the re-served result.
async fn same_blocks(
    direct: &McpConnection,
    client: &RunningService<RoleClient, ProgressRecorder>,
    real_tool: &str,
    arguments: Value,
) -> CallToolResult {
    let envelope = direct
        .call_tool(real_tool, arguments.clone(), &OperationContext::new())
        .await
        .unwrap();
    let id = direct.operation_id(real_tool).unwrap();
    let params =
        CallToolRequestParams::new(id).with_arguments(arguments.as_object().cloned().unwrap());
    let result = client.call_tool(params).await.expect("a tool result");
    let served: Vec<_> = serde_json::to_value(&result.content)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(map_content_block)
        .collect();
    assert_eq!(served, mcp_meta(&envelope).content, "{real_tool}");
    assert_eq!(
        result.is_error.unwrap_or(false),
        envelope.is_error(),
        "{real_tool}"
    );
    result
}

fn types(result: &CallToolResult) -> Vec<String> {
    let wire = serde_json::to_value(&result.content).unwrap();
    wire.as_array()
        .unwrap()
        .iter()
        .map(|block| block["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_blocks_survive_re_serving() {
    // Served again to anyone: the import says so (imports are internal otherwise).
    let (everything, _guard) =
        everything_stdio_with(McpOptions::new("everything").access(AccessRule::public())).await;
    let client = reserve(registry_of(&everything)).await;
    let image = same_blocks(&everything, &client, "get-tiny-image", json!({})).await;
    assert!(types(&image).contains(&"image".to_owned()), "{image:?}");
    let links = same_blocks(
        &everything,
        &client,
        "get-resource-links",
        json!({"count": 2}),
    )
    .await;
    assert!(
        types(&links).contains(&"resource_link".to_owned()),
        "{links:?}"
    );
    let text = json!({"resourceType": "Text", "resourceId": 3});
    let embedded = same_blocks(&everything, &client, "get-resource-reference", text).await;
    assert!(
        types(&embedded).contains(&"resource".to_owned()),
        "{embedded:?}"
    );
    let blob = json!({"resourceType": "Blob", "resourceId": 4});
    same_blocks(&everything, &client, "get-resource-reference", blob).await;
    // A tool error of the server is a tool error again.
    let bad = json!({"resourceType": "Text", "resourceId": 0});
    let failed = same_blocks(&everything, &client, "get-resource-reference", bad).await;
    assert_eq!(failed.is_error, Some(true));
    // Structured content with its output schema.
    let weather = same_blocks(
        &everything,
        &client,
        "get-structured-content",
        json!({"location": "New York"}),
    )
    .await;
    assert!(
        weather
            .structured_content
            .as_ref()
            .is_some_and(Value::is_object)
    );

    // Progress of the imported tool reaches the client of the re-serving server.
    let id = everything
        .operation_id("trigger-long-running-operation")
        .unwrap();
    let mut params = CallToolRequestParams::new(id).with_arguments(
        json!({"duration": 1, "steps": 3})
            .as_object()
            .cloned()
            .unwrap(),
    );
    params.meta = Some(rmcp::model::RequestMetaObject::with_progress_token(
        ProgressToken(rmcp::model::NumberOrString::String("p1".into())),
    ));
    let request =
        rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
    let handle = client
        .peer()
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    handle.await_response().await.unwrap();
    let progress = client.service().progress.lock().unwrap().clone();
    assert!(!progress.is_empty(), "no progress came through");
    assert!(
        progress.iter().all(|step| step.total == Some(3.0)),
        "{progress:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_audio_and_images_survive_re_serving() {
    let dir = opkit_testkit::dir::TempDir::new("reserve");
    std::fs::write(dir.join("tone.wav"), b"RIFF0000WAVEfmt ").unwrap();
    std::fs::write(dir.join("dot.png"), b"\x89PNG\r\n\x1a\n").unwrap();
    let filesystem = McpConnection::connect_stdio(
        node(),
        [filesystem_js().into_os_string(), dir.as_os_str().to_owned()],
        std::iter::empty::<(&str, &str)>(),
        McpOptions::new("fs")
            .label("server-filesystem")
            .access(AccessRule::public()),
    )
    .await
    .unwrap();
    let _guard = PidGuard(filesystem.server_pid());
    let client = reserve(registry_of(&filesystem)).await;
    let audio = same_blocks(
        &filesystem,
        &client,
        "read_media_file",
        json!({"path": dir.join("tone.wav")}),
    )
    .await;
    assert_eq!(types(&audio), ["audio"]);
    let image = same_blocks(
        &filesystem,
        &client,
        "read_media_file",
        json!({"path": dir.join("dot.png")}),
    )
    .await;
    assert_eq!(types(&image), ["image"]);
    let outside = same_blocks(
        &filesystem,
        &client,
        "read_text_file",
        json!({"path": "/etc/hostname"}),
    )
    .await;
    assert_eq!(outside.is_error, Some(true));
    assert_eq!(outside.structured_content, None);
    client.cancel().await.unwrap();
}

/// Collects progress reports.
#[derive(Default)]
struct Collect(Mutex<Vec<f64>>);
impl opkit::report::Reporter for Collect {
    fn progress(&self, progress: opkit::report::Progress) {
        self.0.lock().unwrap().push(progress.progress);
    }
    fn log(&self, _record: opkit::report::LogRecord) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_import_hands_progress_to_the_calling_context() {
    // Served again to anyone: the import says so (imports are internal otherwise).
    let (everything, _guard) =
        everything_stdio_with(McpOptions::new("everything").access(AccessRule::public())).await;
    let registry = registry_of(&everything);
    let sink = Arc::new(Collect::default());
    let ctx = OperationContext::new().with_reporter(sink.clone());
    let id = everything
        .operation_id("trigger-long-running-operation")
        .unwrap();
    registry
        .execute(&id, json!({"duration": 1, "steps": 3}), &ctx)
        .await
        .unwrap();
    // rmcp handles notifications concurrently with the response: the last one may come
    // after the call has returned (and is then dropped).
    let progress = sink.0.lock().unwrap().clone();
    assert!(!progress.is_empty() && progress.is_sorted(), "{progress:?}");
    assert!(
        progress.iter().all(|step| [1.0, 2.0, 3.0].contains(step)),
        "{progress:?}"
    );
}
