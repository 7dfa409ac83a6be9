//! Serves the quickstart operations over HTTP (with `/openapi.json` and SSE) and MCP
//! (Streamable HTTP at `/mcp`) on one 127.0.0.1 port, and prints the URLs.
//!
//! ```sh
//! cargo run -p opkit-adapters --features http-server,mcp-server --example serve
//! cargo run -p opkit-adapters --features http-server,mcp-server --example serve -- --port 8080
//! cargo run -p opkit-adapters --features http-server,mcp-server --example serve -- --stdio
//! ```
//!
//! `--stdio` serves the same operations as an MCP server over stdin/stdout instead. The
//! operations are registered by hand with `OperationSpec` and `Handler` (the same ones as
//! `examples/quickstart.rs`).

use futures::StreamExt;
use opkit::envelope::http_envelope;
use opkit::prelude::*;
use opkit_adapters::http_server::HttpServer;
use opkit_adapters::mcp_server::McpServer;
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn quickstart_registry() -> Result<OperationRegistry, opkit::RegistryError> {
    let registry = OperationRegistry::new();
    registry.register(
        OperationSpec::new("math", "add", OperationKind::Query)
            .description("Adds two integers.")
            .input_schema(object_schema(
                json!({"a": {"type": "integer"}, "b": {"type": "integer"}}),
                &["a", "b"],
            ))
            .output_schema(object_schema(json!({"sum": {"type": "integer"}}), &["sum"])),
        Handler::unary(|input, _ctx| async move {
            let a = input["a"].as_i64().unwrap_or(0);
            let b = input["b"].as_i64().unwrap_or(0);
            Ok(json!({"sum": a.wrapping_add(b)}))
        }),
    )?;
    registry.register(
        OperationSpec::new("users", "create", OperationKind::Mutation)
            .description("Creates a user.")
            .input_schema(object_schema(
                json!({"name": {"type": "string"}}),
                &["name"],
            ))
            .output_schema(object_schema(
                json!({"id": {"type": "integer"}, "name": {"type": "string"}}),
                &["id", "name"],
            )),
        Handler::unary(|input, _ctx| async move { Ok(json!({"id": 1, "name": input["name"]})) }),
    )?;
    registry.register(
        OperationSpec::new("clock", "ticks", OperationKind::Subscription)
            .description("Counts up to `count`.")
            .input_schema(object_schema(
                json!({"count": {"type": "integer", "minimum": 0}}),
                &["count"],
            ))
            .output_schema(object_schema(
                json!({"tick": {"type": "integer"}}),
                &["tick"],
            )),
        Handler::stream(|input, _ctx| {
            let count = input["count"].as_u64().unwrap_or(0);
            futures::stream::iter(0..count).map(|tick| Ok(json!({"tick": tick})))
        }),
    )?;
    registry.register(
        OperationSpec::new("web", "health", OperationKind::Query)
            .description("Reports health as an HTTP response would."),
        Handler::unary(|_input, _ctx| async move {
            let headers =
                BTreeMap::from([("content-type".to_owned(), "application/json".to_owned())]);
            let envelope = http_envelope(json!({"status": "ok"}), 200, headers, "application/json");
            serde_json::to_value(envelope).map_err(|error| CallError::execution(error.to_string()))
        }),
    )?;
    Ok(registry)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port = 0_u16;
    let mut stdio = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--stdio" => stdio = true,
            "--port" => port = args.next().ok_or("--port needs a number")?.parse()?,
            other => {
                return Err(format!(
                    "unknown argument {other:?} (usage: serve [--port N] [--stdio])"
                )
                .into());
            }
        }
    }
    let registry = quickstart_registry()?;
    let mcp = McpServer::new(registry.clone())
        .name("opkit-quickstart")
        .version("1.0.0");
    if stdio {
        mcp.serve_stdio().await?;
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let base = format!("http://{}", listener.local_addr()?);
    let http = HttpServer::new(registry.clone()).info("opkit quickstart", "1.0.0");
    let app = http.router().merge(mcp.router());
    println!("opkit serves {} operations on {base}", registry.len());
    println!("  OpenAPI document: {base}/openapi.json");
    for spec in registry.specs() {
        println!(
            "  HTTP {:<12}  {base}/ops/{}",
            spec.kind.as_str(),
            spec.id()
        );
    }
    println!("  try: curl '{base}/ops/math.add?a=2&b=40'");
    println!("  try: curl -N '{base}/ops/clock.ticks?count=3'");
    println!("  MCP (Streamable HTTP): {base}/mcp");
    println!(
        "  MCP (stdio): cargo run -p opkit-adapters --features http-server,mcp-server --example serve -- --stdio"
    );
    axum::serve(listener, app).await?;
    Ok(())
}
