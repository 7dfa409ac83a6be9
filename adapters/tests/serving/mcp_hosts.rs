//! What MCP hosts see of served operations, checked on the wire and with the official
//! TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned in adapters/peers/conformance):
//! standard JSON Schema in every tool (no schemars number formats, whose ajv validator
//! warns about each one on every `listTools`); a `String` result as its plain text; an
//! operation's own tool `_meta`; provider-safe and shortened tool names; no log messages to a 2026-07-28
//! client that did not ask for them. Also with the official Python SDK
//! client (`mcp`, adapters/peers/serve/requirements.txt).
#![cfg(feature = "mcp-server")]

use crate::serve_support;

use opkit::prelude::*;
use opkit::report::LogLevel;
use opkit_adapters::mcp_server::{McpServer, ToolNaming};
use rmcp::ServiceExt;
use rmcp::model::Tool;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use serve_support::{exchange, python_mcp_client, serve, ts_client_with_stderr};

/// Every kind of number schemars marks with a format of its own.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Sizes {
    small: u8,
    count: u32,
    big: u64,
    signed: i64,
    ratio: f64,
}

/// Echoes its sizes.
#[operation(namespace = "hosts")]
async fn sizes(Input(sizes): Input<Sizes>) -> Sizes {
    sizes
}

/// Numbers as parameters, a number as the output.
#[operation(namespace = "hosts")]
async fn total(small: u8, count: u32, tiny: i16) -> u64 {
    u64::from(small) + u64::from(count) + tiny.unsigned_abs() as u64
}

/// Greets someone: a `String` result (and a `_meta` of its own).
#[operation(
    namespace = "hosts",
    mcp(
        title = "Greeter",
        tool_meta = r#"{"ui": {"resourceUri": "ui://hosts/greet"}}"#
    )
)]
async fn greet(name: String) -> String {
    format!("hello, {name}")
}

/// Logs while it runs.
#[operation(namespace = "hosts")]
async fn chatty(ctx: &OperationContext) -> String {
    ctx.log(LogLevel::Debug, "details");
    ctx.log(LogLevel::Warning, "careful");
    "done".to_owned()
}

fn registry() -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry.register_operation(chatty).unwrap();
    registry.register_operation(greet).unwrap();
    registry.register_operation(sizes).unwrap();
    registry.register_operation(total).unwrap();
    // A dynamic operation with the formats of an imported OpenAPI document.
    registry
        .register(
            OperationSpec::new("hosts", "imported", OperationKind::Query)
                .input_schema(json!({
                    "type": "object",
                    "properties": {"id": {"type": "integer", "format": "int64"}},
                    "required": ["id"]
                }))
                .output_schema(json!({
                    "type": "object",
                    "properties": {"weight": {"type": "number", "format": "float"}}
                })),
            Handler::unary(|input, _ctx| async move { Ok(json!({"weight": input["id"]})) }),
        )
        .unwrap();
    registry
}

/// A legacy rmcp client of `server`, in-process.
async fn connect(server: McpServer) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(server.serve_io(read, write));
    ().serve(client_io).await.expect("client connects")
}

/// The tools of `server` as a legacy rmcp client lists them.
async fn list_tools(server: McpServer) -> Vec<Tool> {
    let client = connect(server).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    client.cancel().await.unwrap();
    tools
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|tool| tool.name == name)
        .unwrap_or_else(|| panic!("tool {name} is listed"))
}

/// Every `format` anywhere in `value`.
fn formats(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "format" {
                    found.push(value.to_string());
                }
                formats(value, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| formats(item, found)),
        _ => {}
    }
}

#[tokio::test]
async fn tool_schemas_are_standard_json_schema_with_the_bounds() {
    let tools = list_tools(McpServer::new(registry())).await;
    let wire = serde_json::to_value(&tools).unwrap();
    let mut found = Vec::new();
    formats(&wire, &mut found);
    assert!(found.is_empty(), "formats {found:?} in {wire}");

    let sizes = tool(&tools, "hosts.sizes");
    let bounds = |schema: &Value, property: &str| {
        let property = &schema["properties"][property];
        (property["minimum"].clone(), property["maximum"].clone())
    };
    for schema in [
        Value::Object((*sizes.input_schema).clone()),
        Value::Object((**sizes.output_schema.as_ref().expect("an outputSchema")).clone()),
    ] {
        assert_eq!(bounds(&schema, "small"), (json!(0), json!(255)), "{schema}");
        assert_eq!(
            bounds(&schema, "count"),
            (json!(0), json!(u32::MAX)),
            "{schema}"
        );
        assert_eq!(
            bounds(&schema, "big"),
            (json!(0), json!(u64::MAX)),
            "{schema}"
        );
        // A signed type gets no lower bound: opkit's cast would create it (see
        // `opkit::schema::standard_formats`).
        assert_eq!(
            bounds(&schema, "signed"),
            (Value::Null, json!(i64::MAX)),
            "{schema}"
        );
        assert_eq!(schema["properties"]["ratio"], json!({"type": "number"}));
    }
    let total = Value::Object((*tool(&tools, "hosts.total").input_schema).clone());
    assert_eq!(bounds(&total, "tiny"), (json!(-32768), json!(32767)));
    assert_eq!(bounds(&total, "count"), (json!(0), json!(u32::MAX)));
    let output = tool(&tools, "hosts.total").output_schema.clone().unwrap();
    let result = &output["properties"]["result"];
    assert_eq!(
        (&result["type"], &result["minimum"], &result["maximum"]),
        (&json!("integer"), &json!(0), &json!(u64::MAX))
    );
    let imported = tool(&tools, "hosts.imported");
    assert_eq!(
        imported.input_schema["properties"]["id"],
        json!({"type": "integer", "maximum": i64::MAX})
    );
}

#[tokio::test]
async fn the_typescript_sdk_client_lists_and_calls_without_schema_warnings() {
    let served = serve(axum::Router::new().nest("/mcp", McpServer::new(registry()).router())).await;
    let calls = json!([
        {"name": "hosts.sizes", "arguments": {"small": 7, "count": 70000, "big": 5, "signed": -3, "ratio": 0.5}},
        {"name": "hosts.total", "arguments": {"small": 1, "count": 2, "tiny": -3}},
        {"name": "hosts.imported", "arguments": {"id": 4}},
        {"name": "hosts.greet", "arguments": {"name": "Ada"}},
    ]);
    let (report, stderr) = ts_client_with_stderr(&served.url("/mcp"), "", &calls).await;
    assert_eq!(
        report["tools"].as_array().map(Vec::len),
        Some(5),
        "{report}"
    );
    for index in 0..4 {
        let entry = &report["calls"][index];
        assert!(entry.get("error").is_none(), "call {index}: {entry}");
        assert_eq!(entry["result"]["isError"], false, "call {index}: {entry}");
    }
    assert_eq!(
        report["calls"][0]["result"]["structuredContent"],
        json!({"small": 7, "count": 70000, "big": 5, "signed": -3, "ratio": 0.5})
    );
    assert!(
        !stderr.contains("unknown format"),
        "the SDK's validator warned:\n{stderr}"
    );
    // The SDK negotiates 2025-11-25 (a legacy client): the string is wrapped for
    // `structuredContent`, and its text is the string itself.
    assert_eq!(
        report["calls"][3]["result"]["content"],
        json!([{"type": "text", "text": "hello, Ada"}])
    );
    assert_eq!(
        report["calls"][3]["result"]["structuredContent"],
        json!({"result": "hello, Ada"})
    );
}

#[tokio::test]
async fn a_string_result_is_its_plain_text() {
    let client = connect(McpServer::new(registry())).await;
    let params = rmcp::model::CallToolRequestParams::new("hosts.greet").with_arguments(
        json!({"name": "Ada \"the\" first"})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let result = client.call_tool(params).await.expect("a result");
    let wire = serde_json::to_value(&result).unwrap();
    assert_eq!(
        wire["content"],
        json!([{"type": "text", "text": "hello, Ada \"the\" first"}])
    );
    assert_eq!(
        wire["structuredContent"],
        json!({"result": "hello, Ada \"the\" first"})
    );
    // Other data is still its JSON.
    let params = rmcp::model::CallToolRequestParams::new("hosts.total").with_arguments(
        json!({"small": 1, "count": 2, "tiny": 3})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let result = client.call_tool(params).await.expect("a result");
    assert_eq!(result.content[0].as_text().unwrap().text, r#"{"result":6}"#);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_python_sdk_client_gets_a_string_as_plain_text_in_both_eras() {
    let served = serve(axum::Router::new().nest("/mcp", McpServer::new(registry()).router())).await;
    let url = served.url("/mcp");
    let calls = json!([{"name": "hosts.greet", "arguments": {"name": "Ada"}}]);
    for (mode, structured) in [
        ("auto", json!("hello, Ada")),
        ("legacy", json!({"result": "hello, Ada"})),
    ] {
        let report = python_mcp_client(&["--http", &url, "--mode", mode], &calls).await;
        let entry = &report["calls"][0];
        assert!(entry.get("error").is_none(), "{mode}: {entry}");
        let result = &entry["result"];
        assert_eq!(
            result["content"],
            json!([{"type": "text", "text": "hello, Ada"}]),
            "{mode}: {result}"
        );
        assert_eq!(result["structuredContent"], structured, "{mode}: {result}");
        assert_eq!(result["isError"], false, "{mode}: {result}");
    }
}

#[tokio::test]
async fn an_operations_tool_meta_is_listed_and_a_bad_one_refused() {
    let registry = registry();
    registry
        .register(
            OperationSpec::new("hosts", "board", OperationKind::Query).with_edge_option(
                opkit_adapters::mcp_server::MCP_EDGE,
                "tool_meta",
                json!({"ui": {"resourceUri": "ui://hosts/board"}, "opkit/kind": "not this"}),
            ),
            Handler::unary(|_input, _ctx| async move { Ok(json!({})) }),
        )
        .unwrap();
    let tools = list_tools(McpServer::new(registry.clone())).await;
    let meta = &tool(&tools, "hosts.board").meta.as_ref().expect("_meta").0;
    assert_eq!(meta["ui"], json!({"resourceUri": "ui://hosts/board"}));
    assert_eq!(meta["opkit/kind"], "QUERY");
    assert_eq!(meta["opkit/operationId"], "hosts.board");
    // From `#[operation(mcp(tool_meta = ..))]`.
    let meta = &tool(&tools, "hosts.greet").meta.as_ref().expect("_meta").0;
    assert_eq!(meta["ui"], json!({"resourceUri": "ui://hosts/greet"}));
    assert_eq!(
        tool(&tools, "hosts.greet").title.as_deref(),
        Some("Greeter")
    );
    assert_eq!(tool(&tools, "hosts.total").title, None);
    // The other tools carry only opkit's keys.
    let meta = &tool(&tools, "hosts.total").meta.as_ref().expect("_meta").0;
    assert!(meta.keys().all(|key| key.starts_with("opkit/")), "{meta:?}");

    registry
        .register(
            OperationSpec::new("hosts", "odd", OperationKind::Query).with_edge_option(
                opkit_adapters::mcp_server::MCP_EDGE,
                "tool_meta",
                json!("ui://hosts/odd"),
            ),
            Handler::unary(|_input, _ctx| async move { Ok(json!({})) }),
        )
        .unwrap();
    let error = McpServer::new(registry).check().unwrap_err();
    assert!(
        matches!(
            &error,
            opkit_adapters::mcp_server::McpServerError::Options(error) if error.operation() == "hosts.odd"
        ),
        "{error}"
    );
    assert!(error.to_string().contains("tool_meta"), "{error}");
}

#[tokio::test]
async fn provider_safe_names_are_listed_called_and_checked() {
    let server = || McpServer::new(registry()).tool_naming(ToolNaming::ProviderSafe);
    let tools = list_tools(server()).await;
    let provider_rule = |name: &str| {
        (1..=64).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert!(names.iter().all(|name| provider_rule(name)), "{names:?}");
    assert!(names.contains(&"hosts_greet"), "{names:?}");
    let client = connect(server()).await;
    let params = rmcp::model::CallToolRequestParams::new("hosts_greet")
        .with_arguments(json!({"name": "Ada"}).as_object().cloned().unwrap());
    let result = client.call_tool(params).await.expect("a result");
    assert_eq!(result.content[0].as_text().unwrap().text, "hello, Ada");
    client.cancel().await.unwrap();

    // `hosts.a_b` and `hosts_a.b` would both be `hosts_a_b`, and an imported id may be
    // longer than 64 characters: each is served under a shortened name, with its id in the
    // tool's `_meta`, and called by it.
    let registry = OperationRegistry::new();
    let long = format!("get_{}", "deeply_nested_".repeat(8));
    for (namespace, name) in [("hosts", "a_b"), ("hosts_a", "b"), ("graph", long.as_str())] {
        let id = format!("{namespace}.{name}");
        registry
            .register(
                OperationSpec::new(namespace, name, OperationKind::Query),
                Handler::unary(move |_input, _ctx| {
                    let id = id.clone();
                    async move { Ok(json!({"operation": id})) }
                }),
            )
            .unwrap();
    }
    let server = || McpServer::new(registry.clone()).tool_naming(ToolNaming::ProviderSafe);
    server()
        .check()
        .expect("names that ids give are never refused");
    let tools = list_tools(server()).await;
    assert_eq!(tools.len(), 3);
    let client = connect(server()).await;
    for tool in &tools {
        assert!(provider_rule(&tool.name), "{}", tool.name);
        let id = tool.meta.as_ref().unwrap().0["opkit/operationId"].clone();
        let params = rmcp::model::CallToolRequestParams::new(tool.name.clone())
            .with_arguments(json!({}).as_object().cloned().unwrap());
        let result = client.call_tool(params).await.expect("a result");
        let text = &result.content[0].as_text().expect("a text block").text;
        let answer: Value = serde_json::from_str(text).expect("JSON text");
        assert_eq!(answer["result"]["operation"], id, "{}: {text}", tool.name);
    }
    client.cancel().await.unwrap();
    let again: Vec<_> = list_tools(server())
        .await
        .into_iter()
        .map(|t| t.name)
        .collect();
    let first: Vec<_> = tools.into_iter().map(|t| t.name).collect();
    assert_eq!(first, again, "the same names on every start");
}

/// The `(level, data)` of every `notifications/message` in `lines`.
fn log_messages(lines: &[Value]) -> Vec<(String, Value)> {
    lines
        .iter()
        .filter(|line| line["method"] == "notifications/message")
        .map(|line| {
            let level = line["params"]["level"].as_str().unwrap_or_default();
            (level.to_owned(), line["params"]["data"].clone())
        })
        .collect()
}

#[tokio::test]
async fn logs_reach_a_2026_client_only_at_the_level_its_request_asks_for() {
    use tokio::io::AsyncBufReadExt;
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(McpServer::new(registry()).serve_io(read, write));
    let (client_read, mut client_write) = tokio::io::split(client_io);
    let mut lines = tokio::io::BufReader::new(client_read).lines();
    let modern_call = |id: u64, level: Option<&str>| {
        let mut meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
        });
        if let Some(level) = level {
            meta["io.modelcontextprotocol/logLevel"] = json!(level);
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "hosts.chatty", "arguments": {}, "_meta": meta
        }})
    };
    // No `logLevel`: the client did not opt in, no message.
    let read = exchange(&mut client_write, &mut lines, modern_call(1, None)).await;
    let response = read.last().unwrap();
    assert_eq!(
        response["result"]["content"][0]["text"], "done",
        "{response}"
    );
    assert_eq!(log_messages(&read), vec![], "{read:?}");
    // `warning`: only the warning.
    let read = exchange(
        &mut client_write,
        &mut lines,
        modern_call(2, Some("warning")),
    )
    .await;
    assert_eq!(
        log_messages(&read),
        vec![("warning".to_owned(), json!("careful"))],
        "{read:?}"
    );
    // `debug`: both, in order.
    let read = exchange(&mut client_write, &mut lines, modern_call(3, Some("debug"))).await;
    assert_eq!(
        log_messages(&read),
        vec![
            ("debug".to_owned(), json!("details")),
            ("warning".to_owned(), json!("careful"))
        ],
        "{read:?}"
    );
    // A legacy client (on a connection of its own) that set no level still gets everything.
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(McpServer::new(registry()).serve_io(read, write));
    let (client_read, mut client_write) = tokio::io::split(client_io);
    let mut lines = tokio::io::BufReader::new(client_read).lines();
    exchange(
        &mut client_write,
        &mut lines,
        json!({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}
        }}),
    )
    .await;
    exchange(
        &mut client_write,
        &mut lines,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let read = exchange(
        &mut client_write,
        &mut lines,
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "hosts.chatty", "arguments": {}
        }}),
    )
    .await;
    assert_eq!(log_messages(&read).len(), 2, "{read:?}");
}
