//! The partition scenarios at full length with every setting at its default, for the
//! before/after table of `docs/limits.md`: run by hand (about two minutes; each prints its
//! table), on this code or an older one (they use no setting newer than the transports):
//!
//! ```text
//! cargo test -p opkit-adapters --features redis,websocket --test partition_measure -- --ignored --nocapture --test-threads 1
//! ```
#![cfg(all(feature = "redis", feature = "websocket"))]

mod partition_support;
mod redis_support;

use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use opkit_adapters::websocket::{SpokeGrant, SpokeOptions, StaticTokens, WsHub, WsSpoke};
use partition_support::scenario::{Load, Report};
use partition_support::{Flow, Proxy};
use redis_support::RedisServer;
use redis_support::ops::{Probes, init_logs, registry};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// The deadline of every call, as in the field report.
const DEADLINE: Duration = Duration::from_secs(2);
/// What counts as late: past the deadline by more than this.
const SLACK: Duration = Duration::from_millis(250);
/// One call every 100 ms: 10 calls/s, mutations and queries in turn.
const PERIOD: Duration = Duration::from_millis(100);

async fn pause(seconds: f64) {
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement (about a minute): run by hand"]
async fn measure_redis_partitions() {
    init_logs();
    let server = RedisServer::start();
    let target = SocketAddr::from((Ipv4Addr::LOCALHOST, server.port()));
    let (caller_proxy, replica_proxy) = (Proxy::start(target).await, Proxy::start(target).await);
    let connect = |proxy: &Proxy| {
        let url = format!("redis://127.0.0.1:{}/", proxy.port());
        async move {
            Arc::new(
                RedisPubSub::connect_with(&url, RedisOptions::default().with_prefix("measure:"))
                    .await
                    .unwrap(),
            )
        }
    };
    let probes = Probes::default();
    let _replica = CallHandler::new(registry(&probes), connect(&replica_proxy).await)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(connect(&caller_proxy).await)
        .await
        .unwrap();

    let load = Load::start(map, PERIOD, DEADLINE);
    let mut events = Vec::new();
    pause(2.0).await;
    for (label, flow, seconds) in [
        ("caller cut both ways 10 s", Flow::CUT, 10.0),
        ("caller's writes held 5 s", Flow::UP_CUT, 5.0),
        ("caller's answers lost 5 s", Flow::DOWN_CUT, 5.0),
    ] {
        caller_proxy.set(flow);
        pause(seconds).await;
        caller_proxy.set(Flow::OPEN);
        events.push((format!("heal of {label}"), load.now()));
        pause(4.0).await;
    }
    caller_proxy.cut_open_connections_for_good();
    events.push(("caller cut for good".to_owned(), load.now()));
    pause(15.0).await;
    replica_proxy.cut_open_connections_for_good();
    events.push(("replica cut for good".to_owned(), load.now()));
    pause(15.0).await;
    let records = load.finish(Duration::from_secs(30)).await;
    pause(6.0).await;
    let report = Report::of(
        &records,
        |n| probes.executions_of(n),
        DEADLINE,
        SLACK,
        &events,
    );
    println!(
        "{}",
        report.table("redis: 1 replica, 1 caller, 10 calls/s, 2 s deadlines, defaults")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement (about a minute): run by hand"]
async fn measure_websocket_partitions() {
    init_logs();
    let tokens = StaticTokens::new()
        .with_token("serve-token", SpokeGrant::service("serve"))
        .with_token("call-token", SpokeGrant::new("call"));
    let hub = WsHub::bind("127.0.0.1:0", tokens).await.unwrap();
    let (caller_proxy, server_proxy) = (
        Proxy::start(hub.local_addr()).await,
        Proxy::start(hub.local_addr()).await,
    );
    let spoke = |url: String, token: &'static str| async move {
        let options = SpokeOptions::new(token)
            .with_backoff(Duration::from_millis(50), Duration::from_secs(1));
        Arc::new(WsSpoke::connect_with(&url, options).await.unwrap())
    };
    let url_of = |proxy: &Proxy| format!("ws://127.0.0.1:{}/", proxy.port());
    let (proxied, direct) = (Probes::default(), Probes::default());
    let _proxied = CallHandler::new(
        registry(&proxied),
        spoke(url_of(&server_proxy), "serve-token").await,
    )
    .spawn()
    .await
    .unwrap();
    let _direct = CallHandler::new(registry(&direct), spoke(hub.url(), "serve-token").await)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(spoke(url_of(&caller_proxy), "call-token").await)
        .await
        .unwrap();

    let load = Load::start(map, PERIOD, DEADLINE);
    let mut events = Vec::new();
    pause(2.0).await;
    caller_proxy.set(Flow::CUT);
    pause(10.0).await;
    caller_proxy.set(Flow::OPEN);
    events.push(("heal of calling spoke cut 10 s".to_owned(), load.now()));
    pause(4.0).await;
    caller_proxy.cut_open_connections_for_good();
    events.push(("calling spoke cut for good".to_owned(), load.now()));
    pause(15.0).await;
    server_proxy.set(Flow::CUT);
    events.push(("serving spoke cut 10 s (start)".to_owned(), load.now()));
    pause(10.0).await;
    server_proxy.set(Flow::OPEN);
    events.push(("heal of serving spoke cut 10 s".to_owned(), load.now()));
    pause(4.0).await;
    server_proxy.cut_open_connections_for_good();
    events.push(("serving spoke cut for good".to_owned(), load.now()));
    pause(15.0).await;
    let records = load.finish(Duration::from_secs(30)).await;
    pause(3.0).await;
    let runs = |n: u64| proxied.executions_of(n) + direct.executions_of(n);
    let report = Report::of(&records, runs, DEADLINE, SLACK, &events);
    println!(
        "{}",
        report.table("websocket: 2 serving spokes (1 proxied), 1 calling spoke, 10 calls/s, 2 s deadlines, defaults")
    );
    let served = |probes: &Probes| probes.calls.get();
    println!(
        "calls served by the proxied spoke {}, by the direct one {}",
        served(&proxied),
        served(&direct)
    );
}
