//! The same call, subscription, failure and abort over every transport — in memory, Redis (one
//! server and a cluster) and the WebSocket hub (callers on a spoke and in the hub's process):
//! callers see the same outcomes, the caller's reply topic carries the
//! same events, and each transport that keeps track of calls in flight agrees that they all
//! ended (the hub's routed requests, Redis's held query entries), by the one rule of
//! `opkit::protocol::wire::EventKind::ends_call`.
#![cfg(all(feature = "redis", feature = "websocket"))]

mod redis_support;

use futures::StreamExt;
use opkit::prelude::*;
use opkit::protocol::wire;
use opkit::protocol::{CallHandler, MemoryPubSub, PendingRequestMap, PubSub, topics};
use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use opkit_adapters::websocket::{SpokeGrant, SpokeOptions, StaticTokens, WsHub, WsSpoke};
use redis_support::RedisServer;
use redis_support::cluster::RedisCluster;
use redis_support::ops::{Probes, collect_items, eventually, registry, within};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// What one transport showed: the callers' outcomes and the reply topic's events.
#[derive(Debug, PartialEq)]
struct Transcript {
    outcomes: Vec<String>,
    /// The events of each finished request on the reply topic, in order.
    replies: Vec<Vec<&'static str>>,
}

/// Runs the sequence with a handler on `server` and a caller on `caller`; `settled` says
/// when the transport's bookkeeping of calls in flight is empty.
async fn run_sequence<F, Fut>(
    server: Arc<dyn PubSub>,
    caller: Arc<dyn PubSub>,
    settled: F,
) -> Transcript
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let probes = Probes::default();
    let serving = CallHandler::new(registry(&probes), server)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(caller.clone()).await.unwrap();
    let mut replies = caller
        .subscribe(&topics::reply_topic(map.caller_id()))
        .await
        .unwrap();
    // Long deadlines: a transport that forgot to end a call would keep it past the test.
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(120));

    let mut outcomes = Vec::new();
    let sum = map.call("math.add", json!({"a": 2, "b": 3}), &ctx).await;
    outcomes.push(format!("{:?}", sum.map(|envelope| envelope.data)));
    let items = collect_items(
        map.subscribe("clock.count", json!({"to": 3}), &ctx)
            .await
            .unwrap(),
    )
    .await;
    outcomes.push(format!("{items:?}"));
    let refused = map
        .call("math.add", json!({"a": "two"}), &ctx)
        .await
        .unwrap_err();
    outcomes.push(format!("{:?}", refused.code));

    let call = {
        let map = map.clone();
        let ctx = ctx.clone();
        tokio::spawn(async move { map.call("test.forever", json!({}), &ctx).await })
    };
    eventually("the handler starts", || probes.started.get() == 1).await;
    call.abort();
    eventually("the aborted handler stops", || probes.dropped.get() == 1).await;
    eventually("nothing runs", || serving.in_flight() == 0).await;
    assert_eq!(map.pending_count(), 0);
    outcomes.push("aborted".to_owned());

    // The reply topic: the events of the three answered requests, in order per request.
    let mut by_request: HashMap<String, Vec<&'static str>> = HashMap::new();
    let mut order = Vec::new();
    let mut ended = 0;
    within("the replies of the answered requests", async {
        while ended < 3 {
            let payload = replies
                .next()
                .await
                .expect("the reply topic stays subscribed");
            let peeked = wire::peek(&payload).expect("a call event");
            let request_id = peeked.request_id.into_owned();
            if !by_request.contains_key(&request_id) {
                order.push(request_id.clone());
            }
            by_request
                .entry(request_id.clone())
                .or_default()
                .push(peeked.kind.as_str());
            // Which request was the subscription is known from the order of the sequence.
            let subscription = order.iter().position(|id| *id == request_id) == Some(1);
            if peeked.kind.ends_call(subscription) {
                ended += 1;
            }
        }
    })
    .await;
    let replies = order
        .iter()
        .take(3)
        .map(|id| by_request.remove(id).unwrap_or_default())
        .collect();

    within("the transport's calls in flight settle", async {
        while !settled().await {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    serving.stop();
    Transcript { outcomes, replies }
}

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
    let in_memory = run_sequence(Arc::new(memory.clone()), Arc::new(memory), || async {
        true
    })
    .await;

    let redis = RedisServer::start();
    let server = redis.bus("agree").await;
    let caller = redis.bus("agree").await;
    let raw = redis.raw().await;
    let stream = server.stream_key(&topics::request_topic("math.add"));
    let over_redis = run_sequence(server, caller, || {
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
    let over_cluster = run_sequence(server, caller, || {
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
    let over_websocket = run_sequence(server.clone(), caller, in_flight_settled).await;
    // A caller in the hub's own process, through `WsHub::pubsub`.
    let from_the_hub = run_sequence(server, Arc::new(hub.pubsub()), in_flight_settled).await;

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
