//! The `redis_*` tests' harness: a `redis-server` of their own on a free loopback port,
//! stopped (by PID) when dropped, even when the test fails.
#![allow(dead_code, missing_docs)]

pub mod cluster;
pub mod ops;

use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A `redis-server` child process on `127.0.0.1:<port>` without persistence.
pub struct RedisServer {
    port: u16,
    child: Option<Child>,
}

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a free loopback port");
    listener.local_addr().unwrap().port()
}

/// `true` when `PING` on the port answers `+PONG`.
fn answers_ping(port: u16) -> bool {
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
        let child = spawn_server(&["--port", &self.port.to_string()]);
        self.child = Some(child);
        let started = Instant::now();
        while !answers_ping(self.port) {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|child| child.try_wait().ok().flatten())
            {
                panic!(
                    "redis-server exited at start ({status}) on port {}",
                    self.port
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "redis-server did not answer PING on port {} within 20 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server (by PID) and waits for it to exit. All its data is lost.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (empty: it has no persistence).
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    /// A transport on this server; every test uses its own prefix.
    pub async fn bus(&self, prefix: &str) -> Arc<RedisPubSub> {
        Arc::new(
            RedisPubSub::connect_with(&self.url(), RedisOptions::default().with_prefix(prefix))
                .await
                .expect("connect to the test redis-server"),
        )
    }

    /// A plain connection for raw commands.
    pub async fn raw(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .expect("a raw connection to the test redis-server")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `redis-server` on loopback without persistence, with `args` (its ports) added; its output
/// discarded.
fn spawn_server(args: &[&str]) -> Child {
    Command::new("redis-server")
        .args(args)
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir"])
        .arg(std::env::temp_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|error| {
            panic!(
                "could not start redis-server ({error}): install it with `bash scripts/install-peers.sh`"
            )
        })
}

/// A `redis-server` child process that speaks only TLS, on `127.0.0.1:<port>` (its plaintext
/// port is off), with the certificates of `pki`; stopped (by PID) when dropped.
pub struct TlsRedisServer {
    port: u16,
    child: Child,
}

impl TlsRedisServer {
    /// `auth_clients`: `"no"` (any client), `"yes"` (a client certificate signed by the CA is
    /// required).
    pub fn start(
        ca: &std::path::Path,
        cert: &std::path::Path,
        key: &std::path::Path,
        auth_clients: &str,
    ) -> Self {
        let port = free_port();
        let child = spawn_server(&[
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
        let mut server = Self { port, child };
        let started = Instant::now();
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("redis-server (TLS) exited at start ({status})");
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "redis-server (TLS) did not listen on port {port} within 20 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server.port = port;
        server
    }

    /// The server's `rediss://` URL (by IP address: the certificate names it).
    pub fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}/", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for TlsRedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
