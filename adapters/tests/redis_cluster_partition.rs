//! The Redis transport on a Redis Cluster under network partitions: every node announces a
//! loopback proxy's port to clients (the cluster bus stays direct), so a caller's and a
//! replica's connections to every node pass through proxies that keep them open while
//! passing no byte — for a while, and for good on the connections open at that moment while
//! new ones pass (to every node, then to one). Every call must end by its deadline (plus
//! slack), no mutation reported "not sent" may run, none may run twice, and caller and
//! replica must call and serve again after the heal and after losing their connections for
//! good, with no restart.
#![cfg(feature = "redis")]

mod partition_support;
mod redis_support;

use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit_adapters::redis::{RedisOptions, RedisPubSub};
use partition_support::scenario::{Load, calls_succeed_after_the_partitions, pause};
use partition_support::{Flow, Proxy};
use redis_support::cluster::RedisCluster;
use redis_support::ops::{Probes, init_logs, registry};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(1);
/// Generous: the bound is the deadline plus scheduling.
const SLACK: Duration = Duration::from_millis(750);

fn options() -> RedisOptions {
    RedisOptions::default()
        .with_prefix("cpartition:")
        .with_ping_interval(Duration::from_millis(200))
        .with_pong_timeout(Duration::from_millis(500))
        .with_connect_timeout(Duration::from_millis(500))
        .with_command_timeout(Duration::from_secs(1))
        .with_block(Duration::from_millis(250))
        .with_lease(Duration::from_millis(1500))
        .with_backoff(Duration::from_millis(20), Duration::from_millis(200))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_calls_end_by_their_deadline_and_recover_through_partitions() {
    init_logs();
    let mut proxies = Vec::new();
    let _cluster = RedisCluster::start_announcing(3, 0, |port| {
        let proxy = Proxy::start_now(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
        let announced = proxy.port();
        proxies.push(proxy);
        announced
    });
    let hosts: Vec<String> = proxies
        .iter()
        .map(|proxy| format!("127.0.0.1:{}", proxy.port()))
        .collect();
    let url = format!("redis+cluster://{}/", hosts.join(","));
    let connect = || async {
        Arc::new(
            RedisPubSub::connect_with(&url, options())
                .await
                .expect("connect to the cluster through the proxies"),
        )
    };

    let probes = Probes::default();
    let _replica = CallHandler::new(registry(&probes), connect().await)
        .spawn()
        .await
        .unwrap();
    let map = PendingRequestMap::connect(connect().await).await.unwrap();

    let load = Load::start(map.clone(), Duration::from_millis(50), DEADLINE);
    let mut events = Vec::new();
    pause(Duration::from_secs(1)).await;
    for proxy in &proxies {
        proxy.set(Flow::CUT);
    }
    pause(Duration::from_secs(2)).await;
    for proxy in &proxies {
        proxy.set(Flow::OPEN);
    }
    events.push(("heal of a 2 s cut".to_owned(), load.now()));
    pause(Duration::from_secs(2)).await;
    for proxy in &proxies {
        proxy.cut_open_connections_for_good();
    }
    events.push(("connections cut for good".to_owned(), load.now()));
    pause(Duration::from_secs(4)).await;
    // One master's connections only: the others keep answering.
    proxies[0].cut_open_connections_for_good();
    events.push((
        "one master's connections cut for good".to_owned(),
        load.now(),
    ));
    pause(Duration::from_secs(4)).await;

    let report = load
        .finish_and_report(|n| probes.executions_of(n), DEADLINE, SLACK, &events)
        .await;
    println!("{}", report.table("redis cluster, through partitions"));

    report.assert_promises_kept(100);
    calls_succeed_after_the_partitions(&map).await;
}
