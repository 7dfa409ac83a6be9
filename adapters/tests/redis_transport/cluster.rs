//! The Redis transport on a real Redis Cluster (3 masters on loopback ports, started by the
//! harness): sharded fan-out, groups, the call protocol and the key layout, in one process.
//! The multi-process load and the faults are in `redis_cluster_faults.rs`.
#![cfg(all(feature = "redis", feature = "testing"))]

use crate::redis_support;

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::{CallHandler, PendingRequestMap, PubSub};
use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use redis_support::cluster::{RedisCluster, cli};
use redis_support::ops::next_text as next;
use redis_support::ops::{Probes, collect_items, init_logs, registry};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;

async fn bus(cluster: &RedisCluster, prefix: &str) -> Arc<RedisPubSub> {
    Arc::new(
        RedisPubSub::connect_cluster_with(
            &cluster.urls(),
            RedisOptions::default().with_prefix(prefix),
        )
        .await
        .expect("connect to the test cluster"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_carries_the_protocol() {
    init_logs();
    let cluster = RedisCluster::start(3, 0);

    // The URL form and the node list reach the same cluster; bad settings are named.
    let by_url =
        RedisPubSub::connect_with(&cluster.url(), RedisOptions::default().with_prefix("c:"))
            .await
            .unwrap();
    assert!(by_url.is_cluster());
    let error = RedisPubSub::connect_cluster_with(
        &cluster.urls(),
        RedisOptions::default().with_prefix("a{b}:"),
    )
    .await
    .unwrap_err();
    assert!(error.message().contains("hash tags"), "{error}");
    let error = RedisPubSub::connect("redis+cluster:///").await.unwrap_err();
    assert!(error.message().contains("names no cluster node"), "{error}");
    let error = by_url.publish("", "x".into()).await.unwrap_err();
    assert!(error.message().contains("hash tag"), "{error}");
    assert_eq!(by_url.stream_key("jobs"), "c:stream:{jobs}");

    // Sharded fan-out and a shared group, with receipts.
    let a = bus(&cluster, "c:").await;
    let b = bus(&cluster, "c:").await;
    assert!(
        a.publish("jobs", "lost".into())
            .await
            .unwrap()
            .reached_nobody()
    );
    let mut audit_1 = a.subscribe("jobs").await.unwrap();
    let mut audit_2 = b.subscribe("jobs").await.unwrap();
    let mut worker_1 = a.subscribe_group("jobs", "workers").await.unwrap();
    let mut worker_2 = b
        .subscribe_group_idempotent("jobs", "workers")
        .await
        .unwrap();
    let jobs: Vec<String> = (0..30).map(|n| format!("job-{n}")).collect();
    for job in &jobs {
        let receipt = a.publish("jobs", job.clone().into()).await.unwrap();
        assert_eq!(
            receipt.receivers(),
            Some(3),
            "two sharded subscribers and one group"
        );
    }
    for subscription in [&mut audit_1, &mut audit_2] {
        for job in &jobs {
            assert_eq!(&next(subscription).await, job);
        }
    }
    let mut shared = Vec::new();
    while shared.len() < jobs.len() {
        tokio::select! {
            Some(message) = worker_1.next() => shared.push(String::from_utf8(message.to_vec()).unwrap()),
            Some(message) = worker_2.next() => shared.push(String::from_utf8(message.to_vec()).unwrap()),
        }
    }
    let unique: HashSet<&String> = shared.iter().collect();
    assert_eq!(
        unique.len(),
        jobs.len(),
        "every job exactly once in the group"
    );
    drop((audit_1, audit_2, worker_1, worker_2));

    // The call protocol on top: two replicas, queries, mutations, subscriptions, errors.
    let probes = Probes::default();
    let _one = CallHandler::new(registry(&probes), bus(&cluster, "p:").await)
        .spawn()
        .await
        .unwrap();
    let _two = CallHandler::new(registry(&probes), bus(&cluster, "p:").await)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(bus(&cluster, "p:").await)
        .await
        .unwrap();
    let env = OperationEnv::remote(map.clone());
    for n in 0..100_u64 {
        assert_eq!(
            env.call("test.work", json!({"n": n})).await.unwrap().data,
            json!(n)
        );
        let sum = env.call("math.add", json!({"a": n, "b": 1})).await.unwrap();
        assert_eq!(sum.data, json!({"sum": n + 1}));
    }
    assert!((0..100).all(|n| probes.executions_of(n) == 1));
    let items = collect_items(
        env.subscribe("clock.count", json!({"to": 5}))
            .await
            .unwrap(),
    )
    .await;
    let items: Vec<_> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(items, [json!(1), json!(2), json!(3), json!(4), json!(5)]);
    let missing = env.call("no.such", json!({})).await.unwrap_err();
    assert_eq!(missing.code, ErrorCode::OperationNotFound);
    assert_eq!(map.pending_count(), 0);

    // Each topic lives on the shard of its hash tag; the protocol's keys spread over the
    // masters (three operations' request streams and the members sets).
    let mut holding = 0;
    for master in cluster.masters() {
        let keys = cli(master, &["--scan", "--pattern", "p:*"]).unwrap_or_default();
        for key in keys.lines() {
            let tag = key
                .split_once('{')
                .and_then(|(_, rest)| rest.split_once('}'))
                .map(|(tag, _)| tag);
            assert!(
                tag.is_some_and(|tag| tag.starts_with("opkit.")),
                "untagged key {key}"
            );
        }
        if !keys.trim().is_empty() {
            holding += 1;
        }
    }
    assert!(
        holding >= 2,
        "the protocol's keys are on {holding} master(s)"
    );
}
