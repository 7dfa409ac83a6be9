//! The call protocol across processes on Redis — one server or a Redis Cluster: this program
//! starts two serving replicas (the same binary, run as `redis_cluster serve <url> <name>`),
//! then acts as the caller: calls spread over both replicas (each request executed by exactly
//! one), a subscription, and an access-denied call. Prints which replica served what.
//!
//! ```sh
//! # Starts its own redis-server on a free loopback port (install it with
//! # `bash scripts/install-peers.sh`) ...
//! cargo run -p opkit-adapters --features redis --example redis_cluster
//! # ... or its own 3-master Redis Cluster (redis-server x3 + redis-cli --cluster create) ...
//! cargo run -p opkit-adapters --features redis --example redis_cluster -- --cluster
//! # ... or uses yours (a server, or a cluster through any of its nodes):
//! cargo run -p opkit-adapters --features redis --example redis_cluster -- redis://127.0.0.1:6379/
//! cargo run -p opkit-adapters --features redis --example redis_cluster -- redis+cluster://127.0.0.1:7000,127.0.0.1:7001/
//! ```

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit_adapters::redis::RedisPubSub;
use serde_json::json;
use std::collections::BTreeMap;
use std::error::Error;
use std::io::Read;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The replica's operations; every answer says which replica served it.
fn registry(name: &str) -> Result<OperationRegistry> {
    let registry = OperationRegistry::new();
    let who = name.to_owned();
    registry.register(
        OperationSpec::new("math", "add", OperationKind::Query).description("Adds two integers."),
        Handler::unary(move |input, _ctx| {
            let who = who.clone();
            async move {
                let sum = input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0);
                Ok(json!({"sum": sum, "servedBy": who}))
            }
        }),
    )?;
    let who = name.to_owned();
    registry.register(
        OperationSpec::new("clock", "ticks", OperationKind::Subscription),
        Handler::stream(move |input, _ctx| {
            let (who, count) = (who.clone(), input["count"].as_u64().unwrap_or(3));
            futures::stream::iter(1..=count).then(move |tick| {
                let who = who.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok(json!({"tick": tick, "servedBy": who}))
                }
            })
        }),
    )?;
    registry.register(
        OperationSpec::new("admin", "stats", OperationKind::Query)
            .access(AccessRule::scopes(["admin:read"])),
        Handler::unary(|_input, _ctx| async move { Ok(json!({"uptime": "long"})) }),
    )?;
    Ok(registry)
}

/// A serving replica: runs until its parent goes away (its stdin closes).
async fn serve(url: &str, name: &str) -> Result<()> {
    let bus = Arc::new(RedisPubSub::connect(url).await?);
    let _handler = CallHandler::new(registry(name)?, bus).spawn().await?;
    println!("[{name}] serving math.add, clock.ticks and admin.stats on {url}");
    tokio::task::spawn_blocking(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    })
    .await?;
    Ok(())
}

/// Kills the child processes it holds when dropped, then removes the directories it holds.
struct Processes(Vec<Child>, Vec<std::path::PathBuf>);

impl Drop for Processes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
        for dir in &self.1 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A free loopback port whose cluster bus port (+ 10000) is free too.
fn free_port() -> Result<u16> {
    for _ in 0..200 {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        if port <= 55_000 && TcpListener::bind((Ipv4Addr::LOCALHOST, port + 10_000)).is_ok() {
            return Ok(port);
        }
    }
    Err("no free loopback port".into())
}

/// Starts a 3-master Redis Cluster on loopback ports (no persistence, a temporary directory per
/// node) and waits until it serves every slot; returns its `redis+cluster://` URL.
fn start_cluster(processes: &mut Processes) -> Result<String> {
    let dir = std::env::temp_dir().join(format!("opkit-example-cluster-{}", std::process::id()));
    processes.1.push(dir.clone());
    let mut addresses = Vec::new();
    for _ in 0..3 {
        let port = free_port()?;
        let node_dir = dir.join(port.to_string());
        std::fs::create_dir_all(&node_dir)?;
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ])
            .args([
                "--cluster-announce-ip",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&node_dir)
            .stdout(Stdio::null())
            .spawn()
            .map_err(|error| {
                format!(
                    "could not start redis-server ({error}): run `bash scripts/install-peers.sh`"
                )
            })?;
        processes.0.push(child);
        wait_for_port(port)?;
        addresses.push(format!("127.0.0.1:{port}"));
    }
    let created = Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&addresses)
        .arg("--cluster-yes")
        .stdout(Stdio::null())
        .status()?;
    if !created.success() {
        return Err("redis-cli --cluster create failed".into());
    }
    let port = addresses[0].rsplit(':').next().unwrap_or_default();
    let started = Instant::now();
    loop {
        let info = Command::new("redis-cli")
            .args(["-p", port, "CLUSTER", "INFO"])
            .output()?;
        if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
            break;
        }
        if started.elapsed() > Duration::from_secs(20) {
            return Err("the cluster did not form".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(format!("redis+cluster://{}/", addresses.join(",")))
}

/// Waits (bounded) until a local port accepts connections.
fn wait_for_port(port: u16) -> Result<()> {
    let started = Instant::now();
    while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
        if started.elapsed() > Duration::from_secs(10) {
            return Err("redis-server did not start".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Starts `redis-server` on a free loopback port and waits until it accepts connections.
fn start_redis() -> Result<(String, Child)> {
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .map_err(|error| {
            format!("could not start redis-server ({error}): run `bash scripts/install-peers.sh`")
        })?;
    let started = Instant::now();
    while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
        if started.elapsed() > Duration::from_secs(10) {
            return Err("redis-server did not start".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((format!("redis://127.0.0.1:{port}/"), child))
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("serve") {
        return serve(&args[2], &args[3]).await;
    }
    let mut processes = Processes(Vec::new(), Vec::new());
    let url = match args.get(1).map(String::as_str) {
        Some("--cluster") => {
            let url = start_cluster(&mut processes)?;
            println!("started a 3-master Redis Cluster at {url}");
            url
        }
        Some(url) => url.to_owned(),
        None => {
            let (url, server) = start_redis()?;
            println!("started redis-server at {url}");
            processes.0.push(server);
            url
        }
    };
    for name in ["replica-a", "replica-b"] {
        processes.0.push(
            Command::new(std::env::current_exe()?)
                .args(["serve", &url, name])
                .stdin(Stdio::piped())
                .spawn()?,
        );
    }

    let map = PendingRequestMap::connect(Arc::new(RedisPubSub::connect(&url).await?)).await?;
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(5));
    // Wait (bounded) until both replicas serve.
    let started = Instant::now();
    let mut served: BTreeMap<String, usize> = BTreeMap::new();
    while served.len() < 2 {
        if started.elapsed() > Duration::from_secs(20) {
            return Err("the replicas did not come up".into());
        }
        match map.call("math.add", json!({"a": 0, "b": 0}), &ctx).await {
            Ok(envelope) => {
                let who = envelope.data["servedBy"].as_str().unwrap_or("?").to_owned();
                *served.entry(who).or_default() += 1;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }

    println!("\n20 calls, spread over the replicas (each executed once):");
    let calls = (0..20).map(|a| {
        let (map, ctx) = (map.clone(), ctx.clone());
        async move { map.call("math.add", json!({"a": a, "b": 100}), &ctx).await }
    });
    let mut per_replica: BTreeMap<String, usize> = BTreeMap::new();
    for envelope in futures::future::join_all(calls).await {
        let data = envelope?.data;
        println!("  {data}");
        *per_replica
            .entry(data["servedBy"].as_str().unwrap_or("?").to_owned())
            .or_default() += 1;
    }
    println!("per replica: {per_replica:?}");

    println!("\na subscription (one replica streams it):");
    let mut ticks = map
        .subscribe("clock.ticks", json!({"count": 3}), &ctx)
        .await?;
    while let Some(item) = ticks.next().await {
        println!("  {}", item?.data);
    }

    println!("\naccess rules are checked by the replica:");
    let denied = map.call("admin.stats", json!({}), &ctx).await;
    println!("  anonymous: {:?}", denied.map(|envelope| envelope.data));
    let admin = ctx
        .clone()
        .with_identity(Identity::new("ann").with_scopes(["admin:read"]));
    let granted = map.call("admin.stats", json!({}), &admin).await?;
    println!("  ann (admin:read): {}", granted.data);
    Ok(())
}
