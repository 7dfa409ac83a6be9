//! The hub's bounds on what one spoke can make it hold: queued bytes for a spoke that stopped
//! reading (it is disconnected, its running requests fail with `TRANSPORT_ERROR`, its queue is
//! freed) and subscriptions per spoke; and a serving spoke's own bound on the requests that
//! wait for its handler (past it a request is refused, not run, not queued). Real sockets on
//! loopback, bounded loops.
#![cfg(feature = "websocket")]

use futures::{SinkExt, StreamExt};
use opkit::ErrorCode;
use opkit::OperationContext;
use opkit::protocol::{PendingRequestMap, PubSub, topics};
use opkit_adapters::websocket::{
    HubOptions, SpokeGrant, SpokeOptions, StaticTokens, WsHub, WsSpoke,
};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

fn tokens() -> StaticTokens {
    StaticTokens::new()
        .with_token(
            "slow-token",
            SpokeGrant::new("slow")
                .serving(["test.slow", "slow.*"])
                .with_topics(["flood"]),
        )
        .with_token(
            "fast-token",
            SpokeGrant::new("fast").with_topics(["flood", "topic.*"]),
        )
}

/// Resident memory of this process, in bytes (Linux).
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|pages| pages.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "timed out waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spoke_that_stops_reading_is_disconnected_within_its_byte_budget() {
    const BUDGET: usize = 4 * 1024 * 1024;
    let hub = WsHub::bind_with(
        "127.0.0.1:0",
        tokens(),
        HubOptions::default().with_max_queued_bytes(BUDGET),
    )
    .await
    .unwrap();

    // A raw spoke that serves `test.slow` and subscribes to `flood`, then never reads again.
    let mut request = hub.url().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", "Bearer slow-token".parse().unwrap());
    let (mut slow, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let request_topic = topics::request_topic("test.slow");
    for frame in [
        format!(r#"{{"op":"subscribe_group","id":1,"topic":"{request_topic}","group":"g"}}"#),
        r#"{"op":"subscribe","id":2,"topic":"flood"}"#.to_owned(),
    ] {
        slow.send(Message::text(frame)).await.unwrap();
    }
    let mut acks = 0;
    while acks < 2 {
        let message = tokio::time::timeout(Duration::from_secs(10), slow.next())
            .await
            .expect("the hub answers")
            .unwrap()
            .unwrap();
        if message
            .to_text()
            .unwrap_or_default()
            .contains(r#""op":"ok""#)
        {
            acks += 1;
        }
    }

    // A caller whose request the slow spoke takes and never answers.
    let fast = Arc::new(
        WsSpoke::connect_with(&hub.url(), SpokeOptions::new("fast-token"))
            .await
            .unwrap(),
    );
    let map = PendingRequestMap::connect(fast.clone()).await.unwrap();
    let ctx = OperationContext::default().with_timeout(Duration::from_secs(30));
    let call = tokio::spawn(async move { map.call("test.slow", json!({}), &ctx).await });
    eventually("two spokes", || hub.spokes().len() == 2).await;

    // Flood the slow spoke: 64 × 1 MiB, 16 times its budget.
    let before = rss();
    let mut peak = before;
    let payload = bytes::Bytes::from(vec![b'x'; 1024 * 1024]);
    let mut published = 0;
    for _ in 0..64 {
        match fast.publish("flood", payload.clone()).await {
            Ok(receipt) if receipt.reached_nobody() => break,
            Ok(_) => published += 1,
            Err(error) => panic!("the publisher is not the one disconnected: {error}"),
        }
        peak = peak.max(rss());
    }
    eventually("the slow spoke is disconnected", || {
        hub.spokes().iter().all(|name| !name.starts_with("slow#"))
    })
    .await;
    let error = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the call ends")
        .unwrap()
        .expect_err("its spoke was disconnected");
    assert_eq!(error.code, ErrorCode::TransportError, "{error}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = rss();
    eprintln!(
        "published {published} MiB to a spoke that stopped reading: RSS {} MiB before, peak {} MiB, {} MiB after it left",
        before >> 20,
        peak >> 20,
        after >> 20
    );
    // The hub held at most the budget for it (plus the socket buffers and this process's
    // own copies in flight), far from the 64 MiB it was sent.
    assert!(
        peak.saturating_sub(before) < 32 * 1024 * 1024,
        "RSS grew by {} MiB",
        (peak - before) >> 20
    );
}

#[tokio::test]
async fn subscriptions_per_spoke_are_limited() {
    let hub = WsHub::bind_with(
        "127.0.0.1:0",
        tokens(),
        HubOptions::default().with_max_subscriptions(8),
    )
    .await
    .unwrap();
    let spoke = WsSpoke::connect_with(&hub.url(), SpokeOptions::new("fast-token"))
        .await
        .unwrap();
    let mut held = Vec::new();
    for n in 0..8 {
        held.push(spoke.subscribe(&format!("topic.{n}")).await.unwrap());
    }
    let refused = spoke.subscribe("topic.8").await.unwrap_err();
    assert!(
        refused
            .message()
            .contains("limit (HubOptions::with_max_subscriptions)"),
        "{refused}"
    );
    // Giving one back makes room.
    held.pop();
    eventually_async(|| async { spoke.subscribe("topic.8").await.is_ok() }).await;
}

async fn eventually_async<F, Fut>(mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < Duration::from_secs(10), "timed out");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serving_spoke_at_its_limit_refuses_requests_it_cannot_hold() {
    use opkit::protocol::CallHandler;
    use opkit::{Handler, OperationKind, OperationRegistry, OperationSpec};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let hub = WsHub::bind("127.0.0.1:0", tokens()).await.unwrap();
    // The handler runs one request at a time and holds it until the gate opens; the spoke
    // holds at most 64 KiB of requests behind it.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = OperationRegistry::new();
    let (held, ran) = (gate.clone(), runs.clone());
    registry
        .register(
            OperationSpec::new("slow", "write", OperationKind::Mutation),
            Handler::unary(move |_input, _ctx| {
                let (held, ran) = (held.clone(), ran.clone());
                async move {
                    held.acquire().await.unwrap().forget();
                    ran.fetch_add(1, Ordering::SeqCst);
                    Ok(json!("written"))
                }
            }),
        )
        .unwrap();
    let serving = Arc::new(
        WsSpoke::connect_with(
            &hub.url(),
            SpokeOptions::new("slow-token").with_max_queued_bytes(64 * 1024),
        )
        .await
        .unwrap(),
    );
    let _handler = CallHandler::new(registry, serving)
        .with_max_in_flight(1)
        .spawn()
        .await
        .unwrap();
    let calling = Arc::new(WsSpoke::connect(&hub.url(), "fast-token").await.unwrap());
    let map = PendingRequestMap::connect(calling).await.unwrap();
    let pad = "x".repeat(4096);
    let calls: Vec<_> = (0..100)
        .map(|n| {
            let (map, pad) = (map.clone(), pad.clone());
            tokio::spawn(async move {
                let ctx = OperationContext::default().with_timeout(Duration::from_secs(30));
                map.call("slow.write", json!({"n": n, "pad": pad}), &ctx)
                    .await
            })
        })
        .collect();
    // Some are refused at once (100 x 4 KiB do not fit in 64 KiB): wait for them, then open
    // the gate for the rest.
    eventually("the spoke refuses what it cannot hold", || {
        calls.iter().filter(|call| call.is_finished()).count() >= 50
    })
    .await;
    gate.add_permits(100);
    let (mut written, mut refused) = (0, 0);
    for call in calls {
        match call.await.unwrap() {
            Ok(envelope) => {
                assert_eq!(envelope.data, json!("written"));
                written += 1;
            }
            Err(error) => {
                assert_eq!(error.code, ErrorCode::TransportError, "{error}");
                assert_eq!(
                    error.details.as_ref().and_then(|d| d["delivery"].as_str()),
                    Some("notSent"),
                    "{error}"
                );
                assert!(error.message.contains("at its limit"), "{error}");
                refused += 1;
            }
        }
    }
    assert!(
        refused >= 50 && written >= 1,
        "{written} written, {refused} refused"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        written,
        "no refused request ran"
    );
}
