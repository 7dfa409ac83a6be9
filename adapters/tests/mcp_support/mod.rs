//! Shared harness of the `mcp_*` tests: where the pinned peers live, and the MCP
//! connections the tests make to them; the servers themselves are the test kit's
//! (`opkit_testkit::peers`: on 127.0.0.1 only, killed by PID on drop).
#![allow(dead_code)]

use opkit::envelope::{McpMeta, ResponseMeta};
use opkit::{OperationContext, OperationRegistry, ResponseEnvelope};
use opkit_adapters::mcp::{McpConnection, McpOptions};
use opkit_testkit::peers;
#[allow(unused_imports)]
pub use opkit_testkit::peers::{
    PeerProcess as ServerProcess, everything_js, node, start_everything_http,
};
#[allow(unused_imports)]
pub use opkit_testkit::ports::free_port;
#[allow(unused_imports)]
pub use opkit_testkit::process::PidGuard;
use serde_json::Value;
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// `adapters/peers/mcp`: package.json, requirements.txt and the Python servers.
pub fn peers_dir() -> PathBuf {
    peers::peers_dir("mcp")
}

/// A file of the peers directory, or a failure that says how to install it.
pub fn peer_file(relative: &str) -> PathBuf {
    peers::peer_file("mcp", relative)
}

/// The Python of `adapters/peers/mcp/.venv`, where the pinned `mcp` SDK is installed.
pub fn python() -> PathBuf {
    peers::mcp_python()
}

/// server-filesystem's entry point.
pub fn filesystem_js() -> PathBuf {
    peer_file("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
}

/// The Python structured-output server over Streamable HTTP on 127.0.0.1.
pub fn start_python_http() -> ServerProcess {
    peers::start_python_mcp_http()
}

/// Every address listening on `port` (from /proc/net/tcp and tcp6), e.g. `127.0.0.1`.
pub fn listening_addresses(port: u16) -> Vec<String> {
    let mut found = Vec::new();
    for (file, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        let Ok(table) = std::fs::read_to_string(file) else {
            continue;
        };
        for line in table.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state)) = (fields.get(1), fields.get(3)) else {
                continue;
            };
            let Some((address, port_hex)) = local.split_once(':') else {
                continue;
            };
            if *state != "0A" || u16::from_str_radix(port_hex, 16) != Ok(port) {
                continue;
            }
            found.push(decode_address(address, v6));
        }
    }
    found
}

fn decode_address(hex: &str, v6: bool) -> String {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .filter_map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect();
    if !v6 && bytes.len() == 4 {
        // Little-endian u32.
        return Ipv4Addr::new(bytes[3], bytes[2], bytes[1], bytes[0]).to_string();
    }
    let mut words = [0u8; 16];
    for (chunk, out) in bytes.chunks(4).zip(words.chunks_mut(4)) {
        out.copy_from_slice(&[chunk[3], chunk[2], chunk[1], chunk[0]]);
    }
    std::net::Ipv6Addr::from(words).to_string()
}

/// Asserts that whatever listens on `port` listens on loopback only.
pub fn assert_loopback_only(port: u16) {
    let addresses = listening_addresses(port);
    assert!(!addresses.is_empty(), "nothing listens on port {port}");
    for address in &addresses {
        assert!(
            address == "127.0.0.1" || address == "::1" || address == "::ffff:127.0.0.1",
            "port {port} listens on {address}, not on loopback only: {addresses:?}"
        );
    }
}

/// Connects to server-everything over stdio.
pub async fn everything_stdio(namespace: &str) -> (McpConnection, PidGuard) {
    everything_stdio_with(McpOptions::new(namespace)).await
}

/// [`everything_stdio`] with `options` (its label set).
pub async fn everything_stdio_with(options: McpOptions) -> (McpConnection, PidGuard) {
    let connection = McpConnection::connect_stdio(
        node(),
        [everything_js().into_os_string(), "stdio".into()],
        std::iter::empty::<(&str, &str)>(),
        options.label("server-everything"),
    )
    .await
    .expect("connect to server-everything over stdio");
    let guard = PidGuard(connection.server_pid());
    (connection, guard)
}

/// Connects to the Python structured server over stdio.
pub async fn python_stdio(options: McpOptions) -> (McpConnection, PidGuard) {
    let connection = McpConnection::connect_stdio(
        python(),
        [peer_file("structured_server.py")],
        [("PYTHONUNBUFFERED", "1")],
        options,
    )
    .await
    .expect("connect to structured_server.py over stdio");
    let guard = PidGuard(connection.server_pid());
    (connection, guard)
}

/// A registry holding `connection`'s operations.
pub fn registry_of(connection: &McpConnection) -> OperationRegistry {
    let registry = OperationRegistry::new();
    connection
        .register_into(&registry)
        .expect("register the imported operations");
    registry
}

/// The MCP details of an envelope an imported tool answered; panics on another kind.
pub fn meta(envelope: &ResponseEnvelope) -> &McpMeta {
    match &envelope.meta {
        ResponseMeta::Mcp(meta) => meta,
        other => panic!("expected an MCP envelope, got {other:?}"),
    }
}

/// Runs `id` with `input` in `registry` anonymously; panics naming `id` when it fails.
pub async fn call(registry: &OperationRegistry, id: &str, input: Value) -> ResponseEnvelope {
    registry
        .execute(id, input, &OperationContext::default())
        .await
        .unwrap_or_else(|error| panic!("{id} failed: {error}"))
}
