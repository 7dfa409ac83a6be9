//! Backpressure on Redis under a burst, every party a process of its own (so each one's
//! memory is its own): 20,000 mutations of 8 KiB published at once against two replicas that
//! run at most 4 requests each. Every call ends (`OK`, or `TIMEOUT` / `TRANSPORT_ERROR`), no
//! mutation runs twice, and each replica's peak RSS stays under [`REPLICA_RSS`]: the requests
//! a replica cannot run yet wait in the Redis stream, not in its memory (measured: 18-19 MiB
//! each; 70-74 MiB when the replicas' readers do not hold back, above the bound). Then a
//! caller subscribes to an endless stream of 4 KiB items and never polls: its stream is ended
//! at its buffer (8 MiB), the subscription is aborted on the replica, and the caller's peak
//! RSS stays under [`SUBSCRIBER_RSS`] (measured: 21 MiB).
//!
//! The figures (outcomes, peak RSS of each process) are printed as a table.
#![cfg(feature = "redis")]

mod redis_support;

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingOptions, PendingRequestMap};
use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use opkit_testkit::rerun::{ChildTest, Stdout, run_child, test_name};
use redis::AsyncCommands;
use redis_support::RedisServer;
use redis_support::ops::within;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROLE_VAR: &str = "OPKIT_TEST_LOAD_ROLE";
const URL_VAR: &str = "OPKIT_TEST_LOAD_URL";

/// Calls in the burst, and the bytes of each one's input.
const CALLS: u64 = 20_000;
const PAD: usize = 8 * 1024;
/// Requests a replica runs at once.
const MAX_IN_FLIGHT: usize = 4;
/// The most a replica's peak RSS may be: its runtime and connections, not the burst.
const REPLICA_RSS: u64 = 48 << 20;
/// The most the subscriber's peak RSS may be: its buffer (8 MiB) and the rest of it.
const SUBSCRIBER_RSS: u64 = 48 << 20;
/// Ledger key: runs of each call by `n`.
const RUNS: &str = "load-ledger:runs";

async fn bus(url: &str) -> Arc<RedisPubSub> {
    Arc::new(
        RedisPubSub::connect_with(url, RedisOptions::default().with_prefix("load:"))
            .await
            .unwrap(),
    )
}

/// A replica's operations: `load.write` records its run in the ledger and answers `n`;
/// `load.ticks` streams 4 KiB items without end, printing `@aborted` when it is dropped.
async fn replica_registry(url: &str) -> OperationRegistry {
    let conn = redis_support::connect_raw(url).await;
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new("load", "write", OperationKind::Mutation),
            Handler::unary(move |input: Value, _ctx| {
                let mut conn = conn.clone();
                async move {
                    let n = input["n"].as_u64().unwrap_or(u64::MAX);
                    let recorded: redis::RedisResult<()> = conn.hincr(RUNS, n, 1).await;
                    recorded.map_err(|error| CallError::execution(error.to_string()))?;
                    Ok(json!(n))
                }
            }),
        )
        .unwrap();
    registry
        .register(
            OperationSpec::new("load", "ticks", OperationKind::Subscription),
            Handler::stream(|_input: Value, _ctx| {
                struct Dropped;
                impl Drop for Dropped {
                    fn drop(&mut self) {
                        println!("@aborted");
                    }
                }
                let dropped = Dropped;
                let item = json!("t".repeat(4096));
                futures::stream::unfold(0u64, move |n| {
                    let item = item.clone();
                    let _keep = &dropped;
                    async move {
                        tokio::task::yield_now().await;
                        Some((Ok(item), n + 1))
                    }
                })
                .boxed()
            }),
        )
        .unwrap();
    registry
}

/// Not a test: the body of the child processes. Does nothing unless run by the parent.
#[test]
#[ignore = "a helper: the child processes of `a_burst_waits_in_redis_not_in_the_replicas`"]
fn load_child_process() {
    let (Ok(role), Ok(url)) = (std::env::var(ROLE_VAR), std::env::var(URL_VAR)) else {
        return;
    };
    run_child(async move {
        if role == "replica" {
            let registry = replica_registry(&url).await;
            let _serving = CallHandler::new(registry, bus(&url).await)
                .with_max_in_flight(MAX_IN_FLIGHT)
                .spawn()
                .await
                .unwrap();
            println!("@ready");
            futures::future::pending::<()>().await;
        } else {
            subscribe_without_polling(&url).await;
        }
    });
}

/// Subscribes to `load.ticks` and never polls; prints `@ended <code>` once its stream is
/// polled after the replica saw the abort (the parent says when by `@poll` in the ledger).
async fn subscribe_without_polling(url: &str) {
    let map = PendingRequestMap::connect_with(bus(url).await, PendingOptions::default())
        .await
        .unwrap();
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(60));
    let mut stream = map.subscribe("load.ticks", json!({}), &ctx).await.unwrap();
    println!("@subscribed");
    let mut conn = redis_support::connect_raw(url).await;
    loop {
        let poll: Option<i64> = conn.get("load-ledger:poll").await.unwrap();
        if poll == Some(1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut items = 0;
    while let Some(item) = stream.next().await {
        match item {
            Ok(_) => items += 1,
            Err(error) => {
                println!("@ended {} {items}", error.code.as_str());
                break;
            }
        }
    }
    futures::future::pending::<()>().await;
}

fn spawn(role: &str, url: &str) -> ChildTest {
    ChildTest::spawn(
        &test_name(module_path!(), "load_child_process"),
        &[(ROLE_VAR, role.as_ref()), (URL_VAR, url.as_ref())],
        Stdout::Lines,
    )
}

/// The peak resident set of process `pid`, in bytes (`VmHWM`).
fn peak_rss(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/<pid>/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|text| text.parse().ok())
        .unwrap();
    kib * 1024
}

/// The first line of `child` with `marker`, from the marker on (the test harness may print
/// on the same line first).
fn line_with(child: &ChildTest, marker: &str) -> Option<String> {
    child
        .lines()
        .iter()
        .find_map(|line| line.find(marker).map(|at| line[at..].to_owned()))
}

async fn until_line(child: &ChildTest, marker: &str) -> String {
    within(&format!("a child prints {marker}"), async {
        loop {
            if let Some(line) = line_with(child, marker) {
                return line;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_waits_in_redis_not_in_the_replicas() {
    let server = RedisServer::start();
    let url = server.url();
    let replicas = [spawn("replica", &url), spawn("replica", &url)];
    for replica in &replicas {
        until_line(replica, "@ready").await;
    }
    let map = PendingRequestMap::connect(bus(&url).await).await.unwrap();
    let pad = "x".repeat(PAD);
    let started = Instant::now();
    let calls: Vec<_> = (0..CALLS)
        .map(|n| {
            let (map, pad) = (map.clone(), pad.clone());
            tokio::spawn(async move {
                let ctx = OperationContext::default().with_timeout(Duration::from_secs(60));
                match map
                    .call("load.write", json!({"n": n, "pad": pad}), &ctx)
                    .await
                {
                    Ok(envelope) if envelope.data == json!(n) => "OK".to_owned(),
                    Ok(envelope) => format!("WRONG_ANSWER:{}", envelope.data),
                    Err(error) => error.code.as_str().to_owned(),
                }
            })
        })
        .collect();
    let mut outcomes: BTreeMap<u64, String> = BTreeMap::new();
    for (n, call) in calls.into_iter().enumerate() {
        outcomes.insert(n as u64, call.await.unwrap());
    }
    let took = started.elapsed();
    let mut raw = redis_support::connect_raw(&url).await;
    let runs: HashMap<u64, i64> = raw.hgetall(RUNS).await.unwrap();
    let mut codes: BTreeMap<&str, usize> = BTreeMap::new();
    for (n, code) in &outcomes {
        *codes.entry(code.as_str()).or_default() += 1;
        let ran = runs.get(n).copied().unwrap_or(0);
        assert!(ran <= 1, "mutation {n} ran {ran} times");
        assert!(
            ["OK", "TIMEOUT", "TRANSPORT_ERROR"].contains(&code.as_str()),
            "call {n} ended with {code}"
        );
        if code == "OK" {
            assert_eq!(ran, 1, "call {n} was answered but never ran");
        }
    }
    assert!(codes.get("OK").copied().unwrap_or(0) > 0, "{codes:?}");
    let replica_peaks: Vec<u64> = replicas
        .iter()
        .map(|child| peak_rss(&child.pid()))
        .collect();

    // A subscriber that never polls.
    let subscriber = spawn("subscriber", &url);
    until_line(&subscriber, "@subscribed").await;
    within("the replica saw the subscription aborted", async {
        while !replicas
            .iter()
            .any(|replica| line_with(replica, "@aborted").is_some())
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let subscriber_peak = peak_rss(&subscriber.pid());
    let _: () = raw.set("load-ledger:poll", 1).await.unwrap();
    let ended = until_line(&subscriber, "@ended").await;

    println!("| process | figure |");
    println!("|---|---|");
    println!("| caller | {CALLS} calls of {PAD} B in {took:.1?}: {codes:?} |");
    for (index, peak) in replica_peaks.iter().enumerate() {
        println!(
            "| replica {index} (max {MAX_IN_FLIGHT} in flight) | peak RSS {} MiB |",
            peak >> 20
        );
    }
    println!(
        "| subscriber not polling | peak RSS {} MiB; then `{ended}` |",
        subscriber_peak >> 20
    );
    for peak in replica_peaks {
        assert!(
            peak < REPLICA_RSS,
            "a replica's peak RSS is {} MiB: the burst piled up in it",
            peak >> 20
        );
    }
    assert!(
        subscriber_peak < SUBSCRIBER_RSS,
        "the subscriber's peak RSS is {} MiB",
        subscriber_peak >> 20
    );
    assert!(ended.starts_with("@ended TRANSPORT_ERROR"), "{ended}");
}
