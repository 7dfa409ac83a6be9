//! The call protocol over Redis with TLS, against a real `redis-server` that speaks only TLS
//! (`--port 0 --tls-port ..`) with certificates made at test time: calls cross `rediss://`
//! with a custom CA; a client that does not trust that CA is refused with a
//! `TRANSPORT_ERROR` naming the certificate; a plaintext client cannot use the TLS port; with
//! `--tls-auth-clients yes` a client certificate signed by the CA is required (mutual TLS).
#![cfg(feature = "redis")]

use crate::redis_support;
use crate::tls_support;

use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit_adapters::redis::{RedisOptions, RedisPubSub, RedisTls};
use opkit_testkit::process::ChildGuard;
use redis_support::TlsRedisServer;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tls_support::Pki;

fn options(tls: RedisTls) -> RedisOptions {
    RedisOptions::default()
        .with_prefix("tls:")
        .with_connect_timeout(Duration::from_secs(3))
        .with_tls(tls)
}

fn echo_registry() -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("tls", "echo", OperationKind::Mutation),
            Handler::unary(|input, _ctx| async move { Ok(input) }),
        )
        .unwrap();
    registry
}

/// A replica and a caller on `url` with `tls`; one call through them answers.
async fn call_through(url: &str, tls: RedisTls) {
    let serving = Arc::new(
        RedisPubSub::connect_with(url, options(tls.clone()))
            .await
            .unwrap(),
    );
    let _replica = CallHandler::new(echo_registry(), serving)
        .spawn()
        .await
        .unwrap();
    let calling = Arc::new(RedisPubSub::connect_with(url, options(tls)).await.unwrap());
    let map = PendingRequestMap::connect(calling).await.unwrap();
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(10));
    let envelope = map
        .call("tls.echo", json!({"secret": "over TLS"}), &ctx)
        .await
        .unwrap();
    assert_eq!(envelope.data, json!({"secret": "over TLS"}));
}

#[tokio::test]
async fn calls_cross_tls_and_untrusting_or_plaintext_clients_are_refused() {
    let pki = Pki::new();
    let server = TlsRedisServer::start(
        &pki.file("ca.pem"),
        &pki.file("server.pem"),
        &pki.file("server.key"),
        "no",
    );
    call_through(
        &server.url(),
        RedisTls::new().with_ca_pem(pki.ca_pem.clone()),
    )
    .await;

    // Trusting another CA (or only the system's roots): refused, naming the certificate.
    for tls in [
        RedisTls::new().with_ca_pem(pki.other_ca_pem.clone()),
        RedisTls::new(),
    ] {
        let error = RedisPubSub::connect_with(&server.url(), options(tls))
            .await
            .unwrap_err();
        let error = CallError::from(error);
        assert_eq!(error.code, ErrorCode::TransportError, "{error}");
        assert!(
            error.message.to_lowercase().contains("certificate"),
            "the error names the certificate: {error}"
        );
    }

    // Plaintext on the TLS port: no connection.
    let plaintext = format!("redis://127.0.0.1:{}/", server.port());
    let options = RedisOptions::default().with_connect_timeout(Duration::from_secs(3));
    let error = tokio::time::timeout(
        Duration::from_secs(20),
        RedisPubSub::connect_with(&plaintext, options),
    )
    .await
    .expect("refused, not hung")
    .unwrap_err();
    assert_eq!(CallError::from(error).code, ErrorCode::TransportError);

    // TLS settings with a plaintext URL are refused rather than silently unused.
    let error = RedisPubSub::connect_with(
        &plaintext,
        RedisOptions::default().with_tls(RedisTls::new().with_ca_pem(pki.ca_pem.clone())),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("rediss://"), "{error}");
}

#[tokio::test]
async fn mutual_tls_requires_a_client_certificate_signed_by_the_ca() {
    let pki = Pki::new();
    let server = TlsRedisServer::start(
        &pki.file("ca.pem"),
        &pki.file("server.pem"),
        &pki.file("server.key"),
        "yes",
    );
    let with_certificate = RedisTls::new()
        .with_ca_pem(pki.ca_pem.clone())
        .with_client_cert_pem(pki.client_cert_pem.clone(), pki.client_key_pem.clone());
    call_through(&server.url(), with_certificate).await;

    let without = RedisTls::new().with_ca_pem(pki.ca_pem.clone());
    let error = tokio::time::timeout(
        Duration::from_secs(20),
        RedisPubSub::connect_with(&server.url(), options(without)),
    )
    .await
    .expect("refused, not hung")
    .unwrap_err();
    assert_eq!(CallError::from(error).code, ErrorCode::TransportError);
}

/// Three TLS-only cluster masters (`--tls-cluster yes`: the cluster bus is TLS too), killed
/// by PID when dropped.
struct TlsCluster {
    ports: Vec<u16>,
    children: Vec<ChildGuard>,
    dir: std::path::PathBuf,
}

impl Drop for TlsCluster {
    fn drop(&mut self) {
        // Every node killed by its PID, then their directory removed.
        self.children.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl TlsCluster {
    fn start(pki: &Pki) -> Self {
        use std::process::{Command, Stdio};
        let dir = pki.dir().join("cluster");
        let ports: Vec<u16> = (0..3)
            .map(|_| opkit_testkit::ports::free_port_pair())
            .collect();
        let mut cluster = Self {
            ports: ports.clone(),
            children: Vec::new(),
            dir: dir.clone(),
        };
        let (ca, cert, key) = (
            pki.file("ca.pem"),
            pki.file("server.pem"),
            pki.file("server.key"),
        );
        for port in &ports {
            let node_dir = dir.join(port.to_string());
            std::fs::create_dir_all(&node_dir).unwrap();
            let child = Command::new("redis-server")
                .args(["--port", "0", "--tls-port", &port.to_string()])
                .args(["--bind", "127.0.0.1", "--tls-cluster", "yes"])
                .args(["--tls-replication", "yes", "--tls-auth-clients", "no"])
                .arg("--tls-cert-file")
                .arg(&cert)
                .arg("--tls-key-file")
                .arg(&key)
                .arg("--tls-ca-cert-file")
                .arg(&ca)
                .args([
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                ])
                .args(["--cluster-announce-ip", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(&node_dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server starts");
            cluster.children.push(ChildGuard::new(child));
        }
        // Each `redis-cli` bounded by `timeout` (a cluster that cannot join would keep
        // `--cluster create` waiting).
        let cli = |args: &[&str]| {
            Command::new("timeout")
                .args(["30", "redis-cli", "--tls", "--cacert"])
                .arg(&ca)
                .args(args)
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .ok()
                .filter(|output| output.status.success())
                .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
        };
        let started = std::time::Instant::now();
        for port in &ports {
            while cli(&["-h", "127.0.0.1", "-p", &port.to_string(), "PING"])
                .is_none_or(|reply| reply.trim() != "PONG")
            {
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "a TLS node did not start"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let addresses: Vec<String> = ports
            .iter()
            .map(|port| format!("127.0.0.1:{port}"))
            .collect();
        let mut create = vec!["--cluster", "create"];
        create.extend(addresses.iter().map(String::as_str));
        create.push("--cluster-yes");
        assert!(
            cli(&create).is_some(),
            "redis-cli --tls --cluster create failed"
        );
        while !ports.iter().all(|port| {
            cli(&[
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "CLUSTER",
                "INFO",
            ])
            .is_some_and(|info| info.contains("cluster_state:ok"))
        }) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the TLS cluster is not ok"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        cluster
    }

    fn url(&self) -> String {
        let nodes: Vec<String> = self
            .ports
            .iter()
            .map(|port| format!("127.0.0.1:{port}"))
            .collect();
        format!("rediss+cluster://{}/", nodes.join(","))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_cluster_serves_calls() {
    let pki = Pki::new();
    let cluster = tokio::task::block_in_place(|| TlsCluster::start(&pki));
    let tls = RedisTls::new().with_ca_pem(pki.ca_pem.clone());
    let bus = || async {
        Arc::new(
            RedisPubSub::connect_with(&cluster.url(), options(tls.clone()))
                .await
                .unwrap(),
        )
    };
    let _replica = CallHandler::new(echo_registry(), bus().await)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus().await).await.unwrap();
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(10));
    for n in 0..20 {
        let envelope = map.call("tls.echo", json!({"n": n}), &ctx).await.unwrap();
        assert_eq!(envelope.data, json!({"n": n}));
    }
}
