//! Imports an MCP server's tools as operations, lists them, calls one and prints the envelope.
//!
//! ```sh
//! # stdio: the command line of the server after `--`
//! cargo run -p opkit-adapters --features mcp --example mcp -- \
//!     [--call TOOL] [--args JSON] -- node adapters/peers/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
//! # Streamable HTTP: a URL
//! cargo run -p opkit-adapters --features mcp --example mcp -- \
//!     --call get-sum --args '{"a": 2, "b": 40}' http://127.0.0.1:3001/mcp
//! ```
//!
//! Without `--call`, the first tool that needs no arguments is called (if any).
//! `--bearer TOKEN` sends a bearer token over HTTP; `--legacy` / `--modern` pin the protocol era.

use opkit::{OperationContext, OperationRegistry};
use opkit_adapters::mcp::{McpConnection, McpLifecycle, McpOptions};
use serde_json::{Value, json};
use std::time::Duration;

const USAGE: &str = "usage: mcp [--call TOOL] [--args JSON] [--bearer TOKEN] [--legacy|--modern] (URL | -- COMMAND [ARGS...])";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut tool: Option<String> = None;
    let mut input = json!({});
    let mut options = McpOptions::new("remote");
    let mut target: Vec<String> = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--call" => tool = Some(args.next().ok_or(USAGE)?),
            "--args" => input = serde_json::from_str(&args.next().ok_or(USAGE)?)?,
            "--bearer" => options = options.bearer_token(args.next().ok_or(USAGE)?),
            "--legacy" => options = options.lifecycle(McpLifecycle::Legacy),
            "--modern" => options = options.lifecycle(McpLifecycle::Modern),
            "--" => {
                target.extend(args.by_ref());
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ => target.push(arg),
        }
    }
    let connection = match target.as_slice() {
        [url] if url.starts_with("http://") || url.starts_with("https://") => {
            McpConnection::connect_http(url, options).await?
        }
        [command, rest @ ..] => {
            McpConnection::connect_stdio(command, rest, std::iter::empty::<(&str, &str)>(), options)
                .await?
        }
        [] => return Err(USAGE.into()),
    };
    println!(
        "connected to {} (protocol {})",
        connection.label(),
        connection.protocol_version().unwrap_or_default()
    );

    let registry = OperationRegistry::new();
    connection.register_into(&registry)?;
    println!("{} operations:", registry.len());
    for spec in registry.specs() {
        println!(
            "  {:<45} {:<9} tool {:?}",
            spec.id(),
            spec.kind.as_str(),
            connection.tool_name(&spec.id()).unwrap_or_default()
        );
    }

    let tool = match tool {
        Some(tool) => tool,
        None => match registry
            .specs()
            .into_iter()
            .find(|spec| !has_required_input(&spec.input_schema))
        {
            Some(spec) => connection.tool_name(&spec.id()).unwrap_or_default(),
            None => {
                println!("no tool can be called without arguments; pass --call and --args");
                return Ok(());
            }
        },
    };
    let id = connection
        .operation_id(&tool)
        .ok_or_else(|| format!("the server has no tool {tool:?}"))?;
    println!("calling {id} (tool {tool:?}) with {input}");
    let ctx = OperationContext::new().with_timeout(Duration::from_secs(60));
    match registry.execute(&id, input, &ctx).await {
        Ok(envelope) => println!("{}", serde_json::to_string_pretty(&envelope)?),
        Err(error) => println!("error: {}", serde_json::to_string_pretty(&error)?),
    }
    connection.close();
    Ok(())
}

fn has_required_input(schema: &Value) -> bool {
    schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|required| !required.is_empty())
}
