//! `redis-server` on loopback for the tests: one server ([`RedisServer`]), one that speaks
//! only TLS ([`TlsRedisServer`]), a Redis Cluster ([`RedisCluster`]), one that speaks only
//! TLS ([`TlsRedisCluster`]) and `redis-cli` ([`cli`]). Each server runs without persistence on a free `127.0.0.1` port and is stopped
//! by its PID when dropped, even when the test fails.
//!
//! `redis-server` and `redis-cli` come from `bash scripts/install-peers.sh`.

mod cluster;
mod tls_cluster;

pub use cluster::{NODE_TIMEOUT_MS, RedisCluster};
pub use tls_cluster::TlsRedisCluster;

use crate::ports::{accepts, free_port};
use crate::process::ChildGuard;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long a starting server may take to answer.
const START_PATIENCE: Duration = Duration::from_secs(20);

/// A `redis-server` child process on `127.0.0.1:<port>` without persistence.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    child: Option<ChildGuard>,
}

/// `true` when `PING` on the port answers `+PONG`.
pub fn answers_ping(port: u16) -> bool {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut reply = [0_u8; 7];
    stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
}

impl RedisServer {
    /// Starts a server on a free port and waits (bounded) until it answers `PING`.
    ///
    /// # Panics
    ///
    /// When `redis-server` is not installed (run `bash scripts/install-peers.sh`) or does not
    /// come up.
    pub fn start() -> Self {
        let mut server = Self {
            port: free_port(),
            child: None,
        };
        server.launch();
        server
    }

    fn launch(&mut self) {
        assert!(self.child.is_none(), "the server is already running");
        let port = self.port;
        let mut child = spawn_server(&["--port", &port.to_string()]);
        child.wait_ready(
            &format!("redis-server on port {port}"),
            START_PATIENCE,
            || answers_ping(port),
        );
        self.child = Some(child);
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The server's port (on `127.0.0.1`).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server (by PID) and waits for it to exit. All its data is lost.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill();
        }
    }

    /// Starts the server again on the same port (empty: it has no persistence).
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }
}

/// `redis-server` on loopback without persistence, with `args` (its ports) added; its output
/// discarded.
fn spawn_server(args: &[&str]) -> ChildGuard {
    ChildGuard::spawn(
        Command::new("redis-server")
            .args(args)
            .args([
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
            ])
            .arg(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
        "redis-server",
    )
}

/// A `redis-server` child process that speaks only TLS, on `127.0.0.1:<port>` (its plaintext
/// port is off), with the certificates given; stopped (by PID) when dropped.
#[derive(Debug)]
pub struct TlsRedisServer {
    port: u16,
    _child: ChildGuard,
}

impl TlsRedisServer {
    /// Starts one with the CA `ca` and the server certificate `cert` (key `key`) and waits
    /// (bounded) until it listens. `auth_clients`: `"no"` (any client), `"yes"` (a client
    /// certificate signed by the CA is required).
    pub fn start(ca: &Path, cert: &Path, key: &Path, auth_clients: &str) -> Self {
        let port = free_port();
        let mut child = spawn_server(&[
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--tls-cert-file",
            &cert.to_string_lossy(),
            "--tls-key-file",
            &key.to_string_lossy(),
            "--tls-ca-cert-file",
            &ca.to_string_lossy(),
            "--tls-auth-clients",
            auth_clients,
        ]);
        child.wait_ready(
            &format!("redis-server (TLS) on port {port}"),
            START_PATIENCE,
            || accepts(port),
        );
        Self {
            port,
            _child: child,
        }
    }

    /// The server's `rediss://` URL (by IP address: the certificate names it).
    pub fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}/", self.port)
    }

    /// The server's TLS port (on `127.0.0.1`).
    pub fn port(&self) -> u16 {
        self.port
    }
}

/// `redis-cli -h 127.0.0.1 -p <port> <args>`: its stdout, or `None` when it failed.
pub fn cli(port: u16, args: &[&str]) -> Option<String> {
    let output = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}
