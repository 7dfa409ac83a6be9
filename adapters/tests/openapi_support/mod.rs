//! Test harness for the OpenAPI import tests: starts real peers (uvicorn running the FastAPI
//! app, Prism mocking a document) on 127.0.0.1 with free ports, waits for them with a
//! bounded retry loop, and kills them by PID when the guard drops, even when a test fails
//! (ports and process guards from the test kit).

#![allow(dead_code)]

#[allow(unused_imports)]
pub use opkit_testkit::ports::free_port;
use opkit_testkit::process::ChildGuard;
use serde_json::{Map, Value, json};
use std::fs::File;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// `adapters/peers/openapi`.
pub fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("peers")
        .join("openapi")
}

/// The ReadMe example document at `<version>/json/<name>.json`.
pub fn oas_example(version: &str, name: &str) -> PathBuf {
    let path = peers_dir()
        .join("node_modules/@readme/oas-examples")
        .join(version)
        .join("json")
        .join(format!("{name}.json"));
    assert!(
        path.exists(),
        "{} is missing: run `bash scripts/install-peers.sh` first",
        path.display()
    );
    path
}

/// A running peer process; killed (by its PID) and reaped on drop.
pub struct Peer {
    name: &'static str,
    child: ChildGuard,
    pub port: u16,
    log: PathBuf,
}

impl Peer {
    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let start = text.len().saturating_sub(4000);
        text[start..].to_owned()
    }

    /// Waits (bounded) until `path` answers over HTTP.
    async fn wait_ready(mut self, path: &str) -> Self {
        let client = reqwest::Client::new();
        let url = format!("{}{path}", self.base_url());
        for _ in 0..600 {
            if let Some(status) = self.child.try_wait() {
                panic!(
                    "{} exited early ({status}); its output:\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok()
                && let Ok(response) = client
                    .get(&url)
                    .timeout(Duration::from_secs(2))
                    .send()
                    .await
                && response.status().as_u16() < 500
            {
                return self;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "{} did not become ready at {url}; its output:\n{}",
            self.name,
            self.log_tail()
        );
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // Killed by its PID and reaped before its log goes.
        self.child.kill();
        let _ = std::fs::remove_file(&self.log);
    }
}

fn spawn(name: &'static str, mut command: Command, port: u16) -> Peer {
    let log = std::env::temp_dir().join(format!("opkit-openapi-{name}-{port}.log"));
    let file = File::create(&log).expect("create peer log");
    command
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("clone log"))
        .stderr(file);
    let child = ChildGuard::new(command.spawn().unwrap_or_else(|error| {
        panic!("cannot start {name} ({error}): run `bash scripts/install-peers.sh` first")
    }));
    Peer {
        name,
        child,
        port,
        log,
    }
}

/// Starts the FastAPI app (`peers/openapi/app.py`) under uvicorn.
pub async fn start_fastapi() -> Peer {
    let check = Command::new("python3")
        .args(["-c", "import fastapi, uvicorn, multipart"])
        .output()
        .expect("python3 is required");
    assert!(
        check.status.success(),
        "FastAPI/uvicorn are not installed ({}): run `bash scripts/install-peers.sh` first",
        String::from_utf8_lossy(&check.stderr).trim()
    );
    let port = free_port();
    let mut command = Command::new("python3");
    command
        .current_dir(peers_dir())
        .args(["-m", "uvicorn", "app:app", "--host", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .args(["--log-level", "warning"]);
    spawn("uvicorn", command, port)
        .wait_ready("/openapi.json")
        .await
}

/// Starts Prism mocking `document` (loopback only).
pub async fn start_prism(document: &Path) -> Peer {
    let prism = peers_dir().join("node_modules/.bin/prism");
    assert!(
        prism.exists(),
        "{} is missing: run `bash scripts/install-peers.sh` first",
        prism.display()
    );
    let port = free_port();
    let mut command = Command::new("node");
    command
        .arg(&prism)
        .args(["mock", "-h", "127.0.0.1", "-p"])
        .arg(port.to_string())
        .arg(document);
    // Prism answers 404 on `/` once it listens; any status below 500 means ready.
    spawn("prism", command, port).wait_ready("/").await
}

/// A value that satisfies `schema` (resolving `#/$defs/..` against `root`): required
/// properties only, one item per array, the first enum member, examples and defaults first.
pub fn example_for(root: &Value, schema: &Value, depth: usize) -> Value {
    if depth > 12 {
        return Value::Null;
    }
    let Some(map) = schema.as_object() else {
        return Value::Null;
    };
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        let target = root
            .pointer(reference.trim_start_matches('#'))
            .cloned()
            .unwrap_or(json!({}));
        return example_for(root, &target, depth + 1);
    }
    if let Some(value) = map.get("const") {
        return value.clone();
    }
    if let Some(Value::Array(members)) = map.get("enum")
        && let Some(first) = members.iter().find(|m| !m.is_null())
    {
        return first.clone();
    }
    if let Some(value) = map.get("default") {
        return value.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key)
            && let Some(branch) = branches
                .iter()
                .find(|b| b.get("type") != Some(&json!("null")))
        {
            return example_for(root, branch, depth + 1);
        }
    }
    if let Some(Value::Array(members)) = map.get("allOf") {
        let mut merged = Map::new();
        for member in members {
            if let Value::Object(part) = example_for(root, member, depth + 1) {
                merged.extend(part);
            }
        }
        return Value::Object(merged);
    }
    let ty = match map.get("type") {
        Some(Value::String(ty)) => ty.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if map.contains_key("properties") => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut out = Map::new();
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = map.get("properties") {
                for (name, property) in properties {
                    if required.contains(&name.as_str()) {
                        out.insert(name.clone(), example_for(root, property, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
        "array" => json!([example_for(
            root,
            map.get("items").unwrap_or(&json!({})),
            depth + 1
        )]),
        "integer" => json!(
            map.get("minimum")
                .and_then(Value::as_i64)
                .unwrap_or(1)
                .max(1)
        ),
        "number" => json!(1.5),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => {
            if map.get("contentEncoding").and_then(Value::as_str) == Some("base64") {
                return json!("aGVsbG8=");
            }
            match map.get("format").and_then(Value::as_str) {
                Some("date-time") => json!("2024-01-01T00:00:00Z"),
                Some("date") => json!("2024-01-01"),
                Some("email") => json!("ada@example.com"),
                Some("uri" | "url") => json!("https://example.com/a"),
                Some("uuid") => json!("123e4567-e89b-12d3-a456-426614174000"),
                _ => json!("doggie"),
            }
        }
    }
}
