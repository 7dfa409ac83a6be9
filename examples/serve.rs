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
//! operations are the quickstart's (declared with `#[operation]`, collected with
//! `OperationRegistry::from_inventory()`); `users.create` needs the scope `users:write`,
//! which the printed demo bearer token has (over stdio every call has it).

use opkit::envelope::http_envelope;
use opkit::prelude::*;
use opkit_adapters::http_server::{HttpServer, StaticTokens};
use opkit_adapters::mcp_server::McpServer;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

// The quickstart operations (the same as `examples/quickstart.rs`).

/// Adds two integers.
#[operation(namespace = "math")]
async fn add(a: i64, b: i64) -> i64 {
    a.wrapping_add(b)
}

/// What `users.create` takes.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct NewUser {
    /// The user's display name.
    name: String,
}

/// A created user.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct User {
    id: u64,
    name: String,
}

/// Creates a user.
#[operation(namespace = "users", mutation, access(scopes = ["users:write"]))]
async fn create(Input(user): Input<NewUser>) -> Result<User, CallError> {
    if user.name.trim().is_empty() {
        return Err(CallError::new(
            ErrorCode::ValidationError,
            "a name is required",
        ));
    }
    Ok(User {
        id: 1,
        name: user.name,
    })
}

/// One tick of the clock.
#[derive(Serialize, schemars::JsonSchema)]
struct Tick {
    tick: u32,
}

/// Counts up to `count`.
#[operation(namespace = "clock", subscription)]
fn ticks(count: u32) -> impl Stream<Item = Tick> + Send + 'static {
    futures::stream::iter((0..count).map(|tick| Tick { tick }))
}

/// Reports health as an HTTP response would: the operation returns its own envelope.
#[operation(namespace = "web")]
async fn health() -> ResponseEnvelope<serde_json::Value> {
    let headers = BTreeMap::from([("content-type".to_owned(), "application/json".to_owned())]);
    http_envelope(json!({"status": "ok"}), 200, headers, "application/json")
}

/// The bearer token of the demo identity, which may call `users.create`.
const DEMO_TOKEN: &str = "demo-token";

fn tokens() -> StaticTokens {
    StaticTokens::new().with(
        DEMO_TOKEN,
        Identity::new("demo").with_scopes(["users:write"]),
    )
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
    // Every `#[operation]` linked into this program: the four above.
    let registry = OperationRegistry::from_inventory();
    let mcp = McpServer::new(registry.clone())
        .name("opkit-quickstart")
        .version("1.0.0")
        .identity_resolver(tokens());
    if stdio {
        // Over stdio the caller is whoever started the process: let it create users.
        let mcp = mcp.stdio_identity(tokens().get(DEMO_TOKEN).cloned());
        mcp.serve_stdio().await?;
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let base = format!("http://{}", listener.local_addr()?);
    let http = HttpServer::new(registry.clone())
        .info("opkit quickstart", "1.0.0")
        .identity_resolver(tokens())
        .explorer("/explorer")
        .explorer_mcp_link("/mcp");
    let app = http.router().nest("/mcp", mcp.router());
    println!("opkit serves {} operations on {base}", registry.len());
    println!("  Explorer (open it in a browser): {base}/explorer");
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
    println!(
        "  try: curl -H 'Authorization: Bearer {DEMO_TOKEN}' -H 'Content-Type: application/json' -d '{{\"name\":\"Ada\"}}' {base}/ops/users.create"
    );
    println!("  MCP (Streamable HTTP): {base}/mcp  (bearer token {DEMO_TOKEN} may create users)");
    println!(
        "  MCP (stdio): cargo run -p opkit-adapters --features http-server,mcp-server --example serve -- --stdio"
    );
    axum::serve(listener, app).await?;
    Ok(())
}
