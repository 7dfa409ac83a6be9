//! The notes tests' harness: the `notes` binary and a `redis-server` as child processes on
//! loopback, each stopped by its PID when dropped (even when a test fails).
#![allow(dead_code, missing_docs)]

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A child process, killed when dropped.
pub struct Process {
    child: Child,
    /// Its first line on stdout (the readiness line).
    pub ready: String,
}

impl Drop for Process {
    fn drop(&mut self) {
        // Stops the process by its PID; kill_on_drop reaps it.
        let _ = self.child.start_kill();
    }
}

/// Starts `notes <args>` and waits (bounded) for its readiness line.
pub async fn notes(args: &[&str]) -> Process {
    let mut child = Command::new(env!("CARGO_BIN_EXE_notes"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the notes binary starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("notes is ready within 30 s")
        .expect("stdout is readable")
        .expect("notes printed its readiness line");
    // Keep draining stdout so the child never blocks on it.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Process { child, ready }
}

/// `notes serve` on a free loopback port with a database at `db`; returns the process and
/// its base URL.
pub async fn serve(db: &Path, extra: &[&str]) -> (Process, String) {
    let db = db.to_string_lossy().into_owned();
    let mut args = vec!["serve", "--db", &db, "--addr", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let process = notes(&args).await;
    let base = process
        .ready
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected readiness line {:?}", process.ready))
        .to_owned();
    (process, base)
}

/// A fresh database path in a directory of its own.
pub fn temp_db(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "opkit-notes-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir.join("notes.db")
}

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a free loopback port");
    listener.local_addr().expect("an address").port()
}

/// A `redis-server` on a free loopback port, without persistence.
pub struct Redis {
    child: Child,
    pub url: String,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl Redis {
    /// Starts one and waits (bounded) until it answers.
    pub async fn start() -> Self {
        let port = free_port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|error| {
                panic!("could not start redis-server ({error}): install it with `bash scripts/install-peers.sh`")
            });
        let redis = Self {
            child,
            url: format!("redis://127.0.0.1:{port}/"),
        };
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return redis;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server did not listen on port {port} within 5 s");
    }
}
