//! opkit's MCP client (the MCP import) under the official MCP conformance suite's client
//! scenarios: `conformance client --command "<this binary>" --scenario <name>` starts it
//! with the scenario's server URL as the last argument and the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`.
//!
//! It connects the way an application would ([`McpConnection::connect_http`], protocol era
//! `Auto`), which lists the tools; then it makes the call the scenario expects, through a
//! registry like any imported operation, and exits non-zero on failure.
//!
//! `adapters/tests/mcp_conformance.rs` runs the scenarios.

use opkit::prelude::*;
use opkit_adapters::mcp::{McpConnection, McpOptions};
use serde_json::{Value, json};

/// The tool a scenario's server expects to be called, and its arguments.
fn expected_call(scenario: &str) -> Option<(&'static str, Value)> {
    match scenario {
        "tools_call" => Some(("add_numbers", json!({"a": 5, "b": 3}))),
        "sse-retry" => Some(("test_reconnection", json!({}))),
        "elicitation-sep1034-client-defaults" => {
            Some(("test_client_elicitation_defaults", json!({})))
        }
        _ => None,
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).ok_or(
        "usage: conformance_client <server URL> (MCP_CONFORMANCE_SCENARIO names the scenario)",
    )?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let connection =
        McpConnection::connect_http(&url, McpOptions::new("conformance").label("conformance"))
            .await?;
    eprintln!(
        "connected ({}), tools: {:?}",
        connection.protocol_version().unwrap_or_default(),
        connection.tool_names()
    );
    if let Some((tool, arguments)) = expected_call(&scenario) {
        let registry = OperationRegistry::new();
        connection.register_into(&registry)?;
        let id = connection
            .operation_id(tool)
            .ok_or_else(|| format!("the server does not list `{tool}`"))?;
        let envelope = registry
            .execute(&id, arguments, &OperationContext::new())
            .await?;
        eprintln!("{tool}: {}", serde_json::to_string(&envelope)?);
        if envelope.is_error() {
            return Err(format!("`{tool}` failed").into());
        }
    }
    connection.close();
    Ok(())
}
