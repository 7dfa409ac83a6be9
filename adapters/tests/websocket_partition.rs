//! The WebSocket transport under network partitions: loopback proxies between the hub and a
//! calling spoke and between the hub and a serving spoke keep the connections open while
//! passing no byte (for a while, and for good on the connections open at that moment while
//! new ones pass). A second serving spoke stays connected. Every call must end by its
//! deadline (plus slack), no mutation reported "not sent" may run, none may run twice, the
//! hub must stop routing to the silent serving spoke, and both proxied spokes must call and
//! serve again, with no restart.
#![cfg(feature = "websocket")]

#[path = "redis_support/ops.rs"]
mod ops;
mod partition_support;

use opkit::protocol::{CallHandler, PendingRequestMap};
use opkit::{ErrorCode, OperationContext};
use opkit_adapters::websocket::{
    HubOptions, SpokeGrant, SpokeOptions, StaticTokens, WsHub, WsSpoke,
};
use ops::{Probes, eventually, init_logs, registry, within};
use partition_support::scenario::{Load, pause};
use partition_support::{Flow, Proxy};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(1);
/// Generous: the bound is the deadline plus scheduling.
const SLACK: Duration = Duration::from_millis(750);

fn spoke_options(token: &str) -> SpokeOptions {
    SpokeOptions::new(token)
        .with_backoff(Duration::from_millis(20), Duration::from_millis(200))
        .with_ping_interval(Duration::from_millis(300))
        .with_pong_timeout(Duration::from_millis(500))
        .with_request_timeout(Duration::from_secs(1))
        .with_connect_timeout(Duration::from_secs(1))
}

async fn spoke(url: &str, token: &str) -> Arc<WsSpoke> {
    Arc::new(
        WsSpoke::connect_with(url, spoke_options(token))
            .await
            .expect("a spoke connects"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_end_by_their_deadline_and_spokes_recover_through_partitions() {
    init_logs();
    let tokens = StaticTokens::new()
        .with_token("serve-token", SpokeGrant::service("serve"))
        .with_token("call-token", SpokeGrant::new("call"));
    let options = HubOptions::default()
        .with_ping_interval(Duration::from_millis(300))
        .with_pong_timeout(Duration::from_millis(500))
        .with_sweep_interval(Duration::from_millis(100));
    let hub = WsHub::bind_with("127.0.0.1:0", tokens, options)
        .await
        .unwrap();
    let caller_proxy = Proxy::start(hub.local_addr()).await;
    let server_proxy = Proxy::start(hub.local_addr()).await;
    let url_of = |proxy: &Proxy| format!("ws://127.0.0.1:{}/", proxy.port());

    // The proxied serving spoke and a directly connected one.
    let (proxied, direct) = (Probes::default(), Probes::default());
    let proxied_spoke = spoke(&url_of(&server_proxy), "serve-token").await;
    let _proxied = CallHandler::new(registry(&proxied), proxied_spoke.clone())
        .spawn()
        .await
        .unwrap();
    let _direct = CallHandler::new(registry(&direct), spoke(&hub.url(), "serve-token").await)
        .spawn()
        .await
        .unwrap();
    let calling_spoke = spoke(&url_of(&caller_proxy), "call-token").await;
    let map = PendingRequestMap::connect(calling_spoke.clone())
        .await
        .unwrap();

    let load = Load::start(map.clone(), Duration::from_millis(50), DEADLINE);
    let mut events = Vec::new();
    let mut event = |label: &str, load: &Load| events.push((label.to_owned(), load.now()));
    pause(Duration::from_secs(1)).await;

    caller_proxy.set(Flow::CUT);
    pause(Duration::from_secs(2)).await;
    caller_proxy.set(Flow::OPEN);
    event("heal of the calling spoke's link", &load);
    pause(Duration::from_millis(1500)).await;
    caller_proxy.cut_open_connections_for_good();
    event("calling spoke's link cut for good", &load);
    pause(Duration::from_secs(3)).await;
    assert!(
        calling_spoke.is_connected(),
        "the calling spoke reconnected"
    );

    server_proxy.set(Flow::CUT);
    pause(Duration::from_secs(2)).await;
    // Silent for longer than the hub's ping interval plus its pong timeout: the hub stopped
    // routing to it, and the spoke knows it is cut off.
    assert!(
        !proxied_spoke.is_connected(),
        "the silent spoke knows it lost the hub"
    );
    let proxied_runs = proxied.calls.get();
    let direct_runs = direct.calls.get();
    pause(Duration::from_millis(500)).await;
    assert_eq!(
        proxied.calls.get(),
        proxied_runs,
        "the hub routed to a silent spoke"
    );
    assert!(
        direct.calls.get() > direct_runs,
        "the other spoke served meanwhile"
    );
    server_proxy.set(Flow::OPEN);
    event("heal of the serving spoke's link", &load);
    pause(Duration::from_millis(1500)).await;
    server_proxy.cut_open_connections_for_good();
    event("serving spoke's link cut for good", &load);
    pause(Duration::from_secs(3)).await;

    let runs = |n: u64| proxied.executions_of(n) + direct.executions_of(n);
    let report = load.finish_and_report(runs, DEADLINE, SLACK, &events).await;
    println!("{}", report.table("websocket, through partitions"));

    report.assert_promises_kept(150);
    assert!(calling_spoke.is_connected() && proxied_spoke.is_connected());

    // The proxied serving spoke serves again, with no restart: with the other one gone,
    // every call reaches it.
    // A query routed to the other spoke while its handler stops fails with
    // `TRANSPORT_ERROR` ("may have run"): a query may be retried, so each call is retried on
    // that error (bounded), until the hub routes every request to the proxied spoke.
    drop(_direct);
    for n in 0..5 {
        let sum = within("a call after the partitions", async {
            loop {
                let ctx = OperationContext::default().with_timeout(Duration::from_secs(5));
                match map.call("math.add", json!({"a": n, "b": 1}), &ctx).await {
                    Err(error) if error.code == ErrorCode::TransportError => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    result => break result,
                }
            }
        })
        .await
        .expect("a call after the partitions succeeds");
        assert_eq!(sum.data, json!({"sum": n + 1}));
    }
}

/// Set when dropped: what a publisher keeps until its publish is confirmed.
struct Kept(Arc<std::sync::atomic::AtomicBool>);

impl Drop for Kept {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// `publish_keeping` (how a call handler publishes its unary replies) returns once the frame
/// is queued, but the spoke keeps what the publisher handed it until the hub's receipt: while
/// the link passes nothing it stays, and the heal (the receipt arrives) drops it. A link that
/// stays silent past the request timeout drops it with the connection, as for a publish a
/// caller waits on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_keeps_what_its_publisher_holds_until_the_hub_confirms_it() {
    use opkit::protocol::PubSub;
    use std::sync::atomic::{AtomicBool, Ordering};
    init_logs();
    let tokens = StaticTokens::new().with_token("serve-token", SpokeGrant::service("serve"));
    let hub = WsHub::bind("127.0.0.1:0", tokens).await.unwrap();
    let proxy = Proxy::start(hub.local_addr()).await;
    let options = SpokeOptions::new("serve-token")
        .with_ping_interval(Duration::from_secs(5))
        .with_pong_timeout(Duration::from_secs(5))
        .with_request_timeout(Duration::from_secs(2));
    let spoke = WsSpoke::connect_with(&format!("ws://127.0.0.1:{}/", proxy.port()), options)
        .await
        .expect("a spoke connects");

    // Confirmed: dropped once the receipt arrives.
    let confirmed = Arc::new(AtomicBool::new(false));
    let keep = Box::new(Kept(confirmed.clone()));
    spoke
        .publish_keeping("events.a", "1".into(), keep)
        .await
        .expect("queued");
    eventually("the receipt of an open link", || {
        confirmed.load(Ordering::SeqCst)
    })
    .await;

    // Withheld: kept while the link passes nothing, dropped at the heal.
    proxy.set(Flow::CUT);
    let held = Arc::new(AtomicBool::new(false));
    let keep = Box::new(Kept(held.clone()));
    within(
        "queueing under a cut",
        spoke.publish_keeping("events.a", "2".into(), keep),
    )
    .await
    .expect("queued while the link is cut");
    pause(Duration::from_millis(600)).await;
    assert!(
        !held.load(Ordering::SeqCst),
        "dropped before the hub confirmed the publish"
    );
    proxy.set(Flow::OPEN);
    eventually("the receipt after the heal", || held.load(Ordering::SeqCst)).await;

    // Never confirmed: dropped with the connection the sweep drops.
    proxy.cut_open_connections_for_good();
    let lost = Arc::new(AtomicBool::new(false));
    let keep = Box::new(Kept(lost.clone()));
    let _ = spoke.publish_keeping("events.a", "3".into(), keep).await;
    eventually("the sweep's answer", || lost.load(Ordering::SeqCst)).await;
}
