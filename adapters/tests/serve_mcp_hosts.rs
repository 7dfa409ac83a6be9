//! What MCP hosts see of served operations, checked on the wire and with the official
//! TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned in adapters/peers/conformance):
//! standard JSON Schema in every tool (no schemars number formats, whose ajv validator
//! warns about each one on every `listTools`).
#![cfg(feature = "mcp-server")]

mod serve_support;

use opkit::prelude::*;
use opkit_adapters::mcp_server::McpServer;
use rmcp::ServiceExt;
use rmcp::model::Tool;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use serve_support::{serve, ts_client_with_stderr};

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

fn registry() -> OperationRegistry {
    let registry = OperationRegistry::new();
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

/// The tools of `server` as a legacy rmcp client lists them (in-process).
async fn list_tools(server: McpServer) -> Vec<Tool> {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(server.serve_io(read, write));
    let client = ().serve(client_io).await.expect("client connects");
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
        assert_eq!(
            bounds(&schema, "signed"),
            (json!(i64::MIN), json!(i64::MAX)),
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
        json!({"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX})
    );
}

#[tokio::test]
async fn the_typescript_sdk_client_lists_and_calls_without_schema_warnings() {
    let served = serve(axum::Router::new().nest("/mcp", McpServer::new(registry()).router())).await;
    let calls = json!([
        {"name": "hosts.sizes", "arguments": {"small": 7, "count": 70000, "big": 5, "signed": -3, "ratio": 0.5}},
        {"name": "hosts.total", "arguments": {"small": 1, "count": 2, "tiny": -3}},
        {"name": "hosts.imported", "arguments": {"id": 4}},
    ]);
    let (report, stderr) = ts_client_with_stderr(&served.url("/mcp"), "", &calls).await;
    assert_eq!(
        report["tools"].as_array().map(Vec::len),
        Some(3),
        "{report}"
    );
    for index in 0..3 {
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
}
