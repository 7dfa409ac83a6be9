//! A Redis Cluster for the tests: `redis-server --cluster-enabled yes` nodes on
//! loopback ports (cluster bus on port + 10000), joined by `redis-cli --cluster create`,
//! without persistence, each in a temporary directory of its own; every node is stopped (by
//! PID) when the cluster is dropped, even when the test fails.

use super::cli;
use crate::dir::TempDir;
use crate::ports::{free_port_pair, wait_until};
use crate::process::ChildGuard;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long a node may stay unreachable before the cluster fails it over (ms).
pub const NODE_TIMEOUT_MS: u64 = 1000;

/// The longest the harness waits for the cluster to form or to heal.
const FORM_PATIENCE: Duration = Duration::from_secs(40);

#[derive(Debug)]
struct Node {
    port: u16,
    child: Option<ChildGuard>,
}

/// A Redis Cluster of `masters` masters with `replicas` replicas each.
#[derive(Debug)]
pub struct RedisCluster {
    // Dropped in this order: the nodes, then their directory.
    nodes: Vec<Node>,
    dir: TempDir,
}

impl RedisCluster {
    /// Starts the nodes, creates the cluster and waits (bounded) until every node reports
    /// `cluster_state:ok`.
    ///
    /// # Panics
    ///
    /// When `redis-server`/`redis-cli` are not installed (`bash scripts/install-peers.sh`) or
    /// the cluster does not form.
    pub fn start(masters: usize, replicas: usize) -> Self {
        Self::start_announcing(masters, replicas, |port| port)
    }

    /// [`start`](Self::start), each node announcing to clients the port `announce(its port)`
    /// instead of its own (for example a proxy's in front of it); the cluster bus stays
    /// direct. Clients then reach every node through what `announce` names.
    pub fn start_announcing(
        masters: usize,
        replicas: usize,
        mut announce: impl FnMut(u16) -> u16,
    ) -> Self {
        let dir = TempDir::new("redis-cluster");
        let mut cluster = Self {
            nodes: Vec::new(),
            dir,
        };
        for _ in 0..masters * (1 + replicas) {
            let port = free_port_pair();
            let child = cluster.launch(port, announce(port));
            cluster.nodes.push(Node {
                port,
                child: Some(child),
            });
        }
        for node in &mut cluster.nodes {
            let port = node.port;
            let child = node.child.as_mut().expect("a node just started");
            wait_until(
                &format!("node {port} answers PING"),
                FORM_PATIENCE,
                Duration::from_millis(50),
                || {
                    if let Some(status) = child.try_wait() {
                        panic!(
                            "redis-server on port {port} exited ({status}) before it answered: was its port or its bus port {} taken?",
                            u32::from(port) + 10_000
                        );
                    }
                    cli(port, &["PING"]).is_some_and(|reply| reply.trim() == "PONG")
                },
            );
        }
        let addresses: Vec<String> = cluster
            .nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        let replicas = replicas.to_string();
        let mut create = vec!["--cluster", "create"];
        create.extend(addresses.iter().map(String::as_str));
        create.extend(["--cluster-replicas", &replicas, "--cluster-yes"]);
        assert!(
            cli(cluster.nodes[0].port, &create).is_some(),
            "redis-cli --cluster create failed"
        );
        cluster.wait_healthy();
        cluster
    }

    fn launch(&self, port: u16, announced: u16) -> ChildGuard {
        let dir = self.dir.join(port.to_string());
        std::fs::create_dir_all(&dir).expect("a node directory");
        let mut command = Command::new("redis-server");
        if announced != port {
            command
                .args(["--cluster-announce-port", &announced.to_string()])
                .args(["--cluster-announce-bus-port", &(port + 10_000).to_string()]);
        }
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ])
            .args(["--cluster-node-timeout", &NODE_TIMEOUT_MS.to_string()])
            .args(["--cluster-announce-ip", "127.0.0.1"])
            .args(["--cluster-require-full-coverage", "no"])
            .args(["--cluster-replica-validity-factor", "0"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        ChildGuard::spawn(&mut command, "redis-server")
    }

    /// Waits (bounded) until every running node reports `cluster_state:ok` and every slot is
    /// served by a running master.
    pub fn wait_healthy(&self) {
        for node in self.nodes.iter().filter(|node| node.child.is_some()) {
            wait_formed(
                &format!("node {} reports cluster_state:ok", node.port),
                || {
                    cli(node.port, &["CLUSTER", "INFO"])
                        .is_some_and(|info| info.contains("cluster_state:ok"))
                },
            );
        }
        wait_formed("every slot is served by a running master", || {
            self.slots_covered()
        });
    }

    /// `true` when the running masters' slot ranges add up to all 16384 slots.
    fn slots_covered(&self) -> bool {
        let Some(node) = self.nodes.iter().find(|node| node.child.is_some()) else {
            return false;
        };
        let Some(info) = cli(node.port, &["CLUSTER", "INFO"]) else {
            return false;
        };
        info.contains("cluster_slots_ok:16384")
    }

    /// The ports of the running masters (as the first running node sees them).
    pub fn masters(&self) -> Vec<u16> {
        let Some(node) = self.nodes.iter().find(|node| node.child.is_some()) else {
            return Vec::new();
        };
        let Some(listing) = cli(node.port, &["CLUSTER", "NODES"]) else {
            return Vec::new();
        };
        listing
            .lines()
            .filter(|line| line.contains("master") && !line.contains("fail"))
            .filter_map(|line| {
                let address = line.split_whitespace().nth(1)?;
                let port = address.split(['@', ':']).nth(1)?;
                port.parse().ok()
            })
            .filter(|port| {
                self.nodes
                    .iter()
                    .any(|node| node.port == *port && node.child.is_some())
            })
            .collect()
    }

    /// The node URLs, for `RedisPubSub::connect_cluster`.
    pub fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|node| format!("redis://127.0.0.1:{}/", node.port))
            .collect()
    }

    /// The `redis+cluster://` URL of the cluster.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        format!("redis+cluster://{}/", hosts.join(","))
    }

    /// Kills the node on `port` (SIGKILL, by PID) and waits for it to exit.
    pub fn kill(&mut self, port: u16) {
        for node in &mut self.nodes {
            if node.port == port
                && let Some(mut child) = node.child.take()
            {
                child.kill();
            }
        }
    }
}

/// Polls `condition` every 50 ms until it holds; panics after [`FORM_PATIENCE`].
fn wait_formed(what: &str, condition: impl Fn() -> bool) {
    wait_until(what, FORM_PATIENCE, Duration::from_millis(50), condition);
}
