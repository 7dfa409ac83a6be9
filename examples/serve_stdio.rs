//! Serves the fixture operations (see `serve_fixtures.rs`: the quickstart-like set plus
//! operations that fail on purpose) as an MCP server over stdio.
//!
//! Run with `cargo run -p opkit-adapters --features mcp-server --example serve_stdio`, or let
//! an MCP client start it. `--as <token>` makes every call come from the identity of one of
//! the fixture tokens (`writer-token`, `admin-token`, `reader-token`); without it calls are
//! anonymous. Logs go to stderr: stdout carries only MCP messages.

#[path = "serve_fixtures.rs"]
mod serve_fixtures;

use opkit_adapters::mcp_server::McpServer;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut identity = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--as" => {
                let token = args.next().unwrap_or_default();
                let Some(found) = serve_fixtures::fixture_tokens().get(&token).cloned() else {
                    eprintln!("serve_stdio: unknown token {token:?}");
                    std::process::exit(2);
                };
                identity = Some(found);
            }
            other => {
                eprintln!(
                    "serve_stdio: unknown argument {other:?} (usage: serve_stdio [--as <token>])"
                );
                std::process::exit(2);
            }
        }
    }
    let registry = serve_fixtures::fixture_registry(true);
    McpServer::new(registry)
        .name("opkit-fixtures")
        .version("1.0.0")
        .stdio_identity(identity)
        .serve_stdio()
        .await
}
