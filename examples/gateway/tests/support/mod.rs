//! The gateway tests' harness: the gateway binary started on a free loopback port with a
//! configuration file (stopped by its PID when dropped), the notes example served on
//! loopback in the test process, `curl` through the gateway's HTTP API, and the official
//! TypeScript SDK client through its MCP endpoint.

#![allow(dead_code)]

use opkit_testkit::dir::TempDir;
use opkit_testkit::process::ChildGuard;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long the gateway may take to connect its sources and listen.
const START_PATIENCE: Duration = Duration::from_secs(90);

/// The API key of a caller holding every scope the tests' configuration asks for.
pub const ANN_KEY: &str = "ann-key-1";
/// The API key of a caller holding only the `shop` scope.
pub const BOB_KEY: &str = "bob-key-2";
/// The key the gateway presents to the notes service.
pub const NOTES_KEY: &str = "gateway-notes-key";

/// A running gateway.
pub struct GatewayProcess {
    child: ChildGuard,
    lines: mpsc::Receiver<String>,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    _dir: TempDir,
}

impl GatewayProcess {
    /// Writes `config` to a file and starts the gateway on it, with `env`; waits (bounded)
    /// for its `listening on` line.
    pub fn start(config: &str, env: &[(&str, &str)]) -> Self {
        Self::start_at(config, env, "127.0.0.1:0")
    }

    /// [`start`](Self::start) on the address `addr`.
    pub fn start_at(config: &str, env: &[(&str, &str)], addr: &str) -> Self {
        let dir = TempDir::new("gateway");
        let path = dir.join("gateway.toml");
        std::fs::write(&path, config).expect("the configuration is written");
        let mut command = Command::new(env!("CARGO_BIN_EXE_gateway"));
        command
            .arg("--config")
            .arg(&path)
            .args(["--addr", addr])
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = ChildGuard::spawn(&mut command, "the gateway");
        let stdout = child
            .child_mut()
            .and_then(|child| child.stdout.take())
            .expect("the gateway's stdout");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        let mut gateway = Self {
            child,
            lines,
            base: String::new(),
            _dir: dir,
        };
        let line = gateway.wait_line("listening on ", START_PATIENCE);
        gateway.base = line.trim_start_matches("listening on ").to_owned();
        gateway
    }

    /// Waits (bounded) for a line of the gateway's stdout starting with `prefix`.
    pub fn wait_line(&mut self, prefix: &str, patience: Duration) -> String {
        let deadline = std::time::Instant::now() + patience;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => {}
                Err(error) => panic!(
                    "the gateway printed no `{prefix}` line within {patience:?} ({error}; exited: {:?})",
                    self.child.try_wait()
                ),
            }
        }
    }

    /// Sends `signal` (`-HUP`) to the gateway by its PID.
    pub fn signal(&self, signal: &str) {
        self.child.signal(signal);
    }

    /// The MCP endpoint.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// The URL of operation `id`.
    pub fn op_url(&self, id: &str) -> String {
        format!("{}/api/ops/{id}", self.base)
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        // SIGTERM first so that it stops the MCP servers it started, then (bounded) SIGKILL.
        if self.child.try_wait().is_none() {
            self.child.signal("-TERM");
            for _ in 0..100 {
                if self.child.try_wait().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        self.child.kill();
    }
}

/// `curl -X POST <url>` with a JSON body and an optional API key; returns the status and
/// the parsed body.
pub fn curl_post(url: &str, key: Option<&str>, body: &Value) -> (u16, Value) {
    let header = key.map(|key| format!("x-api-key: {key}"));
    curl_post_with(url, header.as_deref(), body)
}

/// `curl -X POST <url>` with a JSON body and an optional header line
/// (`authorization: Bearer ..`); returns the status and the parsed body.
pub fn curl_post_with(url: &str, header: Option<&str>, body: &Value) -> (u16, Value) {
    opkit_testkit::peers::require_command("curl", &["--version"]);
    let mut command = Command::new("curl");
    command
        .args(["-sS", "--max-time", "60", "-X", "POST"])
        .args(["-H", "content-type: application/json"])
        .args(["-d", &body.to_string()])
        .args(["-w", "\n%{http_code}"]);
    if let Some(header) = header {
        command.args(["-H", header]);
    }
    let output = command.arg(url).output().expect("curl runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", &text));
    let status = status.trim().parse().unwrap_or_else(|_| {
        panic!(
            "curl said {text:?}, {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (
        status,
        serde_json::from_str(body).unwrap_or(Value::String(body.to_owned())),
    )
}

/// `curl <url>` (a GET) with an optional API key: the status and the body.
pub fn curl_get(url: &str, key: Option<&str>) -> (u16, Value) {
    let mut command = Command::new("curl");
    command.args(["-sS", "--max-time", "60", "-w", "\n%{http_code}"]);
    if let Some(key) = key {
        command.args(["-H", &format!("x-api-key: {key}")]);
    }
    let output = command.arg(url).output().expect("curl runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", &text));
    (
        status.trim().parse().expect("a status"),
        serde_json::from_str(body).unwrap_or(Value::String(body.to_owned())),
    )
}

/// The notes example served on a free loopback port in this process (its API key
/// [`NOTES_KEY`] for the gateway), until the returned task is aborted; its base URL.
pub async fn serve_notes(dir: &TempDir) -> (String, tokio::task::JoinHandle<()>) {
    use opkit_example_notes::{app, db::Db, registry};
    let db = Db::open(&dir.join("notes.db")).expect("the notes database opens");
    let registry = registry(db, "notes", Duration::from_secs(60));
    let keys = app::ApiKeys::parse(&format!("{NOTES_KEY}=gateway:notes:admin"));
    let router = app::app(&registry, keys, "notes");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let base = format!("http://{}", listener.local_addr().expect("its address"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (base, task)
}

/// The official TypeScript SDK client (`adapters/peers/conformance/ts_client.mjs`) against
/// `url` with the bearer `token`, making `calls`: its report
/// `{"tools": [..], "calls": [{"name", "result"} | {"name", "error"}]}`.
pub async fn ts_client(url: &str, token: &str, calls: &Value) -> Value {
    opkit_testkit::peers::node_report("ts_client.mjs", &[url, token, &calls.to_string()])
        .await
        .0
}

/// The configuration of the tests: the FastAPI peer as `shop` (OpenAPI), server-everything
/// as `tools` (a child process over stdio), the notes example as `memo` (MCP over
/// Streamable HTTP, with its API key from the environment).
pub fn config(fastapi: &str, notes: &str) -> String {
    let everything = opkit_testkit::peers::everything_js();
    format!(
        r#"name = "gateway"

[sign_in]
api_keys = [
  {{ id = "ann", key = {{ env = "GW_TEST_ANN_KEY" }}, scopes = ["shop", "tools", "notes"] }},
  {{ id = "bob", key = {{ value = "{BOB_KEY}" }}, scopes = ["shop"] }},
]

[[sources]]
namespace = "shop"
openapi = "{fastapi}/openapi.json"

[[sources]]
namespace = "tools"
mcp_command = ["node", "{everything}", "stdio"]

[[sources]]
namespace = "memo"
mcp_url = "{notes}/mcp"
headers = {{ x-api-key = {{ env = "GW_TEST_NOTES_KEY" }} }}

[[rules]]
namespace = "shop"
scopes = ["shop"]

[[rules]]
operation = "shop.hello"
access = "public"

[[rules]]
operation = "shop.teapot"
rate_limit = {{ calls = 2, seconds = 3600 }}

[[rules]]
operation = "tools.echo"
scopes = ["tools"]

[[rules]]
operation = "tools.trigger_long_running_operation"
scopes = ["tools"]

[[rules]]
namespace = "memo"
scopes = ["notes"]
"#,
        everything = everything.display()
    )
}

/// The environment the configuration reads its secrets from.
pub fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("GW_TEST_ANN_KEY", ANN_KEY),
        ("GW_TEST_NOTES_KEY", NOTES_KEY),
    ]
}
