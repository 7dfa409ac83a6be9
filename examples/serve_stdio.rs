//! Serves the fixture operations of the workspace's tests (`opkit_testkit::fixtures`: the
//! quickstart-like set plus operations that fail on purpose) as an MCP server over stdio.
//! The tests start it as a peer; it takes the fixtures from the test kit, a dev-dependency
//! (which examples can use), so the tests and this server share one definition.
//!
//! Run with `cargo run -p opkit-adapters --features mcp-server --example serve_stdio`, or let
//! an MCP client start it. `--as <token>` makes every call come from the identity of one of
//! the fixture tokens (`writer-token`, `admin-token`, `reader-token`); without it calls are
//! anonymous. Logs go to stderr: stdout carries only MCP messages.

use opkit_adapters::mcp_server::McpServer;
use opkit_testkit::fixtures;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut identity = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--as" => {
                let token = args.next().unwrap_or_default();
                let Some(found) = fixtures::fixture_identity(&token) else {
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
    let registry = fixtures::fixture_registry(true);
    McpServer::new(registry)
        .name("opkit-fixtures")
        .version("1.0.0")
        .stdio_identity(identity)
        .serve_stdio()
        .await
}
