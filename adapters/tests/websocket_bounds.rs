//! The hub's bounds on what one spoke can make it hold: queued bytes for a spoke that stopped
//! reading (it is disconnected, its running requests fail with `TRANSPORT_ERROR`, its queue is
//! freed), subscriptions per spoke, the length of the names it gives, its calls in flight; on
//! who gets in: connections per token and per address, failed token attempts per address
//! (and the log lines they cause); and a serving spoke's own bound on the requests that
//! wait for its handler (past it a request is refused, not run, not queued). Real sockets on
//! loopback, bounded loops.
#![cfg(feature = "websocket")]

#[path = "redis_support/ops.rs"]
mod ops;
#[path = "websocket_transport/raw.rs"]
mod raw;

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

/// 24 subscriptions with 8 MiB topic names (what once took a hub from 20 to 644 MiB): each is
/// refused, and the hub keeps nothing of them. Names over the limit but short enough to read
/// are refused with the id of the frame that gave them; a name at the limit is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_names_past_the_limit_are_refused_and_memory_stays_flat() {
    use opkit_adapters::websocket::DEFAULT_MAX_TOPIC_LEN;
    let hub = WsHub::bind("127.0.0.1:0", tokens()).await.unwrap();
    let mut spoke = raw::RawSpoke::connect(&hub.url(), "fast-token").await;
    let before = rss();
    // After the first frames the buffers that carry one frame (here and in the hub) are
    // allocated and reused: from then on, memory must stay flat.
    let mut warm = before;
    for n in 0..24 {
        let topic = format!("topic.{n}.{}", "x".repeat(8 * 1024 * 1024));
        let frame = format!(r#"{{"op":"subscribe","id":{n},"topic":"{topic}"}}"#);
        drop(topic);
        let answer = spoke.send_text(frame).await;
        assert!(
            answer.contains(r#""op":"error""#) && answer.contains("with_max_topic_len"),
            "{}",
            &answer[..answer.len().min(300)]
        );
        if n == 3 {
            warm = rss();
        }
    }
    let after = rss();
    eprintln!(
        "24 subscriptions with 8 MiB topic names: RSS {} MiB before, {} MiB after 4, {} MiB after 24",
        before >> 20,
        warm >> 20,
        after >> 20
    );
    // Kept, 20 more names would be 160 MiB at the very least.
    assert!(
        after.saturating_sub(warm) < 32 * 1024 * 1024,
        "RSS grew by {} MiB over the last 20 frames",
        after.saturating_sub(warm) >> 20
    );
    assert!(
        after.saturating_sub(before) < 96 * 1024 * 1024,
        "RSS grew by {} MiB",
        after.saturating_sub(before) >> 20
    );

    // Readable, over the limit: refused with the frame's id, the subscription, the group and
    // the publish alike.
    let over = format!("topic.{}", "y".repeat(DEFAULT_MAX_TOPIC_LEN));
    let answer = spoke.subscribe(&over, None).await;
    assert!(raw::refused(&answer, "with_max_topic_len"), "{answer}");
    let group = "g".repeat(DEFAULT_MAX_TOPIC_LEN + 1);
    let answer = spoke.subscribe("topic.a", Some(&group)).await;
    assert!(raw::refused(&answer, "group name"), "{answer}");
    let answer = spoke.publish(&over, b"x").await;
    assert!(raw::refused(&answer, "with_max_topic_len"), "{answer}");
    let at_limit = format!(
        "topic.{}",
        "z".repeat(DEFAULT_MAX_TOPIC_LEN - "topic.".len())
    );
    let answer = spoke.subscribe(&at_limit, None).await;
    assert!(answer.contains(r#""op":"ok""#), "{answer}");
}

/// The default limit of connections per token (300 on one token were once all accepted):
/// one more than the limit is refused with `429`, naming it; another token still gets in;
/// a place freed is taken again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_per_token_are_limited() {
    use opkit_adapters::websocket::DEFAULT_MAX_CONNECTIONS_PER_TOKEN;
    assert_eq!(DEFAULT_MAX_CONNECTIONS_PER_TOKEN, 128);
    let hub = WsHub::bind("127.0.0.1:0", tokens()).await.unwrap();
    let mut held = Vec::new();
    for _ in 0..DEFAULT_MAX_CONNECTIONS_PER_TOKEN {
        held.push(raw::raw_connection(&hub.url(), "fast-token").await);
    }
    let refused = WsSpoke::connect(&hub.url(), "fast-token")
        .await
        .unwrap_err();
    assert!(
        refused.message().contains("429")
            && refused
                .message()
                .contains("HubOptions::with_max_connections_per_token"),
        "{refused}"
    );
    let other = WsSpoke::connect(&hub.url(), "slow-token").await.unwrap();
    drop(held.pop());
    eventually_async(|| async { WsSpoke::connect(&hub.url(), "fast-token").await.is_ok() }).await;
    other.close();
}

/// Connections from one address past the limit are closed as soon as they are accepted,
/// whatever their token (handshakes count: a client cannot hold places by never finishing
/// one); a place freed is taken again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_per_address_are_limited() {
    use opkit_adapters::websocket::DEFAULT_MAX_CONNECTIONS_PER_ADDRESS;
    assert_eq!(DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, 256);
    let hub = WsHub::bind_with(
        "127.0.0.1:0",
        tokens(),
        HubOptions::default().with_max_connections_per_address(4),
    )
    .await
    .unwrap();
    // Two spokes and two sockets that never start their handshake.
    let first = WsSpoke::connect(&hub.url(), "fast-token").await.unwrap();
    let _second = WsSpoke::connect(&hub.url(), "slow-token").await.unwrap();
    let mut idle = Vec::new();
    for _ in 0..2 {
        idle.push(
            tokio::net::TcpStream::connect(hub.local_addr())
                .await
                .unwrap(),
        );
    }
    eventually_async(|| async { WsSpoke::connect(&hub.url(), "fast-token").await.is_err() }).await;
    let refused = WsSpoke::connect(&hub.url(), "fast-token")
        .await
        .unwrap_err();
    assert!(refused.message().contains("could not connect"), "{refused}");
    first.close();
    drop(idle);
    eventually_async(|| async { WsSpoke::connect(&hub.url(), "fast-token").await.is_ok() }).await;
}

/// 1,000 wrong tokens from one address (once each answered `401` and logged): past the limit
/// the address is refused with `429` naming it, even with a right token, and the log holds a
/// few lines, not a thousand.
#[tokio::test]
async fn failed_token_attempts_are_throttled_and_logged_at_a_bounded_rate() {
    use opkit_adapters::websocket::{DEFAULT_FAILED_TOKEN_WINDOW, DEFAULT_MAX_FAILED_TOKENS};
    assert_eq!(
        (DEFAULT_MAX_FAILED_TOKENS, DEFAULT_FAILED_TOKEN_WINDOW),
        (10, Duration::from_secs(60))
    );
    let warnings = ops::CapturedWarnings::default();
    let _logs = tracing::subscriber::set_default(warnings.subscriber());
    let hub = WsHub::bind("127.0.0.1:0", tokens()).await.unwrap();
    let mut answers = std::collections::BTreeMap::<String, usize>::new();
    for n in 0..1_000 {
        let error = WsSpoke::connect_with(
            &hub.url(),
            SpokeOptions::new(format!("guess-{n}")).with_connect_timeout(Duration::from_secs(10)),
        )
        .await
        .unwrap_err();
        let status = if error.message().contains("401") {
            "401"
        } else if error.message().contains("429") {
            assert!(
                error
                    .message()
                    .contains("HubOptions::with_max_failed_tokens"),
                "{error}"
            );
            "429"
        } else {
            panic!("unexpected: {error}")
        };
        *answers.entry(status.to_owned()).or_default() += 1;
    }
    assert_eq!(answers.get("401"), Some(&10), "{answers:?}");
    assert_eq!(answers.get("429"), Some(&990), "{answers:?}");
    let right = WsSpoke::connect(&hub.url(), "fast-token")
        .await
        .unwrap_err();
    assert!(right.message().contains("429"), "{right}");
    let lines = warnings
        .messages()
        .iter()
        .filter(|line| line.contains("refused"))
        .count();
    eprintln!("1,000 wrong tokens: {answers:?}, {lines} warning lines");
    assert!(lines <= 20, "{lines} warning lines for 1,000 attempts");
}

/// Calls one spoke has in flight through the hub are limited: one more fails at once with
/// `TRANSPORT_ERROR`, not sent, naming the limit; calls in flight are unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_flight_per_spoke_are_limited() {
    use opkit::protocol::CallHandler;
    let hub = WsHub::bind_with(
        "127.0.0.1:0",
        tokens(),
        HubOptions::default().with_max_calls_per_spoke(2),
    )
    .await
    .unwrap();
    // `test.slow` never answers; it counts the runs that started and were dropped.
    let (started, dropped) = (ops::Counter::default(), ops::Counter::default());
    let registry = opkit::OperationRegistry::new();
    let (start, drop_count) = (started.clone(), dropped.clone());
    registry
        .register(
            opkit::OperationSpec::new("test", "slow", opkit::OperationKind::Query),
            opkit::Handler::unary(move |_input, _ctx| {
                start.bump();
                let on_drop = OnDrop(drop_count.clone());
                async move {
                    let _on_drop = on_drop;
                    futures::future::pending::<()>().await;
                    Ok(json!(null))
                }
            }),
        )
        .unwrap();
    let serving = Arc::new(WsSpoke::connect(&hub.url(), "slow-token").await.unwrap());
    let _handler = CallHandler::new(registry, serving).spawn().await.unwrap();
    let calling = Arc::new(WsSpoke::connect(&hub.url(), "fast-token").await.unwrap());
    let map = PendingRequestMap::connect(calling).await.unwrap();
    let far = OperationContext::default().with_timeout(Duration::from_secs(300));
    let held: Vec<_> = (0..2)
        .map(|_| {
            let (map, far) = (map.clone(), far.clone());
            tokio::spawn(async move { map.call("test.slow", json!({}), &far).await })
        })
        .collect();
    eventually("both run", || started.get() == 2).await;
    let refused = ops::within(
        "the call past the limit",
        map.call("test.slow", json!({}), &far),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code, ErrorCode::TransportError, "{refused}");
    assert!(
        refused
            .message
            .contains("HubOptions::with_max_calls_per_spoke"),
        "{refused}"
    );
    assert_eq!(
        refused
            .details
            .as_ref()
            .and_then(|d| d["delivery"].as_str()),
        Some("notSent")
    );
    assert_eq!(hub.calls_in_flight(), 2);
    for call in held {
        call.abort();
    }
    eventually("the aborted calls end", || dropped.get() == 2).await;
    eventually("no call in flight", || hub.calls_in_flight() == 0).await;
}

/// Bumps its counter when dropped.
struct OnDrop(ops::Counter);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.bump();
    }
}
