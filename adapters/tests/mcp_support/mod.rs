//! Shared harness of the `mcp_*` tests: where the pinned peers live, free loopback ports,
//! servers started on 127.0.0.1 only and killed by PID on drop (also when a test fails),
//! with the test kit's ports and process guards.
#![allow(dead_code)]

use opkit::envelope::{McpMeta, ResponseMeta};
use opkit::{OperationContext, OperationRegistry, ResponseEnvelope};
use opkit_adapters::mcp::{McpConnection, McpOptions};
use opkit_testkit::ports::accepts;
#[allow(unused_imports)]
pub use opkit_testkit::ports::free_port;
use opkit_testkit::process::ChildGuard;
#[allow(unused_imports)]
pub use opkit_testkit::process::PidGuard;
use serde_json::Value;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const INSTALL: &str =
    "run `bash scripts/install-peers.sh` from the repository root to install the MCP test peers";

/// `adapters/peers/mcp`: package.json, requirements.txt and the Python servers.
pub fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/mcp")
}

/// A file of the peers directory, or a failure that says how to install it.
pub fn peer_file(relative: &str) -> PathBuf {
    let path = peers_dir().join(relative);
    assert!(
        path.exists(),
        "MCP test peer {} is missing: {INSTALL}",
        path.display()
    );
    path
}

/// `node`, checked to be there.
pub fn node() -> &'static str {
    require_command("node", &["--version"]);
    "node"
}

/// The Python of `adapters/peers/mcp/.venv`, where the pinned `mcp` SDK is installed.
pub fn python() -> PathBuf {
    let python = peer_file(".venv/bin/python");
    require_command(
        python.to_str().expect("a UTF-8 path"),
        &["-c", "import mcp.server.mcpserver"],
    );
    python
}

fn require_command(program: &str, args: &[&str]) {
    let ok = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    assert!(ok, "`{program} {}` failed: {INSTALL}", args.join(" "));
}

/// server-everything's entry point.
pub fn everything_js() -> PathBuf {
    peer_file("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// server-filesystem's entry point.
pub fn filesystem_js() -> PathBuf {
    peer_file("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
}

/// A server process started by a test, killed (by PID) when dropped.
pub struct ServerProcess {
    child: ChildGuard,
    pub port: u16,
    what: String,
}

impl ServerProcess {
    /// Starts `command`, then waits (bounded) until 127.0.0.1:`port` accepts connections.
    pub fn start(mut command: Command, port: u16, what: &str) -> Self {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = ChildGuard::new(
            command
                .spawn()
                .unwrap_or_else(|error| panic!("could not start {what}: {error}; {INSTALL}")),
        );
        let mut server = Self {
            child,
            port,
            what: what.to_owned(),
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&mut self) {
        let port = self.port;
        self.child.wait_ready(
            &format!("{} on 127.0.0.1:{port} ({INSTALL})", self.what),
            Duration::from_secs(30),
            || accepts(port),
        );
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.pid().expect("the server was not killed")
    }

    /// `http://127.0.0.1:<port>/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Kills the process now (and reaps it).
    pub fn kill(&mut self) {
        self.child.kill();
    }
}

/// server-everything over Streamable HTTP, forced onto 127.0.0.1 by `loopback.js`.
pub fn start_everything_http() -> ServerProcess {
    let port = free_port();
    let mut command = Command::new(node());
    command
        .current_dir(peers_dir())
        .arg("--require")
        .arg(peer_file("loopback.js"))
        .arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    ServerProcess::start(command, port, "server-everything (streamableHttp)")
}

/// The Python structured-output server over Streamable HTTP on 127.0.0.1.
pub fn start_python_http() -> ServerProcess {
    let port = free_port();
    let mut command = Command::new(python());
    command
        .arg(peer_file("structured_server.py"))
        .arg("http")
        .arg(port.to_string());
    ServerProcess::start(command, port, "structured_server.py (http)")
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
