//! The Redis transport under network partitions: a loopback proxy between a caller and
//! `redis-server` and another between a replica and it, which keep connections open while
//! passing no byte (both directions, one direction, and for good on the connections open at
//! that moment while new ones pass). Every call must end by its deadline (plus slack), no
//! mutation reported "not sent" may run, none may run twice, and caller and replica must
//! call and serve again after each heal and after losing a connection for good, with no
//! restart.
#![cfg(feature = "redis")]

mod partition_support;
mod redis_support;

use opkit::protocol::{CallHandler, PendingOptions, PendingRequestMap};
use opkit::{ErrorCode, OperationContext};
use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use partition_support::scenario::{Load, calls_succeed_after_the_partitions, pause};
use partition_support::{Flow, Proxy};
use redis_support::RedisServer;
use redis_support::ops::{Probes, eventually, init_logs, registry, within};
use serde_json::json;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(1);
/// Generous: the bound is the deadline plus scheduling.
const SLACK: Duration = Duration::from_millis(750);

/// Short intervals so that silence is noticed within 750 ms (the ping interval, or a group
/// read's block time, plus the ping timeout).
fn options(prefix: &str) -> RedisOptions {
    RedisOptions::default()
        .with_prefix(prefix)
        .with_ping_interval(Duration::from_millis(200))
        .with_pong_timeout(Duration::from_millis(500))
        .with_connect_timeout(Duration::from_millis(500))
        .with_command_timeout(Duration::from_secs(1))
        .with_block(Duration::from_millis(250))
        .with_lease(Duration::from_millis(1500))
        .with_backoff(Duration::from_millis(20), Duration::from_millis(200))
}

async fn through(proxy: &Proxy, prefix: &str) -> Arc<RedisPubSub> {
    let url = format!("redis://127.0.0.1:{}/", proxy.port());
    Arc::new(
        RedisPubSub::connect_with(&url, options(prefix))
            .await
            .expect("connect through the proxy"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_end_by_their_deadline_and_tell_the_truth_through_partitions() {
    init_logs();
    let server = RedisServer::start();
    let target = SocketAddr::from((Ipv4Addr::LOCALHOST, server.port()));
    let caller_proxy = Proxy::start(target).await;
    let replica_proxy = Proxy::start(target).await;
    let prefix = "partition:";

    let probes = Probes::default();
    let replica_bus = through(&replica_proxy, prefix).await;
    let _replica = CallHandler::new(registry(&probes), replica_bus)
        .spawn()
        .await
        .unwrap();
    let caller_bus = through(&caller_proxy, prefix).await;
    let map = PendingRequestMap::connect_with(caller_bus, PendingOptions::default())
        .await
        .unwrap();

    let load = Load::start(map.clone(), Duration::from_millis(50), DEADLINE);
    let mut events = Vec::new();
    let mut event = |label: &str, load: &Load| events.push((label.to_owned(), load.now()));
    pause(Duration::from_secs(1)).await;

    for (label, flow, cut) in [
        ("caller: both directions", Flow::CUT, Duration::from_secs(2)),
        (
            "caller: its writes held",
            Flow::UP_CUT,
            Duration::from_millis(1500),
        ),
        (
            "caller: its answers lost",
            Flow::DOWN_CUT,
            Duration::from_millis(1500),
        ),
    ] {
        caller_proxy.set(flow);
        pause(cut).await;
        caller_proxy.set(Flow::OPEN);
        event(&format!("heal of {label}"), &load);
        pause(Duration::from_millis(1500)).await;
    }
    caller_proxy.cut_open_connections_for_good();
    event("caller's connections cut for good", &load);
    let accepted = caller_proxy.accepted();
    pause(Duration::from_secs(3)).await;
    // Each of the caller's connections is replaced once, not once per failed command (the
    // caller holds two: commands and its reply channel).
    let reopened = caller_proxy.accepted() - accepted;
    println!("connections the caller opened after losing its two for good: {reopened}");
    assert!(
        reopened <= 4,
        "the caller opened {reopened} connections after losing its two"
    );

    replica_proxy.set(Flow::CUT);
    pause(Duration::from_secs(2)).await;
    replica_proxy.set(Flow::OPEN);
    event("heal of replica: both directions", &load);
    pause(Duration::from_millis(1500)).await;
    replica_proxy.cut_open_connections_for_good();
    event("replica's connections cut for good", &load);
    pause(Duration::from_secs(3)).await;

    let report = load
        .finish_and_report(|n| probes.executions_of(n), DEADLINE, SLACK, &events)
        .await;
    println!("{}", report.table("redis, through partitions"));

    report.assert_promises_kept(200);

    // After all of it, with no restart: calls succeed ...
    calls_succeed_after_the_partitions(&map).await;
    // ... and the replica's abort subscription is back: a cancelled call stops its handler
    // long before the handler's own deadline.
    let cancel = tokio_util::sync::CancellationToken::new();
    let ctx = OperationContext::default()
        .with_timeout(Duration::from_secs(20))
        .with_cancellation(cancel.clone());
    let started = probes.started.get();
    let dropped = probes.dropped.get();
    let call = tokio::spawn({
        let map = map.clone();
        async move { map.call("test.forever", json!({}), &ctx).await }
    });
    eventually("the handler starts", || probes.started.get() > started).await;
    cancel.cancel();
    let error = within("the cancelled call", call)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Aborted);
    let aborted = tokio::time::timeout(Duration::from_secs(5), async {
        while probes.dropped.get() == dropped {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    assert!(
        aborted.await.is_ok(),
        "call.aborted did not reach the replica"
    );
}
