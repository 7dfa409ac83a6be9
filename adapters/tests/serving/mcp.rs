//! The MCP server (feature `mcp-server`) against rmcp's client: tools, results, errors,
//! access, subscriptions (progress + items), cancellation, both protocol eras, stdio (the
//! `serve_stdio` example as a child process) and Streamable HTTP, and a round trip.
#![cfg(feature = "mcp-server")]

use crate::serve_support;
use serve_support::serve_fixtures;

use opkit::prelude::*;
use opkit_adapters::mcp_server::McpServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, Request, ServerResult, Tool,
};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::{Value, json};
use serve_fixtures::{fixture_registry, fixture_tokens};
use serve_support::{ProgressRecorder, exchange, serve, serve_mcp};
use std::time::Duration;

type Client = RunningService<RoleClient, ProgressRecorder>;

/// A legacy (initialize) client connected in-process over a duplex pipe.
async fn connect_duplex(server: McpServer) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(server.serve_io(read, write));
    ProgressRecorder::default()
        .serve(client_io)
        .await
        .expect("client connects")
}

fn modern() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().cloned().expect("object arguments"));
    client
        .call_tool(params)
        .await
        .expect("the call gets a result")
}

fn text_of(result: &CallToolResult) -> String {
    result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone()
}

/// The `CallError` wire JSON of a tool error (in `_meta["opkit/error"]`), after checking
/// that the result is a tool error without `structuredContent`.
fn error_of(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert_eq!(result.structured_content, None, "{result:?}");
    result
        .meta
        .as_ref()
        .and_then(|meta| meta.0.get("opkit/error"))
        .cloned()
        .unwrap_or_else(|| panic!("no opkit/error in {result:?}"))
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|tool| tool.name == name)
        .unwrap_or_else(|| panic!("tool {name} is listed"))
}

fn output_schema(tool: &Tool) -> Option<Value> {
    tool.output_schema
        .as_ref()
        .map(|schema| Value::Object((**schema).clone()))
}

#[tokio::test]
async fn every_operation_is_a_described_tool() {
    let registry = fixture_registry(true);
    let client = connect_duplex(
        McpServer::new(registry.clone())
            .name("fixtures")
            .version("9.9.9"),
    )
    .await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().unwrap().name, "fixtures");
    assert_eq!(info.server_info.as_ref().unwrap().version, "9.9.9");
    assert!(info.capabilities.tools.is_some());
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    let ids: Vec<String> = registry.specs().iter().map(|spec| spec.id()).collect();
    assert_eq!(names, ids);
    for tool in &tools {
        let spec = registry.spec(&tool.name).unwrap();
        assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        assert_eq!(
            tool.description.as_deref().unwrap().lines().next(),
            spec.description.as_deref().unwrap().lines().next()
        );
        let annotations = tool.annotations.as_ref().unwrap();
        assert_eq!(
            annotations.read_only_hint,
            Some(spec.kind != OperationKind::Mutation)
        );
        let meta = &tool.meta.as_ref().unwrap().0;
        assert_eq!(meta["opkit/operationId"], tool.name.as_ref());
        assert_eq!(meta["opkit/kind"], spec.kind.as_str());
        // Legacy clients: every output schema is an object.
        let output = output_schema(tool).expect("an output schema");
        assert_eq!(output["type"], "object", "{}", tool.name);
    }
    let add = tool(&tools, "math.add");
    assert_eq!(
        Value::Object((*add.input_schema).clone()),
        registry.spec("math.add").unwrap().input_schema
    );
    assert_eq!(
        output_schema(add).unwrap(),
        registry.spec("math.add").unwrap().output_schema
    );
    assert_eq!(
        output_schema(tool(&tools, "math.double")).unwrap(),
        json!({"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]})
    );
    let ticks = output_schema(tool(&tools, "clock.ticks")).unwrap();
    assert_eq!(ticks["properties"]["items"]["type"], "array");
    assert_eq!(ticks["required"], json!(["items", "truncated"]));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn calls_return_structured_content_and_the_same_json_as_text() {
    let client = connect_duplex(McpServer::new(fixture_registry(false))).await;
    let result = call(&client, "math.add", json!({"a": 2, "b": 40})).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.structured_content, Some(json!({"sum": 42})));
    let text: Value = serde_json::from_str(&text_of(&result)).unwrap();
    assert_eq!(Some(text), result.structured_content);
    // A local envelope's meta is written only when the server asks for it.
    assert_eq!(result.meta, None);

    // Non-object data is wrapped for a legacy client.
    let result = call(&client, "math.double", json!({"n": 21})).await;
    assert_eq!(result.structured_content, Some(json!({"result": 42})));
    assert_eq!(text_of(&result), r#"{"result":42}"#);

    // An envelope of the handler keeps its meta.
    let result = call(&client, "web.health", json!({})).await;
    assert_eq!(
        result.structured_content,
        Some(json!({"result": {"status": "ok"}}))
    );
    assert_eq!(result.meta.unwrap().0["opkit/meta"]["source"], "http");
    client.cancel().await.unwrap();

    let client = connect_duplex(McpServer::new(fixture_registry(false)).local_meta(true)).await;
    let result = call(&client, "math.add", json!({"a": 2, "b": 40})).await;
    let meta = &result.meta.as_ref().expect("_meta").0;
    assert_eq!(meta["opkit/meta"]["source"], "local");
    assert_eq!(meta["opkit/meta"]["operationId"], "math.add");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn call_errors_are_tool_errors_and_unknown_tools_protocol_errors() {
    let client = connect_duplex(McpServer::new(fixture_registry(true))).await;
    let result = call(&client, "jobs.fail", json!({})).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text_of(&result), "EXECUTION_ERROR: the job failed");
    assert_eq!(
        error_of(&result),
        json!({"code": "EXECUTION_ERROR", "message": "the job failed"})
    );
    let result = call(&client, "math.add", json!({"a": "x"})).await;
    let error = error_of(&result);
    assert_eq!(error["code"], "VALIDATION_ERROR");
    assert_eq!(error["details"].as_array().unwrap().len(), 2);
    let result = call(&client, "jobs.panic", json!({})).await;
    assert_eq!(result.is_error, Some(true));

    let unknown = client
        .call_tool(CallToolRequestParams::new("math.nope"))
        .await
        .unwrap_err();
    match unknown {
        rmcp::ServiceError::McpError(error) => {
            assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert!(error.message.contains("math.nope"));
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
    client.cancel().await.unwrap();
}

/// A tool call serves the operation the registry has now: one replaced after the session
/// started answers with its new handler, one unregistered is an unknown tool (a call holds
/// the operation its tool names were built with, and those follow the registry).
#[tokio::test]
async fn calls_follow_operations_replaced_or_removed_after_the_session_started() {
    let spec = || OperationSpec::new("app", "version", OperationKind::Query);
    let answering = |version: &'static str| {
        Handler::unary(move |_input, _ctx: OperationContext| async move { Ok(json!(version)) })
    };
    let registry = OperationRegistry::new();
    registry.register(spec(), answering("first")).unwrap();
    let client = connect_duplex(McpServer::new(registry.clone())).await;
    assert_eq!(
        text_of(&call(&client, "app.version", json!({})).await),
        "first"
    );
    assert!(registry.replace(spec(), answering("second")).unwrap());
    assert_eq!(
        text_of(&call(&client, "app.version", json!({})).await),
        "second"
    );
    assert!(registry.unregister("app.version"));
    let gone = client
        .call_tool(CallToolRequestParams::new("app.version"))
        .await
        .unwrap_err();
    assert!(
        matches!(&gone, rmcp::ServiceError::McpError(error) if error.message.contains("app.version")),
        "{gone:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn calls_time_out_with_a_tool_error() {
    let client = connect_duplex(
        McpServer::new(fixture_registry(true)).call_timeout(Some(Duration::from_millis(100))),
    )
    .await;
    let result = call(&client, "jobs.slow", json!({"ms": 600000})).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(error_of(&result)["code"], "TIMEOUT");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn stdio_calls_run_as_the_configured_identity() {
    let anonymous = connect_duplex(McpServer::new(fixture_registry(false))).await;
    let result = call(&anonymous, "users.create", json!({"name": "Ada"})).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(error_of(&result)["code"], "ACCESS_DENIED");
    anonymous.cancel().await.unwrap();

    let writer = fixture_tokens().get("writer-token").cloned();
    let client =
        connect_duplex(McpServer::new(fixture_registry(false)).stdio_identity(writer)).await;
    let result = call(&client, "users.create", json!({"name": "Ada"})).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        result.structured_content,
        Some(json!({"id": 3, "name": "Ada", "createdBy": "writer"}))
    );
    client.cancel().await.unwrap();
}

/// Calls `name` with a progress token; returns the result and the token.
async fn call_with_token(
    client: &Client,
    name: &str,
    arguments: Value,
) -> (CallToolResult, ProgressToken) {
    let params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap());
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let token = handle.progress_token.clone();
    match handle.await_response().await.unwrap() {
        ServerResult::CallToolResult(result) => (result, token),
        other => panic!("expected a tool result, got {other:?}"),
    }
}

/// Calls `name` with a progress token and returns the result and the progress received.
async fn call_with_progress(
    client: &Client,
    name: &str,
    arguments: Value,
) -> (CallToolResult, Vec<ProgressNotificationParam>) {
    let (result, token) = call_with_token(client, name, arguments).await;
    let expected = result
        .structured_content
        .as_ref()
        .and_then(|content| content.get("items"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    (result, progress_for(client, &token, expected).await)
}

/// The progress notifications `client` got for `token`, once there are `expected` of them:
/// they travel ahead of the result, so the client loop gets a bounded while to file them.
async fn progress_for(
    client: &Client,
    token: &ProgressToken,
    expected: usize,
) -> Vec<ProgressNotificationParam> {
    let mut progress = Vec::new();
    for _ in 0..200 {
        progress = client
            .service()
            .progress
            .lock()
            .unwrap()
            .iter()
            .filter(|notification| notification.progress_token == *token)
            .cloned()
            .collect();
        if progress.len() >= expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    progress
}

#[tokio::test]
async fn subscriptions_stream_progress_and_return_the_items() {
    let client =
        connect_duplex(McpServer::new(fixture_registry(true)).max_subscription_items(5)).await;
    let (result, progress) = call_with_progress(&client, "clock.ticks", json!({"count": 3})).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        result.structured_content,
        Some(json!({"items": [{"tick": 0}, {"tick": 1}, {"tick": 2}], "truncated": false}))
    );
    assert_eq!(progress.len(), 3);
    for (index, notification) in progress.iter().enumerate() {
        assert_eq!(notification.progress, (index + 1) as f64);
        let item: Value = serde_json::from_str(notification.message.as_deref().unwrap()).unwrap();
        assert_eq!(item, json!({"tick": index}));
    }
    // The item limit stops the stream.
    let result = call(&client, "clock.ticks", json!({"count": 20})).await;
    let content = result.structured_content.unwrap();
    assert_eq!(content["items"].as_array().unwrap().len(), 5);
    assert_eq!(content["truncated"], true);
    // A failing stream is a tool error.
    let result = call(&client, "jobs.broken", json!({})).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(error_of(&result)["message"], "the stream broke");
    client.cancel().await.unwrap();
}

/// A registry with `test.wait`, which reports when it starts and when its context is
/// cancelled.
fn waiting_registry() -> (
    OperationRegistry,
    tokio::sync::mpsc::UnboundedReceiver<&'static str>,
) {
    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("test", "wait", OperationKind::Query),
            Handler::unary(move |_input, ctx: OperationContext| {
                let events = events_tx.clone();
                async move {
                    let _ = events.send("started");
                    ctx.cancelled().await;
                    let _ = events.send("cancelled");
                    Ok(Value::Null)
                }
            }),
        )
        .unwrap();
    (registry, events_rx)
}

async fn next_event(
    events: &mut tokio::sync::mpsc::UnboundedReceiver<&'static str>,
) -> Option<&'static str> {
    tokio::time::timeout(Duration::from_secs(20), events.recv())
        .await
        .expect("the operation reports in time")
}

/// Starts `test.wait`, cancels the request, and waits for the operation to see it.
async fn check_cancellation(
    client: &Client,
    events: &mut tokio::sync::mpsc::UnboundedReceiver<&'static str>,
) {
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(CallToolRequestParams::new("test.wait"))),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    assert_eq!(next_event(events).await, Some("started"));
    handle.cancel(Some("test".to_owned())).await.unwrap();
    assert_eq!(
        next_event(events).await,
        Some("cancelled"),
        "the operation's context is cancelled"
    );
}

#[tokio::test]
async fn cancelling_a_request_cancels_the_operation() {
    // stdio (a pipe): `notifications/cancelled`.
    let (registry, mut events) = waiting_registry();
    let client = connect_duplex(McpServer::new(registry).call_timeout(None)).await;
    check_cancellation(&client, &mut events).await;
    client.cancel().await.unwrap();

    // Streamable HTTP: `notifications/cancelled` (legacy) or closing the response (2026-07-28).
    let (registry, mut events) = waiting_registry();
    let served = serve(
        axum::Router::new().nest("/mcp", McpServer::new(registry).call_timeout(None).router()),
    )
    .await;
    for mode in [None, Some(modern())] {
        let client = http_client(&served.url("/mcp"), None, mode).await;
        check_cancellation(&client, &mut events).await;
        client.cancel().await.unwrap();
    }
}

async fn http_client(url: &str, token: Option<&str>, mode: Option<ClientLifecycleMode>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token.to_owned());
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    match mode {
        Some(mode) => ProgressRecorder::default()
            .serve_with_lifecycle(transport, mode)
            .await
            .expect("client connects"),
        None => ProgressRecorder::default()
            .serve(transport)
            .await
            .expect("client connects"),
    }
}

#[tokio::test]
async fn streamable_http_serves_both_protocol_eras() {
    let served =
        serve(axum::Router::new().nest("/mcp", McpServer::new(fixture_registry(false)).router()))
            .await;
    let url = served.url("/mcp");

    let legacy = http_client(&url, None, None).await;
    assert_eq!(
        legacy.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2025_11_25
    );
    let result = call(&legacy, "math.double", json!({"n": 4})).await;
    assert_eq!(result.structured_content, Some(json!({"result": 8})));
    let (result, progress) = call_with_progress(&legacy, "clock.ticks", json!({"count": 2})).await;
    assert_eq!(
        result.structured_content.unwrap()["items"],
        json!([{"tick": 0}, {"tick": 1}])
    );
    assert_eq!(progress.len(), 2);
    legacy.cancel().await.unwrap();

    let modern_client = http_client(&url, None, Some(modern())).await;
    assert_eq!(
        modern_client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    let tools = modern_client.list_all_tools().await.unwrap();
    assert_eq!(
        output_schema(tool(&tools, "math.double")),
        Some(json!({"type": "integer"}))
    );
    assert_eq!(output_schema(tool(&tools, "web.health")), None);
    let result = call(&modern_client, "math.double", json!({"n": 4})).await;
    assert_eq!(result.structured_content, Some(json!(8)));
    let result = call(&modern_client, "web.health", json!({})).await;
    assert_eq!(result.structured_content, Some(json!({"status": "ok"})));
    let (result, progress) =
        call_with_progress(&modern_client, "clock.ticks", json!({"count": 2})).await;
    assert_eq!(
        result.structured_content.unwrap()["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(progress.len(), 2);
    modern_client.cancel().await.unwrap();
}

#[tokio::test]
async fn streamable_http_resolves_bearer_tokens() {
    let served =
        serve_mcp(McpServer::new(fixture_registry(false)).identity_resolver(fixture_tokens()))
            .await;
    let url = served.url("/mcp");
    let anonymous = http_client(&url, None, None).await;
    let result = call(&anonymous, "users.create", json!({"name": "Ada"})).await;
    assert_eq!(error_of(&result)["code"], "ACCESS_DENIED");
    anonymous.cancel().await.unwrap();

    for mode in [None, Some(modern())] {
        let writer = http_client(&url, Some("writer-token"), mode).await;
        let result = call(&writer, "users.create", json!({"name": "Ada"})).await;
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.structured_content.unwrap()["createdBy"], "writer");
        let result = call(&writer, "admin.stats", json!({})).await;
        assert_eq!(error_of(&result)["code"], "ACCESS_DENIED");
        writer.cancel().await.unwrap();
    }

    let response = reqwest::Client::new()
        .post(&url)
        .bearer_auth("wrong")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let connect = ProgressRecorder::default()
        .serve(StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url).auth_header("wrong"),
        ))
        .await;
    assert!(connect.is_err(), "a rejected token cannot connect");
}

#[tokio::test]
async fn the_stdio_example_serves_the_fixtures() {
    let binary = serve_support::example_binary("serve_stdio");
    for mode in [None, Some(modern())] {
        let transport =
            TokioChildProcess::new(tokio::process::Command::new(&binary).configure(|command| {
                command.args(["--as", "admin-token"]);
            }))
            .expect("the example starts");
        let client = match mode {
            Some(mode) => {
                ProgressRecorder::default()
                    .serve_with_lifecycle(transport, mode)
                    .await
            }
            None => ProgressRecorder::default().serve(transport).await,
        }
        .expect("the client connects over stdio");
        let info = client.peer_info().unwrap();
        assert_eq!(info.server_info.as_ref().unwrap().name, "opkit-fixtures");
        let tools = client.list_all_tools().await.unwrap();
        assert!(tools.iter().any(|tool| tool.name == "jobs.fail"));
        let result = call(&client, "admin.stats", json!({})).await;
        assert_eq!(result.structured_content, Some(json!({"operations": 7})));
        let result = call(&client, "users.create", json!({"name": "Bo"})).await;
        assert_eq!(result.structured_content.unwrap()["createdBy"], "admin");
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn round_trip_through_rmcp_gives_the_same_operations_and_data() {
    let registry = fixture_registry(false);
    let served =
        serve_mcp(McpServer::new(registry.clone()).identity_resolver(fixture_tokens())).await;
    let client = http_client(&served.url("/mcp"), Some("admin-token"), Some(modern())).await;
    let tools = client.list_all_tools().await.unwrap();
    // Same operations: one tool per spec with the same input and output schemas.
    assert_eq!(tools.len(), registry.len());
    for tool in &tools {
        let spec = registry.spec(&tool.name).expect("a tool per operation");
        assert_eq!(
            Value::Object((*tool.input_schema).clone())["properties"],
            spec.input_schema["properties"]
        );
        if spec.kind != OperationKind::Subscription && !spec.has_unknown_output() {
            assert_eq!(
                output_schema(tool),
                Some(spec.output_schema.clone().into_value()),
                "{}",
                tool.name
            );
        }
    }
    // Same data.
    let admin = fixture_tokens().get("admin-token").cloned().unwrap();
    let ctx = OperationContext::new().with_identity(admin);
    let inputs = [
        ("math.add", json!({"a": 5, "b": -7})),
        ("math.double", json!({"n": 8})),
        ("users.create", json!({"name": "Grace"})),
        ("admin.stats", json!({})),
        ("web.health", json!({})),
        (
            "text.search",
            json!({"filter": {"prefix": "a"}, "tags": ["t"], "limit": 2}),
        ),
    ];
    for (id, input) in inputs {
        let local = registry.execute(id, input.clone(), &ctx).await.unwrap();
        let remote = call(&client, id, input).await;
        assert_eq!(remote.structured_content, Some(local.data), "{id}");
    }
    let result = call(&client, "clock.ticks", json!({"count": 3})).await;
    let local: Vec<Value> = futures::StreamExt::collect::<Vec<_>>(
        registry
            .subscribe("clock.ticks", json!({"count": 3}), &ctx)
            .await
            .unwrap(),
    )
    .await
    .into_iter()
    .map(|item| item.unwrap().data)
    .collect();
    assert_eq!(result.structured_content.unwrap()["items"], json!(local));
    client.cancel().await.unwrap();
}

/// Sends one JSON-RPC line; with an `id`, returns its response (the lines before it are
/// read and left).
async fn exchange_one(
    write: &mut (impl tokio::io::AsyncWrite + Unpin),
    lines: &mut tokio::io::Lines<tokio::io::BufReader<impl tokio::io::AsyncRead + Unpin>>,
    message: Value,
) -> Option<Value> {
    exchange(write, lines, message).await.pop()
}

#[tokio::test]
async fn discover_is_answered_and_unknown_methods_are_method_not_found() {
    use tokio::io::AsyncBufReadExt;
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(McpServer::new(fixture_registry(false)).serve_io(read, write));
    let (client_read, mut client_write) = tokio::io::split(client_io);
    let mut lines = tokio::io::BufReader::new(client_read).lines();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    });
    // A 2026-07-28 client probes first: `server/discover` is answered...
    let discover = exchange_one(
        &mut client_write,
        &mut lines,
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
    )
    .await
    .unwrap();
    let versions = discover["result"]["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")));
    // ... and a legacy client can still initialize on the same connection.
    let init = exchange_one(
        &mut client_write,
        &mut lines,
        json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}
        }}),
    )
    .await
    .unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "opkit");
    exchange_one(
        &mut client_write,
        &mut lines,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let unknown = exchange_one(
        &mut client_write,
        &mut lines,
        json!({"jsonrpc": "2.0", "id": 3, "method": "no/such/method", "params": {}}),
    )
    .await
    .unwrap();
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
}

/// Adds, reading nothing from its context: the server gives its calls no reporter.
#[operation(namespace = "lean")]
async fn lean_add(a: i64, b: i64) -> i64 {
    a + b
}

#[tokio::test]
async fn a_tool_that_reads_no_context_still_reports_through_middleware() {
    let plain = OperationRegistry::new();
    plain.register_operation(lean_add).unwrap();
    // Without middleware: the call is answered (no reporter, so no progress can be sent).
    let client = connect_duplex(McpServer::new(plain.clone())).await;
    let (result, progress) =
        call_with_progress(&client, "lean.lean_add", json!({"a": 2, "b": 3})).await;
    assert_eq!(
        result.structured_content,
        Some(json!({"result": 5})),
        "{result:?}"
    );
    assert!(progress.is_empty(), "{progress:?}");
    client.cancel().await.unwrap();

    // A middleware reads the context the handler does not: it reports through it.
    let layered = plain.with_middleware(opkit::middleware::from_fn(
        |call: opkit::middleware::Call, next: opkit::middleware::Next| {
            call.ctx().progress(1.0, Some(1.0), Some("checked"));
            next.run(call)
        },
    ));
    let client = connect_duplex(McpServer::new(layered)).await;
    let (result, token) = call_with_token(&client, "lean.lean_add", json!({"a": 2, "b": 3})).await;
    assert_eq!(
        result.structured_content,
        Some(json!({"result": 5})),
        "{result:?}"
    );
    let messages: Vec<_> = progress_for(&client, &token, 1)
        .await
        .into_iter()
        .filter_map(|notification| notification.message)
        .collect();
    assert_eq!(messages, ["checked"]);
    client.cancel().await.unwrap();
}
