//! Helpers of the `serve_*` tests: in-process servers on 127.0.0.1:0, the Python and
//! TypeScript peers, the fixture operations with their tokens, a small SSE reader. Child
//! processes and temporary directories are the test kit's (`opkit_testkit`).
#![allow(dead_code)]

use opkit_testkit::process::{AsyncChildGuard, TaskGuard};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// Reads one answer of the HTTP server on a raw `connection`: its bytes up to the end of its
/// JSON body (`}}`, an envelope's end), or up to the connection's end, each read within 10 s.
pub async fn read_answer(connection: &mut tokio::net::TcpStream) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut chunk = [0_u8; 4096];
    let mut answer = Vec::new();
    while !answer.ends_with(b"}}") {
        let read = tokio::time::timeout(Duration::from_secs(10), connection.read(&mut chunk))
            .await
            .expect("answered within 10 s")
            .unwrap();
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..read]);
    }
    answer
}

/// Reads `connection` until the server ends it (end of stream or reset) within `bound`:
/// what it sent, and the read's end (an error for a reset).
pub async fn read_until_closed(
    connection: &mut (impl tokio::io::AsyncRead + Unpin),
    bound: Duration,
) -> (Vec<u8>, std::io::Result<usize>) {
    use tokio::io::AsyncReadExt;
    let mut sent = Vec::new();
    let ended = tokio::time::timeout(bound, connection.read_to_end(&mut sent))
        .await
        .unwrap_or_else(|_| panic!("the server ends the connection within {bound:?}"));
    (sent, ended)
}

/// An axum app served on an ephemeral loopback port; aborted on drop.
pub struct Served {
    pub addr: SocketAddr,
    _task: TaskGuard,
}

impl Served {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// Serves `router` on 127.0.0.1 with a free port.
pub async fn serve(router: axum::Router) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.expect("server runs");
    });
    Served {
        addr,
        _task: TaskGuard(task),
    }
}

/// Serves with `serve` (given a listener on 127.0.0.1 with a free port): for a server's own
/// serve loop, such as `HttpServer::serve`.
pub async fn serve_with<F, Fut>(serve: F) -> Served
where
    F: FnOnce(tokio::net::TcpListener) -> Fut,
    Fut: std::future::Future<Output = std::io::Result<()>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    let serving = serve(listener);
    let task = tokio::spawn(async move {
        serving.await.expect("server runs");
    });
    Served {
        addr,
        _task: TaskGuard(task),
    }
}

/// The adapters crate's folder.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace root.
pub fn workspace_dir() -> PathBuf {
    crate_dir()
        .parent()
        .expect("the adapters crate sits in the workspace")
        .to_path_buf()
}

/// The Python interpreter of the serving peers' virtualenv (`mcp`, `schemathesis`,
/// `openapi-spec-validator`), installed by `scripts/install-peers.sh`.
pub fn peer_python() -> PathBuf {
    let python = crate_dir().join("peers/serve/.venv/bin/python");
    assert!(
        python.exists(),
        "the Python peers of the serving tests are missing ({}): run `bash scripts/install-peers.sh`",
        python.display()
    );
    python
}

/// A peer script in `adapters/peers/serve`.
pub fn peer_script(name: &str) -> PathBuf {
    crate_dir().join("peers/serve").join(name)
}

/// A built example binary (`cargo test` builds the examples of the selected features).
pub fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    // target/<profile>/deps/<test>-<hash> -> target/<profile>/examples/<name>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary sits in target/<profile>/deps");
    let binary = profile_dir.join("examples").join(name);
    assert!(
        binary.exists(),
        "example `{name}` is not built ({}): run the tests with `cargo test -p opkit-adapters --features http-server,mcp-server` (which builds the examples), or build it with `cargo build -p opkit-adapters --features http-server,mcp-server --example {name}`",
        binary.display()
    );
    binary
}

/// The result of a peer process.
#[derive(Debug)]
pub struct Finished {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `command` to completion (killed after `limit`), capturing its output.
pub async fn run(mut command: tokio::process::Command, limit: Duration) -> Finished {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = command.spawn().expect("the peer process starts");
    let mut guard = AsyncChildGuard::new(child);
    let child = guard.0.take().expect("child");
    match tokio::time::timeout(limit, child.wait_with_output()).await {
        Ok(Ok(output)) => Finished {
            success: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        },
        Ok(Err(error)) => panic!("waiting for the peer process failed: {error}"),
        Err(_) => panic!("the peer process did not finish within {limit:?}"),
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
    pub id: Option<String>,
}

/// Parses a complete `text/event-stream` body (LF line endings, as our server writes).
pub fn parse_sse(body: &str) -> Vec<SseEvent> {
    let mut events = Vec::new();
    for block in body.split("\n\n") {
        let mut event = String::new();
        let mut data: Vec<&str> = Vec::new();
        let mut id = None;
        for line in block.lines() {
            if line.starts_with(':') || line.is_empty() {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => event = value.to_owned(),
                "data" => data.push(value),
                "id" => id = Some(value.to_owned()),
                _ => {}
            }
        }
        if !data.is_empty() {
            events.push(SseEvent {
                event: if event.is_empty() {
                    "message".to_owned()
                } else {
                    event
                },
                data: data.join("\n"),
                id,
            });
        }
    }
    events
}

/// Drives an MCP server at `url` with the official TypeScript SDK client
/// (`peers/conformance/ts_client.mjs`, with the bearer `token` when not empty), making
/// `calls`; returns its report `{"tools": [..], "calls": [{"name", "result"} | {"name", "error"}]}`.
pub async fn ts_client(url: &str, token: &str, calls: &serde_json::Value) -> serde_json::Value {
    ts_client_with_stderr(url, token, calls).await.0
}

/// [`ts_client`], with what the client wrote to stderr (the SDK's schema validator warns
/// there, e.g. about formats it does not know).
pub async fn ts_client_with_stderr(
    url: &str,
    token: &str,
    calls: &serde_json::Value,
) -> (serde_json::Value, String) {
    node_report("ts_client.mjs", &[url, token, &calls.to_string()]).await
}

/// Runs `script` of `peers/conformance` (the official TypeScript SDK's scripts) with Node 22
/// and `args`; returns the JSON report it prints, and what it wrote to stderr.
pub use opkit_testkit::peers::node_report;

/// Runs `script` of `peers/serve` (the official Python SDK's scripts) with `args`; returns
/// the JSON report it prints, and what it wrote to stderr.
pub async fn python_report(script: &str, args: &[&str]) -> (serde_json::Value, String) {
    let mut command = tokio::process::Command::new(peer_python());
    command.arg(peer_script(script)).args(args);
    report_of(command, "the Python SDK client").await
}

/// Runs the Python SDK's MCP client (`peers/serve/mcp_client.py`) with `args` and the
/// `calls` to make (within five minutes); returns its JSON report.
pub async fn python_mcp_client(args: &[&str], calls: &serde_json::Value) -> serde_json::Value {
    let mut command = tokio::process::Command::new(peer_python());
    command
        .arg(peer_script("mcp_client.py"))
        .args(args)
        .arg(format!("--calls={calls}"));
    let Finished {
        success,
        stdout,
        stderr,
    } = run(command, Duration::from_secs(300)).await;
    assert!(success, "the Python MCP client failed:\n{stderr}\n{stdout}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
        panic!("the Python MCP client printed no report ({error}):\n{stdout}\n{stderr}")
    })
}

/// Runs a peer that prints one JSON report on stdout (within two minutes).
async fn report_of(command: tokio::process::Command, peer: &str) -> (serde_json::Value, String) {
    let Finished {
        success,
        stdout,
        stderr,
    } = run(command, Duration::from_secs(120)).await;
    assert!(success, "{peer} failed:\n{stderr}\n{stdout}");
    let report = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|error| panic!("no report from {peer} ({error}):\n{stdout}\n{stderr}"));
    (report, stderr)
}

/// The fixture operations of the test kit, and their tokens as the HTTP server's
/// `StaticTokens`.
pub mod serve_fixtures {
    pub use opkit_testkit::fixtures::*;

    /// The tokens of [`fixture_identities`], for `HttpServer::identity_resolver`.
    #[cfg(feature = "http-server")]
    pub fn fixture_tokens() -> opkit_adapters::http_server::StaticTokens {
        fixture_identities().into_iter().fold(
            opkit_adapters::http_server::StaticTokens::new(),
            |tokens, (token, identity)| tokens.with(token, identity),
        )
    }
}

/// Serves `server` at `/mcp` on 127.0.0.1 with a free port.
#[cfg(feature = "mcp-server")]
pub async fn serve_mcp(server: opkit_adapters::mcp_server::McpServer) -> Served {
    serve(axum::Router::new().nest("/mcp", server.router())).await
}

/// Sends one JSON-RPC line to a stdio MCP server; with an `id`, returns every line read
/// until its response (that one last; at most 50 lines, each within 20 s).
pub async fn exchange(
    write: &mut (impl tokio::io::AsyncWrite + Unpin),
    lines: &mut tokio::io::Lines<tokio::io::BufReader<impl tokio::io::AsyncRead + Unpin>>,
    message: serde_json::Value,
) -> Vec<serde_json::Value> {
    use tokio::io::AsyncWriteExt;
    let id = message.get("id").cloned();
    let mut text = message.to_string();
    text.push('\n');
    write.write_all(text.as_bytes()).await.unwrap();
    let Some(id) = id else {
        return Vec::new();
    };
    let mut read = Vec::new();
    for _ in 0..50 {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("the server answers")
            .unwrap()
            .expect("the server keeps the pipe open");
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        let done = value.get("id") == Some(&id);
        read.push(value);
        if done {
            return read;
        }
    }
    panic!("no response with id {id}");
}

/// An MCP client that records the progress notifications it gets.
#[cfg(feature = "mcp-server")]
#[derive(Clone, Default)]
pub struct ProgressRecorder {
    pub progress: std::sync::Arc<std::sync::Mutex<Vec<rmcp::model::ProgressNotificationParam>>>,
}

#[cfg(feature = "mcp-server")]
impl rmcp::ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}
