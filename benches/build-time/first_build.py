#!/usr/bin/env python3
"""Generates the first-build benchmark (issue 50): one small service written twice, each in a
cargo workspace of its own (so neither's features leak into the other's dependencies):

- fb_opkit: 10 `#[operation]` fns served over HTTP (`HttpServer`, with its OpenAPI document)
  and MCP (`McpServer`, Streamable HTTP) on one axum listener, by opkit-adapters with the
  features `http-server` and `mcp-server`;
- fb_peers: the same 10 operations as axum handlers on a `Router` (HTTP) and as rmcp `#[tool]`
  methods on rmcp's `StreamableHttpService` (MCP), on one listener.

    python3 first_build.py OUT_DIR

Each operation takes a 4-field input and returns a 2-field output (serde and schemars derives
on both, as in generate.py). The opkit crate depends on this checkout by path; the peers on the
versions benches/ uses. benches/Cargo.lock is copied into each workspace, so cargo resolves
the versions the benches already use.
"""
import os
import shutil
import sys

from shape import axum_handler, opkit_operation, rmcp_server, types

N = 10
OUT = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


MAIN_ARGS = """
/// `--check` builds the service and exits (the benchmark only builds it).
fn only_check() -> bool {
    std::env::args().any(|arg| arg == "--check")
}
"""

# The end of both services' `main`: serve `app` (unless only checking).
MAIN_TAIL = """    if only_check() {
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    axum::serve(listener, app).await?;
    Ok(())
}
"""


def opkit_main():
    out = ["//! A service of 10 operations over HTTP and MCP, written with opkit.\n",
           "use opkit::prelude::*;\n",
           "use opkit_adapters::http_server::HttpServer;\n",
           "use opkit_adapters::mcp_server::McpServer;\n"]
    for i in range(N):
        out.append(types(i))
        out.append(opkit_operation(i, "svc"))
    out.append(MAIN_ARGS)
    out.append("""
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = OperationRegistry::from_inventory();
    let mcp = McpServer::new(registry.clone()).name("svc").version("1.0.0");
    let app = HttpServer::new(registry).info("svc", "1.0.0").router().nest("/mcp", mcp.router());
""")
    out.append(MAIN_TAIL)
    return "".join(out)


def peers_main():
    out = ["//! A service of 10 operations over HTTP and MCP, written with axum and rmcp.\n",
           "use axum::Json;\n",
           "use rmcp::handler::server::router::tool::ToolRouter;\n",
           "use rmcp::handler::server::wrapper::{Json as McpJson, Parameters};\n",
           "use rmcp::transport::streamable_http_server::StreamableHttpService;\n",
           "use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;\n",
           "use rmcp::{ServerHandler, tool, tool_handler, tool_router};\n",
           "use std::sync::Arc;\n"]
    for i in range(N):
        out.append(types(i))
        out.append(axum_handler(i, f"Operation {i} over HTTP."))
    out.append(rmcp_server(N, "svc", "McpJson", "The MCP server.", "#[derive(Clone)]\n"))
    out.append(MAIN_ARGS)
    out.append("""
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mcp = StreamableHttpService::new(
        || Ok(Server::default()),
        Arc::new(LocalSessionManager::default()),
        Default::default(),
    );
    let app = axum::Router::new()
""")
    for i in range(N):
        out.append(f"        .route(\"/ops/svc.op{i}\", axum::routing::post(op{i}))\n")
    out.append("""        .nest_service("/mcp", mcp);
""")
    out.append(MAIN_TAIL)
    return "".join(out)


COMMON = (
    'serde = { version = "1", features = ["derive"] }\n'
    'schemars = "1.2"\n'
    'tokio = { version = "1.47", features = ["rt-multi-thread", "macros", "net"] }\n'
    'axum = "0.8.9"\n'
)

CRATES = {
    "fb_opkit": (
        opkit_main,
        f'opkit = {{ path = "{ROOT}/core" }}\n'
        f'opkit-adapters = {{ path = "{ROOT}/adapters", features = ["http-server", "mcp-server"] }}\n',
    ),
    "fb_peers": (
        peers_main,
        'rmcp = { version = "3.11", default-features = false, features = ["server", "macros", "transport-streamable-http-server"] }\n',
    ),
}

for name, (make, dependencies) in CRATES.items():
    crate = os.path.join(OUT, name)
    os.makedirs(os.path.join(crate, "src"), exist_ok=True)
    with open(os.path.join(crate, "Cargo.toml"), "w") as f:
        f.write(f'[package]\nname = "{name}"\nversion = "0.0.0"\nedition = "2024"\npublish = false\n\n')
        f.write("[workspace]\n\n[dependencies]\n" + COMMON + dependencies)
    with open(os.path.join(crate, "src", "main.rs"), "w") as f:
        f.write(make())
    shutil.copyfile(os.path.join(ROOT, "benches", "Cargo.lock"), os.path.join(crate, "Cargo.lock"))
