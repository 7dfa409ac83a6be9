//! The same call, subscription, failure and abort over every transport — in memory, Redis (one
//! server and a cluster) and the WebSocket hub (callers on a spoke and in the hub's process):
//! callers see the same outcomes, the caller's reply topic carries the
//! same events, and each transport that keeps track of calls in flight agrees that they all
//! ended (the hub's routed requests, Redis's held query entries), by the one rule of
//! `opkit::protocol::wire::EventKind::ends_call`. The sequence is the test kit's transport
//! conformance (`opkit_testkit::protocol::conformance`), callable for any new `PubSub`.
#![cfg(all(feature = "redis", feature = "websocket", feature = "testing"))]

mod redis_support;

use opkit::protocol::{MemoryPubSub, topics};
use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use opkit_adapters::websocket::{SpokeGrant, SpokeOptions, StaticTokens, WsHub, WsSpoke};
use opkit_testkit::protocol::conformance::transcript;
use redis_support::RedisServer;
use redis_support::cluster::RedisCluster;
use std::sync::Arc;

/// `true` when the handlers' group on `stream` holds no entry read and not acknowledged
/// (`XPENDING`'s summary starts with that count).
async fn nothing_pending(raw: &mut impl redis::aio::ConnectionLike, stream: &str) -> bool {
    let summary: redis::Value = redis::cmd("XPENDING")
        .arg(stream)
        .arg(topics::HANDLER_GROUP)
        .query_async(raw)
        .await
        .unwrap();
    matches!(summary, redis::Value::Array(ref parts) if parts.first() == Some(&redis::Value::Int(0)))
}

fn tokens() -> StaticTokens {
    StaticTokens::new()
        .with_token("serve", SpokeGrant::service("server"))
        .with_token("call", SpokeGrant::new("caller"))
}

async fn spoke(url: &str, token: &str) -> Arc<WsSpoke> {
    Arc::new(
        WsSpoke::connect_with(url, SpokeOptions::new(token))
            .await
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_transport_shows_the_same_calls_and_ends_them_alike() {
    let memory = MemoryPubSub::new();
    let in_memory = transcript(Arc::new(memory.clone()), Arc::new(memory), || async {
        true
    })
    .await;

    let redis = RedisServer::start();
    let server = redis.bus("agree").await;
    let caller = redis.bus("agree").await;
    let raw = redis.raw().await;
    let stream = server.stream_key(&topics::request_topic("math.add"));
    let over_redis = transcript(server, caller, || {
        let mut raw = raw.clone();
        let stream = stream.clone();
        async move { nothing_pending(&mut raw, &stream).await }
    })
    .await;

    let cluster = RedisCluster::start(3, 0);
    let cluster_bus = || async {
        Arc::new(
            RedisPubSub::connect_cluster_with(
                &cluster.urls(),
                RedisOptions::default().with_prefix("agree"),
            )
            .await
            .expect("connect to the test cluster"),
        )
    };
    let (server, caller) = (cluster_bus().await, cluster_bus().await);
    let raw = redis::cluster::ClusterClient::new(cluster.urls())
        .unwrap()
        .get_async_connection()
        .await
        .unwrap();
    let stream = server.stream_key(&topics::request_topic("math.add"));
    let over_cluster = transcript(server, caller, || {
        let mut raw = raw.clone();
        let stream = stream.clone();
        async move { nothing_pending(&mut raw, &stream).await }
    })
    .await;

    let hub = WsHub::bind("127.0.0.1:0", tokens()).await.unwrap();
    let server = spoke(&hub.url(), "serve").await;
    let caller = spoke(&hub.url(), "call").await;
    let in_flight_settled = || {
        let in_flight = hub.calls_in_flight();
        async move { in_flight == 0 }
    };
    let over_websocket = transcript(server.clone(), caller, in_flight_settled).await;
    // A caller in the hub's own process, through `WsHub::pubsub`.
    let from_the_hub = transcript(server, Arc::new(hub.pubsub()), in_flight_settled).await;

    assert_eq!(
        in_memory.replies,
        [
            vec!["call.responded"],
            vec![
                "call.responded",
                "call.responded",
                "call.responded",
                "call.completed"
            ],
            vec!["call.error"],
        ]
    );
    assert_eq!(
        over_redis, in_memory,
        "Redis disagrees with the in-memory transport"
    );
    assert_eq!(
        over_cluster, in_memory,
        "a Redis Cluster disagrees with the in-memory transport"
    );
    assert_eq!(
        over_websocket, in_memory,
        "the hub disagrees with the in-memory transport"
    );
    assert_eq!(
        from_the_hub, in_memory,
        "a caller in the hub's process disagrees with the in-memory transport"
    );
}
