//! The real servers the tests run against, as child processes on loopback: the MCP
//! reference server `server-everything` and the Python SDK's structured-output server over
//! Streamable HTTP, the FastAPI app under uvicorn and Prism mocking a document. Each is
//! pinned in `adapters/peers/` (installed by `bash scripts/install-peers.sh`), listens on a
//! free `127.0.0.1` port, is waited for (bounded), and is killed by its PID when its
//! [`PeerProcess`] is dropped, even when the test fails.

use crate::ports::{accepts, free_port};
use crate::process::ChildGuard;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const INSTALL: &str = "run `bash scripts/install-peers.sh` from the repository root";

/// How long a peer may take to start.
const START_PATIENCE: Duration = Duration::from_secs(60);

/// `adapters/peers/<kind>` (`mcp`, `openapi`, ..).
pub fn peers_dir(kind: &str) -> PathBuf {
    crate::workspace_dir().join("adapters/peers").join(kind)
}

/// A file of `adapters/peers/<kind>`, or a failure that says how to install it.
pub fn peer_file(kind: &str, relative: &str) -> PathBuf {
    let path = peers_dir(kind).join(relative);
    assert!(
        path.exists(),
        "test peer {} is missing: {INSTALL}",
        path.display()
    );
    path
}

/// A peer server process, killed (by PID) and reaped when dropped; its output goes to a
/// log file, shown when it fails to start and removed with it.
#[derive(Debug)]
pub struct PeerProcess {
    child: ChildGuard,
    /// The loopback port it listens on.
    pub port: u16,
    what: String,
    log: PathBuf,
}

impl PeerProcess {
    /// Starts `command` (its output to a log), then waits (bounded) until `ready` holds for
    /// 127.0.0.1:`port`, failing with the log's tail when the process exits first.
    pub fn start(mut command: Command, port: u16, what: &str, ready: impl Fn(u16) -> bool) -> Self {
        let log = std::env::temp_dir().join(format!(
            "opkit-peer-{}-{port}.log",
            what.split_whitespace().next().unwrap_or("peer")
        ));
        let file = std::fs::File::create(&log).expect("the peer's log is created");
        command
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("the log's handle is cloned"))
            .stderr(file);
        let child = ChildGuard::new(
            command
                .spawn()
                .unwrap_or_else(|error| panic!("could not start {what}: {error}; {INSTALL}")),
        );
        let mut peer = Self {
            child,
            port,
            what: what.to_owned(),
            log,
        };
        let started = Instant::now();
        while !ready(port) {
            if let Some(status) = peer.child.try_wait() {
                panic!(
                    "{} exited before it was ready ({status}); its output:\n{}",
                    peer.what,
                    peer.log_tail()
                );
            }
            assert!(
                started.elapsed() < START_PATIENCE,
                "{} was not ready on 127.0.0.1:{port} within {START_PATIENCE:?} ({INSTALL}); its output:\n{}",
                peer.what,
                peer.log_tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        peer
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let start = text.len().saturating_sub(4000);
        text.get(start..).unwrap_or_default().to_owned()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.pid().expect("the peer was not killed")
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `http://127.0.0.1:<port>/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base_url())
    }

    /// Kills the process now (and reaps it).
    pub fn kill(&mut self) {
        self.child.kill();
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        // Killed by its PID and reaped before its log goes.
        self.child.kill();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// `node`, checked to be there.
pub fn node() -> &'static str {
    require_command("node", &["--version"]);
    "node"
}

/// The Python of `adapters/peers/mcp/.venv`, where the pinned MCP Python SDK is installed.
pub fn mcp_python() -> PathBuf {
    let python = peer_file("mcp", ".venv/bin/python");
    require_command(
        python.to_str().expect("a UTF-8 path"),
        &["-c", "import mcp.server.mcpserver"],
    );
    python
}

/// Fails, saying how to install, unless `program args` succeeds.
pub fn require_command(program: &str, args: &[&str]) {
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
    peer_file(
        "mcp",
        "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    )
}

/// server-everything over Streamable HTTP (`/mcp`), forced onto 127.0.0.1 by `loopback.js`.
pub fn start_everything_http() -> PeerProcess {
    let port = free_port();
    let mut command = Command::new(node());
    command
        .current_dir(peers_dir("mcp"))
        .arg("--require")
        .arg(peer_file("mcp", "loopback.js"))
        .arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    PeerProcess::start(command, port, "server-everything (streamableHttp)", accepts)
}

/// The Python SDK's structured-output server over Streamable HTTP (`/mcp`) on 127.0.0.1.
pub fn start_python_mcp_http() -> PeerProcess {
    let port = free_port();
    let mut command = Command::new(mcp_python());
    command
        .arg(peer_file("mcp", "structured_server.py"))
        .arg("http")
        .arg(port.to_string());
    PeerProcess::start(command, port, "structured_server.py (http)", accepts)
}

/// The FastAPI app (`adapters/peers/openapi/app.py`) under uvicorn, ready once
/// `/openapi.json` answers.
pub fn start_fastapi() -> PeerProcess {
    require_command("python3", &["-c", "import fastapi, uvicorn, multipart"]);
    let port = free_port();
    let mut command = Command::new("python3");
    command
        .current_dir(peers_dir("openapi"))
        .args(["-m", "uvicorn", "app:app", "--host", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .args(["--log-level", "warning"]);
    PeerProcess::start(command, port, "uvicorn (FastAPI)", |port| {
        answers_http(port, "/openapi.json")
    })
}

/// Prism mocking `document`, on loopback; ready once it answers HTTP (it answers `/` with
/// 404 once it listens).
pub fn start_prism(document: &Path) -> PeerProcess {
    let prism = peer_file("openapi", "node_modules/.bin/prism");
    let port = free_port();
    let mut command = Command::new(node());
    command
        .arg(&prism)
        .args(["mock", "-h", "127.0.0.1", "-p"])
        .arg(port.to_string())
        .arg(document);
    PeerProcess::start(command, port, "prism (mock)", |port| {
        answers_http(port, "/")
    })
}

/// `true` when `GET <path>` on 127.0.0.1:`port` answers with a status below 500 (within 2 s).
pub fn answers_http(port: u16, path: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    if stream.read_exact(&mut head).is_err() {
        return false;
    }
    // `HTTP/1.1 200`
    std::str::from_utf8(&head[9..12])
        .ok()
        .and_then(|status| status.parse::<u16>().ok())
        .is_some_and(|status| status < 500)
}

/// Runs `script` of `adapters/peers/conformance` (the official TypeScript SDK's scripts, such
/// as `ts_client.mjs`) with Node 22 and `args`, within two minutes (the child is killed by its
/// PID when it overruns or the test ends); returns the JSON report it prints, and what it
/// wrote to stderr. A script that fails, or prints no report, fails the test with both.
pub async fn node_report(script: &str, args: &[&str]) -> (serde_json::Value, String) {
    let peers = peers_dir("conformance");
    let node = peers.join("node_modules/.bin/node");
    assert!(
        node.exists()
            && peers
                .join("node_modules/@modelcontextprotocol/sdk")
                .exists(),
        "the TypeScript SDK client or Node 22 is missing ({}): {INSTALL}",
        peers.display()
    );
    let output = tokio::process::Command::new(node)
        .current_dir(&peers)
        .arg(peers.join(script))
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), output)
        .await
        .unwrap_or_else(|_| panic!("`node {script}` did not finish within two minutes"))
        .unwrap_or_else(|error| panic!("`node {script}` could not run: {error}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "`node {script}` failed:\n{stderr}\n{stdout}"
    );
    let report = serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
        panic!("no report from `node {script}` ({error}):\n{stdout}\n{stderr}")
    });
    (report, stderr)
}
