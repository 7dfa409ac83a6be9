//! A Redis Cluster that speaks only TLS, for the tests: three masters with
//! `--tls-cluster yes` (the cluster bus is TLS too), on loopback ports, without persistence,
//! joined by `redis-cli --tls --cluster create`; every node is stopped (by PID) when the
//! cluster is dropped, even when the test fails.

use crate::dir::TempDir;
use crate::ports::free_port_pair;
use crate::process::ChildGuard;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest the harness waits for a node to start or the cluster to form.
const PATIENCE: Duration = Duration::from_secs(30);

/// Three TLS-only cluster masters.
#[derive(Debug)]
pub struct TlsRedisCluster {
    ports: Vec<u16>,
    // Dropped in this order: the nodes, then their directory.
    _nodes: Vec<ChildGuard>,
    _dir: TempDir,
}

impl TlsRedisCluster {
    /// Starts three masters with the CA `ca` and the server certificate `cert` (key `key`,
    /// naming `127.0.0.1`), joins them and waits (bounded) until the cluster is ok. Clients
    /// need no certificate of their own.
    pub fn start(ca: &Path, cert: &Path, key: &Path) -> Self {
        let dir = TempDir::new("tls-cluster");
        let ports: Vec<u16> = (0..3).map(|_| free_port_pair()).collect();
        let nodes = ports
            .iter()
            .map(|port| {
                let node_dir = dir.join(port.to_string());
                std::fs::create_dir_all(&node_dir).expect("a node's directory is made");
                let mut command = Command::new("redis-server");
                command
                    .args(["--port", "0", "--tls-port", &port.to_string()])
                    .args(["--bind", "127.0.0.1", "--tls-cluster", "yes"])
                    .args(["--tls-replication", "yes", "--tls-auth-clients", "no"])
                    .arg("--tls-cert-file")
                    .arg(cert)
                    .arg("--tls-key-file")
                    .arg(key)
                    .arg("--tls-ca-cert-file")
                    .arg(ca)
                    .args(["--cluster-enabled", "yes"])
                    .args(["--cluster-config-file", "nodes.conf"])
                    .args(["--cluster-announce-ip", "127.0.0.1"])
                    .args(["--save", "", "--appendonly", "no"])
                    .arg("--dir")
                    .arg(&node_dir)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                ChildGuard::spawn(&mut command, "redis-server (TLS cluster node)")
            })
            .collect();
        let cluster = Self {
            ports,
            _nodes: nodes,
            _dir: dir,
        };
        cluster.join(ca);
        cluster
    }

    /// Waits for every node, creates the cluster and waits until every node says it is ok.
    fn join(&self, ca: &Path) {
        let ca: PathBuf = ca.to_path_buf();
        let started = Instant::now();
        let wait = |what: &str| {
            assert!(started.elapsed() < PATIENCE, "{what} within {PATIENCE:?}");
            std::thread::sleep(Duration::from_millis(50));
        };
        for port in &self.ports {
            while tls_cli(&ca, &["-h", "127.0.0.1", "-p", &port.to_string(), "PING"])
                .is_none_or(|reply| reply.trim() != "PONG")
            {
                wait(&format!("the TLS node on port {port} answers PING"));
            }
        }
        let addresses = self.addresses();
        let mut create = vec!["--cluster", "create"];
        create.extend(addresses.iter().map(String::as_str));
        create.push("--cluster-yes");
        assert!(
            tls_cli(&ca, &create).is_some(),
            "redis-cli --tls --cluster create failed"
        );
        while !self.ports.iter().all(|port| {
            tls_cli(
                &ca,
                &[
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &port.to_string(),
                    "CLUSTER",
                    "INFO",
                ],
            )
            .is_some_and(|info| info.contains("cluster_state:ok"))
        }) {
            wait("the TLS cluster is ok");
        }
    }

    fn addresses(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|port| format!("127.0.0.1:{port}"))
            .collect()
    }

    /// The cluster's `rediss+cluster://` URL, naming every node.
    pub fn url(&self) -> String {
        format!("rediss+cluster://{}/", self.addresses().join(","))
    }
}

/// `redis-cli --tls --cacert <ca> <args>`, bounded by `timeout` (a cluster that cannot join
/// would keep `--cluster create` waiting): its stdout, or `None` when it failed.
fn tls_cli(ca: &Path, args: &[&str]) -> Option<String> {
    Command::new("timeout")
        .args(["30", "redis-cli", "--tls", "--cacert"])
        .arg(ca)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
}
